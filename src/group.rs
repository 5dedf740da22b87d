//! Task groups: `'static` tasks that a caller waits for as a set, without waiting for the
//! rest of the pool. The counting and waking protocol is in `docs/protocol.md`, "Task groups".
//!
//! Each task of a group is a spawned task (`spawn_job`) whose closure carries a [`Ticket`]:
//! one unit of the group's `pending` count, given back when the closure ends, whether it ran,
//! panicked, was cancelled, purged, discarded by `shutdown_now` or refused. So every way a
//! task can end reaches the count through one `Drop`, and no path has to remember it. The
//! group keeps the tasks' handles (for `cancel`), and prunes the finished ones as it goes.

use crate::latch::{self, Latch, Owner};
use crate::registry::{Admission, Registry};
use crate::spawn::{spawn_admitted, spawn_job, JoinHandle};
use crate::sync::{canary, Arc, AtomicU64, AtomicUsize, Canary, Condvar, Mutex, Ordering};
use crate::sys::frames;
use crate::wakers::RoomWakers;
use crate::{LaneId, Pool, RejectReason, SubmitError};
use std::fmt;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc as CellArc;
use std::time::{Duration, Instant};

/// Why a task group's wait did not end cleanly.
///
/// ```
/// let pool = flock::Pool::new();
/// let group = flock::TaskGroup::new(&pool);
/// group.spawn(|| panic!("one bad task"));
/// group.spawn(|| ());
/// assert_eq!(group.wait(), Err(flock::GroupError::Panicked(1)));
/// assert_eq!(group.wait(), Ok(()), "each panic is reported once");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GroupError {
    /// Every task of the group finished, and this many of them panicked since the last wait
    /// that reported panics (a C task that called `flock_task_fail` counts too).
    Panicked(usize),
    /// The time limit of [`TaskGroup::wait_timeout`] passed with tasks still unfinished.
    Timeout,
    /// The wait was called from one of the group's own tasks (or from the destructor of one
    /// that is being dropped unrun): that task is unfinished until the call returns, so the
    /// wait would never end. Refused at once; nothing was waited for.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let pool = flock::Pool::new();
    /// let group = Arc::new(flock::TaskGroup::new(&pool));
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let inner = group.clone();
    /// group.spawn(move || tx.send(inner.wait()).unwrap());
    /// assert_eq!(rx.recv().unwrap(), Err(flock::GroupError::WouldDeadlock));
    /// group.wait().unwrap();
    /// ```
    WouldDeadlock,
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupError::Panicked(n) => write!(f, "{n} task(s) of the group panicked"),
            GroupError::Timeout => f.write_str("the group's tasks did not finish in time"),
            GroupError::WouldDeadlock => {
                f.write_str("waiting on a task group from one of its own tasks would wait forever")
            }
        }
    }
}

impl std::error::Error for GroupError {}

