//! What the pool is doing, cheaply and at any time: counters, queue depths, per-worker state
//! and latency histograms, as a [`Stats`] snapshot with a readable `Display` and Prometheus
//! text (`prometheus.rs`).

pub(crate) mod counters;
pub(crate) mod histogram;
mod prometheus;

pub use prometheus::prometheus_text;

use crate::registry::Progress;
use crate::registry::Registry;
use counters::{LaneStat, Stat};
use histogram::{bucket_upper, HistogramSnapshot, BUCKETS};
use std::fmt;
use std::time::Duration;

pub use counters::WorkerState;

/// A snapshot of a pool's counters, taken by [`Pool::stats`](crate::Pool::stats).
///
/// Counters only grow. A snapshot taken while tasks run may lag a little (each shard is read
/// at a slightly different instant), but `in_flight` never underflows, and once the pool is
/// quiet (after [`wait`](crate::Pool::wait)) the books balance:
/// `submitted == completed + panicked + dropped + in_flight` with `in_flight == 0`.
///
/// The fields marked *(stats)* are counted only with the `stats` feature (on by default);
/// without it they read 0 and [`to_prometheus`](Stats::to_prometheus) leaves them out.
///
/// ```
/// let pool = flock::Pool::builder().workers(2).build().unwrap();
/// for _ in 0..100 { pool.submit(|| ()).unwrap(); }
/// pool.submit(|| panic!("counted")).unwrap();
/// pool.wait().unwrap();
/// let s = pool.stats();
/// assert_eq!((s.submitted, s.completed, s.panicked, s.in_flight), (101, 100, 1, 0));
/// println!("{s}");                                  // a table for humans
/// let text = s.to_prometheus("myapp");              // for a /metrics endpoint
/// assert!(text.contains("flock_tasks_completed_total{pool=\"myapp\"} 100"));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Tasks accepted (by `submit`, `spawn`, scopes and `join` from outside; run on the pool,
    /// on the caller or on a helper thread).
    pub submitted: u64,
    /// Tasks that ran to their end (a detached spawned task whose value's destructor
    /// panicked included: that panic goes to the panic handler).
    pub completed: u64,
    /// Tasks that panicked.
    pub panicked: u64,
    /// Tasks dropped unrun: by `shutdown_now` or `JoinHandle::cancel`.
    pub dropped: u64,
    /// Tasks refused, all reasons (the four below add up to this). *(stats)*
    pub rejected: u64,
    /// Refused because the queue was full (`Backpressure::Reject`). *(stats)*
    pub rejected_full: u64,
    /// Refused because the queue stayed full for the whole block timeout. *(stats)*
    pub rejected_timeout: u64,
    /// Refused because the pool was shutting down. *(stats)* Not counted here: the tasks of
    /// a scope, and the halves of a `join`, that run on their caller after shutdown (they
    /// ran, and no counter counts them).
    pub rejected_shutdown: u64,
    /// Refused because they named a lane the pool does not have
    /// ([`RejectReason::UnknownLane`](crate::RejectReason::UnknownLane)). *(stats)*
    pub rejected_unknown_lane: u64,
    /// Accepted tasks run on the submitting thread (`Backpressure::CallerRuns`, and
    /// `Backpressure::SpawnThread` where the OS refused the helper thread). *(stats)*
    pub caller_runs: u64,
    /// Accepted tasks run on a helper thread (`Backpressure::SpawnThread`). *(stats)*
    pub spawned_thread: u64,
    /// Tasks the lane reserve ran: tasks of a heavy lane that would otherwise have waited
    /// for a lighter lane's task to end (see [`PoolBuilder::lane_reserve`](crate::PoolBuilder::lane_reserve)).
    /// *(stats)*
    pub reserve_runs: u64,
    /// Tasks taken from other workers' deques (a batch's tasks never are: they are claimed
    /// from the front of their lane's shared queue and counted in `from_injector`). *(stats)*
    pub stolen: u64,
    /// Tasks submitted from outside the pool that a worker ran: taken from a lane's shared
    /// queue (the submitting threads' rings and the injector), or claimed from a bundle of
    /// a batch. *(stats)*
    pub from_injector: u64,
    /// Tasks pushed by workers onto their own deques (tasks spawning tasks, `join`). *(stats)*
    pub local_pushes: u64,
    /// Times a worker parked (went to sleep). *(stats)*
    pub parks: u64,
    /// Times a parked worker woke up. *(stats)*
    pub wakeups: u64,
    /// Times a worker out of work in its own deque looked further (its join deque, the
    /// broadcast mailbox, the shared queues, then the other workers' deques): each pays the
    /// mailbox check. *(stats)*
    pub searches: u64,
    /// Other workers' deques a worker out of local work looked at for a task to steal
    /// (a diagnostic of the search: victims scanned per join or task). *(stats)*
    pub victims_scanned: u64,
    /// Searches of the other workers' deques that found nothing. *(stats)*
    pub failed_steals: u64,
    /// Times a worker announced it was going to sleep, whether it then parked or found work
    /// in its last look: each issues the sleep protocol's membarrier where the pool uses it
    /// ([`Pool::uses_membarrier`](crate::Pool::uses_membarrier)). *(stats)*
    pub park_attempts: u64,
    /// Read-modify-writes of the sleep protocol's shared state word (searching and sleeping
    /// workers; see docs/protocol.md): a cache line every worker reads. *(stats)*
    pub sleep_word_writes: u64,
    /// Pushes onto a worker's own deque that found a sleeping worker and so took the fenced
    /// path that may wake one. *(stats)*
    pub local_push_wake_checks: u64,
    /// Tasks accepted and not yet ended (queued or running).
    pub in_flight: u64,
    /// Callers waiting for the pool to go quiet now: threads blocked in
    /// [`wait`](crate::Pool::wait) or [`wait_for`](crate::Pool::wait_for), and
    /// [`wait_async`](crate::Pool::wait_async) futures polled and not yet ready (or dropped).
    pub waiters: usize,
    /// Tasks waiting in a queue (the lanes' shared queues, with the submitting threads'
    /// rings, plus every worker's deque). A task cancelled while queued
    /// ([`JoinHandle::cancel`](crate::JoinHandle::cancel)) leaves this count at once, as it
    /// leaves the pool's capacity, though its empty entry stays queued until a worker skips it.
    pub queued: u64,
    /// The bound on queued tasks from outside (`usize::MAX`: none).
    pub capacity: usize,
    /// The number of workers wanted (as built or last resized).
    pub workers: usize,
    /// The most workers the pool may be resized to.
    pub max_workers: usize,
    /// Whether the pool is paused.
    pub paused: bool,
    /// Time since the pool was built.
    pub uptime: Duration,
    /// One entry per worker slot in use: after a resize, the workers wanted, plus any still
    /// retiring (a shut-down pool keeps its entries, `Stopped`).
    pub per_worker: Vec<WorkerStats>,
    /// One entry per lane, in the order given to `PoolBuilder::lanes`.
    pub lanes: Vec<LaneStats>,
    /// Submit → start, when the pool was built with `track_latency(true)`.
    pub queue_wait: Option<LatencyStats>,
    /// Start → end, when the pool was built with `track_latency(true)`.
    pub run_time: Option<LatencyStats>,
}

