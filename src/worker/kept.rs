//! What a worker keeps for the resume: jobs submitted from outside that it took as the pool
//! got paused (`WorkerThread::keep_for_resume`), run before anything else it takes once the
//! pause is lifted (`find_work`).

use crate::job::{Job, UNKEPT};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

/// Jobs from outside (`INJECTED`) a worker took as the pool got paused, each with its lane:
/// kept here, not put back on a queue, where it would lose its place to the later jobs of
/// its submitter still on their ring ("FIFO within a lane"; `tests/fifo.rs`). Usually one,
/// but a worker may keep two: the second of two jobs claimed at once
/// (`WorkerThread::took_two`), found on our deque while paused, or one a task that returns
/// from its wait takes through `yield_to_lanes` and sees the pool paused again. They queue
/// here, oldest first. The oldest, handed out on the resume, is run or kept again at once
/// (`execute_unless_paused`: nothing is kept between), so kept again it is still the oldest
/// and goes back to the front; it is marked `UNKEPT` on its way out for that.
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

    /// Keeps `job` of `lane`: after those kept before, or before them if `pop_oldest` handed
    /// it out (it was the oldest then, and nothing was kept since).
    pub(super) fn push(&self, mut job: Job, lane: usize) {
        let mut jobs = self.jobs.borrow_mut();
        if job.flags() & UNKEPT != 0 {
            job.remove_flags(UNKEPT);
            jobs.push_front((job, lane));
        } else {
            jobs.push_back((job, lane));
        }
        self.any.set(true);
    }

    /// The oldest job kept, with its lane, marked `UNKEPT` (its caller runs it or keeps it
    /// again before anything else is kept; one that goes elsewhere loses the mark).
    pub(super) fn pop_oldest(&self) -> Option<(Job, usize)> {
        let mut jobs = self.jobs.borrow_mut();
        let oldest = jobs.pop_front().map(|(mut job, lane)| {
            job.add_flags(UNKEPT);
            (job, lane)
        });
        self.any.set(!jobs.is_empty());
        oldest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Outcome, INJECTED};
    use std::sync::{Arc, Mutex};

    fn job(ran: &Arc<Mutex<Vec<usize>>>, i: usize) -> Job {
        let ran = ran.clone();
        Job::new(
            move || {
                ran.lock().unwrap().push(i);
                Outcome::Done
            },
            INJECTED,
        )
    }

    /// Two jobs kept; the pool is resumed and paused again as the oldest is handed out, so
    /// it is kept again: it must still come out first (it went to the back, and a worker
    /// ran the two out of order: `tests/fifo.rs`'s pause test under ThreadSanitizer).
    #[test]
    fn a_job_kept_again_keeps_its_place() {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let kept = Kept::new();
        kept.push(job(&ran, 0), 0);
        kept.push(job(&ran, 1), 0);
        let (first, lane) = kept.pop_oldest().unwrap();
        kept.push(first, lane);
        // A job kept for the first time after that goes behind both.
        kept.push(job(&ran, 2), 0);
        while let Some((job, _)) = kept.pop_oldest() {
            assert_eq!(job.flags() & UNKEPT, UNKEPT);
            job.run();
        }
        assert!(!kept.any());
        assert_eq!(*ran.lock().unwrap(), [0, 1, 2]);
    }
}
