//! `burst`: the pool sits idle for 1 ms (`thread::sleep`, long enough for workers to stop
//! spinning), then gets 100 tasks of about 2 µs of CPU each (calibrated spin) and is waited
//! on; repeated. One iteration is one burst, timed from its first submit to the return of its
//! wait (the idle sleep is not counted). Throughput in tasks/s.
//!
//! Against: rayon (`ThreadPool::spawn`), threadpool, tokio (multi-thread runtime, `spawn`),
//! a plain crossbeam-channel pool, all with `available_parallelism()` workers, and one
//! `std::thread::spawn` per task. flock and threadpool use their own wait-for-all; the
//! others count down one shared latch (atomic counter + Mutex/Condvar).
mod common;

use common::peers::{retire, Kind};
use common::workloads::{BURST_TASKS, BURST_TASK_US};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;

fn burst(c: &mut Criterion) {
    common::spins_per_us();
    let mut g = common::group(c, "burst", Duration::from_secs(3));
    g.throughput(Throughput::Elements(BURST_TASKS as u64));
    for kind in Kind::POOLS.into_iter().chain([Kind::StdThread]) {
        let pool = kind.make();
        g.bench_function(pool.name(), |b| {
            b.iter_custom(|iters| {
                pool.bursts(iters as usize, BURST_TASKS, BURST_TASK_US)
                    .into_iter()
                    .sum()
            })
        });
        retire(pool);
    }
    g.finish();
}

criterion_group!(benches, burst);
criterion_main!(benches);
