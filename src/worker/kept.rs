//! What a worker keeps for the resume: jobs submitted from outside that it took as the pool
//! got paused (`WorkerThread::keep_for_resume`), run before anything else it takes once the
//! pause is lifted (`find_work`).

use crate::job::Job;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

/// Jobs from outside (`INJECTED`) a worker took as the pool got paused, each with its lane:
/// kept here, not put back on a queue, where it would lose its place to the later jobs of
/// its submitter still on their ring ("FIFO within a lane"; `tests/fifo.rs`). Usually one,
/// but a task that returns from its wait while we keep one may take another through
/// `yield_to_lanes` and see the pool paused again: they queue here, oldest first.
pub(super) struct Kept {
    jobs: RefCell<VecDeque<(Job, usize)>>,
    /// Whether any is kept: one load on `find_work`'s path instead of a `RefCell` borrow.
    any: Cell<bool>,
}

impl Kept {
    pub(super) fn new() -> Kept {
        Kept {
            jobs: RefCell::new(VecDeque::new()),
            any: Cell::new(false),
        }
    }

    /// Whether a job is kept.
    #[inline]
    pub(super) fn any(&self) -> bool {
        self.any.get()
    }

    /// Keeps `job` of `lane`, after those kept before.
    pub(super) fn push(&self, job: Job, lane: usize) {
        self.jobs.borrow_mut().push_back((job, lane));
        self.any.set(true);
    }

    /// The oldest job kept, with its lane.
    pub(super) fn pop_oldest(&self) -> Option<(Job, usize)> {
        let mut jobs = self.jobs.borrow_mut();
        let oldest = jobs.pop_front();
        self.any.set(!jobs.is_empty());
        oldest
    }
}
