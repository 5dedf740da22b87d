//! The queues, behind one set of names: `crossbeam-deque` normally; a `Mutex<VecDeque>` model
//! with the same methods under `cfg(flock_loom)` (loom cannot see into crossbeam's atomics)
//! and under Miri (crossbeam-epoch's tagged pointers are integer-to-pointer casts, which
//! Miri's strict-provenance mode rejects; `--cfg flock_miri_crossbeam` keeps the real deques
//! for a permissive-provenance Miri pass). Only the methods the scheduler calls exist.
//!
//! A worker's task deques add a slot below their oldest job (`TaskDeque`, `TaskStealer`).
//!
//! # Safety
//!
//! The slot's `unsafe` blocks rely on:
//!
//! - **One writer.** Only the owner (`TaskDeque`, which is not `Sync`) writes the slot's
//!   job, and only while its state is `EMPTY`, read Acquire after the last taker's Release
//!   store of `EMPTY`, which follows that taker's read.
//! - **One reader per job.** A job is read only by the taker whose CAS moved the state from
//!   `FULL` to `TAKING` (Acquire, after the owner's Release store of `FULL`), once, or by
//!   the slot's `Drop` with the state `FULL` and no other reference left.

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

pub(crate) use slotted::{TaskDeque, TaskStealer};

/// A worker's task deque of one lane with one place more at its old end, the slot: the
/// second of two jobs a worker claims from a ring at once (`WorkerThread::took_two`) waits
/// there, where every thief and every re-check looks, and its owner takes it back with one
/// CAS where the deque's pop of its last job costs a SeqCst fence and a CAS
/// (docs/protocol.md, "FIFO within a lane").
mod slotted {
    use super::{Steal, Stealer, Worker};
    use crate::sync::{canary, Arc, AtomicU8, Canary, Ordering, UnsafeCell};
    use crossbeam_utils::CachePadded;
    use std::cell::Cell;
    use std::mem::MaybeUninit;

    /// Nothing in the slot; only the owner writes it then.
    const EMPTY: u8 = 0;
    /// A job in the slot, for whoever wins the CAS from `FULL`.
    const FULL: u8 = 1;
    /// Won by a taker that is moving the job out; `EMPTY` when it is done.
    const TAKING: u8 = 2;

    /// One job's place, handed from its owner to one taker by `state`.
    struct Slot<T> {
        state: AtomicU8,
        job: UnsafeCell<MaybeUninit<T>>,
    }

    // SAFETY: the job is written by the owner only while `state` is `EMPTY` (no taker reads
    // it then) and read by the one taker whose CAS moved `state` from `FULL` to `TAKING`
    // (the owner does not write it again until that taker stores `EMPTY`); `T: Send` moves.
    unsafe impl<T: Send> Send for Slot<T> {}
    // SAFETY: as above: the state word makes every access to `job` exclusive.
    unsafe impl<T: Send> Sync for Slot<T> {}

    impl<T> Slot<T> {
        fn new() -> Self {
            Slot {
                state: AtomicU8::new(EMPTY),
                job: UnsafeCell::new(MaybeUninit::uninit()),
            }
        }

        /// Puts `t` in the slot, or hands it back if the slot is not empty. Owner only.
        fn put(&self, t: T) -> Result<(), T> {
            // Acquire: pairs with the last taker's Release store of `EMPTY`, so its read of
            // the job it took happened before we overwrite the cell.
            if self.state.load(Ordering::Acquire) != EMPTY {
                return Err(t);
            }
            // SAFETY: `EMPTY`: no taker reads the cell, and only the owner writes it.
            self.job.with_mut(|p| unsafe { (*p).write(t) });
            // Release: a taker whose Acquire CAS reads `FULL` reads the whole job (the `slot`
            // canary makes it Relaxed, and loom's cell reports the taker's read as a race:
            // `loom_a_deque_slot_between_its_owner_and_a_thief`).
            let publish = if canary(Canary::Slot) {
                Ordering::Relaxed
            } else {
                Ordering::Release
            };
            self.state.store(FULL, publish);
            Ok(())
        }

