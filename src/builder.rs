//! `PoolBuilder`: every knob, checked before a thread starts.

use crate::config::{Backpressure, Config, IndexFn, NameFn, PanicFn};
use crate::lane::MAX_LANES;
use crate::pin;
use crate::registry::Registry;
use crate::sleep::MAX_WORKERS;
use crate::sync::Arc;
use crate::unwind::TaskPanic;
use crate::{BuildError, Pool, ResizeError};
use std::fmt;
use std::time::Duration;

/// The default bound on queued tasks.
///
/// ```
/// assert_eq!(flock::Pool::new().capacity(), flock::DEFAULT_CAPACITY);
/// ```
///
/// 65,536 tasks: far more than any healthy burst (a submitter that outruns the workers for a
/// few milliseconds), few enough that a stuck pool's backlog stays a few MiB and its queue
/// wait stays bounded instead of growing without end. Servers with larger bursts raise it.
pub const DEFAULT_CAPACITY: usize = 1 << 16;

/// The default number of spin rounds before an idle worker parks.
///
/// ```
/// let pool = flock::Pool::builder().spin_limit(2 * flock::DEFAULT_SPIN_LIMIT).build().unwrap();
/// # drop(pool);
/// ```
pub const DEFAULT_SPIN_LIMIT: u32 = 20;

/// The smallest [`stack_size`](PoolBuilder::stack_size) a pool accepts, in bytes (64 KiB, as
/// the C API's `FLOCK_MIN_STACK_SIZE`). A worker's own frames take up to 32 KiB in an
/// unoptimised build (under 16 KiB optimised), so this leaves a task at least 32 KiB in
/// either; a smaller size is [`BuildError::StackTooSmall`].
///
/// ```
/// let err = flock::Pool::builder().stack_size(4096).build().unwrap_err();
/// assert!(matches!(err, flock::BuildError::StackTooSmall { min: flock::MIN_STACK_SIZE, .. }));
/// let pool = flock::Pool::builder().stack_size(flock::MIN_STACK_SIZE).build().unwrap();
/// assert_eq!(pool.spawn(|| 7).join().unwrap(), 7);
/// ```
pub const MIN_STACK_SIZE: usize = 64 * 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Pinning {
    Off,
    Allowed,
    Explicit(Vec<usize>),
}

/// Configures and starts a [`Pool`].
///
/// ```
/// use std::time::Duration;
/// use flock::{Backpressure, Pool};
/// let pool = Pool::builder()
///     .workers(2)
///     .capacity(10_000)
///     .when_full(Backpressure::Block)
///     .block_timeout(Duration::from_millis(50))
///     .fifo()
///     .thread_name(|i| format!("io-{i}"))
///     .build()
///     .expect("valid configuration");
/// assert_eq!(pool.workers(), 2);
/// ```
#[must_use = "a builder does nothing until build() is called"]
#[doc(alias = "ThreadPoolBuilder")]
pub struct PoolBuilder {
    workers: Option<usize>,
    capacity: usize,
    when_full: Backpressure,
    block_timeout: Option<Duration>,
    fifo: bool,
    spin_limit: u32,
    pinning: Pinning,
    thread_name: Option<NameFn>,
    stack_size: Option<usize>,
    on_worker_start: Option<IndexFn>,
    on_worker_stop: Option<IndexFn>,
    panic_handler: Option<PanicFn>,
    max_spawned_threads: Option<usize>,
    track_latency: bool,
    lanes: Option<Vec<(String, u32)>>,
    lane_reserve: bool,
    strict_priority: bool,
    max_workers: Option<usize>,
    membarrier: bool,
    /// Under loom: whether submits from outside go through submitter rings. Only the models
    /// written for the rings turn them on (`loom_rings`); the others keep the model
    /// injector, whose state space they were sized for (with rings, one of them ran past
    /// 14 minutes where the whole suite took 8).
    loom_rings: bool,
}

impl Pool {
    /// A pool with every default: one worker per CPU this process may use, capacity
    /// [`DEFAULT_CAPACITY`], [`Backpressure::Block`].
    ///
    /// # Panics
    /// If the OS refuses to start the worker threads; use [`Pool::builder`] to get that as a
    /// [`BuildError`] instead.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// assert!(pool.workers() >= 1);
    /// ```
    pub fn new() -> Pool {
        match PoolBuilder::new().build() {
            Ok(pool) => pool,
            Err(e) => panic!("flock: could not start the default pool: {e}"),
        }
    }

    /// A builder for a configured pool.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(3).build().unwrap();
    /// assert_eq!(pool.workers(), 3);
    /// ```
    pub fn builder() -> PoolBuilder {
        PoolBuilder::new()
    }
}

