//! Sharded counters: one cache-padded shard per worker, written only by that worker with plain
//! (load + store) updates, and a few shards for threads outside the pool, picked by a
//! thread-local index so two submitters rarely share one. Readers sum the shards.
//!
//! Five counters take part in the pool's protocol (see `outstanding`) and come through the
//! `sync` facade so loom sees them; the rest are statistics and stay on plain std atomics.

use crate::lane::MAX_LANES;
use crate::sync::{facade_thread_local, fence, AtomicU64 as PAtomicU64, Ordering as POrdering};
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// Counters that `wait()` and shutdown reason about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Proto {
    /// A submitter committed to the task (before it looked at the shutdown flag).
    Entered = 0,
    /// An entered task was refused after all (shutdown seen, queue full, timeout).
    Revoked,
    /// The task ran to its end.
    Completed,
    /// The task panicked.
    Panicked,
    /// The task was dropped unrun (`shutdown_now`, `JoinHandle::cancel`).
    Dropped,
}
const PROTO: usize = 5;

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
    /// Running tasks (or about to look in its own deque).
    Running = 0,
    /// Out of work, spinning over the other queues before it parks.
    Spinning,
    /// Asleep on its futex, costing no CPU.
    Parked,
    /// Exited (the pool shut down).
    Stopped,
}

pub(crate) struct Shard {
    proto: [PAtomicU64; PROTO],
    stats: [AtomicU64; STATS],
    state: AtomicU8,
    lanes: [[AtomicU64; LANE_STATS]; MAX_LANES],
}

impl Shard {
    fn new() -> Self {
        Shard {
            proto: std::array::from_fn(|_| PAtomicU64::new(0)),
            stats: std::array::from_fn(|_| AtomicU64::new(0)),
            state: AtomicU8::new(WorkerState::Running as u8),
            lanes: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
        }
    }

    /// Adds `n` to a counter of a shard that only the calling thread writes (a worker's own):
    /// a plain load and store, no read-modify-write.
    #[inline]
    pub(crate) fn add_owned(&self, c: Proto, n: u64) {
        let a = &self.proto[c as usize];
        // Release: pairs with the Acquire loads in `Counters::outstanding`, so a reader that
        // counts this task as finished also sees everything the task did.
        a.store(a.load(POrdering::Relaxed) + n, POrdering::Release);
    }

    /// Adds `n` to a counter of a shard several threads may write (an external shard).
    pub(crate) fn add_shared(&self, c: Proto, n: u64) {
        // Release: as in `add_owned`.
        self.proto[c as usize].fetch_add(n, POrdering::Release);
    }

    /// Enters one task from a thread outside the pool. Returns false if the pool was closed
    /// first (`close`), in which case the caller must revoke the entry.
    ///
    /// The submit/shutdown handshake lives in this one word: `close` sets `CLOSED` with an
    /// RMW, so in the word's modification order our increment is either before it (and the
    /// closer, and every worker that later sees the shutdown flag, sees our entry: they wait
    /// for the task) or after it (and we see the bit). AcqRel: Release publishes the entry to
    /// `close`'s Acquire; Acquire orders our later reads after a close we saw.
    pub(crate) fn enter_shared(&self) -> bool {
        self.proto[Proto::Entered as usize].fetch_add(1, POrdering::AcqRel) & CLOSED == 0
    }

    /// Enters `n` tasks at once (a batch); the same handshake as `enter_shared`.
    pub(crate) fn enter_shared_n(&self, n: u64) -> bool {
        self.proto[Proto::Entered as usize].fetch_add(n, POrdering::AcqRel) & CLOSED == 0
    }

