//! The pools under test, behind [`Runner`]: flock and its peers, each with
//! [`workers()`](super::workers) threads.

use crossbeam_channel::{Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A pool that runs `'static` closures, seen the same way by every workload.
pub trait Runner: Send + Sync + 'static {
    /// Whether [`wait_all`](Runner::wait_all) waits for every task run so far. When false, the
    /// workloads make each task count down a shared [`CountDown`](super::CountDown) instead.
    const WAITS: bool;

    /// The name in bench ids and tables.
    fn name(&self) -> &'static str;

    /// Runs `f` on the pool (from any thread, including the pool's own tasks).
    fn execute<F: FnOnce() + Send + 'static>(&self, f: F);

    /// Blocks until every task run so far finished. Only called when `WAITS`.
    fn wait_all(&self) {
        unreachable!("{} has no wait-for-all", self.name())
    }
}

/// flock with its defaults (bounded queue, `Backpressure::Block`), waited on with `Pool::wait`.
pub struct Flock {
    pub pool: flock::Pool,
    name: &'static str,
}

impl Flock {
    /// The default configuration, `workers()` workers.
    pub fn new() -> Self {
        Flock::with(flock::Pool::builder(), "flock")
    }

    /// Capacity `usize::MAX`: no backpressure, like the peers' unbounded queues.
    pub fn unbounded() -> Self {
        Flock::with(
            flock::Pool::builder().capacity(usize::MAX),
            "flock-unbounded",
        )
    }

    /// The default configuration with `track_latency(true)`: every task's queue wait and run
    /// time go into the latency histograms (`metrics-cost`, variant (b)).
    pub fn latency() -> Self {
        Flock::with(flock::Pool::builder().track_latency(true), "flock-latency")
    }

    /// A pool built elsewhere, under `name` (probes that vary the configuration).
    pub fn from_pool(pool: flock::Pool, name: &'static str) -> Self {
        Flock { pool, name }
    }

    /// The default configuration with `workers` workers (probes of the scaling runs).
    pub fn with_workers(workers: usize) -> Self {
        let pool = flock::Pool::builder()
            .workers(workers)
            .build()
            .expect("flock pool");
        Flock {
            pool,
            name: "flock",
        }
    }

    fn with(builder: flock::PoolBuilder, name: &'static str) -> Self {
        let pool = builder
            .workers(super::workers())
            .build()
            .expect("flock pool");
        Flock { pool, name }
    }
}

impl Runner for Flock {
    const WAITS: bool = true;

    fn name(&self) -> &'static str {
        self.name
    }

    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        if self.pool.submit(f).is_err() {
            panic!("flock refused a task");
        }
    }

    fn wait_all(&self) {
        self.pool.wait().expect("flock wait");
    }
}

/// `rayon::ThreadPool::spawn` (fire and forget; no wait-for-all, so the CountDown).
pub struct Rayon(pub rayon::ThreadPool);

impl Rayon {
    pub fn new() -> Self {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(super::workers())
            .build()
            .expect("rayon pool");
        Rayon(pool)
    }
}

impl Runner for Rayon {
    const WAITS: bool = false;

    fn name(&self) -> &'static str {
        "rayon"
    }

    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        self.0.spawn(f);
    }
}

/// The `threadpool` crate, waited on with its own `ThreadPool::join`.
pub struct Threadpool(threadpool::ThreadPool);

impl Threadpool {
    pub fn new() -> Self {
        Threadpool(threadpool::ThreadPool::new(super::workers()))
    }
}

impl Runner for Threadpool {
    const WAITS: bool = true;

    fn name(&self) -> &'static str {
        "threadpool"
    }

    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        self.0.execute(f);
    }

    fn wait_all(&self) {
        self.0.join();
    }
}

/// A tokio multi-thread runtime; each task is `spawn(async move { f() })` (no wait-for-all
/// across tasks, so the CountDown).
pub struct Tokio(tokio::runtime::Runtime);

impl Tokio {
    pub fn new() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(super::workers())
            .build()
            .expect("tokio runtime");
        Tokio(rt)
    }
}

impl Runner for Tokio {
    const WAITS: bool = false;

    fn name(&self) -> &'static str {
        "tokio"
    }

    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        drop(self.0.spawn(async move { f() }));
    }
}

type BoxedTask = Box<dyn FnOnce() + Send + 'static>;

/// The plain pool everyone writes first: N threads receiving boxed closures from one
/// unbounded crossbeam channel. No wait-for-all, so the CountDown.
pub struct ChannelPool {
    tx: Option<Sender<BoxedTask>>,
    threads: Vec<JoinHandle<()>>,
}