impl Default for PoolBuilder {
    fn default() -> Self {
        PoolBuilder {
            workers: None,
            capacity: DEFAULT_CAPACITY,
            when_full: Backpressure::Block,
            block_timeout: None,
            fifo: false,
            spin_limit: DEFAULT_SPIN_LIMIT,
            pinning: Pinning::Off,
            thread_name: None,
            stack_size: None,
            on_worker_start: None,
            on_worker_stop: None,
            panic_handler: None,
            max_spawned_threads: None,
            track_latency: false,
            lanes: None,
            lane_reserve: true,
            strict_priority: false,
            max_workers: None,
            membarrier: true,
            loom_rings: false,
        }
    }
}

impl fmt::Debug for PoolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolBuilder")
            .field("workers", &self.workers)
            .field("capacity", &self.capacity)
            .field("when_full", &self.when_full)
            .field("block_timeout", &self.block_timeout)
            .field("fifo", &self.fifo)
            .field("spin_limit", &self.spin_limit)
            .field("pinning", &self.pinning)
            .field("stack_size", &self.stack_size)
            .field("track_latency", &self.track_latency)
            .field("lanes", &self.lanes)
            .field("lane_reserve", &self.lane_reserve)
            .field("strict_priority", &self.strict_priority)
            .field("max_workers", &self.max_workers)
            .field("membarrier", &self.membarrier)
            .finish_non_exhaustive()
    }
}

