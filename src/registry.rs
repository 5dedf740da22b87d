//! State shared by the pool handle and its workers: the queues, the sleep protocol, the
//! counters, admission (capacity and backpressure) and the shutdown handshake.

use crate::builder::{Backpressure, Config};
use crate::deque::{Injector, Stealer};
use crate::job::{Job, Outcome, INJECTED, RESERVED};
use crate::metrics::counters::{Counters, Proto, Shard, Stat};
use crate::metrics::histogram::Latency;
use crate::sleep::Sleep;
use crate::sync::thread::{self, JoinHandle};
use crate::sync::{fence, Arc, AtomicU64, AtomicU8, AtomicUsize, Condvar, Mutex, Ordering};
use crate::unwind::{call_guarded, drop_payload, TaskPanic};
use crate::RejectReason;
use crossbeam_utils::CachePadded;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

const RUNNING: u8 = 0;
const GRACEFUL: u8 = 1;
const NOW: u8 = 2;

/// Where an admitted task goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Onto the injector; `reserved` when it holds a unit of `pending`.
    Queue { reserved: bool },
    /// Run on the submitting thread (`Backpressure::CallerRuns`).
    Caller,
    /// Run on a new helper thread (`Backpressure::SpawnThread`); a helper slot is held.
    Helper,
}

/// How admission treats a full queue.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Admission {
    /// Capacity applies; a full queue is handled by this policy.
    Bounded(Backpressure),
    /// Capacity does not apply (internal jobs whose caller blocks on them anyway).
    Unbounded,
}

pub(crate) struct Registry {
    pub(crate) injector: Injector<Job>,
    pub(crate) stealers: Box<[Stealer<Job>]>,
    pub(crate) sleep: Sleep,
    pub(crate) counters: Counters,
    /// Queue-wait and run-time histograms, when `track_latency` is on.
    pub(crate) latency: Option<Latency>,
    pub(crate) cfg: Config,
    /// Tasks accepted from outside and not yet started (may overstate; see sleep/README.md).
    pending: CachePadded<AtomicUsize>,
    /// Submitters blocked waiting for room.
    blocked: CachePadded<AtomicUsize>,
    room_lock: Mutex<()>,
    room_cond: Condvar,
    /// Started tasks a worker may hold back before giving their `pending` units back.
    pub(crate) flush_threshold: usize,
    shutdown: AtomicU8,
    waiters: AtomicUsize,
    wait_lock: Mutex<()>,
    wait_cond: Condvar,
    live: Mutex<usize>,
    live_cond: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    helpers: Mutex<Vec<JoinHandle<()>>>,
    helpers_live: AtomicUsize,
    dropped_by_shutdown: AtomicU64,
    pub(crate) started_at: Instant,
}

impl Registry {
    pub(crate) fn new(cfg: Config, stealers: Vec<Stealer<Job>>) -> Registry {
        let workers = cfg.workers;
        let per_worker = cfg.capacity / (32 * workers);
        Registry {
            injector: Injector::new(),
            stealers: stealers.into_boxed_slice(),
            sleep: Sleep::new(workers),
            counters: Counters::new(workers),
            latency: cfg.track_latency.then(|| Latency::new(workers)),
            flush_threshold: per_worker.clamp(1, 64),
            cfg,
            pending: CachePadded::new(AtomicUsize::new(0)),
            blocked: CachePadded::new(AtomicUsize::new(0)),
            room_lock: Mutex::new(()),
            room_cond: Condvar::new(),
            shutdown: AtomicU8::new(RUNNING),
            waiters: AtomicUsize::new(0),
            wait_lock: Mutex::new(()),
            wait_cond: Condvar::new(),
            live: Mutex::new(workers),
            live_cond: Condvar::new(),
            threads: Mutex::new(Vec::with_capacity(workers)),
            helpers: Mutex::new(Vec::new()),
            helpers_live: AtomicUsize::new(0),
            dropped_by_shutdown: AtomicU64::new(0),
            started_at: Instant::now(),
        }
    }

    // ----- admission -------------------------------------------------------------------

