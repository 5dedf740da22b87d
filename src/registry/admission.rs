//! Admission, the first stage of a task's path from outside the pool: the submitter enters
//! the task on its shard, the shutdown check, a unit of capacity (`pending`) reserved, and
//! when the queue is full the backpressure policy (reject, run on the caller, a helper
//! thread, or block for room); refusals are counted here, and `release_pending` gives
//! capacity back. Async submitters wait for room as futures in `src/admit.rs`. An admitted
//! task goes where its `Route` says (`registry/dispatch.rs`).

use super::quiet::Progress;
use super::shards::Shard;
use super::{Registry, RUNNING};
use crate::config::Backpressure;
use crate::metrics::counters::Stat;
use crate::sync::Ordering;
use crate::RejectReason;

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
        if !self.gate.is_bounded() {
            return Ok(Route::Queue { reserved: false });
        }
        if self.gate.try_reserve(Ordering::Relaxed) {
            return Ok(Route::Queue { reserved: true });
        }
        self.when_full(shard, policy)
    }

    /// Admission for an async submitter (`src/admit.rs`): as `admit` under a policy that
    /// waits, but never waiting here. `Ok(None)` when the queue is full: nothing was entered
    /// or counted, and the caller registers for room and tries again.
    pub(crate) fn try_admit_async(&self, shard: &Shard) -> Result<Option<Route>, RejectReason> {
        let reserved = self.gate.is_bounded();
        // SeqCst: this is the re-check of docs/protocol.md's "Backpressure" handshake (the
        // caller registered its waker before), paired with `release_pending`'s RMW + load.
        if reserved && !self.gate.try_reserve(Ordering::SeqCst) {
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
                self.gate.release_pending(1);
            }
            return Err(self.revoke(shard, RejectReason::Shutdown));
        }
        Ok(Some(Route::Queue { reserved }))
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
            Backpressure::SpawnThread if self.gate.try_take_helper_slot() => Ok(Route::Helper),
            Backpressure::SpawnThread | Backpressure::Block => self.block_for_room(shard),
        }
    }

    /// Parks the submitter until a unit of capacity frees up, the pool shuts down, or the
    /// block timeout passes (`Gate::block_for_room`); a refusal revokes the entry.
    #[cold]
    fn block_for_room(&self, shard: &Shard) -> Result<Route, RejectReason> {
        // SeqCst, read under `room_lock`: see `Gate::block_for_room` and `begin_shutdown`.
        let closed = || self.shutdown.load(Ordering::SeqCst) != RUNNING;
        match self.gate.block_for_room(closed) {
            Ok(()) => Ok(Route::Queue { reserved: true }),
            Err(reason) => Err(self.revoke(shard, reason)),
        }
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
}
