//! Admission, the first stage of a task's path from outside the pool: the submitter enters
//! the task on its shard, the shutdown check, a unit of capacity (`pending`) reserved, and
//! when the queue is full the backpressure policy (reject, run on the caller, a helper
//! thread, or block for room); refusals are counted here, and `release_pending` gives
//! capacity back. Async submitters wait for room as futures in `src/admit.rs`. An admitted
//! task goes where its `Route` says (`registry/dispatch.rs`).

use super::quiet::Progress;
use super::shards::Shard;
use super::{Registry, RUNNING};
use crate::builder::Backpressure;
use crate::metrics::counters::Stat;
use crate::sync::{canary, Canary, Ordering};
use crate::RejectReason;
use std::time::Instant;

/// Where an admitted task goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Onto the injector; `reserved` when it holds a unit of `pending`.
    Queue { reserved: bool },
    /// Run on the submitting thread (`Backpressure::CallerRuns`).
    Caller,
    /// Run on a new helper thread (`Backpressure::SpawnThread`); a helper slot is held.
    Helper,
}

/// How admission treats a full queue, and a closed pool.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Admission {
    /// Capacity applies; a full queue is handled by this policy. A refused task goes back
    /// to the submitter and is counted refused.
    Bounded(Backpressure),
    /// A scope's task: capacity applies, with `CallerRuns`. After shutdown the scope runs
    /// the task on its caller instead (so that the scope completes): not a refusal, and
    /// not a task of the pool either, so no counter counts it.
    Scoped,
    /// Capacity does not apply (`join` from outside, whose caller blocks on it anyway).
    /// After shutdown the caller runs the job itself, counted nowhere, as for `Scoped`.
    Unbounded,
}

impl Admission {
    /// The policy for a full queue; `None` when capacity does not apply.
    pub(super) fn policy(self) -> Option<Backpressure> {
        match self {
            Admission::Bounded(policy) => Some(policy),
            Admission::Scoped => Some(Backpressure::CallerRuns),
            Admission::Unbounded => None,
        }
    }
}

impl Registry {
    /// Admits one task from a thread outside the pool: enters it, checks shutdown, reserves
    /// capacity, and applies the policy when full. On `Err` the entry is already revoked.
    #[inline]
    pub(crate) fn admit(&self, shard: &Shard, admission: Admission) -> Result<Route, RejectReason> {
        if !shard.progress.enter_shared() {
            return Err(self.refuse_closed(shard, admission, 1));
        }
        let Some(policy) = admission.policy() else {
            return Ok(Route::Queue { reserved: false });
        };
        if self.cfg.capacity == usize::MAX {
            return Ok(Route::Queue { reserved: false });
        }
        if self.try_reserve(Ordering::Relaxed) {
            return Ok(Route::Queue { reserved: true });
        }
        self.when_full(shard, policy)
    }

    /// Admission for an async submitter (`src/admit.rs`): as `admit` under a policy that
    /// waits, but never waiting here. `Ok(None)` when the queue is full: nothing was entered
    /// or counted, and the caller registers for room and tries again.
    pub(crate) fn try_admit_async(&self, shard: &Shard) -> Result<Option<Route>, RejectReason> {
        let reserved = self.cfg.capacity != usize::MAX;
        // SeqCst: this is the re-check of sleep/README.md's "Backpressure" handshake (the
        // caller registered its waker before), paired with `release_pending`'s RMW + load.
        if reserved && !self.try_reserve(Ordering::SeqCst) {
            // Shutdown wakes the room wakers after raising the flag: a waiter that
            // registered before that lock is woken, one after it sees the flag here.
            if self.is_shutdown() {
                self.count_refused(RejectReason::Shutdown, 1);
                return Err(RejectReason::Shutdown);
            }
            return Ok(None);
        }
        if !shard.progress.enter_shared() {
            if reserved {
                self.release_pending(1);
            }
            return Err(self.revoke(shard, RejectReason::Shutdown));
        }
        Ok(Some(Route::Queue { reserved }))
    }

    /// One unit of `pending`, if below capacity. Relaxed on the fast path: a failed attempt
    /// is re-made behind the `blocked` handshake (`block_for_room`) before anyone sleeps.
    ///
    /// Inline, with everything past a full queue out of line (`undo_reservation`,
    /// `retry_after_crossing`): it is on every outside submit's path, and as one function
    /// with its loop and wake it was no longer inlined, 31 instructions a submit (callgrind,
    /// `instr-submit`: 412 before the low-water mark, 443 after).
    #[inline]
    pub(super) fn try_reserve(&self, order: Ordering) -> bool {
        match self.reserve_or_undo(order) {
            Reserved::Yes => true,
            Reserved::Full => false,
            Reserved::Crossed => self.retry_after_crossing(order),
        }
    }

    /// Our undo stood for the release that crossed the mark: wake as it would have, then
    /// try again (there is room).
    #[cold]
    fn retry_after_crossing(&self, order: Ordering) -> bool {
        loop {
            self.wake_for_room();
            match self.reserve_or_undo(order) {
                Reserved::Yes => return true,
                Reserved::Full => return false,
                Reserved::Crossed => {}
            }
        }
    }