impl ChannelPool {
    pub fn new() -> Self {
        let (tx, rx) = crossbeam_channel::unbounded::<BoxedTask>();
        let threads = (0..super::workers())
            .map(|i| {
                let rx: Receiver<BoxedTask> = rx.clone();
                std::thread::Builder::new()
                    .name(format!("channel-pool-{i}"))
                    .spawn(move || {
                        for task in rx {
                            task();
                        }
                    })
                    .expect("channel pool thread")
            })
            .collect();
        ChannelPool {
            tx: Some(tx),
            threads,
        }
    }
}

impl Drop for ChannelPool {
    fn drop(&mut self) {
        drop(self.tx.take());
        let me = std::thread::current().id();
        for t in self.threads.drain(..) {
            // A worker that drops the last handle cannot join itself; it exits on its own.
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
    }
}

impl Runner for ChannelPool {
    const WAITS: bool = false;

    fn name(&self) -> &'static str {
        "crossbeam-channel"
    }

    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        let tx = self.tx.as_ref().expect("open until dropped");
        tx.send(Box::new(f)).expect("workers alive");
    }
}

/// No pool: `std::thread::spawn` per task (detached; the CountDown tells when all ran).
pub struct StdThread;

impl Runner for StdThread {
    const WAITS: bool = false;

    fn name(&self) -> &'static str {
        "std-thread"
    }

    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        drop(std::thread::spawn(f));
    }
}

/// The pools that run fire-and-forget tasks, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Flock,
    FlockUnbounded,
    Rayon,
    Threadpool,
    Tokio,
    Channel,
    StdThread,
}

impl Kind {
    /// flock, then every peer pool (not `FlockUnbounded`, not `StdThread`).
    pub const POOLS: [Kind; 5] = [
        Kind::Flock,
        Kind::Rayon,
        Kind::Threadpool,
        Kind::Tokio,
        Kind::Channel,
    ];

    /// Starts this pool.
    pub fn make(self) -> Box<dyn AnyRunner> {
        match self {
            Kind::Flock => Box::new(Arc::new(Flock::new())),
            Kind::FlockUnbounded => Box::new(Arc::new(Flock::unbounded())),
            Kind::Rayon => Box::new(Arc::new(Rayon::new())),
            Kind::Threadpool => Box::new(Arc::new(Threadpool::new())),
            Kind::Tokio => Box::new(Arc::new(Tokio::new())),
            Kind::Channel => Box::new(Arc::new(ChannelPool::new())),
            Kind::StdThread => Box::new(Arc::new(StdThread)),
        }
    }
}

/// Drops a pool and gives threads that leave lazily (rayon's) time to go, so that the next
/// measurement runs alone.
pub fn retire(pool: Box<dyn AnyRunner>) {
    drop(pool);
    std::thread::sleep(std::time::Duration::from_millis(20));
}

/// [`Runner`] is generic; this is its object-safe face, one method per generic workload
/// (see `workloads.rs`), so that benches and the report can loop over [`Kind`]s.
pub trait AnyRunner {
    fn name(&self) -> &'static str;
    fn one_submitter(&self, tasks: usize) -> std::time::Duration;
    fn many_submitters(&self, threads: usize, per_thread: usize) -> std::time::Duration;
    fn cpu_tasks(&self, tasks: usize, us: u64) -> std::time::Duration;
    fn spawn_tree(&self, leaves: usize) -> std::time::Duration;
    fn bursts(&self, bursts: usize, tasks: usize, us: u64) -> Vec<std::time::Duration>;
    fn wake_latency(&self, samples: usize) -> Vec<std::time::Duration>;
    fn idle_cpu_ms_per_s(&self, warm_tasks: usize, idle: std::time::Duration) -> f64;
}

impl<R: Runner> AnyRunner for Arc<R> {
    fn name(&self) -> &'static str {
        R::name(self)
    }
    fn one_submitter(&self, tasks: usize) -> std::time::Duration {
        super::workloads::one_submitter(&**self, tasks)
    }
    fn many_submitters(&self, threads: usize, per_thread: usize) -> std::time::Duration {
        super::workloads::many_submitters(&**self, threads, per_thread)
    }
    fn cpu_tasks(&self, tasks: usize, us: u64) -> std::time::Duration {
        super::workloads::cpu_tasks(&**self, tasks, us)
    }
    fn spawn_tree(&self, leaves: usize) -> std::time::Duration {
        super::workloads::spawn_tree(self, leaves)
    }
    fn bursts(&self, bursts: usize, tasks: usize, us: u64) -> Vec<std::time::Duration> {
        super::workloads::bursts(&**self, bursts, tasks, us)
    }
    fn wake_latency(&self, samples: usize) -> Vec<std::time::Duration> {
        super::workloads::wake_latency(&**self, samples)
    }
    fn idle_cpu_ms_per_s(&self, warm_tasks: usize, idle: std::time::Duration) -> f64 {
        super::workloads::idle_cpu_ms_per_s(&**self, warm_tasks, idle)
    }
}
