//! Waking users' `Waker`s: the lists of futures waiting for room in a full queue, for a
//! quiet pool or for a task group (`RoomWakers`), and `wake_guarded`, through which every
//! `Waker` flock wakes is woken, so that one that panics cannot keep the others asleep.

use crate::sync::{AtomicUsize, Mutex, Ordering};
use crate::unwind::report_caught;
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::Waker;

/// The wakers of async submitters waiting for room.
pub(crate) struct RoomWakers {
    /// How many wakers `list` holds, readable without the lock: `wake_all` takes the lock
    /// only when it is non-zero.
    count: AtomicUsize,
    list: Mutex<RoomList>,
}

struct RoomList {
    next_id: u64,
    wakers: Vec<(u64, Waker)>,
}

impl RoomWakers {
    pub(crate) fn new() -> RoomWakers {
        RoomWakers {
            count: AtomicUsize::new(0),
            list: Mutex::new(RoomList {
                next_id: 0,
                wakers: Vec::new(),
            }),
        }
    }

    /// Stores `waker` under `*id` (given a new id the first time), replacing the one stored
    /// before unless it wakes the same task.
    pub(crate) fn register(&self, id: &mut Option<u64>, waker: &Waker) {
        let mut list = self.list.lock();
        let key = *id.get_or_insert_with(|| {
            list.next_id += 1;
            list.next_id
        });
        match list.wakers.iter_mut().find(|(k, _)| *k == key) {
            Some((_, w)) if w.will_wake(waker) => {}
            Some((_, w)) => *w = waker.clone(),
            None => {
                list.wakers.push((key, waker.clone()));
                // SeqCst RMW, before the caller's re-check: pairs with the SeqCst load in
                // `wake_all` (docs/protocol.md, "Backpressure").
                self.count.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    /// Removes the waker stored under `id`, if a wake has not taken it already.
    pub(crate) fn unregister(&self, id: u64) {
        let mut list = self.list.lock();
        if let Some(pos) = list.wakers.iter().position(|(k, _)| *k == id) {
            list.wakers.swap_remove(pos);
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Wakes every registered waiter: the queue went from full to not full, or the pool is
    /// shutting down. Each woken future tries again and registers again if it loses.
    pub(crate) fn wake_all(&self) {
        // SeqCst: after the caller's SeqCst `pending` RMW (or shutdown store); pairs with the
        // increment in `register`.
        if self.count.load(Ordering::SeqCst) == 0 {
            return;
        }
        let woken = {
            let mut list = self.list.lock();
            self.count.store(0, Ordering::Relaxed);
            std::mem::take(&mut list.wakers)
        };
        // Outside the lock, each caught: a waker that panics neither unwinds into our caller
        // (a worker, a shutdown) nor keeps the others from being woken.
        wake_guarded(woken.into_iter().map(|(_, waker)| waker));
    }
}

/// Wakes each of `wakers`, the `Waker`s of users' futures. A `wake` that panics is caught,
/// the rest are still woken, and then each panic is reported as a hook's is
/// (`call_guarded`: printed to stderr). Every `Waker` flock wakes is woken here: a waker's
/// panic must not unwind into the worker loop (which aborts), out of a shutdown that has not
/// yet woken the other waiters or joined its workers, or into the outcome of the task whose
/// end it announces.
pub(crate) fn wake_guarded(wakers: impl IntoIterator<Item = Waker>) {
    // Allocates only once a waker has panicked.
    let mut caught = Vec::new();
    for waker in wakers {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| waker.wake())) {
            caught.push(payload);
        }
    }
    if !caught.is_empty() {
        report_wakers(caught);
    }
}

#[cold]
fn report_wakers(caught: Vec<Box<dyn Any + Send>>) {
    let worker = crate::worker::current_worker_index();
    for payload in caught {
        report_caught("waker", worker, payload);
    }
}
