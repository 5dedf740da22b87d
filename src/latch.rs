//! A one-shot "done" signal that can be probed, waited on, and freed right after it opens.
//!
//! Latches live inside `join`'s stack jobs and scopes, so the waiter may free the latch the
//! moment it sees it set. The setter therefore does all its work while holding the latch's
//! mutex, and a waiter that saw the flag takes the mutex once before returning: the setter is
//! then past its last touch of the latch (its unlock).

use crate::sync::{AtomicU8, Condvar, Mutex, Ordering};

pub(crate) struct Latch {
    /// Fast-path copy of `*set`, for probing without the lock.
    flag: AtomicU8,
    set: Mutex<bool>,
    cond: Condvar,
}

impl Latch {
    pub(crate) fn new() -> Latch {
        Latch {
            flag: AtomicU8::new(0),
            set: Mutex::new(false),
            cond: Condvar::new(),
        }
    }

    /// Opens the latch and wakes every waiter. After this returns the latch may be gone.
    pub(crate) fn set(&self) {
        let mut set = self.set.lock();
        *set = true;
        // Release: pairs with the Acquire load in `probe`, publishing what the setter wrote
        // before (a join result, a scope's last panic).
        self.flag.store(1, Ordering::Release);
        self.cond.notify_all();
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
        let t = std::thread::spawn(move || l2.set());
        latch.wait();
        assert!(latch.probe());
        t.join().unwrap();
    }
}
