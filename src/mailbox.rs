//! The workers' mailboxes: per worker slot, jobs for that worker only, never stolen
//! (`Pool::broadcast` puts them there; see `broadcast.rs`). The registry holds them, and a
//! worker looks in its own whenever it looks for work.

use crate::job::Job;
use crate::sync::{AtomicUsize, Mutex, Ordering};
use crossbeam_utils::CachePadded;
use std::collections::VecDeque;

/// Per worker slot, the broadcast jobs addressed to it.
pub(crate) struct Mailboxes {
    boxes: Box<[CachePadded<Mailbox>]>,
}

struct Mailbox {
    jobs: Mutex<VecDeque<Job>>,
    /// `jobs.len()`, readable without the lock: `find_work` reads it on every look.
    len: AtomicUsize,
}

impl Mailboxes {
    pub(crate) fn new(slots: usize) -> Mailboxes {
        Mailboxes {
            boxes: (0..slots)
                .map(|_| {
                    CachePadded::new(Mailbox {
                        jobs: Mutex::new(VecDeque::new()),
                        len: AtomicUsize::new(0),
                    })
                })
                .collect(),
        }
    }

    /// Whether slot `index` has a job waiting. Relaxed: the re-check before parking is
    /// ordered against `put` by the `sleepers` lock (see docs/protocol.md, "Broadcasts").
    #[inline]
    pub(crate) fn has(&self, index: usize) -> bool {
        self.boxes[index].len.load(Ordering::Relaxed) != 0
    }

    /// The oldest job for slot `index`, if any.
    #[inline]
    pub(crate) fn take(&self, index: usize) -> Option<Job> {
        if !self.has(index) {
            return None;
        }
        self.take_cold(index)
    }

    #[cold]
    fn take_cold(&self, index: usize) -> Option<Job> {
        let mailbox = &self.boxes[index];
        let mut jobs = mailbox.jobs.lock();
        let job = jobs.pop_front();
        mailbox.len.store(jobs.len(), Ordering::Relaxed);
        job
    }

    /// Puts `job` in slot `index`'s mailbox (`Pool::broadcast`; it wakes the worker).
    pub(crate) fn put(&self, index: usize, job: Job) {
        let mailbox = &self.boxes[index];
        let mut jobs = mailbox.jobs.lock();
        jobs.push_back(job);
        mailbox.len.store(jobs.len(), Ordering::Relaxed);
    }
}