/// One worker's share of a [`Stats`] snapshot.
///
/// ```
/// let pool = flock::Pool::builder().workers(2).build().unwrap();
/// for _ in 0..100 { pool.submit(|| ()).unwrap(); }
/// pool.wait().unwrap();
/// let executed: u64 = pool.stats().per_worker.iter().map(|w| w.executed).sum();
/// assert_eq!(executed, 100);
///
/// // Which thread runs each worker: the ids its calls see.
/// let ids = pool.broadcast(|_index| std::thread::current().id());
/// let stats = pool.stats();
/// assert_eq!(stats.per_worker[0].thread_id, Some(ids[0]));
/// assert_eq!(stats.per_worker[1].thread_id, Some(ids[1]));
/// pool.shutdown().unwrap();
/// assert_eq!(pool.stats().per_worker[0].thread_id, None); // its thread has left
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerStats {
    /// The worker's index (as `current_worker_index` reports it).
    pub index: usize,
    /// The core it is pinned to, if pinning was asked for.
    pub pinned_core: Option<usize>,
    /// Tasks it ran (completed or panicked).
    pub executed: u64,
    /// Tasks it ran that panicked.
    pub panicked: u64,
    /// Tasks it stole from other workers (0 without the `stats` feature).
    pub stolen: u64,
    /// Times it parked (0 without the `stats` feature).
    pub parks: u64,
    /// What it is doing now.
    pub state: WorkerState,
    /// The [`ThreadId`](std::thread::ThreadId) of the thread running this slot now (what
    /// `std::thread::current().id()` returns on it), set when the thread takes the slot,
    /// before the `on_worker_start` hook; `None` while the slot has no thread: before it
    /// starts, and once its thread has left (after its `on_worker_stop` hook), as after a
    /// shutdown. A slot given a new thread by a resize shows the new thread's id.
    pub thread_id: Option<std::thread::ThreadId>,
    /// The operating system's id for that thread: on Linux its `gettid()`, the TID that
    /// `top -H`, `perf` and `/proc/self/task` show. `None` while the slot has no thread (as
    /// for `thread_id`), and on other systems.
    pub os_thread_id: Option<u64>,
    /// That thread's native handle: on Unix its `pthread_t` (what `pthread_self()` returns
    /// on it) as an integer, for calls such as `pthread_setschedparam`. `None` while the slot
    /// has no thread, and off Unix. Valid only while the thread lives: the snapshot may be
    /// stale, and once the thread has left its slot the value may name another thread.
    pub native_handle: Option<u64>,
}

