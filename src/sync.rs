//! The one door through which the scheduler reaches atomics, locks and threads.
//!
//! Normally these are `std` atomics and `parking_lot` locks (futex based on Linux). Under
//! `--cfg flock_loom` the same names come from `loom`, so the sleep protocol, `wait` and shutdown can
//! be model-checked without touching their code. Pure statistics (steal and park counts) do not
//! come through here: they stay outside loom so they do not blow up its state space.

#[cfg(not(flock_loom))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(not(flock_loom))]
pub(crate) use std::sync::Arc;

#[cfg(flock_loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(flock_loom)]
pub(crate) use loom::sync::Arc;

use std::time::Instant;

/// A cell whose contents a protocol hands from thread to thread (the slots of
/// `submitq::Ring`): std's `UnsafeCell` behind loom's closure-based API, or loom's own, which
/// reports two unsynchronised accesses as a data race.
#[cfg(flock_loom)]
pub(crate) use loom::cell::UnsafeCell;

#[cfg(not(flock_loom))]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(flock_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a pointer to the contents; the caller's protocol makes the access
    /// exclusive.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// `thread_local!` from std, or from loom (whose threads share one OS thread).
macro_rules! facade_thread_local {
    ($(#[$m:meta])* static $name:ident: $t:ty = $init:expr;) => {
        #[cfg(not(flock_loom))]
        std::thread_local! { $(#[$m])* static $name: $t = const { $init }; }
        #[cfg(flock_loom)]
        loom::thread_local! { $(#[$m])* static $name: $t = $init; }
    };
}
pub(crate) use facade_thread_local;

/// Threads: std's, or loom's under `cfg(flock_loom)` (which have no names or stack sizes).
pub(crate) mod thread {
    #[cfg(not(flock_loom))]
    pub(crate) use std::thread::{current, park, JoinHandle, Thread};

    #[cfg(flock_loom)]
    pub(crate) use loom::thread::{current, park, JoinHandle, Thread};

    /// Spawns a thread with the given name and stack size.
    pub(crate) fn spawn<F>(
        name: String,
        stack: Option<usize>,
        f: F,
    ) -> std::io::Result<JoinHandle<()>>
    where
        F: FnOnce() + Send + 'static,
    {
        #[cfg(not(flock_loom))]
        {
            let mut builder = std::thread::Builder::new().name(name);
            if let Some(bytes) = stack {
                builder = builder.stack_size(bytes);
            }
            builder.spawn(f)
        }
        #[cfg(flock_loom)]
        {
            let _ = (name, stack);
            Ok(loom::thread::spawn(f))
        }
    }

    /// Whether a thread has finished (loom cannot tell; it says no).
    pub(crate) fn is_finished(handle: &JoinHandle<()>) -> bool {
        #[cfg(not(flock_loom))]
        {
            handle.is_finished()
        }
        #[cfg(flock_loom)]
        {
            let _ = handle;
            false
        }
    }
}

/// The lock backend: `parking_lot` normally (futex based, no poisoning); loom's under
/// `cfg(flock_loom)`; std's under Miri, whose strict-provenance mode rejects the
/// integer-to-pointer casts inside `parking_lot_core`.
#[cfg(flock_loom)]
use loom::sync as backend;
#[cfg(all(miri, not(flock_loom)))]
use std::sync as backend;

/// A mutex with `parking_lot`'s shape (no poisoning, `lock()` returns the guard).
pub(crate) struct Mutex<T> {
    #[cfg(not(any(flock_loom, miri)))]
    inner: parking_lot::Mutex<T>,
    #[cfg(any(flock_loom, miri))]
    inner: backend::Mutex<T>,
}

/// The guard of [`Mutex`]. Over a std-shaped backend it holds an `Option`, so that
/// `Condvar::wait` can pass the guard by value and put it back.
pub(crate) struct MutexGuard<'a, T> {
    #[cfg(not(any(flock_loom, miri)))]
    inner: parking_lot::MutexGuard<'a, T>,
    #[cfg(any(flock_loom, miri))]
    inner: Option<backend::MutexGuard<'a, T>>,
}

/// A lock result without poisoning: a panic while holding one of flock's locks aborts
/// (`AbortIfPanic`), and user code never runs under them.
#[cfg(any(flock_loom, miri))]
fn unpoison<G>(r: Result<G, std::sync::PoisonError<G>>) -> G {
    r.unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex {
            #[cfg(not(any(flock_loom, miri)))]
            inner: parking_lot::Mutex::new(value),
            #[cfg(any(flock_loom, miri))]
            inner: backend::Mutex::new(value),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        #[cfg(not(any(flock_loom, miri)))]
        {
            MutexGuard {
                inner: self.inner.lock(),
            }
        }
        #[cfg(any(flock_loom, miri))]
        {
            MutexGuard {
                inner: Some(unpoison(self.inner.lock())),
            }
        }
    }
}

impl<T> std::ops::Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        #[cfg(not(any(flock_loom, miri)))]
        {
            &self.inner
        }
        #[cfg(any(flock_loom, miri))]
        {
            self.inner.as_ref().expect("guard present")
        }
    }
}

impl<T> std::ops::DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        #[cfg(not(any(flock_loom, miri)))]
        {
            &mut self.inner
        }
        #[cfg(any(flock_loom, miri))]
        {
            self.inner.as_mut().expect("guard present")
        }
    }
}

/// A condition variable paired with [`Mutex`].
pub(crate) struct Condvar {
    #[cfg(not(any(flock_loom, miri)))]
    inner: parking_lot::Condvar,
    #[cfg(any(flock_loom, miri))]
    inner: backend::Condvar,
}

