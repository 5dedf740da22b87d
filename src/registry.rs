//! State shared by the pool handle and its workers: the queues, the sleep protocol, the
//! counters, admission (capacity and backpressure) and the shutdown handshake.

use crate::admit::RoomWakers;
use crate::broadcast::Mailboxes;
use crate::builder::{Backpressure, Config};
use crate::clock::Clock;
use crate::deque::{Injector, Stealer, Worker as Deque};
use crate::job::{Bundle, Job, Outcome, COUNTED, INJECTED, RESERVED};
use crate::metrics::counters::{Counters, LaneStat, Proto, Shard, Stat};
use crate::metrics::histogram::Latency;
use crate::reserve::Reserve;
use crate::sleep::Sleep;
use crate::sync::thread::{self, JoinHandle};
use crate::sync::{
    facade_thread_local, fence, Arc, AtomicU64, AtomicU8, AtomicUsize, Condvar, Mutex, Ordering,
};
use crate::unwind::{call_guarded, drop_payload, payload_message, TaskPanic};
use crate::{RejectReason, ResizeError};
use crossbeam_utils::CachePadded;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

facade_thread_local! {
    /// On a thread that is not a worker, while it runs pools' tasks (`run_off_worker`: the
    /// caller under `CallerRuns`, a helper thread, the lane reserve): for each such task,
    /// the innermost last, its pool's registry address and its lane. What a task submits
    /// without naming a lane inherits the lane, as on a worker, and waiting for any pool
    /// listed would wait for a task of our own. A stack, not one entry: a task run here may
    /// submit to another pool that runs that task here too (`CallerRuns` in both), and
    /// inside it both pools are ours.
    static OFF_WORKER: RefCell<Vec<(usize, usize)>> = RefCell::new(Vec::new());
}

const RUNNING: u8 = 0;
const GRACEFUL: u8 = 1;
const NOW: u8 = 2;

/// The fewest admitted jobs of a batch queued as one bundle; fewer are pushed one by one (a
/// bundle costs a buffer and a shared handle). Two under loom, so the
/// models cover bundles.
const MIN_BUNDLE: usize = if cfg!(flock_loom) { 2 } else { 8 };
/// The most jobs in one bundle: a worker that takes one up runs them before anything else
/// of its own (`WorkerThread::claim_current`), so this bounds how long a task spawned from
/// one of them waits behind its siblings on that worker (thieves take either meanwhile).
const MAX_BUNDLE: usize = 128;
/// Bundle buffers kept for reuse (`Registry::recycle_buffer`), 5 KiB each.
const SPARE_BUNDLES: usize = 32;

/// The `control` word: the number of workers wanted, shifted left by one, and `PAUSED`.
const PAUSED: usize = 1;

/// One lane's shared queue and its share.
pub(crate) struct LaneQueue {
    pub(crate) injector: Injector<Job>,
    /// Jobs put into this lane's bundles beyond one per bundle (whose queue entry `len()`
    /// counts while it is queued), plus one per bundle entry dropped for good: what
    /// `Stats::queued` adds, less the jobs claimed so far (`LaneStat::Claimed`). A gauge,
    /// not a protocol variable: Relaxed everywhere.
    pub(crate) bundled: AtomicUsize,
    /// Virtual-time charge per nanosecond of run time, in 1/2^16 units: `2^16 / weight`
    /// (at least 1), so a lane's virtual clock advances in inverse proportion to its weight.
    pub(crate) stride: u64,
}

/// What a worker slot is doing. Changed only under `Registry::slots`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotState {
    /// No thread; the slot's deques wait in `Slots::deques`.
    Idle,
    /// A thread was started for the slot and will take its deques.
    Starting,
    /// A thread runs the slot.
    Running,
    /// The slot's thread is retiring (handing its work over, running its stop hook).
    Retiring,
    /// The slot's thread left because the pool shut down.
    Exited,
}

/// Worker slots: who runs each, and the deques of slots no thread runs.
pub(crate) struct Slots {
    pub(crate) state: Vec<SlotState>,
    deques: Vec<Option<Box<[Deque<Job>]>>>,
}

impl Slots {
    /// Slots to show in `Stats::per_worker`: up to the last one not idle.
    fn shown(&self) -> usize {
        self.state
            .iter()
            .rposition(|s| *s != SlotState::Idle)
            .map_or(0, |i| i + 1)
    }
}

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

/// How admission treats a full queue, and a closed pool.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Admission {
    /// Capacity applies; a full queue is handled by this policy. A refused task goes back
    /// to the submitter and is counted refused.
    Bounded(Backpressure),
    /// A scope's task: capacity applies, with `CallerRuns`. After shutdown the scope runs
    /// the task on its caller instead (so that the scope completes): not a refusal, and
    /// not a task of the pool either, so no counter counts it.
    Scoped,
    /// Capacity does not apply (`join` from outside, whose caller blocks on it anyway).
    /// After shutdown the caller runs the job itself, counted nowhere, as for `Scoped`.
    Unbounded,
}

impl Admission {
    /// The policy for a full queue; `None` when capacity does not apply.
    fn policy(self) -> Option<Backpressure> {
        match self {
            Admission::Bounded(policy) => Some(policy),
            Admission::Scoped => Some(Backpressure::CallerRuns),
            Admission::Unbounded => None,
        }
    }
}