/// One lane's share of a [`Stats`] snapshot.
///
/// ```
/// let pool = flock::Pool::builder().lanes(&[("hi", 3), ("lo", 1)]).build().unwrap();
/// for _ in 0..10 { pool.submit_to("lo", || ()).unwrap(); }
/// pool.wait().unwrap();
/// let lo = &pool.stats().lanes[1];
/// assert_eq!((lo.name.as_str(), lo.weight, lo.submitted, lo.executed, lo.queued), ("lo", 1, 10, 10, 0));
/// assert!(lo.busy.is_some());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LaneStats {
    /// The lane's name.
    pub name: String,
    /// Its weight.
    pub weight: u32,
    /// Tasks accepted into it (with several lanes, 0 without the `stats` feature).
    pub submitted: u64,
    /// Its tasks that ran (to their end or to a panic; with several lanes, 0 without the
    /// `stats` feature).
    pub executed: u64,
    /// Its tasks waiting in a queue: its shared queue and the workers' deques (the lanes'
    /// figures add up to `Stats::queued`).
    pub queued: u64,
    /// Run time its tasks took, as charged for fair sharing; measured only when the pool has
    /// more than one lane (`None` otherwise; 0 without the `stats` feature).
    pub busy: Option<Duration>,
}

/// A latency distribution, from a log-bucketed histogram (each bucket ≤ 25% wide).
///
/// ```
/// use std::time::Duration;
/// let pool = flock::Pool::builder().track_latency(true).build().unwrap();
/// pool.submit(|| std::thread::sleep(Duration::from_millis(1))).unwrap();
/// pool.wait().unwrap();
/// let run = pool.stats().run_time.unwrap();
/// assert_eq!(run.count, 1);
/// assert!(run.max >= Duration::from_millis(1) && run.p50 <= run.max);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LatencyStats {
    /// Samples recorded.
    pub count: u64,
    /// Sum of all samples.
    pub sum: Duration,
    /// Mean sample.
    pub mean: Duration,
    /// Largest sample.
    pub max: Duration,
    /// Median (the upper bound of its bucket).
    pub p50: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Cumulative counts at each power-of-two bound, for histogram exports.
    buckets: Vec<(Duration, u64)>,
}

