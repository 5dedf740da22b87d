//! [`Pool::broadcast`]: a closure run once on every worker, for per-thread set-up and
//! per-thread buffers.
//!
//! Each worker slot has a mailbox (`mailbox.rs`): jobs for that worker only, never stolen. The caller
//! picks the slots whose thread runs (`Running`, under the `slots` lock: a slot still
//! starting is not picked, since its thread may never come, nor one that has begun to
//! retire, and one picked cannot leave without running its job on that thread), enters one
//! counted task per slot (so no worker exits for shutdown while one is outstanding), puts a
//! job in each mailbox, and wakes each worker with `Sleep::wake_specific`. A worker looks in
//! its mailbox first whenever it looks for work (`find_work`, also while waiting inside a
//! task), its re-check before parking includes it, and a retiring worker runs what its
//! mailbox holds before it leaves. Why the wake is not lost is in `docs/protocol.md`
//! ("Broadcasts").

use crate::job::{Job, Outcome, COUNTED};
use crate::latch::{self, Latch, Owner};
use crate::metrics::counters::Stat;
use crate::pool::Pool;
use crate::sync::{AtomicUsize, Mutex, Ordering};
use crate::unwind::drop_payload;
use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// One broadcast, on its caller's stack until every job has run.
struct Broadcast<'f, F, R> {
    f: &'f F,
    /// Per picked slot, in slot order, the call's value.
    results: Mutex<Vec<Option<R>>>,
    /// Jobs not yet finished.
    remaining: AtomicUsize,
    latch: Latch,
    owner: Owner,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

/// The broadcast's address, for its jobs (Send: the state is Sync and outlives them).
struct BroadcastPtr<'f, F, R>(*const Broadcast<'f, F, R>);

// SAFETY: `Broadcast` is Sync when `F: Sync` and `R: Send`, and the caller does not return
// before every job holding this pointer has finished (the latch).
unsafe impl<F: Sync, R: Send> Send for BroadcastPtr<'_, F, R> {}

impl<'f, F, R> BroadcastPtr<'f, F, R> {
    /// Only a method reads the pointer, so closures capture the whole (Send) wrapper.
    fn get(&self) -> *const Broadcast<'f, F, R> {
        self.0
    }
}

impl<F, R> Broadcast<'_, F, R>
where
    F: Fn(usize) -> R + Sync,
    R: Send,
{
    /// The job for worker `index`, the `pos`th picked. Takes a raw pointer, not `&self`:
    /// the caller may free the broadcast as soon as the last job opens the latch (see
    /// `Latch::set`).
    ///
    /// # Safety
    /// `this` is alive until this call's decrement of `remaining`.
    unsafe fn run(this: *const Self, pos: usize, index: usize) -> Outcome {
        // SAFETY: our unit of `remaining` keeps the broadcast alive up to its decrement.
        let state = unsafe { &*this };
        let outcome = match catch_unwind(AssertUnwindSafe(|| (state.f)(index))) {
            Ok(value) => {
                state.results.lock()[pos] = Some(value);
                Outcome::Done
            }
            Err(payload) => {
                let mut first = state.panic.lock();
                match *first {
                    None => *first = Some(payload),
                    Some(_) => drop_payload(payload),
                }
                Outcome::Panicked
            }
        };
        // SAFETY: as above; only the last job touches the broadcast after its decrement.
        unsafe {
            // AcqRel: the last decrement acquires every other job's writes before it opens
            // the latch for the caller.
            if (*this).remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                latch::set_and_wake(&(*this).latch, &(*this).owner);
            }
        }
        outcome
    }
}

