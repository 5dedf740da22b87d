//! `async-offload`: flock as the CPU pool of an async service, against tokio's
//! `spawn_blocking`. A tokio runtime (one thread per CPU) takes 1000 requests at once, each
//! needing ~1 ms of CPU, and offloads them: through flock's futures
//! (`pool.spawn_async(work).await.await`, a pool of one worker per CPU), or through
//! `tokio::task::spawn_blocking(work).await` (tokio's blocking pool, up to 512 threads). A
//! heartbeat task on the same runtime wants to tick every 5 ms; its lateness (how long after
//! each planned tick it ran) is what an async service's other requests feel. Reported: the
//! total time for the 1000 requests and the p99 lateness of the heartbeat while they ran.
//! Target: flock's p99 lateness at most half of `spawn_blocking`'s.
//!
//! Used by `examples/bench_report.rs` (`#[path]`-included on its own: it needs only flock and
//! tokio).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Requests per run.
pub const REQUESTS: usize = 1000;
/// CPU time per request.
pub const WORK: Duration = Duration::from_millis(1);
/// The heartbeat's period.
pub const HEARTBEAT: Duration = Duration::from_millis(5);

/// How the requests reach CPU threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Flock,
    SpawnBlocking,
}

/// One run.
pub struct Run {
    pub total: Duration,
    pub p99_late: Duration,
    pub worst_late: Duration,
}

/// Several runs of each, alternating, and the verdict; what `bench_report` prints.
pub struct Report {
    /// Total time per run, seconds.
    pub flock_total: Vec<f64>,
    pub blocking_total: Vec<f64>,
    /// Medians of the per-run p99 lateness.
    pub flock_p99: Duration,
    pub blocking_p99: Duration,
    pub pass: bool,
    pub target: String,
    pub note: String,
}

/// ~`d` of CPU on this thread (spinning on the clock).
fn burn(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < d {
        for _ in 0..256 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        }
    }
    x
}

/// One run of `REQUESTS` requests through `via`, with `workers` runtime and pool threads.
pub fn run(via: Via, workers: usize) -> Run {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .expect("tokio runtime");
    let pool = Arc::new(
        flock::Pool::builder()
            .workers(workers)
            .build()
            .expect("flock pool"),
    );
    let (total, mut late) = rt.block_on(async {
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let heartbeat = tokio::spawn(async move {
            let mut late = Vec::new();
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                next += HEARTBEAT;
                tokio::time::sleep_until(next.into()).await;
                late.push(next.elapsed());
                // A tick that came very late does not owe the ticks it missed.
                next = next.max(Instant::now() - HEARTBEAT / 2);
            }
            late
        });
        let start = Instant::now();
        let requests: Vec<_> = (0..REQUESTS)
            .map(|_| {
                let pool = pool.clone();
                tokio::spawn(async move {
                    match via {
                        Via::Flock => pool.spawn_async(|| burn(WORK)).await.await.unwrap(),
                        Via::SpawnBlocking => {
                            tokio::task::spawn_blocking(|| burn(WORK)).await.unwrap()
                        }
                    }
                })
            })
            .collect();
        for r in requests {
            std::hint::black_box(r.await.unwrap());
        }
        let total = start.elapsed();
        done.store(true, Ordering::Relaxed);
        (total, heartbeat.await.unwrap())
    });
    drop(rt);
    late.sort();
    let p99 = late[(late.len() * 99 / 100).min(late.len() - 1)];
    Run {
        total,
        p99_late: p99,
        worst_late: *late.last().unwrap(),
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// `runs` runs of each, alternating (flock first), with `workers` threads each.
pub fn report(runs: usize, workers: usize) -> Report {
    let (mut flock, mut blocking) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        flock.push(run(Via::Flock, workers));
        blocking.push(run(Via::SpawnBlocking, workers));
    }
    let p99 = |v: &[Run]| median(v.iter().map(|r| r.p99_late).collect());
    let worst = |v: &[Run]| median(v.iter().map(|r| r.worst_late).collect());
    let (flock_p99, blocking_p99) = (p99(&flock), p99(&blocking));
    let ratio = flock_p99.as_secs_f64() / blocking_p99.as_secs_f64().max(1e-9);
    Report {
        flock_total: flock.iter().map(|r| r.total.as_secs_f64()).collect(),
        blocking_total: blocking.iter().map(|r| r.total.as_secs_f64()).collect(),
        flock_p99,
        blocking_p99,
        pass: ratio <= 0.5,
        target: format!("heartbeat p99 lateness ≤0.5× spawn_blocking's: {ratio:.2}×"),
        note: format!(
            "{REQUESTS} requests of {WORK:?} CPU from a {workers}-thread tokio runtime; \
             5 ms heartbeat lateness p99 {flock_p99:.2?} (worst {:.2?}) vs spawn_blocking \
             p99 {blocking_p99:.2?} (worst {:.2?}); median of {runs} runs",
            worst(&flock),
            worst(&blocking)
        ),
    }
}
