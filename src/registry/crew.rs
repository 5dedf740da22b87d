//! The crew: the workers wanted and the pause (the control word), the worker slots and
//! who runs each, and the threads to join at shutdown. `Registry::resize`
//! (`registry/slots.rs`) drives the slots through this file's transitions; a worker takes
//! its slot's deques when it starts (`take_slot`) and gives them back when it leaves
//! (`leave_slot`); shutdown waits for the workers (`await_workers`) and joins the threads
//! (`join_threads`).

use super::queues::LocalQueues;
use crate::deque::TaskDeque;
use crate::sync::thread::{self, JoinHandle};
use crate::sync::{canary, AtomicUsize, Canary, Condvar, Mutex, MutexGuard, Ordering};
use crossbeam_utils::CachePadded;
use std::time::Instant;

/// The `control` word: the number of workers wanted, shifted left by one, and `PAUSED`.
const PAUSED: usize = 1;

/// What a worker slot is doing. Changed only under `Crew::slots`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    /// No thread; the slot's deques wait in `Slots::deques`.
    Idle,
    /// A thread is being started for the slot and will take its deques (its start may
    /// still fail: `Pool::broadcast` does not call such a slot).
    Starting,
    /// A thread runs the slot: the only state `Pool::broadcast` calls.
    Running,
    /// The slot's thread is retiring (handing its work over, running its stop hook). Also
    /// a thread whose pinning failed, from the moment it takes the slot (`take_slot`).
    Retiring,
    /// The slot's thread left because the pool shut down.
    Exited,
}

/// Worker slots: who runs each, and the deques of slots no thread runs.
pub(crate) struct Slots {
    state: Vec<SlotState>,
    deques: Vec<Option<LocalQueues>>,
    /// The thread running each slot, from the moment it takes the slot until it leaves it.
    threads: Vec<Option<SlotThread>>,
}

impl Slots {
    /// Slots to show in `Stats::per_worker`: up to the last one not idle.
    fn shown(&self) -> usize {
        self.state
            .iter()
            .rposition(|s| *s != SlotState::Idle)
            .map_or(0, |i| i + 1)
    }

    /// The slots a thread runs now (`Running`): those `Pool::broadcast` calls. The slot's
    /// thread holds its index and runs its mailbox before it leaves (`Starting` has no such
    /// thread yet, and may never get one). The `retiring` canary of scripts/loom.sh picks
    /// retiring slots too.
    pub(crate) fn running(&self) -> Vec<usize> {
        (0..self.state.len())
            .filter(|&i| {
                self.state[i] == SlotState::Running
                    || (canary(Canary::Retiring) && self.state[i] == SlotState::Retiring)
            })
            .collect()
    }
}

/// The workers: the control word, the slots and the threads.
pub(crate) struct Crew {
    /// Workers wanted (`<< 1`) and `PAUSED`; read by each worker at each task boundary.
    control: CachePadded<AtomicUsize>,
    slots: Mutex<Slots>,
    slot_cond: Condvar,
    /// One resize at a time (it waits for retiring threads without holding `slots`).
    resizing: Mutex<()>,
    /// `Slots::shown`, readable without the lock.
    shown: AtomicUsize,
    /// Worker threads started and not yet exited.
    live: Mutex<usize>,
    live_cond: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Helper threads (the lane reserve, threads started for one task by `Route::Helper`),
    /// joined after the workers.
    helpers: Mutex<Vec<JoinHandle<()>>>,
}

impl Crew {
    /// A crew with every slot idle, each holding its queues; none wanted yet.
    pub(crate) fn new(deques: Vec<LocalQueues>) -> Crew {
        let slots = deques.len();
        Crew {
            control: CachePadded::new(AtomicUsize::new(0)),
            slots: Mutex::new(Slots {
                state: vec![SlotState::Idle; slots],
                deques: deques.into_iter().map(Some).collect(),
                threads: vec![None; slots],
            }),
            slot_cond: Condvar::new(),
            resizing: Mutex::new(()),
            shown: AtomicUsize::new(0),
            live: Mutex::new(0),
            live_cond: Condvar::new(),
            threads: Mutex::new(Vec::with_capacity(slots)),
            helpers: Mutex::new(Vec::new()),
        }
    }

    // ----- the control word: workers wanted, pause ----------------------------------------

    /// The control word (workers wanted `<< 1`, `PAUSED`). Relaxed: a worker that reads a
    /// stale value acts on it one task later; what must not be missed across parking is
    /// ordered by the `sleepers` lock (see `Registry::resize` and `Registry::set_paused`).
    #[inline]
    pub(crate) fn control(&self) -> usize {
        self.control.load(Ordering::Relaxed)
    }

    /// Whether worker `index` is beyond the number wanted, by a control word.
    #[inline]
    pub(crate) fn retiring(control: usize, index: usize) -> bool {
        index >= control >> 1
    }

    /// Whether a control word has the pool paused.
    #[inline]
    pub(crate) fn paused(control: usize) -> bool {
        control & PAUSED != 0
    }

