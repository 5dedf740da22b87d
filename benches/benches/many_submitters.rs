//! `100u-10Kt`: 100 threads outside the pool (a `std::thread::scope`, released together by a
//! barrier) each submit 10,000 near-empty tasks at once; then the measuring thread waits for
//! all 1,000,000. Throughput in tasks/s, from the release of the submitters to the end of
//! the wait.
//!
//! Against: rayon (`ThreadPool::spawn`), threadpool, tokio (multi-thread runtime, `spawn`),
//! a plain crossbeam-channel pool, all with `available_parallelism()` workers; flock with its
//! defaults and as `flock-unbounded` (capacity `usize::MAX`). flock and threadpool use their
//! own wait-for-all; the others count down one shared latch (atomic counter + Mutex/Condvar).
mod common;

use common::peers::{retire, Kind};
use common::workloads::{SUBMITTER_THREADS, TASKS_PER_SUBMITTER};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;

fn many_submitters(c: &mut Criterion) {
    let mut g = common::group(c, "100u-10Kt", Duration::from_secs(8));
    g.throughput(Throughput::Elements(
        (SUBMITTER_THREADS * TASKS_PER_SUBMITTER) as u64,
    ));
    let kinds = [
        Kind::Flock,
        Kind::FlockUnbounded,
        Kind::Rayon,
        Kind::Threadpool,
        Kind::Tokio,
        Kind::Channel,
    ];
    for kind in kinds {
        let pool = kind.make();
        g.bench_function(pool.name(), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| pool.many_submitters(SUBMITTER_THREADS, TASKS_PER_SUBMITTER))
                    .sum()
            })
        });
        retire(pool);
    }
    g.finish();
}

criterion_group!(benches, many_submitters);
criterion_main!(benches);
