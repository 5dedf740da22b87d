//! The worker loop, the third stage of a task's path: a worker thread's state, its start
//! and exit, and `main_loop`, which between tasks honours a pause or a retire, takes a task
//! and runs it, and with none searches, then parks (docs/protocol.md).
//!
//! The stages of the worker side, one file each:
//! - `worker/submit.rs`: a task submitted from inside the pool, onto the worker's own deque;
//! - `worker/find.rs`: finding work (the bundle held, our deque, the broadcast mailbox, the
//!   shared queues, stealing; fair queueing over lanes);
//! - `worker/execute.rs`: running a task and counting how it ended;
//! - `worker/wait.rs`: a worker waiting inside a task (`join`, `scope`) for a latch.
//!
//! The stages before a worker takes a task are the registry's: `registry/admission.rs` and
//! `registry/dispatch.rs`.

use crate::deque::{TaskDeque, Worker as Deque};
use crate::job::{Job, JobRef, INJECTED, UNKEPT};
use crate::latch::Credit;
use crate::metrics::counters::{Stat, WorkerState};
use crate::registry::{Crew, LocalQueues, Registry, Shard, SlotThread};
use crate::slab::Blocks;
use crate::sync::{canary, facade_thread_local, fence, Arc, Canary, Ordering};
use crate::sys::frames::{self, Anchor, Anchored, ArcPart};
use crate::unwind::{call_guarded, AbortIfPanic};
use crossbeam_utils::Backoff;
use std::cell::Cell;
use std::ptr;

mod execute;
mod find;
mod kept;
mod lane_clock;
mod mode;
mod priority;
mod submit;
mod taker;
mod units;
mod wait;

use kept::Kept;
use lane_clock::LaneClock;
use mode::RunMode;
use priority::Priority;
use taker::Taker;
use units::HeldUnits;

facade_thread_local! {
    /// The worker running on this thread, if any; set for the whole life of `main_loop`.
    static CURRENT: Anchor<WorkerThread> = Anchor::new();
}

/// Runs `f` with the current thread's worker, if this thread is a worker of any pool.
/// Inline: on `join`'s path an out-of-line frame here cost ~31 instructions a join.
#[inline]
pub(crate) fn with_current<R>(f: impl FnOnce(Option<&WorkerThread>) -> R) -> R {
    // `CURRENT` holds a worker only while `run` is on this thread's stack, holding it.
    frames::anchored(f)
}

impl Anchored for WorkerThread {
    #[inline]
    fn anchor<R>(f: impl FnOnce(&Anchor<Self>) -> R) -> R {
        CURRENT.with(f)
    }
}

/// The index of the pool worker running the calling thread, or `None` outside any pool.
///
/// ```
/// let pool = flock::Pool::builder().workers(2).build().unwrap();
/// assert_eq!(flock::current_worker_index(), None);
/// let inside = pool.spawn(flock::current_worker_index).join().unwrap();
/// assert!(matches!(inside, Some(0) | Some(1)));
/// ```
#[doc(alias = "current_thread_index")]
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
/// their own lanes, not to the caller's. In a pool built with
/// [`strict_priority`](crate::PoolBuilder::strict_priority) there are no shares: it runs the
/// queued tasks of the heavier lanes, heaviest first (stealing them from other workers too),
/// until none is left, so a steady stream of them keeps the calling task from going on.
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

/// A worker thread's state: its own deques and pool, then its parts, each named for what it
/// keeps (`worker/{mode,taker,kept,lane_clock,units}.rs`).
pub(crate) struct WorkerThread {
    index: usize,
    /// One deque per lane; with one lane (the default) only `locals[0]`.
    locals: Box<[TaskDeque<Job>]>,
    /// `join`'s second halves (`JobRef`), in a pool with one lane (`join.rs`).
    joins: Deque<JobRef>,
    registry: Arc<Registry>,
    /// Our counter shard, `registry.shards.worker(index)`: kept as an address so that a
    /// count on the hot paths is one load and one add, not a load of the shards' slice, a
    /// bounds check and an index.
    shard: ArcPart<Registry, Shard>,
    /// How `execute` runs a task, and whether `join` goes through `joins`.
    mode: RunMode,
    /// What we take from the shared queues and other workers: the probe, the held ring,
    /// the bundles taken up, the steals' random start.
    taker: Taker,
    /// Jobs from outside taken as the pool got paused, run first after the resume
    /// (`keep_for_resume`).
    kept: Kept,
    /// The running task's lane, the per-lane virtual clocks and the task's times.
    clock: LaneClock,
    /// In a strict-priority pool whose lanes differ in weight, the levels its lanes are
    /// served by (`PoolBuilder::strict_priority`); `None` when they share by weight.
    priority: Option<Priority>,
    /// Capacity units of started `RESERVED` jobs not given back yet.
    units: HeldUnits,
    /// How scope tasks spawned here are queued, and their blocks and units kept here.
    scope: ScopeCache,
    /// Fenced local pushes that found a searcher since we last set `UNFENCED`
    /// (`Sleep::notify_local_work`).
    fenced_pushes: Cell<u32>,
}

