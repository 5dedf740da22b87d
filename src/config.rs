//! The checked configuration a pool runs on (`Config`, which `PoolBuilder::build` makes)
//! and the backpressure policy it names: below the engine, which reads them, and the
//! builder, which writes them.

use crate::unwind::TaskPanic;
use std::time::Duration;

/// What `submit` does when the queue is at capacity.
///
/// ```
/// use flock::{Backpressure, Pool};
/// let pool = Pool::builder().capacity(1024).when_full(Backpressure::CallerRuns).build().unwrap();
/// pool.submit(|| ()).unwrap();
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backpressure {
    /// Wait for room without spinning (the default), up to
    /// [`block_timeout`](crate::PoolBuilder::block_timeout) if one is set. A submit that found the
    /// queue full sleeps until it has drained below `capacity - capacity / 32` (with a
    /// capacity under 32: until there is room), so that a thread that keeps the queue full
    /// wakes once per `capacity / 32` tasks started, not once per task; the workers have
    /// that many queued meanwhile.
    #[default]
    Block,
    /// Hand the task back at once in a [`SubmitError`](crate::SubmitError).
    Reject,
    /// Run the task on the submitting thread, which slows the producer down (Java's policy).
    CallerRuns,
    /// Run the task on a new thread, at most
    /// [`max_spawned_threads`](crate::PoolBuilder::max_spawned_threads) at once; beyond that, block.
    /// Where the OS refuses the thread, the task runs on the submitting thread, as with
    /// `CallerRuns` (and is counted there, in [`Stats::caller_runs`](crate::Stats::caller_runs)).
    SpawnThread,
}

// Callbacks are configuration, not protocol: std's `Arc` (loom's cannot hold `dyn`).
pub(crate) type IndexFn = std::sync::Arc<dyn Fn(usize) + Send + Sync>;
pub(crate) type NameFn = std::sync::Arc<dyn Fn(usize) -> String + Send + Sync>;
pub(crate) type PanicFn = std::sync::Arc<dyn Fn(TaskPanic) + Send + Sync>;

/// The checked configuration the registry runs on.
pub(crate) struct Config {
    /// Workers at build time (the control word, `Crew::workers`, holds the current number).
    pub(crate) workers: usize,
    /// Worker slots: the most workers `resize` may ask for.
    pub(crate) max_workers: usize,
    pub(crate) capacity: usize,
    pub(crate) when_full: Backpressure,
    pub(crate) block_timeout: Option<Duration>,
    pub(crate) spin_limit: u32,
    pub(crate) cores: Option<Vec<usize>>,
    pub(crate) on_worker_start: Option<IndexFn>,
    pub(crate) on_worker_stop: Option<IndexFn>,
    pub(crate) panic_handler: Option<PanicFn>,
    pub(crate) max_spawned_threads: usize,
    pub(crate) track_latency: bool,
    /// `(name, weight)` of each lane; at least one.
    pub(crate) lanes: Vec<(String, u32)>,
    /// Whether a pool whose lanes differ in weight has a lane reserve.
    pub(crate) lane_reserve: bool,
    /// Whether the lanes' weights are strict priorities (`PoolBuilder::strict_priority`).
    pub(crate) strict_priority: bool,
    /// Whether parking workers may use the membarrier, so that pushes skip their fence.
    pub(crate) membarrier: bool,
    pub(crate) fifo: bool,
    /// Submitter rings per lane (`submitq.rs`).
    pub(crate) submit_rings: usize,
    pub(crate) thread_name: NameFn,
    pub(crate) stack_size: Option<usize>,
}
