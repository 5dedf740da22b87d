//! `Pool`: the handle users hold.

use crate::job::{Job, Outcome, COUNTED, DISCARDABLE};
use crate::registry::{Admission, QuietOutcome, Registry};
use crate::spawn::{spawn_admitted, spawn_job, JoinHandle};
use crate::sync::Arc;
use crate::unwind::UntilPanic;
use crate::worker::{with_current, WorkerThread};
use crate::{BatchError, Lane, LaneId, RejectReason, ResizeError, SubmitError, WaitError};
use std::fmt;
use std::time::{Duration, Instant};

/// Tasks a batch admits at once from outside the pool.
pub(crate) const BATCH: usize = 256;

/// A work-stealing pool of worker threads.
///
/// `Pool` is `Send + Sync`: share it by reference (or in an `Arc`) and submit from any
/// number of threads. Dropping it shuts it down gracefully: queued tasks run, then every
/// thread is joined, so no thread outlives the pool.
///
/// **After `fork()`** the child process has none of the pool's threads: a `Pool` built
/// before the fork is unusable in the child. Tasks submitted there queue and never run, and
/// `join`, `wait`, `shutdown` and the pool's drop block for good. Do not use it in the
/// child, and [`std::mem::forget`] it rather than drop it there (or `exec` at once). Only the
/// [`global`](fn@crate::global) pool is rebuilt in the child, on first use.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// let pool = flock::Pool::new();
/// let hits = Arc::new(AtomicUsize::new(0));
/// for _ in 0..1000 {
///     let hits = hits.clone();
///     pool.submit(move || { hits.fetch_add(1, Ordering::Relaxed); }).unwrap();
/// }
/// pool.wait().unwrap();
/// assert_eq!(hits.load(Ordering::Relaxed), 1000);
/// ```
#[doc(alias = "ThreadPool", alias = "Runtime")]
pub struct Pool {
    registry: Arc<Registry>,
    /// A handle that does not own the pool: the process-wide pool's (`global.rs`), whose
    /// shutdown calls answer `WaitError::GlobalPool`, or one lent for a call
    /// (`Pool::lend`), whose drop does not close the pool.
    shared: bool,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.workers())
            .field("capacity", &self.capacity())
            .field("shut_down", &self.is_shutdown())
            .finish()
    }
}

impl Default for Pool {
    fn default() -> Self {
        Pool::new()
    }
}

impl Pool {
    pub(crate) fn from_registry(registry: Arc<Registry>) -> Pool {
        Pool {
            registry,
            shared: false,
        }
    }

    /// This pool as the global pool: one that cannot be shut down.
    pub(crate) fn into_global(mut self) -> Pool {
        self.shared = true;
        self
    }

    /// Runs `f` with a handle on `registry`'s pool that closes nothing when dropped: for the
    /// free functions that reach the current pool's `Pool` methods from a worker.
    pub(crate) fn lend<R>(registry: &Arc<Registry>, f: impl FnOnce(&Pool) -> R) -> R {
        f(&Pool {
            registry: registry.clone(),
            shared: true,
        })
    }

    /// The shared state, for handles built on a pool (`TaskGroup`, `install`, broadcasts).
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Whether the calling thread is running one of this pool's tasks: it is one of the
    /// pool's workers, or a thread running a task for the pool off the workers (the caller
    /// under `CallerRuns`, a helper thread, the lane reserve), or one running the
    /// destructors of tasks it drops ([`purge`](Pool::purge), [`TaskGroup::cancel`]: those
    /// tasks are outstanding until it is done, see `purge.rs`). Waiting for the pool from
    /// there would wait for the calling task itself.
    ///
    /// [`TaskGroup::cancel`]: crate::TaskGroup::cancel
    pub(crate) fn inside(&self) -> bool {
        self.own_worker(|w| w.is_some())
            || self.registry.runs_task_off_worker_here()
            || crate::purge::drops_tasks_here(&self.registry)
    }

    /// This pool's worker, if the calling thread is one.
    fn own_worker<R>(&self, f: impl FnOnce(Option<&WorkerThread>) -> R) -> R {
        with_current(|w| f(w.filter(|w| w.is_in(&self.registry))))
    }