    pub(crate) fn is_paused(&self) -> bool {
        Crew::paused(self.control.load(Ordering::SeqCst))
    }

    /// The number of workers wanted.
    pub(crate) fn workers(&self) -> usize {
        self.control() >> 1
    }

    fn set_target(&self, n: usize) {
        let mut now = self.control.load(Ordering::Relaxed);
        loop {
            let next = (n << 1) | (now & PAUSED);
            // SeqCst: see `pause`; retiring workers are woken by `wake_all` after this.
            match self
                .control
                .compare_exchange_weak(now, next, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(seen) => now = seen,
            }
        }
    }

    /// Raises `PAUSED`, unless `is_shutdown` says the shutdown began; returns whether it did.
    pub(crate) fn pause(&self, is_shutdown: impl FnOnce() -> bool) -> bool {
        // Under `slots`, as `close` clears the bit: a closing pool drains, so a pause after
        // the shutdown began is ignored (it would leave the drain parked).
        let slots = self.slots.lock();
        if is_shutdown() {
            return false;
        }
        // SeqCst, then the locks: a worker that parks after taking the `sleepers` lock,
        // and a waiter that checks under `wait_lock`, see the bit.
        self.control.fetch_or(PAUSED, Ordering::SeqCst);
        drop(slots);
        true
    }

    /// Clears `PAUSED` (SeqCst: `Registry::set_paused` says what it orders).
    pub(crate) fn resume(&self) {
        self.control.fetch_and(!PAUSED, Ordering::SeqCst);
    }

    /// The crew's part of the shutdown: `raise_flag` runs under `slots`, then the pause is
    /// lifted (a closing pool drains: a graceful shutdown of a paused pool runs its queue)
    /// and a `resize` waiting for a retiring slot is woken, so it sees the flag.
    ///
    /// Under `slots`: a concurrent `resize` either started its threads before (they are
    /// counted in `live`, and shutdown waits for them) or sees the flag and starts none;
    /// a `pause` after the flag sees it (see `pause`).
    pub(crate) fn close(&self, raise_flag: impl FnOnce()) {
        let slots = self.slots.lock();
        raise_flag();
        self.control.fetch_and(!PAUSED, Ordering::SeqCst);
        self.slot_cond.notify_all();
        drop(slots);
    }

    // ----- slots -----------------------------------------------------------------------

    /// The slots, locked: `Pool::broadcast` picks the running ones and fills their
    /// mailboxes under this lock.
    pub(crate) fn lock_slots(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock()
    }

