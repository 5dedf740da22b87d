//! The worker thread: its loop, where it looks for work, and how it runs a task.

use crate::deque::{Steal, Worker as Deque};
use crate::job::{Bundle, Job, Outcome, BUNDLE, COUNTED, DISCARDABLE, INJECTED, RESERVED};
use crate::latch::Latch;
use crate::metrics::counters::{LaneStat, Proto, Shard, Stat, WorkerState};
use crate::registry::Registry;
use crate::sync::{facade_thread_local, fence, Arc, Ordering};
use crate::unwind::{call_guarded, AbortIfPanic};
use crossbeam_utils::Backoff;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

facade_thread_local! {
    /// The worker running on this thread, if any; set for the whole life of `main_loop`.
    static CURRENT: Cell<*const WorkerThread> = Cell::new(ptr::null());
}

/// Runs `f` with the current thread's worker, if this thread is a worker of any pool.
/// Inline: on `join`'s path an out-of-line frame here cost ~31 instructions a join.
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(Option<&WorkerThread>) -> R) -> R {
    let p = CURRENT.with(Cell::get);
    // SAFETY: `CURRENT` is non-null only while `run` is on this thread's stack, holding the
    // `WorkerThread` it points to; `f` runs on this thread, inside that time.
    f(unsafe { p.as_ref() })
}

/// The index of the pool worker running the calling thread, or `None` outside any pool.
///
/// ```
/// let pool = flock::Pool::builder().workers(2).build().unwrap();
/// assert_eq!(flock::current_worker_index(), None);
/// let inside = pool.spawn(flock::current_worker_index).join().unwrap();
/// assert!(matches!(inside, Some(0) | Some(1)));
/// ```
pub fn current_worker_index() -> Option<usize> {
    with_current(|w| w.map(|w| w.index))
}

/// A cooperative preemption point for long tasks in a pool with lanes: lets queued tasks of
/// lanes weighted above the running task's lane run here, on this thread, for as long as
/// the weights say they are due, and returns how many ran.
///
/// flock does not preempt a running task, so a task submitted to a heavy lane (say
/// `"interactive"`) while every worker runs a long task of a light one (`"batch"`) waits for
/// one of them to end. A long task that calls `yield_to_lanes` every few microseconds bounds
/// that wait by the time between its calls instead. The heavier lanes get their share of
/// the calling task's time and no more (a lane of weight 8 against the caller's weight 1
/// gets up to 8 ns of run time per ns the caller has run since it started), so a flood of
/// interactive work still leaves the batch task its share. Tasks run here are charged to
/// their own lanes, not to the caller's.
///
/// Returns 0 at once (a thread-local read and a few loads) outside a pool's worker, in a
/// pool with one lane, from a task of the heaviest lane, with nothing queued in a heavier
/// lane, or while the pool is paused. A task run here may itself call `yield_to_lanes`; it
/// only ever runs still heavier lanes, so nesting is at most one level per distinct weight.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// let pool = Arc::new(
///     flock::Pool::builder()
///         .workers(1)
///         .lanes(&[("interactive", 8), ("batch", 1)])
///         .build()
///         .unwrap(),
/// );
/// let answered = Arc::new(AtomicBool::new(false));
/// let (pool2, seen) = (pool.clone(), answered.clone());
/// let batch = pool.spawn_to("batch", move || {
///     let flag = seen.clone();
///     // The only worker is busy here; the interactive task can only run inside us.
///     pool2.submit_to("interactive", move || flag.store(true, Ordering::SeqCst)).unwrap();
///     let mut ran = 0;
///     while !seen.load(Ordering::SeqCst) {
///         ran += flock::yield_to_lanes(); // ... a slice of batch work between calls ...
///     }
///     ran
/// });
/// assert_eq!(batch.join().unwrap(), 1);
/// assert!(answered.load(Ordering::SeqCst));
/// assert_eq!(flock::yield_to_lanes(), 0); // not on a worker
/// ```
pub fn yield_to_lanes() -> usize {
    with_current(|w| w.map_or(0, WorkerThread::yield_to_lanes))
}

pub(crate) struct WorkerThread {
    index: usize,
    /// One deque per lane; with one lane (the default) only `locals[0]`.
    locals: Box<[Deque<Job>]>,
    registry: Arc<Registry>,
    rng: Cell<u64>,
    /// One lane and no latency tracking: `execute` takes the short path (`run_plain`).
    plain: bool,
    /// One lane with latency tracking: `execute` times the task and nothing else
    /// (`run_timed`).
    timed: bool,
    /// Started `RESERVED` jobs whose `pending` units are not given back yet.
    unflushed: Cell<usize>,
    /// The lane of the task running now: what it submits inherits it.
    lane: Cell<usize>,
    /// Per lane, this worker's virtual clock (lanes > 1): run time charged to the lane,
    /// scaled by its stride. The lane furthest behind is served next.
    vtime: Box<[Cell<u64>]>,
    /// Run time of tasks nested inside the running one (`join`, `scope` waits), so the outer
    /// task is charged only its own.
    nested_ns: Cell<u64>,
    /// When the running task started (`Registry::now_ns`; lanes > 1 only), for
    /// `yield_to_lanes`.
    task_start: Cell<u64>,
    /// Per lane, the bundle we took up last, to claim its jobs from without a trip through
    /// our deque (`claim_current`). Only a handle: the bundle's entry stays in a queue for
    /// as long as it has jobs, so dropping this loses nothing.
    current: Box<[RefCell<Option<Current>>]>,
    /// Bit `lane` set while `current[lane]` holds a bundle: one load and test on every take
    /// instead of a `RefCell` borrow.
    holding: Cell<u32>,
}

