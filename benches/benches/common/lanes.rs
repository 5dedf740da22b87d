//! The lane workloads (`lanes-split`, `lanes-p99`): flock's priority lanes, which no peer
//! pool has, so each compares flock with itself (one lane against the other, an idle pool
//! against a busy one) in the same run.
//!
//! Both use the pool [`lanes_pool`] builds: [`workers()`](super::workers) workers, lanes
//! `[("interactive", 8), ("batch", 1)]`, `track_latency(true)`, and no capacity bound, so
//! that a run can queue all of its saturating work while the pool is paused and start it at
//! once (backpressure is not what these workloads are about). A lane is *saturated* when it
//! has queued tasks for the whole measured window; each run checks that it did and panics
//! if not (the figures of a lane that ran dry would not mean what their names say).

use super::{cpu_work, quantile, CountDown};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The lanes and weights under test.
pub const LANES: [(&str, u32); 2] = [("interactive", 8), ("batch", 1)];
/// The executed ratio interactive : batch that `LANES` asks for when both are saturated.
pub const SPLIT_TARGET: f64 = 8.0;
/// CPU per task in `lanes-split`, both lanes.
pub const SPLIT_TASK_US: u64 = 30;
/// `lanes-split`: time between resuming the pool and the start of the window.
pub const SPLIT_WARM: Duration = Duration::from_millis(100);
/// `lanes-split`: the measured window in `bench_report`.
pub const SPLIT_WINDOW: Duration = Duration::from_secs(1);
/// `lanes-p99`: CPU per batch task.
pub const P99_BATCH_US: u64 = 50;
/// `lanes-p99`, [`Batch::Yielding`]: CPU between two `flock::yield_to_lanes` calls in a batch
/// task (10 slices of its 50 µs).
pub const P99_YIELD_US: u64 = 5;

/// What the batch lane does during a `lanes-p99` run, and whether the pool has its lane
/// reserve (`PoolBuilder::lane_reserve`, on by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batch {
    /// Nothing: the interactive tasks find an idle pool (the default pool).
    Idle,
    /// Saturated with tasks of [`P99_BATCH_US`] µs of CPU that never yield (the default
    /// pool: the lane reserve runs an interactive task that arrives while every worker runs
    /// a batch task).
    Saturated,
    /// As `Saturated`, in a pool built with `lane_reserve(false)`: an interactive task waits
    /// for the first worker to finish its batch task (no preemption).
    SaturatedNoReserve,
    /// Saturated with the same tasks, each calling `flock::yield_to_lanes` after every
    /// [`P99_YIELD_US`] µs of its work (a cooperative preemption point), in a pool built with
    /// `lane_reserve(false)` so that the yield points alone are measured.
    Yielding,
}
/// `lanes-p99`: interactive tasks per run, one every `P99_INTERVAL`.
pub const P99_SAMPLES: usize = 300;
pub const P99_INTERVAL: Duration = Duration::from_millis(1);
/// `lanes-p99`: time between resuming the pool and the first interactive task.
pub const P99_WARM: Duration = Duration::from_millis(50);

/// The pool of both lane workloads (see the module doc), with or without its lane reserve.
pub fn lanes_pool(reserve: bool) -> flock::Pool {
    flock::Pool::builder()
        .workers(super::workers())
        .lanes(&LANES)
        .capacity(usize::MAX)
        .track_latency(true)
        .lane_reserve(reserve)
        .build()
        .expect("flock pool with lanes")
}

/// Tasks a lane needs to stay saturated for `span` even if it had every worker to itself,
/// doubled for the machine's noise (`cpu_work` may run faster than calibrated).
fn saturating(task_us: u64, span: Duration) -> usize {
    let per_worker = span.as_secs_f64() * 1e6 / task_us as f64;
    (2.0 * per_worker * super::workers() as f64).ceil() as usize
}

/// Executed and submitted counts of every lane, from the pool's own statistics.
fn lane_counts(pool: &flock::Pool) -> Vec<(u64, u64)> {
    let stats = pool.stats();
    stats
        .lanes
        .iter()
        .map(|l| (l.executed, l.submitted))
        .collect()
}