/// A set of `'static` tasks on one pool that can be waited for, cancelled and reused.
///
/// [`wait`](TaskGroup::wait) returns when exactly the group's tasks have finished (tasks
/// they spawn into the group included), not the pool's others. Called from a worker of any
/// pool, the worker runs its own pool's tasks while it waits, so a task that opens a group
/// and waits on it does not hold its worker idle: a nested fan-out completes even on a
/// one-worker pool. Any number of threads may spawn into a group and wait on it at once;
/// each wait returns once the group's count of unfinished tasks was zero at some moment
/// during the call (tasks spawned concurrently may or may not be waited for).
///
/// A wait on a group from one of its own tasks (or from the destructor of one that `cancel`,
/// `purge` or `shutdown_now` drops) would wait for that task itself: it is refused with
/// [`GroupError::WouldDeadlock`].
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// let pool = Arc::new(flock::Pool::builder().workers(1).build()?);
/// let group = flock::TaskGroup::new(&pool);
/// let leaves = Arc::new(AtomicUsize::new(0));
/// for _ in 0..4 {
///     let (pool, leaves) = (pool.clone(), leaves.clone());
///     group.spawn(move || {
///         // A group inside a task: its wait runs the inner tasks on this one worker.
///         let inner = flock::TaskGroup::new(&pool);
///         for _ in 0..8 {
///             let leaves = leaves.clone();
///             inner.spawn(move || { leaves.fetch_add(1, Ordering::Relaxed); });
///         }
///         inner.wait().unwrap();
///     });
/// }
/// group.wait()?;
/// assert_eq!(leaves.load(Ordering::Relaxed), 32);
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// ```
///
/// # Dropping waits
///
/// Dropping the group waits for its unfinished tasks, queued ones included, as
/// [`wait`](TaskGroup::wait) does (a worker that drops it runs its own pool's tasks
/// meanwhile; on a paused pool, tasks not yet started are waited for until
/// [`Pool::resume`]). So when the drop returns, the group's tasks have finished and their
/// effects are visible. To drop the queued tasks instead of running them,
/// [`cancel`](TaskGroup::cancel) first (tokio's `JoinSet` aborts its tasks when dropped;
/// `cancel` then drop is the nearest: running tasks are still waited for). One rule for
/// every flock task group: C's `flock_group_free` and the destructor of C++'s
/// `flock::task_group` wait too (from one of the group's own tasks, where no wait can end,
/// they abort the process instead: their tasks may use memory freed after them). A panic the drop's wait finds is not raised (a destructor
/// must not panic): [`Stats::panicked`](crate::Stats::panicked) counts it, as it counts any
/// task's; call `wait` before the drop to hear about it. From async code, await
/// [`wait_async`](TaskGroup::wait_async) before dropping, so that the drop finds nothing to
/// wait for and does not block the executor.
///
/// Two drops return without waiting, the tasks still running (they own what they use, being
/// `'static`): a drop where `wait` would answer [`GroupError::WouldDeadlock`] (the last
/// handle of an `Arc<TaskGroup>` going inside one of its own tasks, or in the destructor of
/// one being dropped unrun), and a drop while the thread is panicking, which must not block
/// the unwind.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// let pool = flock::Pool::new();
/// let done = Arc::new(AtomicUsize::new(0));
/// {
///     let group = flock::TaskGroup::new(&pool);
///     for _ in 0..4 {
///         let done = done.clone();
///         group.spawn(move || { done.fetch_add(1, Ordering::Relaxed); });
///     }
/// } // dropped here: waits for the four tasks
/// assert_eq!(done.load(Ordering::Relaxed), 4);
/// ```
#[doc(alias = "JoinSet")]
pub struct TaskGroup {
    state: CellArc<GroupState>,
    registry: Arc<Registry>,
}

struct GroupState {
    /// Tasks of the group not yet finished, with the number of times that count went to
    /// zero (its epoch, see [`Pending`]). A task's unit is taken before it can run and given
    /// back (by its `Ticket`) after its closure ended or was dropped.
    pending: AtomicU64,
    /// Tasks that panicked since the last wait that reported them.
    panicked: AtomicUsize,
    /// Waiters without a time limit, each with its own one-shot latch and the epoch it
    /// began in; a task that brings `pending` to zero takes out (and sets the latch of)
    /// every waiter whose epoch has ended.
    waiters: Mutex<Vec<CellArc<Waiter>>>,
    /// Waiters with a time limit sleep here, under `waiters`' lock.
    timed: Condvar,
    /// The handles of tasks not known to be finished, for `cancel`. A handle leaves the list
    /// only under this lock, for good: taken by `cancel`, or dropped because its task has
    /// finished (`Handles::take_finished`). So a `cancel` sees every handle of an unfinished
    /// task kept before it took the lock, whatever waits and spawns run meanwhile.
    handles: Mutex<Handles>,
    /// `TaskGroup::wait_async` futures, woken by `transition_to_idle` after the latches.
    async_waiters: RoomWakers,
}

/// One wait without a time limit: a fresh latch per wait, so the group's count may go to
/// zero and up again any number of times.
struct Waiter {
    latch: Latch,
    owner: Owner,
    /// The epoch of `pending` when the wait listed itself, with tasks unfinished: the zero
    /// that ends this epoch is the one the wait waits for.
    epoch: u64,
}

/// `GroupState::pending` read apart: the low `COUNT_BITS` bits count the unfinished tasks;
/// the bits above are the epoch, which the decrement that brings the count to zero advances
/// in the same atomic step. So a zero is tied to the waits that began before it: a wait that
/// saw the count above zero in epoch `e` is woken by whoever ends epoch `e`, and not by the
/// finisher of an earlier zero that takes the `waiters` lock late.
#[derive(Clone, Copy)]
struct Pending(u64);

