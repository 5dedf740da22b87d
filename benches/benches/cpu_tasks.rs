//! `cpu-1us`: one thread outside the pool submits 200,000 tasks of about 1 µs of CPU each (a
//! spin loop through `std::hint::black_box`, calibrated once at start-up; never a sleep),
//! then waits; throughput in tasks/s. The `sequential` entry runs the same 200,000 bodies on
//! one thread: the ideal pool time is that divided by the worker count, and a pool's
//! efficiency is ideal ÷ measured (`benches/examples/bench_report.rs` prints it).
//!
//! Against: rayon (`ThreadPool::spawn`), threadpool, tokio (multi-thread runtime, `spawn`),
//! a plain crossbeam-channel pool, all with `available_parallelism()` workers. flock and
//! threadpool use their own wait-for-all; the others count down one shared latch (atomic
//! counter + Mutex/Condvar). One std thread per task is left out (200,000 thread spawns).
mod common;

use common::peers::{retire, Kind};
use common::workloads::{cpu_tasks_sequential, CPU_TASKS, CPU_TASK_US};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;

fn cpu_tasks(c: &mut Criterion) {
    common::spins_per_us();
    let mut g = common::group(c, "cpu-1us", Duration::from_secs(5));
    g.throughput(Throughput::Elements(CPU_TASKS as u64));
    g.bench_function("sequential", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| cpu_tasks_sequential(CPU_TASKS, CPU_TASK_US))
                .sum()
        })
    });
    for kind in Kind::POOLS {
        let pool = kind.make();
        g.bench_function(pool.name(), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| pool.cpu_tasks(CPU_TASKS, CPU_TASK_US))
                    .sum()
            })
        });
        retire(pool);
    }
    g.finish();
}

criterion_group!(benches, cpu_tasks);
criterion_main!(benches);