/// A bundle a worker claims jobs from (`WorkerThread::current`).
struct Current {
    bundle: Arc<Bundle>,
    /// Its entry came from another worker's deque: what we claim counts as stolen.
    stolen: bool,
}

/// Where a worker took a bundle's entry from (`WorkerThread::take_up`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Took {
    /// The lane's shared queue.
    Shared,
    /// Our own deque.
    Own,
    /// Another worker's deque.
    Stolen,
}

/// Why `main_loop` returned.
enum Exit {
    /// The pool shut down and nothing is outstanding.
    Shutdown,
    /// This worker is beyond the number wanted (`Pool::resize`).
    Retire,
}

enum Parked {
    /// Look for work again; `searching` says whether we count as a searcher.
    Resume {
        searching: bool,
    },
    Exit,
}

/// The body of a worker thread in slot `index`. `ready` is told whether pinning worked,
/// before any task runs.
pub(crate) fn run(
    registry: Arc<Registry>,
    index: usize,
    core: Option<usize>,
    ready: impl FnOnce(bool),
) {
    let pinned = core.is_none_or(crate::pin::pin_current_thread);
    let locals = registry.take_slot(index);
    let lanes = locals.len();
    registry
        .counters
        .worker(index)
        .set_state(WorkerState::Running);
    ready(pinned);
    let worker = WorkerThread {
        plain: lanes == 1 && registry.latency.is_none(),
        timed: lanes == 1 && registry.latency.is_some(),
        index,
        locals,
        rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ ((index as u64 + 1) << 17)),
        unflushed: Cell::new(0),
        lane: Cell::new(0),
        vtime: (0..lanes).map(|_| Cell::new(0)).collect(),
        nested_ns: Cell::new(0),
        task_start: Cell::new(0),
        current: (0..lanes).map(|_| RefCell::new(None)).collect(),
        holding: Cell::new(0),
        registry,
    };
    CURRENT.with(|c| c.set(&worker));
    let reg = &*worker.registry;
    if let Some(hook) = &reg.cfg.on_worker_start {
        call_guarded("on_worker_start hook", Some(index), || hook(index));
    }
    // Not pinned: the pool's build or resize reports the failure; this slot retires unused.
    let mut retired = !pinned;
    if pinned {
        let guard = AbortIfPanic("the worker loop");
        loop {
            match worker.main_loop() {
                Exit::Shutdown => break,
                Exit::Retire if reg.confirm_retire(index) => {
                    retired = true;
                    worker.hand_over_work();
                    break;
                }
                // The pool grew back before we left: carry on.
                Exit::Retire => {}
            }
        }
        guard.disarm();
    }
    // Shut down while beyond the number wanted (a shrink raced the shutdown): the slot is
    // as good as retired, and `Stats::per_worker` should not show it.
    retired |= Registry::retiring(reg.control(), index);
    if let Some(hook) = &reg.cfg.on_worker_stop {
        call_guarded("on_worker_stop hook", Some(index), || hook(index));
    }
    worker.shard().set_state(WorkerState::Stopped);
    CURRENT.with(|c| c.set(ptr::null()));
    let WorkerThread {
        locals, registry, ..
    } = worker;
    registry.leave_slot(index, locals, retired);
}

impl WorkerThread {
    /// The worker's slot index in its pool.
    #[inline]
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// The worker's own reference to its pool, alive as long as the worker thread runs.
    #[inline]
    pub(crate) fn registry_arc(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Whether this worker belongs to `registry`'s pool.
    #[inline]
    pub(crate) fn is_in(&self, registry: &Registry) -> bool {
        ptr::eq(&*self.registry, registry)
    }

    #[inline]
    fn shard(&self) -> &Shard {
        self.registry.counters.worker(self.index)
    }

    fn main_loop(&self) -> Exit {
        let reg = &*self.registry;
        let sleep = &reg.sleep;
        let mut searching = false;
        'outer: loop {
            // Between tasks: the one place a worker retires or honours a pause.
            let control = reg.control();
            if Registry::retiring(control, self.index) {
                if searching {
                    self.stop_searching();
                }
                return Exit::Retire;
            }
            if Registry::paused(control) {
                self.go_idle();
                match self.park(searching) {
                    Parked::Resume { searching: s } => searching = s,
                    Parked::Exit => return Exit::Shutdown,
                }
                continue;
            }
            if let Some((job, lane)) = self.find_work() {
                if searching {
                    searching = false;
                    self.stop_searching();
                }
                self.execute_unless_paused(job, lane);
                continue;
            }
            self.go_idle();
            if !searching && !reg.is_shutdown() {
                searching = sleep.transition_to_searching(reg.workers());
            }
            if searching {
                self.shard().set_state(WorkerState::Spinning);
                let backoff = Backoff::new();
                for _ in 0..reg.cfg.spin_limit {
                    backoff.snooze();
                    // A long `spin_limit` must delay neither a shutdown (parking is where a
                    // worker checks whether it may exit) nor a pause or resize (decided at
                    // the top).
                    if reg.is_shutdown() {
                        break;
                    }
                    if reg.control() != control {
                        continue 'outer;
                    }
                    if let Some((job, lane)) = self.find_work() {
                        searching = false;
                        self.stop_searching();
                        self.execute_unless_paused(job, lane);
                        continue 'outer;
                    }
                }
            }
            match self.park(searching) {
                Parked::Resume { searching: s } => searching = s,
                Parked::Exit => return Exit::Shutdown,
            }
        }
    }