impl Pending {
    /// 2^40 unfinished tasks: more than any memory holds (each is a queued job).
    const COUNT_BITS: u32 = 40;
    const ONE: u64 = 1;
    const EPOCH_ONE: u64 = 1 << Self::COUNT_BITS;
    const COUNT_MASK: u64 = Self::EPOCH_ONE - 1;

    fn count(self) -> u64 {
        self.0 & Self::COUNT_MASK
    }

    /// Compared for equality only: it wraps after 2^24 zeros, and a wait is woken by the
    /// first finisher after its epoch ended.
    fn epoch(self) -> u64 {
        self.0 >> Self::COUNT_BITS
    }

    /// One task fewer; the last one also advances the epoch.
    fn finish_one(self) -> Pending {
        debug_assert!(self.count() != 0, "flock: a group's count went below zero");
        if self.count() == 1 {
            Pending((self.0 & !Self::COUNT_MASK).wrapping_add(Self::EPOCH_ONE))
        } else {
            Pending(self.0 - Self::ONE)
        }
    }
}

struct Handles {
    list: Vec<JoinHandle<()>>,
    /// The length at which `keep` next drops the handles of finished tasks.
    prune_at: usize,
}

impl Handles {
    /// Takes the handles of finished tasks out of the list, leaving the others in it. The
    /// caller drops them after unlocking: dropping a handle may drop a panic payload, whose
    /// destructor is the user's.
    fn take_finished(&mut self) -> Vec<JoinHandle<()>> {
        let mut finished = Vec::new();
        let mut i = 0;
        while i < self.list.len() {
            if self.list[i].is_finished() {
                finished.push(self.list.swap_remove(i));
            } else {
                i += 1;
            }
        }
        finished
    }
}

const FIRST_PRUNE: usize = 64;

/// One unit of a group's `pending` count, held by a task's closure.
struct Ticket(CellArc<GroupState>);

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.task_done();
    }
}

/// A task of a group: the user's closure and its ticket. The closure runs, or is dropped
/// unrun, inside an `InGroup` frame, so that a wait on the group from its code or its
/// destructor is refused (`GroupError::WouldDeadlock`) rather than waiting for itself; then
/// the ticket goes, so the group hears the task finished only after its destructor ran.
///
/// Both are `Some` until `run` takes them, or `drop` does for a task dropped unrun.
struct GroupTask<F> {
    f: Option<F>,
    ticket: Option<Ticket>,
}

/// This thread runs a task of the group whose state is at `group` (its closure, or the
/// closure's destructor): a frame (`sys::frames`) for as long as that runs.
struct InGroup {
    group: *const GroupState,
}

impl InGroup {
    /// Whether this thread runs a task of the group whose state is `group` now.
    fn here(group: &GroupState) -> bool {
        frames::any(|f: &InGroup| std::ptr::eq(f.group, group))
    }
}

frames::frame_kind!(
    /// This thread's innermost `InGroup` frame, or null.
    IN_GROUP: InGroup
);

impl<F> GroupTask<F> {
    fn new(f: F, ticket: Ticket) -> Self {
        GroupTask {
            f: Some(f),
            ticket: Some(ticket),
        }
    }

    /// The frame this task's closure runs or is dropped in, while it holds its ticket.
    fn frame(ticket: &Ticket) -> InGroup {
        InGroup {
            group: CellArc::as_ptr(&ticket.0),
        }
    }
}

impl<F: FnOnce()> GroupTask<F> {
    fn run(mut self) {
        let (Some(f), Some(ticket)) = (self.f.take(), self.ticket.take()) else {
            unreachable!("flock: a group task runs once");
        };
        let frame = GroupTask::<F>::frame(&ticket);
        if let Err(payload) = frames::enter(frame, || catch_unwind(AssertUnwindSafe(f))) {
            // Relaxed: the ticket's AcqRel decrement, later in this thread, publishes it.
            ticket.0.panicked.fetch_add(1, Ordering::Relaxed);
            drop(ticket);
            // On to the pool, which counts the task as panicked (the payload goes to the
            // task's handle, dropped with it).
            resume_unwind(payload);
        }
    }
}

