//! `bulk-1Mt`: one thread outside the pool hands 1,000,000 near-empty tasks (the 1u-1Mt body:
//! a relaxed bump of a counter held through an `Arc`) to one flock pool, then waits for all of
//! them with `Pool::wait`; throughput in tasks/s. Two ways of handing them over, on the same
//! pool (defaults: capacity 65,536, `Backpressure::Block`): `flock`, one `Pool::submit` per
//! task, and `flock-batch`, one `Pool::submit_batch` call with an iterator that makes the
//! same closures lazily. The target (`benches/examples/bench_report.rs`): `submit_batch` ≥ 2× the
//! per-task rate.
//!
//! Against: rayon's `ThreadPool::spawn` loop (the 1u-1Mt peer body, a shared countdown latch
//! as its wait-for-all), with `available_parallelism()` workers like flock.
mod common;

use common::peers::{retire, Flock, Kind};
use common::workloads::{bulk_submit_batch, bulk_submit_each, BULK_TASKS};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;

fn bulk_submit(c: &mut Criterion) {
    let mut g = common::group(c, "bulk-1Mt", Duration::from_secs(8));
    g.throughput(Throughput::Elements(BULK_TASKS as u64));
    {
        let flock = Flock::new();
        g.bench_function("flock", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| bulk_submit_each(&flock.pool, BULK_TASKS))
                    .sum()
            })
        });
        g.bench_function("flock-batch", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| bulk_submit_batch(&flock.pool, BULK_TASKS))
                    .sum()
            })
        });
    }
    let rayon = Kind::Rayon.make();
    g.bench_function(rayon.name(), |b| {
        b.iter_custom(|iters| (0..iters).map(|_| rayon.one_submitter(BULK_TASKS)).sum())
    });
    retire(rayon);
    g.finish();
}

criterion_group!(benches, bulk_submit);
criterion_main!(benches);