impl PoolBuilder {
    /// A builder with every default (see each method).
    ///
    /// ```
    /// let pool = flock::PoolBuilder::new().build().unwrap();
    /// # drop(pool);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of worker threads to start with. Default, and what `0` asks for (as rayon's
    /// `num_threads(0)`): the CPUs this process may run on
    /// (`std::thread::available_parallelism`, which honours affinity masks and cgroup quotas).
    /// [`Pool::resize`] changes it later, up to [`max_workers`](PoolBuilder::max_workers).
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(3).build().unwrap();
    /// assert_eq!(pool.workers(), 3);
    /// let default = flock::Pool::builder().workers(0).build().unwrap();
    /// assert_eq!(default.workers(), std::thread::available_parallelism().map_or(1, usize::from));
    /// ```
    #[doc(alias = "num_threads")]
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }

    /// Bound on tasks submitted from outside the pool that have not started yet (running tasks
    /// do not count). Default [`DEFAULT_CAPACITY`]; `usize::MAX` means no bound. Tasks that
    /// tasks submit go to their worker's own deque and are not bounded: bounding them could
    /// deadlock a fork-join. Workers hand started tasks back to the count in small batches,
    /// so with large capacities (≥ 64 × 32 × workers) a queue may be reported full up to
    /// `64 × workers` tasks early; it is never over-filled. A submit blocked on a full queue
    /// ([`Backpressure::Block`]) is woken once it drained below `capacity - capacity / 32`.
    ///
    /// ```
    /// let pool = flock::Pool::builder().capacity(1_000).build().unwrap();
    /// assert_eq!(pool.capacity(), 1_000);
    /// ```
    pub fn capacity(mut self, n: usize) -> Self {
        self.capacity = n;
        self
    }

    /// What a submit does when the queue is at capacity. Default [`Backpressure::Block`].
    ///
    /// ```
    /// use flock::{Backpressure, Pool};
    /// let pool = Pool::builder().when_full(Backpressure::Reject).build().unwrap();
    /// pool.submit(|| ()).unwrap();
    /// ```
    pub fn when_full(mut self, policy: Backpressure) -> Self {
        self.when_full = policy;
        self
    }

    /// Longest a blocked submit waits for room before its task is handed back with
    /// [`RejectReason::Timeout`](crate::RejectReason::Timeout). Default: no limit.
    ///
    /// ```
    /// use std::time::Duration;
    /// let pool = flock::Pool::builder().block_timeout(Duration::from_millis(100)).build().unwrap();
    /// pool.submit(|| ()).unwrap();
    /// ```
    pub fn block_timeout(mut self, timeout: Duration) -> Self {
        self.block_timeout = Some(timeout);
        self
    }

    /// Each worker runs the tasks it spawned oldest first: `spawn`, `submit`, batches and a
    /// scope's `spawn` from one of its tasks (rayon's `breadth_first`). A `join` is not
    /// affected: it runs its own first half, and its second half unless a thief took it.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// let pool = flock::Pool::builder().workers(1).fifo().build().unwrap();
    /// let order = Mutex::new(Vec::new());
    /// pool.install(|| {
    ///     pool.scope(|s| {
    ///         for i in 0..4 {
    ///             let order = &order;
    ///             s.spawn(move |_| order.lock().unwrap().push(i));
    ///         }
    ///     })
    /// });
    /// assert_eq!(order.into_inner().unwrap(), [0, 1, 2, 3]);
    /// ```
    pub fn fifo(mut self) -> Self {
        self.fifo = true;
        self
    }

    /// Each worker runs the tasks it spawned newest first (the default: best cache reuse for
    /// fork-join).
    ///
    /// ```
    /// let pool = flock::Pool::builder().lifo().build().unwrap();
    /// pool.submit(|| ()).unwrap();
    /// ```
    pub fn lifo(mut self) -> Self {
        self.fifo = false;
        self
    }

    /// Rounds an idle worker spins (with growing backoff, then yields) before it parks.
    /// Default [`DEFAULT_SPIN_LIMIT`]; 0 parks at once.
    ///
    /// From the 8th round on a round yields the CPU (`sched_yield`), which lets a thread
    /// waiting for that CPU run (a submitter sharing it with a worker, when the pool has as
    /// many workers as CPUs). On Linux since late 2025 such a yield also costs the worker
    /// its next wake-up (the yielder forfeits the rest of its time slice, and carries that
    /// into its sleep): a task submitted to a parked pool by a thread that keeps running
    /// can wait for that thread's time slice, milliseconds, where the worker would
    /// otherwise start it within tens of microseconds. A pool fed that way wants 7 rounds
    /// or fewer (no yield); docs/bench.md ("A submitter that keeps running") has the
    /// measurements of both sides.
    ///
    /// ```
    /// // Park at once when idle: lowest CPU use, slightly slower to pick up bursts.
    /// let pool = flock::Pool::builder().spin_limit(0).build().unwrap();
    /// assert_eq!(pool.spawn(|| 1).join().unwrap(), 1);
    /// ```
    pub fn spin_limit(mut self, rounds: u32) -> Self {
        self.spin_limit = rounds;
        self
    }

    /// Pins worker `i` to the `i`-th CPU this process may run on (wrapping around).
    ///
    /// Where the OS refuses (a seccomp profile, a cpuset changed since), [`build`](Self::build)
    /// fails with [`BuildError::PinFailed`] and [`Pool::resize`] with
    /// [`ResizeError::PinFailed`], naming the lowest worker refused: a thread that could not
    /// pin leaves before it runs any hook or task, and is never counted among the workers.
    ///
    /// Needs the `pin` feature (on by default); without it, [`build`](Self::build) fails with
    /// [`BuildError::PinningUnavailable`] when pinning is asked for.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).pin_workers(true).build().unwrap();
    /// assert!(pool.stats().per_worker.iter().all(|w| w.pinned_core.is_some()));
    /// ```
    pub fn pin_workers(mut self, pin: bool) -> Self {
        self.pinning = if pin { Pinning::Allowed } else { Pinning::Off };
        self
    }

    /// Pins worker `i` to `cores[i % cores.len()]`. A core this process may not run on is a
    /// [`BuildError::UnknownCore`]. Needs the `pin` feature, as [`pin_workers`](Self::pin_workers)
    /// does.
    ///
    /// ```
    /// let err = flock::Pool::builder().pin_to([1_000_000]).build().unwrap_err();
    /// assert!(matches!(err, flock::BuildError::UnknownCore { core: 1_000_000, .. }));
    /// ```
    pub fn pin_to(mut self, cores: impl IntoIterator<Item = usize>) -> Self {
        self.pinning = Pinning::Explicit(cores.into_iter().collect());
        self
    }

    /// Names worker threads. Default `flock-worker-{i}`. Called once per worker started, by
    /// [`build`](PoolBuilder::build) and [`Pool::resize`]; if it panics, the worker is not
    /// started and they return [`BuildError::ThreadNamePanicked`] (having stopped the
    /// workers started before) and [`ResizeError::ThreadNamePanicked`] (keeping them).
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(1).thread_name(|i| format!("db-{i}")).build().unwrap();
    /// let name = pool.spawn(|| std::thread::current().name().map(str::to_owned)).join().unwrap();
    /// assert_eq!(name.as_deref(), Some("db-0"));
    /// ```
    pub fn thread_name(mut self, name: impl Fn(usize) -> String + Send + Sync + 'static) -> Self {
        self.thread_name = Some(std::sync::Arc::new(name));
        self
    }

    /// Stack size of each worker thread in bytes. Default: the platform's (`std::thread`).
    /// At least [`MIN_STACK_SIZE`] (64 KiB): `build` refuses a smaller one
    /// ([`BuildError::StackTooSmall`], and `0`
    /// [`ZeroStackSize`](crate::BuildError::ZeroStackSize)). The worker's own frames take up
    /// to 32 KiB in an unoptimised build (under 16 KiB optimised), beside your tasks' frames;
    /// as with `std::thread`, a stack that overflows aborts the process.
    ///
    /// ```
    /// let pool = flock::Pool::builder().stack_size(8 << 20).build().unwrap();
    /// pool.submit(|| ()).unwrap();
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Called on each worker thread, with its index, before it runs any task (after its
    /// pinning, if asked for: a thread that could not pin runs neither hook). A panic in the
    /// hook is caught and printed; the worker goes on.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let started = Arc::new(AtomicUsize::new(0));
    /// let s = started.clone();
    /// let pool = flock::Pool::builder()
    ///     .workers(2)
    ///     .on_worker_start(move |_| { s.fetch_add(1, Ordering::SeqCst); })
    ///     .build()
    ///     .unwrap();
    /// pool.shutdown().unwrap();
    /// assert_eq!(started.load(Ordering::SeqCst), 2);
    /// ```
    pub fn on_worker_start(mut self, hook: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.on_worker_start = Some(std::sync::Arc::new(hook));
        self
    }

    /// Called on each worker thread, with its index, after its last task. A panic in the hook
    /// is caught and printed. From the hook of a worker that retires (after a shrinking
    /// [`Pool::resize`]), `resize` returns [`ResizeError::WouldDeadlock`]: it would wait for
    /// that worker to leave. Tasks the hook submits (into this pool, from its worker) are
    /// never left behind: from a worker that a shrink retires they go to the workers that
    /// stay, as its other queued tasks did; during a shutdown they run on that worker
    /// before its thread exits, with what they submit in turn. A `resize` that grows the
    /// pool back over a retiring worker's slot waits until that worker has left, hook
    /// included (not the tasks it submitted): a hook that waits for the growing thread (for
    /// its `resume`, say) hangs both.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let stopped = Arc::new(AtomicUsize::new(0));
    /// let s = stopped.clone();
    /// let pool = flock::Pool::builder()
    ///     .workers(2)
    ///     .on_worker_stop(move |_| { s.fetch_add(1, Ordering::SeqCst); })
    ///     .build()
    ///     .unwrap();
    /// pool.shutdown().unwrap();
    /// assert_eq!(stopped.load(Ordering::SeqCst), 2);
    /// ```
    pub fn on_worker_stop(mut self, hook: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.on_worker_stop = Some(std::sync::Arc::new(hook));
        self
    }

    /// Called with every panic of a task submitted with [`Pool::submit`] (spawned tasks hand
    /// their panic to their [`JoinHandle`](crate::JoinHandle), scoped tasks to their scope).
    /// Without a handler the panic is counted and the standard panic hook has already printed
    /// it. A panic inside the handler is caught and printed; the worker goes on.
    ///
    /// ```
    /// let pool = flock::Pool::builder()
    ///     .panic_handler(|p| eprintln!("task failed on worker {:?}: {:?}", p.worker(), p.message()))
    ///     .build()
    ///     .unwrap();
    /// pool.submit(|| ()).unwrap();
    /// ```
    pub fn panic_handler(mut self, handler: impl Fn(TaskPanic) + Send + Sync + 'static) -> Self {
        self.panic_handler = Some(std::sync::Arc::new(handler));
        self
    }

    /// With [`Backpressure::SpawnThread`], the most helper threads alive at once. Default:
    /// the number of workers.
    ///
    /// ```
    /// use flock::{Backpressure, Pool};
    /// let pool = Pool::builder().when_full(Backpressure::SpawnThread).max_spawned_threads(4).build().unwrap();
    /// pool.submit(|| ()).unwrap();
    /// ```
    pub fn max_spawned_threads(mut self, n: usize) -> Self {
        self.max_spawned_threads = Some(n);
        self
    }

    /// Records each task's queue wait (submit → start) and run time (start → end) in
    /// histograms that [`Pool::stats`] reports. Off by default: it reads the clock at
    /// submit and at the end of each task, and at its start unless the worker comes
    /// straight from another task: then the start is that task's end, or the submit if that
    /// was later, so the run time includes taking the task from its queue (tens of
    /// nanoseconds), and idle time never counts. On x86-64 Linux whose kernel keeps time with the
    /// time-stamp counter, the clock is that counter, read directly (its rate is measured
    /// once per process, a 200 µs spin when the first such pool is built); elsewhere it is
    /// [`std::time::Instant`].
    ///
    /// ```
    /// let pool = flock::Pool::builder().track_latency(true).build().unwrap();
    /// pool.submit(|| ()).unwrap();
    /// pool.wait().unwrap();
    /// assert_eq!(pool.stats().run_time.unwrap().count, 1);
    /// ```
    pub fn track_latency(mut self, on: bool) -> Self {
        self.track_latency = on;
        self
    }

    /// Priority lanes, as `(name, weight)` pairs. Default: one lane, `"default"`, weight 1.
    ///
    /// When several lanes have queued work, each worker shares its time between them in
    /// proportion to their weights (start-time fair queueing over the run time of each lane's
    /// tasks), FIFO within a lane. A lane with nothing queued costs nothing and saves no
    /// credit for later; a busy low-weight lane still gets its share, so it never starves;
    /// a lane that becomes busy is served at each worker's next task boundary if it is
    /// behind. Tasks go to a lane with [`Pool::submit_to`] / [`Pool::spawn_to`]; tasks
    /// submitted from inside a task go to that task's lane. [`Pool::submit`] from outside uses
    /// the first lane. At most [`MAX_LANES`] lanes; weights are 1 or more; names differ.
    /// [`strict_priority`](PoolBuilder::strict_priority) makes the weights priorities
    /// instead: a heavier lane's queued tasks then always start first.
    ///
    /// ```
    /// let pool = flock::Pool::builder()
    ///     .lanes(&[("interactive", 8), ("batch", 1)])
    ///     .build()
    ///     .unwrap();
    /// pool.submit_to("batch", || ()).unwrap();
    /// pool.submit_to("interactive", || ()).unwrap();
    /// pool.wait().unwrap();
    /// assert_eq!(pool.stats().lanes[1].executed, 1);
    /// ```
    pub fn lanes(mut self, lanes: &[(&str, u32)]) -> Self {
        self.lanes = Some(
            lanes
                .iter()
                .map(|&(name, weight)| (name.to_owned(), weight))
                .collect(),
        );
        self
    }

    /// Whether a pool whose lanes differ in weight keeps a *lane reserve* (default: yes).
    ///
    /// flock does not interrupt a running task, so without the reserve a task submitted to a
    /// heavy lane while every worker runs a long task of a lighter lane waits until one of
    /// those ends. The reserve is one extra thread, asleep on a futex until a submitter sees
    /// exactly that case: then it takes the heavy lane's task from the lane's shared queue
    /// and runs it at once, the kernel sharing the CPUs between it and the workers, and goes
    /// back to sleep as soon as a worker is free or runs a lane as heavy. So a heavy lane's
    /// queue wait stays close to its wait on an idle pool (the bench report's `lanes-p99`).
    ///
    /// It serves every lane heavier than the lightest, heaviest first, one task at a time,
    /// and only tasks queued from outside the workers (a worker's own queue is served at its
    /// next task boundary). It is not a worker: it is not pinned, runs no worker hooks, has
    /// no entry in [`Stats::per_worker`](crate::Stats::per_worker), and its tasks count in
    /// [`Stats::reserve_runs`](crate::Stats::reserve_runs) and their lanes' counts. The time
    /// it runs is not charged to the lanes' shares (it is time the lighter lanes' tasks lose
    /// to the kernel's time-slicing, in the rare moments every worker runs one). Tasks it
    /// runs submit into their own lane, like tasks on a worker; `wait()` or a shutdown from
    /// one of them is [`WaitError::WouldDeadlock`](crate::WaitError::WouldDeadlock). When it
    /// takes a bundle of a batch, the jobs after the first go back to the end of their lane's
    /// queue. A pool with one lane, or lanes all of one weight, has no reserve either way.
    ///
    /// ```
    /// use std::sync::mpsc::channel;
    /// let pool = flock::Pool::builder()
    ///     .workers(1)
    ///     .lanes(&[("interactive", 8), ("batch", 1)])
    ///     .build()
    ///     .unwrap();
    /// let (release, hold) = channel::<()>();
    /// let (started, batch_started) = channel();
    /// pool.submit_to("batch", move || { started.send(()).unwrap(); hold.recv().unwrap(); })
    ///     .unwrap();
    /// batch_started.recv().unwrap(); // the only worker is busy with a batch task
    /// let answer = pool.spawn_to("interactive", || 42);
    /// assert_eq!(answer.join().unwrap(), 42); // ran on the reserve, the batch task still going
    /// release.send(()).unwrap();
    /// pool.wait().unwrap();
    /// assert_eq!(pool.stats().reserve_runs, 1);
    /// ```
    pub fn lane_reserve(mut self, on: bool) -> Self {
        self.lane_reserve = on;
        self
    }

    /// Whether the lanes' weights are strict priorities instead of shares (default: `false`,
    /// the weighted sharing of [`lanes`](PoolBuilder::lanes)).
    ///
    /// With `true`, a lane's weight is its priority: every time a worker picks its next task
    /// it looks at the lanes from the heaviest down, and takes a task of a lane only if no
    /// heavier lane had a task queued when it looked. So a task queued in a heavier lane
    /// starts before every task of a lighter lane that has not started yet. Lanes of equal
    /// weight are one priority level and share it as in a weighted pool (fair queueing, equal
    /// shares). FIFO within a lane, exact counts and the [lane reserve](PoolBuilder::lane_reserve)
    /// are as in a weighted pool (the reserve serves the heaviest lanes first, so it never
    /// starts a lighter lane's task before a heavier one's); [`yield_to_lanes`](crate::yield_to_lanes)
    /// runs every queued task of the heavier lanes, not a share.
    ///
    /// *Queued* means in any queue a worker takes tasks from: the lane's shared queue (tasks
    /// submitted from outside, batches included), the worker's own deque, and the other
    /// workers' deques (tasks spawned inside the pool, `join` halves): a worker steals a
    /// heavier lane's task from another worker before it takes a lighter lane's task from
    /// anywhere, its own deque included. What it does not promise:
    /// - A running task is never interrupted. A heavier lane's task submitted while every
    ///   worker runs a lighter lane's task waits for one of them to end, unless the lane reserve
    ///   runs it or the running task calls `yield_to_lanes`.
    /// - A worker looks at the queues one after another: a task queued just after the worker
    ///   looked at its lane may start after the one lighter task that worker takes next.
    /// - Priority orders the starts; it keeps no worker free. Once the heavier lanes have
    ///   nothing queued, idle workers take the lighter lanes' tasks, which then run beside (and
    ///   may outlast) the heavier lanes' tasks that come later.
    /// - What belongs to the running task comes first: a `join`'s second half that the worker
    ///   that forked it takes back (with what the first half left above it on that worker's
    ///   deque), a [`Pool::broadcast`] call for that worker, a task it took as the pool paused
    ///   (run first after the resume). While the pool is paused, a worker waiting inside a task
    ///   runs the spawned tasks it may be waiting for in the order it finds them.
    ///
    /// **Starvation**: a lighter lane's tasks start only when every heavier lane has nothing
    /// queued, so while heavier tasks keep coming at least as fast as the workers run them,
    /// the lighter lanes' tasks never start (and [`Pool::wait`] waits for them too). Use the
    /// weighted default where every lane must make progress.
    ///
    /// ```
    /// use std::sync::{mpsc, Arc, Mutex};
    /// let pool = flock::Pool::builder()
    ///     .workers(1)
    ///     .lanes(&[("high", 8), ("low", 1)])
    ///     .strict_priority(true)
    ///     .build()
    ///     .unwrap();
    /// let (started, running) = mpsc::channel();
    /// let (release, hold) = mpsc::channel::<()>();
    /// pool.submit_to("high", move || { started.send(()).unwrap(); hold.recv().unwrap(); })
    ///     .unwrap();
    /// running.recv().unwrap(); // the only worker is busy until `release`
    /// let order = Arc::new(Mutex::new(String::new()));
    /// for lane in ["low", "low", "low", "high", "high", "high"] {
    ///     let order = order.clone();
    ///     pool.submit_to(lane, move || order.lock().unwrap().push_str(&lane[..1])).unwrap();
    /// }
    /// release.send(()).unwrap();
    /// pool.wait().unwrap();
    /// // Weighted (without `strict_priority`), the low lane would get its share in between.
    /// assert_eq!(*order.lock().unwrap(), "hhhlll");
    /// ```
    pub fn strict_priority(mut self, on: bool) -> Self {
        self.strict_priority = on;
        self
    }

    /// The most workers [`Pool::resize`] may grow the pool to. Default: the larger of the
    /// starting worker count and the number of CPUs this process may run on. Each allowed
    /// worker has its slot (a deque per lane, a counter shard, a parker) from the start, so
    /// resizing never reallocates what running workers read.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(1).max_workers(8).build().unwrap();
    /// pool.resize(8).unwrap();
    /// assert_eq!(pool.workers(), 8);
    /// ```
    pub fn max_workers(mut self, n: usize) -> Self {
        self.max_workers = Some(n);
        self
    }

    /// Whether this pool's idle workers may use `membarrier(2)` when they park (default
    /// `true`), so that the pool's hot paths need no fence.
    ///
    /// A worker about to sleep must see every task pushed before it checks the queues one
    /// last time, else a task could wait with the worker asleep (a lost wake-up). With the
    /// membarrier (Linux 4.14 and later), the parking worker pays for that ordering:
    /// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` makes every other *running* thread of the process
    /// execute a memory barrier, so a `join`, a local spawn or an outside submit needs only
    /// a compiler fence. Its price is an interrupt of each CPU that runs a thread of this
    /// process, the application's own threads included, at the moment a worker parks while no
    /// other worker sleeps (a worker that parks while another stays asleep needs none): a few
    /// microseconds of a busy thread's time each, which adds up in a pool that goes from
    /// every worker busy to one asleep thousands of times a second (a one-worker pool does at
    /// every park).
    ///
    /// `false` keeps every CPU uninterrupted: each local push and each outside submit then
    /// pays a SeqCst fence instead (a locked instruction on fork-join's hottest path), and
    /// parks issue no system call beyond the futex.
    /// Choose it for a pool that goes idle and wakes thousands of times a second in a process
    /// with latency-sensitive threads of its own. Either way
    /// no wake-up is lost. Where the kernel refuses the membarrier (another OS, an old
    /// kernel, a seccomp filter) the pool uses the fences whatever this says;
    /// [`Pool::uses_membarrier`] tells which one a pool got. The global pool takes this from
    /// the environment variable `FLOCK_MEMBARRIER` (`0` or `1`; [`global`](fn@crate::global)).
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).membarrier(false).build().unwrap();
    /// assert!(!pool.uses_membarrier());
    /// assert_eq!(pool.join(|| 1, || 2), (1, 2));
    /// ```
    pub fn membarrier(mut self, on: bool) -> Self {
        self.membarrier = on;
        self
    }

    /// Under loom: submits from outside go through submitter rings (see `loom_rings`).
    #[cfg(all(flock_loom, test))]
    pub(crate) fn loom_rings(mut self) -> Self {
        self.loom_rings = true;
        self
    }

    /// Checks the configuration and starts the workers. Returns once every worker is running
    /// (and pinned, when asked). A configuration that cannot work is a [`BuildError`] that
    /// says what to change, before any thread starts.
    ///
    /// ```
    /// use flock::{BuildError, Pool};
    /// let pool = Pool::builder().workers(2).capacity(1_000).build()?;
    /// assert_eq!((pool.workers(), pool.capacity()), (2, 1_000));
    ///
    /// let err = Pool::builder().lanes(&[("a", 1), ("a", 2)]).build().unwrap_err();
    /// assert!(matches!(err, BuildError::DuplicateLane { .. }));
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn build(self) -> Result<Pool, BuildError> {
        start(self.into_config()?, Registry::start_lane_reserve)
    }

    /// The checked configuration `build` starts.
    fn into_config(self) -> Result<Config, BuildError> {
        let workers = match self.workers {
            Some(0) | None => std::thread::available_parallelism().map_or(1, usize::from),
            Some(n) => n,
        };
        if workers > MAX_WORKERS {
            return Err(BuildError::TooManyWorkers {
                requested: workers,
                max: MAX_WORKERS,
            });
        }
        if self.capacity == 0 {
            return Err(BuildError::ZeroCapacity);
        }
        match self.stack_size {
            Some(0) => return Err(BuildError::ZeroStackSize),
            Some(bytes) if bytes < MIN_STACK_SIZE => {
                return Err(BuildError::StackTooSmall {
                    requested: bytes,
                    min: MIN_STACK_SIZE,
                })
            }
            _ => {}
        }
        let max_spawned_threads = self.max_spawned_threads.unwrap_or(workers);
        if max_spawned_threads == 0 && self.when_full == Backpressure::SpawnThread {
            return Err(BuildError::ZeroSpawnThreads);
        }
        let max_workers = match self.max_workers {
            Some(max) if max < workers => {
                return Err(BuildError::MaxWorkersBelowWorkers {
                    workers,
                    max_workers: max,
                })
            }
            Some(max) if max > MAX_WORKERS => {
                return Err(BuildError::TooManyWorkers {
                    requested: max,
                    max: MAX_WORKERS,
                })
            }
            Some(max) => max,
            None => {
                let cpus = std::thread::available_parallelism().map_or(1, usize::from);
                workers.max(cpus.min(MAX_WORKERS))
            }
        };
        let lanes = check_lanes(
            self.lanes
                .unwrap_or_else(|| vec![("default".to_owned(), 1)]),
        )?;
        let cores = resolve_cores(&self.pinning, max_workers)?;
        let thread_name = self
            .thread_name
            .unwrap_or_else(|| std::sync::Arc::new(|i| format!("flock-worker-{i}")));
        let cfg = Config {
            workers,
            max_workers,
            capacity: self.capacity,
            when_full: self.when_full,
            block_timeout: self.block_timeout,
            spin_limit: self.spin_limit,
            cores,
            on_worker_start: self.on_worker_start,
            on_worker_stop: self.on_worker_stop,
            panic_handler: self.panic_handler,
            max_spawned_threads,
            track_latency: self.track_latency,
            lanes,
            lane_reserve: self.lane_reserve,
            strict_priority: self.strict_priority,
            membarrier: self.membarrier,
            fifo: self.fifo,
            submit_rings: if cfg!(flock_loom) && !self.loom_rings {
                0
            } else {
                crate::submitq::RINGS
            },
            thread_name,
            stack_size: self.stack_size,
        };
        Ok(cfg)
    }
}

