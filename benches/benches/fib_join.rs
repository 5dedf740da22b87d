//! `fib-join`: recursive fib(30) where every call above the leaves is a fork-join
//! (1,346,268 joins, no sequential cut-off, so the join itself is what is measured):
//! `flock::Pool::join` against `rayon::join` inside `rayon::ThreadPool::install`, both with
//! `available_parallelism()` workers, and the same recursion with no join (`sequential`).
//! Throughput counts joins per second. `benches/examples/bench_report.rs` turns the times into the
//! overhead per join: (pool time × workers − sequential time) ÷ joins.
mod common;

use common::workloads::{fib_joins, time_fib_flock, time_fib_rayon, time_fib_seq, FIB_N};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;

fn fib_join(c: &mut Criterion) {
    let mut g = common::group(c, "fib-join", Duration::from_secs(5));
    g.throughput(Throughput::Elements(fib_joins(FIB_N) as u64));
    {
        let flock = common::peers::Flock::new();
        g.bench_function("flock", |b| {
            b.iter_custom(|iters| (0..iters).map(|_| time_fib_flock(&flock.pool, FIB_N)).sum())
        });
    }
    {
        let rayon = common::peers::Rayon::new();
        g.bench_function("rayon", |b| {
            b.iter_custom(|iters| (0..iters).map(|_| time_fib_rayon(&rayon.0, FIB_N)).sum())
        });
    }
    g.bench_function("sequential", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| time_fib_seq(FIB_N)).sum())
    });
    g.finish();
}

criterion_group!(benches, fib_join);
criterion_main!(benches);