/// Dropped unrun (cancelled, purged, discarded by `shutdown_now`, refused): the closure's
/// destructor runs inside the group's frame, then the ticket is given back, also if that
/// destructor panics. After `run` both are gone: nothing to do.
impl<F> Drop for GroupTask<F> {
    fn drop(&mut self) {
        /// Gives the ticket back also if the closure's destructor unwinds.
        struct Back(Option<Ticket>);
        impl Drop for Back {
            fn drop(&mut self) {
                drop(self.0.take());
            }
        }
        let Some(ticket) = self.ticket.take() else {
            return;
        };
        let frame = GroupTask::<F>::frame(&ticket);
        let f = self.f.take();
        let _back = Back(Some(ticket));
        frames::enter(frame, || drop(f));
    }
}

impl GroupState {
    /// A task of the group finished; the last one opens every waiter.
    fn task_done(&self) {
        // AcqRel: the last decrement acquires every task's writes (their Release decrements,
        // all read-modify-writes of one release sequence) and releases them to the waiter,
        // which reads the count with Acquire or through a latch set after this. A CAS, not a
        // `fetch_sub`: the last one advances the epoch in the same step (`Pending`).
        let mut cur = self.pending.load(Ordering::Relaxed);
        loop {
            let next = Pending(cur).finish_one();
            match self.pending.compare_exchange_weak(
                cur,
                next.0,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        if Pending(cur).count() == 1 {
            self.transition_to_idle();
        }
    }

    /// A snapshot of `pending`; Acquire where a zero read must carry the tasks' writes.
    fn pending(&self, order: Ordering) -> Pending {
        Pending(self.pending.load(order))
    }

    /// Unfinished tasks now; Relaxed, as a hint or where the caller orders the read itself.
    fn unfinished(&self) -> u64 {
        self.pending(Ordering::Relaxed).count()
    }

    /// `pending` reached zero: wakes whoever waits (see docs/protocol.md, "Task groups").
    #[cold]
    fn transition_to_idle(&self) {
        let waiters = {
            let mut list = self.waiters.lock();
            self.timed.notify_all();
            // Under the lock, after our decrement: the epoch we read is ours or later. A
            // waiter listed in an epoch that has ended saw its zero (ours or a later one);
            // one listed in the epoch now current began after that zero and waits for the
            // next (its finisher takes this lock after us and reads a later epoch).
            let now = self.pending(Ordering::Relaxed).epoch();
            let (ended, current): (Vec<_>, Vec<_>) = std::mem::take(&mut *list)
                .into_iter()
                .partition(|w: &CellArc<Waiter>| w.epoch != now || canary(Canary::Epoch));
            *list = current;
            ended
        };
        for w in waiters {
            // `w` (an `Arc`) keeps the latch and owner alive through the call.
            latch::set_and_wake_held(&w.latch, &w.owner);
        }
        // After our section under `waiters`' lock: a future that checked `pending` under
        // it before us had stored its waker already (`poll_idle`).
        self.async_waiters.wake_all();
    }
}

impl TaskGroup {
    /// An empty group on `pool`. It keeps the pool's shared state alive, not the pool:
    /// after the pool shuts down, spawns are refused.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let group = flock::TaskGroup::new(&pool);
    /// assert_eq!(group.wait(), Ok(())); // nothing to wait for
    /// ```
    pub fn new(pool: &Pool) -> TaskGroup {
        TaskGroup {
            state: CellArc::new(GroupState {
                pending: AtomicU64::new(0),
                panicked: AtomicUsize::new(0),
                waiters: Mutex::new(Vec::new()),
                timed: Condvar::new(),
                handles: Mutex::new(Handles {
                    list: Vec::new(),
                    prune_at: FIRST_PRUNE,
                }),
                async_waiters: RoomWakers::new(),
            }),
            registry: pool.registry().clone(),
        }
    }

    /// Runs `task` on the group's pool as one of the group's tasks, as
    /// [`Pool::spawn`](crate::Pool::spawn) would (so it blocks the calling thread while a
    /// `Block` pool's queue is full): a task the pool refuses is dropped unrun (and counted
    /// refused by the pool); [`submit`](TaskGroup::submit) hands it back instead.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let group = flock::TaskGroup::new(&pool);
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// group.spawn(move || tx.send(1).unwrap());
    /// group.wait().unwrap();
    /// assert_eq!(rx.recv().unwrap(), 1);
    /// ```
    pub fn spawn<F>(&self, task: F)
    where
        F: FnOnce() + Send + 'static,
    {
        drop(self.submit_in(None, task));
    }

    /// Like [`spawn`](TaskGroup::spawn), into `lane` (see [`Pool::submit_to`]); a task for
    /// a lane the pool lacks is refused and dropped.
    ///
    /// ```
    /// let pool = flock::Pool::builder().lanes(&[("fast", 4), ("slow", 1)]).build().unwrap();
    /// let group = flock::TaskGroup::new(&pool);
    /// group.spawn_to("slow", || ());
    /// group.wait().unwrap();
    /// ```
    pub fn spawn_to<L: LaneId, F>(&self, lane: L, task: F)
    where
        F: FnOnce() + Send + 'static,
    {
        drop(self.submit_to(lane, task));
    }

    /// Like [`spawn`](TaskGroup::spawn), but a task the pool refuses (full, shut down)
    /// comes back in the error, unrun, and is not part of the group.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let group = flock::TaskGroup::new(&pool);
    /// pool.shutdown().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let back = group.submit(move || tx.send(3).unwrap()).unwrap_err();
    /// assert_eq!(back.reason(), flock::RejectReason::Shutdown);
    /// back.into_inner()(); // handed back unrun: run it here
    /// assert_eq!(rx.recv().unwrap(), 3);
    /// ```
    pub fn submit<F>(&self, task: F) -> Result<(), SubmitError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        self.submit_in(None, task)
    }

    /// Like [`submit`](TaskGroup::submit), into `lane` (see [`Pool::submit_to`]).
    ///
    /// ```
    /// let pool = flock::Pool::builder().lanes(&[("fast", 4), ("slow", 1)]).build().unwrap();
    /// let group = flock::TaskGroup::new(&pool);
    /// assert!(group.submit_to("slow", || ()).is_ok());
    /// assert!(group.submit_to("nope", || ()).is_err());
    /// group.wait().unwrap();
    /// ```
    pub fn submit_to<L: LaneId, F>(&self, lane: L, task: F) -> Result<(), SubmitError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        match lane.resolve(&self.registry.cfg.lanes) {
            Some(lane) => self.submit_in(Some(lane), task),
            None => {
                self.registry.count_refused(RejectReason::UnknownLane, 1);
                Err(SubmitError::new(task, RejectReason::UnknownLane))
            }
        }
    }