    /// Runs a job just taken, unless it was submitted from outside (`INJECTED`) and the pool
    /// was paused meanwhile: then it goes back on our deque (where `resume` finds it) and the
    /// loop's top parks us. This re-read is what makes "no task submitted from outside after
    /// `pause()` returned starts": taking such a task synchronises with its push, which
    /// follows the pause's store, so this load sees `PAUSED`. Jobs spawned by running tasks
    /// still run (a `join` or `scope` may be waiting for them, as in `wait_until`).
    /// Returns whether it ran the job.
    fn execute_unless_paused(&self, job: Job, lane: usize) -> bool {
        if job.flags() & INJECTED != 0 && Registry::paused(self.registry.control()) {
            self.locals[lane].push(job);
            return false;
        }
        self.execute(job, lane);
        true
    }

    /// Retiring: every task still in our deques goes to its lane's shared queue, for the
    /// workers that stay. Called between tasks, so no `join` of ours is waiting on any of
    /// them; each is moved, not copied, so none runs twice and none is lost.
    fn hand_over_work(&self) {
        let reg = &*self.registry;
        // Broadcast calls for us: ours to run (no more arrive: our slot is marked retiring).
        while let Some(job) = reg.mailboxes.take(self.index) {
            self.execute(job, 0);
        }
        // A bundle we claimed from keeps its entry in a queue (ours, moved below, or a
        // thief's): letting go of our handle leaves its jobs to whoever takes that up.
        for current in self.current.iter() {
            if let Some(current) = current.borrow_mut().take() {
                reg.release_bundle(current.bundle);
            }
        }
        self.holding.set(0);
        let mut moved = 0;
        for (lane, local) in self.locals.iter().enumerate() {
            while let Some(job) = local.pop() {
                reg.lanes[lane].injector.push(job);
                moved += 1;
            }
        }
        if moved > 0 {
            reg.sleep.notify_new_work_n(moved);
        }
        // As any worker that runs out of work: give capacity back and tell `wait()`ers (the
        // task we finished last may have been the one they wait for; loom found that a
        // retiring worker skipping this left `wait` asleep forever).
        self.go_idle();
    }

    /// Leaves the Searching state after finding a task; the last searcher keeps the promise of
    /// sleep/README.md by waking one more worker if work is still queued (the chain).
    ///
    /// "Queued" means in any queue, other workers' deques included: a bundle's entry put back
    /// on a deque, or jobs a task spawned there, are found only by a searcher if that
    /// worker then runs a long (or blocking) task. Looking only at our own deque and
    /// the shared queues left such jobs unrun while workers slept (tests/resize.rs, four
    /// tasks that wait for each other on four workers).
    fn stop_searching(&self) {
        let reg = &*self.registry;
        if reg.sleep.transition_from_searching() && self.work_visible() {
            reg.sleep.wake_one();
        }
    }

    /// Out of work: give back capacity units and tell `wait()`ers.
    fn go_idle(&self) {
        self.flush_reservations();
        // Pairs with the waiter's SeqCst `waiters` increment in `Registry::wait_quiescent`:
        // either it sees our finish counts or we see it registered.
        fence(Ordering::SeqCst);
        if self.registry.has_waiters() {
            self.registry.notify_waiters();
        }
    }

    /// Steps 1-5 of "Parking" in sleep/README.md.
    fn park(&self, searching: bool) -> Parked {
        let reg = &*self.registry;
        let sleep = &reg.sleep;
        self.shard().set_state(WorkerState::Parked);
        sleep.announce_parked(self.index, searching);
        let exit = reg.may_exit();
        // After F2, so a `resize` or `resume` whose `wake_all` missed us is seen here.
        let control = reg.control();
        let retire = Registry::retiring(control, self.index);
        // The re-check of step 3. `--cfg flock_canary` removes it to prove the loom models
        // catch a lost wake-up (scripts/loom.sh). While paused, queued work is not ours to
        // start: `resume` wakes everyone.
        if exit
            || retire
            || (!cfg!(flock_canary) && !Registry::paused(control) && self.work_visible())
        {
            if !sleep.cancel_park(self.index) {
                // A waker chose us; its unpark is on its way. Consume it.
                sleep.park(self.index);
            }
            // Either way we are a searcher now (see `Sleep::cancel_park`).
            if exit {
                sleep.transition_from_searching();
                sleep.wake_all();
                return Parked::Exit;
            }
            return Parked::Resume { searching: true };
        }
        self.shard().stat_owned(Stat::Parks, 1);
        sleep.park(self.index);
        self.shard().stat_owned(Stat::Wakeups, 1);
        Parked::Resume { searching: true }
    }

    /// Whether any queue holds a job (the re-check after announcing sleep), our broadcast
    /// mailbox included.
    fn work_visible(&self) -> bool {
        let reg = &*self.registry;
        reg.lanes.iter().any(|l| !l.injector.is_empty())
            || reg.stealers.iter().any(|s| !s.is_empty())
            || reg.mailboxes.has(self.index)
    }

    /// The bundle we took up last, then our own deque, then the injector (a batch into our
    /// deque), then the other workers' deques from a random victim. `Steal::Retry` is
    /// retried, never taken for empty. With several lanes, the lane to serve is chosen first
    /// (`find_work_in_lanes`). Returns the job and its lane.
    #[inline]
    pub(crate) fn find_work(&self) -> Option<(Job, usize)> {
        if self.locals.len() == 1 {
            // The common case first: the bundle we hold, then what we pushed ourselves.
            if let Some(job) = self.claim_current(0).or_else(|| self.pop_own(0)) {
                return Some((job, 0));
            }
        }
        self.find_work_beyond_own()
    }