fn check_lanes(lanes: Vec<(String, u32)>) -> Result<Vec<(String, u32)>, BuildError> {
    if lanes.is_empty() {
        return Err(BuildError::NoLanes);
    }
    if lanes.len() > MAX_LANES {
        return Err(BuildError::TooManyLanes {
            requested: lanes.len(),
            max: MAX_LANES,
        });
    }
    for (i, (name, weight)) in lanes.iter().enumerate() {
        if *weight == 0 {
            return Err(BuildError::ZeroLaneWeight { lane: name.clone() });
        }
        if lanes[..i].iter().any(|(other, _)| other == name) {
            return Err(BuildError::DuplicateLane { lane: name.clone() });
        }
    }
    Ok(lanes)
}

/// The core each worker is pinned to, or `None` without pinning.
fn resolve_cores(pinning: &Pinning, workers: usize) -> Result<Option<Vec<usize>>, BuildError> {
    match pinning {
        Pinning::Off => return Ok(None),
        Pinning::Explicit(list) if list.is_empty() => return Err(BuildError::EmptyCoreList),
        _ if !pin::AVAILABLE => return Err(BuildError::PinningUnavailable),
        _ => {}
    }
    let available = pin::available_cores();
    let list = match pinning {
        Pinning::Off => unreachable!("handled above"),
        Pinning::Allowed if available.is_empty() => return Err(BuildError::NoCoresToPin),
        Pinning::Allowed => available,
        Pinning::Explicit(list) => {
            if let Some(&core) = list.iter().find(|c| !available.contains(c)) {
                return Err(BuildError::UnknownCore { core, available });
            }
            list.clone()
        }
    };
    Ok(Some((0..workers).map(|i| list[i % list.len()]).collect()))
}