    /// As `Pool::spawn_in`: onto our own deque on a worker of the pool, else through
    /// admission. The ticket is taken only once the task is sure to be queued or run.
    fn submit_in<F>(&self, lane: Option<usize>, task: F) -> Result<(), SubmitError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        let reg = &self.registry;
        let task = match crate::worker::with_current(|w| match w {
            Some(w) if w.is_in(reg) => {
                let lane = w.local_lane(lane);
                let (job, handle) = spawn_job(reg, lane, self.wrap(task));
                w.submit_local(job, Some(lane));
                Ok(handle)
            }
            _ => Err(task),
        }) {
            Ok(handle) => {
                self.keep(handle);
                return Ok(());
            }
            Err(task) => task,
        };
        let shard = reg.shards.external();
        match reg.admit(shard, Admission::Bounded(reg.cfg.when_full)) {
            Ok(route) => {
                let lane = reg.outside_lane(lane);
                let (job, handle, route) = spawn_admitted(reg, route, lane, self.wrap(task));
                Registry::dispatch(reg, shard, route, job, lane);
                self.keep(handle);
                Ok(())
            }
            Err(reason) => Err(SubmitError::new(task, reason)),
        }
    }

    /// `task` as a task of the group, holding one unit of `pending`.
    fn wrap<F: FnOnce() + Send + 'static>(&self, task: F) -> impl FnOnce() + Send + 'static {
        // Relaxed: the unit is ours until the task ends; a waiter that reads the count before
        // this increment does not wait for this task, which spawning concurrently allows.
        let before = Pending(
            self.state
                .pending
                .fetch_add(Pending::ONE, Ordering::Relaxed),
        );
        assert!(
            before.count() < Pending::COUNT_MASK,
            "flock: a task group holds 2^40 unfinished tasks"
        );
        let task = GroupTask::new(task, Ticket(self.state.clone()));
        move || task.run()
    }

    /// Keeps a task's handle for `cancel`; from time to time drops those of finished tasks
    /// (after unlocking, as `prune`).
    fn keep(&self, handle: JoinHandle<()>) {
        let mut handles = self.state.handles.lock();
        let finished = if handles.list.len() >= handles.prune_at {
            let finished = handles.take_finished();
            handles.prune_at = (handles.list.len() * 2).max(FIRST_PRUNE);
            finished
        } else {
            Vec::new()
        };
        handles.list.push(handle);
        drop(handles);
        drop(finished);
    }

    /// Blocks the calling thread (from async code, await
    /// [`wait_async`](TaskGroup::wait_async) instead) until every task of the group has
    /// finished (run, panicked, or dropped by
    /// [`cancel`](TaskGroup::cancel), [`Pool::purge`] or `shutdown_now`). On a worker of
    /// any pool, the worker runs its own pool's tasks meanwhile. Returns
    /// `Err(GroupError::Panicked(n))` when `n` tasks panicked since the last wait that
    /// reported panics (each is reported to one wait). The group may be reused afterwards.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let group = flock::TaskGroup::new(&pool);
    /// for round in 0..3 {
    ///     let (tx, rx) = std::sync::mpsc::channel();
    ///     group.spawn(move || tx.send(round).unwrap());
    ///     group.wait().unwrap();
    ///     assert_eq!(rx.try_recv().unwrap(), round);
    /// }
    /// ```
    pub fn wait(&self) -> Result<(), GroupError> {
        self.refuse_from_own_task()?;
        // Acquire: pairs with the last task's AcqRel decrement (see `task_done`).
        if self.state.pending(Ordering::Acquire).count() != 0 {
            self.wait_cold();
        }
        self.take_result()
    }

    #[cold]
    fn wait_cold(&self) {
        let owner = Owner::current(&self.registry);
        let waiter = {
            let mut list = self.state.waiters.lock();
            // Under the lock that `transition_to_idle` takes after its decrement: either that
            // decrement is seen here, or the list (with us in it) is seen there.
            let now = self.state.pending(Ordering::Acquire);
            if now.count() == 0 {
                return;
            }
            let waiter = CellArc::new(Waiter {
                latch: Latch::new(),
                owner,
                epoch: now.epoch(),
            });
            list.push(waiter.clone());
            waiter
        };
        // On a worker (of this pool or another) its pool's tasks run here meanwhile.
        latch::wait(&waiter.latch);
    }

    /// Like [`wait`](TaskGroup::wait), for at most `timeout`: `Err(GroupError::Timeout)`
    /// if tasks are still unfinished then. This wait blocks the calling thread and does not
    /// run other tasks meanwhile, also on a worker (so a task waiting so for tasks that only
    /// its own worker could run times out).
    ///
    /// ```
    /// use std::time::Duration;
    /// let pool = flock::Pool::new();
    /// let group = flock::TaskGroup::new(&pool);
    /// let (tx, rx) = std::sync::mpsc::channel::<()>();
    /// group.spawn(move || rx.recv().unwrap());
    /// assert_eq!(group.wait_timeout(Duration::from_millis(10)), Err(flock::GroupError::Timeout));
    /// tx.send(()).unwrap();
    /// assert_eq!(group.wait_timeout(Duration::from_secs(60)), Ok(()));
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> Result<(), GroupError> {
        self.refuse_from_own_task()?;
        let deadline = Instant::now().checked_add(timeout);
        {
            let mut list = self.state.waiters.lock();
            // Acquire, under the lock: as in `wait_cold`; `transition_to_idle` notifies under
            // this lock after its decrement, so a zero is either seen here or notified. A
            // later epoch means the count was zero since this read, as good as a zero seen
            // (and the only sign of one that a spawn undid before we looked); its read still
            // acquires that zero's CAS, the spawns since being RMWs of its release sequence.
            let start = self.state.pending(Ordering::Acquire);
            let idle_since = |now: Pending| now.count() == 0 || now.epoch() != start.epoch();
            if start.count() != 0 {
                loop {
                    let woken = self.state.timed.wait_until(&mut list, deadline);
                    if idle_since(self.state.pending(Ordering::Acquire)) {
                        break;
                    }
                    if !woken {
                        return Err(GroupError::Timeout);
                    }
                }
            }
        }
        self.take_result()
    }

    /// `Err(WouldDeadlock)` on a thread running one of our tasks now (its closure or its
    /// destructor, `GroupTask`): that task is among those the wait would wait for. Only
    /// when the count is not zero: with nothing unfinished there is nothing to wait for,
    /// hence no deadlock (and no thread-local read on the fast path of a finished group).
    #[inline]
    fn refuse_from_own_task(&self) -> Result<(), GroupError> {
        // Relaxed: a task of ours running here holds a unit of `pending`, which this thread
        // took or saw taken before the task started, so it reads non-zero.
        if self.state.unfinished() != 0 && InGroup::here(&self.state) {
            return Err(GroupError::WouldDeadlock);
        }
        Ok(())
    }

    /// The panics since the last report, now reported.
    fn take_result(&self) -> Result<(), GroupError> {
        self.prune();
        match self.state.panicked.swap(0, Ordering::Relaxed) {
            0 => Ok(()),
            n => Err(GroupError::Panicked(n)),
        }
    }

    /// Drops the handles of finished tasks (outside the lock: a panic payload is the user's).
    /// The others never leave the list, so a concurrent `cancel` finds them.
    fn prune(&self) {
        let finished = self.state.handles.lock().take_finished();
        drop(finished);
    }

    /// Drops the group's tasks that have not started: their closures' destructors run here,
    /// each is counted as dropped in [`Stats`](crate::Stats) and gives its place in the
    /// pool's capacity back at once (as [`JoinHandle::cancel`](crate::JoinHandle::cancel)),
    /// and a wait no longer waits for them. Returns how many were dropped. Tasks already
    /// running are not stopped, and tasks spawned concurrently with the call may or may not
    /// be dropped; a task whose spawn returned before the call began is dropped if it has not
    /// started, whatever waits on the group run meanwhile (a wait lets go of finished tasks'
    /// handles only).
    ///
    /// Concurrent calls share the work: each takes the tasks listed when it starts and
    /// returns how many of those it dropped, so the counts add up to the tasks dropped, and a
    /// call that found the list already taken returns 0 at once, while another call may still
    /// be running destructors. No call waits for another: a destructor may itself cancel, or
    /// wait for a thread that does. To know that every dropped task is gone, wait on the group
    /// ([`wait`](TaskGroup::wait) waits for destructors as for tasks).
    ///
    /// A task stays unfinished until its destructor has returned, so from a destructor run
    /// here [`Pool::wait`], [`Pool::wait_for`] and the pool's shutdowns answer
    /// [`WaitError::WouldDeadlock`](crate::WaitError::WouldDeadlock) (as from one of the
    /// pool's tasks), and a wait on this group answers [`GroupError::WouldDeadlock`] (as from
    /// one of its tasks).
    ///
    /// # Panics
    /// If a closure's destructor panics, the others are still dropped, and the first such
    /// panic propagates from here.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(1).build().unwrap();
    /// let group = flock::TaskGroup::new(&pool);
    /// let (go_tx, go) = std::sync::mpsc::channel::<()>();
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// group.spawn(move || { started_tx.send(()).unwrap(); go.recv().unwrap(); });
    /// started.recv().unwrap(); // the only worker is busy
    /// for _ in 0..5 {
    ///     group.spawn(|| unreachable!("dropped by cancel"));
    /// }
    /// assert_eq!(group.cancel(), 5);
    /// go_tx.send(()).unwrap();
    /// group.wait().unwrap();
    /// ```
    pub fn cancel(&self) -> usize {
        let list = std::mem::take(&mut self.state.handles.lock().list);
        let mut dropped = 0;
        let mut first_panic = None;
        // The destructors run here belong to tasks still outstanding: this thread is inside
        // the pool while they run (see `purge.rs`).
        crate::purge::dropping_tasks(&self.registry, || {
            for handle in list {
                match catch_unwind(AssertUnwindSafe(|| handle.cancel())) {
                    Ok(cancelled) => dropped += usize::from(cancelled),
                    Err(payload) => {
                        dropped += 1;
                        match first_panic {
                            None => first_panic = Some(payload),
                            Some(_) => crate::unwind::drop_payload(payload),
                        }
                    }
                }
            }
        });
        if let Some(payload) = first_panic {
            resume_unwind(payload);
        }
        dropped
    }

    /// Tasks of the group not yet finished (a snapshot).
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let group = flock::TaskGroup::new(&pool);
    /// group.spawn(|| ());
    /// group.wait().unwrap();
    /// assert_eq!(group.unfinished(), 0);
    /// ```
    pub fn unfinished(&self) -> usize {
        // Relaxed: a snapshot for a reader; it orders nothing. The count fits: each task is
        // a job in memory.
        usize::try_from(self.state.unfinished()).unwrap_or(usize::MAX)
    }
}