        /// The job, if the slot holds one and no other taker wins it first.
        fn take(&self) -> Option<T> {
            // A plain load first: most looks find nothing, and a CAS would write the line.
            if self.state.load(Ordering::Relaxed) != FULL {
                return None;
            }
            // Acquire: pairs with `put`'s Release store, so the job's words are visible.
            self.state
                .compare_exchange(FULL, TAKING, Ordering::Acquire, Ordering::Relaxed)
                .ok()?;
            // SAFETY: our CAS made us the one taker of the job `put` wrote; the owner does
            // not write the cell again before our store of `EMPTY` below.
            let t = self.job.with_mut(|p| unsafe { (*p).assume_init_read() });
            // Release: the owner's next `put` (Acquire) overwrites the cell after our read.
            self.state.store(EMPTY, Ordering::Release);
            Some(t)
        }

        /// Whether a job waits in the slot. Acquire, as the deques' loads of their indices:
        /// a re-check that follows a SeqCst fence sees a `put` that a fence ordered first.
        fn is_full(&self) -> bool {
            self.state.load(Ordering::Acquire) == FULL
        }
    }

    impl<T> Drop for Slot<T> {
        fn drop(&mut self) {
            // Both ends are gone: a job still here is dropped (its destructor runs).
            if self.state.load(Ordering::Relaxed) == FULL {
                // SAFETY: `FULL` and no other reference: the job is initialised and ours.
                drop(self.job.with_mut(|p| unsafe { (*p).assume_init_read() }));
            }
        }
    }

    /// The owner's end: its deque (FIFO or LIFO) and the slot below the deque's oldest job.
    pub(crate) struct TaskDeque<T> {
        deque: Worker<T>,
        slot: Arc<CachePadded<Slot<T>>>,
        /// Whether we put a job in the slot that we have not looked for since (a thief may
        /// have taken it): `pop` and `is_empty` read the shared slot only then.
        filled: Cell<bool>,
        fifo: bool,
        /// Whether `push_oldest` uses the slot: always, except in loom's models of the whole
        /// pool (`TaskDeque::loom_slot_free`).
        #[cfg(flock_loom)]
        slotted: bool,
    }

    /// Another thread's end: it takes the slot's job first (the oldest), then the deque's.
    pub(crate) struct TaskStealer<T> {
        deque: Stealer<T>,
        slot: Arc<CachePadded<Slot<T>>>,
        #[cfg(flock_loom)]
        slotted: bool,
    }

    impl<T> TaskDeque<T> {
        pub(crate) fn new_fifo() -> Self {
            Self::with(Worker::new_fifo(), true)
        }

        pub(crate) fn new_lifo() -> Self {
            Self::with(Worker::new_lifo(), false)
        }

        fn with(deque: Worker<T>, fifo: bool) -> Self {
            TaskDeque {
                deque,
                slot: Arc::new(CachePadded::new(Slot::new())),
                filled: Cell::new(false),
                fifo,
                #[cfg(flock_loom)]
                slotted: true,
            }
        }

        /// A lane's deque in a pool, FIFO when `fifo`.
        pub(crate) fn for_pool(fifo: bool) -> Self {
            let mut deque = if fifo {
                Self::new_fifo()
            } else {
                Self::new_lifo()
            };
            deque.loom_slot_free();
            deque
        }

        /// Under loom, for the models of the whole pool: `push_oldest` is a `push`, and
        /// thieves never look at the slot. The claim pushes onto an empty deque
        /// (`WorkerThread::took_two`), so the job sits where the slot would put it (the
        /// oldest), and the model deque publishes it as the slot does (its length stored
        /// Release, read Acquire by `is_empty`, as the slot's state); what the slot's own
        /// words do is checked apart (`loom_a_deque_slot_between_its_owner_and_a_thief`). The
        /// slot's loads, one more for every victim a search looks at, made the pool's models
        /// explore 1.43 times as many executions (196,186 against 136,896 in
        /// `loom_a_claimed_second_job_is_taken_by_another_worker`). Outside loom, nothing.
        #[inline(always)]
        fn loom_slot_free(&mut self) {
            #[cfg(flock_loom)]
            {
                self.slotted = false;
            }
        }

