//! The body of `1u-1Mt` (one outside thread submits 1,000,000 near-empty tasks to a flock pool
//! with its defaults, then waits for all; `benches/benches/common/workloads.rs`, `one_submitter`) as
//! a process of its own, for the report's `metrics-cost` and `c-submit` rows
//! (`benches/examples/bench_report.rs` builds and runs it; docs/bench.md, workloads 9 and 10).
//!
//! Its own process because one of the variants is flock built with `--no-default-features`
//! (flock's `stats` feature off, through this package's feature of the same name: the
//! statistics counters compile to nothing), which needs a second build of the crate:
//!
//! ```text
//! cargo build --release -p flock-benches --example metrics_cost                        # metrics on
//! cargo build --release -p flock-benches --example metrics_cost --no-default-features  # metrics off
//! target/release/examples/metrics_cost [--latency] [--runs N | --serve] [--warmup N] [--tasks N]
//! ```
//!
//! `--latency` builds the pool with `track_latency(true)`. Runs the `--warmup` runs (default
//! 1, not printed), prints a comment line starting with `#` (which build and pool this is;
//! the report waits for it), then one line per measured run: tasks per second. With
//! `--serve`, one measured run per line read from stdin, until end of file (the report's way
//! of alternating variants run by run). One pool serves every run.
#[path = "../benches/common/mod.rs"]
mod common;

use common::peers::Flock;
use common::workloads::{one_submitter, ONE_SUBMITTER_TASKS};

fn main() {
    let (mut latency, mut serve, mut runs, mut warmup, mut tasks) =
        (false, false, 3usize, 1usize, ONE_SUBMITTER_TASKS);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} needs a number"))
        };
        match a.as_str() {
            "--latency" => latency = true,
            "--serve" => serve = true,
            "--runs" => runs = value("--runs"),
            "--warmup" => warmup = value("--warmup"),
            "--tasks" => tasks = value("--tasks"),
            _ => {
                eprintln!(
                    "usage: metrics_cost [--latency] [--runs N | --serve] [--warmup N] [--tasks N]"
                );
                std::process::exit(2);
            }
        }
    }
    let flock = if latency {
        Flock::latency()
    } else {
        Flock::new()
    };
    for _ in 0..warmup {
        one_submitter(&flock, tasks);
    }
    println!(
        "# metrics={} latency={} workers={} capacity={} tasks={tasks}",
        if cfg!(feature = "stats") { "on" } else { "off" },
        if latency { "on" } else { "off" },
        flock.pool.workers(),
        flock.pool.capacity(),
    );
    let run = || {
        let took = one_submitter(&flock, tasks);
        println!("{:.1}", tasks as f64 / took.as_secs_f64());
    };
    if serve {
        // Rust's stdout is line-buffered even into a pipe: each value leaves at once.
        for _ in std::io::stdin().lines().map_while(Result::ok) {
            run();
        }
    } else {
        for _ in 0..runs {
            run();
        }
    }
}