/// Waits for the group's tasks, as [`wait`](TaskGroup::wait) does, but where that wait
/// would be refused (`WouldDeadlock`) or while the thread unwinds: see the type's docs.
impl Drop for TaskGroup {
    fn drop(&mut self) {
        // Acquire: as `wait`'s first read, pairs with the last task's AcqRel decrement, so
        // the tasks' writes are visible once the drop returned.
        if self.state.pending(Ordering::Acquire).count() != 0 {
            self.wait_on_drop();
        }
    }
}

impl TaskGroup {
    /// The drop's wait: `wait` without its report. Skipped on a thread running one of the
    /// group's tasks (its closure or destructor, which the wait would wait for), and while the
    /// thread unwinds: blocking an unwind could hang whatever catches it (a test harness, a
    /// thread's join), and the tasks own what they use (`'static`), so leaving them running
    /// frees nothing they need. Panics of the tasks are not raised here (a destructor must not
    /// panic); the pool has counted them.
    #[cold]
    fn wait_on_drop(&self) {
        if std::thread::panicking() || self.refuse_from_own_task().is_err() {
            return;
        }
        self.wait_cold();
    }
}

/// Shows how many of the group's tasks are unfinished.
impl fmt::Debug for TaskGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskGroup")
            .field("unfinished", &self.unfinished())
            .finish_non_exhaustive()
    }
}