        pub(crate) fn stealer(&self) -> TaskStealer<T> {
            TaskStealer {
                deque: self.deque.stealer(),
                slot: self.slot.clone(),
                #[cfg(flock_loom)]
                slotted: self.slotted,
            }
        }

        /// Pushes `t` as the newest job.
        #[inline]
        pub(crate) fn push(&self, t: T) {
            self.deque.push(t);
        }

        /// Puts `t` below every job: in the slot if the deque and the slot are empty (a job
        /// that must be the oldest can only go there then), else onto the deque as `push`.
        /// Published as a push is (Release); the caller announces it as one.
        #[inline]
        pub(crate) fn push_oldest(&self, t: T) {
            #[cfg(flock_loom)]
            if !self.slotted {
                return self.deque.push(t);
            }
            if !self.filled.get() && self.deque.is_empty() {
                match self.slot.put(t) {
                    Ok(()) => self.filled.set(true),
                    // A thief is still moving out the job it took from the slot.
                    Err(t) => self.deque.push(t),
                }
            } else {
                self.deque.push(t);
            }
        }

        /// The next job for the owner: the deque's newest (LIFO) or oldest (FIFO), the
        /// slot's counted as the oldest.
        #[inline]
        pub(crate) fn pop(&self) -> Option<T> {
            if !self.filled.get() {
                return self.deque.pop();
            }
            self.pop_with_slot()
        }

        #[cold]
        fn pop_with_slot(&self) -> Option<T> {
            // `is_empty` (two loads, inline) spares the call into an empty deque's `pop`
            // (callgrind: 25 instructions a claimed pair in `drain_probe drain 2 0`).
            if !self.fifo && !self.deque.is_empty() {
                if let Some(t) = self.deque.pop() {
                    return Some(t);
                }
            }
            self.filled.set(false);
            self.slot.take().or_else(|| self.deque.pop())
        }

        /// Whether `pop` would find nothing, as far as the owner knows without reading the
        /// slot: `true` is exact, `false` may be a job a thief has taken from the slot since.
        /// One Cell and the deque's two loads, for a hot path that then pops.
        #[inline]
        pub(crate) fn looks_empty(&self) -> bool {
            self.deque.is_empty() && !self.filled.get()
        }

        /// Whether `pop` would find nothing (the owner's view: only it pushes). Exact, as the
        /// deque's: a job we put in the slot counts until a thief has won it.
        #[inline]
        pub(crate) fn is_empty(&self) -> bool {
            self.deque.is_empty() && !(self.filled.get() && self.slot_still_ours())
        }

        /// Whether the job we put in the slot is still there; forgets it if a thief won it.
        #[cold]
        fn slot_still_ours(&self) -> bool {
            let full = self.slot.is_full();
            if !full {
                self.filled.set(false);
            }
            full
        }
    }

    impl<T> TaskStealer<T> {
        /// The slot, where this deque uses one (`TaskDeque::loom_slot_free`).
        #[inline(always)]
        fn slot(&self) -> Option<&Slot<T>> {
            #[cfg(flock_loom)]
            if !self.slotted {
                return None;
            }
            Some(&self.slot)
        }

        /// The slot's job, else the deque's oldest.
        #[inline]
        pub(crate) fn steal(&self) -> Steal<T> {
            match self.slot().and_then(Slot::take) {
                Some(t) => Steal::Success(t),
                None => self.deque.steal(),
            }
        }

        pub(crate) fn len(&self) -> usize {
            self.deque.len() + usize::from(self.slot().is_some_and(Slot::is_full))
        }

        pub(crate) fn is_empty(&self) -> bool {
            self.deque.is_empty() && !self.slot().is_some_and(Slot::is_full)
        }
    }

    #[cfg(all(test, not(flock_loom)))]
    mod tests {
        use super::*;
        use std::sync::atomic::AtomicUsize as StdCount;

        fn drain(d: &TaskDeque<u32>) -> Vec<u32> {
            std::iter::from_fn(|| d.pop()).collect()
        }