impl Pool {
    /// Runs `f` once on every worker of the pool, with the worker's index (as
    /// [`current_worker_index`](crate::current_worker_index) gives it), and returns the values
    /// in index order. For per-thread set-up (a thread-local buffer, a random generator) and
    /// per-thread teardown. As rayon's `ThreadPool::broadcast`. A panic in `f` is re-raised
    /// here after every call has finished.
    ///
    /// "Every worker" is every worker thread running in its slot when the call begins: a
    /// worker that retires meanwhile ([`resize`](Pool::resize)) runs its call before it
    /// leaves; a slot whose thread is still starting (a grow in progress, which may yet fail)
    /// or has begun to retire is not called, nor is one started meanwhile. The call for index
    /// `i` runs on the thread that holds index `i` while it runs
    /// (`current_worker_index() == Some(i)`), never on a thread that left the slot or on
    /// the caller. A worker runs its call between tasks, or while it waits
    /// inside a task (`join`, `scope`), once it has run the tasks queued on its own deque
    /// (those its tasks spawned; as rayon's): so the call waits for workers busy with long tasks, and
    /// for a worker blocked outside flock (on a channel, a lock) until it unblocks. Nothing
    /// starts while the pool is paused (it waits for [`resume`](Pool::resume)). Called from one
    /// of the pool's tasks, that worker runs its own call while it waits for the others. After
    /// a shutdown began there are no workers to run on: it returns an empty `Vec`.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = flock::Pool::builder().workers(3).build().unwrap();
    /// let calls = AtomicUsize::new(0);
    /// let indices = pool.broadcast(|index| {
    ///     calls.fetch_add(1, Ordering::Relaxed);
    ///     assert_eq!(flock::current_worker_index(), Some(index));
    ///     index
    /// });
    /// assert_eq!(indices, [0, 1, 2]);
    /// assert_eq!(calls.into_inner(), 3);
    /// ```
    pub fn broadcast<F, R>(&self, f: F) -> Vec<R>
    where
        F: Fn(usize) -> R + Sync,
        R: Send,
    {
        let reg = self.registry();
        let shard = reg.shards.external();
        let state = Broadcast {
            f: &f,
            results: Mutex::new(Vec::new()),
            remaining: AtomicUsize::new(0),
            latch: Latch::new(),
            owner: Owner::current(reg),
            panic: Mutex::new(None),
        };
        let slots = reg.crew.lock_slots();
        // `Running` only: the slot's thread holds its index and runs its mailbox before it
        // leaves (`Starting` has no such thread yet, and may never get one). The `retiring`
        // canary of scripts/loom.sh picks retiring slots too, whose thread may have run its
        // mailbox already: the call waits for ever.
        let picked = slots.running();
        let k = picked.len();
        // Entered under `slots`, which `begin_shutdown` holds while it closes the shards: no
        // worker exits while our jobs are outstanding, or we see the close and run nothing.
        if k == 0 || !shard.progress.enter_shared_n(k as u64) {
            drop(slots);
            if k > 0 {
                reg.revoke_entries(shard, k as u64);
            }
            return Vec::new();
        }
        shard.stats.stat_shared(Stat::Submitted, k as u64);
        state.results.lock().resize_with(k, || None);
        state.remaining.store(k, Ordering::Relaxed);
        for (pos, &index) in picked.iter().enumerate() {
            let ptr = BroadcastPtr(&state);
            // SAFETY: this job's unit of `remaining` keeps the broadcast alive until `run`
            // decrements it.
            let call = move || unsafe { Broadcast::run(ptr.get(), pos, index) };
            // SAFETY: the job borrows `state` and `f`, which live until the latch below
            // opens, which needs every job to have run.
            let job = unsafe { Job::new_unchecked(call, COUNTED) };
            reg.queues.mailboxes().put(index, job);
        }
        drop(slots);
        for &index in &picked {
            reg.sleep.wake_specific(index);
        }
        // On a worker (of this pool or another) its pool's tasks run here meanwhile; on one
        // of ours, its own call among them.
        latch::wait(&state.latch);
        if let Some(payload) = state.panic.lock().take() {
            resume_unwind(payload);
        }
        let results = std::mem::take(&mut *state.results.lock());
        results
            .into_iter()
            .map(|r| r.expect("flock: every broadcast call returned or panicked"))
            .collect()
    }
}