    /// Adds a unit to `pending`, kept if it was below capacity, else taken back. The taking
    /// back is a decrement like a release's: if releases ran between our add and it, it can
    /// be the one that takes `pending` below the low-water mark (`room_mark`), and then it
    /// must wake blocked submitters in their stead (`Reserved::Crossed`; sleep/README.md,
    /// "Backpressure").
    #[inline]
    fn reserve_or_undo(&self, order: Ordering) -> Reserved {
        if self.pending.fetch_add(1, order) < self.cfg.capacity {
            return Reserved::Yes;
        }
        self.undo_reservation()
    }

    /// `reserve_or_undo`'s add found the queue full: take it back.
    #[cold]
    fn undo_reservation(&self) -> Reserved {
        // SeqCst, as a release's RMW: this may be the crossing decrement, which must see the
        // `blocked` increment of a submitter whose re-check it follows in `pending`'s order.
        // The `undo` canary never wakes for the crossing, so that the loom model of
        // it must hang (scripts/loom.sh).
        if self.pending.fetch_sub(1, Ordering::SeqCst) == self.mark() && !canary(Canary::Undo) {
            Reserved::Crossed
        } else {
            Reserved::Full
        }
    }

    /// The low-water mark (`room_mark`); one lower under the `room` canary of scripts/loom.sh,
    /// which must then hang `loom_block_wakes_at_the_low_water_mark`.
    #[inline]
    fn mark(&self) -> usize {
        self.room_mark - usize::from(canary(Canary::Room))
    }

    /// What a decrement of `pending` that crossed the low-water mark owes the blocked
    /// submitters: under `room_lock`, wake the blocked threads; and wake the async waiters.
    fn wake_for_room(&self) {
        // SeqCst: after the caller's SeqCst RMW on `pending` (see `release_pending`).
        if self.blocked.load(Ordering::SeqCst) > 0 {
            let _guard = self.room_lock.lock();
            self.room_cond.notify_all();
        }
        self.room_wakers.wake_all();
    }

    #[cold]
    pub(super) fn when_full(
        &self,
        shard: &Shard,
        policy: Backpressure,
    ) -> Result<Route, RejectReason> {
        match policy {
            Backpressure::Reject => Err(self.revoke(shard, RejectReason::Full)),
            Backpressure::CallerRuns => Ok(Route::Caller),
            Backpressure::SpawnThread if self.try_take_helper_slot() => Ok(Route::Helper),
            Backpressure::SpawnThread | Backpressure::Block => self.block_for_room(shard),
        }
    }

