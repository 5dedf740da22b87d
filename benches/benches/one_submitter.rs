//! `1u-1Mt`: one thread outside the pool submits 1,000,000 near-empty tasks (each bumps a
//! relaxed atomic counter it holds through an `Arc`), then waits for all of them; throughput
//! in tasks/s.
//!
//! Against: rayon (`ThreadPool::spawn`), threadpool, tokio (multi-thread runtime, `spawn`),
//! a plain crossbeam-channel pool, all with `available_parallelism()` workers. flock runs
//! with its defaults (capacity 65,536, `Backpressure::Block`: the submitter blocks whenever it
//! is 65,536 tasks ahead) and, as `flock-unbounded`, with capacity `usize::MAX` like the
//! peers' unbounded queues. flock and threadpool wait with their own wait-for-all; the others
//! have none, so each task also counts down one shared latch (an atomic counter whose last
//! decrement signals a Mutex/Condvar) that the submitter waits on. One std thread per task
//! is left out: a million thread spawns measures the kernel, not a pool.
mod common;

use common::peers::{retire, Kind};
use common::workloads::ONE_SUBMITTER_TASKS;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;

fn one_submitter(c: &mut Criterion) {
    let mut g = common::group(c, "1u-1Mt", Duration::from_secs(8));
    g.throughput(Throughput::Elements(ONE_SUBMITTER_TASKS as u64));
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
                    .map(|_| pool.one_submitter(ONE_SUBMITTER_TASKS))
                    .sum()
            })
        });
        retire(pool);
    }
    g.finish();
}

criterion_group!(benches, one_submitter);
criterion_main!(benches);