    /// Admits one task from a thread outside the pool: enters it, checks shutdown, reserves
    /// capacity, and applies the policy when full. On `Err` the entry is already revoked.
    pub(crate) fn admit(&self, shard: &Shard, admission: Admission) -> Result<Route, RejectReason> {
        if !shard.enter_shared() {
            return Err(self.revoke(shard, RejectReason::Shutdown));
        }
        let Admission::Bounded(policy) = admission else {
            return Ok(Route::Queue { reserved: false });
        };
        if self.cfg.capacity == usize::MAX {
            return Ok(Route::Queue { reserved: false });
        }
        if self.try_reserve(Ordering::Relaxed) {
            return Ok(Route::Queue { reserved: true });
        }
        self.when_full(shard, policy)
    }

    /// One unit of `pending`, if below capacity. Relaxed on the fast path: a failed attempt
    /// is re-made behind the `blocked` handshake (`block_for_room`) before anyone sleeps.
    fn try_reserve(&self, order: Ordering) -> bool {
        if self.pending.fetch_add(1, order) < self.cfg.capacity {
            true
        } else {
            self.pending.fetch_sub(1, Ordering::Relaxed);
            false
        }
    }

    #[cold]
    fn when_full(&self, shard: &Shard, policy: Backpressure) -> Result<Route, RejectReason> {
        match policy {
            Backpressure::Reject => Err(self.revoke(shard, RejectReason::Full)),
            Backpressure::CallerRuns => Ok(Route::Caller),
            Backpressure::SpawnThread if self.try_take_helper_slot() => Ok(Route::Helper),
            Backpressure::SpawnThread | Backpressure::Block => self.block_for_room(shard),
        }
    }