    /// `find_work` once our own deque (of a one-lane pool) is empty, or with lanes. Out of
    /// line: checking the broadcast mailbox before our own deque cost a spawned scope task
    /// ~50 instructions (callgrind, scripts/callgrind.sh: 380.6 against 358.9 now).
    #[inline(never)]
    fn find_work_beyond_own(&self) -> Option<(Job, usize)> {
        // A `Pool::broadcast` call for this worker only (one Relaxed load when none): before
        // the shared queues, so work from outside cannot hold it back; after our own deque,
        // as rayon's broadcasts (a worker runs them when it next runs out of its own tasks).
        if let Some(job) = self.registry.mailboxes.take(self.index) {
            return Some((job, 0));
        }
        if self.locals.len() > 1 {
            return self.find_work_in_lanes();
        }
        self.take_from_lane_shared(0)
            .map(|job| (job, 0))
            .or_else(|| self.steal_from_others())
    }

    /// Whether `lane` has work for us without stealing: in the bundle we claim from, our
    /// deque or its shared queue.
    fn lane_has_work(&self, lane: usize) -> bool {
        !(self.locals[lane].is_empty() && self.registry.lanes[lane].injector.is_empty())
            || self.current[lane]
                .borrow()
                .as_ref()
                .is_some_and(|c| c.bundle.remaining() > 0)
    }

    /// Start-time fair queueing over the lanes, per worker: among the lanes with work in our
    /// bundle, deque or their shared queue, serve the one whose virtual clock is furthest behind;
    /// lanes with no work are brought up to that clock (an idle lane saves no credit, so
    /// when it gets busy it is served at once but cannot then crowd the others out).
    #[inline(never)]
    fn find_work_in_lanes(&self) -> Option<(Job, usize)> {
        let vt = &self.vtime;
        let mut best: Option<usize> = None;
        let mut idle = 0u32;
        for lane in 0..self.locals.len() {
            if !self.lane_has_work(lane) {
                idle |= 1 << lane;
            } else if best.is_none_or(|b| behind(vt[lane].get(), vt[b].get())) {
                best = Some(lane);
            }
        }
        if let Some(best) = best {
            let floor = vt[best].get();
            for (lane, clock) in vt.iter().enumerate() {
                if idle & (1 << lane) != 0 && behind(clock.get(), floor) {
                    clock.set(floor);
                }
            }
            if let Some(job) = self.take_from_lane(best) {
                return Some((job, best));
            }
            // Emptied by thieves meanwhile: any other lane that had work.
            for lane in 0..self.locals.len() {
                if lane != best && idle & (1 << lane) == 0 {
                    if let Some(job) = self.take_from_lane(lane) {
                        return Some((job, lane));
                    }
                }
            }
        }
        self.steal_from_others()
    }

    #[inline]
    fn take_from_lane(&self, lane: usize) -> Option<Job> {
        if let Some(job) = self.claim_current(lane).or_else(|| self.pop_own(lane)) {
            return Some(job);
        }
        self.take_from_lane_shared(lane)
    }

    /// `take_from_lane` once our bundle and deque are empty: the lane's shared queue (kept
    /// out of line, so the common pop pays no large frame).
    #[inline(never)]
    fn take_from_lane_shared(&self, lane: usize) -> Option<Job> {
        loop {
            let entry = self.steal_from_injector(lane)?;
            if entry.flags() & BUNDLE == 0 {
                return Some(entry);
            }
            if let Some(job) = self.take_up(entry, lane, Took::Shared) {
                return Some(job);
            }
            // An emptied bundle's entry: look again, from the top.
            if let Some(job) = self.claim_current(lane).or_else(|| self.pop_own(lane)) {
                return Some(job);
            }
        }
    }

    /// The most recent job on our deque of `lane`; a bundle's entry there is taken up.
    #[inline]
    fn pop_own(&self, lane: usize) -> Option<Job> {
        let job = self.locals[lane].pop()?;
        if job.flags() & BUNDLE == 0 {
            return Some(job);
        }
        self.pop_own_bundle(job, lane)
    }

    /// `pop_own` found a bundle's entry: take it up, or go on popping if it was emptied.
    #[inline(never)]
    fn pop_own_bundle(&self, mut entry: Job, lane: usize) -> Option<Job> {
        loop {
            if let Some(job) = self.take_up(entry, lane, Took::Own) {
                return Some(job);
            }
            entry = self.locals[lane].pop()?;
            if entry.flags() & BUNDLE == 0 {
                return Some(entry);
            }
        }
    }

    /// The next job of the bundle we took up last in `lane`, if it has one left (others
    /// claim from it too once its entry is stolen); an emptied bundle is let go.
    #[inline]
    fn claim_current(&self, lane: usize) -> Option<Job> {
        if self.holding.get() & (1 << lane) == 0 {
            return None; // the common case: no bundle taken up in this lane
        }
        self.claim_current_cold(lane)
    }

    fn claim_current_cold(&self, lane: usize) -> Option<Job> {
        let mut slot = self.current[lane].borrow_mut();
        let current = slot.as_ref()?;
        if let Some(job) = current.bundle.claim() {
            let stolen = current.stolen;
            drop(slot);
            self.count_claim(lane, stolen);
            return Some(job);
        }
        let done = slot.take().expect("checked above");
        drop(slot);
        self.holding.set(self.holding.get() & !(1 << lane));
        self.registry.release_bundle(done.bundle);
        None
    }