    /// Runs `task` on the pool, fire and forget.
    ///
    /// From outside the pool the task goes to the shared queue (of the first lane, when the
    /// pool has several: see [`submit_to`](Pool::submit_to)), subject to capacity and the
    /// [`Backpressure`](crate::Backpressure) policy; a refused task comes back in the error.
    /// Under [`Backpressure::Block`](crate::Backpressure::Block) (the default) a full queue
    /// **blocks the calling thread** until there is room: from async code use
    /// [`submit_async`](Pool::submit_async).
    /// From one of the pool's own tasks it goes to that worker's own deque, in the running
    /// task's lane (never refused, never blocking). A panic in the task is caught, counted and
    /// passed to the panic handler.
    ///
    /// ```
    /// use flock::{Backpressure, Pool, RejectReason};
    /// let pool = Pool::builder().workers(1).capacity(1).when_full(Backpressure::Reject).build().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel::<()>();
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// pool.submit(move || { started_tx.send(()).unwrap(); rx.recv().unwrap(); }).unwrap();
    /// started.recv().unwrap();               // the worker is busy
    /// pool.submit(|| ()).unwrap();           // fills the queue
    /// let (out_tx, out) = std::sync::mpsc::channel();
    /// let refused = pool.submit(move || out_tx.send(5).unwrap()).unwrap_err();
    /// assert_eq!(refused.reason(), RejectReason::Full);
    /// refused.into_inner()();                // handed back, unrun: run it here
    /// assert_eq!(out.recv().unwrap(), 5);
    /// tx.send(()).unwrap();
    /// ```
    pub fn submit<F>(&self, task: F) -> Result<(), SubmitError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.submit_in(None, task)
    }

    /// Like [`submit`](Pool::submit), into `lane` (a [`Lane`], a lane's name, or its index;
    /// see [`PoolBuilder::lanes`](crate::PoolBuilder::lanes)). Tasks this task submits go to
    /// the same lane.
    ///
    /// ```
    /// let pool = flock::Pool::builder().lanes(&[("interactive", 8), ("batch", 1)]).build().unwrap();
    /// pool.submit_to("batch", || { /* a long report */ }).unwrap();
    /// pool.submit_to("interactive", || { /* a user's click */ }).unwrap();
    /// pool.wait().unwrap();
    /// ```
    pub fn submit_to<L, F>(&self, lane: L, task: F) -> Result<(), SubmitError<F>>
    where
        L: LaneId,
        F: FnOnce() + Send + 'static,
    {
        match lane.resolve(&self.registry.cfg.lanes) {
            Some(lane) => self.submit_in(Some(lane), task),
            None => Err(self.refuse_unknown_lane(task)),
        }
    }

    /// Counts a task refused for naming a lane this pool does not have (in
    /// `Stats::rejected_unknown_lane`) and hands it back.
    #[cold]
    fn refuse_unknown_lane<F>(&self, task: F) -> SubmitError<F> {
        self.registry.count_refused(RejectReason::UnknownLane, 1);
        SubmitError::new(task, RejectReason::UnknownLane)
    }

    fn submit_in<F>(&self, lane: Option<usize>, task: F) -> Result<(), SubmitError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        if let Some(task) = self.own_worker(|w| match w {
            Some(w) => {
                w.submit_local(fire_and_forget(task), lane);
                None
            }
            None => Some(task),
        }) {
            let reg = &self.registry;
            let shard = reg.shards.external();
            match reg.admit(shard, Admission::Bounded(reg.cfg.when_full)) {
                Ok(route) => {
                    let lane = reg.outside_lane(lane);
                    Registry::dispatch_with(reg, shard, route, lane, || fire_and_forget(task))
                }
                Err(reason) => return Err(SubmitError::new(task, reason)),
            }
        }
        Ok(())
    }

    /// Submits many tasks at once: from outside the pool they are admitted in groups of a
    /// few hundred, with one capacity reservation, one count and one wake-up call per group
    /// (waking as many sleeping workers as there are tasks, at most all), instead of per task.
    /// Returns how many were accepted: all of them, or an error holding how many were
    /// accepted before the first refusal and every refused task, unrun, in order (the
    /// iterator is drained into it). The [`Backpressure`](crate::Backpressure) policy applies
    /// to each task that does not fit. From one of the pool's tasks, they all go to the
    /// worker's own deque.
    ///
    /// # Panics
    /// If `tasks` panics, the tasks it yielded before are submitted all the same (admitted,
    /// counted and run as above), and the panic then propagates from here.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// let pool = flock::Pool::new();
    /// let done = Arc::new(AtomicUsize::new(0));
    /// let tasks = (0..10_000).map(|_| {
    ///     let done = done.clone();
    ///     move || { done.fetch_add(1, Ordering::Relaxed); }
    /// });
    /// assert_eq!(pool.submit_batch(tasks).unwrap(), 10_000);
    /// pool.wait().unwrap();
    /// assert_eq!(done.load(Ordering::Relaxed), 10_000);
    /// ```
    pub fn submit_batch<I>(&self, tasks: I) -> Result<usize, BatchError<I::Item>>
    where
        I: IntoIterator,
        I::Item: FnOnce() + Send + 'static,
    {
        self.batch_in(None, tasks)
    }

    /// [`submit_batch`](Pool::submit_batch) into `lane`.
    ///
    /// ```
    /// let pool = flock::Pool::builder().lanes(&[("io", 1), ("cpu", 1)]).build().unwrap();
    /// assert_eq!(pool.submit_batch_to("cpu", (0..100).map(|_| || ())).unwrap(), 100);
    /// ```
    pub fn submit_batch_to<L, I>(&self, lane: L, tasks: I) -> Result<usize, BatchError<I::Item>>
    where
        L: LaneId,
        I: IntoIterator,
        I::Item: FnOnce() + Send + 'static,
    {
        match lane.resolve(&self.registry.cfg.lanes) {
            Some(lane) => self.batch_in(Some(lane), tasks),
            None => {
                let tasks: Vec<_> = tasks.into_iter().collect();
                let reason = RejectReason::UnknownLane;
                self.registry.count_refused(reason, tasks.len() as u64);
                Err(BatchError::new(0, reason, tasks))
            }
        }
    }

    fn batch_in<I>(&self, lane: Option<usize>, tasks: I) -> Result<usize, BatchError<I::Item>>
    where
        I: IntoIterator,
        I::Item: FnOnce() + Send + 'static,
    {
        let mut tasks = UntilPanic::new(tasks.into_iter());
        let local = self.own_worker(|w| {
            w.map(|w| w.submit_local_batch(tasks.by_ref().map(fire_and_forget), lane))
        });
        let result = match local {
            Some(n) => Ok(n),
            None => self.batch_from_outside(lane, &mut tasks),
        };
        // What the iterator yielded before it panicked is submitted (and counted).
        tasks.resume();
        result
    }

    fn batch_from_outside<T>(
        &self,
        lane: Option<usize>,
        tasks: &mut impl Iterator<Item = T>,
    ) -> Result<usize, BatchError<T>>
    where
        T: FnOnce() + Send + 'static,
    {
        let reg = &self.registry;
        let lane = self.registry.outside_lane(lane);
        let mut batch = Vec::with_capacity(BATCH);
        let mut accepted = 0;
        loop {
            batch.extend(tasks.by_ref().take(BATCH));
            if batch.is_empty() {
                return Ok(accepted);
            }
            let offered = batch.len();
            let admission = Admission::Bounded(reg.cfg.when_full);
            match Registry::admit_batch(reg, lane, admission, &mut batch, fire_and_forget) {
                Ok(n) => accepted += n,
                Err(reason) => {
                    accepted += offered - batch.len();
                    // Never offered to the pool, handed back all the same: counted refused
                    // like the rest, so the refusal counters match what comes back.
                    let before = batch.len();
                    batch.extend(tasks.by_ref());
                    reg.count_refused(reason, (batch.len() - before) as u64);
                    return Err(BatchError::new(accepted, reason, batch));
                }
            }
        }
    }

    /// Runs `task` on the pool and returns a handle to its result.
    ///
    /// Admission is as for [`submit`](Pool::submit): a full queue **blocks the calling
    /// thread** under `Block`; from async code use [`run_async`](Pool::run_async) (one
    /// `.await` for room and result) or [`spawn_async`](Pool::spawn_async). If the pool
    /// refuses the task, the
    /// closure is dropped and the handle's `join` returns
    /// [`JoinError::Refused`](crate::JoinError::Refused); use [`try_spawn`](Pool::try_spawn)
    /// to get the closure back instead.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let squares: Vec<_> = (0..10u64).map(|i| pool.spawn(move || i * i)).collect();
    /// let sum: u64 = squares.into_iter().map(|h| h.join().unwrap()).sum();
    /// assert_eq!(sum, 285);
    /// ```
    #[doc(alias = "spawn_blocking")]
    pub fn spawn<F, T>(&self, task: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match self.try_spawn(task) {
            Ok(handle) => handle,
            Err(refused) => JoinHandle::refused(&self.registry, refused.reason()),
        }
    }

    /// Like [`spawn`](Pool::spawn), but a refused task comes back in the error.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// pool.shutdown().unwrap();
    /// let back = pool.try_spawn(|| 1).unwrap_err().into_inner();
    /// assert_eq!(back(), 1);
    /// ```
    pub fn try_spawn<F, T>(&self, task: F) -> Result<JoinHandle<T>, SubmitError<F>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.spawn_in(None, task)
    }

    /// Like [`spawn`](Pool::spawn), into `lane` (see [`submit_to`](Pool::submit_to)).
    ///
    /// ```
    /// let pool = flock::Pool::builder().lanes(&[("interactive", 8), ("batch", 1)]).build().unwrap();
    /// assert_eq!(pool.spawn_to("interactive", || 2 + 2).join().unwrap(), 4);
    /// ```
    pub fn spawn_to<L, F, T>(&self, lane: L, task: F) -> JoinHandle<T>
    where
        L: LaneId,
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let refused = match lane.resolve(&self.registry.cfg.lanes) {
            Some(lane) => match self.spawn_in(Some(lane), task) {
                Ok(handle) => return handle,
                Err(refused) => refused.reason(),
            },
            None => self.refuse_unknown_lane(()).reason(),
        };
        JoinHandle::refused(&self.registry, refused)
    }

    fn spawn_in<F, T>(&self, lane: Option<usize>, task: F) -> Result<JoinHandle<T>, SubmitError<F>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let task = match self.own_worker(|w| match w {
            Some(w) => {
                let lane = w.local_lane(lane);
                let (job, handle) = spawn_job(&self.registry, lane, task);
                w.submit_local(job, Some(lane));
                Ok(handle)
            }
            None => Err(task),
        }) {
            Ok(handle) => return Ok(handle),
            Err(task) => task,
        };
        let reg = &self.registry;
        let shard = reg.shards.external();
        match reg.admit(shard, Admission::Bounded(reg.cfg.when_full)) {
            Ok(route) => {
                let lane = reg.outside_lane(lane);
                let (job, handle, route) = spawn_admitted(reg, route, lane, task);
                Registry::dispatch(reg, shard, route, job, lane);
                Ok(handle)
            }
            Err(reason) => Err(SubmitError::new(task, reason)),
        }
    }

    /// Runs `a` and `b`, potentially in parallel, and returns both results. On a worker, `b`
    /// goes on the worker's deque where an idle worker can steal it while `a` runs inline;
    /// from outside, the whole join runs on a worker while the caller blocks. A panic in either
    /// is re-raised after both finished. After [`shutdown`](Pool::shutdown), a join from
    /// outside runs `a` then `b` on the caller; they are not the pool's tasks then, and no
    /// counter of [`stats`](Pool::stats) counts them (neither submitted nor rejected).
    ///
    /// ```
    /// fn fib(pool: &flock::Pool, n: u64) -> u64 {
    ///     if n < 2 { return n; }
    ///     let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2));
    ///     a + b
    /// }
    /// let pool = flock::Pool::new();
    /// assert_eq!(fib(&pool, 20), 6765);
    /// ```
    #[inline]
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        // One thread-local lookup: this is the fork-join hot path.
        with_current(|w| match w {
            Some(w) if w.is_in(&self.registry) => crate::join::join_on_worker(w, a, b),
            _ => crate::join::join_from_outside(&self.registry, a, b),
        })
    }

    /// Blocks the calling thread until every task accepted so far has finished (or was
    /// dropped); the pool stays open. From async code, await [`wait_async`](Pool::wait_async). Tasks submitted concurrently with the call may or may not be waited for, and a
    /// steady stream of them can delay the return: `wait` returns once the pool has been seen
    /// with nothing outstanding at some moment after the call began (by this call, another
    /// `wait`er, or the worker that finished the last task). So concurrent `wait`ers all
    /// return for the same quiet moment, even when the first to return submits more work
    /// at once.
    ///
    /// # Errors
    /// [`WaitError::WouldDeadlock`] when called from one of the pool's own tasks (on a
    /// worker, or run off the workers: under [`CallerRuns`](crate::Backpressure::CallerRuns),
    /// on a helper thread, on the lane reserve) or from the destructor of a task that
    /// [`purge`](Pool::purge) or [`TaskGroup::cancel`](crate::TaskGroup::cancel) drops:
    /// that task is outstanding until its destructor returns;
    /// [`WaitError::Paused`] when the pool is (or becomes) paused while tasks wait in a
    /// queue, which would otherwise wait until someone calls [`resume`](Pool::resume).
    /// Paused with only running tasks left, it waits for them.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// pool.submit(|| std::thread::sleep(std::time::Duration::from_millis(5))).unwrap();
    /// pool.wait().unwrap();
    /// ```
    pub fn wait(&self) -> Result<(), WaitError> {
        if self.inside() {
            return Err(WaitError::WouldDeadlock);
        }
        match self.registry.wait_quiescent(None, true) {
            QuietOutcome::Paused => Err(WaitError::Paused),
            QuietOutcome::Done | QuietOutcome::TimedOut => Ok(()),
        }
    }

    /// Like [`wait`](Pool::wait) with a time limit: `true` if everything finished in time.
    /// Called from where [`wait`](Pool::wait) answers [`WaitError::WouldDeadlock`] it cannot
    /// wait, and returns `false` at once; [`wait_for`](Pool::wait_for) tells the two apart.
    /// Blocks the calling thread up to `timeout`.
    ///
    /// Deprecated: [`TaskGroup::wait_timeout`](crate::TaskGroup::wait_timeout) returns a
    /// `Result`, and the same name should not mean two things. [`wait_for`](Pool::wait_for)
    /// (on both types) is the `Result` form; `wait_for(t).is_ok()` is this `bool`.
    ///
    /// ```
    /// # #![allow(deprecated)]
    /// let pool = flock::Pool::new();
    /// pool.submit(|| ()).unwrap();
    /// assert!(pool.wait_timeout(std::time::Duration::from_secs(10)));
    /// assert!(pool.wait_for(std::time::Duration::from_secs(10)).is_ok()); // the same
    /// ```
    #[deprecated(
        since = "0.2.0",
        note = "use `wait_for`, which returns a Result as `TaskGroup::wait_timeout` does \
                (`wait_for(t).is_ok()` is this bool)"
    )]
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.wait_for(timeout).is_ok()
    }

    /// Like [`wait`](Pool::wait), waiting at most `timeout`, and saying why it did not
    /// wait: a paused pool is waited for like any other (it times out unless someone calls
    /// [`resume`](Pool::resume) in time), and a `timeout` too long to add to the clock
    /// means no limit.
    ///
    /// # Errors
    /// [`WaitError::Timeout`] when tasks are still outstanding once `timeout` has passed
    /// (they go on running); [`WaitError::WouldDeadlock`], at once, from where
    /// [`wait`](Pool::wait) answers it (one of the pool's own tasks, on a worker or off the
    /// workers, or the destructor of a task being dropped by [`purge`](Pool::purge) or
    /// [`TaskGroup::cancel`](crate::TaskGroup::cancel)).
    ///
    /// ```
    /// use flock::{Backpressure, Pool, WaitError};
    /// use std::time::Duration;
    /// let pool = Pool::builder().workers(1).build().unwrap();
    /// let (go_tx, go) = std::sync::mpsc::channel::<()>();
    /// pool.submit(move || go.recv().unwrap()).unwrap();
    /// assert_eq!(pool.wait_for(Duration::from_millis(10)), Err(WaitError::Timeout));
    /// go_tx.send(()).unwrap();
    /// assert_eq!(pool.wait_for(Duration::from_secs(60)), Ok(()));
    ///
    /// // A task run by its submitter (CallerRuns, the queue full) is one of the pool's own:
    /// // it would wait for itself.
    /// let pool = std::sync::Arc::new(
    ///     Pool::builder().workers(1).capacity(1).when_full(Backpressure::CallerRuns).build().unwrap(),
    /// );
    /// let (go_tx, go) = std::sync::mpsc::channel::<()>();
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// pool.submit(move || { started_tx.send(()).unwrap(); go.recv().unwrap(); }).unwrap();
    /// started.recv().unwrap(); // the only worker is busy
    /// pool.submit(|| ()).unwrap(); // fills the queue
    /// let (answer_tx, answer) = std::sync::mpsc::channel();
    /// let p = pool.clone();
    /// pool.submit(move || answer_tx.send(p.wait_for(Duration::from_secs(60))).unwrap()).unwrap();
    /// assert_eq!(answer.recv().unwrap(), Err(WaitError::WouldDeadlock));
    /// go_tx.send(()).unwrap();
    /// ```
    pub fn wait_for(&self, timeout: Duration) -> Result<(), WaitError> {
        if self.inside() {
            return Err(WaitError::WouldDeadlock);
        }
        let deadline = Instant::now().checked_add(timeout);
        match self.registry.wait_quiescent(deadline, false) {
            QuietOutcome::Done => Ok(()),
            QuietOutcome::TimedOut | QuietOutcome::Paused => Err(WaitError::Timeout),
        }
    }

    /// Stops accepting tasks, runs every task already accepted (and those they spawn), then
    /// joins every thread. Safe to call from several threads and more than once; submitters
    /// racing it either get their task in (and it runs) or get it back.
    ///
    /// Blocks the calling thread until the tasks finished and the threads are joined.
    ///
    /// # Errors
    /// [`WaitError::WouldDeadlock`] from one of the pool's own tasks, or from the destructor
    /// of a task that [`purge`](Pool::purge) or [`TaskGroup::cancel`](crate::TaskGroup::cancel)
    /// drops (see [`wait`](Pool::wait)); [`WaitError::GlobalPool`] on the
    /// [`global`](fn@crate::global) pool, which is never shut down (as every shutdown call
    /// answers there). Nothing is changed.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// pool.submit(|| ()).unwrap();
    /// pool.shutdown().unwrap();
    /// assert!(pool.is_shutdown());
    /// assert!(pool.submit(|| ()).is_err());
    /// ```
    pub fn shutdown(&self) -> Result<(), WaitError> {
        self.close(false, None).map(drop)
    }

    /// Like [`shutdown`](Pool::shutdown), waiting at most `timeout` for the tasks to finish.
    /// On [`WaitError::Timeout`] the pool stays closed and keeps draining; a later shutdown
    /// call or the pool's drop joins the threads. Blocks the calling thread up to `timeout`;
    /// errors as [`shutdown`](Pool::shutdown)'s otherwise.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// pool.shutdown_timeout(std::time::Duration::from_secs(10)).unwrap();
    /// ```
    pub fn shutdown_timeout(&self, timeout: Duration) -> Result<(), WaitError> {
        self.close(false, Some(Instant::now() + timeout)).map(drop)
    }

    /// Stops accepting tasks, drops every queued task (their destructors run, spawned tasks'
    /// handles report [`JoinError::Dropped`](crate::JoinError::Dropped)), waits for running
    /// ones, joins every thread, and returns how many tasks this pool's shutdowns
    /// have dropped in total ([`dropped_by_shutdown`](Pool::dropped_by_shutdown): a second
    /// call, or one racing this one, returns the same total; tasks dropped by
    /// [`purge`](Pool::purge) or a cancel are not in it). Blocks the calling thread until the
    /// running tasks finished; errors as [`shutdown`](Pool::shutdown)'s.
    ///
    /// The queued tasks are dropped at once, on the calling thread, before it waits: their
    /// destructors do not wait for a long task to end. What running tasks submit after that
    /// is dropped by the workers. As with `purge`, the `join` halves and scope tasks that a
    /// running task waits for are not dropped: they run.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(1).build().unwrap();
    /// let (go_tx, go) = std::sync::mpsc::channel::<()>();
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// pool.submit(move || { started_tx.send(()).unwrap(); go.recv().unwrap(); }).unwrap();
    /// started.recv().unwrap();
    /// for _ in 0..10 { pool.submit(|| unreachable!()).unwrap(); }
    /// std::thread::scope(|s| {
    ///     // Release the running task only once the shutdown has begun.
    ///     s.spawn(|| { while !pool.is_shutdown() { std::thread::yield_now(); } go_tx.send(()).unwrap(); });
    ///     assert_eq!(pool.shutdown_now().unwrap(), 10);
    /// });
    /// ```
    pub fn shutdown_now(&self) -> Result<u64, WaitError> {
        self.close(true, None)
    }

    fn close(&self, now: bool, deadline: Option<Instant>) -> Result<u64, WaitError> {
        if self.shared {
            return Err(WaitError::GlobalPool);
        }
        if self.inside() {
            return Err(WaitError::WouldDeadlock);
        }
        let reg = &self.registry;
        reg.begin_shutdown(now);
        if now {
            // At once, here: a worker would get to them only after the task it runs.
            crate::purge::drop_queued_for_shutdown(reg);
        }
        if !reg.crew.await_workers(deadline) {
            return Err(WaitError::Timeout);
        }
        reg.crew.join_threads();
        // Every worker has exited: what is still queued are the jobs of tasks cancelled
        // while queued, which hold the registry (see `purge::sweep`).
        crate::purge::sweep(reg);
        Ok(reg.quiet.dropped_by_shutdown())
    }

    /// How many tasks this pool's shutdowns have dropped unrun so far: those
    /// [`shutdown_now`](Pool::shutdown_now) discarded (a graceful shutdown drops none, also
    /// after a `shutdown_now`). Tasks dropped by [`purge`](Pool::purge),
    /// [`JoinHandle::cancel`](crate::JoinHandle::cancel) or
    /// [`TaskGroup::cancel`](crate::TaskGroup::cancel) are not counted here (they are in
    /// [`Stats::dropped`](crate::Stats::dropped), with these). Exact once a shutdown call has
    /// returned `Ok`: no task is dropped after that; while one runs, a gauge.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(1).build().unwrap();
    /// pool.pause();
    /// for _ in 0..3 { pool.submit(|| ()).unwrap(); }
    /// assert_eq!(pool.purge(), 3);
    /// for _ in 0..2 { pool.submit(|| ()).unwrap(); }
    /// assert_eq!(pool.shutdown_now().unwrap(), 2);
    /// pool.shutdown().unwrap(); // drops nothing more
    /// assert_eq!(pool.dropped_by_shutdown(), 2);
    /// assert_eq!(pool.stats().dropped, 5);
    /// ```
    pub fn dropped_by_shutdown(&self) -> u64 {
        self.registry.quiet.dropped_by_shutdown()
    }

    /// A snapshot of the pool's counters, queue depths, per-worker state and (with
    /// `track_latency`) latency histograms. Cheap: it sums a few cache lines per worker and
    /// takes no lock.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// pool.submit(|| ()).unwrap();
    /// pool.wait().unwrap();
    /// let stats = pool.stats();
    /// assert_eq!(stats.completed, 1);
    /// assert_eq!(stats.per_worker.len(), 2);
    /// ```
    pub fn stats(&self) -> crate::Stats {
        self.registry.stats()
    }

    /// Tasks waiting in the pool's queues now (shared queues, workers' deques, bundles), as
    /// [`Stats::queued`](crate::Stats::queued) but without building a snapshot: a few loads
    /// per worker, no allocation, no lock. Cancelled tasks are not counted. A gauge: it may be stale by the time it returns.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(1).build().unwrap();
    /// pool.pause();
    /// for _ in 0..5 { pool.submit(|| ()).unwrap(); }
    /// assert_eq!(pool.queued(), 5);
    /// pool.resume();
    /// pool.wait().unwrap();
    /// assert_eq!(pool.queued(), 0);
    /// ```
    pub fn queued(&self) -> u64 {
        (0..self.registry.queues.lane_count())
            .map(|i| self.registry.lane_queued(i))
            .sum()
    }

    /// How many of the pool's workers are running a task now (their
    /// [`WorkerState`](crate::WorkerState) is `Running`), without building a
    /// [`Stats`](crate::Stats) snapshot. A worker waiting inside a task (`join`, `scope`)
    /// with nothing to run is parked, so it does not count. A gauge, as
    /// [`queued`](Pool::queued); but once [`wait`](Pool::wait) returned `Ok` and nothing was
    /// submitted since, it is 0.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// assert!(pool.install(|| pool.running()) >= 1); // this one, at least
    /// pool.submit(|| ()).unwrap();
    /// pool.wait().unwrap();
    /// assert_eq!(pool.running(), 0);
    /// ```
    pub fn running(&self) -> usize {
        // A worker stays `Running` from the end of its task until it has looked for the next
        // one. With nothing outstanding (every task, join from outside, scope task and
        // broadcast is counted) no worker runs a task, whatever the states say: so `running`
        // agrees with a `wait` that just returned.
        if self.registry.shards.outstanding() == 0 {
            return 0;
        }
        self.registry.workers_running()
    }

    /// Whether a shutdown has begun.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// assert!(!pool.is_shutdown());
    /// pool.shutdown().unwrap();
    /// assert!(pool.is_shutdown());
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.registry.is_shutdown()
    }

    /// The number of worker threads wanted: as built, or as last [`resize`](Pool::resize)d
    /// (a retiring worker finishes its task first).
    ///
    /// ```
    /// assert_eq!(flock::Pool::builder().workers(5).build().unwrap().workers(), 5);
    /// ```
    #[doc(alias = "current_num_threads", alias = "num_threads")]
    pub fn workers(&self) -> usize {
        self.registry.crew.workers()
    }

    /// Changes the number of workers while tasks run. Growing starts workers in the next
    /// slots (pinned to their cores when the pool pins) and returns once they run; a slot
    /// whose worker is still retiring is started once that worker has left (after its
    /// [`on_worker_stop`](crate::PoolBuilder::on_worker_stop) hook). Shrinking
    /// returns at once: each worker beyond `workers` retires at its next task boundary
    /// (never inside a task), after moving the tasks in its deques to the shared queues, so
    /// nothing is dropped and nothing runs twice. A worker that was between tasks, past its
    /// check, when the shrink came may still take and run one task, submitted before or
    /// just after `resize` returned, before it retires. Once a shutdown has begun, workers
    /// beyond `workers` no longer retire: they run on until nothing is outstanding and leave
    /// with the others. `Stats::per_worker` follows. Safe to call from any thread, a task
    /// included; concurrent calls apply one after the other.
    ///
    /// # Errors
    /// [`ResizeError::ZeroWorkers`], [`ResizeError::TooManyWorkers`] beyond
    /// [`PoolBuilder::max_workers`](crate::PoolBuilder::max_workers),
    /// [`ResizeError::Shutdown`]; when the OS refuses a thread or a pinning, or the
    /// [`thread_name`](crate::PoolBuilder::thread_name) callback panics, the workers below
    /// the failed one stay, [`workers`](Pool::workers) counts them, and the error says which.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).max_workers(4).build().unwrap();
    /// pool.resize(4).unwrap();
    /// assert_eq!(pool.workers(), 4);
    /// pool.resize(1).unwrap();
    /// pool.submit(|| ()).unwrap();
    /// pool.wait().unwrap();
    /// assert_eq!(pool.stats().completed, 1);
    /// ```
    pub fn resize(&self, workers: usize) -> Result<(), ResizeError> {
        Registry::resize(&self.registry, workers)
    }

    /// Stops starting tasks: running tasks finish (and the tasks they spawn and wait for in
    /// `join`, `scope` or a [`TaskGroup`](crate::TaskGroup)'s wait still run, also when
    /// [`purge`](Pool::purge) or a shrink ([`resize`](Pool::resize)) moved them out of a
    /// worker's deque), queued ones wait; submissions still queue, within capacity. Idle
    /// workers park; no task submitted from outside the pool after `pause` returned starts
    /// before [`resume`](Pool::resume) (tasks already started run to their end, and tasks
    /// they spawn may still start: a `join`, `scope` or group wait may wait for them).
    /// [`wait`](Pool::wait) returns [`WaitError::Paused`] rather than wait for a queue that
    /// will not move; a graceful shutdown resumes the pool so that its queue drains, and a
    /// pause after a shutdown began is ignored.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// pool.pause();
    /// pool.submit(|| ()).unwrap();
    /// assert_eq!(pool.wait(), Err(flock::WaitError::Paused));
    /// pool.resume();
    /// pool.wait().unwrap();
    /// assert_eq!(pool.stats().completed, 1);
    /// ```
    pub fn pause(&self) {
        self.registry.set_paused(true);
    }

    /// Starts tasks again after [`pause`](Pool::pause); wakes every parked worker.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// pool.pause();
    /// assert!(pool.is_paused());
    /// pool.resume();
    /// assert!(!pool.is_paused());
    /// ```
    pub fn resume(&self) {
        self.registry.set_paused(false);
    }

    /// Whether the pool is paused.
    ///
    /// ```
    /// assert!(!flock::Pool::new().is_paused());
    /// ```
    pub fn is_paused(&self) -> bool {
        self.registry.crew.is_paused()
    }

    /// Drops every task queued and not yet started, and keeps the pool open; returns how
    /// many were dropped. Each one's closure is dropped (its destructor runs, on this thread),
    /// it counts as dropped in [`Stats`](crate::Stats), a [`spawn`](Pool::spawn)ed task's
    /// handle answers [`JoinError::Dropped`](crate::JoinError::Dropped), a
    /// [`TaskGroup`](crate::TaskGroup) no longer waits for it, and [`wait`](Pool::wait) sees
    /// it finished. Tasks already running go on, and so do the queued jobs someone is
    /// blocked on (the halves of [`join`](Pool::join), the tasks of a [`scope`](Pool::scope)):
    /// those go back to their lane's shared queue, where a `join` or `scope` waiting for them
    /// in a paused pool still runs them (the tasks of a scope opened outside the pool wait
    /// for `resume` there, as any queued work from outside). Tasks submitted concurrently may or may not be dropped. A
    /// task from outside that a worker had already taken as the pool got
    /// [`pause`](Pool::pause)d is kept by that worker, to start first after
    /// [`resume`](Pool::resume) (its lane's order): it still counts as queued in `Stats`, but
    /// `purge` does not reach it. A
    /// destructor that panics is caught and its payload dropped. A dropped task stays
    /// outstanding until its destructor has returned, so from a destructor run here
    /// [`wait`](Pool::wait), [`wait_for`](Pool::wait_for) and the shutdowns of this pool
    /// answer [`WaitError::WouldDeadlock`] (as from one of its tasks), and so does a wait
    /// for the task's own [`TaskGroup`](crate::TaskGroup) ([`GroupError::WouldDeadlock`]).
    ///
    /// [`GroupError::WouldDeadlock`]: crate::GroupError::WouldDeadlock
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(1).build().unwrap();
    /// let (go_tx, go) = std::sync::mpsc::channel::<()>();
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// pool.submit(move || { started_tx.send(()).unwrap(); go.recv().unwrap(); }).unwrap();
    /// started.recv().unwrap(); // the only worker is busy
    /// let queued = pool.spawn(|| 1);
    /// pool.submit(|| unreachable!("purged")).unwrap();
    /// assert_eq!(pool.purge(), 2);
    /// go_tx.send(()).unwrap();
    /// pool.wait().unwrap();
    /// assert!(matches!(queued.join(), Err(flock::JoinError::Dropped)));
    /// assert_eq!(pool.stats().dropped, 2);
    /// ```
    pub fn purge(&self) -> usize {
        crate::purge::purge(&self.registry)
    }

    /// The lane called `name`, if this pool has one.
    ///
    /// ```
    /// let pool = flock::Pool::builder().lanes(&[("hi", 4), ("lo", 1)]).build().unwrap();
    /// assert_eq!(pool.lane("lo").map(|l| l.index()), Some(1));
    /// assert!(pool.lane("nope").is_none());
    /// ```
    pub fn lane(&self, name: &str) -> Option<Lane> {
        name.resolve(&self.registry.cfg.lanes).map(Lane)
    }

    /// The bound on queued tasks (`usize::MAX`: none).
    ///
    /// ```
    /// assert_eq!(flock::Pool::builder().capacity(64).build().unwrap().capacity(), 64);
    /// ```
    pub fn capacity(&self) -> usize {
        self.registry.cfg.capacity
    }

    /// Whether this pool's parking workers use `membarrier(2)` so that its pushes need no
    /// fence ([`PoolBuilder::membarrier`](crate::PoolBuilder::membarrier)): asked for (the
    /// default) and granted by the kernel. `false` when the builder said `false`, or the
    /// system offers no expedited private membarrier (not Linux, a kernel before 4.14, a
    /// seccomp filter); the pool then fences its pushes. It also turns `false` if the kernel
    /// ever refuses a membarrier the pool registered for (not expected): from then on its
    /// pushes fence, and its parks still try the membarrier, for the pushes made before.
    /// Either way no wake-up is lost.
    ///
    /// ```
    /// let pool = flock::Pool::builder().membarrier(false).build().unwrap();
    /// assert!(!pool.uses_membarrier());
    /// ```
    pub fn uses_membarrier(&self) -> bool {
        self.registry.sleep.barrier.heavy()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if self.shared {
            return;
        }
        if self.inside() {
            // Dropped by one of its own tasks: a thread cannot join itself. Close the pool;
            // the workers drain and exit on their own, and the last one sweeps the queues
            // (`purge::sweep`).
            self.registry.begin_shutdown(false);
            return;
        }
        let _ = self.close(false, None);
    }
}

/// The job of a task submitted with `submit`: counted, droppable by `shutdown_now`.
pub(crate) fn fire_and_forget<F: FnOnce() + Send + 'static>(task: F) -> Job {
    Job::new(
        move || {
            task();
            Outcome::Done
        },
        COUNTED | DISCARDABLE,
    )
}
