//! The lane reserve: one extra thread in a pool whose lanes have different weights, asleep
//! unless a task of a heavy lane would otherwise wait for a light lane's task to end.
//!
//! flock does not preempt a running task. Without the reserve, a task submitted to a heavy
//! lane (say `"interactive"`) while every worker runs a long task of a lighter lane (say
//! `"batch"`) waits until one of those tasks ends. With it, the submitter sees that case
//! and wakes the reserve, which takes the task from its lane's shared queue and runs it at
//! once, on a thread of its own: the kernel shares the CPUs between it and the workers, as
//! it does with any thread that wakes up. It runs such tasks one at a time, for as long as
//! the case lasts, then sleeps again (on a futex, no timer).
//!
//! The protocol, and why a missed wake-up of the reserve can delay a task but never lose one
//! (the workers still run everything queued), is in `docs/protocol.md`, "The lane reserve".

use crate::job::{Job, BUNDLE, DISCARDABLE, INJECTED, RESERVED};
use crate::metrics::counters::{LaneStat, Stat};
use crate::registry::{Crew, Progress, Registry};
use crate::sleep::Parker;
use crate::sync::{fence, AtomicUsize, Ordering};
use crossbeam_utils::CachePadded;

/// `LaneReserve::state`: the reserve is asleep or about to be; a waker must unpark it.
const ASLEEP: usize = 0;
/// `LaneReserve::state`: the reserve is awake (or a waker has unparked it) and will look at the
/// queues again before it sleeps.
const AWAKE: usize = 1;

pub(crate) struct LaneReserve {
    /// Per worker slot: the weight of the lane whose task the slot's worker is running, or
    /// 0 between tasks. Written only by that worker (a task's start and end); read by
    /// submitters and the reserve to decide whether a lane's task would wait.
    running: Box<[CachePadded<AtomicUsize>]>,
    /// `ASLEEP` or `AWAKE` (see `LaneReserve::notify` and `LaneReserve::run`).
    state: CachePadded<AtomicUsize>,
    /// The reserve's parker (the workers' kind: an unpark before the park is kept).
    parker: Parker,
    /// The lanes the reserve serves, heaviest first: all but the lightest.
    order: Box<[usize]>,
    /// The lightest lane weight: lanes of this weight are never served here.
    min_weight: u32,
    /// The heaviest lane weight.
    max_weight: usize,
    /// Where the reserve's next look at a lane's shared queue starts among its sources
    /// (`SharedQueue::steal`), as a worker's `probe`: so that no submitter's ring waits
    /// behind another's. Moved by the reserve thread alone (a statistic-like counter: std's
    /// atomic, outside loom).
    probe: std::sync::atomic::AtomicUsize,
}