    /// A bundle's entry just taken from a queue (`from`): claims its next job and, if jobs
    /// are left, puts the entry on our deque, where thieves find it, and keeps a handle to
    /// claim the rest from (`claim_current`): one claim per job instead of a push and a pop
    /// (and the pop's fence) per job. `None` if all its jobs were claimed already.
    ///
    /// Never lost: while a bundle has jobs left, its one entry is in a queue (or in the hands
    /// of a worker here, which puts it back before it runs anything), so a worker that runs
    /// a long task, or waits for one of its siblings, leaves them to the others, as a deque
    /// would. The entry is pushed before the wake (F1 of sleep/README.md, as in
    /// `submit_local_batch`).
    fn take_up(&self, entry: Job, lane: usize, from: Took) -> Option<Job> {
        let reg = &*self.registry;
        let bundle = entry.into_bundle();
        let Some(job) = bundle.claim() else {
            reg.bundle_entry_dropped(lane, bundle);
            return None;
        };
        let stolen = from == Took::Stolen;
        self.count_claim(lane, stolen);
        let rest = bundle.remaining();
        if rest == 0 {
            reg.bundle_entry_dropped(lane, bundle);
            return Some(job);
        }
        self.locals[lane].push(Job::bundle_entry(bundle.clone()));
        // Also when the entry came from our own deque: a worker that looked at the queues
        // between our pop and this push may have gone to sleep, and the next job we run may
        // wait for one of its siblings.
        reg.sleep.notify_new_work_n(rest);
        let previous = self.current[lane].replace(Some(Current { bundle, stolen }));
        self.holding.set(self.holding.get() | 1 << lane);
        if let Some(previous) = previous {
            reg.release_bundle(previous.bundle);
        }
        Some(job)
    }

    fn count_claim(&self, lane: usize, stolen: bool) {
        let shard = self.shard();
        shard.lane_owned(LaneStat::Claimed, lane, 1);
        if stolen {
            shard.stat_owned(Stat::Stolen, 1);
        }
    }

    /// `flock::yield_to_lanes` on this worker, from inside a task of the running lane: while
    /// a lane weighted above it has work in our deque or its shared queue and its virtual
    /// clock is behind ours (our lane's clock as if the running task ended now, charged its
    /// own time so far), run one task of the lane furthest behind. So the heavier lanes get
    /// their share of the running task's time, no more: a lane of weight 8 against one of
    /// weight 1 gets up to 8 ns per ns the task has run. Returns how many tasks ran.
    ///
    /// Nesting is bounded: a task run here is of a strictly heavier lane, so at most one
    /// level per distinct weight (16 lanes at most). Nothing from outside starts while the
    /// pool is paused (`execute_unless_paused` re-reads the pause after taking the job).
    pub(crate) fn yield_to_lanes(&self) -> usize {
        let lanes = self.locals.len();
        if lanes < 2 {
            return 0;
        }
        let reg = &*self.registry;
        let current = self.lane.get();
        let weight = reg.cfg.lanes[current].1;
        let vt = &self.vtime;
        let mut ran = 0;
        loop {
            // First what is cheap: is any heavier lane's queue non-empty?
            let mut heavier = 0u32;
            for lane in 0..lanes {
                if reg.cfg.lanes[lane].1 > weight && self.lane_has_work(lane) {
                    heavier |= 1 << lane;
                }
            }
            if heavier == 0 || Registry::paused(reg.control()) {
                return ran;
            }
            let own = reg
                .now_ns()
                .saturating_sub(self.task_start.get())
                .saturating_sub(self.nested_ns.get());
            let ours = vt[current]
                .get()
                .wrapping_add(own.clamp(1, 1 << 40) * reg.lanes[current].stride);
            let mut due: Option<usize> = None;
            for lane in (0..lanes).filter(|l| heavier & (1 << l) != 0) {
                if behind(vt[lane].get(), ours)
                    && due.is_none_or(|d| behind(vt[lane].get(), vt[d].get()))
                {
                    due = Some(lane);
                }
            }
            let Some(lane) = due else {
                return ran;
            };
            let Some(job) = self.take_from_lane(lane) else {
                return ran;
            };
            if !self.execute_unless_paused(job, lane) {
                return ran;
            }
            ran += 1;
        }
    }

    /// Charges `ns` of run time to `lane`'s virtual clock.
    fn charge(&self, lane: usize, ns: u64) {
        // Capped at 2^40 ns (18 minutes) so the product fits: the stride is at most 2^16.
        let cost = ns.clamp(1, 1 << 40) * self.registry.lanes[lane].stride;
        let clock = &self.vtime[lane];
        clock.set(clock.get().wrapping_add(cost));
    }

    /// The oldest entry of `lane`'s shared queue. One at a time, never a batch into our
    /// deque: a batch would sit behind the task we are about to run while idle workers take
    /// younger tasks (and our own pops run it newest first), so tasks of a lane would no
    /// longer start in the order they were submitted (tests/fifo.rs; threadpool's
    /// `test_shrink`). Bulk submissions keep their amortisation through bundles.
    fn steal_from_injector(&self, lane: usize) -> Option<Job> {
        loop {
            match self.registry.lanes[lane].injector.steal() {
                // Counted in `execute` (the `INJECTED` flag).
                Steal::Success(job) => return Some(job),
                Steal::Empty => return None,
                Steal::Retry => std::hint::spin_loop(),
            }
        }
    }