/// Starts the workers of a checked configuration and waits until each reports in, then the
/// lane reserve's thread (`reserve`: `Registry::start_lane_reserve`; a unit test has it
/// refused once every worker runs).
fn start(
    cfg: Config,
    reserve: impl FnOnce(&Arc<Registry>) -> Result<(), ResizeError>,
) -> Result<Pool, BuildError> {
    let workers = cfg.workers;
    let registry = Arc::new(Registry::new(cfg));
    match Registry::resize(&registry, workers).and_then(|()| reserve(&registry)) {
        Ok(()) => Ok(Pool::from_registry(registry)),
        Err(e) => {
            let err = match e {
                // (`WouldDeadlock` needs a retiring worker: none exists yet.)
                ResizeError::ThreadSpawn(e) => BuildError::ThreadSpawn(e),
                ResizeError::PinFailed { worker, core } => BuildError::PinFailed { worker, core },
                ResizeError::ThreadNamePanicked { worker, message } => {
                    BuildError::ThreadNamePanicked { worker, message }
                }
                other => unreachable!("a new pool's first start cannot fail with {other:?}"),
            };
            registry.begin_shutdown(false);
            registry.crew.await_workers(None);
            registry.crew.join_threads();
            Err(err)
        }
    }
}

#[cfg(all(test, not(flock_loom)))]
mod tests {
    use crate::Pool;

