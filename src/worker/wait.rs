//! A worker waiting inside a task (`join`, `scope`, `flock::yield_now`): it runs this pool's
//! tasks until a latch opens, and parks as a listed sleeper when there are none
//! (docs/protocol.md, "Waiting workers"). While the pool is paused it runs only tasks that
//! running tasks spawned.

use super::WorkerThread;
use crate::job::{Job, JobRef, INJECTED};
use crate::latch::Latch;
use crate::metrics::counters::{Stat, WorkerState};
use crate::registry::Crew;
use crate::sync::{canary, Canary};
use crossbeam_utils::Backoff;

impl WorkerThread {
    /// Runs this pool's tasks until `latch` opens, parking as a listed sleeper when there is
    /// nothing to run (docs/protocol.md, "Waiting workers"). The latch may belong to another
    /// pool; its owner must be this worker (`latch::Owner`). While the pool is paused only
    /// tasks that running tasks spawned are run, never ones submitted from outside.
    #[inline]
    pub(crate) fn wait_until(&self, latch: &Latch) {
        if !latch.probe() {
            self.wait_until_cold(latch);
        }
    }

    #[cold]
    fn wait_until_cold(&self, latch: &Latch) {
        let mut searching = false;
        let spin_limit = self.registry.cfg.spin_limit;
        loop {
            // 1. Run what there is, spinning up to `spin_limit` rounds when there is nothing
            // (as an idle worker does before it parks).
            let backoff = Backoff::new();
            let mut rounds = 0;
            loop {
                if latch.probe() {
                    if searching {
                        self.stop_searching();
                    }
                    return;
                }
                // Our join deque first (spawned work only, so also while paused): the
                // two-word path of a scope task (`execute_ref`).
                if let Some(job) = self.pop_own_ref() {
                    // Units of a scope kept from its tasks go back before anything but a
                    // task of that scope runs. The latch we wait for may be that scope's,
                    // and giving them back may be what opens it: then we return, as rayon
                    // does once a scope's tasks ended, instead of first running an unrelated
                    // task, which might wait for what our caller does next
                    // (docs/protocol.md, "Scope counts held by workers").
                    if self.credit().gives_back_for(&job) {
                        self.credit().settle();
                        if latch.probe() {
                            self.put_back_join(job);
                            if searching {
                                self.stop_searching();
                            }
                            return;
                        }
                    }
                    if searching {
                        searching = false;
                        self.stop_searching();
                    }
                    self.execute_ref(job);
                    backoff.reset();
                    rounds = 0;
                    continue;
                }
                // Any other job gives the units back before it runs (`execute`): so do
                // that first, and look at the latch again, for the reason above.
                if !self.credit().is_empty() {
                    self.credit().settle();
                    if latch.probe() {
                        if searching {
                            self.stop_searching();
                        }
                        return;
                    }
                }
                if let Some((job, lane)) = self.find_work_while_waiting() {
                    if searching {
                        searching = false;
                        self.stop_searching();
                    }
                    self.execute_unless_paused_waiting(job, lane);
                    backoff.reset();
                    rounds = 0;
                    continue;
                }
                // Nothing to run (units of a scope kept from its tasks went back above).
                self.clock.clear_last_end(); // as in `go_idle`
                if rounds >= spin_limit {
                    break;
                }
                rounds += 1;
                backoff.snooze();
            }
            // 2. Park where both new work and the latch's set can wake us.
            searching = self.park_waiting(latch, searching);
        }
    }

    /// Runs a job a waiting worker took, unless it came from outside and the pool is paused:
    /// then we keep it unrun, as the worker loop does (`keep_for_resume`), and run it first
    /// once the pause is lifted. Returns whether it ran the job.
    #[inline(never)] // off join's hot path: keeps `execute` out of `join_on_worker`
    pub(crate) fn execute_unless_paused_waiting(&self, job: Job, lane: usize) -> bool {
        let reg = &*self.registry;
        if job.flags() & INJECTED != 0 && Crew::paused(reg.crew.control()) {
            self.keep_for_resume(job, lane);
            return false;
        }
        self.execute(job, lane);
        true
    }

    /// Runs a join half of ours that a `join` popped after a thief took its own half: an
    /// outer join's, pushed below it.
    #[inline(never)] // off join's hot path: keeps `execute` out of `join_on_worker`
    pub(crate) fn run_join_half(&self, job: JobRef) {
        self.execute_ref(job);
    }

    /// `flock::yield_now` on this worker, inside a task: runs one task of our pool if one is
    /// queued, as a waiting worker does (so while paused only spawned ones). The sleep state
    /// does not change: we are running a task, not searching. Returns whether one ran.
    pub(crate) fn run_one_task(&self) -> bool {
        match self.find_work_while_waiting() {
            Some((job, lane)) => self.execute_unless_paused_waiting(job, lane),
            None => false,
        }
    }