    /// One task from another worker's deque: victims from a random start, lanes in order.
    #[inline(never)]
    fn steal_from_others(&self) -> Option<(Job, usize)> {
        let reg = &*self.registry;
        let lanes = self.locals.len();
        let n = reg.shown_slots();
        if n < 2 {
            return None;
        }
        let start = self.next_random() as usize % n;
        loop {
            let mut retry = false;
            for k in 0..n {
                let victim = (start + k) % n;
                if victim == self.index {
                    continue;
                }
                for lane in 0..lanes {
                    // One task at a time from another worker (as rayon does): its owner keeps
                    // the rest of its deque, and the count is exact.
                    match reg.stealers[victim * lanes + lane].steal() {
                        // A bundle's entry: what we claim from it counts as stolen, job by
                        // job (its owner may go on claiming from it too).
                        Steal::Success(job) if job.flags() & BUNDLE != 0 => {
                            if let Some(job) = self.take_up(job, lane, Took::Stolen) {
                                return Some((job, lane));
                            }
                        }
                        Steal::Success(job) => {
                            self.shard().stat_owned(Stat::Stolen, 1);
                            return Some((job, lane));
                        }
                        Steal::Retry => retry = true,
                        Steal::Empty => {}
                    }
                }
            }
            if !retry {
                return None;
            }
            std::hint::spin_loop();
        }
    }

    fn next_random(&self) -> u64 {
        // xorshift64: cheap, per worker, good enough to spread victims.
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }

    /// Runs one job of `lane` and counts how it ended (never a bundle's entry: those are
    /// taken up where they are found, `take_up`).
    pub(crate) fn execute(&self, job: Job, lane: usize) {
        debug_assert_eq!(job.flags() & BUNDLE, 0, "bundles are taken up, never run");
        let shard = self.shard();
        shard.set_state(WorkerState::Running);
        let flags = job.flags();
        if flags & INJECTED != 0 {
            shard.stat_owned(Stat::FromInjector, 1);
        }
        if flags & RESERVED != 0 {
            self.note_reservation_started();
        }
        if flags & DISCARDABLE != 0 && self.registry.is_stopping_now() {
            self.discard(job);
            return;
        }
        let counted = flags & COUNTED != 0;
        if self.plain {
            return self.run_plain(job, counted);
        }
        if self.timed {
            return self.run_timed(job, counted);
        }
        self.run_tracked(job, lane, counted);
    }

    /// The run of a pool with one lane and no latency tracking: nothing to time, no lane to
    /// switch, no reserve to tell.
    #[inline]
    fn run_plain(&self, job: Job, counted: bool) {
        let result = catch_unwind(AssertUnwindSafe(|| job.run()));
        if let (true, Some(end)) = (counted, self.end_of(result)) {
            self.shard().add_owned(end, 1);
        }
    }

    /// The run of a pool with one lane and latency tracking: `run_tracked` without what
    /// only lanes need (the lane switch, nested time, the reserve, charging): two clock
    /// readings and the two histograms. A task that is not counted is not timed.
    #[inline]
    fn run_timed(&self, job: Job, counted: bool) {
        if !counted {
            return self.run_plain(job, false);
        }
        let reg = &*self.registry;
        let queued_at = job.queued_at_ns();
        let start = reg.now_ns();
        let result = catch_unwind(AssertUnwindSafe(|| job.run()));
        let Some(end) = self.end_of(result) else {
            return;
        };
        let run = reg.now_ns().saturating_sub(start);
        if let Some(latency) = &reg.latency {
            let mine = latency.worker(self.index);
            mine.wait.record_owned(start.saturating_sub(queued_at));
            mine.run.record_owned(run);
        }
        // After the histograms, as in `run_tracked`: a reader that sees the task end sees
        // its times.
        self.shard().add_owned(end, 1);
    }

    /// How a run ended, for the counters (`None`: it was skipped); a panic that escaped the
    /// job is reported.
    #[inline]
    fn end_of(&self, result: std::thread::Result<Outcome>) -> Option<Proto> {
        match result {
            Ok(Outcome::Done) => Some(Proto::Completed),
            Ok(Outcome::Panicked) => Some(Proto::Panicked),
            Ok(Outcome::Skipped) => None,
            Err(payload) => {
                self.registry.report_panic(Some(self.index), payload);
                Some(Proto::Panicked)
            }
        }
    }