pub(crate) struct Registry {
    /// One shared queue per lane.
    pub(crate) lanes: Box<[LaneQueue]>,
    /// Every slot's deques: slot `i`'s deque of lane `l` is at `i * lanes.len() + l`.
    pub(crate) stealers: Box<[Stealer<Job>]>,
    /// Workers wanted (`<< 1`) and `PAUSED`; read by each worker at each task boundary.
    control: CachePadded<AtomicUsize>,
    pub(crate) slots: Mutex<Slots>,
    slot_cond: Condvar,
    /// One resize at a time (it waits for retiring threads without holding `slots`).
    resizing: Mutex<()>,
    /// Empty bundle buffers for reuse (`Registry::bundle_buffer`).
    spare_bundles: Mutex<Vec<Vec<Job>>>,
    /// `Slots::shown`, readable without the lock.
    shown: AtomicUsize,
    pub(crate) sleep: Sleep,
    /// The lane reserve (`src/reserve.rs`), when the lanes differ in weight and it is on.
    pub(crate) reserve: Option<Reserve>,
    pub(crate) counters: Counters,
    /// Queue-wait and run-time histograms, when `track_latency` is on.
    pub(crate) latency: Option<Latency>,
    pub(crate) cfg: Config,
    /// Tasks accepted from outside and not yet started (may overstate; see sleep/README.md).
    pending: CachePadded<AtomicUsize>,
    /// Submitters blocked waiting for room.
    blocked: CachePadded<AtomicUsize>,
    /// Async submitters waiting for room (`src/admit.rs`).
    pub(crate) room_wakers: RoomWakers,
    /// Per worker slot, `Pool::broadcast` jobs for that worker only (`src/broadcast.rs`).
    pub(crate) mailboxes: Mailboxes,
    room_lock: Mutex<()>,
    room_cond: Condvar,
    /// Started tasks a worker may hold back before giving their `pending` units back.
    pub(crate) flush_threshold: usize,
    shutdown: AtomicU8,
    /// Threads in `wait_quiescent`.
    waiters: AtomicUsize,
    /// The quiet generation: how many times a thread holding this lock saw nothing
    /// outstanding while someone waited (sleep/README.md, "`wait()` and shutdown"). A waiter
    /// whose generation moved on returns, whatever the pool does since.
    wait_lock: Mutex<u64>,
    wait_cond: Condvar,
    /// Worker threads started and not yet exited.
    live: Mutex<usize>,
    live_cond: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    helpers: Mutex<Vec<JoinHandle<()>>>,
    helpers_live: AtomicUsize,
    dropped_by_shutdown: AtomicU64,
    pub(crate) started_at: Instant,
    /// The clock of latency stamps and lane charging (`now_ns`).
    pub(crate) clock: Clock,
}

impl Registry {
    /// A registry with every slot idle; `Registry::resize` starts the workers.
    pub(crate) fn new(cfg: Config) -> Registry {
        // Before any worker of this pool starts (see `barrier::MODE`).
        crate::sleep::barrier::init();
        let slots = cfg.max_workers;
        // Only pools that read the clock per task pay for measuring the counter's rate.
        let clock = Clock::new(cfg.track_latency || cfg.lanes.len() > 1);
        // From `max_workers`, not the starting count: held-back units may overstate the queue
        // by `flush_threshold × workers`, which must stay small at any size (`resize`).
        let per_worker = cfg.capacity / (32 * cfg.max_workers);
        let deques: Vec<Box<[Deque<Job>]>> = (0..slots)
            .map(|_| {
                cfg.lanes
                    .iter()
                    .map(|_| {
                        if cfg.fifo {
                            Deque::new_fifo()
                        } else {
                            Deque::new_lifo()
                        }
                    })
                    .collect()
            })
            .collect();
        let stealers = deques
            .iter()
            .flat_map(|d| d.iter().map(Deque::stealer))
            .collect();
        let lanes = cfg
            .lanes
            .iter()
            .map(|&(_, weight)| LaneQueue {
                injector: Injector::new(),
                bundled: AtomicUsize::new(0),
                stride: ((1u64 << 16) / u64::from(weight)).max(1),
            })
            .collect();
        Registry {
            lanes,
            stealers,
            control: CachePadded::new(AtomicUsize::new(0)),
            slots: Mutex::new(Slots {
                state: vec![SlotState::Idle; slots],
                deques: deques.into_iter().map(Some).collect(),
            }),
            slot_cond: Condvar::new(),
            resizing: Mutex::new(()),
            spare_bundles: Mutex::new(Vec::new()),
            shown: AtomicUsize::new(0),
            sleep: Sleep::new(slots),
            reserve: if cfg.lane_reserve {
                Reserve::new(slots, &cfg.lanes)
            } else {
                None
            },
            counters: Counters::new(slots),
            latency: cfg.track_latency.then(|| Latency::new(slots)),
            flush_threshold: per_worker.clamp(1, 64),
            cfg,
            pending: CachePadded::new(AtomicUsize::new(0)),
            blocked: CachePadded::new(AtomicUsize::new(0)),
            room_wakers: RoomWakers::new(),
            mailboxes: Mailboxes::new(slots),
            room_lock: Mutex::new(()),
            room_cond: Condvar::new(),
            shutdown: AtomicU8::new(RUNNING),
            waiters: AtomicUsize::new(0),
            wait_lock: Mutex::new(0),
            wait_cond: Condvar::new(),
            live: Mutex::new(0),
            live_cond: Condvar::new(),
            threads: Mutex::new(Vec::with_capacity(slots)),
            helpers: Mutex::new(Vec::new()),
            helpers_live: AtomicUsize::new(0),
            dropped_by_shutdown: AtomicU64::new(0),
            started_at: Instant::now(),
            clock,
        }
    }

