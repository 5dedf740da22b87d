//! Running a task, the last stage of its path: `execute` counts where the task came from,
//! drops it unrun during `shutdown_now`, and runs it on the short path (`run_plain`), the
//! timed one (`run_timed`: one lane, latency) or the tracked one (`run_tracked`: lanes);
//! then the end-of-task accounting (how it ended, capacity units given back).

use super::{RunMode, WorkerThread};
use crate::job::{Job, JobRef, Outcome, BUNDLE, COUNTED, DISCARDABLE, INJECTED, RESERVED};
use crate::metrics::counters::{LaneStat, Stat, WorkerState};
use crate::registry::Progress;
use std::panic::{catch_unwind, AssertUnwindSafe};

impl WorkerThread {
    /// Runs one job of `lane` and counts how it ended (never a bundle's entry: those are
    /// taken up where they are found, `take_up`).
    pub(crate) fn execute(&self, job: Job, lane: usize) {
        debug_assert_eq!(job.flags() & BUNDLE, 0, "bundles are taken up, never run");
        // Before any task but one of the scope whose units we hold (those come through
        // `execute_ref`): it might wait for that scope (docs/protocol.md, "Scope counts held
        // by workers").
        self.credit().settle();
        let shard = self.shard();
        shard.stats.set_state(WorkerState::Running);
        let flags = job.flags();
        if flags & INJECTED != 0 {
            shard.stats.stat_owned(Stat::FromInjector, 1);
        }
        if flags & RESERVED != 0 {
            self.hold_unit_of_started_job();
        }
        if flags & DISCARDABLE != 0 && self.registry.is_stopping_now() {
            self.discard(job);
            return;
        }
        let counted = flags & COUNTED != 0;
        match self.mode {
            RunMode::Plain => self.run_plain(job, counted),
            RunMode::Timed => self.run_timed(job, counted),
            RunMode::Lanes => self.run_tracked(job, lane, counted),
        }
    }

    /// Runs an entry of a join deque: a join half (not counted) or a scope task of a pool
    /// with one lane and no latency tracking (counted), neither of which is ever injected,
    /// reserved, discarded or timed (`JobRef`). Always inline: out of line it cost a
    /// spawned scope task 15 instructions (callgrind, 222 against 237).
    #[inline(always)]
    pub(crate) fn execute_ref(&self, job: JobRef) {
        debug_assert!(
            self.mode.is_plain() || !job.counted(),
            "counted entries need `run_plain`"
        );
        let counted = job.counted();
        // No `run_timed` here: the next task starts its own clock.
        self.clock.clear_last_end();
        if !counted {
            // A join half: as in `execute`. (A scope task gives back units of any other
            // scope itself, `run_task_keeping_unit`.)
            self.credit().settle();
        }
        let shard = self.shard();
        shard.stats.set_state(WorkerState::Running);
        // Both kinds catch their own panics; this only keeps a bug there from unwinding
        // through the worker loop.
        let result = catch_unwind(AssertUnwindSafe(|| job.run()));
        if let (true, Some(end)) = (counted, self.end_of(result)) {
            shard.progress.add_owned(end, 1);
        }
    }

    /// The run of a pool with one lane and no latency tracking: nothing to time, no lane to
    /// switch, no reserve to tell.
    #[inline]
    fn run_plain(&self, job: Job, counted: bool) {
        let result = catch_unwind(AssertUnwindSafe(|| job.run()));
        if let (true, Some(end)) = (counted, self.end_of(result)) {
            self.shard().progress.add_owned(end, 1);
        }
    }

    /// The run of a pool with one lane and latency tracking: `run_tracked` without what
    /// only lanes need (the lane switch, nested time, the reserve, charging): at most two
    /// clock readings and the two histograms. A task that is not counted is not timed.
    ///
    /// A task that follows another here with nothing in between but taking it from its
    /// queue starts its clock where the other ended (`last_end`), or where it was queued if
    /// that is later: one clock reading per task instead of two, and the run time counts
    /// the taking (tens of nanoseconds; a clock reading is most of what latency tracking
    /// costs a task, `drain_probe clock` measures it). Any other path a worker takes between tasks (finding nothing, an
    /// uncounted job) clears `last_end`, so idle time is never counted as a task's.
    #[inline]
    fn run_timed(&self, job: Job, counted: bool) {
        // Taken: a task that runs nested inside this one (a join's wait) must not start
        // where the task before this one ended.
        let last_end = self.clock.take_last_end();
        if !counted {
            return self.run_plain(job, false);
        }
        let reg = &*self.registry;
        let queued_at = job.queued_at_ns();
        let start = if last_end != 0 {
            last_end.max(queued_at)
        } else {
            reg.now_ns()
        };
        let result = catch_unwind(AssertUnwindSafe(|| job.run()));
        let Some(end) = self.end_of(result) else {
            return;
        };
        let now = reg.now_ns();
        // Tasks this one ran nested (while it waited) cleared it: ours is the latest end.
        self.clock.set_last_end(now);
        let run = now.saturating_sub(start);
        if let Some(latency) = &reg.latency {
            let mine = latency.worker(self.index);
            mine.wait.record_owned(start.saturating_sub(queued_at));
            mine.run.record_owned(run);
        }
        // After the histograms, as in `run_tracked`: a reader that sees the task end sees
        // its times.
        self.shard().progress.add_owned(end, 1);
    }