/// `wait_for`, the name `Pool` uses for its `Result` form; and the group side of
/// `TaskGroup::wait_async` (`src/awaits.rs`).
impl TaskGroup {
    /// [`wait_timeout`](TaskGroup::wait_timeout) under the name [`Pool::wait_for`] has: both
    /// wait at most `timeout` and answer a `Result` (`Err(GroupError::Timeout)` when tasks are
    /// still unfinished then). Blocks the calling thread up to `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let pool = flock::Pool::new();
    /// let group = flock::TaskGroup::new(&pool);
    /// group.spawn(|| ());
    /// assert_eq!(group.wait_for(Duration::from_secs(60)), Ok(()));
    /// assert_eq!(pool.wait_for(Duration::from_secs(60)), Ok(()));
    /// ```
    pub fn wait_for(&self, timeout: Duration) -> Result<(), GroupError> {
        self.wait_timeout(timeout)
    }

    /// `wait` as a future's poll: ready with the wait's result once nothing of the group is
    /// unfinished, or once the count has been zero since an earlier poll found it was not
    /// (its epoch, kept in `*epoch`, moved on); else `cx`'s waker is stored under `*id` and
    /// woken by the task that brings the count to zero.
    pub(crate) fn poll_idle(
        &self,
        id: &mut Option<u64>,
        epoch: &mut Option<u64>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), GroupError>> {
        use std::task::Poll;
        self.refuse_from_own_task()?;
        let idle = |now: Pending, epoch: &Option<u64>| {
            now.count() == 0 || epoch.is_some_and(|e| e != now.epoch())
        };
        // Acquire: pairs with the last task's AcqRel decrement (see `task_done`).
        if !idle(self.state.pending(Ordering::Acquire), epoch) {
            self.state.async_waiters.register(id, cx.waker());
            // Under the lock `transition_to_idle` takes after its decrement: either the zero
            // is seen here, or that call's `wake_all` (after its lock) sees our waker.
            let list = self.state.waiters.lock();
            let now = self.state.pending(Ordering::Acquire);
            if !idle(now, epoch) {
                epoch.get_or_insert(now.epoch());
                return Poll::Pending;
            }
            drop(list);
        }
        self.forget_waker(id);
        Poll::Ready(self.take_result())
    }

    /// Drops the waker a `poll_idle` stored under `*id`, if one is still stored.
    pub(crate) fn forget_waker(&self, id: &mut Option<u64>) {
        if let Some(id) = id.take() {
            self.state.async_waiters.unregister(id);
        }
    }
}