    /// Held for the length of one `Registry::resize`.
    pub(crate) fn one_resize_at_a_time(&self) -> MutexGuard<'_, ()> {
        self.resizing.lock()
    }

    /// The first step of a resize to `n` workers: sets the number wanted, and marks the
    /// slots below `n` that have no thread `Starting` (waiting for those still retiring),
    /// counting them `live`. Returns those slots, to be given threads; `None` if the pool
    /// shut down (`is_shutdown`, checked under `slots`, as `close` raises the flag there),
    /// with nothing changed.
    pub(crate) fn claim_slots(
        &self,
        n: usize,
        is_shutdown: impl Fn() -> bool,
    ) -> Option<Vec<usize>> {
        let mut slots = self.slots.lock();
        if is_shutdown() {
            return None;
        }
        self.set_target(n);
        let mut start = Vec::new();
        for i in 0..n {
            loop {
                match slots.state[i] {
                    SlotState::Running | SlotState::Starting => break,
                    SlotState::Retiring => self.slot_cond.wait(&mut slots),
                    SlotState::Idle | SlotState::Exited => {
                        slots.state[i] = SlotState::Starting;
                        start.push(i);
                        break;
                    }
                }
            }
            if is_shutdown() {
                // `close` raised the flag while we waited for a retiring slot.
                for &j in &start {
                    slots.state[j] = SlotState::Idle;
                }
                return None;
            }
        }
        self.shown.store(slots.shown(), Ordering::Relaxed);
        *self.live.lock() += start.len();
        Some(start)
    }

    /// Slots `claim_slots` marked starting that got no thread go back to idle (their
    /// `live` count is the caller's to give back, `workers_gone`).
    pub(crate) fn unclaim_slots(&self, unstarted: &[usize]) {
        let mut slots = self.slots.lock();
        for &j in unstarted {
            slots.state[j] = SlotState::Idle;
        }
        self.shown.store(slots.shown(), Ordering::Relaxed);
    }

    /// A resize failed at worker `at`: keep the workers below it; those above it retire.
    pub(crate) fn keep_below(&self, at: usize) {
        let slots = self.slots.lock();
        self.set_target(at.max(1));
        drop(slots);
    }

    /// Whether slot `index`'s thread is retiring.
    pub(crate) fn slot_retiring(&self, index: usize) -> bool {
        self.slots.lock().state[index] == SlotState::Retiring
    }

    /// A new worker thread takes its slot's deques and records itself as the slot's thread.
    /// A thread whose pinning failed (`pinned` false) marks the slot `Retiring` at once: it
    /// is never one of the workers, so no broadcast picks it, and a grow that comes before
    /// it has left waits for it and starts a thread of its own (`claim_slots`), where one
    /// that read `Running` would count it as a worker and start none.
    pub(crate) fn take_slot(&self, index: usize, thread: SlotThread, pinned: bool) -> LocalQueues {
        let mut slots = self.slots.lock();
        slots.state[index] = if pinned {
            SlotState::Running
        } else {
            SlotState::Retiring
        };
        slots.threads[index] = Some(thread);
        slots.deques[index]
            .take()
            .expect("flock: a starting slot has its deques")
    }

    /// A worker beyond the number wanted asks to retire; false if the pool grew back
    /// meanwhile, or if `has_mail` (its broadcast mailbox holds a call; run under `slots`,
    /// where broadcasts put theirs): it keeps running, and runs the call while its slot is
    /// still `Running`. A call run after the mark is user code that a `resize` growing the
    /// pool would wait for (`claim_slots` waits for retiring slots): one that blocked until
    /// that resize's thread resumed the pool would hang it (`tests/resize.rs`).
    pub(crate) fn confirm_retire(&self, index: usize, has_mail: impl Fn() -> bool) -> bool {
        let mut slots = self.slots.lock();
        // Also during shutdown: the work it hands over is run by those that stay (at least
        // one worker is always wanted, and none exits while a task is outstanding).
        if Crew::retiring(self.control(), index) && (canary(Canary::Mail) || !has_mail()) {
            slots.state[index] = SlotState::Retiring;
            true
        } else {
            false
        }
    }

    /// Whether `is_shutdown` holds, read under `slots`, where `close` raises the flag. When
    /// it does not, the caller's writes before this call happen before the flag's raise (the
    /// close takes the lock after us), so a worker that sees the flag sees them: a retiring
    /// worker's entries for the tasks its stop hook submitted, before it hands them over
    /// (`WorkerThread::run_what_the_stop_hook_left`).
    pub(crate) fn shut_down_under_slots(&self, is_shutdown: impl FnOnce() -> bool) -> bool {
        let _slots = self.slots.lock();
        is_shutdown()
    }

    /// A worker thread leaves: its deques go back to its slot. `check` runs under `slots`,
    /// before the slot is free to start again. Returns whether it was the last worker to
    /// leave (`live` fell to 0 here).
    pub(crate) fn leave_slot(
        &self,
        index: usize,
        deques: LocalQueues,
        retired: bool,
        check: impl FnOnce(),
    ) -> bool {
        let mut slots = self.slots.lock();
        debug_assert!(
            deques.lanes.iter().all(TaskDeque::is_empty) && deques.joins.is_empty(),
            "flock: a worker left work behind"
        );
        check();
        slots.deques[index] = Some(deques);
        slots.threads[index] = None;
        slots.state[index] = if retired {
            SlotState::Idle
        } else {
            SlotState::Exited
        };
        self.shown.store(slots.shown(), Ordering::Relaxed);
        self.slot_cond.notify_all();
        drop(slots);
        self.workers_gone(1)
    }

    /// Slots `Stats::per_worker` shows.
    #[inline]
    pub(crate) fn shown_slots(&self) -> usize {
        self.shown.load(Ordering::Relaxed)
    }

    /// The thread running each slot now (`None`: no thread has it), for `Stats::per_worker`.
    pub(crate) fn slot_threads(&self) -> Vec<Option<SlotThread>> {
        self.slots.lock().threads.clone()
    }

    // ----- threads ---------------------------------------------------------------------

    /// Keeps a new worker thread's handle, to join at shutdown.
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

    /// Keeps a helper thread's handle, to join after the workers; handles of helpers that
    /// have ended are dropped.
    pub(crate) fn add_helper(&self, handle: JoinHandle<()>) {
        let mut helpers = self.helpers.lock();
        helpers.retain(|h| !thread::is_finished(h));
        helpers.push(handle);
    }

    /// `n` worker threads exited (or never started). Returns whether this call took `live`
    /// to 0: under the `live` lock, so exactly one call does for each time it gets there.
    pub(crate) fn workers_gone(&self, n: usize) -> bool {
        let mut live = self.live.lock();
        *live -= n;
        let none_left = *live == 0;
        if none_left {
            self.live_cond.notify_all();
        }
        none_left
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

/// The thread that runs a slot, as the operating system knows it: recorded by the worker
/// thread itself when it takes its slot (before its start hook) and cleared when it leaves
/// the slot (after its stop hook), so it costs nothing per task.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotThread {
    pub(crate) id: std::thread::ThreadId,
    /// The kernel's id for the thread (`gettid()` on Linux); `None` where it is not cheap.
    pub(crate) os_id: Option<u64>,
    /// `pthread_self()` as an integer, on Unix.
    pub(crate) native: Option<u64>,
}

impl SlotThread {
    /// The calling thread.
    pub(crate) fn current() -> SlotThread {
        SlotThread {
            id: std::thread::current().id(),
            os_id: crate::sys::os_thread_id(),
            native: crate::sys::native_handle(),
        }
    }
}
