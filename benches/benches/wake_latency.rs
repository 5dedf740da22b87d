//! `wake-latency`: from a fully parked pool (5 ms of nothing first), one task is submitted
//! that reads the clock first thing; one iteration is the time from the submit call to that
//! reading. The baseline, `futex-wake`, is the same measurement on a bare futex: a thread
//! blocked in `std::thread::park` is unparked by the measuring thread, which timed the
//! `unpark` call against the woken thread's first clock reading. Criterion prints the mean;
//! `benches/examples/bench_report.rs` prints p50 and p99.
//!
//! Against: rayon (`ThreadPool::spawn`), threadpool, tokio (multi-thread runtime, `spawn`),
//! a plain crossbeam-channel pool, all with `available_parallelism()` workers, and one
//! `std::thread::spawn` per task.
mod common;

use common::peers::{retire, Kind};
use common::workloads::futex_wake_latency;
use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

fn wake_latency(c: &mut Criterion) {
    let mut g = common::group(c, "wake-latency", Duration::from_secs(3));
    g.bench_function("futex-wake", |b| {
        b.iter_custom(|iters| futex_wake_latency(iters as usize).into_iter().sum())
    });
    for kind in Kind::POOLS.into_iter().chain([Kind::StdThread]) {
        let pool = kind.make();
        g.bench_function(pool.name(), |b| {
            b.iter_custom(|iters| pool.wake_latency(iters as usize).into_iter().sum())
        });
        retire(pool);
    }
    g.finish();
}

criterion_group!(benches, wake_latency);
criterion_main!(benches);