    fn try_take_helper_slot(&self) -> bool {
        let max = self.cfg.max_spawned_threads;
        let mut n = self.helpers_live.load(Ordering::Relaxed);
        while n < max {
            match self.helpers_live.compare_exchange_weak(
                n,
                n + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    /// Parks the submitter until a unit of capacity frees up, the pool shuts down, or the
    /// block timeout passes.
    #[cold]
    fn block_for_room(&self, shard: &Shard) -> Result<Route, RejectReason> {
        let deadline = self.cfg.block_timeout.map(|d| Instant::now() + d);
        // SeqCst: pairs with the SeqCst `pending` RMW + `blocked` load in `release_pending`.
        self.blocked.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.room_lock.lock();
        let mut timed_out = false;
        let result = loop {
            // Read under `room_lock`: `begin_shutdown` raises the flag before it takes
            // `room_lock` to notify, so we either see it here or are waiting when it notifies.
            if self.shutdown.load(Ordering::SeqCst) != RUNNING {
                break Err(RejectReason::Shutdown);
            }
            if self.try_reserve(Ordering::SeqCst) {
                break Ok(Route::Queue { reserved: true });
            }
            if timed_out {
                break Err(RejectReason::Timeout);
            }
            timed_out = !self.room_cond.wait_until(&mut guard, deadline);
        };
        drop(guard);
        self.blocked.fetch_sub(1, Ordering::Relaxed);
        result.map_err(|reason| self.revoke(shard, reason))
    }

    /// Takes back an entry the pool will not run. Returns `reason` for convenience.
    #[cold]
    fn revoke(&self, shard: &Shard, reason: RejectReason) -> RejectReason {
        shard.add_shared(Proto::Revoked, 1);
        shard.stat_shared(
            match reason {
                RejectReason::Full => Stat::RejectedFull,
                RejectReason::Timeout => Stat::RejectedTimeout,
                RejectReason::Shutdown => Stat::RejectedShutdown,
            },
            1,
        );
        self.after_finish_off_worker();
        reason
    }

    /// Sends an admitted job where its route says.
    pub(crate) fn dispatch(this: &Arc<Registry>, shard: &Shard, route: Route, mut job: Job) {
        shard.stat_shared(Stat::Submitted, 1);
        if this.latency.is_some() {
            job.stamp(this.now_ns());
        }
        match route {
            Route::Queue { reserved } => {
                job.add_flags(if reserved {
                    INJECTED | RESERVED
                } else {
                    INJECTED
                });
                this.injector.push(job);
                this.sleep.notify_new_work();
            }
            Route::Caller => {
                shard.stat_shared(Stat::CallerRuns, 1);
                this.run_off_worker(shard, job);
            }
            Route::Helper => Registry::run_on_helper(this, shard, job),
        }
    }

    /// Runs a counted job on a thread that is not a worker, counting and reporting its end.
    pub(crate) fn run_off_worker(&self, shard: &Shard, job: Job) {
        let timing = self
            .latency
            .as_ref()
            .map(|l| (l, job.queued_at_ns(), self.now_ns()));
        let end = match catch_unwind(AssertUnwindSafe(|| job.run())) {
            Ok(Outcome::Done) => Proto::Completed,
            Ok(Outcome::Panicked) => Proto::Panicked,
            Ok(Outcome::Skipped) => return,
            Err(payload) => {
                self.report_panic(None, payload);
                Proto::Panicked
            }
        };
        if let Some((latency, queued, start)) = timing {
            let shard = latency.external();
            shard.wait.record_shared(start.saturating_sub(queued));
            shard.run.record_shared(self.now_ns().saturating_sub(start));
        }
        shard.add_shared(end, 1);
        self.after_finish_off_worker();
    }

    /// Nanoseconds since the pool started: the clock of latency stamps.
    pub(crate) fn now_ns(&self) -> u64 {
        self.started_at.elapsed().as_nanos() as u64
    }

    #[cold]
    fn run_on_helper(this: &Arc<Registry>, shard: &Shard, job: Job) {
        shard.stat_shared(Stat::SpawnedThread, 1);
        let slot = std::sync::Arc::new(Mutex::new(Some(job)));
        let theirs = slot.clone();
        let registry = this.clone();
        let spawned = thread::spawn("flock-helper".into(), None, move || {
            if let Some(job) = theirs.lock().take() {
                registry.run_off_worker(registry.counters.external(), job);
            }
            registry.helpers_live.fetch_sub(1, Ordering::AcqRel);
        });
        match spawned {
            Ok(handle) => {
                let mut helpers = this.helpers.lock();
                helpers.retain(|h| !thread::is_finished(h));
                helpers.push(handle);
            }
            Err(_) => {
                // The OS refused a thread: run the task here rather than lose it.
                this.helpers_live.fetch_sub(1, Ordering::AcqRel);
                if let Some(job) = slot.lock().take() {
                    this.run_off_worker(shard, job);
                }
            }
        }
    }

    /// Gives back `n` units of `pending`, and wakes blocked submitters if this took the queue
    /// from full to not full.
    ///
    /// Only that crossing can matter: a blocked submitter saw `pending >= capacity` in its
    /// re-check, and `pending` only falls below capacity again through a release whose
    /// previous value was at or above it (a failed `try_reserve` undoes only an add that
    /// found the queue full). Waking on every release instead made 100 blocked submitters
    /// thrash on `room_lock` once per task (the 100u-10Kt benchmark: 8× slower).
    pub(crate) fn release_pending(&self, n: usize) {
        // SeqCst RMW then SeqCst load: pairs with `block_for_room`'s `blocked` increment and
        // its re-check of `pending` (RMWs on `pending` are totally ordered; the one that reads
        // the other's value synchronises with it).
        let prev = self.pending.fetch_sub(n, Ordering::SeqCst);
        if prev >= self.cfg.capacity && self.blocked.load(Ordering::SeqCst) > 0 {
            let _guard = self.room_lock.lock();
            self.room_cond.notify_all();
        }
    }

    // ----- ends of tasks ---------------------------------------------------------------

    pub(crate) fn report_panic(
        &self,
        worker: Option<usize>,
        payload: Box<dyn std::any::Any + Send>,
    ) {
        match &self.cfg.panic_handler {
            Some(handler) => call_guarded("panic handler", worker, || {
                handler(TaskPanic::new(worker, payload))
            }),
            None => drop_payload(payload),
        }
    }

    /// After something other than a worker changed the outstanding count: tell waiters, and
    /// during shutdown wake parked workers so they re-check whether they may exit.
    pub(crate) fn after_finish_off_worker(&self) {
        // Pairs with the waiter's SeqCst registration in `wait_quiescent` and with F2 of a
        // parking worker (sleep/README.md, "Other events that wake workers").
        fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::Relaxed) > 0 {
            self.notify_waiters();
        }
        if self.shutdown.load(Ordering::Relaxed) != RUNNING {
            self.sleep.wake_all();
        }
    }

    pub(crate) fn has_waiters(&self) -> bool {
        self.waiters.load(Ordering::Relaxed) > 0
    }

    #[cold]
    pub(crate) fn notify_waiters(&self) {
        let _guard = self.wait_lock.lock();
        self.wait_cond.notify_all();
    }

    /// Blocks until no task is outstanding, or `deadline` passes (returns false).
    pub(crate) fn wait_quiescent(&self, deadline: Option<Instant>) -> bool {
        if self.counters.outstanding() == 0 {
            return true;
        }
        let mut guard = self.wait_lock.lock();
        // SeqCst: pairs with the fence in `Worker::go_idle` / `after_finish_off_worker`.
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let mut timed_out = false;
        let done = loop {
            if self.counters.outstanding() == 0 {
                break true;
            }
            if timed_out {
                break false;
            }
            timed_out = !self.wait_cond.wait_until(&mut guard, deadline);
        };
        self.waiters.fetch_sub(1, Ordering::Relaxed);
        done
    }

    // ----- shutdown --------------------------------------------------------------------

    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed) != RUNNING
    }