    /// Marks the shard closed: entries after this see `CLOSED` (see `enter_shared`).
    fn close(&self) {
        self.proto[Proto::Entered as usize].fetch_or(CLOSED, POrdering::AcqRel);
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

    pub(crate) fn proto(&self, c: Proto) -> u64 {
        // Acquire: pairs with the Release updates above. `CLOSED` is a flag, not a count.
        self.proto[c as usize].load(POrdering::Acquire) & !CLOSED
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

/// The top bit of an external shard's `Entered` word: the pool is closed to new entries.
const CLOSED: u64 = 1 << 63;

/// Shards for threads outside the pool. A power of two, so the index is a mask.
const EXTERNAL_SHARDS: usize = if cfg!(flock_loom) { 2 } else { 16 };

pub(crate) struct Counters {
    workers: Box<[CachePadded<Shard>]>,
    external: Box<[CachePadded<Shard>]>,
}

impl Counters {
    pub(crate) fn new(workers: usize) -> Self {
        Counters {
            workers: (0..workers)
                .map(|_| CachePadded::new(Shard::new()))
                .collect(),
            external: (0..EXTERNAL_SHARDS)
                .map(|_| CachePadded::new(Shard::new()))
                .collect(),
        }
    }

    #[inline]
    pub(crate) fn worker(&self, index: usize) -> &Shard {
        &self.workers[index]
    }

    /// The calling thread's external shard.
    #[inline]
    pub(crate) fn external(&self) -> &Shard {
        &self.external[external_index() & (EXTERNAL_SHARDS - 1)]
    }

    fn all(&self) -> impl Iterator<Item = &Shard> {
        self.workers
            .iter()
            .chain(self.external.iter())
            .map(|s| &**s)
    }

    pub(crate) fn sum_proto(&self, c: Proto) -> u64 {
        self.all().map(|s| s.proto(c)).sum()
    }

    pub(crate) fn sum_stat(&self, s: Stat) -> u64 {
        self.all().map(|sh| sh.stat(s)).sum()
    }

    pub(crate) fn sum_lane(&self, s: LaneStat, lane: usize) -> u64 {
        self.all().map(|sh| sh.lane_stat(s, lane)).sum()
    }

    /// Tasks entered and neither finished nor revoked. Zero means: every task whose entry
    /// happened before this call has finished (or was refused).
    ///
    /// Why a sum of unsynchronised shards is exact here: a task's entry is sequenced before
    /// its push, and its push before the run that counts it finished (the deque's
    /// Release/Acquire pair), so a finish we count has its entry visible to the later loads;
    /// likewise a revoke follows its entry on the same thread. Reading all the finished
    /// counters first, then revoked, then entered, every task counted finished or revoked is
    /// also counted entered, so the result never underflows and is zero only when nothing
    /// entered is outstanding.
    pub(crate) fn outstanding(&self) -> u64 {
        // SeqCst fence: pairs with the fences of the waiter and finisher paths
        // (`Registry::wait_quiescent`'s registration, `Registry::after_finish_off_worker`,
        // `Worker::go_idle`).
        fence(POrdering::SeqCst);
        let finished = self.sum_proto(Proto::Completed)
            + self.sum_proto(Proto::Panicked)
            + self.sum_proto(Proto::Dropped);
        let revoked = self.sum_proto(Proto::Revoked);
        let entered = self.sum_proto(Proto::Entered);
        debug_assert!(
            entered >= finished + revoked,
            "flock: outstanding count underflow"
        );
        entered.saturating_sub(finished + revoked)
    }

    /// Closes every external shard to new entries (the first step of shutdown).
    pub(crate) fn close_external(&self) {
        for shard in self.external.iter() {
            shard.close();
        }
    }

    pub(crate) fn worker_shards(&self) -> &[CachePadded<Shard>] {
        &self.workers
    }
}

static NEXT_EXTERNAL: AtomicUsize = AtomicUsize::new(0);

facade_thread_local! {
    static EXTERNAL_INDEX: Cell<usize> = Cell::new(usize::MAX);
}

/// A per-thread index, handed out round-robin the first time a thread asks (one RMW per
/// thread's life, never per submit).
fn external_index() -> usize {
    if cfg!(flock_loom) {
        // The global counter outlives loom's executions, which must replay identically.
        return 0;
    }
    EXTERNAL_INDEX.with(|i| {
        let mut v = i.get();
        if v == usize::MAX {
            v = NEXT_EXTERNAL.fetch_add(1, Ordering::Relaxed);
            i.set(v);
        }
        v
    })
}
