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
//! task), its re-check before parking includes it, and a worker about to retire runs what
//! its mailbox holds first, its slot marked retiring only with the mailbox empty. Why the
//! wake is not lost is in `docs/protocol.md` ("Broadcasts").

use crate::job::{stack, Outcome, COUNTED};
use crate::latch::Owner;
use crate::metrics::counters::Stat;
use crate::pool::Pool;
use crate::sync::Mutex;
use crate::unwind::drop_payload;
use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// One broadcast's calls, shared by its jobs (`stack::fan_out`) until every one has run.
struct Calls<'f, F, R> {
    f: &'f F,
    /// Per picked slot, in slot order, the call's value.
    results: Mutex<Vec<Option<R>>>,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl<F, R> Calls<'_, F, R>
where
    F: Fn(usize) -> R + Sync,
    R: Send,
{
    /// The call for worker `index`, the `pos`th picked.
    fn run(&self, pos: usize, index: usize) -> Outcome {
        match catch_unwind(AssertUnwindSafe(|| (self.f)(index))) {
            Ok(value) => {
                self.results.lock()[pos] = Some(value);
                Outcome::Done
            }
            Err(payload) => {
                let mut first = self.panic.lock();
                match *first {
                    None => *first = Some(payload),
                    Some(_) => drop_payload(payload),
                }
                Outcome::Panicked
            }
        }
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
        let owner = Owner::current(reg);
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
        let calls = Calls {
            f: &f,
            results: Mutex::new((0..k).map(|_| None).collect()),
            panic: Mutex::new(None),
        };
        // On a worker (of this pool or another) its pool's tasks run in `fan_out`'s wait;
        // on one of ours, its own call among them.
        let ((), state) = stack::fan_out(calls, owner, |jobs| {
            for (pos, &index) in picked.iter().enumerate() {
                let job = jobs.job(COUNTED, move |calls: &Calls<'_, F, R>| {
                    calls.run(pos, index)
                });
                reg.queues.mailboxes().put(index, job);
            }
            drop(slots);
            for &index in &picked {
                reg.sleep.wake_specific(index);
            }
        });
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