    /// Without the `pin` feature, asking for pinning fails in `build()` with an error that
    /// names the feature; an empty list is still the more specific `EmptyCoreList`.
    #[test]
    #[cfg(not(feature = "pin"))]
    fn pinning_without_the_pin_feature_is_a_build_error() {
        use crate::BuildError;
        for builder in [
            Pool::builder().pin_workers(true),
            Pool::builder().pin_to([0]),
        ] {
            let err = builder.build().unwrap_err();
            assert!(matches!(err, BuildError::PinningUnavailable), "{err:?}");
            assert!(err.to_string().contains("`pin` feature"), "{err}");
        }
        let empty = Pool::builder().pin_to(Vec::new()).build().unwrap_err();
        assert!(matches!(empty, BuildError::EmptyCoreList), "{empty:?}");
    }

    /// The OS refuses the lane reserve's thread, after every worker started: `build` fails
    /// with `ThreadSpawn`, and the workers it started ran their stop hooks and were joined
    /// (nothing holds the configuration's hooks any more). A seccomp filter cannot refuse
    /// this thread alone (it refuses the workers first), so the refusal is injected here.
    #[test]
    #[cfg(not(flock_loom))]
    fn a_refused_lane_reserve_stops_and_joins_the_workers_started() {
        use crate::{BuildError, ResizeError};
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let started = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(AtomicUsize::new(0));
        let (on_start, on_stop) = (started.clone(), stopped.clone());
        let cfg = Pool::builder()
            .workers(3)
            .lanes(&[("interactive", 4), ("batch", 1)])
            .lane_reserve(true)
            .on_worker_start(move |_| {
                on_start.fetch_add(1, Ordering::SeqCst);
            })
            .on_worker_stop(move |_| {
                on_stop.fetch_add(1, Ordering::SeqCst);
            })
            .into_config()
            .unwrap();
        let mut asked = false;
        let result = super::start(cfg, |registry| {
            assert!(
                registry.lane_reserve.is_some(),
                "the pool has a reserve to start"
            );
            asked = true;
            Err(ResizeError::ThreadSpawn(std::io::Error::from_raw_os_error(
                11, // EAGAIN, what clone returns
            )))
        });
        assert!(asked);
        let Err(err) = result else {
            panic!("a refused reserve fails the build");
        };
        assert!(matches!(err, BuildError::ThreadSpawn(_)), "{err:?}");
        assert_eq!(started.load(Ordering::SeqCst), 3);
        assert_eq!(stopped.load(Ordering::SeqCst), 3);
        // The hooks' closures went with the registry: no thread of the pool is left.
        assert_eq!(Arc::strong_count(&started), 1);
        assert_eq!(Arc::strong_count(&stopped), 1);
    }

    /// `pin_workers(false)` needs no pinning code, with or without the feature.
    #[test]
    fn no_pinning_builds_in_every_configuration() {
        let pool = Pool::builder()
            .workers(1)
            .pin_workers(false)
            .build()
            .unwrap();
        assert_eq!(pool.spawn(|| 7).join().unwrap(), 7);
        assert!(pool
            .stats()
            .per_worker
            .iter()
            .all(|w| w.pinned_core.is_none()));
    }
}
