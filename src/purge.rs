//! `Pool::purge`: drop every queued task that may be dropped, and keep the pool open.
//!
//! The queues are emptied through the same handles thieves use (each lane's shared queue,
//! then every slot's deques through its stealer), so purge races the workers exactly as a
//! thief does: a job is taken by one of them, never both. Each job taken is then either
//!
//! * **dropped**, when it is `DISCARDABLE` (a task of `submit`, `spawn`, a task group or the
//!   C API): as `shutdown_now` drops it (`Job::discard_counted`: its destructor or drop
//!   callback runs, a spawned task's handle answers `JoinError::Dropped`, a group's count
//!   goes down), counted `Dropped`, and its capacity unit given back; or
//! * **put back** on its lane's shared queue, when someone waits for it to run (a `join`'s
//!   stack job, a scope's task): dropping those would leave their waiter hanging. Spawned
//!   ones go to the queue's part for spawned jobs, where a worker waiting for one finds it
//!   also while the pool is paused, and wake every sleeper (`Registry::hand_back`).
//!
//! A bundle's entry is taken apart: each job nobody claimed yet is claimed here and treated
//! as above. Tasks already running, or taken by a worker before purge reached them, run.
//!
//! **Destructors run inside the pool.** A task dropped here (or by `TaskGroup::cancel`) stays
//! outstanding until its destructor has returned: purge counts its drops in `finish`, and
//! `JoinHandle::cancel` counts one after the closure's drop. A destructor that waited for
//! the pool (`wait`, a shutdown, which waits for every outstanding task) would wait for its
//! own task. So while a thread drops a pool's tasks it counts as inside that pool, as a
//! thread running one of its tasks off the workers does (`dropping_tasks`, `Pool::inside`):
//! those calls answer `WouldDeadlock` instead of hanging. The other order, counting a task
//! dropped before its destructor runs, would let a concurrent `wait` return while the
//! destructor still runs.
//!
//! **The sweep after shutdown.** A task cancelled while queued (`JoinHandle::cancel`, a
//! group's `cancel`) counts as finished at once, but its job stays in the queue, an empty
//! shell a worker skips when it takes it. Workers exit once nothing is outstanding, so they
//! may leave shells behind; each holds its task's cell, which holds the registry, which holds
//! the queue: a cycle that would leak the pool's whole shared state. So the queues are swept
//! (`sweep`) once every worker has exited: by `Pool::close`, and by the last worker to leave
//! a shut-down pool (`worker::run`), the only sweeper when the pool was dropped from inside
//! one of its own tasks.

use crate::deque::Steal;
use crate::job::{Job, BUNDLE, DISCARDABLE, RESERVED};
use crate::metrics::counters::LaneStat;
use crate::registry::Progress;
use crate::registry::Registry;
use crate::sys::frames;

/// One call dropping queued tasks of the pool whose registry is at `registry`
/// (`purge`, `TaskGroup::cancel`, `JoinHandle::cancel`), and so running their destructors:
/// a frame (`sys::frames`) on the stack of `dropping_tasks` for as long as the call runs. A
/// stack: a destructor may purge another pool.
struct Dropping {
    registry: *const Registry,
}

frames::frame_kind!(
    /// This thread's innermost `Dropping` frame, or null.
    DROPPING: Dropping
);

/// Runs `f`, which drops queued tasks of `reg` on this thread, with the thread counted as
/// inside `reg`'s pool (see the module docs), also if `f` unwinds.
pub(crate) fn dropping_tasks<R>(reg: &Registry, f: impl FnOnce() -> R) -> R {
    frames::enter(Dropping { registry: reg }, f)
}

/// Whether this thread is dropping tasks of `reg`'s pool now, in a `dropping_tasks` call.
pub(crate) fn drops_tasks_here(reg: &Registry) -> bool {
    frames::any(|f: &Dropping| std::ptr::eq(f.registry, reg))
}