    /// The run of a pool with lanes or latency tracking: the task's lane, start and run time
    /// are kept for fair queueing, `yield_to_lanes`, the reserve and the histograms.
    fn run_tracked(&self, job: Job, lane: usize, counted: bool) {
        let shard = self.shard();
        let lanes = self.locals.len() > 1;
        let reg = &*self.registry;
        let queued_at = job.queued_at_ns();
        let start = (lanes || (counted && reg.latency.is_some())).then(|| reg.now_ns());
        let outer_lane = self.lane.replace(lane);
        let outer_nested = self.nested_ns.replace(0);
        let outer_start = self.task_start.replace(start.unwrap_or(0));
        // Tell the lane reserve which lane we run (a nested task's lane while it runs).
        let outer_weight = reg.reserve.as_ref().map(|r| {
            let weight = reg.cfg.lanes[lane].1 as usize;
            let outer = r.publish(self.index, weight);
            r.after_start(reg, weight);
            outer
        });
        let result = catch_unwind(AssertUnwindSafe(|| job.run()));
        if let (Some(reserve), Some(weight)) = (&reg.reserve, outer_weight) {
            reserve.publish(self.index, weight);
        }
        self.lane.set(outer_lane);
        self.task_start.set(outer_start);
        let inner_ns = self.nested_ns.get();
        let end = self.end_of(result);
        let Some(start) = start else {
            self.nested_ns.set(outer_nested);
            if let (true, Some(end)) = (counted, end) {
                shard.add_owned(end, 1);
            }
            return;
        };
        let total = reg.now_ns().saturating_sub(start);
        // Our whole run counts as nested time of the task we run inside, if any.
        self.nested_ns.set(outer_nested + total);
        let counted_end = if counted { end } else { None };
        if let (Some(latency), Some(_)) = (&reg.latency, counted_end) {
            let mine = latency.worker(self.index);
            mine.wait.record_owned(start.saturating_sub(queued_at));
            mine.run.record_owned(total);
        }
        if lanes {
            // Tasks run inside this one (while it waited in `join` or `scope`) were charged
            // to their own lanes already.
            let own = total.saturating_sub(inner_ns);
            self.charge(lane, own);
            if counted_end.is_some() {
                shard.lane_owned(LaneStat::Executed, lane, 1);
                shard.lane_owned(LaneStat::BusyNs, lane, own);
            }
        }
        if let Some(end) = counted_end {
            shard.add_owned(end, 1);
        }
    }

    /// `shutdown_now`: drop a queued task unrun, its destructor included.
    #[cold]
    fn discard(&self, job: Job) {
        if job.discard_counted() {
            self.shard().add_owned(Proto::Dropped, 1);
            self.registry.note_dropped_by_shutdown();
        }
    }

    fn note_reservation_started(&self) {
        let n = self.unflushed.get() + 1;
        if n >= self.registry.flush_threshold {
            self.unflushed.set(0);
            self.registry.release_pending(n);
        } else {
            self.unflushed.set(n);
        }
    }

    fn flush_reservations(&self) {
        let n = self.unflushed.replace(0);
        if n > 0 {
            self.registry.release_pending(n);
        }
    }

    /// Pushes a job onto this worker's own deque of the running task's lane: no lock, no
    /// shared read-modify-write.
    #[inline]
    pub(crate) fn push_local(&self, job: Job) {
        self.locals[self.lane.get()].push(job);
        self.shard().stat_owned(Stat::LocalPushes, 1);
        self.registry.sleep.notify_local_work();
    }

    /// A task submitted from inside the pool: counted on our own shard, onto our own deque
    /// of `lane` (`None`: the running task's lane).
    #[inline]
    pub(crate) fn submit_local(&self, mut job: Job, lane: Option<usize>) {
        let reg = &*self.registry;
        if reg.latency.is_some() {
            job.stamp(reg.now_ns());
        }
        let shard = self.shard();
        shard.add_owned(Proto::Entered, 1);
        shard.stat_owned(Stat::Submitted, 1);
        let lane = lane.unwrap_or(self.lane.get());
        if self.locals.len() > 1 {
            shard.lane_owned(LaneStat::Submitted, lane, 1);
        }
        self.locals[lane].push(job);
        shard.stat_owned(Stat::LocalPushes, 1);
        reg.sleep.notify_local_work();
    }

    /// Many tasks submitted from inside the pool at once (`submit_batch`, `for_each`): one
    /// count, one wake-up call for the lot.
    pub(crate) fn submit_local_batch(
        &self,
        jobs: impl Iterator<Item = Job>,
        lane: Option<usize>,
    ) -> usize {
        let reg = &*self.registry;
        let lane = lane.unwrap_or(self.lane.get());
        let stamp = reg.latency.as_ref().map(|_| reg.now_ns());
        let shard = self.shard();
        let mut n = 0;
        for mut job in jobs {
            if let Some(t) = stamp {
                job.stamp(t);
            }
            // Entered before the push, as in `submit_local` (a thief may run it at once).
            shard.add_owned(Proto::Entered, 1);
            self.locals[lane].push(job);
            n += 1;
        }
        shard.stat_owned(Stat::Submitted, n as u64);
        shard.stat_owned(Stat::LocalPushes, n as u64);
        if self.locals.len() > 1 {
            shard.lane_owned(LaneStat::Submitted, lane, n as u64);
        }
        // F1 and the state test (`notify_new_work_n` fences, also for one job): a task that
        // pushes a batch and then blocks on it needs the other workers to see the pushes
        // (sleep/README.md, "Local pushes and the asymmetric barrier").
        reg.sleep.notify_new_work_n(n);
        n
    }

    /// Pops the most recent job of our own deque of the running task's lane (used by `join`
    /// to take its job back; a bundle's entry there is taken up).
    #[inline]
    pub(crate) fn pop_local(&self) -> Option<Job> {
        self.pop_own(self.lane.get())
    }

    /// The lane of the task running now.
    #[inline]
    pub(crate) fn lane(&self) -> usize {
        self.lane.get()
    }

    /// Runs this pool's tasks until `latch` opens, parking as a listed sleeper when there is
    /// nothing to run (sleep/README.md, "Waiting workers"). The latch may belong to another
    /// pool; its owner must be this worker (`latch::Owner`). While the pool is paused only
    /// tasks that running tasks spawned are run, never ones submitted from outside.
    #[inline]
    pub(crate) fn wait_until(&self, latch: &Latch) {
        if !latch.probe() {
            self.wait_until_cold(latch);
        }
    }

