//! A one-shot "done" signal that can be probed, waited on, and freed right after it opens.
//!
//! Latches live inside `join`'s stack jobs and scopes, so the waiter may free the latch the
//! moment it sees it set. The setter's very last touch of the latch is therefore a one-byte
//! atomic store to `done`, after its unlock, and `wait` returns only once it sees `done`.
//! `set` takes a raw pointer, not `&self`: a reference argument (or the `MutexGuard`'s
//! reference to the mutex, while the guard drops) stays protected until its function returns,
//! and freeing that memory before then is undefined behaviour. Miri's Stacked Borrows caught
//! both; an `&AtomicU8` has no bytes outside its `UnsafeCell`, so the final store is safe.

use crate::sync::{AtomicU8, Condvar, Mutex, Ordering};

pub(crate) struct Latch {
    /// Fast-path copy of `*set`, for probing without the lock.
    flag: AtomicU8,
    /// Set by the setter after everything else: from then on it does not touch the latch.
    done: AtomicU8,
    set: Mutex<bool>,
    cond: Condvar,
}

impl Latch {
    pub(crate) fn new() -> Latch {
        Latch {
            flag: AtomicU8::new(0),
            done: AtomicU8::new(0),
            set: Mutex::new(false),
            cond: Condvar::new(),
        }
    }

    /// Opens the latch and wakes every waiter. The latch may be freed by a waiter as soon as
    /// the internal unlock happens, before this returns.
    ///
    /// # Safety
    /// `this` points to a live latch.
    pub(crate) unsafe fn set(this: *const Latch) {
        // SAFETY: the caller guarantees the latch is alive; it stays alive while we hold its
        // mutex, because every waiter takes the mutex before it returns (see the module doc).
        let (set_lock, flag, cond) = unsafe { (&(*this).set, &(*this).flag, &(*this).cond) };
        let mut set = set_lock.lock();
        *set = true;
        // Release: pairs with the Acquire load in `probe`, publishing what the setter wrote
        // before (a join result, a scope's last panic).
        flag.store(1, Ordering::Release);
        cond.notify_all();
        drop(set);
        // The last touch. Release: pairs with the Acquire load in `wait`, so a waiter that
        // sees it knows the unlock above is complete.
        // SAFETY: no waiter returns (and frees the latch) before it sees this store.
        unsafe { (*this).done.store(1, Ordering::Release) };
    }

    /// Whether the latch is open. Does not make it safe to free the latch; `wait` does.
    pub(crate) fn probe(&self) -> bool {
        // Acquire: pairs with the Release store in `set`.
        self.flag.load(Ordering::Acquire) == 1
    }

    /// Blocks until the latch opens. On return the setter no longer touches the latch.
    pub(crate) fn wait(&self) {
        let mut set = self.set.lock();
        while !*set {
            self.cond.wait(&mut set);
        }
        drop(set);
        // The setter is past its unlock; only its final store is left.
        while self.done.load(Ordering::Acquire) == 0 {
            crate::sync::thread::yield_now();
        }
    }
}

#[cfg(all(test, not(flock_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn wait_returns_after_set_from_another_thread() {
        let latch = Arc::new(Latch::new());
        assert!(!latch.probe());
        let l2 = latch.clone();
        // SAFETY: `l2` keeps the latch alive.
        let t = std::thread::spawn(move || unsafe { Latch::set(&*l2) });
        latch.wait();
        assert!(latch.probe());
        t.join().unwrap();
    }
}
