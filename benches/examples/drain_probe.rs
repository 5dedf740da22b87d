//! What bounds `cpu-1us` and the bulk workloads on two workers, measured apart from them.
//!
//! `drain_probe drain W`: a pool of `W` workers, paused, is given 2,000,000 trivial tasks
//! from one outside thread (all in that thread's submitter ring), then resumed; prints the
//! wall time per task of the drain (median of 9). One worker takes from the ring alone; two
//! take turns on the ring's head, one CAS each per task, and the head's cache line moves
//! between them on every take.
//!
//! `drain_probe spin`: `cpu-1us`'s 200,000 bodies of about 1 µs, first on one thread, then
//! split over two plain threads with no pool: the efficiency two CPUs of this machine allow
//! (median of 5).
#[path = "../benches/common/mod.rs"]
mod common;

use common::workloads::{cpu_tasks_sequential, CPU_TASKS, CPU_TASK_US};
use std::cell::Cell;
use std::time::Instant;

thread_local!(static HITS: Cell<u64> = const { Cell::new(0) });

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn drain(workers: usize) {
    let n = 2_000_000;
    let pool = flock::Pool::builder()
        .workers(workers)
        .capacity(usize::MAX)
        .build()
        .expect("pool");
    let per_task: Vec<f64> = (0..9)
        .map(|_| {
            pool.pause();
            for _ in 0..n {
                pool.submit(|| HITS.with(|h| h.set(h.get() + 1)))
                    .expect("submit");
            }
            let t = Instant::now();
            pool.resume();
            pool.wait().expect("wait");
            t.elapsed().as_secs_f64() * 1e9 / n as f64
        })
        .collect();
    println!(
        "drain, {workers} worker(s): {:.1} ns a task (median of 9; min {:.1}, max {:.1})",
        median(per_task.clone()),
        per_task.iter().copied().fold(f64::MAX, f64::min),
        per_task.iter().copied().fold(0.0, f64::max),
    );
}

fn spin() {
    common::spins_per_us();
    let effs: Vec<f64> = (0..5)
        .map(|_| {
            let one = cpu_tasks_sequential(CPU_TASKS, CPU_TASK_US).as_secs_f64();
            let t = Instant::now();
            let halves: Vec<_> = (0..2)
                .map(|_| std::thread::spawn(|| cpu_tasks_sequential(CPU_TASKS / 2, CPU_TASK_US)))
                .collect();
            for h in halves {
                h.join().expect("spinner");
            }
            one / 2.0 / t.elapsed().as_secs_f64()
        })
        .collect();
    println!(
        "two plain threads: {:.0}% of the ideal split (median of 5; each run against its own sequential time)",
        median(effs) * 100.0
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("drain") => drain(args.next().map_or(2, |w| w.parse().expect("workers"))),
        Some("spin") => spin(),
        _ => eprintln!("usage: drain_probe drain W | drain_probe spin"),
    }
}