impl LatencyStats {
    fn from_snapshot(h: &HistogramSnapshot) -> LatencyStats {
        let count = h.count();
        let ns = Duration::from_nanos;
        let mut buckets = Vec::new();
        let mut cumulative = 0;
        for (i, &n) in h.buckets.iter().enumerate() {
            cumulative += n;
            // Export one bound per power of two from 256 ns to about a minute.
            if i % 4 == 3 && (PROM_FIRST..=PROM_LAST).contains(&i) {
                buckets.push((ns(bucket_upper(i)), cumulative));
            }
        }
        LatencyStats {
            count,
            sum: ns(h.sum),
            mean: ns(h.sum.checked_div(count).unwrap_or(0)),
            max: ns(h.max),
            p50: ns(h.quantile(0.50)),
            p90: ns(h.quantile(0.90)),
            p99: ns(h.quantile(0.99)),
            buckets,
        }
    }

    /// `(upper bound, samples ≤ bound)` at each power of two from 256 ns to about a minute,
    /// cumulative, as Prometheus histograms want them.
    ///
    /// ```
    /// use std::time::Duration;
    /// let pool = flock::Pool::builder().workers(1).track_latency(true).build().unwrap();
    /// for _ in 0..10 { pool.submit(|| std::thread::sleep(Duration::from_micros(50))).unwrap(); }
    /// pool.wait().unwrap();
    /// let run = pool.stats().run_time.unwrap();
    /// let buckets = run.buckets();
    /// assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1)); // cumulative
    /// let (_, under_a_second) = buckets.iter().find(|(le, _)| *le >= Duration::from_secs(1)).unwrap();
    /// assert_eq!(*under_a_second, 10);
    /// ```
    pub fn buckets(&self) -> &[(Duration, u64)] {
        &self.buckets
    }
}

/// Index of the bucket ending at 2^8 - 1 ns, and of the one ending at 2^36 - 1 ns.
const PROM_FIRST: usize = 27;
const PROM_LAST: usize = 139;
const _: () = assert!(PROM_LAST < BUCKETS);

impl Registry {
    /// Builds a snapshot. Reads the ends of tasks before `submitted`: a task's acceptance is
    /// counted before it is queued, so every end we see has its acceptance visible to the
    /// later loads (the Release/Acquire pair of the finish counters and the deque), and
    /// `in_flight` never underflows.
    /// Tasks queued in lane `i` now: its shared queue, every worker's deque of the lane, the
    /// jobs still inside bundles, and those workers keep from a pause (`LaneQueue::kept`),
    /// less the shells of cancelled tasks among them (`LaneQueue::shells`). A gauge (reads at
    /// different moments, clamped).
    ///
    /// The shells are read first. A worker takes a shell's entry from its queue, then counts
    /// the shell taken (`shell_taken`, Release; `shells`, Acquire): so every shell we find
    /// gone, we also find gone from the entries read after, and the shells a worker skips
    /// meanwhile can only make the figure low, never high. Read in the other order, a worker
    /// skipping shells between the two reads made a pool whose only queued entries were
    /// shells report them as queued tasks (8 in a CI run, after `wait()` had returned).
    pub(crate) fn lane_queued(&self, i: usize) -> u64 {
        let shells = self.queues.lane(i).shells() as i64;
        let lanes = self.queues.lane_count();
        let mut entries = self.queues.lane(i).shared().len()
            + self.queues.lane(i).kept()
            + self.queues.deque_len(i);
        if lanes == 1 {
            // The join deques: scope tasks spawned on a worker, and join halves waiting for
            // a thief (work queued as much as a task is). Only one-lane pools use them.
            entries += self.queues.joins_len();
        }
        // `bundled` counts every bundle's jobs beyond the entry that carries it (its entry
        // counted in `entries` while it is queued); the jobs taken out of bundles so far are
        // on the shards. Read at different moments, so clamp.
        let bundled = self.queues.lane(i).bundled() as u64;
        let claimed = self.shards.sum_lane(LaneStat::Claimed, i);
        (entries as i64 + bundled.wrapping_sub(claimed) as i64 - shells).max(0) as u64
    }

