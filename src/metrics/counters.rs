//! The statistics one shard keeps (`StatCounts`): counters, per-lane counters and the
//! worker's state, on plain std atomics outside loom's sight. The shards themselves, one
//! cache-padded per worker beside the progress counts of the protocol, and a few for
//! threads outside the pool, are `registry/shards.rs`; readers sum them.

use crate::lane::MAX_LANES;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// Counters that only statistics read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stat {
    /// Tasks accepted (entered and not revoked).
    Submitted = 0,
    RejectedFull,
    RejectedTimeout,
    RejectedShutdown,
    CallerRuns,
    SpawnedThread,
    /// Tasks taken from other workers' deques.
    Stolen,
    /// Tasks taken from the injector.
    FromInjector,
    /// Tasks pushed by a worker onto its own deque.
    LocalPushes,
    Parks,
    Wakeups,
    /// Tasks the lane reserve ran (`src/lane_reserve.rs`).
    ReserveRuns,
    /// Tasks refused because they named a lane the pool does not have.
    RejectedUnknownLane,
    /// Other workers' deques looked at by `steal_from_others`.
    VictimsScanned,
    /// `steal_from_others` calls that found nothing.
    FailedSteals,
    /// Times a worker announced it was going to sleep (`Sleep::announce_parked`), parked
    /// or not: each issues the membarrier where the pool uses it.
    ParkAttempts,
    /// Pushes onto a worker's own deques that found a sleeper (`Sleep::notify_local_work`).
    LocalPushWakeChecks,
    /// Looks for work beyond a worker's own deque (`find_work_beyond_own`), each starting
    /// with the broadcast mailbox.
    Searches,
}
const STATS: usize = 18;

/// Per-lane statistics, kept only when the pool has more than one lane (but `Claimed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LaneStat {
    /// Tasks accepted into the lane.
    Submitted = 0,
    /// Tasks of the lane that ran (to their end or to a panic).
    Executed,
    /// Nanoseconds of run time charged to the lane.
    BusyNs,
    /// Jobs taken out of the lane's bundles (`Bundle::claim`): not a statistic but what
    /// `Stats::queued` subtracts from `LaneQueue::bundled`, so it is kept with one lane
    /// and without the `stats` feature too.
    Claimed,
}
const LANE_STATS: usize = 4;

/// What a worker is doing, as [`Stats`](crate::Stats) shows it.
///
/// ```
/// let pool = flock::Pool::builder().workers(1).build().unwrap();
/// pool.shutdown().unwrap();
/// assert_eq!(pool.stats().per_worker[0].state, flock::WorkerState::Stopped);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum WorkerState {
    /// Running a task: from taking one until a look for the next one fails (a few steps
    /// that never block).
    Running = 0,
    /// Looking for work: from its thread's start, or out of work and spinning over the
    /// other queues before it parks.
    Spinning,
    /// Asleep on its futex, costing no CPU.
    Parked,
    /// Exited (the pool shut down).
    Stopped,
}

/// One shard's statistics, written as its owner's counts are (see `registry/shards.rs`).
pub(crate) struct StatCounts {
    stats: [AtomicU64; STATS],
    state: AtomicU8,
    lanes: [[AtomicU64; LANE_STATS]; MAX_LANES],
}

impl StatCounts {
    pub(crate) fn new() -> Self {
        StatCounts {
            stats: [const { AtomicU64::new(0) }; STATS],
            state: AtomicU8::new(WorkerState::Spinning as u8),
            lanes: [const { [const { AtomicU64::new(0) }; LANE_STATS] }; MAX_LANES],
        }
    }

    /// Adds to a statistic of a shard only the calling thread writes. Compiled to nothing
    /// without the `stats` feature (the benchmarks measure the difference), except
    /// `Submitted`, from which `Stats::in_flight` is derived.
    #[inline]
    pub(crate) fn stat_owned(&self, s: Stat, n: u64) {
        if cfg!(feature = "stats") || s == Stat::Submitted {
            let a = &self.stats[s as usize];
            a.store(a.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        }
    }

    /// Adds to a statistic of a shard several threads may write.
    pub(crate) fn stat_shared(&self, s: Stat, n: u64) {
        if cfg!(feature = "stats") || s == Stat::Submitted {
            self.stats[s as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Adds to a lane statistic of a shard only the calling thread writes.
    #[inline]
    pub(crate) fn lane_owned(&self, s: LaneStat, lane: usize, n: u64) {
        if cfg!(feature = "stats") || s == LaneStat::Claimed {
            let a = &self.lanes[lane][s as usize];
            a.store(a.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        }
    }

    /// Adds to a lane statistic of a shard several threads may write.
    pub(crate) fn lane_shared(&self, s: LaneStat, lane: usize, n: u64) {
        if cfg!(feature = "stats") || s == LaneStat::Claimed {
            self.lanes[lane][s as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    pub(crate) fn lane_stat(&self, s: LaneStat, lane: usize) -> u64 {
        self.lanes[lane][s as usize].load(Ordering::Relaxed)
    }

    pub(crate) fn set_state(&self, s: WorkerState) {
        self.state.store(s as u8, Ordering::Relaxed);
    }

    pub(crate) fn stat(&self, s: Stat) -> u64 {
        self.stats[s as usize].load(Ordering::Relaxed)
    }

    pub(crate) fn state(&self) -> WorkerState {
        match self.state.load(Ordering::Relaxed) {
            0 => WorkerState::Running,
            1 => WorkerState::Spinning,
            2 => WorkerState::Parked,
            _ => WorkerState::Stopped,
        }
    }
}