    /// How a run ended, for the counters (`None`: it was skipped); a panic that escaped the
    /// job is reported.
    #[inline]
    fn end_of(&self, result: std::thread::Result<Outcome>) -> Option<Progress> {
        match result {
            Ok(Outcome::Done) => Some(Progress::Completed),
            Ok(Outcome::Panicked) => Some(Progress::Panicked),
            Ok(Outcome::Skipped) => None,
            Err(payload) => {
                self.registry.report_panic(Some(self.index), payload);
                Some(Progress::Panicked)
            }
        }
    }

    /// The run of a pool with lanes or latency tracking: the task's lane, start and run time
    /// are kept for fair queueing, `yield_to_lanes`, the reserve and the histograms.
    fn run_tracked(&self, job: Job, lane: usize, counted: bool) {
        let shard = self.shard();
        let lanes = self.locals.len() > 1;
        let reg = &*self.registry;
        let queued_at = job.queued_at_ns();
        let start = (lanes || (counted && reg.latency.is_some())).then(|| reg.now_ns());
        let outer = self.clock.enter(lane, start.unwrap_or(0));
        // Tell the lane reserve which lane we run (a nested task's lane while it runs).
        let outer_weight = reg.lane_reserve.as_ref().map(|r| {
            let weight = reg.cfg.lanes[lane].1 as usize;
            let outer = r.publish(self.index, weight);
            r.after_start(reg, weight);
            outer
        });
        let result = catch_unwind(AssertUnwindSafe(|| job.run()));
        if let (Some(reserve), Some(weight)) = (&reg.lane_reserve, outer_weight) {
            reserve.publish(self.index, weight);
        }
        let inner_ns = self.clock.leave(&outer);
        let end = self.end_of(result);
        let Some(start) = start else {
            self.clock.set_nested_ns(outer.nested_ns);
            if let (true, Some(end)) = (counted, end) {
                shard.progress.add_owned(end, 1);
            }
            return;
        };
        let total = reg.now_ns().saturating_sub(start);
        // Our whole run counts as nested time of the task we run inside, if any.
        self.clock.set_nested_ns(outer.nested_ns + total);
        let counted_end = if counted { end } else { None };
        if let (Some(latency), Some(_)) = (&reg.latency, counted_end) {
            let mine = latency.worker(self.index);
            mine.wait.record_owned(start.saturating_sub(queued_at));
            mine.run.record_owned(total);
        }
        if lanes {
            // Tasks run inside this one (while it waited in `join` or `scope`) were charged
            // to their own lanes already.
            let own = total.saturating_sub(inner_ns);
            self.charge(lane, own);
            if counted_end.is_some() {
                shard.stats.lane_owned(LaneStat::Executed, lane, 1);
                shard.stats.lane_owned(LaneStat::BusyNs, lane, own);
            }
        }
        if let Some(end) = counted_end {
            shard.progress.add_owned(end, 1);
        }
    }

    /// `shutdown_now`: drop a queued task unrun, its destructor included.
    #[cold]
    fn discard(&self, job: Job) {
        if job.discard_counted() {
            // In this order: see `Quiet::note_dropped_by_shutdown`.
            self.registry.quiet.note_dropped_by_shutdown(1);
            self.shard().progress.add_owned(Progress::Dropped, 1);
        }
    }

    /// A `RESERVED` task started here: we hold its unit of capacity and give it back with
    /// the next lot (`flush_threshold` units, or when this worker runs out of work).
    pub(crate) fn hold_unit_of_started_job(&self) {
        if let Some(n) = self.units.add_one(self.registry.gate.flush_threshold()) {
            self.registry.gate.release_pending(n);
        }
    }

    /// Gives back every unit of capacity we hold (`hold_unit_of_started_job`).
    pub(super) fn give_back_held_units(&self) {
        let n = self.units.take_all();
        if n > 0 {
            self.registry.gate.release_pending(n);
        }
    }
}