/// What a worker keeps for the scopes whose tasks it spawns and runs.
struct ScopeCache {
    /// In `RunMode::Plain`, in a pool not built with `fifo()`: scope tasks spawned here take
    /// the two-word path through our join deque (`WorkerThread::spawns_by_ref`).
    spawns_by_ref: bool,
    /// Free blocks for the scope tasks spawned here (`spawns_by_ref`), and for those run here
    /// to give theirs back to.
    blocks: Blocks,
    /// Units of a scope's count kept from its tasks that ended here (`latch::Credit`).
    credit: Credit,
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
    let queues = registry
        .crew
        .take_slot(index, SlotThread::current(), pinned);
    if !pinned {
        // Never one of the workers: the build or resize that started us reports the
        // failure, and we leave at once, running no hook and no task (the slot is already
        // `Retiring`, so no broadcast picked it).
        ready(false);
        if registry.leave_slot(index, queues, true) && registry.is_shutdown() {
            sweep_as_the_last_to_leave(&registry);
        }
        return;
    }
    let LocalQueues {
        lanes: locals,
        joins,
    } = queues;
    let lanes = locals.len();
    // Not `Running` until it takes a task: `Pool::running` counts tasks being run, and a
    // thread just started runs none.
    registry
        .shards
        .worker(index)
        .stats
        .set_state(WorkerState::Spinning);
    ready(true);
    let shard = ArcPart::new(Arc::clone(&registry), |reg| reg.shards.worker(index));
    let mode = RunMode::of(lanes, registry.latency.is_some());
    let worker = WorkerThread {
        mode,
        index,
        locals,
        joins,
        taker: Taker::new(index, lanes),
        kept: Kept::new(),
        clock: LaneClock::new(lanes),
        priority: Priority::of(&registry.cfg.lanes, registry.cfg.strict_priority),
        units: HeldUnits::new(),
        scope: ScopeCache {
            spawns_by_ref: mode.is_plain() && !registry.cfg.fifo,
            blocks: Blocks::new(),
            credit: Credit::new(),
        },
        fenced_pushes: Cell::new(0),
        shard,
        registry,
    };
    // `CURRENT` for the whole of its loop, the start and stop hooks included.
    let retired = CURRENT.with(|current| current.enter(&worker, || serve(&worker, index)));
    let WorkerThread {
        locals,
        joins,
        registry,
        ..
    } = worker;
    let queues = LocalQueues {
        lanes: locals,
        joins,
    };
    if registry.leave_slot(index, queues, retired) && registry.is_shutdown() {
        sweep_as_the_last_to_leave(&registry);
    }
}