    #[cold]
    fn wait_until_cold(&self, latch: &Latch) {
        let mut searching = false;
        let spin_limit = self.registry.cfg.spin_limit;
        loop {
            // 1. Run what there is, spinning up to `spin_limit` rounds when there is nothing
            // (as an idle worker does before it parks).
            let backoff = Backoff::new();
            let mut rounds = 0;
            loop {
                if latch.probe() {
                    if searching {
                        self.stop_searching();
                    }
                    return;
                }
                if let Some((job, lane)) = self.find_work_while_waiting() {
                    if searching {
                        searching = false;
                        self.stop_searching();
                    }
                    self.execute_unless_paused_waiting(job, lane);
                    backoff.reset();
                    rounds = 0;
                    continue;
                }
                if rounds >= spin_limit {
                    break;
                }
                rounds += 1;
                backoff.snooze();
            }
            // 2. Park where both new work and the latch's set can wake us.
            searching = self.park_waiting(latch, searching);
        }
    }

    /// Runs a job a waiting `join` popped from our deque, unless it came from outside and the
    /// pool is paused: then it goes back to its lane's queue unrun (`resume` wakes everyone
    /// to find it). Returns whether it ran the job.
    #[inline(never)] // off join's hot path: keeps `execute` out of `join_on_worker`
    pub(crate) fn execute_unless_paused_waiting(&self, job: Job, lane: usize) -> bool {
        let reg = &*self.registry;
        if job.flags() & INJECTED != 0 && Registry::paused(reg.control()) {
            reg.lanes[lane].injector.push(job);
            // `resume` may have come between the load and the push: F1 and the state test.
            reg.sleep.notify_new_work();
            return false;
        }
        self.execute(job, lane);
        true
    }

    /// `flock::yield_now` on this worker, inside a task: runs one task of our pool if one is
    /// queued, as a waiting worker does (so while paused only spawned ones). The sleep state
    /// does not change: we are running a task, not searching. Returns whether one ran.
    pub(crate) fn run_one_task(&self) -> bool {
        match self.find_work_while_waiting() {
            Some((job, lane)) => self.execute_unless_paused_waiting(job, lane),
            None => false,
        }
    }

    /// A job to run while waiting: any of our pool's, or while paused only a spawned one (a
    /// job from outside taken as the pool got paused goes back unrun: the caller runs it
    /// through `execute_unless_paused_waiting`, which re-reads the pause after the take).
    fn find_work_while_waiting(&self) -> Option<(Job, usize)> {
        let reg = &*self.registry;
        if Registry::paused(reg.control()) {
            return self.find_spawned_work();
        }
        self.find_work()
    }

    /// Parks a worker waiting for `latch` (sleep/README.md, "Waiting workers"): the steps of
    /// `park`, with the latch's `SLEEPY`/`SLEEPING` around them so that its setter wakes us.
    /// No exit or retire check: we are inside a task. Returns whether we count as a
    /// searcher (always, once we announced ourselves; see `Sleep::cancel_park`).
    fn park_waiting(&self, latch: &Latch, searching: bool) -> bool {
        let sleep = &self.registry.sleep;
        if !latch.get_sleepy() {
            return searching; // set meanwhile: the loop's probe returns
        }
        self.shard().set_state(WorkerState::Parked);
        sleep.announce_parked(self.index, searching);
        // After F2 and the asymmetric barrier: a set after `fall_asleep` sees SLEEPING and
        // wakes us; work pushed before our announcement is visible to the re-check.
        let paused = Registry::paused(self.registry.control());
        if !latch.fall_asleep() || self.waiting_work_visible(paused) {
            latch.wake_up();
            if !sleep.cancel_park(self.index) {
                sleep.park(self.index); // a waker chose us: consume its token
            }
        } else {
            self.shard().stat_owned(Stat::Parks, 1);
            sleep.park(self.index);
            self.shard().stat_owned(Stat::Wakeups, 1);
            latch.wake_up();
        }
        // Still inside the task that waits: it is running again.
        self.shard().set_state(WorkerState::Running);
        true
    }

    /// The re-check of a waiting worker: like `work_visible`, but while paused only the
    /// workers' deques count (the shared queues wait for `resume`, which wakes everyone).
    fn waiting_work_visible(&self, paused: bool) -> bool {
        if cfg!(flock_canary) {
            return false;
        }
        if paused {
            return self.registry.stealers.iter().any(|s| !s.is_empty());
        }
        self.work_visible()
    }

    /// While paused: a job spawned by a running task, from our own deques, then other
    /// workers'. Deques may also hold jobs put back there while paused from the shared queues
    /// (flag `INJECTED`): those were submitted from outside and wait for `resume`, so they
    /// go back to their lane's shared queue (moved, not copied: nothing lost, nothing run
    /// twice; `resume` wakes every worker).
    fn find_spawned_work(&self) -> Option<(Job, usize)> {
        loop {
            let current = self.lane.get();
            let (job, lane) = self.locals[current]
                .pop()
                .map(|job| (job, current))
                .or_else(|| {
                    self.locals
                        .iter()
                        .enumerate()
                        .find_map(|(lane, local)| local.pop().map(|job| (job, lane)))
                })
                .or_else(|| self.steal_from_others())?;
            if job.flags() & INJECTED == 0 {
                return Some((job, lane));
            }
            self.registry.lanes[lane].injector.push(job);
        }
    }
}

/// Whether virtual time `a` is behind `b`, on clocks that wrap (differences stay far below
/// 2^63: a lane with work is served in proportion, one without is brought up to the rest).
fn behind(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}