    /// Workers whose state is `Running` now, among the slots `Stats::per_worker` shows.
    pub(crate) fn workers_running(&self) -> usize {
        self.shards
            .worker_shards()
            .iter()
            .take(self.crew.shown_slots())
            .filter(|s| s.stats.state() == WorkerState::Running)
            .count()
    }

    pub(crate) fn stats(&self) -> Stats {
        let c = &self.shards;
        let completed = c.sum_progress(Progress::Completed);
        let panicked = c.sum_progress(Progress::Panicked);
        let dropped = c.sum_progress(Progress::Dropped);
        let stat = |s| c.sum_stat(s);
        // After the ends, as the shards' count: a task that lands in a submitter's ring is
        // counted there (`SharedQueue::push_submitted`).
        let submitted = stat(Stat::Submitted)
            + self
                .queues
                .lanes()
                .iter()
                .map(|l| l.shared().submitted())
                .sum::<u64>();
        let in_flight = submitted.saturating_sub(completed + panicked + dropped);
        let (rejected_full, rejected_timeout, rejected_shutdown, rejected_unknown_lane) = (
            stat(Stat::RejectedFull),
            stat(Stat::RejectedTimeout),
            stat(Stat::RejectedShutdown),
            stat(Stat::RejectedUnknownLane),
        );
        let threads = self.crew.slot_threads();
        let per_worker = c
            .worker_shards()
            .iter()
            .take(self.crew.shown_slots())
            .enumerate()
            .map(|(index, s)| (index, s, threads[index]))
            .map(|(index, s, thread)| WorkerStats {
                index,
                pinned_core: self.cfg.cores.as_ref().map(|cores| cores[index]),
                executed: s.progress.get(Progress::Completed) + s.progress.get(Progress::Panicked),
                panicked: s.progress.get(Progress::Panicked),
                stolen: s.stats.stat(Stat::Stolen),
                parks: s.stats.stat(Stat::Parks),
                state: s.stats.state(),
                thread_id: thread.map(|t| t.id),
                os_thread_id: thread.and_then(|t| t.os_id),
                native_handle: thread.and_then(|t| t.native),
            })
            .collect();
        let latency = self.latency.as_ref().map(|l| l.snapshot());
        let lanes = self.queues.lane_count();
        let lane_queued: Vec<u64> = (0..lanes).map(|i| self.lane_queued(i)).collect();
        Stats {
            submitted,
            completed,
            panicked,
            dropped,
            rejected: rejected_full + rejected_timeout + rejected_shutdown + rejected_unknown_lane,
            rejected_full,
            rejected_timeout,
            rejected_shutdown,
            rejected_unknown_lane,
            caller_runs: stat(Stat::CallerRuns),
            spawned_thread: stat(Stat::SpawnedThread),
            reserve_runs: stat(Stat::ReserveRuns),
            stolen: stat(Stat::Stolen),
            from_injector: stat(Stat::FromInjector),
            local_pushes: stat(Stat::LocalPushes),
            parks: stat(Stat::Parks),
            wakeups: stat(Stat::Wakeups),
            searches: stat(Stat::Searches),
            victims_scanned: stat(Stat::VictimsScanned),
            failed_steals: stat(Stat::FailedSteals),
            park_attempts: stat(Stat::ParkAttempts),
            sleep_word_writes: self.sleep.writes_so_far(),
            local_push_wake_checks: stat(Stat::LocalPushWakeChecks),
            waiters: self.quiet.waiters(),
            in_flight,
            queued: lane_queued.iter().sum(),
            capacity: self.cfg.capacity,
            workers: self.crew.workers(),
            max_workers: self.cfg.max_workers,
            paused: self.crew.is_paused(),
            uptime: self.started_at.elapsed(),
            per_worker,
            lanes: self
                .cfg
                .lanes
                .iter()
                .enumerate()
                .map(|(i, (name, weight))| {
                    let several = self.queues.lane_count() > 1;
                    LaneStats {
                        name: name.clone(),
                        weight: *weight,
                        submitted: if several {
                            c.sum_lane(LaneStat::Submitted, i)
                        } else {
                            submitted
                        },
                        executed: if several {
                            c.sum_lane(LaneStat::Executed, i)
                        } else {
                            completed + panicked
                        },
                        queued: lane_queued[i],
                        busy: several
                            .then(|| Duration::from_nanos(c.sum_lane(LaneStat::BusyNs, i))),
                    }
                })
                .collect(),
            queue_wait: latency
                .as_ref()
                .map(|(w, _)| LatencyStats::from_snapshot(w)),
            run_time: latency
                .as_ref()
                .map(|(_, r)| LatencyStats::from_snapshot(r)),
        }
    }
}

