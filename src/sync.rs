//! The one door through which the scheduler reaches atomics, locks and threads.
//!
//! Normally these are `std` atomics and `parking_lot` locks (futex based on Linux). Under
//! `--cfg flock_loom` the same names come from `loom`, so the sleep protocol, `wait` and shutdown can
//! be model-checked without touching their code. Pure statistics (steal and park counts) do not
//! come through here: they stay outside loom so they do not blow up its state space.

#[cfg(not(flock_loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU64, AtomicU8, AtomicUsize, Ordering};
#[cfg(not(flock_loom))]
pub(crate) use std::sync::Arc;

#[cfg(flock_loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU64, AtomicU8, AtomicUsize, Ordering};
#[cfg(flock_loom)]
pub(crate) use loom::sync::Arc;

use std::time::Instant;

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
    pub(crate) use std::thread::JoinHandle;

    #[cfg(flock_loom)]
    pub(crate) use loom::thread::JoinHandle;

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

/// A mutex with `parking_lot`'s shape (no poisoning, `lock()` returns the guard).
pub(crate) struct Mutex<T> {
    #[cfg(not(flock_loom))]
    inner: parking_lot::Mutex<T>,
    #[cfg(flock_loom)]
    inner: loom::sync::Mutex<T>,
}

/// The guard of [`Mutex`].
pub(crate) struct MutexGuard<'a, T> {
    #[cfg(not(flock_loom))]
    inner: parking_lot::MutexGuard<'a, T>,
    #[cfg(flock_loom)]
    inner: Option<loom::sync::MutexGuard<'a, T>>,
}

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex {
            #[cfg(not(flock_loom))]
            inner: parking_lot::Mutex::new(value),
            #[cfg(flock_loom)]
            inner: loom::sync::Mutex::new(value),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        #[cfg(not(flock_loom))]
        {
            MutexGuard {
                inner: self.inner.lock(),
            }
        }
        #[cfg(flock_loom)]
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
        #[cfg(not(flock_loom))]
        {
            &self.inner
        }
        #[cfg(flock_loom)]
        {
            self.inner.as_ref().expect("guard present")
        }
    }
}

impl<T> std::ops::DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        #[cfg(not(flock_loom))]
        {
            &mut self.inner
        }
        #[cfg(flock_loom)]
        {
            self.inner.as_mut().expect("guard present")
        }
    }
}

/// A condition variable paired with [`Mutex`].
pub(crate) struct Condvar {
    #[cfg(not(flock_loom))]
    inner: parking_lot::Condvar,
    #[cfg(flock_loom)]
    inner: loom::sync::Condvar,
}

impl Condvar {
    pub(crate) fn new() -> Self {
        Condvar {
            #[cfg(not(flock_loom))]
            inner: parking_lot::Condvar::new(),
            #[cfg(flock_loom)]
            inner: loom::sync::Condvar::new(),
        }
    }

    pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        #[cfg(not(flock_loom))]
        {
            self.inner.wait(&mut guard.inner);
        }
        #[cfg(flock_loom)]
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
            #[cfg(not(flock_loom))]
            Some(at) => !self.inner.wait_until(&mut guard.inner, at).timed_out(),
            #[cfg(flock_loom)]
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