/// A worker's life in slot `index`, as `CURRENT`: the start hook, the loop, the stop hook.
/// Returns whether the slot retired.
fn serve(worker: &WorkerThread, index: usize) -> bool {
    let reg = &*worker.registry;
    if let Some(hook) = &reg.cfg.on_worker_start {
        call_guarded("on_worker_start hook", Some(index), || hook(index));
    }
    let mut retired = false;
    let guard = AbortIfPanic("the worker loop");
    loop {
        match worker.main_loop() {
            Exit::Shutdown => break,
            Exit::Retire
                if reg
                    .crew
                    .confirm_retire(index, || reg.queues.mailboxes().has(index)) =>
            {
                retired = true;
                worker.retire();
                break;
            }
            // The pool grew back before we left, or a broadcast reached our mailbox
            // first: carry on (the loop runs the call, then asks again).
            Exit::Retire => {}
        }
    }
    guard.disarm();
    // Shut down while beyond the number wanted (a shrink raced the shutdown): the slot is
    // as good as retired, and `Stats::per_worker` should not show it.
    retired |= Crew::retiring(reg.crew.control(), index);
    if let Some(hook) = &reg.cfg.on_worker_stop {
        call_guarded("on_worker_stop hook", Some(index), || hook(index));
        worker.run_what_the_stop_hook_left(retired);
    }
    debug_assert!(
        canary(Canary::Credit) || worker.credit().is_empty(),
        "flock: a worker left holding a scope's units"
    );
    worker.shard().stats.set_state(WorkerState::Stopped);
    retired
}

