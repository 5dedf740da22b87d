//! flock's priority lanes: one pool (`available_parallelism()` workers, lanes
//! `[("interactive", 8), ("batch", 1)]`, `track_latency(true)`, no capacity bound; see
//! `benches/benches/common/lanes.rs`) against itself. No peer pool has lanes.
//!
//! * `lanes-split`: both lanes saturated with equal tasks of 30 µs of CPU. One iteration is
//!   a 250 ms window of a fresh run (after 100 ms of warm-up), expressed as the time the lane
//!   took per 8,000 (`interactive`) or per 1,000 (`batch`) of its executed tasks: the two are
//!   equal when the pool splits its time 8 : 1, and their quotient is how far it is off.
//! * `lanes-p99`: interactive tasks submitted one per millisecond, each timed from its
//!   submit call to its first clock reading, on an idle pool (`idle`) and while the batch
//!   lane is saturated with tasks of 50 µs (`saturated`: the default pool, whose lane
//!   reserve runs an interactive task at once when every worker runs a batch task; and
//!   `saturated-no-reserve`, built with `lane_reserve(false)`), and while it is saturated
//!   with the same tasks calling `flock::yield_to_lanes` after every 5 µs of their work
//!   (`saturated-yielding`, without the reserve). One iteration is one interactive
//!   task's queue wait (the millisecond gaps are not timed), so criterion prints the mean
//!   wait.
//!
//! Criterion can print neither a ratio of counts nor a p99: `benches/examples/bench_report.rs` runs
//! the same bodies (a 1 s window; 300 samples per run) and prints the executed ratio and the
//! p99 waits against their targets.
mod common;

use common::lanes::{lanes_split, lanes_trickle, Batch, P99_INTERVAL, SPLIT_TASK_US};
use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

/// The `lanes-split` window of one criterion iteration.
const WINDOW: Duration = Duration::from_millis(250);

fn split(c: &mut Criterion) {
    // About 0.45 s of wall time per iteration: 6 s makes two iterations per sample.
    let mut g = common::group(c, "lanes-split", Duration::from_secs(6));
    for (name, per, pick) in [
        ("interactive-8000", 8000.0, 0usize),
        ("batch-1000", 1000.0, 1usize),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let run = lanes_split(SPLIT_TASK_US, WINDOW);
                        let done = [run.interactive, run.batch][pick];
                        run.window.mul_f64(per / done.max(1) as f64)
                    })
                    .sum()
            })
        });
    }
    g.finish();
}

fn p99(c: &mut Criterion) {
    // Criterion sizes samples by the wall time of each `iter_custom` call (a fresh pool, 50 ms
    // of warm-up, then a millisecond per iteration) and reports the waits returned: with 5 s,
    // each of the 10 samples is about 150 interactive tasks.
    let mut g = common::group(c, "lanes-p99", Duration::from_secs(5));
    g.warm_up_time(Duration::from_secs(1));
    for (name, batch) in [
        ("idle", Batch::Idle),
        ("saturated", Batch::Saturated),
        ("saturated-no-reserve", Batch::SaturatedNoReserve),
        ("saturated-yielding", Batch::Yielding),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                lanes_trickle(batch, iters as usize, P99_INTERVAL)
                    .waits
                    .into_iter()
                    .sum()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, split, p99);
criterion_main!(benches);