    fn try_take_helper_slot(&self) -> bool {
        let max = self.cfg.max_spawned_threads;
        let mut n = self.helpers_live.load(Ordering::Relaxed);
        while n < max {
            match self.helpers_live.compare_exchange_weak(
                n,
                n + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    /// Parks the submitter until a unit of capacity frees up, the pool shuts down, or the
    /// block timeout passes.
    #[cold]
    fn block_for_room(&self, shard: &Shard) -> Result<Route, RejectReason> {
        let deadline = self.cfg.block_timeout.map(|d| Instant::now() + d);
        // SeqCst: pairs with the SeqCst `pending` RMW + `blocked` load in `release_pending`.
        self.blocked.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.room_lock.lock();
        let mut timed_out = false;
        let result = loop {
            // Read under `room_lock`: `begin_shutdown` raises the flag before it takes
            // `room_lock` to notify, so we either see it here or are waiting when it notifies.
            if self.shutdown.load(Ordering::SeqCst) != RUNNING {
                break Err(RejectReason::Shutdown);
            }
            match self.reserve_or_undo(Ordering::SeqCst) {
                Reserved::Yes => break Ok(Route::Queue { reserved: true }),
                Reserved::Full => {}
                Reserved::Crossed => {
                    // As `wake_for_room`: notify under `room_lock`, held already; wake the
                    // async waiters outside it (a waker is a user's code, and may submit);
                    // then look again under the lock.
                    self.room_cond.notify_all();
                    drop(guard);
                    self.room_wakers.wake_all();
                    guard = self.room_lock.lock();
                    continue;
                }
            }
            if timed_out {
                break Err(RejectReason::Timeout);
            }
            timed_out = !self.room_cond.wait_until(&mut guard, deadline);
        };
        drop(guard);
        self.blocked.fetch_sub(1, Ordering::Relaxed);
        result.map_err(|reason| self.revoke(shard, reason))
    }

    /// Takes back `n` entries that were not refused, only not needed (a broadcast that found
    /// the pool shut down): no refusal is counted.
    #[cold]
    pub(crate) fn revoke_entries(&self, shard: &Shard, n: u64) {
        shard.progress.add_shared(Progress::Revoked, n);
        self.after_finish_off_worker();
    }

    /// Takes back an entry the pool will not run. Returns `reason` for convenience.
    #[cold]
    fn revoke(&self, shard: &Shard, reason: RejectReason) -> RejectReason {
        self.revoke_n(shard, reason, 1)
    }

    /// Takes back `n` entries refused because the pool is closed. Counted refused only when
    /// they go back to the submitter: a scope's or a `join`'s caller runs them itself.
    #[cold]
    pub(super) fn refuse_closed(
        &self,
        shard: &Shard,
        admission: Admission,
        n: u64,
    ) -> RejectReason {
        if let Admission::Bounded(_) = admission {
            return self.revoke_n(shard, RejectReason::Shutdown, n);
        }
        shard.progress.add_shared(Progress::Revoked, n);
        self.after_finish_off_worker();
        RejectReason::Shutdown
    }

    /// Takes back `n` entries the pool will not run.
    #[cold]
    pub(super) fn revoke_n(&self, shard: &Shard, reason: RejectReason, n: u64) -> RejectReason {
        shard.progress.add_shared(Progress::Revoked, n);
        Registry::count_refused_on(shard, reason, n);
        self.after_finish_off_worker();
        reason
    }

    /// Counts `n` tasks refused for `reason` that were never entered (the tail of a batch
    /// handed back with its refused head).
    #[cold]
    pub(crate) fn count_refused(&self, reason: RejectReason, n: u64) {
        Registry::count_refused_on(self.shards.external(), reason, n);
    }

    fn count_refused_on(shard: &Shard, reason: RejectReason, n: u64) {
        let stat = match reason {
            RejectReason::Full => Stat::RejectedFull,
            RejectReason::Timeout => Stat::RejectedTimeout,
            RejectReason::Shutdown => Stat::RejectedShutdown,
            // Refused before anything is entered (`Pool::submit_to`), counted from there.
            RejectReason::UnknownLane => Stat::RejectedUnknownLane,
        };
        shard.stats.stat_shared(stat, n);
    }

    /// Up to `k` units of `pending`, as many as fit below capacity.
    pub(super) fn try_reserve_up_to(&self, k: usize) -> usize {
        if self.cfg.capacity == usize::MAX {
            return k;
        }
        let mut now = self.pending.load(Ordering::Relaxed);
        loop {
            let take = k.min(self.cfg.capacity.saturating_sub(now));
            if take == 0 {
                return 0;
            }
            match self.pending.compare_exchange_weak(
                now,
                now + take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return take,
                Err(seen) => now = seen,
            }
        }
    }

    /// Gives back `n` units of `pending`, and wakes blocked submitters if this took it from
    /// at or above the low-water mark (`room_mark`) to below it.
    ///
    /// Only that crossing can matter: a blocked submitter saw `pending >= capacity` (at or
    /// above the mark) in its re-check, and `pending` only falls below the mark through a
    /// decrement whose previous value was at or above it: this release, or the undo of a
    /// failed reservation, which then wakes in its stead (`reserve_or_undo`). Waking on every
    /// release instead made 100 blocked submitters thrash on `room_lock` once per task (the
    /// 100u-10Kt benchmark: 8× slower); waking at the first room, one submitter that keeps the
    /// queue full slept and woke once per worker flush.
    pub(crate) fn release_pending(&self, n: usize) {
        // SeqCst RMW then SeqCst load: pairs with `block_for_room`'s `blocked` increment and
        // its re-check of `pending` (RMWs on `pending` are totally ordered; the one that reads
        // the other's value synchronises with it).
        let prev = self.pending.fetch_sub(n, Ordering::SeqCst);
        let mark = self.mark();
        if prev >= mark && prev - n < mark {
            self.wake_for_room();
        }
    }
}

#[cfg(all(test, flock_loom))]
impl Registry {
    /// Units of `pending` taken now, for the loom models' checks.
    pub(crate) fn pending_units(&self) -> usize {
        // SeqCst: a model's check after the threads it looks at have joined, or of its own
        // thread's effects; it orders nothing else.
        self.pending.load(Ordering::SeqCst)
    }
}

/// What `reserve_or_undo` did.
enum Reserved {
    /// A unit is ours.
    Yes,
    /// The queue was full, and our undo left `pending` where the next release will wake.
    Full,
    /// The queue was full, but releases ran meanwhile and our undo took `pending` below the
    /// low-water mark: no release will wake the blocked submitters for that crossing, we must.
    Crossed,
}

/// A blocked submitter sleeps until `pending` falls below `capacity - capacity / ROOM_SLACK`
/// (`room_mark`). Two under loom, so that the models' capacities of 2 to 4 have a mark below
/// capacity and go through it.
const ROOM_SLACK: usize = if cfg!(flock_loom) { 2 } else { 32 };

/// Where `release_pending` wakes blocked submitters (sleep/README.md, "Backpressure"):
/// `capacity - capacity / 32`, so below 32 at the first room, as before. A submitter that
/// keeps the queue full then sleeps and wakes once per `capacity / 32` tasks started, not once
/// per flush of a worker (`flush_threshold`, at most 64): `cpu-1us`'s submitter went from
/// ~1,250 context switches a run to ~55 (`drain_probe cpu`).
pub(super) fn room_mark(capacity: usize) -> usize {
    capacity - capacity / ROOM_SLACK
}
