//! The one door through which the scheduler reaches atomics, locks and threads.
//!
//! Normally these are `std` atomics and `parking_lot` locks (futex based on Linux). Under
//! `--cfg loom` the same names come from `loom`, so the sleep protocol, `wait` and shutdown can
//! be model-checked without touching their code. Pure statistics (steal and park counts) do not
//! come through here: they stay outside loom so they do not blow up its state space.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU64, AtomicU8, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU64, AtomicU8, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Arc;

use std::time::Instant;

/// A mutex with `parking_lot`'s shape (no poisoning, `lock()` returns the guard).
pub(crate) struct Mutex<T> {
    #[cfg(not(loom))]
    inner: parking_lot::Mutex<T>,
    #[cfg(loom)]
    inner: loom::sync::Mutex<T>,
}

/// The guard of [`Mutex`].
pub(crate) struct MutexGuard<'a, T> {
    #[cfg(not(loom))]
    inner: parking_lot::MutexGuard<'a, T>,
    #[cfg(loom)]
    inner: Option<loom::sync::MutexGuard<'a, T>>,
}

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex {
            #[cfg(not(loom))]
            inner: parking_lot::Mutex::new(value),
            #[cfg(loom)]
            inner: loom::sync::Mutex::new(value),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        #[cfg(not(loom))]
        {
            MutexGuard {
                inner: self.inner.lock(),
            }
        }
        #[cfg(loom)]
        {
            MutexGuard {
                inner: Some(self.inner.lock().unwrap()),
            }
        }
    }
}

impl<T> std::ops::Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        #[cfg(not(loom))]
        {
            &self.inner
        }
        #[cfg(loom)]
        {
            self.inner.as_ref().expect("guard present")
        }
    }
}

impl<T> std::ops::DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        #[cfg(not(loom))]
        {
            &mut self.inner
        }
        #[cfg(loom)]
        {
            self.inner.as_mut().expect("guard present")
        }
    }
}

/// A condition variable paired with [`Mutex`].
pub(crate) struct Condvar {
    #[cfg(not(loom))]
    inner: parking_lot::Condvar,
    #[cfg(loom)]
    inner: loom::sync::Condvar,
}

impl Condvar {
    pub(crate) fn new() -> Self {
        Condvar {
            #[cfg(not(loom))]
            inner: parking_lot::Condvar::new(),
            #[cfg(loom)]
            inner: loom::sync::Condvar::new(),
        }
    }

    pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        #[cfg(not(loom))]
        {
            self.inner.wait(&mut guard.inner);
        }
        #[cfg(loom)]
        {
            let g = guard.inner.take().expect("guard present");
            guard.inner = Some(self.inner.wait(g).unwrap());
        }
    }

    /// Waits until notified or `deadline` passes (`None`: no deadline). Returns `false` once
    /// the deadline has passed. Loom has no clock, so under loom this is a plain `wait`.
    pub(crate) fn wait_until<T>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        deadline: Option<Instant>,
    ) -> bool {
        match deadline {
            None => {
                self.wait(guard);
                true
            }
            #[cfg(not(loom))]
            Some(at) => !self.inner.wait_until(&mut guard.inner, at).timed_out(),
            #[cfg(loom)]
            Some(_) => {
                self.wait(guard);
                true
            }
        }
    }

    pub(crate) fn notify_one(&self) {
        self.inner.notify_one();
    }

    pub(crate) fn notify_all(&self) {
        self.inner.notify_all();
    }
}
