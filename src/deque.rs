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
    use crate::sync::{Arc, Mutex};
    use std::collections::VecDeque;

    /// As `crossbeam_deque::Steal`; the model never asks for a retry.
    #[allow(dead_code)]
    pub(crate) enum Steal<T> {
        Empty,
        Success(T),
        Retry,
    }

    pub(crate) struct Worker<T> {
        queue: Arc<Mutex<VecDeque<T>>>,
        fifo: bool,
    }

    pub(crate) struct Stealer<T> {
        queue: Arc<Mutex<VecDeque<T>>>,
    }

    pub(crate) struct Injector<T> {
        queue: Mutex<VecDeque<T>>,
    }

    impl<T> Worker<T> {
        pub(crate) fn new_fifo() -> Self {
            Worker {
                queue: Arc::new(Mutex::new(VecDeque::new())),
                fifo: true,
            }
        }
        pub(crate) fn new_lifo() -> Self {
            Worker {
                queue: Arc::new(Mutex::new(VecDeque::new())),
                fifo: false,
            }
        }
        pub(crate) fn stealer(&self) -> Stealer<T> {
            Stealer {
                queue: self.queue.clone(),
            }
        }
        pub(crate) fn push(&self, t: T) {
            self.queue.lock().push_back(t);
        }
        pub(crate) fn pop(&self) -> Option<T> {
            let mut q = self.queue.lock();
            if self.fifo {
                q.pop_front()
            } else {
                q.pop_back()
            }
        }
        pub(crate) fn len(&self) -> usize {
            self.queue.lock().len()
        }
        pub(crate) fn is_empty(&self) -> bool {
            self.queue.lock().is_empty()
        }
    }

    impl<T> Stealer<T> {
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
