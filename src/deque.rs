//! The queues, behind one set of names: `crossbeam-deque` normally; a `Mutex<VecDeque>` model
//! with the same methods under `cfg(flock_loom)` (loom cannot see into crossbeam's atomics)
//! and under Miri (crossbeam-epoch's tagged pointers are integer-to-pointer casts, which
//! Miri's strict-provenance mode rejects; `--cfg flock_miri_crossbeam` keeps the real deques
//! for a permissive-provenance Miri pass). Only the methods the scheduler calls exist.

#[cfg(not(any(flock_loom, all(miri, not(flock_miri_crossbeam)))))]
pub(crate) use crossbeam_deque::{Injector, Steal, Stealer, Worker};

#[cfg(any(flock_loom, all(miri, not(flock_miri_crossbeam))))]
pub(crate) use model::{Injector, Steal, Stealer, Worker};

#[cfg(any(flock_loom, all(miri, not(flock_miri_crossbeam))))]
mod model {
    use crate::sync::{Arc, AtomicUsize, Mutex, Ordering};
    use std::collections::VecDeque;

    /// As `crossbeam_deque::Steal`; the model never asks for a retry.
    #[allow(dead_code)]
    pub(crate) enum Steal<T> {
        Empty,
        Success(T),
        Retry,
    }

    /// A deque: the jobs behind a lock, and their count in an atomic that `is_empty` reads
    /// without the lock, as crossbeam's reads its `front`/`back` indices (Acquire loads of
    /// what the owner's push stores with Release). So a re-check can miss a push that no
    /// fence orders before it, exactly as with the real deque: the model of a local push
    /// followed by a blocking wait relies on this (`loom_push_locally_then_block`).
    struct Deque<T> {
        jobs: Mutex<VecDeque<T>>,
        len: AtomicUsize,
    }

    pub(crate) struct Worker<T> {
        queue: Arc<Deque<T>>,
        fifo: bool,
    }

    pub(crate) struct Stealer<T> {
        queue: Arc<Deque<T>>,
    }

    impl<T> Deque<T> {
        fn new() -> Self {
            Deque {
                jobs: Mutex::new(VecDeque::new()),
                len: AtomicUsize::new(0),
            }
        }
        fn push(&self, t: T) {
            let mut jobs = self.jobs.lock();
            jobs.push_back(t);
            // Release, as crossbeam's store of `back` after writing the slot.
            self.len.store(jobs.len(), Ordering::Release);
        }
        fn take(&self, front: bool) -> Option<T> {
            let mut jobs = self.jobs.lock();
            let t = if front {
                jobs.pop_front()
            } else {
                jobs.pop_back()
            };
            self.len.store(jobs.len(), Ordering::Release);
            t
        }
        fn len(&self) -> usize {
            self.jobs.lock().len()
        }
        fn is_empty(&self) -> bool {
            // Acquire, as crossbeam's loads of `front` and `back`; no lock.
            self.len.load(Ordering::Acquire) == 0
        }
    }

    pub(crate) struct Injector<T> {
        queue: Mutex<VecDeque<T>>,
    }

    impl<T> Worker<T> {
        pub(crate) fn new_fifo() -> Self {
            Worker {
                queue: Arc::new(Deque::new()),
                fifo: true,
            }
        }
        pub(crate) fn new_lifo() -> Self {
            Worker {
                queue: Arc::new(Deque::new()),
                fifo: false,
            }
        }
        pub(crate) fn stealer(&self) -> Stealer<T> {
            Stealer {
                queue: self.queue.clone(),
            }
        }
        pub(crate) fn push(&self, t: T) {
            self.queue.push(t);
        }
        pub(crate) fn pop(&self) -> Option<T> {
            self.queue.take(self.fifo)
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.queue.is_empty()
        }
    }

    impl<T> Stealer<T> {
        pub(crate) fn steal(&self) -> Steal<T> {
            self.queue.take(true).map_or(Steal::Empty, Steal::Success)
        }
        pub(crate) fn len(&self) -> usize {
            self.queue.len()
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.queue.is_empty()
        }
    }

    impl<T> Injector<T> {
        pub(crate) fn new() -> Self {
            Injector {
                queue: Mutex::new(VecDeque::new()),
            }
        }
        pub(crate) fn push(&self, t: T) {
            self.queue.lock().push_back(t);
        }
        pub(crate) fn steal(&self) -> Steal<T> {
            self.queue
                .lock()
                .pop_front()
                .map_or(Steal::Empty, Steal::Success)
        }
        pub(crate) fn len(&self) -> usize {
            self.queue.lock().len()
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.queue.lock().is_empty()
        }
    }
}
