//! `qsort`: quicksort of 4 Mi pseudo-random `u64` (a fixed seed) where both halves of every
//! partition go through a fork-join, down to slices of 2048 that are sorted in place: a real
//! divide-and-conquer workload, with uneven halves and memory traffic, beside `fib-join`'s
//! empty forks. `flock::Pool::join` against `rayon::join` inside
//! `rayon::ThreadPool::install`, both with `available_parallelism()` workers. Each iteration
//! sorts a fresh copy (the copy is outside the timed part).
mod common;

use common::workloads::{qsort_input, time_qsort_flock, time_qsort_rayon, QSORT_LEN};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;

fn qsort(c: &mut Criterion) {
    let mut g = common::group(c, "qsort", Duration::from_secs(5));
    g.throughput(Throughput::Elements(QSORT_LEN as u64));
    let input = qsort_input(QSORT_LEN);
    {
        let flock = common::peers::Flock::new();
        g.bench_function("flock", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| time_qsort_flock(&flock.pool, &input))
                    .sum()
            })
        });
    }
    {
        let rayon = common::peers::Rayon::new();
        g.bench_function("rayon", |b| {
            b.iter_custom(|iters| (0..iters).map(|_| time_qsort_rayon(&rayon.0, &input)).sum())
        });
    }
    g.finish();
}

criterion_group!(benches, qsort);
criterion_main!(benches);