        #[test]
        fn the_slot_is_below_every_job_for_the_owner_and_first_for_thieves() {
            for fifo in [false, true] {
                let d = if fifo {
                    TaskDeque::new_fifo()
                } else {
                    TaskDeque::new_lifo()
                };
                d.push_oldest(1);
                assert!(
                    d.slot.is_full(),
                    "an empty deque puts the oldest in the slot"
                );
                assert!(!d.is_empty() && !d.stealer().is_empty());
                assert_eq!(d.stealer().len(), 1);
                d.push(2);
                d.push(3);
                assert_eq!(d.stealer().len(), 3);
                let got = drain(&d);
                assert_eq!(got, if fifo { vec![1, 2, 3] } else { vec![3, 2, 1] });
                assert!(d.is_empty() && d.stealer().is_empty());

                d.push_oldest(1);
                d.push(2);
                let s = d.stealer();
                assert!(
                    matches!(s.steal(), Steal::Success(1)),
                    "a thief takes the oldest"
                );
                assert!(matches!(s.steal(), Steal::Success(2)));
                assert!(matches!(s.steal(), Steal::Empty));
                // The owner sees the thief's take.
                assert!(d.is_empty());
                assert_eq!(d.pop(), None);
                d.push_oldest(4);
                assert!(matches!(s.steal(), Steal::Success(4)));
                assert_eq!(d.pop(), None, "a pop after a thief's take finds nothing");
                assert!(d.is_empty());
            }
        }

        #[test]
        fn the_oldest_goes_onto_the_deque_when_the_slot_cannot_take_it() {
            let d = TaskDeque::new_lifo();
            d.push(1);
            d.push_oldest(2); // not the oldest any more: the deque keeps push order
            assert!(!d.slot.is_full());
            assert_eq!(drain(&d), vec![2, 1]);
            // A thief still moving the slot's last job out: the slot is not the owner's yet.
            d.slot.state.store(TAKING, Ordering::Relaxed);
            d.push_oldest(3);
            assert_eq!(d.slot.state.load(Ordering::Relaxed), TAKING);
            assert_eq!(drain(&d), vec![3]);
            d.slot.state.store(EMPTY, Ordering::Relaxed);
        }

        struct Counted<'a>(&'a StdCount);
        impl Drop for Counted<'_> {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }

        #[test]
        fn a_job_left_in_the_slot_is_dropped_with_the_deque() {
            let dropped = StdCount::new(0);
            let d = TaskDeque::new_lifo();
            let s = d.stealer();
            d.push_oldest(Counted(&dropped));
            d.push(Counted(&dropped));
            drop(d);
            assert_eq!(
                dropped.load(Ordering::Relaxed),
                0,
                "the thief's end still holds them"
            );
            drop(s);
            assert_eq!(dropped.load(Ordering::Relaxed), 2);
        }

        #[test]
        fn owner_and_thieves_racing_take_each_job_once() {
            const ROUNDS: u32 = if cfg!(miri) { 200 } else { 20_000 };
            let d = TaskDeque::new_lifo();
            let ends: Vec<TaskStealer<u32>> = (0..2).map(|_| d.stealer()).collect();
            let done = std::sync::atomic::AtomicBool::new(false);
            let stolen: Vec<Vec<u32>> = std::thread::scope(|scope| {
                let thieves: Vec<_> = ends
                    .into_iter()
                    .map(|s| {
                        let done = &done;
                        scope.spawn(move || {
                            let mut got = Vec::new();
                            while !done.load(Ordering::Acquire) {
                                if let Steal::Success(n) = s.steal() {
                                    got.push(n);
                                }
                            }
                            while let Steal::Success(n) = s.steal() {
                                got.push(n);
                            }
                            got
                        })
                    })
                    .collect();
                let mut own = Vec::new();
                for n in 0..ROUNDS {
                    d.push_oldest(2 * n);
                    d.push(2 * n + 1);
                    own.extend(d.pop());
                    if n % 3 == 0 {
                        own.extend(d.pop());
                    }
                }
                own.extend(std::iter::from_fn(|| d.pop()));
                done.store(true, Ordering::Release);
                let mut all: Vec<Vec<u32>> =
                    thieves.into_iter().map(|t| t.join().unwrap()).collect();
                all.push(own);
                all
            });
            let mut all: Vec<u32> = stolen.into_iter().flatten().collect();
            all.sort_unstable();
            assert_eq!(all, (0..2 * ROUNDS).collect::<Vec<_>>());
        }
    }
}