    /// Whether queued discardable tasks are to be dropped rather than run.
    pub(crate) fn is_stopping_now(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed) == NOW
    }

    /// Whether a worker with nothing to do may exit: shutdown asked and nothing outstanding.
    pub(crate) fn may_exit(&self) -> bool {
        // Pairs with the store in `begin_shutdown` (Acquire would do): having seen the flag we
        // see the close before it, so `outstanding` counts every entry made before the close.
        self.shutdown.load(Ordering::SeqCst) != RUNNING && self.counters.outstanding() == 0
    }

    pub(crate) fn begin_shutdown(&self, now: bool) {
        // First close the external shards (the handshake with `admit`, see
        // `Shard::enter_shared`), then raise the flag: a worker that sees the flag (Acquire,
        // after this SeqCst store) sees every entry made before the close.
        self.counters.close_external();
        // Only ever raised (RUNNING < GRACEFUL < NOW): a graceful call after `shutdown_now`
        // changes nothing.
        let target = if now { NOW } else { GRACEFUL };
        let mut current = self.shutdown.load(Ordering::SeqCst);
        while current < target {
            match self.shutdown.compare_exchange(
                current,
                target,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => break,
                Err(seen) => current = seen,
            }
        }
        {
            let _guard = self.room_lock.lock();
            self.room_cond.notify_all();
        }
        self.sleep.wake_all();
    }

    pub(crate) fn note_dropped_by_shutdown(&self) {
        self.dropped_by_shutdown.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn dropped_by_shutdown(&self) -> u64 {
        self.dropped_by_shutdown.load(Ordering::Relaxed)
    }

    pub(crate) fn add_thread(&self, handle: JoinHandle<()>) {
        self.threads.lock().push(handle);
    }

    /// Records that fewer workers will run than planned (a failed build).
    pub(crate) fn set_live(&self, n: usize) {
        *self.live.lock() = n;
        self.live_cond.notify_all();
    }

    pub(crate) fn worker_exited(&self) {
        let mut live = self.live.lock();
        *live -= 1;
        if *live == 0 {
            self.live_cond.notify_all();
        }
    }

    /// Waits until every worker has left its loop; false if `deadline` passed first.
    pub(crate) fn await_workers(&self, deadline: Option<Instant>) -> bool {
        let mut live = self.live.lock();
        let mut timed_out = false;
        while *live > 0 {
            if timed_out {
                return false;
            }
            timed_out = !self.live_cond.wait_until(&mut live, deadline);
        }
        true
    }

    /// Joins the worker and helper threads (after `await_workers`, so this does not block
    /// for long). A second caller finds the lists empty.
    pub(crate) fn join_threads(&self) {
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
        let helpers = std::mem::take(&mut *self.helpers.lock());
        for h in helpers {
            let _ = h.join();
        }
    }

    pub(crate) fn workers(&self) -> usize {
        self.cfg.workers
    }
}
