//! A one-shot "done" signal in one atomic word, whose waiter may be a worker that keeps
//! running tasks while it waits (see `docs/protocol.md`, "Waiting workers").
//!
//! The word goes `UNSET → SLEEPY → SLEEPING` as its waiter gets ready to park, and to `SET`
//! from any state in one `swap` by the setter. Setting costs that one read-modify-write and
//! nothing else unless the swap returns `SLEEPING`: only then is the waiter woken, through
//! its pool's sleep protocol (a worker) or its thread handle (any other thread).
//!
//! Latches live inside `join`'s stack jobs and scopes, so the waiter may free the latch the
//! moment it sees it set. So the setter's last touch of the latch is the swap itself: what
//! it needs to wake the waiter (a [`Wake`]) is read out of the latch's [`Owner`] *before*
//! the swap, and `set` takes a raw pointer, not `&self` (a reference argument stays
//! protected until its function returns, and freeing its memory before then is undefined
//! behaviour; Miri's Stacked Borrows caught that twice). An `&AtomicUsize` has no bytes
//! outside its `UnsafeCell`, so the swap through it is sound.
//!
//! A scope waits on a [`CountLatch`]: a count of its tasks whose last release sets the
//! latch. A worker keeps the units of the scope tasks that ended on it for its next spawns
//! into that scope ([`Credit`]) and gives them back by the same release.
//!
//! # Safety
//!
//! The `unsafe` blocks here rely on:
//!
//! - **The setter's swap is its last touch.** `Latch::set` and `set_and_wake` take raw
//!   pointers whose callers guarantee the latch (and owner) live until the swap; the waker
//!   is read out of the owner before it, so nothing of either is read after.
//!   `Latch::set_held` and `set_and_wake_held` take references, which keep both alive for
//!   the whole call.
//! - **An owner's pool outlives the set.** `Owner` and `LocalOwner` hold the waiting
//!   worker's registry by address: the waiter is alive until its latch opens, and its
//!   `WorkerThread` holds the registry's `Arc`, so the setter may read it before its swap;
//!   a `Wake::Local` is used only by a setter that runs a job of that same pool, which is
//!   alive while it runs.
//! - **A unit keeps its count latch alive.** Whoever holds units of a `CountLatch` (a task,
//!   the scope's body, a worker's `Credit`) may touch it until its release's decrement;
//!   only the last unit's release touches it after, to set its latch, so `release` takes a
//!   raw pointer.

use crate::job::JobRef;
use crate::registry::Registry;
use crate::sync::thread::{self, Thread};
use crate::sync::{canary, Arc, AtomicUsize, Canary, Ordering};
use crate::worker::WorkerThread;
use std::cell::Cell;
use std::ptr;

const UNSET: usize = 0;
/// The waiter is about to park (listed or listing itself as a sleeper).
const SLEEPY: usize = 1;
/// The waiter parks or is parked: the setter must wake it.
const SLEEPING: usize = 2;
const SET: usize = 3;

pub(crate) struct Latch {
    state: AtomicUsize,
}

impl Latch {
    #[inline]
    pub(crate) fn new() -> Latch {
        Latch {
            state: AtomicUsize::new(UNSET),
        }
    }

    /// Whether the latch is open. Once it returns true the setter no longer touches the
    /// latch, so the caller may free it.
    #[inline]
    pub(crate) fn probe(&self) -> bool {
        // Acquire: pairs with the AcqRel swap in `set`, publishing what the setter wrote
        // before (a join result, a scope's last panic).
        self.state.load(Ordering::Acquire) == SET
    }

