//! The capacity units a worker holds back: one per `RESERVED` job started here, given back
//! to the registry's pending count in lots (`WorkerThread::hold_unit_of_started_job`).

use std::cell::Cell;

/// Started `RESERVED` jobs whose `pending` units are not given back yet.
pub(super) struct HeldUnits {
    n: Cell<usize>,
}

impl HeldUnits {
    pub(super) fn new() -> HeldUnits {
        HeldUnits { n: Cell::new(0) }
    }

    /// One more unit held: returns how many to give back now, all of them once there are
    /// `threshold`.
    #[inline]
    pub(super) fn add_one(&self, threshold: usize) -> Option<usize> {
        let n = self.n.get() + 1;
        if n >= threshold {
            self.n.set(0);
            Some(n)
        } else {
            self.n.set(n);
            None
        }
    }

    /// Every unit held, to give back now.
    #[inline]
    pub(super) fn take_all(&self) -> usize {
        self.n.replace(0)
    }
}