impl LaneReserve {
    /// The reserve of a pool with `slots` worker slots and these lanes, unless every lane
    /// has the same weight (then no lane is heavier than another, and nothing would wake it).
    pub(crate) fn new(slots: usize, lanes: &[(String, u32)]) -> Option<LaneReserve> {
        let min_weight = lanes.iter().map(|l| l.1).min()?;
        let mut order: Vec<usize> = (0..lanes.len())
            .filter(|&l| lanes[l].1 > min_weight)
            .collect();
        if order.is_empty() {
            return None;
        }
        // Heaviest first; equal weights in lane order.
        order.sort_by_key(|&l| std::cmp::Reverse(lanes[l].1));
        Some(LaneReserve {
            running: (0..slots)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
            state: CachePadded::new(AtomicUsize::new(ASLEEP)),
            parker: Parker::new(),
            max_weight: lanes[order[0]].1 as usize,
            order: order.into_boxed_slice(),
            min_weight,
            probe: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Worker `slot` starts running a task of a lane of `weight` (0: it is between tasks
    /// again). Returns the weight it published before, for a nested task to restore.
    /// Relaxed: the value only steers whether the reserve is woken, never whether a task
    /// runs; a stale read costs at most one needless or one missed wake-up of the reserve.
    pub(crate) fn publish(&self, slot: usize, weight: usize) -> usize {
        let cell = &self.running[slot];
        let before = cell.load(Ordering::Relaxed);
        cell.store(weight, Ordering::Relaxed);
        before
    }

    /// Worker `slot` has just published that it runs a task of a lane of `weight`: if that
    /// made every worker busy with lighter lanes while a served lane heavier than `weight`
    /// has tasks queued (the worker chose a lighter lane because its share was due), wake
    /// the reserve for them. Best effort, without a fence: a miss leaves those tasks to the
    /// workers' next boundaries, as without a reserve.
    pub(crate) fn after_start(&self, reg: &Registry, weight: usize) {
        if weight >= self.max_weight {
            return;
        }
        // Pairs with a submitter's F1: either it sees our weight published (and wakes the
        // reserve itself), or we see its push below. Only for tasks of lanes below the
        // heaviest, so a pool's heaviest lane never pays for it.
        fence(Ordering::SeqCst);
        if self.state.load(Ordering::Relaxed) != ASLEEP {
            return;
        }
        for &lane in self.order.iter() {
            let heavier = reg.cfg.lanes[lane].1 as usize;
            if heavier <= weight {
                // `order` is heaviest first: the rest are no heavier either.
                return;
            }
            if !reg.queues.lane(lane).shared().is_empty() {
                return self.notify(reg, lane);
            }
        }
    }

    /// Whether a task of a lane of `weight` would wait for a lighter lane: every worker
    /// wanted is running a task, each of a lane lighter than `weight`. A worker between
    /// tasks (or parked, or searching) takes the task itself, and one running a task of a
    /// lane at least as heavy is where the task's lane is served next.
    fn would_wait(&self, reg: &Registry, weight: usize) -> bool {
        let workers = reg.crew.workers().min(self.running.len());
        workers > 0
            && self.running[..workers].iter().all(|w| {
                let w = w.load(Ordering::Relaxed);
                w != 0 && w < weight
            })
    }

    /// Called by a submitter after it pushed tasks of `lane` onto the lane's shared queue
    /// and fenced (F1 of docs/protocol.md, in `Sleep::notify_new_work`): wakes the reserve if
    /// the lane is one it serves, it is asleep, and the tasks would wait for a lighter lane.
    ///
    /// Only for a lane that is becoming busy: one whose shared queue holds at most the entry
    /// just pushed (a task, or a bundle of a batch). A lane with a backlog is served by the
    /// workers' shares: waking the reserve for it would hand the heavy lane a thread of its
    /// own each time a worker's share turned to a lighter lane, and the split would no
    /// longer follow the weights (with one worker and both lanes saturated, 8 : 1 became
    /// 9.2 : 1 in tests/lanes.rs).
    pub(crate) fn notify(&self, reg: &Registry, lane: usize) {
        self.wake_for(reg, lane, false);
    }

    /// Called by `resume` for each lane with queued work, after its fence (F1 for the
    /// reserve): as `notify`, also for a lane with a backlog. Nothing of it started during
    /// the pause, so the whole backlog is becoming busy at once: left to the shares, two
    /// heavy tasks queued while a light task holds every worker would wait for that task's
    /// end, where one alone is run at once (`tests/lanes.rs`).
    pub(crate) fn notify_resumed(&self, reg: &Registry, lane: usize) {
        self.wake_for(reg, lane, true);
    }

    /// `notify`, or with `backlog` `notify_resumed`.
    fn wake_for(&self, reg: &Registry, lane: usize, backlog: bool) {
        let weight = reg.cfg.lanes[lane].1;
        if weight == self.min_weight || self.state.load(Ordering::Relaxed) != ASLEEP {
            return;
        }
        if (backlog || reg.queues.lane(lane).shared().len() <= 1)
            && self.would_wait(reg, weight as usize)
            && self.state.swap(AWAKE, Ordering::SeqCst) == ASLEEP
        {
            self.unpark();
        }
    }

    /// Wakes the reserve, or makes its next park return at once.
    pub(crate) fn unpark(&self) {
        self.parker.unpark();
    }

    /// The reserve thread's body: sleep until unparked, serve while a served lane's task
    /// would wait, then announce sleep (`ASLEEP`), fence, and look once more before parking.
    /// Returns when the pool shuts down (`begin_shutdown` unparks it); the workers drain
    /// what is left.
    pub(crate) fn run(reg: &Registry) {
        let reserve = reg.lane_reserve.as_ref().expect("a pool with a reserve");
        loop {
            reserve.parker.park();
            loop {
                if reg.is_shutdown() {
                    return;
                }
                while reserve.serve_one(reg) {
                    if reg.is_shutdown() {
                        return;
                    }
                }
                reserve.state.store(ASLEEP, Ordering::SeqCst);
                // F_R: pairs with a submitter's F1 (see docs/protocol.md, "The lane reserve"):
                // either its load of `state` sees `ASLEEP` and it wakes us, or our look at the
                // queues below sees its push.
                fence(Ordering::SeqCst);
                if reg.is_shutdown() || !reserve.anything_to_serve(reg) {
                    break;
                }
                // Work came in as we announced sleep. Awake again; if a waker already took
                // the state back, its unpark leaves a token: one extra round, nothing more.
                reserve.state.store(AWAKE, Ordering::SeqCst);
            }
        }
    }

    /// Whether some served lane has a task queued that would wait for a lighter lane.
    fn anything_to_serve(&self, reg: &Registry) -> bool {
        !Crew::paused(reg.crew.control())
            && self.order.iter().any(|&lane| {
                !reg.queues.lane(lane).shared().is_empty()
                    && self.would_wait(reg, reg.cfg.lanes[lane].1 as usize)
            })
    }

    /// Takes and runs one task of the heaviest served lane whose tasks would wait; false if
    /// there is none (or the pool is paused).
    fn serve_one(&self, reg: &Registry) -> bool {
        if Crew::paused(reg.crew.control()) {
            return false;
        }
        for &lane in self.order.iter() {
            let queue = &reg.queues.lane(lane).shared();
            if queue.is_empty() || !self.would_wait(reg, reg.cfg.lanes[lane].1 as usize) {
                continue;
            }
            let start = self.probe.load(std::sync::atomic::Ordering::Relaxed);
            self.probe
                .store(start.wrapping_add(1), std::sync::atomic::Ordering::Relaxed);
            // The front first, as a worker looks (the rest of a batch taken up comes before
            // what was queued after it).
            if let Some(job) = LaneReserve::claim_front(reg, lane).or_else(|| queue.steal(start)) {
                self.execute(reg, job, lane);
                return true;
            }
        }
        false
    }

    /// Runs one job taken from `lane`'s shared queue, as a worker would: a bundle gives up
    /// its first job and goes back for the rest; a job submitted from outside while the pool
    /// was paused meanwhile goes back unrun; a discardable job under `shutdown_now` is
    /// dropped; the capacity unit a job holds is given back as it starts.
    fn execute(&self, reg: &Registry, job: Job, lane: usize) {
        let job = if job.flags() & BUNDLE != 0 {
            match LaneReserve::unbundle(reg, job, lane) {
                Some(job) => job,
                None => return,
            }
        } else {
            job
        };
        let flags = job.flags();
        let shard = reg.shards.external();
        if flags & INJECTED != 0 && Crew::paused(reg.crew.control()) {
            // We do not wait for the resume: the job goes back to the front of its lane's
            // shared queue, where the workers take it before its submitter's later jobs.
            // `resume` wakes every worker, and they find it; but `resume` may have come
            // between our load and the push, its wake already spent on workers that looked
            // while we held the job: F1 and the state test (`put_back_paused`). A `wait()`
            // that looked at the queues while we held it is told again.
            reg.put_back_paused(lane, vec![job]);
            reg.after_finish_off_worker();
            return;
        }
        if flags & RESERVED != 0 {
            reg.gate.release_pending(1);
        }
        if flags & INJECTED != 0 {
            shard.stats.stat_shared(Stat::FromInjector, 1);
        }
        if flags & DISCARDABLE != 0 && reg.is_stopping_now() {
            if job.discard_counted() {
                // In this order: see `Quiet::note_dropped_by_shutdown`.
                reg.quiet.note_dropped_by_shutdown(1);
                shard.progress.add_shared(Progress::Dropped, 1);
            }
            reg.after_finish_off_worker();
            return;
        }
        shard.stats.stat_shared(Stat::ReserveRuns, 1);
        reg.run_off_worker(shard, job, lane);
    }

    /// The next job of the oldest bundle on the front of `lane`'s shared queue, as a
    /// worker's `claim_front` (no handle kept: the reserve takes one task per wake).
    fn claim_front(reg: &Registry, lane: usize) -> Option<Job> {
        let (job, handle) = reg
            .queues
            .lane(lane)
            .shared()
            .claim_front(|emptied| reg.bundle_entry_dropped(lane, emptied))?;
        reg.release_bundle(handle);
        reg.shards
            .external()
            .stats
            .lane_shared(LaneStat::Claimed, lane, 1);
        Some(job)
    }

    /// The next job of a bundle, to run now; the bundle goes back to the front of the lane's
    /// shared queue for the rest (`SharedQueue::put_front`), for the workers (woken for them
    /// as for any push) or the reserve's next round. Never kept aside: a job of the bundle may be what this one
    /// waits for. `None` if the bundle was emptied meanwhile.
    fn unbundle(reg: &Registry, entry: Job, lane: usize) -> Option<Job> {
        let bundle = entry.into_bundle();
        let Some(first) = bundle.claim() else {
            reg.bundle_entry_dropped(lane, bundle);
            return None;
        };
        reg.shards
            .external()
            .stats
            .lane_shared(LaneStat::Claimed, lane, 1);
        let rest = bundle.remaining();
        if rest == 0 {
            reg.bundle_entry_dropped(lane, bundle);
        } else {
            reg.queues.lane(lane).shared().put_front(bundle);
            reg.sleep.notify_new_work_n(rest);
        }
        Some(first)
    }
}