/// The last worker out of a pool that shut down empties its queues of the shells of tasks
/// cancelled while queued (`purge::sweep`, whose module docs tell why they must go): also
/// when no `Pool::close` will, as when the pool was dropped from inside one of its tasks
/// (`Drop for Pool` then only begins the shutdown: a thread cannot join itself), and also
/// when a shutdown with a deadline gave up first. A closer's sweep may run at the same
/// time: both take jobs the way thieves do, so each shell is dropped once.
///
/// Why the flag is seen, when it matters: `leave_slot` took `live` to 0 under its lock.
/// Every worker that left through `Exit::Shutdown` saw the flag (`may_exit`) before its own
/// decrement under that lock, so our load after ours sees it too; a pool where none did
/// (every worker retired, or none could be pinned) was not shut down while they ran, and
/// nothing was queued.
///
/// Why `sweep`'s `debug_assert` (nothing dropped but shells) holds here as it does after
/// `Pool::close`: at least one worker is always wanted, so a worker left through
/// `Exit::Shutdown` after it saw `may_exit`, the flag up and nothing outstanding. From then
/// on no counted task can be queued: submits from outside see the external shards closed
/// (the flag is raised after them), a task submitted from a task needs a task running and
/// none is outstanding (a task run off the workers, by a `CallerRuns` caller, a helper
/// thread or the lane reserve, is outstanding until it ends, as one on a worker), no worker
/// can start (`resize` checks the flag under `slots`, which `begin_shutdown` holds while it
/// raises it), and what an `on_worker_stop` hook submits goes onto its own worker's deques,
/// which that worker runs before it leaves once the flag is up (`run_what_the_stop_hook_left`).
/// A retiring worker handed its deques over before leaving (its hook's tasks too, when it
/// saw the flag down), and what it handed over was outstanding.
/// So what is left are jobs that count as finished already: the shells.
///
/// The registry cannot be freed under the sweep: `registry` is this worker's own `Arc`.
#[cold]
fn sweep_as_the_last_to_leave(registry: &Arc<Registry>) {
    crate::purge::sweep(registry);
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

    /// This worker's cache of blocks for scope tasks (`slab.rs`).
    #[inline]
    pub(crate) fn blocks(&self) -> &Blocks {
        &self.scope.blocks
    }

    /// The units of a scope's count this worker holds (`latch::Credit`).
    #[inline]
    pub(crate) fn credit(&self) -> &Credit {
        &self.scope.credit
    }

    /// The lane of the task running now.
    #[inline]
    pub(crate) fn lane(&self) -> usize {
        self.clock.lane()
    }

    /// The lane a task submitted here goes to: `lane`, or if `None` the running task's.
    #[inline]
    pub(crate) fn local_lane(&self, lane: Option<usize>) -> usize {
        lane.unwrap_or(self.clock.lane())
    }

    #[inline]
    fn shard(&self) -> &Shard {
        &self.shard
    }

    fn main_loop(&self) -> Exit {
        let reg = &*self.registry;
        let sleep = &reg.sleep;
        let mut searching = false;
        'outer: loop {
            // Between tasks: the one place a worker retires or honours a pause.
            let control = reg.crew.control();
            if self.retires(control) {
                if searching {
                    searching = false;
                    self.stop_searching();
                }
                // Broadcast calls for us, and the second of two jobs we claimed from a
                // ring, run first, as any task: our slot is still running, so a `resize`
                // that grows the pool meanwhile does not wait for them (`confirm_retire`
                // lets us go only with an empty mailbox; `take_claimed`).
                if let Some(job) = reg.queues.mailboxes().take(self.index) {
                    self.execute(job, 0);
                    continue;
                }
                if let Some(job) = self.take_claimed() {
                    self.execute_unless_paused(job, 0);
                    continue;
                }
                return Exit::Retire;
            }
            if Crew::paused(control) {
                self.go_idle();
                match self.park(searching) {
                    Parked::Resume { searching: s } => searching = s,
                    Parked::Exit => return Exit::Shutdown,
                }
                continue;
            }
            // Our join deque first: between tasks it holds scope tasks our last task spawned
            // (`spawns_by_ref`), which run on the two-word path (`execute_ref`).
            if let Some(job) = self.pop_own_ref() {
                if searching {
                    searching = false;
                    self.stop_searching();
                }
                self.execute_ref(job);
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
                searching = sleep.transition_to_searching(reg.crew.workers());
            }
            if searching {
                self.shard().stats.set_state(WorkerState::Spinning);
                let backoff = Backoff::new();
                for _ in 0..reg.cfg.spin_limit {
                    backoff.snooze();
                    // A long `spin_limit` must delay neither a shutdown (parking is where a
                    // worker checks whether it may exit) nor a pause or resize (decided at
                    // the top).
                    if reg.is_shutdown() {
                        break;
                    }
                    if reg.crew.control() != control {
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
    /// was paused meanwhile: then we keep it (`keep_for_resume`) and the loop's top parks us.
    /// This re-read is what makes "no task submitted from outside after `pause()` returned
    /// starts": taking such a task synchronises with its push, which follows the pause's
    /// store, so this load sees `PAUSED`. Jobs spawned by running tasks still run (a `join`
    /// or `scope` may be waiting for them, as in `wait_until`). Returns whether it ran the
    /// job.
    #[inline(never)]
    fn execute_unless_paused(&self, job: Job, lane: usize) -> bool {
        if job.flags() & INJECTED != 0 && Crew::paused(self.registry.crew.control()) {
            self.keep_for_resume(job, lane);
            return false;
        }
        self.execute(job, lane);
        true
    }

    /// Keeps a job from outside that we took as the pool got paused, to run it first once
    /// the pause is lifted (`kept`). Not onto a queue: there a worker could take its
    /// submitter's later jobs from their ring before it (with one worker too, once a queue
    /// moved it to the injector).
    ///
    /// `Registry::kept` counts it, for `wait()`, which returns `WaitError::Paused` rather
    /// than wait for a job that will not start before a resume: after the count, as a worker
    /// that goes idle, we tell the waiters (`go_idle`'s pairing).
    #[cold]
    pub(crate) fn keep_for_resume(&self, job: Job, lane: usize) {
        self.kept.push(job, lane);
        let reg = &*self.registry;
        reg.queues.lane(lane).keep_one();
        // Pairs with the waiter's SeqCst `waiters` increment, as in `go_idle`.
        fence(Ordering::SeqCst);
        if reg.quiet.has_waiters() {
            reg.notify_waiters();
        }
    }

    /// The oldest job we keep from a pause, if any (`find_work` hands it out first).
    #[cold]
    pub(crate) fn take_kept(&self) -> Option<(Job, usize)> {
        let oldest = self.kept.pop_oldest();
        if let Some((_, lane)) = oldest {
            self.registry.queues.lane(lane).unkeep_one();
        }
        oldest
    }

    /// After the `on_worker_stop` hook: what it submitted went onto our deques (a submit from
    /// a worker is local, never refused), where it would have stayed when our thread exits.
    ///
    /// A worker that `retired` hands it over to the workers that stay, as it did its other
    /// queued work (`retire`), unless a shutdown has begun: a task run here, after our slot
    /// was marked retiring, held a `resize` that grows the pool back over our slot, which
    /// waits for us to leave; one that blocked until a pause ended held the thread that
    /// would resume (tests/resize.rs, found by the torture test). The flag is read under
    /// `slots` (`Crew::shut_down_under_slots`): seen down, every worker that later sees it
    /// raised also sees our entries for those tasks, so none exits before they have run.
    /// A job from outside that the hook claimed with another (`yield_now`, `took_two`) goes
    /// to the front of its lane's shared queue, as a kept one does, ahead of its
    /// submitter's later jobs ("FIFO within a lane").
    ///
    /// Otherwise (a shutdown: the other workers may have left already) we run it here,
    /// with what it submits in turn, before we leave; a thief of a worker still running may
    /// take some.
    /// A job from outside that the hook or those tasks took (waiting, or in `yield_now`) just
    /// as the pool got paused is kept for the resume (`keep_for_resume`), which we do not
    /// wait for: it goes to the front of its lane's shared queue (`put_back_kept`), as
    /// `hand_over_work` sends what we kept before (left in our keep, it was dropped unrun
    /// with our thread and stayed counted in flight, so `wait()` never returned:
    /// tests/stop_hook_keep.rs). Then, as a retiring
    /// worker, we tell `wait()`ers and, if we ended the last task of a shutdown, wake the
    /// workers that parked while it was outstanding.
    fn run_what_the_stop_hook_left(&self, retired: bool) {
        let reg = &*self.registry;
        // The `hook` canary hands them over during a shutdown too, to prove that
        // `loom_a_retiring_workers_stop_hook_task_races_a_shutdown` needs the check.
        if retired
            && (canary(Canary::Hook) || !reg.crew.shut_down_under_slots(|| reg.is_shutdown()))
        {
            if let Some(job) = self.take_claimed() {
                reg.put_back_paused(0, vec![job]);
            }
            self.retire();
            return;
        }
        let mut ran = false;
        loop {
            if let Some(job) = self.pop_own_ref() {
                self.execute_ref(job);
            } else if let Some((job, lane)) = (self.locals.iter().enumerate())
                .find_map(|(lane, local)| local.pop().map(|job| (job, lane)))
            {
                self.execute(job, lane);
            } else {
                break;
            }
            ran = true;
        }
        // Also when nothing ran: the hook itself may have yielded.
        let handed = self.put_back_kept();
        if ran || handed {
            self.go_idle();
            // After `go_idle`'s SeqCst fence, as for a retiring worker (`main_loop`'s caller).
            if reg.may_exit() {
                reg.sleep.wake_all();
            }
        }
    }

    /// Leaves the loop for good, our slot marked retiring (no broadcast picks it now, and
    /// none waits in our mailbox): hands our work over (`hand_over_work`).
    fn retire(&self) {
        self.hand_over_work();
        // A graceful shutdown may be waiting for the task we just finished: a worker that
        // woke for it and still saw that task outstanding parked again, and only a worker
        // that sees `may_exit` wakes the others (in `park`, after F2). We leave without
        // parking, so we look here, after `go_idle`'s SeqCst fence: either we see the flag
        // and nothing outstanding and wake everyone, or a parking worker's check after its
        // F2 sees our task's end (tests/threadpool_suite.rs; the loom model
        // `loom_retiring_worker_ends_the_last_task_of_a_shutdown` deadlocks without this,
        // the `exit` canary).
        let reg = &*self.registry;
        if reg.may_exit() && !canary(Canary::Exit) {
            reg.sleep.wake_all();
        }
    }

    /// Retiring: every task still in our deques goes to its lane's shared queue, for the
    /// workers that stay. Called between tasks, so no `join` of ours is waiting on any of
    /// them; each is moved, not copied, so none runs twice and none is lost.
    fn hand_over_work(&self) {
        let reg = &*self.registry;
        // No broadcast call waits for us: our slot was marked retiring with the mailbox
        // empty (`confirm_retire`), and no broadcast picks it since.
        debug_assert!(
            canary(Canary::Mail) || !reg.queues.mailboxes().has(self.index),
            "flock: a broadcast call reached a retiring worker's hand-over"
        );
        // A bundle we claimed from keeps its entry on the front of its lane's shared queue
        // while it has jobs: letting go of our handle leaves them to the others there.
        for lane in 0..self.locals.len() {
            if let Some(bundle) = self.taker.let_go(lane) {
                reg.release_bundle(bundle);
            }
        }
        // Jobs we keep from a pause go to the front of their lanes' shared queues
        // (`put_back_kept`).
        self.put_back_kept();
        let mut moved = Vec::new();
        for (lane, local) in self.locals.iter().enumerate() {
            while let Some(job) = local.pop() {
                // `main_loop` ran a claimed job before it let us retire (`take_claimed`).
                debug_assert!(
                    job.flags() & INJECTED == 0,
                    "flock: a claimed job reached a retiring worker's hand-over"
                );
                moved.push((job, lane));
            }
        }
        // Scope tasks our last task spawned (join halves there are none: no join is on our
        // stack). Join deques exist in one-lane pools only.
        while let Some(job) = self.joins.pop() {
            moved.push((job.into_job(), 0));
        }
        // Spawned jobs all (the one from outside a deque of ours can hold ran before we
        // retired): to their lanes' `spawned` queues, where a task waiting for one in a
        // paused pool finds it (`Registry::hand_back`).
        reg.hand_back(moved);
        // As any worker that runs out of work: give capacity back and tell `wait()`ers (the
        // task we finished last may have been the one they wait for; loom found that a
        // retiring worker skipping this left `wait` asleep forever; the `idle` canary).
        if !canary(Canary::Idle) {
            self.go_idle();
        }
    }

    /// About to retire: the second of two jobs we claimed from a ring (`took_two`; the one
    /// job from outside, flag `INJECTED`, that a deque of ours can hold), if no thief took
    /// it, off our deque, for `main_loop` to run before we retire. Handed over with our deque
    /// it would wait on the lane's injector behind its submitter's later jobs, which the
    /// workers that stay take from the ring first ("FIFO within a lane"; `tests/fifo.rs`).
    /// It runs as any task, before our slot is marked retiring: a task run after that mark
    /// (in `hand_over_work`) that blocked until a pause ended held a `resize` that grows the
    /// pool, which waits for a retiring slot, and with it the thread that would resume
    /// (`tests/resize.rs`). If a pause landed, `execute_unless_paused` keeps it, and it goes
    /// over with the kept jobs.
    ///
    /// The claim was made on an empty deque (`find_work` pops ours first), so the job is
    /// the oldest there: the jobs above it (spawned since) are popped, then pushed back in
    /// their order and announced as any push, since a worker that looked while they were
    /// off may have gone to sleep, and the claimed job may block on one of them. Cold: only
    /// a one-lane pool's worker that a shrink retires with jobs on its deque comes here.
    #[cold]
    fn take_claimed(&self) -> Option<Job> {
        if self.locals.len() != 1 || self.locals[0].is_empty() {
            return None;
        }
        let mut above = Vec::new();
        let mut claimed = None;
        while let Some(job) = self.locals[0].pop() {
            if job.flags() & INJECTED != 0 {
                claimed = Some(job);
                break;
            }
            above.push(job);
        }
        if !above.is_empty() {
            for job in above.into_iter().rev() {
                self.locals[0].push(job);
            }
            // The `reclaim` canary drops this to prove the loom model needs it
            // (`loom_a_retiring_worker_runs_its_claimed_job_from_under_a_pushed_one`).
            if !canary(Canary::Reclaim) {
                self.notify_local_work();
            }
        }
        claimed
    }

    /// Every job we keep from a pause, for a worker that leaves: to the front of their
    /// lanes' shared queues, in the order we took them, for the workers that stay
    /// (`Registry::put_back_paused`); a leaving worker does not wait for the resume (a
    /// `resize` that grows the pool waits for it). Each starts there before the later jobs
    /// of its submitter still queued; a later one that a worker that stays took in the same
    /// instant, and keeps for the resume itself, starts first (README, "FIFO within a lane").
    /// Returns whether there was any.
    fn put_back_kept(&self) -> bool {
        if !self.kept.any() {
            return false;
        }
        let mut by_lane: Vec<Vec<Job>> = (0..self.locals.len()).map(|_| Vec::new()).collect();
        while let Some((mut job, lane)) = self.take_kept() {
            job.remove_flags(UNKEPT); // not for our keep: another worker's may take it
            by_lane[lane].push(job);
        }
        for (lane, jobs) in by_lane.into_iter().enumerate() {
            self.registry.put_back_paused(lane, jobs);
        }
        true
    }

    /// Leaves the Searching state after finding a task; the last searcher keeps the promise of
    /// docs/protocol.md by waking more workers if work is still queued (the chain: up to two,
    /// at least one when none searches; `Sleep::wake_for_found_work`).
    ///
    /// "Queued" means in any queue, other workers' deques included: jobs a task spawned
    /// there are found only by a searcher if that worker then runs a long (or blocking)
    /// task. Looking only at our own deque and
    /// the shared queues left such jobs unrun while workers slept (tests/resize.rs, four
    /// tasks that wait for each other on four workers).
    fn stop_searching(&self) {
        let reg = &*self.registry;
        let last = reg.sleep.transition_from_searching();
        // Not the last searcher: no promise to keep, but with sleepers and work visible, a
        // wake now ramps the pool up faster (each finder wakes up to two, so the awake
        // workers double each hop instead of growing by one). One Relaxed load when nobody
        // sleeps, as in a busy pool.
        // The `chain` canary removes the wake to prove the loom models catch its loss
        // (scripts/loom.sh).
        if (last || reg.sleep.anyone_asleep()) && !canary(Canary::Chain) && self.work_visible() {
            reg.sleep.wake_for_found_work(reg.crew.workers());
        }
    }

    /// Whether we leave our loop to retire (a shrink wants fewer workers than our index), as
    /// `control` says. Not during a shutdown: a retiring worker hands its work to those that
    /// stay, but then every worker leaves once nothing is outstanding, and one that already
    /// left may have had its `on_worker_stop` hook submit a task we stole since, whose spawns
    /// we would hand to nobody. So we run on, and leave when the others do, on `may_exit`
    /// (loom: `loom_a_stop_hook_task_stolen_by_a_retiring_worker`). A retire decided before
    /// we saw the flag hands over only tasks outstanding since before any worker saw nothing
    /// outstanding, which the workers still in their loop run.
    #[inline]
    fn retires(&self, control: usize) -> bool {
        Crew::retiring(control, self.index) && !self.registry.is_shutdown()
    }

    /// Out of work: give back capacity units and tell `wait()`ers.
    fn go_idle(&self) {
        // Units of a scope kept from its tasks: nothing runs here now that could give them
        // back later (docs/protocol.md, "Scope counts held by workers").
        self.credit().settle();
        // What comes next does not start where the last task ended (`run_timed`).
        self.clock.clear_last_end();
        self.give_back_held_units();
        // Pairs with the waiter's SeqCst `waiters` increment in `Quiet::wait`:
        // either it sees our finish counts or we see it registered.
        fence(Ordering::SeqCst);
        if self.registry.quiet.has_waiters() {
            self.registry.notify_waiters();
        }
    }

    /// Steps 1-5 of "Parking" in docs/protocol.md.
    fn park(&self, searching: bool) -> Parked {
        let reg = &*self.registry;
        let sleep = &reg.sleep;
        self.shard().stats.set_state(WorkerState::Parked);
        self.shard().stats.stat_owned(Stat::ParkAttempts, 1);
        let ordered = sleep.announce_parked(self.index, searching);
        let exit = reg.may_exit();
        // After F2, so a `resize` or `resume` whose `wake_all` missed us is seen here.
        let control = reg.crew.control();
        let kept = self.kept.any();
        let retire = self.retires(control);
        // The re-check of step 3. The `recheck` canary removes it to prove the loom models
        // catch a lost wake-up (scripts/loom.sh). While paused, queued work is not ours to
        // start: `resume` wakes everyone. A job we keep from a pause is in no queue: a
        // resume whose `wake_all` came before our announcement is seen here, in `control`.
        if exit
            || retire
            || (!canary(Canary::Recheck) && !Crew::paused(control) && (kept || self.work_visible()))
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
        self.shard().stats.stat_owned(Stat::Parks, 1);
        sleep.park_announced(self.index, ordered);
        self.shard().stats.stat_owned(Stat::Wakeups, 1);
        Parked::Resume { searching: true }
    }

    /// Whether any queue holds a job (the re-check after announcing sleep), our broadcast
    /// mailbox included.
    fn work_visible(&self) -> bool {
        let reg = &*self.registry;
        reg.queues.lanes().iter().any(|l| !l.shared().is_empty())
            || reg.queues.deques_hold_work()
            || reg.queues.mailboxes().has(self.index)
    }
}