impl Condvar {
    pub(crate) fn new() -> Self {
        Condvar {
            #[cfg(not(any(flock_loom, miri)))]
            inner: parking_lot::Condvar::new(),
            #[cfg(any(flock_loom, miri))]
            inner: backend::Condvar::new(),
        }
    }

    pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        #[cfg(not(any(flock_loom, miri)))]
        {
            self.inner.wait(&mut guard.inner);
        }
        #[cfg(any(flock_loom, miri))]
        {
            let g = guard.inner.take().expect("guard present");
            guard.inner = Some(unpoison(self.inner.wait(g)));
        }
    }

    /// Waits until notified or `deadline` passes (`None`: no deadline). Returns `false` once
    /// the deadline has passed. Loom has no clock, so under loom this is a plain `wait`.
    pub(crate) fn wait_until<T>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        deadline: Option<Instant>,
    ) -> bool {
        let Some(at) = deadline else {
            self.wait(guard);
            return true;
        };
        #[cfg(not(any(flock_loom, miri)))]
        {
            !self.inner.wait_until(&mut guard.inner, at).timed_out()
        }
        #[cfg(all(miri, not(flock_loom)))]
        {
            let Some(left) = at.checked_duration_since(Instant::now()) else {
                return false;
            };
            let g = guard.inner.take().expect("guard present");
            let (g, timeout) = unpoison(self.inner.wait_timeout(g, left));
            guard.inner = Some(g);
            !timeout.timed_out()
        }
        #[cfg(flock_loom)]
        {
            let _ = at;
            self.wait(guard);
            true
        }
    }

    pub(crate) fn notify_all(&self) {
        self.inner.notify_all();
    }
}

/// A step of a protocol that `scripts/loom.sh` removes, one at a time, to prove that the loom
/// model of that step fails without it (a model that cannot fail checks nothing). Only a loom
/// build can remove one, and only when the process's `FLOCK_LOOM_CANARY` names it, so one
/// loom binary runs the models and all the canaries; in every other build
/// [`canary`] is the constant `false` and the step is always there.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Canary {
    /// `recheck`: the parking worker's (and the waiting worker's) re-check of the queues.
    Recheck,
    /// `push`: the fence after a push onto a worker's own deque.
    Push,
    /// `ring`: the re-check's walk from a submitter ring to the ring it grew into.
    Ring,
    /// `credit`: a worker giving back the units of a scope's count that it keeps.
    Credit,
    /// `room`: releases wake blocked submitters at the low-water mark, not one below it.
    Room,
    /// `undo`: a failed reservation's undo that crosses the low-water mark wakes.
    Undo,
    /// `retiring`: a broadcast calls only slots whose thread runs, not one retiring.
    Retiring,
    /// `era`: a parking worker skips the membarrier only where one covers its own era.
    Era,
    /// `chain`: a searcher that found a task wakes sleepers for the work it saw left.
    Chain,
    /// `claim`: the second of two jobs claimed from a ring at once is announced as a push.
    Claim,
    /// `epoch`: a task group's zero wakes only the waits that began before it.
    Epoch,
    /// `mail`: a worker retires only with its broadcast mailbox empty.
    Mail,
    /// `reclaim`: a retiring worker's jobs put back above its claimed one are announced.
    Reclaim,
    /// `idle`: a retiring worker, as any worker out of work, tells `wait()`ers (`go_idle`).
    Idle,
    /// `exit`: a retiring worker that ends a graceful shutdown's last task wakes the others.
    Exit,
    /// `slot`: a task deque's slot publishes its job with a Release store.
    Slot,
    /// `front`: a job taken as the pool paused and given back unrun goes to the front of its
    /// lane's shared queue (removed: to the back of the lane's injector).
    Front,
    /// `hook`: a retiring worker hands its stop hook's tasks over only while no shutdown has
    /// begun (removed: also after, when the others may have left).
    Hook,
    /// `unfenced`: the searcher that leaves last while `UNFENCED` is set issues the
    /// membarrier before its re-check.
    Unfenced,
}

/// Whether `which` is removed in this process: a loom build with `FLOCK_LOOM_CANARY` naming
/// it. Read once; a name that is no canary panics, so a typo cannot pass for a canary that
/// the models failed to catch.
#[cfg(flock_loom)]
pub(crate) fn canary(which: Canary) -> bool {
    // std's, not loom's: the switch is outside every model and must add no state to it.
    static REMOVED: std::sync::OnceLock<Option<Canary>> = std::sync::OnceLock::new();
    let removed = REMOVED.get_or_init(|| {
        let name = std::env::var("FLOCK_LOOM_CANARY").ok()?;
        Some(match name.as_str() {
            "recheck" => Canary::Recheck,
            "push" => Canary::Push,
            "ring" => Canary::Ring,
            "credit" => Canary::Credit,
            "room" => Canary::Room,
            "undo" => Canary::Undo,
            "retiring" => Canary::Retiring,
            "era" => Canary::Era,
            "chain" => Canary::Chain,
            "claim" => Canary::Claim,
            "epoch" => Canary::Epoch,
            "mail" => Canary::Mail,
            "reclaim" => Canary::Reclaim,
            "idle" => Canary::Idle,
            "exit" => Canary::Exit,
            "slot" => Canary::Slot,
            "front" => Canary::Front,
            "hook" => Canary::Hook,
            "unfenced" => Canary::Unfenced,
            _ => panic!(
                "FLOCK_LOOM_CANARY={name}: no such canary \
                 (recheck, push, ring, credit, room, undo, retiring, era, chain, claim, epoch, mail, reclaim, \
                 idle, exit, slot, front, hook, unfenced)"
            ),
        })
    });
    *removed == Some(which)
}

/// Outside loom no step is ever removed.
#[cfg(not(flock_loom))]
#[inline(always)]
pub(crate) const fn canary(_which: Canary) -> bool {
    false
}