    /// A job to run while waiting: any of our pool's, or while paused only a spawned one (a
    /// job from outside taken as the pool got paused goes back unrun: the caller runs it
    /// through `execute_unless_paused_waiting`, which re-reads the pause after the take).
    fn find_work_while_waiting(&self) -> Option<(Job, usize)> {
        let reg = &*self.registry;
        if Crew::paused(reg.crew.control()) {
            return self.find_spawned_work();
        }
        self.find_work()
    }

    /// Parks a worker waiting for `latch` (docs/protocol.md, "Waiting workers"): the steps of
    /// `park`, with the latch's `SLEEPY`/`SLEEPING` around them so that its setter wakes us.
    /// No exit or retire check: we are inside a task. Returns whether we count as a
    /// searcher (always, once we announced ourselves; see `Sleep::cancel_park`).
    fn park_waiting(&self, latch: &Latch, searching: bool) -> bool {
        let sleep = &self.registry.sleep;
        if !latch.get_sleepy() {
            return searching; // set meanwhile: the loop's probe returns
        }
        self.shard().stats.set_state(WorkerState::Parked);
        self.shard().stats.stat_owned(Stat::ParkAttempts, 1);
        let ordered = sleep.announce_parked(self.index, searching);
        // After F2 and the asymmetric barrier: a set after `fall_asleep` sees SLEEPING and
        // wakes us; work pushed before our announcement is visible to the re-check.
        let paused = Crew::paused(self.registry.crew.control());
        if !latch.fall_asleep() || self.waiting_work_visible(paused) {
            latch.wake_up();
            if !sleep.cancel_park(self.index) {
                sleep.park(self.index); // a waker chose us: consume its token
            }
        } else {
            self.shard().stats.stat_owned(Stat::Parks, 1);
            sleep.park_announced(self.index, ordered);
            self.shard().stats.stat_owned(Stat::Wakeups, 1);
            latch.wake_up();
        }
        // Still inside the task that waits: it is running again.
        self.shard().stats.set_state(WorkerState::Running);
        true
    }

    /// The re-check of a waiting worker: like `work_visible`, but while paused only the
    /// workers' deques (and join deques) and the spawned jobs handed back to the shared queues
    /// count (the jobs from outside wait for `resume`, which wakes everyone).
    fn waiting_work_visible(&self, paused: bool) -> bool {
        if canary(Canary::Recheck) {
            return false;
        }
        if paused {
            let reg = &*self.registry;
            return reg.queues.deques_hold_work()
                || reg
                    .queues
                    .lanes()
                    .iter()
                    .any(|l| !l.shared().has_no_spawned());
        }
        // A job we keep from a pause is in no queue (`keep_for_resume`).
        self.kept.any() || self.work_visible()
    }

    /// While paused: a job spawned by a running task, from our own deques, then those handed
    /// back to the lanes' shared queues (by a retiring worker, or `purge`: the task we wait
    /// for may be one), then other workers' deques. A job from outside (flag `INJECTED`) on
    /// a deque is the second of two a worker claimed from a ring at once (`took_two`); it
    /// must wait for `resume`, so we keep it (`keep_for_resume`), as a job taken as the pool
    /// got paused: it starts first after the resume, ahead of the later jobs of its
    /// submitter still on their ring (moved, not copied: nothing lost, nothing run twice).
    /// The rest of a batch is on no deque (it waits on the front of its lane's shared
    /// queue).
    fn find_spawned_work(&self) -> Option<(Job, usize)> {
        // Our own join halves first: spawned work, never from outside.
        if let Some(found) = self.pop_join_as_job() {
            return Some(found);
        }
        loop {
            let running = self.clock.lane();
            let (job, lane) = self.locals[running]
                .pop()
                .map(|job| (job, running))
                .or_else(|| {
                    self.locals
                        .iter()
                        .enumerate()
                        .find_map(|(lane, local)| local.pop().map(|job| (job, lane)))
                })
                .or_else(|| self.steal_spawned_handed_back())
                .or_else(|| self.steal_from_others())?;
            if job.flags() & INJECTED == 0 {
                return Some((job, lane));
            }
            self.keep_for_resume(job, lane);
        }
    }

    /// A spawned job handed back to a lane's shared queue (`SharedQueue::steal_spawned`).
    fn steal_spawned_handed_back(&self) -> Option<(Job, usize)> {
        let lanes = self.registry.queues.lanes();
        (0..lanes.len())
            .find_map(|lane| lanes[lane].shared().steal_spawned().map(|job| (job, lane)))
    }
}