/// Queues `n` tasks of `us` µs of CPU on `lane`, each running `after` at its end.
fn fill(
    pool: &flock::Pool,
    lane: &str,
    n: usize,
    us: u64,
    yield_every_us: Option<u64>,
    after: impl Fn() + Send + Sync + 'static,
) {
    // Each task holds one `Arc` (fits in the job, no allocation per task). With the three
    // `Arc`s and two numbers captured directly, every task was boxed by the submitting
    // thread and freed by a worker; the submitter's next allocation (crossbeam's injector
    // allocates a block every 63 pushes) then waited ~60 µs for the malloc arena the
    // workers were freeing into, and `lanes-p99` measured that instead of the pool.
    let shared = Arc::new((after, us, yield_every_us));
    let tasks = (0..n).map(|_| {
        let shared = shared.clone();
        move || {
            let (after, us, yield_every_us) = &*shared;
            let us = *us;
            match *yield_every_us {
                None => cpu_work(us),
                Some(slice) => {
                    for _ in 0..us.div_ceil(slice) {
                        cpu_work(slice);
                        flock::yield_to_lanes();
                    }
                }
            }
            after();
        }
    });
    assert_eq!(
        pool.submit_batch_to(lane, tasks).ok(),
        Some(n),
        "flock refused a task"
    );
}

/// Panics unless `lane` still had tasks left unstarted (the lane stayed saturated).
fn assert_saturated(counts: &[(u64, u64)], lane: usize) {
    let (executed, submitted) = counts[lane];
    assert!(
        executed < submitted,
        "lane {} ran dry ({executed} of {submitted} ran): the run is void",
        LANES[lane].0
    );
}

/// One `lanes-split` run.
#[derive(Clone, Copy, Debug)]
pub struct Split {
    /// Interactive-lane tasks executed in the window.
    pub interactive: u64,
    /// Batch-lane tasks executed in the window.
    pub batch: u64,
    /// The window's length as measured.
    pub window: Duration,
}

impl Split {
    /// Executed interactive : batch (∞ if the batch lane ran nothing).
    pub fn ratio(&self) -> f64 {
        self.interactive as f64 / self.batch as f64
    }
}

/// `lanes-split`: both lanes saturated with equal tasks of `task_us` µs of CPU (queued while
/// the pool is paused, enough for either lane to keep every worker busy for the whole run);
/// after [`SPLIT_WARM`], the tasks each lane executed during `window` (from the pool's
/// `Stats::lanes`). The rest is dropped with `shutdown_now`.
pub fn lanes_split(task_us: u64, window: Duration) -> Split {
    super::spins_per_us();
    let pool = lanes_pool(true);
    let n = saturating(task_us, SPLIT_WARM + window);
    pool.pause();
    for (lane, _) in LANES {
        fill(&pool, lane, n, task_us, None, || ());
    }
    pool.resume();
    thread::sleep(SPLIT_WARM);
    let (before, start) = (lane_counts(&pool), Instant::now());
    thread::sleep(window);
    let (after, window) = (lane_counts(&pool), start.elapsed());
    for lane in 0..LANES.len() {
        assert_saturated(&after, lane);
    }
    pool.shutdown_now().expect("shutdown_now from outside");
    Split {
        interactive: after[0].0 - before[0].0,
        batch: after[1].0 - before[1].0,
        window,
    }
}

/// One `lanes-p99` run.
#[derive(Clone, Debug)]
pub struct Trickle {
    /// Each interactive task's queue wait: submit call → the task's first clock reading.
    pub waits: Vec<Duration>,
    /// Saturated runs only: for each interactive task, submit call → the end of the first
    /// batch task to end after it, i.e. the first moment a worker was free to take it. A
    /// scheduler that never interrupts a running task cannot do better than this.
    pub first_free: Vec<Duration>,
    /// p99 of the pool's own `Stats::queue_wait` histogram (every lane mixed).
    pub pool_p99: Duration,
}