    // ----- admission -------------------------------------------------------------------

    /// Admits one task from a thread outside the pool: enters it, checks shutdown, reserves
    /// capacity, and applies the policy when full. On `Err` the entry is already revoked.
    pub(crate) fn admit(&self, shard: &Shard, admission: Admission) -> Result<Route, RejectReason> {
        if !shard.enter_shared() {
            return Err(self.refuse_closed(shard, admission, 1));
        }
        let Some(policy) = admission.policy() else {
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

    /// Admission for an async submitter (`src/admit.rs`): as `admit` under a policy that
    /// waits, but never waiting here. `Ok(None)` when the queue is full: nothing was entered
    /// or counted, and the caller registers for room and tries again.
    pub(crate) fn try_admit_async(&self, shard: &Shard) -> Result<Option<Route>, RejectReason> {
        let reserved = self.cfg.capacity != usize::MAX;
        // SeqCst: this is the re-check of sleep/README.md's "Backpressure" handshake (the
        // caller registered its waker before), paired with `release_pending`'s RMW + load.
        if reserved && !self.try_reserve(Ordering::SeqCst) {
            // Shutdown wakes the room wakers after raising the flag: a waiter that
            // registered before that lock is woken, one after it sees the flag here.
            if self.is_shutdown() {
                self.count_refused(RejectReason::Shutdown, 1);
                return Err(RejectReason::Shutdown);
            }
            return Ok(None);
        }
        if !shard.enter_shared() {
            if reserved {
                self.release_pending(1);
            }
            return Err(self.revoke(shard, RejectReason::Shutdown));
        }
        Ok(Some(Route::Queue { reserved }))
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

    /// Takes back `n` entries that were not refused, only not needed (a broadcast that found
    /// the pool shut down): no refusal is counted.
    #[cold]
    pub(crate) fn revoke_entries(&self, shard: &Shard, n: u64) {
        shard.add_shared(Proto::Revoked, n);
        self.after_finish_off_worker();
    }

    /// Takes back an entry the pool will not run. Returns `reason` for convenience.
    #[cold]
    fn revoke(&self, shard: &Shard, reason: RejectReason) -> RejectReason {
        self.revoke_n(shard, reason, 1)
    }

    /// Takes back `n` entries refused because the pool is closed. Counted refused only when
    /// they go back to the submitter: a scope's or a `join`'s caller runs them itself.
    #[cold]
    fn refuse_closed(&self, shard: &Shard, admission: Admission, n: u64) -> RejectReason {
        if let Admission::Bounded(_) = admission {
            return self.revoke_n(shard, RejectReason::Shutdown, n);
        }
        shard.add_shared(Proto::Revoked, n);
        self.after_finish_off_worker();
        RejectReason::Shutdown
    }

    /// Takes back `n` entries the pool will not run.
    #[cold]
    fn revoke_n(&self, shard: &Shard, reason: RejectReason, n: u64) -> RejectReason {
        shard.add_shared(Proto::Revoked, n);
        Registry::count_refused_on(shard, reason, n);
        self.after_finish_off_worker();
        reason
    }

    /// Counts `n` tasks refused for `reason` that were never entered (the tail of a batch
    /// handed back with its refused head).
    #[cold]
    pub(crate) fn count_refused(&self, reason: RejectReason, n: u64) {
        Registry::count_refused_on(self.counters.external(), reason, n);
    }

    fn count_refused_on(shard: &Shard, reason: RejectReason, n: u64) {
        let stat = match reason {
            RejectReason::Full => Stat::RejectedFull,
            RejectReason::Timeout => Stat::RejectedTimeout,
            RejectReason::Shutdown => Stat::RejectedShutdown,
            // Refused before anything is entered (`Pool::submit_to`), counted from there.
            RejectReason::UnknownLane => Stat::RejectedUnknownLane,
        };
        shard.stat_shared(stat, n);
    }

    /// Admits up to `batch.len()` tasks from outside at once: one entry and one capacity
    /// reservation for as many as fit, then the policy task by task for the rest. Each
    /// admitted task is made into a job by `make` and queued on `lane` (or run as its route
    /// says); one wake-up call covers all queued. Returns how many were admitted; on a
    /// refusal, `batch` keeps the refused task and those after it, unrun.
    pub(crate) fn admit_batch<T>(
        this: &Arc<Registry>,
        lane: usize,
        admission: Admission,
        batch: &mut Vec<T>,
        mut make: impl FnMut(T) -> Job,
    ) -> Result<usize, RejectReason> {
        let k = batch.len();
        if k == 0 {
            return Ok(0);
        }
        let shard = this.counters.external();
        if !shard.enter_shared_n(k as u64) {
            return Err(this.refuse_closed(shard, admission, k as u64));
        }
        let policy = admission
            .policy()
            .expect("flock: a batch from outside is bounded");
        let reserved = this.try_reserve_up_to(k);
        // Counted before any is queued, as `dispatch` does: a reader that sees a task end
        // sees its acceptance.
        if reserved > 0 {
            shard.stat_shared(Stat::Submitted, reserved as u64);
            this.count_lane_submitted(shard, lane, reserved as u64);
        }
        let stamp = this.latency.as_ref().map(|_| this.now_ns());
        let mut items = std::mem::take(batch).into_iter();
        // Admitted for the queue, not pushed yet: pushed as one bundle (`queue_jobs`) when
        // `MAX_BUNDLE` are in, before anything can block, and at the end.
        let mut queued = Vec::new();
        let mut admitted = 0;
        let mut refused = None;
        for (i, item) in items.by_ref().enumerate() {
            let route = if i < reserved {
                Route::Queue {
                    reserved: this.cfg.capacity != usize::MAX,
                }
            } else {
                // Past what fitted: one at a time, as `admit` does (the entry is made).
                let route = if this.try_reserve(Ordering::Relaxed) {
                    Ok(Route::Queue { reserved: true })
                } else {
                    // Whatever is admitted so far may be what frees the room: queue it and
                    // wake for it before blocking.
                    this.queue_jobs(lane, &mut queued);
                    this.when_full(shard, policy)
                };
                match route {
                    Ok(route) => {
                        shard.stat_shared(Stat::Submitted, 1);
                        this.count_lane_submitted(shard, lane, 1);
                        route
                    }
                    Err(reason) => {
                        refused = Some((reason, item));
                        break;
                    }
                }
            };
            let mut job = make(item);
            if let Some(t) = stamp {
                job.stamp(t);
            }
            admitted += 1;
            if let Route::Queue { reserved } = route {
                job.add_flags(if reserved {
                    INJECTED | RESERVED
                } else {
                    INJECTED
                });
                if queued.capacity() == 0 {
                    queued = this.bundle_buffer();
                }
                queued.push(job);
                if queued.len() == MAX_BUNDLE {
                    this.queue_jobs(lane, &mut queued);
                }
            } else {
                this.queue_jobs(lane, &mut queued);
                Registry::dispatch_counted(this, shard, route, job, lane);
            }
        }
        this.queue_jobs(lane, &mut queued);
        // Left with a spare buffer when the last jobs were too few for a bundle.
        this.recycle_buffer(queued);
        match refused {
            None => Ok(admitted),
            Some((reason, item)) => {
                // `when_full` revoked the refused task's own entry; revoke the rest.
                let rest = (k - admitted - 1) as u64;
                if rest > 0 {
                    this.revoke_n(shard, reason, rest);
                }
                batch.push(item);
                batch.extend(items);
                Err(reason)
            }
        }
    }

    /// Queues admitted jobs on `lane`'s shared queue and wakes workers for them. From
    /// `MIN_BUNDLE` jobs on they go as one bundle (one push instead of one per job, the
    /// submitter's main cost in a batch); the worker that takes it up claims the jobs one by
    /// one and keeps its entry on its own deque meanwhile, where the others steal it and
    /// claim from it too (`WorkerThread::take_up`). Leaves `jobs` empty (its buffer gone
    /// with the bundle).
    fn queue_jobs(&self, lane: usize, jobs: &mut Vec<Job>) {
        let n = jobs.len();
        if n == 0 {
            return;
        }
        let queue = &self.lanes[lane];
        if n < MIN_BUNDLE {
            for job in jobs.drain(..) {
                queue.injector.push(job);
            }
        } else {
            queue.bundled.fetch_add(n - 1, Ordering::Relaxed);
            queue.injector.push(Job::bundle(std::mem::take(jobs)));
        }
        // Wake for all `n`, not for the one bundle: the workers woken besides the one that
        // takes it up search (spin), steal its entry from that one's deque and claim from it.
        self.sleep.notify_new_work_n(n);
        if let Some(reserve) = &self.reserve {
            reserve.notify(self, lane);
        }
    }

    /// An empty buffer for a bundle, with room for `MAX_BUNDLE` jobs: one a worker gave
    /// back after a bundle was emptied, or a new one.
    fn bundle_buffer(&self) -> Vec<Job> {
        if !cfg!(flock_loom) {
            if let Some(buffer) = self.spare_bundles.lock().pop() {
                return buffer;
            }
        }
        Vec::with_capacity(MAX_BUNDLE)
    }

    /// Lets go of a handle on a bundle; the last one keeps the bundle's buffer for the next
    /// batch. Reusing them keeps a batch off the allocator, whose lock the submitter
    /// (allocating) and the workers (freeing) otherwise contend for.
    pub(crate) fn release_bundle(&self, bundle: Arc<Bundle>) {
        #[cfg(not(flock_loom))]
        if let Some(bundle) = Arc::into_inner(bundle) {
            self.recycle_buffer(bundle.into_buffer());
        }
        #[cfg(flock_loom)]
        drop(bundle);
    }

    /// A bundle's queue entry taken from a queue and not put back: the bundle is empty, or
    /// its last job was just claimed (see `LaneQueue::bundled`).
    pub(crate) fn bundle_entry_dropped(&self, lane: usize, bundle: Arc<Bundle>) {
        self.lanes[lane].bundled.fetch_add(1, Ordering::Relaxed);
        self.release_bundle(bundle);
    }

    /// Keeps an emptied bundle buffer for the next batch.
    fn recycle_buffer(&self, buffer: Vec<Job>) {
        debug_assert!(buffer.is_empty());
        if cfg!(flock_loom) || buffer.capacity() != MAX_BUNDLE {
            return;
        }
        let mut spare = self.spare_bundles.lock();
        if spare.len() < SPARE_BUNDLES {
            spare.push(buffer);
        }
    }

    /// Up to `k` units of `pending`, as many as fit below capacity.
    fn try_reserve_up_to(&self, k: usize) -> usize {
        if self.cfg.capacity == usize::MAX {
            return k;
        }
        let mut now = self.pending.load(Ordering::Relaxed);
        loop {
            let take = k.min(self.cfg.capacity.saturating_sub(now));
            if take == 0 {
                return 0;
            }
            match self.pending.compare_exchange_weak(
                now,
                now + take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return take,
                Err(seen) => now = seen,
            }
        }
    }

    fn count_lane_submitted(&self, shard: &Shard, lane: usize, n: u64) {
        if self.lanes.len() > 1 {
            shard.lane_shared(LaneStat::Submitted, lane, n);
        }
    }

    /// Sends an admitted job where its route says, on `lane`.
    pub(crate) fn dispatch(
        this: &Arc<Registry>,
        shard: &Shard,
        route: Route,
        mut job: Job,
        lane: usize,
    ) {
        shard.stat_shared(Stat::Submitted, 1);
        this.count_lane_submitted(shard, lane, 1);
        if this.latency.is_some() {
            job.stamp(this.now_ns());
        }
        Registry::dispatch_counted(this, shard, route, job, lane);
    }

    fn dispatch_counted(
        this: &Arc<Registry>,
        shard: &Shard,
        route: Route,
        mut job: Job,
        lane: usize,
    ) {
        match route {
            Route::Queue { reserved } => {
                job.add_flags(if reserved {
                    INJECTED | RESERVED
                } else {
                    INJECTED
                });
                this.lanes[lane].injector.push(job);
                if let Some(reserve) = &this.reserve {
                    // The reserve's wake-up test relies on F1 (sleep/README.md, "The lane
                    // reserve"), so a pool with one pays it on every push.
                    this.sleep.notify_new_work();
                    reserve.notify(this, lane);
                } else {
                    this.sleep.notify_injected();
                }
            }
            Route::Caller => {
                shard.stat_shared(Stat::CallerRuns, 1);
                this.run_off_worker(shard, job, lane);
            }
            Route::Helper => Registry::run_on_helper(this, shard, job, lane),
        }
    }

    /// The lane of a task submitted from a thread that is not one of our workers, when the
    /// caller named `lane` (or not): the lane of the innermost task this thread runs for us
    /// off the workers, if any, else the first.
    pub(crate) fn outside_lane(&self, lane: Option<usize>) -> usize {
        lane.unwrap_or_else(|| {
            let id = ptr_id(self);
            OFF_WORKER
                .with(|stack| {
                    let stack = stack.borrow();
                    stack.iter().rev().find(|&&(r, _)| r == id).map(|&(_, l)| l)
                })
                .unwrap_or(0)
        })
    }

    /// Runs a counted job on a thread that is not a worker, counting and reporting its end.
    pub(crate) fn run_off_worker(&self, shard: &Shard, job: Job, lane: usize) {
        let timing = self
            .latency
            .as_ref()
            .map(|l| (l, job.queued_at_ns(), self.now_ns()));
        let counted = job.flags() & COUNTED != 0;
        OFF_WORKER.with(|stack| stack.borrow_mut().push((ptr_id(self), lane)));
        let result = catch_unwind(AssertUnwindSafe(|| job.run()));
        OFF_WORKER.with(|stack| stack.borrow_mut().pop());
        let end = match result {
            Ok(Outcome::Done) => Proto::Completed,
            Ok(Outcome::Panicked) => Proto::Panicked,
            Ok(Outcome::Skipped) => return,
            Err(payload) => {
                self.report_panic(None, payload);
                Proto::Panicked
            }
        };
        // Every job admitted from outside is counted; the lane reserve may also take up an
        // uncounted one a worker's queue handed back (as a worker counts only `COUNTED`).
        if counted {
            if let Some((latency, queued, start)) = timing {
                let shard = latency.external();
                shard.wait.record_shared(start.saturating_sub(queued));
                shard.run.record_shared(self.now_ns().saturating_sub(start));
            }
            if self.lanes.len() > 1 {
                shard.lane_shared(LaneStat::Executed, lane, 1);
            }
            shard.add_shared(end, 1);
        }
        self.after_finish_off_worker();
    }

    /// Nanoseconds since the pool started: the clock of latency stamps.
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    #[cold]
    fn run_on_helper(this: &Arc<Registry>, shard: &Shard, job: Job, lane: usize) {
        shard.stat_shared(Stat::SpawnedThread, 1);
        let slot = std::sync::Arc::new(Mutex::new(Some(job)));
        let theirs = slot.clone();
        let registry = this.clone();
        let spawned = thread::spawn("flock-helper".into(), None, move || {
            if let Some(job) = theirs.lock().take() {
                registry.run_off_worker(registry.counters.external(), job, lane);
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
                    this.run_off_worker(shard, job, lane);
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
        if prev >= self.cfg.capacity {
            if self.blocked.load(Ordering::SeqCst) > 0 {
                let _guard = self.room_lock.lock();
                self.room_cond.notify_all();
            }
            self.room_wakers.wake_all();
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

    /// The index of the calling thread if it is one of our workers, for `report_panic`.
    pub(crate) fn worker_here(&self) -> Option<usize> {
        crate::worker::with_current(|w| w.is_some_and(|w| w.is_in(self)))
            .then(crate::worker::current_worker_index)
            .flatten()
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

    /// Threads blocked in `wait_quiescent` now (`Stats::waiters`).
    pub(crate) fn waiters(&self) -> usize {
        self.waiters.load(Ordering::Relaxed)
    }

    /// Wakes the waiters to re-check, first starting a new quiet generation if the pool is
    /// quiet now: then every one of them returns, also if one that returns first submits
    /// more work before the others run again.
    #[cold]
    pub(crate) fn notify_waiters(&self) {
        let mut generation = self.wait_lock.lock();
        if self.counters.outstanding() == 0 {
            *generation += 1;
        }
        self.wait_cond.notify_all();
    }

    /// Blocks until the pool has been seen with no task outstanding since the call (by this
    /// thread, another waiter or a worker: see `notify_waiters`), or `deadline` passes, or
    /// (with `stop_if_paused`) the pool is paused while tasks wait in a queue.
    pub(crate) fn wait_quiescent(&self, deadline: Option<Instant>, stop_if_paused: bool) -> Quiet {
        if self.counters.outstanding() == 0 {
            // Quiet now: if others wait, they may return for it too.
            if self.has_waiters() {
                self.notify_waiters();
            }
            return Quiet::Done;
        }
        let mut guard = self.wait_lock.lock();
        // SeqCst: pairs with the fence in `Worker::go_idle` / `after_finish_off_worker`.
        self.waiters.fetch_add(1, Ordering::SeqCst);
        // Read under `wait_lock`, as it is only changed under it: a later generation means a
        // thread saw the pool quiet after we registered.
        let registered = *guard;
        let mut timed_out = false;
        let done = loop {
            if *guard != registered {
                break Quiet::Done;
            }
            if self.counters.outstanding() == 0 {
                // Quiet: a new generation for the other waiters (see `notify_waiters`).
                *guard += 1;
                self.wait_cond.notify_all();
                break Quiet::Done;
            }
            // Paused with tasks waiting in a queue: they would not start before a resume.
            // (Only running tasks left: they finish, and the worker that finishes the last
            // one notifies us from `go_idle`, as does any worker that parks because of the
            // pause, including one woken by a submit.) Read under `wait_lock`: `pause` sets
            // the bit before it takes the lock to notify.
            if stop_if_paused && self.is_paused() && self.anything_queued() {
                break Quiet::Paused;
            }
            if timed_out {
                break Quiet::TimedOut;
            }
            timed_out = !self.wait_cond.wait_until(&mut guard, deadline);
        };
        self.waiters.fetch_sub(1, Ordering::Relaxed);
        done
    }

    /// Whether any shared queue or worker deque holds a job.
    fn anything_queued(&self) -> bool {
        self.lanes.iter().any(|l| !l.injector.is_empty())
            || self.stealers.iter().any(|s| !s.is_empty())
    }

    // ----- workers wanted, pause ----------------------------------------------------------

    /// The control word (workers wanted `<< 1`, `PAUSED`). Relaxed: a worker that reads a
    /// stale value acts on it one task later; what must not be missed across parking is
    /// ordered by the `sleepers` lock (see `resize` and `set_paused`).
    pub(crate) fn control(&self) -> usize {
        self.control.load(Ordering::Relaxed)
    }

    /// Whether worker `index` is beyond the number wanted, by a control word.
    pub(crate) fn retiring(control: usize, index: usize) -> bool {
        index >= control >> 1
    }

    pub(crate) fn paused(control: usize) -> bool {
        control & PAUSED != 0
    }

    pub(crate) fn is_paused(&self) -> bool {
        Registry::paused(self.control.load(Ordering::SeqCst))
    }

    /// Pauses or resumes. Resuming wakes every parked worker; pausing wakes `wait()`ers so
    /// they can report [`WaitError::Paused`](crate::WaitError::Paused).
    pub(crate) fn set_paused(&self, on: bool) {
        if on {
            // Under `slots`, as `begin_shutdown` clears the bit: a closing pool drains, so a
            // pause after the shutdown began is ignored (it would leave the drain parked).
            let slots = self.slots.lock();
            if self.is_shutdown() {
                return;
            }
            // SeqCst, then the locks: a worker that parks after taking the `sleepers` lock,
            // and a waiter that checks under `wait_lock`, see the bit.
            self.control.fetch_or(PAUSED, Ordering::SeqCst);
            drop(slots);
            self.notify_waiters();
        } else {
            self.control.fetch_and(!PAUSED, Ordering::SeqCst);
            // Every parked worker re-checks: the store comes before `wake_all` takes the
            // `sleepers` lock, so a worker that announces itself after that sees it (its
            // re-check follows its own acquire of the lock) and one that announced before is
            // woken.
            self.sleep.wake_all();
            if let Some(reserve) = &self.reserve {
                // F1 for the reserve (sleep/README.md, "The lane reserve"): it either sees the
                // bit cleared in its look before sleeping, or we see it asleep here.
                fence(Ordering::SeqCst);
                for lane in 0..self.lanes.len() {
                    if !self.lanes[lane].injector.is_empty() {
                        reserve.notify(self, lane);
                    }
                }
            }
        }
    }

    /// The number of workers wanted.
    pub(crate) fn workers(&self) -> usize {
        self.control() >> 1
    }

    /// Sets the number of workers: starts threads for idle slots below `n` (waiting for
    /// slots still retiring), and lets workers at `n` and above retire at their next task
    /// boundary. Returns once the new workers are running (and pinned, when asked).
    pub(crate) fn resize(this: &Arc<Registry>, n: usize) -> Result<(), ResizeError> {
        if n == 0 {
            return Err(ResizeError::ZeroWorkers);
        }
        if n > this.cfg.max_workers {
            return Err(ResizeError::TooManyWorkers {
                requested: n,
                max: this.cfg.max_workers,
            });
        }
        if this.retiring_here() {
            return Err(ResizeError::WouldDeadlock);
        }
        let _one_at_a_time = this.resizing.lock();
        let mut slots = this.slots.lock();
        if this.is_shutdown() {
            return Err(ResizeError::Shutdown);
        }
        this.set_target(n);
        let mut start = Vec::new();
        for i in 0..n {
            loop {
                match slots.state[i] {
                    SlotState::Running | SlotState::Starting => break,
                    SlotState::Retiring => this.slot_cond.wait(&mut slots),
                    SlotState::Idle | SlotState::Exited => {
                        slots.state[i] = SlotState::Starting;
                        start.push(i);
                        break;
                    }
                }
            }
            if this.is_shutdown() {
                // `begin_shutdown` raised the flag while we waited for a retiring slot.
                for &j in &start {
                    slots.state[j] = SlotState::Idle;
                }
                return Err(ResizeError::Shutdown);
            }
        }
        this.shown.store(slots.shown(), Ordering::Relaxed);
        *this.live.lock() += start.len();
        drop(slots);
        // Workers above `n` may be parked: let them see they are to retire.
        this.sleep.wake_all();
        let startup = Arc::new(Startup::new());
        let mut failure = None;
        let mut spawned = 0;
        for &i in &start {
            let core = this.cfg.cores.as_ref().map(|c| c[i]);
            let (reg, report) = (this.clone(), startup.clone());
            let thread = this.thread_name(i).and_then(|name| {
                thread::spawn(name, this.cfg.stack_size, move || {
                    crate::worker::run(reg, i, core, move |pinned| report.report(i, pinned))
                })
                .map_err(ResizeError::ThreadSpawn)
            });
            match thread {
                Ok(handle) => {
                    spawned += 1;
                    this.add_thread(handle);
                }
                Err(e) => {
                    // This slot and the later ones never got a thread.
                    let mut slots = this.slots.lock();
                    for &j in start.iter().skip(spawned) {
                        slots.state[j] = SlotState::Idle;
                    }
                    this.shown.store(slots.shown(), Ordering::Relaxed);
                    drop(slots);
                    this.workers_gone(start.len() - spawned);
                    failure = Some((i, e));
                    break;
                }
            }
        }
        if let Some(worker) = startup.wait_for(spawned) {
            let core = this.cfg.cores.as_ref().map_or(0, |c| c[worker]);
            if failure.as_ref().is_none_or(|(at, _)| worker < *at) {
                failure = Some((worker, ResizeError::PinFailed { worker, core }));
            }
        }
        match failure {
            None => Ok(()),
            Some((at, err)) => {
                // Keep the workers below the failed one; those above it retire.
                let slots = this.slots.lock();
                this.set_target(at.max(1));
                drop(slots);
                this.sleep.wake_all();
                Err(err)
            }
        }
    }

    /// Whether the calling thread is one of our workers, retiring: it is in its
    /// `on_worker_stop` hook, the only user code a retiring worker runs. A resize waits for
    /// retiring workers to leave (and for a resize that may be doing so), so from there it
    /// would wait for itself.
    fn retiring_here(&self) -> bool {
        self.worker_here()
            .is_some_and(|i| self.slots.lock().state[i] == SlotState::Retiring)
    }

    /// Worker `index`'s thread name, from the user's callback, guarded: its panic must not
    /// unwind through `resize` with slots marked `Starting` and counted in `live`.
    fn thread_name(&self, index: usize) -> Result<String, ResizeError> {
        catch_unwind(AssertUnwindSafe(|| (self.cfg.thread_name)(index))).map_err(|payload| {
            let message = payload_message(&*payload)
                .unwrap_or("<non-string payload>")
                .to_owned();
            drop_payload(payload);
            ResizeError::ThreadNamePanicked {
                worker: index,
                message,
            }
        })
    }

    /// Starts the lane reserve's thread, if the pool has one (once, at build). Its handle
    /// joins the helpers', which `join_threads` joins after the workers have left.
    pub(crate) fn start_reserve(this: &Arc<Registry>) -> Result<(), ResizeError> {
        if this.reserve.is_none() {
            return Ok(());
        }
        let reg = this.clone();
        let name = "flock-lane-reserve".to_owned();
        let handle = thread::spawn(name, this.cfg.stack_size, move || Reserve::run(&reg))
            .map_err(ResizeError::ThreadSpawn)?;
        this.helpers.lock().push(handle);
        Ok(())
    }

    fn set_target(&self, n: usize) {
        let mut now = self.control.load(Ordering::Relaxed);
        loop {
            let next = (n << 1) | (now & PAUSED);
            // SeqCst: see `set_paused`; retiring workers are woken by `wake_all` after this.
            match self
                .control
                .compare_exchange_weak(now, next, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(seen) => now = seen,
            }
        }
    }

    /// A new worker thread takes its slot's deques.
    pub(crate) fn take_slot(&self, index: usize) -> Box<[Deque<Job>]> {
        let mut slots = self.slots.lock();
        slots.state[index] = SlotState::Running;
        slots.deques[index]
            .take()
            .expect("flock: a starting slot has its deques")
    }

    /// A worker beyond the number wanted asks to retire; false if the pool grew back
    /// meanwhile (it keeps running).
    pub(crate) fn confirm_retire(&self, index: usize) -> bool {
        let mut slots = self.slots.lock();
        // Also during shutdown: the work it hands over is run by those that stay (at least
        // one worker is always wanted, and none exits while a task is outstanding).
        if Registry::retiring(self.control(), index) {
            slots.state[index] = SlotState::Retiring;
            true
        } else {
            false
        }
    }

    /// A worker thread leaves: its deques go back to its slot.
    pub(crate) fn leave_slot(&self, index: usize, deques: Box<[Deque<Job>]>, retired: bool) {
        let mut slots = self.slots.lock();
        debug_assert!(
            deques.iter().all(Deque::is_empty),
            "flock: a worker left work behind"
        );
        slots.deques[index] = Some(deques);
        slots.state[index] = if retired {
            SlotState::Idle
        } else {
            SlotState::Exited
        };
        self.shown.store(slots.shown(), Ordering::Relaxed);
        self.slot_cond.notify_all();
        drop(slots);
        // `Pool::broadcast` calls left for a worker that never ran its loop (its pinning
        // failed): none can arrive now that the slot is not running, so run them here, off
        // the workers, rather than leave their caller waiting.
        while let Some(job) = self.mailboxes.take(index) {
            self.run_off_worker(self.counters.external(), job, 0);
        }
        self.workers_gone(1);
    }

    /// Slots `Stats::per_worker` shows.
    pub(crate) fn shown_slots(&self) -> usize {
        self.shown.load(Ordering::Relaxed)
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
        // Under `slots`: a concurrent `resize` either started its threads before (they are
        // counted in `live`, and shutdown waits for them) or sees the flag and starts none.
        let slots = self.slots.lock();
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
        // A closing pool drains: a graceful shutdown of a paused pool runs its queue.
        self.control.fetch_and(!PAUSED, Ordering::SeqCst);
        // Wakes a `resize` waiting for a retiring slot, so it sees the flag.
        self.slot_cond.notify_all();
        drop(slots);
        {
            let _guard = self.room_lock.lock();
            self.room_cond.notify_all();
        }
        self.room_wakers.wake_all();
        self.notify_waiters();
        self.sleep.wake_all();
        if let Some(reserve) = &self.reserve {
            reserve.unpark();
        }
    }

    /// Whether the calling thread, not a worker, is running one of our tasks now (the
    /// caller under `CallerRuns`, a helper thread, the lane reserve): waiting for the pool
    /// from there would wait for that task itself.
    pub(crate) fn runs_task_off_worker_here(&self) -> bool {
        let id = ptr_id(self);
        OFF_WORKER.with(|stack| stack.borrow().iter().any(|&(r, _)| r == id))
    }

    pub(crate) fn note_dropped_by_shutdown(&self) {
        self.dropped_by_shutdown.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn dropped_by_shutdown(&self) -> u64 {
        self.dropped_by_shutdown.load(Ordering::Relaxed)
    }

    pub(crate) fn add_thread(&self, handle: JoinHandle<()>) {
        let mut threads = self.threads.lock();
        // Retired workers' threads have ended: join them now rather than keep their handles.
        let (done, running): (Vec<_>, Vec<_>) = std::mem::take(&mut *threads)
            .into_iter()
            .partition(thread::is_finished);
        *threads = running;
        threads.push(handle);
        drop(threads);
        for t in done {
            let _ = t.join();
        }
    }

    /// `n` worker threads exited (or never started).
    fn workers_gone(&self, n: usize) {
        let mut live = self.live.lock();
        *live -= n;
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
    /// for long; threads of retired workers are joined here too). A second caller finds the
    /// lists empty.
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
}

/// A registry's address, as `OFF_WORKER` keeps it.
fn ptr_id(registry: &Registry) -> usize {
    std::ptr::from_ref(registry) as usize
}

/// How `wait_quiescent` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Quiet {
    Done,
    TimedOut,
    Paused,
}

/// New workers report in here once pinned (or not), before they run anything.
struct Startup {
    /// (workers reported, first worker whose pinning failed)
    state: Mutex<(usize, Option<usize>)>,
    cond: Condvar,
}

impl Startup {
    fn new() -> Startup {
        Startup {
            state: Mutex::new((0, None)),
            cond: Condvar::new(),
        }
    }

    fn report(&self, index: usize, pinned: bool) {
        let mut state = self.state.lock();
        state.0 += 1;
        if !pinned && state.1.is_none_or(|first| index < first) {
            state.1 = Some(index);
        }
        self.cond.notify_all();
    }

    /// Waits for `n` reports; returns the lowest worker that could not be pinned.
    fn wait_for(&self, n: usize) -> Option<usize> {
        let mut state = self.state.lock();
        while state.0 < n {
            self.cond.wait(&mut state);
        }
        state.1
    }
}