impl WorkerState {
    fn name(self) -> &'static str {
        match self {
            WorkerState::Running => "running",
            WorkerState::Spinning => "spinning",
            WorkerState::Parked => "parked",
            WorkerState::Stopped => "stopped",
        }
    }
}

impl fmt::Display for WorkerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A duration in the unit that keeps it short: `850ns`, `12.3µs`, `4.56ms`, `1.20s`.
struct Short(Duration);

impl fmt::Display for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0.as_nanos() as f64;
        let s = if ns < 1e3 {
            format!("{ns:.0}ns")
        } else if ns < 1e6 {
            format!("{:.1}µs", ns / 1e3)
        } else if ns < 1e9 {
            format!("{:.2}ms", ns / 1e6)
        } else {
            format!("{:.2}s", ns / 1e9)
        };
        f.pad(&s)
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cap = if self.capacity == usize::MAX {
            "unbounded".to_owned()
        } else {
            self.capacity.to_string()
        };
        writeln!(
            f,
            "flock pool: {} workers (max {}), up {}, capacity {cap}{}",
            self.workers,
            self.max_workers,
            Short(self.uptime),
            if self.paused { ", PAUSED" } else { "" }
        )?;
        writeln!(
            f,
            "  tasks    submitted {}  completed {}  panicked {}  dropped {}  in flight {}  queued {}",
            self.submitted, self.completed, self.panicked, self.dropped, self.in_flight, self.queued
        )?;
        writeln!(
            f,
            "  refused  full {}  timeout {}  shutdown {}  unknown lane {}   ran on caller {}  on helper thread {}  on lane reserve {}",
            self.rejected_full,
            self.rejected_timeout,
            self.rejected_shutdown,
            self.rejected_unknown_lane,
            self.caller_runs,
            self.spawned_thread,
            self.reserve_runs
        )?;
        writeln!(
            f,
            "  moves    stolen {}  from injector {}  local pushes {}   parks {}  wake-ups {}",
            self.stolen, self.from_injector, self.local_pushes, self.parks, self.wakeups
        )?;
        if let (Some(w), Some(r)) = (&self.queue_wait, &self.run_time) {
            writeln!(
                f,
                "  latency      {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
                "count", "mean", "p50", "p90", "p99", "max"
            )?;
            for (name, l) in [("queue wait", w), ("run time", r)] {
                writeln!(
                    f,
                    "  {name:<12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
                    l.count,
                    Short(l.mean),
                    Short(l.p50),
                    Short(l.p90),
                    Short(l.p99),
                    Short(l.max)
                )?;
            }
        }
        if self.lanes.len() > 1 {
            writeln!(
                f,
                "  lane              weight  submitted   executed     queued       busy"
            )?;
            for l in &self.lanes {
                writeln!(
                    f,
                    "  {:<16} {:>7} {:>10} {:>10} {:>10} {:>10}",
                    l.name,
                    l.weight,
                    l.submitted,
                    l.executed,
                    l.queued,
                    Short(l.busy.unwrap_or_default())
                )?;
            }
        }
        writeln!(
            f,
            "  worker  core  state     executed  panicked    stolen     parks"
        )?;
        for w in &self.per_worker {
            let core = w.pinned_core.map_or("-".to_owned(), |c| c.to_string());
            writeln!(
                f,
                "  {:>6}  {core:>4}  {:<8} {:>9} {:>9} {:>9} {:>9}",
                w.index, w.state, w.executed, w.panicked, w.stolen, w.parks
            )?;
        }
        Ok(())
    }
}