struct Purge<'a> {
    reg: &'a Registry,
    dropped: usize,
    /// Jobs that must run, with their lane: put back once the queues are empty.
    kept: Vec<(Job, usize)>,
    /// Dropping for `shutdown_now`: the drops are counted in `dropped_by_shutdown` too.
    for_shutdown: bool,
}

/// Drops the queued tasks of `reg` that may be dropped; returns how many.
pub(crate) fn purge(reg: &Registry) -> usize {
    drop_queued(reg, false)
}

/// `shutdown_now`'s drop, by the closing thread once the flag is raised: the purge, with
/// its drops counted in `Pool::dropped_by_shutdown` as the workers count theirs. So the
/// queued tasks are dropped at once, not when a worker that runs a long task gets to them.
/// What a running task submits after this is dropped by the workers (`WorkerThread::discard`).
pub(crate) fn drop_queued_for_shutdown(reg: &Registry) -> usize {
    drop_queued(reg, true)
}

fn drop_queued(reg: &Registry, for_shutdown: bool) -> usize {
    dropping_tasks(reg, || {
        let mut purge = Purge {
            reg,
            dropped: 0,
            kept: Vec::new(),
            for_shutdown,
        };
        let lanes = reg.queues.lane_count();
        for lane in 0..lanes {
            while let Some(job) = reg.queues.lane(lane).shared().steal(0) {
                purge.take(job, lane);
            }
        }
        for (lane, stealer) in reg.queues.lane_stealers() {
            purge.drain(lane, || stealer.steal());
        }
        purge.finish()
    })
}

/// Once every worker of `reg` has exited: empties the queues of the shells of cancelled
/// tasks the workers left there (see the module docs). Nothing else can be queued then: a
/// worker exits only when no task is outstanding, and no task is accepted after the close.
pub(crate) fn sweep(reg: &Registry) {
    let dropped = purge(reg);
    debug_assert_eq!(
        dropped, 0,
        "flock: a task still queued after every worker exited"
    );
}

impl Purge<'_> {
    /// Takes every job `steal` yields.
    fn drain(&mut self, lane: usize, steal: impl Fn() -> Steal<Job>) {
        loop {
            match steal() {
                Steal::Success(job) => self.take(job, lane),
                Steal::Empty => return,
                Steal::Retry => std::hint::spin_loop(),
            }
        }
    }

    fn take(&mut self, job: Job, lane: usize) {
        if job.flags() & BUNDLE != 0 {
            return self.take_bundle(job, lane);
        }
        if job.flags() & DISCARDABLE == 0 {
            self.kept.push((job, lane));
            return;
        }
        if job.flags() & RESERVED != 0 {
            // As a worker does when a job starts: its unit of capacity is free again.
            self.reg.gate.release_pending(1);
        }
        if job.discard_counted() {
            self.dropped += 1;
        }
    }

    /// Claims what is left of a bundle (its other holders find it empty) and takes each job.
    fn take_bundle(&mut self, entry: Job, lane: usize) {
        let bundle = entry.into_bundle();
        let shard = self.reg.shards.external();
        while let Some(job) = bundle.claim() {
            shard.stats.lane_shared(LaneStat::Claimed, lane, 1);
            self.take(job, lane);
        }
        self.reg.bundle_entry_dropped(lane, bundle);
    }

    /// Counts the dropped tasks, puts back the kept ones, and tells whoever needs to know.
    fn finish(self) -> usize {
        let reg = self.reg;
        // A worker that looked while we held the jobs and went to sleep is woken; a worker
        // waiting in a paused pool for one of them finds it (`Registry::hand_back`).
        reg.hand_back(self.kept);
        if self.for_shutdown {
            // Before the `Dropped` count, never after: see `Quiet::note_dropped_by_shutdown`.
            reg.quiet.note_dropped_by_shutdown(self.dropped as u64);
        }
        reg.shards
            .external()
            .progress
            .add_shared(Progress::Dropped, self.dropped as u64);
        // The outstanding count went down off the workers: `wait()` and a shutdown waiting
        // for the queues to drain re-check.
        reg.after_finish_off_worker();
        self.dropped
    }
}
