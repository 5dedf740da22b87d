//! A task submitted from inside the pool, by a task running on a worker: counted on the
//! worker's own shard and pushed onto its own deque (the first two stages of a task's path
//! for local work; tasks from outside go through `registry/admission.rs` and
//! `registry/dispatch.rs`). `join` pops its job back from there (`pop_local`).

use super::WorkerThread;
use crate::job::{Job, JobRef};
use crate::metrics::counters::{LaneStat, Stat};
use crate::registry::Progress;

impl WorkerThread {
    /// Pushes a job onto this worker's own deque of the running task's lane: no lock, no
    /// shared read-modify-write.
    #[inline]
    pub(crate) fn push_local(&self, job: Job) {
        self.locals[self.clock.lane()].push(job);
        self.shard().stats.stat_owned(Stat::LocalPushes, 1);
        self.notify_local_work();
    }

    /// Whether `join` takes the two-word path through our join deque (`join.rs`): in a pool
    /// with one lane (`RunMode::joins_by_ref`). With lanes, a join's second half goes onto
    /// the lane's deque as a `Job`, so that whoever runs it runs it in its lane.
    #[inline]
    pub(crate) fn joins_by_ref(&self) -> bool {
        self.mode.joins_by_ref()
    }

    /// Pushes `join`'s second half onto our join deque, then the light side of the
    /// asymmetric barrier, as for any local push (docs/protocol.md, "Local pushes").
    #[inline]
    pub(crate) fn push_join(&self, job: JobRef) {
        self.joins.push(job);
        self.shard().stats.stat_owned(Stat::LocalPushes, 1);
        self.notify_local_work();
    }

    /// Puts back an entry a waiting worker popped from our join deque and will not run (its
    /// latch opened meanwhile, `wait_until_cold`): at the bottom, where it was, so the
    /// deque's order is as before the pop, and not counted as a push. It wakes a sleeper as
    /// a push does: while the entry was off the deque, a worker may have looked and parked.
    #[cold]
    pub(crate) fn put_back_join(&self, job: JobRef) {
        self.joins.push(job);
        self.notify_local_work();
    }

    /// Whether a scope task spawned here takes the two-word path through our join deque
    /// (`scope.rs`): in a pool with one lane and no latency tracking, whose `execute` has
    /// nothing to do for a task but run it and count its end (`execute_ref`), unless the
    /// pool is built with `fifo()`. The join deque is LIFO in every pool (a join pops its
    /// own half back), so there a worker's scope spawns go to its task deque, FIFO, as
    /// `PoolBuilder::fifo` promises for every task a worker spawns.
    #[inline]
    pub(crate) fn spawns_by_ref(&self) -> bool {
        self.scope.spawns_by_ref
    }

    /// A scope task spawned from inside the pool (`spawns_by_ref`): counted on our own shard
    /// as `submit_local` counts a task, and pushed onto our join deque, a local push.
    #[inline]
    pub(crate) fn submit_local_ref(&self, job: JobRef) {
        debug_assert!(self.spawns_by_ref() && job.counted());
        let shard = self.shard();
        // Entered before the push, as in `submit_local` (a thief may run it at once).
        shard.progress.add_owned(Progress::Entered, 1);
        shard.stats.stat_owned(Stat::Submitted, 1);
        self.joins.push(job);
        shard.stats.stat_owned(Stat::LocalPushes, 1);
        self.notify_local_work();
    }

    /// The most recent entry on our join deque, for the worker loop and the waiting loop,
    /// which look there first: `is_empty` (two loads, inline) spares them the call into
    /// the deque's `pop` when there is none, as between outside tasks (callgrind: 30
    /// instructions an outside submit, both sides).
    #[inline]
    pub(crate) fn pop_own_ref(&self) -> Option<JobRef> {
        if self.joins.is_empty() {
            return None;
        }
        self.joins.pop()
    }

    /// The most recent entry on our join deque: a join half, or a scope task.
    #[inline]
    pub(crate) fn pop_join(&self) -> Option<JobRef> {
        self.joins.pop()
    }

    /// A task submitted from inside the pool: counted on our own shard, onto our own deque
    /// of `lane` (`None`: the running task's lane).
    #[inline]
    pub(crate) fn submit_local(&self, mut job: Job, lane: Option<usize>) {
        let reg = &*self.registry;
        if reg.latency.is_some() {
            job.stamp(reg.now_ns());
        }
        let shard = self.shard();
        shard.progress.add_owned(Progress::Entered, 1);
        shard.stats.stat_owned(Stat::Submitted, 1);
        let lane = self.local_lane(lane);
        if self.locals.len() > 1 {
            shard.stats.lane_owned(LaneStat::Submitted, lane, 1);
        }
        self.locals[lane].push(job);
        shard.stats.stat_owned(Stat::LocalPushes, 1);
        self.notify_local_work();
    }

    /// Many tasks submitted from inside the pool at once (`submit_batch`, `for_each`): one
    /// count for the lot, each push announced as it is made (the iterator may block on an
    /// earlier task), and one call that wakes sleepers for all of them.
    pub(crate) fn submit_local_batch(
        &self,
        jobs: impl Iterator<Item = Job>,
        lane: Option<usize>,
    ) -> usize {
        let reg = &*self.registry;
        let lane = self.local_lane(lane);
        let stamp = reg.latency.as_ref().map(|_| reg.now_ns());
        let shard = self.shard();
        let mut n = 0;
        for mut job in jobs {
            if let Some(t) = stamp {
                job.stamp(t);
            }
            // Entered before the push, as in `submit_local` (a thief may run it at once).
            shard.progress.add_owned(Progress::Entered, 1);
            self.locals[lane].push(job);
            // Each push announced before the iterator, the caller's code, runs again: it
            // may block until a task it yielded before has run (a channel, a lock), and with
            // one announcement at the end the other workers slept through the pushes (a lost
            // wake-up). The light side of the barrier, as for any local push.
            self.notify_local_work();
            n += 1;
        }
        shard.stats.stat_owned(Stat::Submitted, n as u64);
        shard.stats.stat_owned(Stat::LocalPushes, n as u64);
        if self.locals.len() > 1 {
            shard.stats.lane_owned(LaneStat::Submitted, lane, n as u64);
        }
        // Then as many sleepers as there are jobs beyond the searchers, woken together
        // (`notify_new_work_n`, F1 and the state test): the pushes above woke at most one,
        // and the searchers' chain would wake the rest one at a time.
        if n > 1 {
            reg.sleep.notify_new_work_n(n);
        }
        n
    }

    /// After a push onto our own deques: the sleep protocol's light side
    /// (`Sleep::notify_local_work`), counting the pushes that found a sleeper.
    #[inline]
    pub(super) fn notify_local_work(&self) {
        if self.registry.sleep.notify_local_work(&self.fenced_pushes) {
            self.shard().stats.stat_owned(Stat::LocalPushWakeChecks, 1);
        }
    }

    /// Pops the most recent job of our own deque of the running task's lane (used by `join`
    /// to take its job back; a bundle's entry there is taken up).
    #[inline]
    pub(crate) fn pop_local(&self) -> Option<Job> {
        self.pop_own(self.clock.lane())
    }

    /// Whether this worker's own deques (its lanes' and its join deque) hold a job: what
    /// `current_thread_has_pending_tasks` reports.
    pub(crate) fn has_local_work(&self) -> bool {
        !self.joins.is_empty() || self.locals.iter().any(|d| !d.is_empty())
    }
}