    /// `UNSET → SLEEPY`, the waiter's first step towards parking. False if the latch is set.
    pub(crate) fn get_sleepy(&self) -> bool {
        // Relaxed on failure: the caller re-reads the latch with `probe` before returning.
        self.state
            .compare_exchange(UNSET, SLEEPY, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// `SLEEPY → SLEEPING`: from here on a setter wakes the waiter. False if the latch was
    /// set meanwhile (then the waiter must not park).
    pub(crate) fn fall_asleep(&self) -> bool {
        // AcqRel: Release publishes what the waiter registered before (a spawn handle's
        // waker slot); on failure the waiter re-reads with `probe`.
        self.state
            .compare_exchange(SLEEPY, SLEEPING, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Back to `UNSET` after a park that the set did not end (woken for work, or the park
    /// was cancelled). Leaves `SET` alone.
    pub(crate) fn wake_up(&self) {
        let state = self.state.load(Ordering::Relaxed);
        if state == SLEEPY || state == SLEEPING {
            // A failed exchange means the latch was set: exactly what we leave alone.
            let _ = self
                .state
                .compare_exchange(state, UNSET, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// Opens the latch. Returns true if its waiter was asleep (`SLEEPING`), in which case the
    /// caller must wake it with the `Wake` it read out beforehand. The latch may be freed by
    /// its waiter as soon as the swap is done.
    ///
    /// # Safety
    /// `this` points to a live latch.
    #[inline]
    pub(crate) unsafe fn set(this: *const Latch) -> bool {
        // AcqRel: Release pairs with `probe`'s Acquire load (publishing the result); Acquire
        // pairs with `fall_asleep`'s Release (seeing what the waiter registered).
        // SAFETY: the caller guarantees the latch is alive; this swap is our last touch.
        unsafe { (*this).state.swap(SET, Ordering::AcqRel) == SLEEPING }
    }

    /// `set` for a latch the caller's reference keeps alive through the call (a cell it
    /// holds): returns true if its waiter was asleep.
    #[inline]
    pub(crate) fn set_held(&self) -> bool {
        // SAFETY: `self` is alive for the whole call.
        unsafe { Latch::set(self) }
    }

    /// `UNSET → SLEEPING` for a waiter that never parks: a polled future, whose waker the
    /// caller stored in the latch's slot *before* this call (`JoinHandle::poll`). Returns
    /// whether the set is still to come (the state is, or already was, `SLEEPING`: the setter's
    /// swap will return `SLEEPING` and wake what the slot holds); false once the latch is set.
    pub(crate) fn await_set(&self) -> bool {
        // AcqRel: Release publishes the waker stored before (the setter's swap acquires it);
        // Acquire on failure, as `probe`: when it reads SET the caller takes the result.
        match self
            .state
            .compare_exchange(UNSET, SLEEPING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(state) => state != SET,
        }
    }

    /// Blocks a thread that is not a worker of any pool until the latch opens. The latch's
    /// setter must wake it through `Owner::Thread` (the thread's handle).
    pub(crate) fn wait_blocking(&self) {
        let backoff = crossbeam_utils::Backoff::new();
        while !backoff.is_completed() {
            if self.probe() {
                return;
            }
            backoff.snooze();
        }
        // AcqRel: as `fall_asleep` (a thread waiter skips SLEEPY: nothing can wake it but
        // the set). Fails only if the latch is set, and then returns at once, so the failure
        // is Acquire, as `probe`: it pairs with the set's swap and publishes the result
        // (loom caught a Relaxed failure here: the joiner read the task as still pending).
        if let Err(state) =
            self.state
                .compare_exchange(UNSET, SLEEPING, Ordering::AcqRel, Ordering::Acquire)
        {
            debug_assert_eq!(state, SET, "a thread waiter is a latch's only waiter");
            return;
        }
        // `park` may return spuriously, and an `unpark` before it is remembered, so a set
        // that lands between the exchange and the park is not missed.
        while !self.probe() {
            thread::park();
        }
    }
}

/// Who waits on a latch, known when the latch is made; what its setter reads to wake it.
pub(crate) enum Owner {
    /// A worker, woken through its pool's sleep protocol (`Sleep::wake_specific`).
    Worker {
        /// The worker's own `Arc`, inside its `WorkerThread`: alive while the worker waits.
        registry: *const Arc<Registry>,
        index: usize,
        /// The latch is set by a thread of another pool, which does not keep the waiter's
        /// pool alive: it clones the `Arc` before the set (after the set the waiter may
        /// return, and its pool be dropped).
        cross: bool,
    },
    /// Any other thread, parked with `thread::park`.
    Thread(Thread),
}

// SAFETY: `Worker`'s pointer is only read by a latch's setter, before the set, while the
// waiting worker (which owns the `Arc` it points to) is alive; `Arc<Registry>` is Sync.
unsafe impl Send for Owner {}
// SAFETY: as above; `Owner` has no interior mutability.
unsafe impl Sync for Owner {}

impl Owner {
    /// The current thread, as the waiter of a latch that threads of `pool` set.
    pub(crate) fn current(pool: &Registry) -> Owner {
        crate::worker::with_current(|w| match w {
            Some(w) => Owner::Worker {
                registry: w.registry_arc(),
                index: w.index(),
                cross: !w.is_in(pool),
            },
            None => Owner::Thread(thread::current()),
        })
    }

    /// What the setter needs to wake this owner after the latch is gone.
    #[inline]
    pub(crate) fn waker(&self) -> Wake {
        match *self {
            // SAFETY: the waiting worker's `WorkerThread` (which holds this `Arc`) is alive
            // while the latch is unset, and we are called before setting it.
            Owner::Worker {
                registry,
                index,
                cross: true,
            } => Wake::Shared(Arc::clone(unsafe { &*registry }), index),
            // SAFETY: as above; without `cross`, the setter runs a job of the same pool and
            // so holds that pool alive itself (a worker's, the reserve's or a submitter's
            // reference) for as long as it uses this pointer.
            Owner::Worker {
                registry, index, ..
            } => Wake::Local(unsafe { &**registry }, index),
            Owner::Thread(ref t) => Wake::Thread(t.clone()),
        }
    }

    /// An owned copy that keeps the worker's pool alive (for latches whose waiter registers
    /// itself later: a spawned task's handle).
    pub(crate) fn into_owned(self) -> Wake {
        match self {
            // SAFETY: as in `waker`: the worker is alive, we run on it.
            Owner::Worker {
                registry, index, ..
            } => Wake::Shared(Arc::clone(unsafe { &*registry }), index),
            Owner::Thread(t) => Wake::Thread(t),
        }
    }
}

/// A latch's waiter as its setter sees it: what to read, before the set, to wake it after.
pub(crate) trait LatchOwner {
    fn waker(&self) -> Wake;
}

impl LatchOwner for Owner {
    #[inline]
    fn waker(&self) -> Wake {
        Owner::waker(self)
    }
}

/// The owner of a `join`'s stack job on a worker: that worker, of the same pool as every
/// thread that can run the job (it sits on the worker's own deque). Two words and no drop
/// glue, so the fork costs no more than it must (`Owner` has a `Thread` to drop).
#[derive(Clone, Copy)]
pub(crate) struct LocalOwner {
    registry: *const Registry,
    index: usize,
}

impl LocalOwner {
    #[inline]
    pub(crate) fn of(worker: &WorkerThread) -> LocalOwner {
        LocalOwner {
            registry: &**worker.registry_arc(),
            index: worker.index(),
        }
    }
}

impl LatchOwner for LocalOwner {
    #[inline]
    fn waker(&self) -> Wake {
        // As `Owner::Worker` without `cross`: the setter runs a job of this pool.
        Wake::Local(self.registry, self.index)
    }
}

// SAFETY: the pointer is only dereferenced by a setter that runs a job of the pool it points
// to, which keeps it alive (`Owner::waker`); `Registry` is Sync.
unsafe impl Send for LocalOwner {}
// SAFETY: as above; no interior mutability.
unsafe impl Sync for LocalOwner {}

/// How to wake a latch's sleeping waiter, read out of its `Owner` before the set.
pub(crate) enum Wake {
    /// A worker of the pool whose job sets the latch (that pool is alive while it runs).
    Local(*const Registry, usize),
    /// A worker of another pool: our own reference keeps it alive.
    Shared(Arc<Registry>, usize),
    Thread(Thread),
    /// A polled `JoinHandle`'s task, in whatever executor polls it.
    Waker(std::task::Waker),
}

// SAFETY: `Local`'s pointer is only dereferenced while the pool it points to is kept alive by
// the thread holding the `Wake` (see `Owner::waker`), and `Registry` is `Sync`.
unsafe impl Send for Wake {}

impl Wake {
    #[cold]
    pub(crate) fn wake(self) {
        match self {
            // SAFETY: see `Owner::waker`: the setter's own pool, alive while it runs.
            Wake::Local(registry, index) => unsafe { &*registry }.sleep.wake_specific(index),
            Wake::Shared(registry, index) => registry.sleep.wake_specific(index),
            Wake::Thread(t) => t.unpark(),
            // A user's: its panic is caught and reported, the task's outcome unchanged.
            Wake::Waker(w) => crate::wakers::wake_guarded([w]),
        }
    }
}

/// Opens `latch` and wakes its waiter if it sleeps.
///
/// # Safety
/// `latch` and `owner` point to live values that may be freed as soon as the latch is set.
#[inline]
pub(crate) unsafe fn set_and_wake<O: LatchOwner>(latch: *const Latch, owner: *const O) {
    // SAFETY: the caller guarantees both are alive until the set.
    let wake = unsafe { (*owner).waker() };
    // SAFETY: as above.
    if unsafe { Latch::set(latch) } {
        wake.wake();
    }
}

/// Opens `latch` and wakes its waiter if it sleeps, where the caller's references keep
/// both alive through the call (an `Arc` or a cell the caller holds).
#[inline]
pub(crate) fn set_and_wake_held<O: LatchOwner>(latch: &Latch, owner: &O) {
    // SAFETY: references are alive for the whole call, so neither can be freed before the
    // set (nor after it, before we return).
    unsafe { set_and_wake(latch, owner) }
}

/// Waits for `latch`, whose owner is the current thread: a worker (of any pool) runs its
/// own pool's tasks meanwhile and parks as a listed sleeper; any other thread blocks.
pub(crate) fn wait(latch: &Latch) {
    if latch.probe() {
        return;
    }
    crate::worker::with_current(|w| match w {
        Some(w) => w.wait_until(latch),
        None => latch.wait_blocking(),
    });
}

/// A count of units whose last release opens a latch and wakes its owner: a scope's tasks
/// not yet finished, plus one for its body while it runs (`Scope`), some of them kept by
/// workers after the tasks ended there (`Credit`).
pub(crate) struct CountLatch {
    /// Tasks not yet finished, plus one for the scope's body while it runs.
    pending: AtomicUsize,
    latch: Latch,
    /// The thread that runs the body and waits at the end: the latch's setter wakes it.
    owner: Owner,
}

impl CountLatch {
    /// A count of one (the scope's body), waited for by `owner`.
    pub(crate) fn new(owner: Owner) -> CountLatch {
        CountLatch {
            pending: AtomicUsize::new(1),
            latch: Latch::new(),
            owner,
        }
    }

    /// One more unit, for a new task. The caller holds a unit of its own (the body's, or
    /// that of the task calling it).
    #[inline]
    pub(crate) fn add_unit(&self) {
        // Relaxed: the count cannot reach zero concurrently, because the body (or the task
        // calling us) still holds its own unit.
        self.pending.fetch_add(1, Ordering::Relaxed);
    }

    /// `units` units of `pending` are given back; the last one opens the latch.
    ///
    /// # Safety
    /// The caller holds `units` units of `pending`, which keep the scope alive until this
    /// call.
    pub(crate) unsafe fn release(this: *const CountLatch, units: usize) {
        // SAFETY: our units keep the scope alive until the decrement; only the last unit's
        // holder touches the scope after it, and the owner waits for that one's latch.
        unsafe {
            // AcqRel: the last decrement acquires every other task's writes (their Release
            // decrements, and those of workers giving back units kept after their tasks
            // ended) before opening the latch for the scope's owner.
            if (*this).pending.fetch_sub(units, Ordering::AcqRel) == units {
                set_and_wake(&(*this).latch, &(*this).owner);
            }
        }
    }

    /// Waits for the last unit's release (the owner, the current thread: see `wait`).
    pub(crate) fn wait(&self) {
        wait(&self.latch);
    }

    /// The units not yet given back, for `Debug`.
    pub(crate) fn pending(&self) -> usize {
        // Relaxed: a snapshot for a reader; it orders nothing.
        self.pending.load(Ordering::Relaxed)
    }
}

/// Units of one scope's `pending` that a worker holds: those of the scope's tasks that
/// ended on it, kept for its next spawns into that scope instead of being given back one
/// decrement at a time (two read-modify-writes of one cache line per task, shared by every
/// worker of a spawn tree). The rules that keep a scope from waiting on units nobody gives
/// back are in docs/protocol.md, "Scope counts held by workers": they are given back before
/// the worker runs anything but a task of that scope (`enter`, `settle` in `execute`), a
/// waiting worker before it even takes such work up (`gives_back_for`, `wait_until_cold`),
/// and whenever it finds no work (`settle` in `go_idle` and in `wait_until_cold`).
pub(crate) struct Credit {
    /// The scope whose units these are (lifetime erased: only its counter is touched);
    /// meaningful while `units` is non-zero.
    scope: Cell<*const CountLatch>,
    units: Cell<usize>,
}

impl Credit {
    pub(crate) fn new() -> Credit {
        Credit {
            scope: Cell::new(ptr::null()),
            units: Cell::new(0),
        }
    }

    /// Gives every held unit back to its scope (the last one opens its latch).
    #[inline]
    pub(crate) fn settle(&self) {
        if canary(Canary::Credit) {
            return; // loom must then find a scope that never completes (scripts/loom.sh)
        }
        if self.units.get() != 0 {
            self.settle_cold();
        }
    }

    #[cold]
    fn settle_cold(&self) {
        let units = self.units.replace(0);
        // SAFETY: the units we held kept the scope alive; from this call on we hold none
        // and never touch it again.
        unsafe { CountLatch::release(self.scope.get(), units) };
    }

    /// Whether we hold no units (a worker leaves only so).
    pub(crate) fn is_empty(&self) -> bool {
        self.units.get() == 0
    }

    /// Whether running `job` gives our units back first: we hold some and it is not a task
    /// of their scope (a join half, `execute_ref`; another scope's task, `enter`).
    #[inline]
    pub(crate) fn gives_back_for(&self, job: &JobRef) -> bool {
        self.units.get() != 0
            && job
                .scope()
                .is_none_or(|scope| !ptr::eq(scope, self.scope.get().cast()))
    }

    /// One held unit of `scope`'s, for a spawn into it, if we have one.
    #[inline]
    pub(crate) fn take_for(&self, scope: *const CountLatch) -> bool {
        let units = self.units.get();
        if units != 0 && ptr::eq(self.scope.get(), scope) {
            self.units.set(units - 1);
            true
        } else {
            false
        }
    }

    /// A task of `scope` starts here: units of any other scope go back first.
    #[inline]
    pub(crate) fn enter(&self, scope: *const CountLatch) {
        if self.units.get() != 0 && !ptr::eq(self.scope.get(), scope) {
            self.settle_cold();
        }
    }

    /// A task of `scope` ended here: its unit is ours now. (Tasks it ran while it waited
    /// may have left us units of another scope: those go back first.)
    #[inline]
    pub(crate) fn keep(&self, scope: *const CountLatch) {
        self.enter(scope);
        self.scope.set(scope);
        self.units.set(self.units.get() + 1);
    }
}

#[cfg(all(test, not(flock_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_waiter_returns_after_set_from_another_thread() {
        let latch = std::sync::Arc::new(Latch::new());
        let owner = std::sync::Arc::new(Owner::Thread(std::thread::current()));
        assert!(!latch.probe());
        let (l2, o2) = (latch.clone(), owner.clone());
        // SAFETY: `l2` and `o2` keep both alive.
        let t = std::thread::spawn(move || unsafe { set_and_wake(&*l2, &*o2) });
        wait(&latch);
        assert!(latch.probe());
        t.join().unwrap();
    }

    #[test]
    fn set_reports_a_sleeping_waiter_only() {
        let latch = Latch::new();
        assert!(latch.get_sleepy());
        // SAFETY: `latch` is alive.
        assert!(!unsafe { Latch::set(&latch) }, "SLEEPY is not asleep yet");
        assert!(!latch.fall_asleep(), "a set latch cannot fall asleep");
        let latch = Latch::new();
        assert!(latch.get_sleepy() && latch.fall_asleep());
        latch.wake_up();
        assert!(latch.get_sleepy() && latch.fall_asleep());
        // SAFETY: `latch` is alive.
        assert!(unsafe { Latch::set(&latch) });
        latch.wake_up();
        assert!(latch.probe(), "wake_up leaves SET alone");
    }
}