/// Clock readings of a run, as ns since its start (so that tasks can store them in atomics).
struct Clock(Instant);

impl Clock {
    fn ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// `lanes-p99`: `samples` interactive tasks, one every `interval` on a fixed schedule, each
/// timestamped at its submit and at its start; unless `batch` is [`Batch::Idle`], while the
/// batch lane is saturated with tasks of [`P99_BATCH_US`] µs (queued while the pool is
/// paused, enough to keep every worker busy for twice the run; each records its end time,
/// for `first_free`), yielding or not as `batch` says.
/// The pool is built fresh for each run and the first sample comes [`P99_WARM`] after the
/// start, either way.
pub fn lanes_trickle(batch: Batch, samples: usize, interval: Duration) -> Trickle {
    let saturate = batch != Batch::Idle;
    super::spins_per_us();
    let pool = lanes_pool(matches!(batch, Batch::Idle | Batch::Saturated));
    let interactive = pool.lane(LANES[0].0).expect("interactive lane");
    let clock = Arc::new(Clock(Instant::now()));
    let n = if saturate {
        saturating(P99_BATCH_US, P99_WARM + interval * samples as u32)
    } else {
        0
    };
    let ends: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(u64::MAX)).collect());
    let next_end = Arc::new(AtomicUsize::new(0));
    if saturate {
        pool.pause();
        let (clock, ends, next_end) = (clock.clone(), ends.clone(), next_end.clone());
        let yield_every = (batch == Batch::Yielding).then_some(P99_YIELD_US);
        fill(&pool, LANES[1].0, n, P99_BATCH_US, yield_every, move || {
            let at = clock.ns();
            ends[next_end.fetch_add(1, Relaxed)].store(at, Relaxed);
        });
        pool.resume();
    }
    thread::sleep(P99_WARM);
    let seen = Arc::new(Mutex::new(Vec::with_capacity(samples)));
    let done = Arc::new(CountDown::new(samples));
    let mut due = Instant::now();
    for _ in 0..samples {
        due += interval;
        thread::sleep(due.saturating_duration_since(Instant::now()));
        let (clock, seen, done) = (clock.clone(), seen.clone(), done.clone());
        let submitted = clock.ns();
        let task = move || {
            let started = clock.ns();
            seen.lock().unwrap().push((submitted, started));
            done.count_down();
        };
        if pool.submit_to(interactive, task).is_err() {
            panic!("flock refused an interactive task");
        }
    }
    done.wait();
    if saturate {
        assert_saturated(&lane_counts(&pool), 1);
    }
    let pool_p99 = pool.stats().queue_wait.expect("track_latency").p99;
    pool.shutdown_now().expect("shutdown_now from outside");
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(seen.len(), samples, "every interactive task ran once");
    let first_free = if saturate {
        first_free(&seen, &ends)
    } else {
        Vec::new()
    };
    let ns = Duration::from_nanos;
    Trickle {
        waits: seen
            .iter()
            .map(|&(s, st)| ns(st.saturating_sub(s)))
            .collect(),
        first_free,
        pool_p99,
    }
}

/// For each `(submitted, started)` pair, submit → the first batch task end at or after it.
/// The batch lane was saturated throughout and `shutdown_now` let the running tasks end, so
/// some batch task ended after every submit; batch tasks that never ran kept `u64::MAX`.
fn first_free(seen: &[(u64, u64)], ends: &[AtomicU64]) -> Vec<Duration> {
    let mut ends: Vec<u64> = ends
        .iter()
        .map(|e| e.load(Relaxed))
        .filter(|&e| e != u64::MAX)
        .collect();
    ends.sort_unstable();
    seen.iter()
        .map(|&(submitted, _)| {
            let i = ends.partition_point(|&e| e < submitted);
            let end = ends.get(i).expect("a batch task ended after the submit");
            Duration::from_nanos(end - submitted)
        })
        .collect()
}

/// The p99 of `samples` (nearest rank).
pub fn p99(samples: &[Duration]) -> Duration {
    quantile(&mut samples.to_vec(), 0.99)
}
