//! `idle-cpu`: CPU time a pool burns while idle. Each pool runs a burst of 100,000
//! near-empty tasks, is waited on, and then left alone for one second while the measuring
//! thread sleeps; the CPU time every other thread of the process used in that second is read
//! from `/proc/self/task/*/schedstat` (nanoseconds; `/proc/self/stat`'s 10 ms ticks are too
//! coarse) and printed as ms of CPU per idle second. Only the pool under test has threads
//! during its second (each pool is dropped, its threads joined, before the next starts).
//! Not a criterion group: this is a custom measurement, printed, and included in
//! `benches/examples/bench_report.rs`.
//!
//! Against: rayon, threadpool, tokio (multi-thread runtime), a plain crossbeam-channel pool,
//! all with `available_parallelism()` workers. (`std::thread` per task leaves no threads
//! behind: nothing to measure.)
mod common;

use common::peers::{retire, Kind};
use common::workloads::{IDLE_WARM_TASKS, IDLE_WINDOW};

fn main() {
    // `cargo bench -- --test` passes `--test`; one measurement per pool is all this does
    // anyway. Arguments (filters, `--bench`) are accepted and ignored.
    println!("idle-cpu: ms of CPU per idle second after {IDLE_WARM_TASKS} tasks");
    for kind in Kind::POOLS {
        let pool = kind.make();
        let ms = pool.idle_cpu_ms_per_s(IDLE_WARM_TASKS, IDLE_WINDOW);
        println!("idle-cpu/{:<20} {ms:>9.4} ms/s", pool.name());
        retire(pool);
    }
}
