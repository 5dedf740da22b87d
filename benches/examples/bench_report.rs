//! Runs every benchmark workload against every pool with a short, fixed budget (full-size
//! workloads, few repetitions), prints a markdown table with the targets and whether they are
//! met, and writes `docs/bench.svg`.
//!
//! ```text
//! cargo run --release -p flock-benches --example bench_report [-- --only cpp-reduce,c-submit]
//! ```
//!
//! The workloads are the ones in `benches/benches/` (shared through `benches/benches/common`); see each
//! bench file's doc for what it measures. Ratios compare pools measured in the same run.
//!
//! Three workloads run as subprocesses, built by this command before the clock starts (see
//! [`build_helpers`]): `c-submit` (workload 9) runs `benches/c/c_submit.c`, linked against
//! `libflock.a` with `cc`, against the `metrics_cost` example (the Rust 1u-1Mt body);
//! `metrics-cost` (workload 10) runs the `metrics_cost` example built normally (with and
//! without `--latency`) and built with `--no-default-features`; `cpp-reduce` runs
//! `benches/cpp/cpp_reduce.cpp` (C++, `flock::parallel_reduce` against `std::thread`s). The
//! variants alternate, one subprocess at a time. Needs `cargo`, `cc` and `c++` on the PATH;
//! where a build fails, those rows are left out and the reason is printed. `-- --only
//! cpp-reduce` (a comma-separated list of these three, or of the in-process workloads named
//! in [`IN_PROCESS`]: `1u-1Mt`, `cpu-1us`, `fib-join`, `qsort`, `idle-cpu`, `idle-burst`,
//! `low-par`, `burst`) runs only those and writes no chart; `scripts/scaling.sh` runs it so
//! under `taskset` at several CPU counts.
//!
//! `idle-burst`, `2-way` and `trickle` (issue 41) measure the first second after a burst and
//! pools with every CPU a worker but little parallelism (`benches/benches/common/low_par.rs`).
//!
//! Every pool has as many workers as this process may use CPUs (it follows `taskset`);
//! `BENCH_WORKERS=N` gives every pool `N` instead (e.g. a 16-worker pool's idle seconds on a
//! 2-CPU machine). Wall time × workers (fib-join) and the ideal splits (cpu-1us, qsort's bound)
//! then count the CPUs the workers can keep busy, the smaller of the two.
//!
//! Workloads 11 to 13 (`bulk-1Mt`, `lanes-split`, `lanes-p99`) compare flock with itself in the
//! same run: `submit_batch` against per-task `submit` on one pool, and the lanes of one pool
//! against each other or against an idle pool. Their lane rows are not bars in the chart (no
//! peer, no `flock` row to be relative to) but two lines of text under it.
#[path = "../benches/common/async_offload.rs"]
mod async_offload;
#[path = "../benches/common/mod.rs"]
mod common;

use common::lanes;
use common::peers::{retire, Flock, Kind, Rayon};
use common::workloads::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What a row's numbers are, and which way is better.
#[derive(Clone, Copy, PartialEq)]
enum Unit {
    /// Tasks (or joins) per second; higher is better.
    PerSec,
    /// A time in seconds; lower is better.
    Time,
    /// Milliseconds of CPU per second; lower is better.
    CpuMsPerS,
    /// A quotient of two counts (`lanes-split`); neither way is better, the target says
    /// which value is right.
    Ratio,
    /// Instructions per operation under callgrind (`instructions`); lower is better.
    Instructions,
}

/// A target and whether this run met it.
struct Verdict {
    text: String,
    pass: bool,
}

struct Row {
    workload: &'static str,
    pool: String,
    unit: Unit,
    /// One value per run.
    runs: Vec<f64>,
    note: String,
    verdict: Option<Verdict>,
    /// On flock's row of a workload `scripts/scaling.sh` tabulates: flock ÷ rayon in the
    /// same run, lower is better.
    scaling: Option<Scaling>,
}

/// flock ÷ rayon on one workload, in the same run, lower is better: by wall time (the
/// verdicts' measure; none for the idle rows, which have no wall time to compare) and by
/// the process's CPU time beside it (none where the row does not measure it).
#[derive(Clone, Copy)]
struct Scaling {
    wall: Option<f64>,
    cpu: Option<f64>,
}

impl Scaling {
    fn both(wall: f64, cpu: f64) -> Option<Scaling> {
        Some(Scaling {
            wall: Some(wall),
            cpu: Some(cpu),
        })
    }

    fn cpu_only(cpu: f64) -> Option<Scaling> {
        Some(Scaling {
            wall: None,
            cpu: Some(cpu),
        })
    }
}

impl Row {
    fn new(workload: &'static str, pool: &str, unit: Unit, runs: Vec<f64>) -> Row {
        Row {
            workload,
            pool: pool.to_string(),
            unit,
            runs,
            note: String::new(),
            verdict: None,
            scaling: None,
        }
    }

    fn median(&self) -> f64 {
        median(&self.runs)
    }

    fn min(&self) -> f64 {
        self.runs.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn max(&self) -> f64 {
        self.runs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// How much better flock's median is than `row`'s (> 1: flock is better), for rows of the
/// same unit. `None` where undefined (a zero on either side).
fn flock_advantage(flock: f64, row: f64, unit: Unit) -> Option<f64> {
    let r = match unit {
        Unit::PerSec => flock / row,
        Unit::Time | Unit::CpuMsPerS | Unit::Instructions => row / flock,
        Unit::Ratio => return None,
    };
    r.is_finite().then_some(r)
}

fn fmt_value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::PerSec if v >= 1e6 => format!("{:.2} M/s", v / 1e6),
        Unit::PerSec => format!("{:.1} K/s", v / 1e3),
        Unit::Time if v >= 1e-3 => format!("{:.2} ms", v * 1e3),
        Unit::Time => format!("{:.1} µs", v * 1e6),
        Unit::CpuMsPerS => format!("{v:.4} ms/s"),
        Unit::Ratio => format!("{v:.2} : 1"),
        Unit::Instructions => format!("{v:.1} instr"),
    }
}

fn fmt_range(row: &Row) -> String {
    let (lo, hi) = (row.min(), row.max());
    match row.unit {
        Unit::PerSec if hi >= 1e6 => format!("{:.2}–{:.2} M/s", lo / 1e6, hi / 1e6),
        Unit::PerSec => format!("{:.1}–{:.1} K/s", lo / 1e3, hi / 1e3),
        Unit::Time if hi >= 1e-3 => format!("{:.2}–{:.2} ms", lo * 1e3, hi * 1e3),
        Unit::Time => format!("{:.1}–{:.1} µs", lo * 1e6, hi * 1e6),
        Unit::CpuMsPerS => format!("{lo:.4}–{hi:.4}"),
        Unit::Ratio => format!("{lo:.2}–{hi:.2}"),
        Unit::Instructions => format!("{lo:.1}–{hi:.1}"),
    }
}

fn verdict(pass: bool, text: String) -> Option<Verdict> {
    Some(Verdict { text, pass })
}

/// Runs `f` `runs` times on a fresh copy of each pool in `kinds` (one pool alive at a time).
fn per_pool(
    workload: &'static str,
    kinds: &[Kind],
    unit: Unit,
    runs: usize,
    mut f: impl FnMut(&dyn common::peers::AnyRunner) -> f64,
) -> Vec<Row> {
    kinds
        .iter()
        .map(|&kind| {
            let pool = kind.make();
            let values = (0..runs).map(|_| f(&*pool)).collect();
            let row = Row::new(workload, pool.name(), unit, values);
            retire(pool);
            eprintln!(
                "  {workload:<12} {:<20} {}",
                row.pool,
                fmt_value(row.median(), unit)
            );
            row
        })
        .collect()
}

fn find<'a>(rows: &'a [Row], pool: &str) -> &'a Row {
    rows.iter().find(|r| r.pool == pool).expect("row present")
}

fn find_mut<'a>(rows: &'a mut [Row], pool: &str) -> &'a mut Row {
    rows.iter_mut()
        .find(|r| r.pool == pool)
        .expect("row present")
}

const SUBMIT_POOLS: [Kind; 6] = [
    Kind::Flock,
    Kind::FlockUnbounded,
    Kind::Rayon,
    Kind::Threadpool,
    Kind::Tokio,
    Kind::Channel,
];

/// Runs `run`, returning its result and the process CPU time (every thread) it took, in
/// seconds.
fn with_cpu(run: impl FnOnce() -> Duration) -> (Duration, f64) {
    let before = common::process_cpu_ns();
    let took = run();
    (took, (common::process_cpu_ns() - before) as f64 / 1e9)
}

/// The median of the CPU seconds `cpu` holds for `pool`.
fn cpu_median(cpu: &[(&str, f64)], pool: &str) -> f64 {
    median(
        &cpu.iter()
            .filter(|(p, _)| *p == pool)
            .map(|&(_, c)| c)
            .collect::<Vec<_>>(),
    )
}

fn one_submitter_rows() -> Vec<Row> {
    let n = ONE_SUBMITTER_TASKS as f64;
    // Where the host has put the first two CPUs, before and after the row: on the 2-vCPU guest it
    // sets the row's speed and its verdicts (docs/bench.md, "What limits the misses").
    let line_before = common::line_round_trip_ns();
    // Process CPU seconds a run, by pool, for the scaling line.
    let mut cpu = Vec::new();
    let mut rows = per_pool("1u-1Mt", &SUBMIT_POOLS, Unit::PerSec, 3, |p| {
        let (took, spent) = with_cpu(|| p.one_submitter(ONE_SUBMITTER_TASKS));
        cpu.push((p.name(), spent));
        n / secs(took)
    });
    let line_after = common::line_round_trip_ns();
    let ns = |line: Option<f64>| line.map_or("?".into(), |ns| format!("{ns:.0}"));
    find_mut(&mut rows, "flock").note = format!(
        "a cache line's round trip between the first two CPUs the report may run on, \
         before and after the pools' runs: {} and {} ns",
        ns(line_before),
        ns(line_after)
    );
    let flock = find(&rows, "flock").median();
    let mut needed: f64 = 0.0;
    for (peer, want) in [("crossbeam-channel", 3.0), ("rayon", 5.0)] {
        let row = find_mut(&mut rows, peer);
        let got = flock / row.median();
        needed = needed.max(want * row.median());
        row.verdict = verdict(got >= want, format!("flock ≥{want}× this: {got:.2}×"));
    }
    // Time per task flock ÷ rayon's: rayon's rate over flock's; CPU a run beside it.
    let rayon = find(&rows, "rayon").median();
    let cpu_ratio = cpu_median(&cpu, "flock") / cpu_median(&cpu, "rayon");
    find_mut(&mut rows, "flock").scaling = Scaling::both(rayon / flock, cpu_ratio);
    // A reference for what the body itself costs here: the same body handed over one task at
    // a time to as many plain threads as the pools have workers, with no pool in between
    // (`one_submitter_no_pool`). Not a bound: nothing shows a pool cannot beat it, and in
    // one run bulk-1Mt (the same body on the default pool, a minute later) did, 23.3 against
    // 22.8 M/s. What the targets ask of flock, as a share of it, says how much room the
    // targets leave on this machine.
    let runners = common::workers();
    let plain = (0..3)
        .map(|_| n / secs(one_submitter_no_pool(runners, ONE_SUBMITTER_TASKS)))
        .collect();
    let mut plain = Row::new("1u-1Mt", "no pool", Unit::PerSec, plain);
    plain.note = format!(
        "the body handed one task at a time to {runners} plain threads (a static split; a \
         reference, not a bound): the targets need flock at {:.0}% of this rate, flock is at \
         {:.0}%",
        needed / plain.median() * 100.0,
        flock / plain.median() * 100.0
    );
    // Issue 41: flock at 85% of the hand-off with no pool at least.
    let share = flock / plain.median();
    plain.verdict = verdict(
        share >= 0.85,
        format!("flock ≥85% of this: {:.0}%", share * 100.0),
    );
    eprintln!(
        "  {:<12} {:<20} {}",
        plain.workload,
        plain.pool,
        fmt_value(plain.median(), Unit::PerSec)
    );
    rows.push(plain);
    rows
}

fn many_submitters_rows() -> Vec<Row> {
    let n = (SUBMITTER_THREADS * TASKS_PER_SUBMITTER) as f64;
    let mut rows = per_pool("100u-10Kt", &SUBMIT_POOLS, Unit::PerSec, 3, |p| {
        n / secs(p.many_submitters(SUBMITTER_THREADS, TASKS_PER_SUBMITTER))
    });
    let best = rows
        .iter()
        .filter(|r| !r.pool.starts_with("flock"))
        .max_by(|a, b| a.median().total_cmp(&b.median()))
        .expect("peers");
    let (best_name, best_v) = (best.pool.clone(), best.median());
    let flock = find_mut(&mut rows, "flock");
    let got = flock.median() / best_v;
    flock.verdict = verdict(
        got >= 1.5,
        format!("≥1.5× best peer ({best_name}): {got:.2}×"),
    );
    rows
}

/// `cpu-1us`: each pool's run is paired with a sequential run of the same bodies just
/// before it, and its efficiency is the median of the paired ratios (the sequential time ÷
/// workers, over the pool's time). The sequential reference measured once, minutes before
/// some of the pools ran, moved with the guest's load: 169% and 48% of the ideal split in
/// two runs of one build (docs/bench.md, stop 35).
fn cpu_rows() -> Vec<Row> {
    common::spins_per_us();
    let n = CPU_TASKS as f64;
    let workers = common::busy_cpus() as f64;
    let runs = 5;
    let mut seqs = Vec::new();
    // Process CPU seconds a pool run, by pool, for the scaling line.
    let mut cpu = Vec::new();
    let mut rows: Vec<Row> = Kind::POOLS
        .iter()
        .map(|&kind| {
            let pool = kind.make();
            let (mut rates, mut effs) = (Vec::new(), Vec::new());
            for _ in 0..runs {
                let seq = secs(cpu_tasks_sequential(CPU_TASKS, CPU_TASK_US));
                let (took, spent) = with_cpu(|| pool.cpu_tasks(CPU_TASKS, CPU_TASK_US));
                let took = secs(took);
                cpu.push((pool.name(), spent));
                seqs.push(seq);
                rates.push(n / took);
                effs.push(seq / workers / took);
            }
            let mut row = Row::new("cpu-1us", pool.name(), Unit::PerSec, rates);
            retire(pool);
            let eff = median(&effs);
            let _ = write!(
                row.note,
                "{:.0}% of ideal (median of {runs} paired runs; {:.0}–{:.0}%)",
                eff * 100.0,
                effs.iter().copied().fold(f64::INFINITY, f64::min) * 100.0,
                effs.iter().copied().fold(f64::NEG_INFINITY, f64::max) * 100.0,
            );
            if row.pool == "flock" {
                row.verdict = verdict(eff >= 0.9, format!("≥90% of ideal: {:.1}%", eff * 100.0));
            }
            eprintln!(
                "  {:<12} {:<20} {} ({:.0}% of ideal)",
                row.workload,
                row.pool,
                fmt_value(row.median(), row.unit),
                eff * 100.0
            );
            row
        })
        .collect();
    let rayon = find(&rows, "rayon").median();
    let cpu_ratio = cpu_median(&cpu, "flock") / cpu_median(&cpu, "rayon");
    let flock = find_mut(&mut rows, "flock");
    flock.scaling = Scaling::both(rayon / flock.median(), cpu_ratio);
    let seq = median(&seqs);
    let mut ideal_row = Row::new("cpu-1us", "ideal", Unit::PerSec, vec![n * workers / seq]);
    ideal_row.note = format!(
        "sequential {:.1} ms ÷ {workers} workers ({:.3} µs/task; median of the {} paired runs, {:.1}–{:.1} ms)",
        seq * 1e3,
        seq * 1e6 / n,
        seqs.len(),
        seqs.iter().copied().fold(f64::INFINITY, f64::min) * 1e3,
        seqs.iter().copied().fold(f64::NEG_INFINITY, f64::max) * 1e3,
    );
    rows.insert(0, ideal_row);
    rows
}

fn spawn_tree_rows() -> Vec<Row> {
    let n = tree_tasks(TREE_LEAVES) as f64;
    let runs = 3;
    let mut rows = Vec::new();
    {
        let flock = Flock::new();
        let v = (0..runs)
            .map(|_| n / secs(spawn_tree_flock_scope(&flock.pool, TREE_LEAVES)))
            .collect();
        rows.push(Row::new("spawn-tree", "flock", Unit::PerSec, v));
    }
    {
        let rayon = Rayon::new();
        let v = (0..runs)
            .map(|_| n / secs(spawn_tree_rayon_scope(&rayon.0, TREE_LEAVES)))
            .collect();
        rows.push(Row::new("spawn-tree", "rayon-scope", Unit::PerSec, v));
    }
    std::thread::sleep(Duration::from_millis(20));
    let mut submit = per_pool("spawn-tree", &Kind::POOLS, Unit::PerSec, runs, |p| {
        n / secs(p.spawn_tree(TREE_LEAVES))
    });
    submit[0].pool = "flock-submit".into();
    rows.extend(submit);
    rows[0].note = "Pool::scope".into();
    rows[1].note = "ThreadPool::scope".into();
    rows[2].note = "submit via Arc<Pool>".into();
    let flock = rows[0].median();
    let rayon_scope = &mut rows[1];
    let got = flock / rayon_scope.median();
    rayon_scope.verdict = verdict(got >= 1.5, format!("flock ≥1.5× this: {got:.2}×"));
    rows
}

fn fib_rows() -> Vec<Row> {
    // Rounds of one sequential run, one flock run and one rayon run, so the host's drift
    // (other tenants, frequency) hits all three alike; each run ~5-20 ms.
    let rounds = 21;
    let joins = fib_joins(FIB_N) as f64;
    // The CPUs the pools can keep busy (their workers, unless BENCH_WORKERS exceeds the CPUs).
    let workers = common::busy_cpus() as f64;
    let f = Flock::new();
    let r = Rayon::new();
    let (mut seq, mut flock, mut rayon) = (Vec::new(), Vec::new(), Vec::new());
    // ns per join beyond the sequential work, per round: [flock, rayon] by CPU and by wall.
    let (mut by_cpu, mut by_wall) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    let ns = |x: Duration| x.as_secs_f64() * 1e9 / joins;
    for _ in 0..rounds {
        // Each run starts with every thread of ours asleep: a pool's workers that just ran
        // spin a little before they sleep, which must not land in the next run's CPU time.
        let run = |on| {
            std::thread::sleep(Duration::from_millis(20));
            fib_spent(on, FIB_N)
        };
        let s = run(FibRun::Seq);
        let fl = run(FibRun::Flock(&f.pool));
        let ra = run(FibRun::Rayon(&r.0));
        // The CPU a join costs beyond the sequential work: the process's CPU time over the
        // pool run (workers, caller, anything awake) less the sequential run's.
        let cpu = |x: FibSpent| ns(x.cpu.saturating_sub(s.cpu));
        // What the report's target used before (docs/bench.md's earlier runs): wall time ×
        // workers, as if every worker were busy the whole run (a pool that lets a worker
        // sleep is charged for it, one that keeps them busy finishes sooner).
        let wall =
            |x: FibSpent| (x.wall.as_secs_f64() * workers - s.wall.as_secs_f64()) * 1e9 / joins;
        for (i, run) in [fl, ra].into_iter().enumerate() {
            by_cpu[i].push(cpu(run));
            by_wall[i].push(wall(run));
        }
        seq.push(secs(s.wall));
        flock.push(secs(fl.wall));
        rayon.push(secs(ra.wall));
    }
    let mut rows = vec![
        Row::new("fib-join", "flock", Unit::Time, flock),
        Row::new("fib-join", "rayon", Unit::Time, rayon),
        Row::new("fib-join", "sequential", Unit::Time, seq),
    ];
    // Per-round ratios flock ÷ rayon; a round whose rayon overhead is at or below zero
    // (noise against the sequential run) gives an infinite ratio, which counts against flock.
    let ratios = |[flock, rayon]: &[Vec<f64>; 2]| -> Vec<f64> {
        flock
            .iter()
            .zip(rayon)
            .map(|(&a, &b)| if b > 0.0 { a / b } else { f64::INFINITY })
            .collect()
    };
    for (i, row) in rows[..2].iter_mut().enumerate() {
        row.note = format!(
            "{:.1} ns CPU/join beyond sequential (process CPU time); {:.1} ns by wall × workers",
            median(&by_cpu[i]),
            median(&by_wall[i]),
        );
    }
    rows[2].note =
        format!("{joins} joins in each pool run; {rounds} rounds, seq/flock/rayon in turn");
    // Issue 41's target: what a join costs by wall time × workers (what a user waits for),
    // with the process CPU time (issue 15's measure) beside it.
    let (cpu_got, got) = (median(&ratios(&by_cpu)), median(&ratios(&by_wall)));
    rows[1].verdict = verdict(
        got <= 0.9,
        format!("flock's ns/join by wall × workers ≤0.9× this: {got:.2}× (median of {rounds} paired rounds; by process CPU time {cpu_got:.2}×)"),
    );
    rows[0].scaling = Scaling::both(got, cpu_got);
    rows
}

/// `qsort`: quicksort of 4 Mi pseudo-random `u64` through `join`, cut-off 2048: a real
/// divide-and-conquer workload (uneven halves, memory traffic) beside fib's empty forks.
fn qsort_rows() -> Vec<Row> {
    // Rounds of one flock run and one rayon run, as fib-join's, so the host's drift hits
    // both alike (five flock runs and then five rayon runs read 1.11x on a 16-vCPU guest
    // where 15 interleaved rounds read 1.02x; docs/bench.md, "Scaling probes").
    let rounds = 11;
    let input = qsort_input(QSORT_LEN);
    let f = Flock::new();
    let r = Rayon::new();
    let (mut flock, mut rayon) = (Vec::new(), Vec::new());
    // The bound no schedule on the pools' workers can beat, from the same recursion run
    // with no forks in each round (`time_qsort_sequential`). It holds at the speed the
    // sequential run saw; on this guest that speed moves from run to run, so a pool's median
    // can land below the bound's (rayon's did once, 141.9 against 143.1 ms).
    let workers = common::busy_cpus() as f64;
    let (mut first, mut whole, mut bound) = (Vec::new(), Vec::new(), Vec::new());
    // Process CPU time a run, [flock, rayon], beside the wall time the verdict is on.
    let mut cpu = [Vec::new(), Vec::new()];
    let cpu_ns = |cpu: &mut Vec<f64>, f: &dyn Fn() -> Duration| {
        let before = common::process_cpu_ns();
        let took = f();
        cpu.push((common::process_cpu_ns() - before) as f64 / 1e9);
        took
    };
    for _ in 0..rounds {
        // Every thread of ours asleep first, as in fib_rows.
        std::thread::sleep(Duration::from_millis(20));
        flock.push(secs(cpu_ns(&mut cpu[0], &|| {
            time_qsort_flock(&f.pool, &input)
        })));
        std::thread::sleep(Duration::from_millis(20));
        rayon.push(secs(cpu_ns(&mut cpu[1], &|| {
            time_qsort_rayon(&r.0, &input)
        })));
        let (p1, all) = time_qsort_sequential(&input);
        let (p1, all) = (secs(p1), secs(all));
        first.push(p1);
        whole.push(all);
        bound.push(p1 + (all - p1) / workers);
    }
    let paired: Vec<f64> = flock.iter().zip(&rayon).map(|(a, b)| a / b).collect();
    let rayon_median = median(&rayon);
    let mut rows = vec![
        Row::new("qsort", "flock", Unit::Time, flock),
        Row::new("qsort", "rayon", Unit::Time, rayon),
        Row::new("qsort", "bound", Unit::Time, bound),
    ];
    let cpu_ms = |i: usize| median(&cpu[i]) * 1e3;
    rows[0].note = format!(
        "{QSORT_LEN} u64, cut-off {QSORT_CUTOFF}, Pool::join; process CPU {:.1} ms a run",
        cpu_ms(0)
    );
    rows[1].note = format!(
        "rayon::join; {rounds} rounds, flock/rayon in turn; process CPU {:.1} ms a run",
        cpu_ms(1)
    );
    rows[2].note = format!(
        "what no schedule on {workers} workers beats at the sequential run's speed: the first \
         partition ({:.1} ms) + the rest of the sequential sort ({:.1} ms in all) ÷ {workers}, \
         medians over the same rounds (the guest's speed moves, so a pool's median can land \
         below it); 0.95× rayon is {:.1} ms",
        median(&first) * 1e3,
        median(&whole) * 1e3,
        rayon_median * 0.95e3,
    );
    let got = median(&paired);
    rows[1].verdict = verdict(
        got <= 0.95,
        format!(
            "flock ≤0.95× this by wall time: {got:.2}× (median of {rounds} paired rounds; by process CPU time {:.2}×)",
            cpu_ms(0) / cpu_ms(1)
        ),
    );
    rows[0].scaling = Scaling::both(got, cpu_ms(0) / cpu_ms(1));
    rows
}

/// `map-reduce`, `chunks-mut`, `sort-unstable` and `sort-stable`: flock's data-parallel
/// helpers (`Pool::map_reduce`, `par_chunks_mut`, `par_sort_unstable`, `par_sort`) against
/// rayon's `par_iter().map().reduce()`, `par_chunks_mut().enumerate().for_each()`,
/// `par_sort_unstable` and `par_sort`, both with `common::workers()` workers, on the same data
/// (`qsort_input`: pseudo-random `u64`, a fixed seed). Rounds of one flock run and one rayon
/// run in turn, as qsort's; the verdict is the median of the paired ratios flock ÷ rayon,
/// target ≤ 1.0×.
fn data_parallel_rows() -> Vec<Row> {
    const REDUCE_LEN: usize = 16 << 20;
    const CHUNKS_LEN: usize = 16 << 20;
    const CHUNK: usize = 4096;
    const SORT_LEN: usize = 4 << 20;
    let rounds = 9;
    let f = Flock::new();
    let r = Rayon::new();
    let mix = |x: &u64| x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    let add = |a: u64, b: u64| a.wrapping_add(b);
    let bump =
        |i: usize, c: &mut [u64]| c.iter_mut().for_each(|x| *x = x.wrapping_mul(3) ^ i as u64);
    let reduce_in = qsort_input(REDUCE_LEN);
    let sort_in = qsort_input(SORT_LEN);
    let mut chunks = qsort_input(CHUNKS_LEN);
    let mut rows = Vec::new();
    let mut pair = |workload: &'static str,
                    note: String,
                    flock_run: &mut dyn FnMut() -> Duration,
                    rayon_run: &mut dyn FnMut() -> Duration| {
        let (mut fl, mut ra) = (Vec::new(), Vec::new());
        flock_run(); // one unmeasured run of each
        rayon_run();
        for _ in 0..rounds {
            std::thread::sleep(Duration::from_millis(20));
            fl.push(secs(flock_run()));
            std::thread::sleep(Duration::from_millis(20));
            ra.push(secs(rayon_run()));
        }
        let paired: Vec<f64> = fl.iter().zip(&ra).map(|(a, b)| a / b).collect();
        let got = median(&paired);
        let mut flock_row = Row::new(workload, "flock", Unit::Time, fl);
        let mut rayon_row = Row::new(workload, "rayon", Unit::Time, ra);
        flock_row.note = note;
        rayon_row.note = format!("{rounds} rounds, flock/rayon in turn");
        rayon_row.verdict = verdict(
            got <= 1.0,
            format!("flock ≤1.0× this: {got:.2}× (median of {rounds} paired rounds)"),
        );
        eprintln!(
            "  {workload:<12} flock {} rayon {} ratio {got:.2}",
            fmt_value(flock_row.median(), Unit::Time),
            fmt_value(rayon_row.median(), Unit::Time)
        );
        rows.push(flock_row);
        rows.push(rayon_row);
    };
    let want: u64 = reduce_in.iter().map(mix).fold(0, add);
    pair(
        "map-reduce",
        format!("{REDUCE_LEN} u64, Pool::map_reduce (a multiply and a rotate each)"),
        &mut || {
            let t = Instant::now();
            let got = f.pool.map_reduce(&reduce_in, || 0, mix, add);
            let took = t.elapsed();
            assert_eq!(got, want);
            took
        },
        &mut || {
            use rayon::prelude::*;
            let t = Instant::now();
            let got =
                r.0.install(|| reduce_in.par_iter().map(mix).reduce(|| 0, add));
            let took = t.elapsed();
            assert_eq!(got, want);
            took
        },
    );
    let chunks_ptr = std::ptr::addr_of_mut!(chunks);
    pair(
        "chunks-mut",
        format!("{CHUNKS_LEN} u64 in chunks of {CHUNK}, Pool::par_chunks_mut"),
        &mut || {
            // SAFETY: the two closures run one at a time, never together.
            let v = unsafe { &mut *chunks_ptr };
            let t = Instant::now();
            f.pool.par_chunks_mut(v, CHUNK, bump);
            t.elapsed()
        },
        &mut || {
            use rayon::prelude::*;
            // SAFETY: as above.
            let v = unsafe { &mut *chunks_ptr };
            let t = Instant::now();
            r.0.install(|| {
                v.par_chunks_mut(CHUNK)
                    .enumerate()
                    .for_each(|(i, c)| bump(i, c))
            });
            t.elapsed()
        },
    );
    let sorted = |v: &[u64]| v.windows(2).all(|w| w[0] <= w[1]);
    pair(
        "sort-unstable",
        format!("{SORT_LEN} u64, Pool::par_sort_unstable"),
        &mut || {
            let mut v = sort_in.clone();
            let t = Instant::now();
            f.pool.par_sort_unstable(&mut v);
            let took = t.elapsed();
            assert!(sorted(&v));
            took
        },
        &mut || {
            use rayon::prelude::*;
            let mut v = sort_in.clone();
            let t = Instant::now();
            r.0.install(|| v.par_sort_unstable());
            let took = t.elapsed();
            assert!(sorted(&v));
            took
        },
    );
    pair(
        "sort-stable",
        format!("{SORT_LEN} u64, Pool::par_sort"),
        &mut || {
            let mut v = sort_in.clone();
            let t = Instant::now();
            f.pool.par_sort(&mut v);
            let took = t.elapsed();
            assert!(sorted(&v));
            took
        },
        &mut || {
            use rayon::prelude::*;
            let mut v = sort_in.clone();
            let t = Instant::now();
            r.0.install(|| v.par_sort());
            let took = t.elapsed();
            assert!(sorted(&v));
            took
        },
    );
    rows
}

fn burst_rows() -> Vec<Row> {
    common::spins_per_us();
    let kinds: Vec<Kind> = Kind::POOLS.into_iter().chain([Kind::StdThread]).collect();
    let mut all: Vec<Vec<f64>> = Vec::new();
    let mut rows = per_pool("burst", &kinds, Unit::Time, 3, |p| {
        let times: Vec<f64> = p
            .bursts(100, BURST_TASKS, BURST_TASK_US)
            .into_iter()
            .map(secs)
            .collect();
        let m = median(&times);
        all.push(times);
        m
    });
    for (row, runs) in rows.iter_mut().zip(all.chunks(3)) {
        let mut pooled: Vec<Duration> = runs
            .iter()
            .flatten()
            .map(|&s| Duration::from_secs_f64(s))
            .collect();
        let p99 = common::quantile(&mut pooled, 0.99);
        row.note = format!("per burst; p99 {}", fmt_value(secs(p99), Unit::Time));
    }
    rows
}

fn wake_rows() -> Vec<Row> {
    let runs = 3;
    let samples = 100;
    let mut pooled: Vec<Vec<Duration>> = Vec::new();
    let mut p50s = Vec::new();
    for _ in 0..runs {
        let mut s = futex_wake_latency(samples);
        p50s.push(secs(common::quantile(&mut s, 0.5)));
        pooled.push(s);
    }
    let mut rows = vec![Row::new("wake-latency", "futex-wake", Unit::Time, p50s)];
    let kinds: Vec<Kind> = Kind::POOLS.into_iter().chain([Kind::StdThread]).collect();
    rows.extend(per_pool("wake-latency", &kinds, Unit::Time, runs, |p| {
        let mut s = p.wake_latency(samples);
        let p50 = secs(common::quantile(&mut s, 0.5));
        pooled.push(s);
        p50
    }));
    for (row, runs) in rows.iter_mut().zip(pooled.chunks_mut(runs)) {
        let mut all: Vec<Duration> = runs.iter().flatten().copied().collect();
        let p99 = common::quantile(&mut all, 0.99);
        row.note = format!("p50 shown; p99 {}", fmt_value(secs(p99), Unit::Time));
    }
    let futex = rows[0].median();
    let flock = find_mut(&mut rows, "flock");
    let got = flock.median() / futex;
    flock.verdict = verdict(got <= 1.3, format!("p50 ≤1.3× futex-wake: {got:.2}×"));
    rows
}

fn idle_rows() -> Vec<Row> {
    let mut rows = per_pool("idle-cpu", &Kind::POOLS, Unit::CpuMsPerS, 3, |p| {
        p.idle_cpu_ms_per_s(IDLE_WARM_TASKS, IDLE_WINDOW)
    });
    for row in &mut rows {
        row.note = format!("after {IDLE_WARM_TASKS} tasks");
    }
    let rayon = find(&rows, "rayon").median();
    let flock = find_mut(&mut rows, "flock");
    let got = flock.median();
    flock.verdict = verdict(got <= 0.05, format!("≤0.05 ms/s: {got:.4}"));
    flock.scaling = Scaling::cpu_only(got / rayon);
    rows
}

// ----- issue 41: low parallelism and the first idle second -----------------------------

/// `2-way`: rounds a round of two halves of this many µs.
const TWO_WAY_US: u64 = 50;
/// `2-way`: rounds a run.
const TWO_WAY_ROUNDS: usize = 2000;
/// `trickle`: a task of this many µs ...
const TRICKLE_US: u64 = 20;
/// ... every this long ...
const TRICKLE_EVERY: Duration = Duration::from_micros(200);
/// ... this many a run.
const TRICKLE_TASKS: usize = 2000;

/// `2-way` and `trickle` (issue 41, "low parallelism"): every pool with as many workers as
/// the machine has CPUs, fed work that keeps at most two of them busy (`common::low_par`).
/// `2-way`: 2,000 rounds of two 50 µs halves (a join on flock and rayon, two submits and a
/// wait on the others); the value is wall time a round, the CPU time a round beside it.
/// `trickle`: one 20 µs task every 200 µs, 2,000 a run; the value is process CPU time a
/// task (the useful work is 20 µs), wall time beside it. Five runs each, the pools in turn.
fn low_par_rows() -> Vec<Row> {
    use common::low_par::{trickle, two_way_flock, two_way_rayon, two_way_submit, Spent};
    use common::peers::{ChannelPool, Threadpool, Tokio};
    let runs = 5;
    let (r, us) = (TWO_WAY_ROUNDS, TWO_WAY_US);
    let (f, ry) = (Flock::new(), Rayon::new());
    let (tp, tk, ch) = (Threadpool::new(), Tokio::new(), ChannelPool::new());
    type Run<'a> = Box<dyn Fn() -> Spent + 'a>;
    fn trickle_of<R: common::peers::Runner>(pool: &R) -> Run<'_> {
        Box::new(move || trickle(pool, TRICKLE_TASKS, TRICKLE_US, TRICKLE_EVERY))
    }
    fn two_way_of<R: common::peers::Runner>(pool: &R) -> Run<'_> {
        Box::new(move || two_way_submit(pool, TWO_WAY_ROUNDS, TWO_WAY_US))
    }
    // Each pool's [2-way, trickle] runs. flock first, whose medians the verdicts compare.
    let pools: Vec<(&str, Run<'_>, Run<'_>)> = vec![
        (
            "flock",
            Box::new(|| two_way_flock(&f.pool, r, us)),
            trickle_of(&f),
        ),
        (
            "rayon",
            Box::new(|| two_way_rayon(&ry.0, r, us)),
            trickle_of(&ry),
        ),
        ("threadpool", two_way_of(&tp), trickle_of(&tp)),
        ("tokio", two_way_of(&tk), trickle_of(&tk)),
        ("crossbeam-channel", two_way_of(&ch), trickle_of(&ch)),
    ];
    // The pools take turns run by run, as the other rows' paired rounds do: a shared
    // machine's speed drifts over seconds (on the 2-vCPU guest the same 50 µs half ran
    // 53-62 µs from one run to the next, `drain_probe two-way`), so pools measured one after
    // another would be compared across different moments. Every pool stays built; the 20 ms
    // pauses let the one that ran settle (spin, then park) before the next starts.
    let mut per_pool: Vec<(&str, [Vec<Spent>; 2])> = pools
        .iter()
        .map(|(name, _, _)| (*name, [Vec::new(), Vec::new()]))
        .collect();
    for _ in 0..runs {
        for (i, (_, two_way, trickle)) in pools.iter().enumerate() {
            std::thread::sleep(Duration::from_millis(20));
            per_pool[i].1[0].push(two_way());
            std::thread::sleep(Duration::from_millis(20));
            per_pool[i].1[1].push(trickle());
        }
    }
    let mut rows = Vec::new();
    // (wall, CPU) medians per pool: [2-way a round, trickle a task].
    let mut medians: Vec<[(f64, f64); 2]> = Vec::new();
    for (pool, [two, tr]) in &per_pool {
        let med = |v: &[Spent], n: usize, f: fn(&Spent) -> Duration| {
            median(&v.iter().map(|x| secs(f(x)) / n as f64).collect::<Vec<_>>())
        };
        let two_m = (med(two, r, |x| x.wall), med(two, r, |x| x.cpu));
        let tr_m = (
            med(tr, TRICKLE_TASKS, |x| x.wall),
            med(tr, TRICKLE_TASKS, |x| x.cpu),
        );
        medians.push([two_m, tr_m]);
        let walls = two.iter().map(|x| secs(x.wall) / r as f64).collect();
        let mut row = Row::new("2-way", pool, Unit::Time, walls);
        row.note = format!(
            "a round of two {us} µs halves ({}); process CPU {} a round",
            if matches!(*pool, "flock" | "rayon") {
                "a join on a worker"
            } else {
                "two submits and a wait"
            },
            fmt_value(two_m.1, Unit::Time)
        );
        rows.push(row);
        let cpus = tr
            .iter()
            .map(|x| secs(x.cpu) / TRICKLE_TASKS as f64)
            .collect();
        let mut row = Row::new("trickle", pool, Unit::Time, cpus);
        row.note = format!(
            "process CPU a task: one {TRICKLE_US} µs task every {} µs, {TRICKLE_TASKS} a run; wall {} a run",
            TRICKLE_EVERY.as_micros(),
            fmt_value(tr_m.0 * TRICKLE_TASKS as f64, Unit::Time)
        );
        rows.push(row);
        eprintln!(
            "  2-way/trickle {pool:<18} {} a round ({} CPU), {} CPU a task",
            fmt_value(two_m.0, Unit::Time),
            fmt_value(two_m.1, Unit::Time),
            fmt_value(tr_m.1, Unit::Time)
        );
    }
    // Issue 41's targets: on the 2-way rounds CPU and wall time both ≤ every peer's; on the
    // trickle ≤ 30 µs of CPU a task (1.5× the useful work).
    let [(f_wall, f_cpu), (_, f_task)] = medians[0];
    let peers = &medians[1..];
    let best_wall = peers.iter().map(|m| m[0].0).fold(f64::INFINITY, f64::min);
    let best_cpu = peers.iter().map(|m| m[0].1).fold(f64::INFINITY, f64::min);
    rows[0].verdict = verdict(
        f_wall <= best_wall && f_cpu <= best_cpu,
        format!(
            "wall and CPU ≤ every peer's: wall {:.2}×, CPU {:.2}× the best peer's",
            f_wall / best_wall,
            f_cpu / best_cpu
        ),
    );
    rows[1].verdict = verdict(
        f_task <= 30e-6,
        format!("≤30 µs CPU a task: {:.1} µs", f_task * 1e6),
    );
    let [(r_wall, r_cpu), (_, r_task)] = medians[1];
    rows[0].scaling = Scaling::both(f_wall / r_wall, f_cpu / r_cpu);
    // The trickle's wall time is its pacing's: CPU alone.
    rows[1].scaling = Scaling::cpu_only(f_task / r_task);
    rows
}

/// `idle-burst` (issue 41): the CPU every thread but the caller's burns in the first second
/// after one burst (the `burst` workload's: 100 tasks of about 2 µs), with the second second
/// beside it: a pool's workers that just ran spin, park and (flock) issue the membarrier
/// there, where `idle-cpu` sees them settled. Three runs, one pool.
fn idle_burst_rows() -> Vec<Row> {
    use common::peers::{ChannelPool, Runner, Threadpool, Tokio};
    /// Three runs on `pool`: its row (the first seconds) and the second seconds' median.
    fn one<R: Runner>(pool: R) -> (Row, f64) {
        let (mut first, mut second) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let (a, b) = common::low_par::after_burst(&pool, BURST_TASKS, BURST_TASK_US);
            first.push(a);
            second.push(b);
        }
        let mut row = Row::new("idle-burst", pool.name(), Unit::CpuMsPerS, first);
        drop(pool);
        std::thread::sleep(Duration::from_millis(20));
        let s = median(&second);
        row.note = format!(
            "first second after a burst of {BURST_TASKS} tasks; the second second {s:.4} ms/s"
        );
        eprintln!(
            "  idle-burst   {:<20} {} (then {s:.4})",
            row.pool,
            fmt_value(row.median(), row.unit)
        );
        (row, s)
    }
    let measured = [
        one(Flock::new()),
        one(Rayon::new()),
        one(Threadpool::new()),
        one(Tokio::new()),
        one(ChannelPool::new()),
    ];
    let flock_second = measured[0].1;
    let mut rows: Vec<Row> = measured.into_iter().map(|(row, _)| row).collect();
    let rayon = find(&rows, "rayon").median();
    let flock = find_mut(&mut rows, "flock");
    let got = flock.median();
    flock.verdict = verdict(
        got <= rayon && flock_second <= 0.05,
        format!(
            "first second ≤ rayon's, second ≤0.05 ms/s: {:.2}× rayon, then {flock_second:.4}",
            got / rayon,
        ),
    );
    flock.scaling = Scaling::cpu_only(got / rayon);
    rows
}

// ----- workloads 11 to 13: bulk submit and lanes ---------------------------------------

/// `bulk-1Mt` (workload 11): 1,000,000 near-empty tasks through `Pool::submit` one by one
/// (`flock`) and through one `Pool::submit_batch` (`flock-batch`), on the same pool
/// (defaults), alternating run by run (the order swapped each round) after one unmeasured
/// run of each. The verdict is on the median of the paired ratios (batch ÷ per-task in the
/// same round). rayon's `spawn` loop (the 1u-1Mt body) is measured after, as a reference.
///
/// `bulk-1Mt-own` (a diagnostic, no target) runs the same pair the same way with tasks that
/// share no cache line (`bulk_own_*`): the 1u-1Mt body's counter and `Arc`, bumped by the
/// submitter and both workers, is most of a batch's cost on two CPUs; this shows what the
/// pool's own part of the two paths comes to without it.
fn bulk_rows() -> Vec<Row> {
    let n = BULK_TASKS as f64;
    let (main, others) = with_others(|| paired_rounds(7, n, bulk_submit_each, bulk_submit_batch));
    let (own, own_others) = with_others(|| paired_rounds(7, n, bulk_own_each, bulk_own_batch));
    std::thread::sleep(Duration::from_millis(20));
    let (each, batch, paired) = main;
    let mut rows = vec![
        Row::new("bulk-1Mt", "flock", Unit::PerSec, each),
        Row::new("bulk-1Mt", "flock-batch", Unit::PerSec, batch),
    ];
    rows.extend(per_pool("bulk-1Mt", &[Kind::Rayon], Unit::PerSec, 3, |p| {
        n / secs(p.one_submitter(BULK_TASKS))
    }));
    rows[0].note = format!("Pool::submit per task (defaults); others kept {others:.2} CPUs busy");
    rows[1].note = format!(
        "one Pool::submit_batch, same pool; ÷ flock: {}",
        paired_note(&paired)
    );
    rows[2].note = "ThreadPool::spawn loop (reference)".into();
    let got = median(&paired);
    rows[1].verdict = verdict(got >= 2.0, format!("≥2× flock (submit): {got:.2}×"));
    let (each, batch, paired) = own;
    let mut own_rows = vec![
        Row::new("bulk-1Mt-own", "flock", Unit::PerSec, each),
        Row::new("bulk-1Mt-own", "flock-batch", Unit::PerSec, batch),
    ];
    own_rows[0].note = format!(
        "diagnostic: tasks bump their worker's own counter (no shared line); Pool::submit; \
         others kept {own_others:.2} CPUs busy"
    );
    own_rows[1].note = format!(
        "diagnostic, one Pool::submit_batch; ÷ flock: {}",
        paired_note(&paired)
    );
    rows.extend(own_rows);
    rows
}

/// `rounds` paired runs of `each` and `batch` on one pool (defaults), the order swapped each
/// round, after one unmeasured run of each: rates (tasks/s) and the paired ratios.
fn paired_rounds(
    rounds: usize,
    n: f64,
    each: fn(&flock::Pool, usize) -> Duration,
    batch: fn(&flock::Pool, usize) -> Duration,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut rates_each, mut rates_batch, mut paired) = (Vec::new(), Vec::new(), Vec::new());
    let f = Flock::new();
    each(&f.pool, BULK_TASKS);
    batch(&f.pool, BULK_TASKS);
    for round in 0..rounds {
        let (e, b) = if round % 2 == 0 {
            let e = each(&f.pool, BULK_TASKS);
            (e, batch(&f.pool, BULK_TASKS))
        } else {
            let b = batch(&f.pool, BULK_TASKS);
            (each(&f.pool, BULK_TASKS), b)
        };
        rates_each.push(n / secs(e));
        rates_batch.push(n / secs(b));
        paired.push(secs(e) / secs(b));
    }
    (rates_each, rates_batch, paired)
}

/// `lanes-split` (workload 12): both lanes saturated with equal 30 µs tasks; the executed
/// ratio interactive : batch over a 1 s window, per run (a fresh pool each). Target: within
/// 10% of the weights' 8 : 1.
fn lanes_split_rows() -> Vec<Row> {
    let (runs, others) = with_others(|| {
        (0..3)
            .map(|_| lanes::lanes_split(lanes::SPLIT_TASK_US, lanes::SPLIT_WINDOW))
            .collect::<Vec<lanes::Split>>()
    });
    let mut row = Row::new(
        "lanes-split",
        "flock",
        Unit::Ratio,
        runs.iter().map(lanes::Split::ratio).collect(),
    );
    let per_s = |f: fn(&lanes::Split) -> u64| {
        median(
            &runs
                .iter()
                .map(|r| f(r) as f64 / secs(r.window))
                .collect::<Vec<_>>(),
        )
    };
    let counts = |f: fn(&lanes::Split) -> u64| {
        runs.iter()
            .map(|r| f(r).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    row.note = format!(
        "executed in {:.0} s per run, interactive {} ({}), batch {} ({}); {} µs tasks; \
         others kept {others:.2} CPUs busy",
        secs(lanes::SPLIT_WINDOW),
        counts(|r| r.interactive),
        fmt_value(per_s(|r| r.interactive), Unit::PerSec),
        counts(|r| r.batch),
        fmt_value(per_s(|r| r.batch), Unit::PerSec),
        lanes::SPLIT_TASK_US,
    );
    let got = row.median();
    let off = (got - lanes::SPLIT_TARGET).abs() / lanes::SPLIT_TARGET;
    row.verdict = verdict(
        off <= 0.10,
        format!(
            "8 : 1 ±10%: {got:.2} : 1 ({:+.1}%)",
            (got / 8.0 - 1.0) * 100.0
        ),
    );
    eprintln!(
        "  lanes-split  flock                {}",
        fmt_value(got, Unit::Ratio)
    );
    vec![row]
}

/// `lanes-p99` (workload 13): p99 queue wait of interactive tasks submitted one per ms
/// (300 per run), on an idle pool, while the batch lane is saturated with 50 µs tasks (the
/// default pool, with its lane reserve; and one built with `lane_reserve(false)`, no
/// target), and while it is saturated with the same tasks calling `flock::yield_to_lanes`
/// every 5 µs (without the reserve); 5 runs of each, in turn, a fresh pool each. The rows' runs are per-run p99s; each saturated
/// row's verdict is on the ratio of its median to the idle row's. Target: ≤ 2× idle.
fn lanes_p99_rows() -> Vec<Row> {
    use lanes::Batch;
    let runs = 5;
    let kinds = [
        Batch::Idle,
        Batch::Saturated,
        Batch::SaturatedNoReserve,
        Batch::Yielding,
    ];
    let (trickles, others) = with_others(|| {
        let mut all: Vec<Vec<lanes::Trickle>> = kinds.iter().map(|_| Vec::new()).collect();
        for _ in 0..runs {
            for (k, &batch) in kinds.iter().enumerate() {
                all[k].push(lanes::lanes_trickle(
                    batch,
                    lanes::P99_SAMPLES,
                    lanes::P99_INTERVAL,
                ));
            }
        }
        all
    });
    let (idle, busy, bare, yielding) = (&trickles[0], &trickles[1], &trickles[2], &trickles[3]);
    let p99s = |v: &[lanes::Trickle]| v.iter().map(|t| secs(lanes::p99(&t.waits))).collect();
    let pooled = |v: &[lanes::Trickle], f: fn(&lanes::Trickle) -> &Vec<Duration>| {
        let mut all: Vec<Duration> = v.iter().flat_map(|t| f(t).iter().copied()).collect();
        let p50 = common::quantile(&mut all, 0.5);
        let p99 = common::quantile(&mut all, 0.99);
        (
            fmt_value(secs(p50), Unit::Time),
            fmt_value(secs(p99), Unit::Time),
            all.len(),
        )
    };
    let mut rows = vec![
        Row::new("lanes-p99", "flock-idle", Unit::Time, p99s(idle)),
        Row::new("lanes-p99", "flock-saturated", Unit::Time, p99s(busy)),
        Row::new(
            "lanes-p99",
            "flock-saturated-no-reserve",
            Unit::Time,
            p99s(bare),
        ),
        Row::new(
            "lanes-p99",
            "flock-saturated-yielding",
            Unit::Time,
            p99s(yielding),
        ),
    ];
    let (p50, p99, k) = pooled(idle, |t| &t.waits);
    let own = median(&idle.iter().map(|t| secs(t.pool_p99)).collect::<Vec<_>>());
    rows[0].note = format!(
        "p99 per run shown; all {k}: p50 {p50}, p99 {p99}; Stats::queue_wait p99 {}; \
         others kept {others:.2} CPUs busy",
        fmt_value(own, Unit::Time)
    );
    let (p50, p99, _) = pooled(busy, |t| &t.waits);
    let (_, free99, _) = pooled(busy, |t| &t.first_free);
    rows[1].note = format!(
        "batch lane busy with {} µs tasks, the default pool (lane reserve on); all {k}: \
         p50 {p50}, p99 {p99}; submit → first batch task end p99 {free99} (the floor \
         without preemption)",
        lanes::P99_BATCH_US
    );
    let (p50, p99, _) = pooled(bare, |t| &t.waits);
    let (_, free99, _) = pooled(bare, |t| &t.first_free);
    rows[2].note = format!(
        "the same, lane_reserve(false): no target, the case the reserve is for; all {k}: \
         p50 {p50}, p99 {p99}; submit → first batch task end p99 {free99}"
    );
    let (p50, p99, _) = pooled(yielding, |t| &t.waits);
    rows[3].note = format!(
        "the same {} µs batch tasks, each calling flock::yield_to_lanes every {} µs, \
         lane_reserve(false); all {k}: p50 {p50}, p99 {p99}",
        lanes::P99_BATCH_US,
        lanes::P99_YIELD_US
    );
    for i in [1, 3] {
        let got = rows[i].median() / rows[0].median();
        rows[i].verdict = verdict(got <= 2.0, format!("≤2× idle p99: {got:.2}×"));
    }
    for row in &rows {
        eprintln!(
            "  lanes-p99    {:<20} {}",
            row.pool,
            fmt_value(row.median(), Unit::Time)
        );
    }
    rows
}

/// `async-offload`: see `benches/common/async_offload.rs`. Rows: total time (3 runs each);
/// the verdict, on flock's row, is on the heartbeat's p99 lateness (in the note).
fn async_offload_rows() -> Vec<Row> {
    let r = async_offload::report(3, common::workers());
    let mut flock = Row::new("async-offload", "flock", Unit::Time, r.flock_total);
    (flock.note, flock.verdict) = (r.note, verdict(r.pass, r.target));
    let blocking = Row::new("async-offload", "tokio", Unit::Time, r.blocking_total);
    eprintln!(
        "  async-offload p99 lateness: flock {:?}, spawn_blocking {:?}",
        r.flock_p99, r.blocking_p99
    );
    vec![flock, blocking]
}

// ----- workloads 9 and 10: subprocesses ------------------------------------------------

/// The binaries `c-submit` and `metrics-cost` run, built by [`build_helpers`].
#[derive(Default)]
struct Helpers {
    /// `metrics_cost` built normally (the `stats` feature on).
    rust_metrics: Option<PathBuf>,
    /// `metrics_cost` built with `--no-default-features`.
    rust_no_metrics: Option<PathBuf>,
    /// `benches/c/c_submit.c` linked against `libflock.a`.
    c_submit: Option<PathBuf>,
    /// `benches/cpp/cpp_reduce.cpp` linked against `libflock.a`.
    cpp_reduce: Option<PathBuf>,
    /// What failed, for the report.
    failures: Vec<String>,
}

/// The repository root (the workspace; this package is `benches/`): C sources, `include/` and
/// `docs/` are found from here.
fn repo_root() -> PathBuf {
    let benches = Path::new(env!("CARGO_MANIFEST_DIR"));
    benches.parent().unwrap_or(benches).to_path_buf()
}

/// `$CARGO_TARGET_DIR`, or the workspace's `target/`.
fn target_dir() -> PathBuf {
    let root = repo_root();
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if Path::new(&d).is_absolute() => PathBuf::from(d),
        Some(d) => std::env::current_dir().unwrap_or(root).join(d),
        None => root.join("target"),
    }
}

/// Runs a build step, its output on our stderr; `Err` says what failed.
fn build_step(what: &str, cmd: &mut Command) -> Result<(), String> {
    eprintln!("building {what}");
    match cmd.status() {
        Ok(st) if st.success() => Ok(()),
        Ok(st) => Err(format!("{what}: {st}")),
        Err(e) => Err(format!("{what}: {e}")),
    }
}

/// Builds the subprocess binaries into `$CARGO_TARGET_DIR/bench-report/`:
///
/// * `cargo build --release -p flock-benches --example metrics_cost`, copied to `metrics_cost-metrics`;
/// * the same with `--no-default-features`, copied to `metrics_cost-no-metrics`. Same target
///   directory: the dev-dependencies are not built a second time, and the two flock builds
///   keep apart (different feature sets, different hashes); only the uplifted
///   `examples/metrics_cost` is overwritten, hence the copies. Each binary says which build it
///   is on its first line, checked in [`run_helper`];
/// * `cargo build --release -p flock-ffi` (`libflock.a`), then `cc -O2 -std=c11
///   benches/c/c_submit.c libflock.a` with the system libraries a static Rust library needs
///   (`Libs.private` of `scripts/install-c.sh`), to `c_submit`;
/// * `c++ -O2 -std=c++17 benches/cpp/cpp_reduce.cpp libflock.a` with the same libraries, to
///   `cpp_reduce`.
fn build_helpers() -> Helpers {
    let root = repo_root();
    let target = target_dir();
    let out = target.join("bench-report");
    let mut h = Helpers::default();
    if let Err(e) = std::fs::create_dir_all(&out) {
        h.failures.push(format!("{}: {e}", out.display()));
        return h;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let uplifted = target.join("release/examples/metrics_cost");
    for (features, name) in [
        (None, "metrics_cost-metrics"),
        (Some("--no-default-features"), "metrics_cost-no-metrics"),
    ] {
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(&root)
            .args([
                "build",
                "--quiet",
                "--release",
                "-p",
                "flock-benches",
                "--example",
                "metrics_cost",
            ])
            .env("CARGO_TARGET_DIR", &target);
        cmd.args(features);
        let what = format!("metrics_cost ({})", features.unwrap_or("default features"));
        let dest = out.join(name);
        let built = build_step(&what, &mut cmd).and_then(|()| {
            std::fs::copy(&uplifted, &dest)
                .map(drop)
                .map_err(|e| format!("copy {}: {e}", uplifted.display()))
        });
        match (built, features) {
            (Ok(()), None) => h.rust_metrics = Some(dest),
            (Ok(()), Some(_)) => h.rust_no_metrics = Some(dest),
            (Err(e), _) => h.failures.push(e),
        }
    }
    let lib = target.join("release/libflock.a");
    let dest = out.join("c_submit");
    let lib_built = build_step(
        "libflock.a",
        Command::new(&cargo)
            .current_dir(&root)
            .args(["build", "--quiet", "--release", "-p", "flock-ffi"])
            .env("CARGO_TARGET_DIR", &target),
    );
    let c = lib_built.clone().and_then(|()| {
        build_step(
            "benches/c/c_submit.c",
            Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()))
                .current_dir(&root)
                .args([
                    "-O2",
                    "-std=c11",
                    "-Wall",
                    "-Iinclude",
                    "benches/c/c_submit.c",
                ])
                .arg(&lib)
                .args([
                    "-lgcc_s",
                    "-lutil",
                    "-lrt",
                    "-lpthread",
                    "-lm",
                    "-ldl",
                    "-lc",
                    "-o",
                ])
                .arg(&dest),
        )
    });
    match c {
        Ok(()) => h.c_submit = Some(dest),
        Err(e) => h.failures.push(e),
    }
    let dest = out.join("cpp_reduce");
    let cpp = lib_built.and_then(|()| {
        build_step(
            "benches/cpp/cpp_reduce.cpp",
            Command::new(std::env::var_os("CXX").unwrap_or_else(|| "c++".into()))
                .current_dir(&root)
                .args([
                    "-O2",
                    "-std=c++17",
                    "-Wall",
                    "-Iinclude",
                    "benches/cpp/cpp_reduce.cpp",
                ])
                .arg(&lib)
                .args([
                    "-pthread",
                    "-lgcc_s",
                    "-lutil",
                    "-lrt",
                    "-lpthread",
                    "-lm",
                    "-ldl",
                    "-o",
                ])
                .arg(&dest),
        )
    });
    match cpp {
        Ok(()) => h.cpp_reduce = Some(dest),
        Err(e) => h.failures.push(e),
    }
    h
}

/// A variant of a subprocess workload: its row's pool name, the binary, its arguments, and
/// what its first line must say (which build, which pool).
struct Variant<'a> {
    pool: &'static str,
    bin: &'a Path,
    args: &'a [&'a str],
    expect: &'static str,
}

/// One variant's process in `--serve` mode: it runs 1u-1Mt once per line we write.
struct Served {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    what: String,
}

impl Served {
    /// Starts `v` and waits until its pool is built and warmed up (its `#` line).
    fn start(v: &Variant) -> Result<Served, String> {
        use std::io::BufRead;
        use std::process::Stdio;
        let what = format!("{} {}", v.bin.display(), v.args.join(" "));
        let mut child = Command::new(v.bin)
            .args(["--serve", "--warmup", "1"])
            .args(v.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{what}: {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped")).lines();
        let header = stdout.next().and_then(Result::ok).unwrap_or_default();
        if !header.starts_with('#') || !header.contains(v.expect) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{what}: expected a '# ...{}...' first line, got {header:?}",
                v.expect
            ));
        }
        Ok(Served {
            child,
            stdin,
            stdout,
            what,
        })
    }

    /// One measured run: its value (tasks/s, or seconds for `cpp-reduce`).
    fn run(&mut self) -> Result<f64, String> {
        use std::io::Write;
        writeln!(self.stdin, "go")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("{}: {e}", self.what))?;
        let line = self.stdout.next().and_then(Result::ok).unwrap_or_default();
        line.trim()
            .parse()
            .map_err(|_| format!("{}: expected a number, got {line:?}", self.what))
    }

    /// Closes its stdin (it exits) and waits for it.
    fn finish(self) -> Result<(), String> {
        let Served {
            mut child,
            stdin,
            what,
            ..
        } = self;
        drop(stdin);
        match child.wait() {
            Ok(st) if st.success() => Ok(()),
            Ok(st) => Err(format!("{what}: {st}")),
            Err(e) => Err(format!("{what}: {e}")),
        }
    }
}

/// Sessions of the subprocess workloads. A session starts one fresh process per variant (each
/// builds its pool and runs 1u-1Mt once to warm up), then runs [`ROUNDS_PER_SESSION`] rounds;
/// a round is one measured run of every variant, one process at a time (the others' pools are
/// idle, their workers parked), in an order rotated by one each round so that none always
/// runs first. So the variants compared in a round ran within a few hundred milliseconds of
/// each other, and fresh processes each session average over thread placement (on this
/// 2-core machine a process tends to keep one speed for its lifetime).
const SESSIONS: usize = 5;
const ROUNDS_PER_SESSION: usize = 10;

/// Runs the sessions; returns one row per variant (every measured run) and, per variant, the
/// ratio of its run to the first variant's run in each round (paired ratios).
fn alternate(
    workload: &'static str,
    unit: Unit,
    variants: &[Variant],
) -> Result<(Vec<Row>, Vec<Vec<f64>>), String> {
    let n = variants.len();
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut paired: Vec<Vec<f64>> = vec![Vec::new(); n];
    for _ in 0..SESSIONS {
        let mut procs = variants
            .iter()
            .map(Served::start)
            .collect::<Result<Vec<_>, _>>()?;
        for round in 0..ROUNDS_PER_SESSION {
            let mut this = vec![0.0; n];
            for k in 0..n {
                let i = (round + k) % n;
                this[i] = procs[i].run()?;
            }
            for i in 0..n {
                values[i].push(this[i]);
                paired[i].push(this[i] / this[0]);
            }
        }
        for p in procs {
            p.finish()?;
        }
    }
    let rows = variants
        .iter()
        .zip(values)
        .map(|(v, runs)| {
            let row = Row::new(workload, v.pool, unit, runs);
            eprintln!(
                "  {workload:<12} {:<20} {}",
                row.pool,
                fmt_value(row.median(), unit)
            );
            row
        })
        .collect();
    Ok((rows, paired))
}

/// Median and range of paired ratios, for a note.
fn paired_note(paired: &[f64]) -> String {
    let lo = paired.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = paired.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "median of {} paired ratios {:.3} (range {lo:.2}–{hi:.2})",
        paired.len(),
        median(paired)
    )
}

/// Runs `f` and says how many CPUs other processes kept busy meanwhile.
fn with_others<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let (t0, b0) = (Instant::now(), busy_ticks());
    let out = f();
    let b1 = busy_ticks();
    let others = (b1.0 - b0.0).saturating_sub(b1.1 - b0.1);
    (out, others as f64 / 100.0 / t0.elapsed().as_secs_f64())
}

/// `c-submit` (workload 9): 1u-1Mt through `flock_submit` from C (`flock-c`) against the same
/// body through `Pool::submit` from Rust (`flock`), alternating run by run ([`alternate`]).
/// The verdict is on the median of the paired ratios (C ÷ Rust in the same round).
fn c_submit_rows(h: &Helpers) -> Result<Vec<Row>, String> {
    let (Some(rust), Some(c)) = (&h.rust_metrics, &h.c_submit) else {
        return Err("c-submit: a helper did not build".into());
    };
    let variants = [
        Variant {
            pool: "flock",
            bin: rust,
            args: &[],
            expect: "metrics=on latency=off",
        },
        Variant {
            pool: "flock-c",
            bin: c,
            args: &[],
            expect: "libflock",
        },
    ];
    let (out, others) = with_others(|| alternate("c-submit", Unit::PerSec, &variants));
    let (mut rows, paired) = out?;
    rows[0].note = format!(
        "Pool::submit, Rust closure (metrics_cost example); others kept {others:.2} CPUs busy"
    );
    rows[1].note = format!(
        "flock_submit, C callback, libflock.a; C ÷ Rust: {}",
        paired_note(&paired[1])
    );
    let got = median(&paired[1]);
    rows[1].verdict = verdict(got >= 0.9, format!("C ÷ Rust ≥0.90: {got:.3}"));
    Ok(rows)
}

/// `cpp-reduce`: `flock::parallel_reduce` over 16 Mi doubles on the global pool from C++
/// (`flock-cpp`) against the same sum split statically over one `std::thread` per CPU
/// (`std-thread`, the reference, as the no-pool row is for 1u-1Mt), alternating run by run
/// ([`alternate`]); times per reduction. The verdict is on the median of the paired ratios
/// (flock's time ÷ the threads' in the same round). Target: ≤ 1.1.
fn cpp_reduce_rows(h: &Helpers) -> Result<Vec<Row>, String> {
    let Some(bin) = &h.cpp_reduce else {
        return Err("cpp-reduce: its helper did not build".into());
    };
    let variants = [
        Variant {
            pool: "std-thread",
            bin,
            args: &["--threads"],
            expect: "std::thread static split",
        },
        Variant {
            pool: "flock-cpp",
            bin,
            args: &["--flock"],
            expect: "flock parallel_reduce",
        },
    ];
    let (out, others) = with_others(|| alternate("cpp-reduce", Unit::Time, &variants));
    let (mut rows, paired) = out?;
    rows[0].note = format!(
        "16 Mi doubles summed in one slice per CPU, a std::thread each (started and joined per run); others kept {others:.2} CPUs busy"
    );
    rows[1].note = format!(
        "flock::parallel_reduce on flock::global(), 256 pieces in a fixed tree; flock ÷ threads: {}",
        paired_note(&paired[1])
    );
    let got = median(&paired[1]);
    rows[1].verdict = verdict(got <= 1.1, format!("≤1.1× std-thread: {got:.3}"));
    Ok(rows)
}

/// `instructions` (workload 16): instructions and locked instructions per join, per spawned
/// scope task and per outside submit, flock against rayon (and the channel pool for submits),
/// from `scripts/callgrind.sh` (valgrind's callgrind, one worker, two sizes each so start-up
/// cancels out). Counts, not times: they hold on a busy machine. Left out without valgrind.
fn instruction_rows() -> Result<Vec<Row>, String> {
    let script = repo_root().join("scripts/callgrind.sh");
    eprintln!("running {} (valgrind)", script.display());
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .map_err(|e| format!("instructions: {e}"))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(format!("instructions: {}: {}", out.status, why.trim()));
    }
    let rows: Vec<Row> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(instruction_row)
        .collect();
    if rows.is_empty() {
        return Err("instructions: scripts/callgrind.sh printed no table".into());
    }
    Ok(rows)
}

/// One line of `scripts/callgrind.sh`'s table (`| operation | pool | instructions | locked |`)
/// as a row; `None` for the header and anything else.
fn instruction_row(line: &str) -> Option<Row> {
    let cells: Vec<&str> = line
        .trim()
        .trim_matches('|')
        .split('|')
        .map(str::trim)
        .collect();
    let [op, pool, instr, locked] = cells[..] else {
        return None;
    };
    let (instr, locked) = (instr.parse::<f64>().ok()?, locked.parse::<f64>().ok()?);
    let workload = match op.split_whitespace().next()? {
        "join" => "instr-join",
        "spawned" => "instr-spawn",
        "outside" => "instr-submit",
        _ => return None,
    };
    let mut row = Row::new(workload, pool, Unit::Instructions, vec![instr]);
    row.note = format!("{locked:.2} locked instructions; {op}");
    Some(row)
}

/// `metrics-cost` (workload 10): 1u-1Mt with flock as built normally (`flock`, the `metrics`
/// feature on), with `track_latency(true)` (`flock-latency`) and built with
/// `--no-default-features` (`flock-no-metrics`), alternating run by run ([`alternate`]).
/// Verdicts on the medians of the paired ratios: metrics on ÷ off, latency on ÷ `flock`.
fn metrics_cost_rows(h: &Helpers) -> Result<Vec<Row>, String> {
    let (Some(on), Some(off)) = (&h.rust_metrics, &h.rust_no_metrics) else {
        return Err("metrics-cost: a helper did not build".into());
    };
    let variants = [
        Variant {
            pool: "flock",
            bin: on,
            args: &[],
            expect: "metrics=on latency=off",
        },
        Variant {
            pool: "flock-latency",
            bin: on,
            args: &["--latency"],
            expect: "metrics=on latency=on",
        },
        Variant {
            pool: "flock-no-metrics",
            bin: off,
            args: &[],
            expect: "metrics=off latency=off",
        },
    ];
    let (out, others) = with_others(|| alternate("metrics-cost", Unit::PerSec, &variants));
    let (mut rows, paired) = out?;
    let on_vs_off: Vec<f64> = paired[2].iter().map(|r| 1.0 / r).collect();
    let latency_vs_off: Vec<f64> = paired[1]
        .iter()
        .zip(&paired[2])
        .map(|(l, o)| l / o)
        .collect();
    rows[0].note = format!("stats feature on (default); others kept {others:.2} CPUs busy");
    rows[1].note = format!(
        "track_latency(true); ÷ flock: {}; ÷ flock-no-metrics: median {:.3}",
        paired_note(&paired[1]),
        median(&latency_vs_off)
    );
    rows[2].note = format!(
        "--no-default-features (counters compiled out); flock ÷ this: {}",
        paired_note(&on_vs_off)
    );
    let got = median(&on_vs_off);
    rows[2].verdict = verdict(got >= 0.95, format!("flock ÷ this ≥0.95: {got:.3}"));
    let got = median(&paired[1]);
    rows[1].verdict = verdict(got >= 0.95, format!("this ÷ flock ≥0.95: {got:.3}"));
    Ok(rows)
}

/// CPU ticks busy machine-wide (`/proc/stat`) and used by this process (`/proc/self/stat`).
fn busy_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...: busy is all but idle and iowait.
    let all: u64 = cpu.iter().take(8).sum();
    let busy = all - cpu.get(3).unwrap_or(&0) - cpu.get(4).unwrap_or(&0);
    let own = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = own.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3, so utime and stime (fields 14 and 15) are at 11 and 12, and
    // cutime and cstime (16 and 17: the children waited for, the subprocess workloads') at
    // 13 and 14.
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    let own = tick(11) + tick(12) + tick(13) + tick(14);
    (busy, own)
}

/// Where the report was made.
struct Machine {
    cpus: usize,
    /// Workers every pool has (`BENCH_WORKERS`, else `cpus`).
    workers: usize,
    model: String,
    date: String,
    /// CPUs other processes kept busy on average while the report ran.
    others_cpus: f64,
}

fn machine() -> Machine {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown date".into());
    Machine {
        cpus: common::cpus(),
        workers: common::workers(),
        model,
        date,
        others_cpus: 0.0,
    }
}

fn markdown(rows: &[Row], m: &Machine, took: Duration) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Machine: {} CPUs available ({}), {}. Every pool has {} workers. Report took {:.0} s; \
         other processes kept {:.2} CPUs busy on average meanwhile.\n",
        m.cpus,
        m.model,
        m.date,
        m.workers,
        took.as_secs_f64(),
        m.others_cpus
    );
    out.push_str(
        "| workload | pool | median | min–max | flock advantage | notes | target | result |\n",
    );
    out.push_str("|---|---|---:|---:|---:|---|---|---|\n");
    for row in rows {
        let flock = flock_baseline(rows, row.workload);
        let adv = flock
            .and_then(|f| flock_advantage(f, row.median(), row.unit))
            .map_or("—".to_string(), |r| format!("{r:.2}×"));
        let (target, result) = match &row.verdict {
            Some(v) => (v.text.clone(), if v.pass { "PASS" } else { "**MISS**" }),
            None => (String::new(), ""),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row.workload,
            row.pool,
            fmt_value(row.median(), row.unit),
            fmt_range(row),
            adv,
            row.note,
            target,
            result
        );
    }
    out.push_str(
        "\n\"flock advantage\": how many times better flock's median is than the row's \
         (throughput: flock ÷ row; time and CPU: row ÷ flock); above 1 means flock is ahead.\n",
    );
    out
}

fn flock_baseline(rows: &[Row], workload: &str) -> Option<f64> {
    rows.iter()
        .find(|r| r.workload == workload && r.pool == "flock")
        .map(Row::median)
}

// ----- the chart -------------------------------------------------------------------------

fn color(pool: &str) -> &'static str {
    match pool {
        "flock" => "#d9480f",
        "flock-unbounded" => "#fab005",
        "flock-submit" => "#ff8787",
        "flock-batch" => "#b35806",
        "flock-c" => "#e8590c",
        "flock-latency" => "#ffa94d",
        "flock-no-metrics" => "#a61e4d",
        "rayon" => "#1c7ed6",
        "rayon-scope" => "#74c0fc",
        "threadpool" => "#2f9e44",
        "tokio" => "#7048e8",
        "crossbeam-channel" => "#862e9c",
        "std-thread" => "#868e96",
        "futex-wake" => "#0c8599",
        "sequential" => "#5c940d",
        "ideal" => "#c2255c",
        "no pool" => "#e64980",
        _ => "#495057",
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The chart's lines on the lane workloads (no peers, so no bars): each figure and its target.
fn lanes_text(rows: &[&Row]) -> Vec<String> {
    let met = |r: &Row| match &r.verdict {
        Some(v) if v.pass => "met",
        Some(_) => "missed",
        None => "none",
    };
    let get = |workload: &str, pool: &str| {
        rows.iter()
            .find(|r| r.workload == workload && r.pool == pool)
    };
    let mut out = Vec::new();
    if let Some(r) = get("lanes-split", "flock") {
        out.push(format!(
            "lanes-split: executed interactive : batch {} with both saturated (target 8 : 1 ±10%, {}).",
            fmt_value(r.median(), r.unit),
            met(r)
        ));
    }
    if let (Some(idle), Some(busy)) = (
        get("lanes-p99", "flock-idle"),
        get("lanes-p99", "flock-saturated"),
    ) {
        out.push(format!(
            "lanes-p99: interactive p99 queue wait {} on an idle pool, {} with the batch lane saturated (target ≤ 2×, {}).",
            fmt_value(idle.median(), idle.unit),
            fmt_value(busy.median(), busy.unit),
            met(busy)
        ));
    }
    if let Some(bare) = get("lanes-p99", "flock-saturated-no-reserve") {
        out.push(format!(
            "lanes-p99: {} saturated without the lane reserve (no preemption: the first batch task to end).",
            fmt_value(bare.median(), bare.unit),
        ));
    }
    if let (Some(idle), Some(yielding)) = (
        get("lanes-p99", "flock-idle"),
        get("lanes-p99", "flock-saturated-yielding"),
    ) {
        out.push(format!(
            "lanes-p99: {} with the batch tasks calling flock::yield_to_lanes every 5 µs ({:.2}× idle, {}).",
            fmt_value(yielding.median(), yielding.unit),
            yielding.median() / idle.median(),
            met(yielding)
        ));
    }
    out
}

/// Grouped bars, one group per workload, each bar the row's performance relative to flock's
/// (flock = 1.0, higher is better, log scale); below it, idle CPU in absolute terms.
fn svg(rows: &[Row], m: &Machine) -> String {
    let (w, left, right) = (1200.0_f64, 80.0_f64, 1180.0_f64);
    let (top, bottom) = (105.0_f64, 480.0_f64);
    // Workloads with a `flock` row to compare with; the lane workloads (no peers, no `flock`
    // row in lanes-p99, a ratio of counts in lanes-split) go in a line of text below.
    let relative: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.unit, Unit::PerSec | Unit::Time))
        .filter(|r| flock_baseline(rows, r.workload).is_some())
        .collect();
    let rel = |r: &Row| {
        flock_baseline(rows, r.workload)
            .and_then(|f| flock_advantage(f, r.median(), r.unit))
            .map(f64::recip)
    };
    let values: Vec<f64> = relative.iter().filter_map(|r| rel(r)).collect();
    let lo = values
        .iter()
        .copied()
        .fold(1.0_f64, f64::min)
        .log10()
        .floor()
        .min(-1.0);
    let hi = values
        .iter()
        .copied()
        .fold(1.0_f64, f64::max)
        .log10()
        .ceil()
        .max(1.0);
    let y_of = |v: f64| bottom - (v.log10() - lo) / (hi - lo) * (bottom - top);

    // idle-cpu's rows alone (idle-burst's are in the table only).
    let idle: Vec<&Row> = rows.iter().filter(|r| r.workload == "idle-cpu").collect();
    let lane_rows: Vec<&Row> = rows
        .iter()
        .filter(|r| r.workload.starts_with("lanes-"))
        .collect();
    let mut pools: Vec<&str> = Vec::new();
    for r in relative.iter().chain(&idle) {
        if !pools.contains(&r.pool.as_str()) {
            pools.push(&r.pool);
        }
    }
    let legend_rows = pools.len().div_ceil(6);
    let legend_top = bottom + 70.0;
    let idle_top = legend_top + legend_rows as f64 * 24.0 + 40.0;
    let lanes_top = idle_top + 30.0 + idle.len() as f64 * 26.0 + 30.0;
    let h = lanes_top + if lane_rows.is_empty() { 10.0 } else { 50.0 };

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="Helvetica, Arial, sans-serif">"#
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="34" font-size="22" font-weight="bold">flock against peer pools: performance relative to flock</text>"#
    );
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="58" font-size="14" fill="#495057">Each bar: that row's median relative to flock's (flock = 1.0; above 1 means faster than flock), log scale.</text>"##
    );
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="78" font-size="14" fill="#495057">{} CPUs ({}), {}; every pool has {} workers; made by benches/examples/bench_report.rs.</text>"##,
        m.cpus,
        esc(&m.model),
        esc(&m.date),
        m.workers
    );
    // Axis and grid.
    for e in (lo as i32)..=(hi as i32) {
        for k in [1.0, 2.0, 5.0] {
            let v = k * 10f64.powi(e);
            if v.log10() > hi + 1e-9 {
                continue;
            }
            let y = y_of(v);
            let (stroke, width) = if v == 1.0 {
                ("#212529", 2.0)
            } else if k == 1.0 {
                ("#adb5bd", 1.0)
            } else {
                ("#e9ecef", 1.0)
            };
            let _ = writeln!(
                s,
                r#"<line x1="{left}" x2="{right}" y1="{y:.1}" y2="{y:.1}" stroke="{stroke}" stroke-width="{width}"/>"#
            );
            let label = if v >= 1.0 {
                format!("{v}")
            } else {
                format!("{v:.2}").trim_end_matches('0').to_string()
            };
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="13" text-anchor="end">{label}×</text>"#,
                left - 6.0,
                y + 4.0
            );
        }
    }
    // Groups.
    let mut workloads: Vec<&str> = Vec::new();
    for r in &relative {
        if !workloads.contains(&r.workload) {
            workloads.push(r.workload);
        }
    }
    let gw = (right - left) / workloads.len() as f64;
    for (gi, wl) in workloads.iter().enumerate() {
        let members: Vec<&&Row> = relative.iter().filter(|r| r.workload == *wl).collect();
        let bw = ((gw - 20.0) / members.len() as f64).min(34.0);
        let x0 = left + gi as f64 * gw + (gw - bw * members.len() as f64) / 2.0;
        for (bi, r) in members.iter().enumerate() {
            let Some(v) = rel(r) else { continue };
            let x = x0 + bi as f64 * bw;
            let y = y_of(v.max(10f64.powf(lo)));
            let _ = writeln!(
                s,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {} ({:.2}× flock)</title></rect>"#,
                x + 1.0,
                bw - 2.0,
                bottom - y,
                color(&r.pool),
                esc(&r.pool),
                esc(&fmt_value(r.median(), r.unit)),
                v
            );
            let (tx, ty) = (x + bw / 2.0 + 4.0, y - 4.0);
            let _ = writeln!(
                s,
                r#"<text x="{tx:.1}" y="{ty:.1}" font-size="12" transform="rotate(-90 {tx:.1} {ty:.1})">{v:.2}</text>"#
            );
        }
        let cx = left + gi as f64 * gw + gw / 2.0;
        let metric = match members[0].unit {
            Unit::PerSec => "throughput",
            _ if *wl == "wake-latency" => "p50 latency",
            _ => "time",
        };
        let _ = writeln!(
            s,
            r#"<text x="{cx:.1}" y="{:.1}" font-size="15" font-weight="bold" text-anchor="middle">{wl}</text>"#,
            bottom + 22.0
        );
        let _ = writeln!(
            s,
            r##"<text x="{cx:.1}" y="{:.1}" font-size="12" fill="#495057" text-anchor="middle">{metric}</text>"##,
            bottom + 40.0
        );
    }
    let _ = writeln!(
        s,
        r##"<line x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="#212529"/>"##
    );
    // Legend.
    for (i, p) in pools.iter().enumerate() {
        let x = left + (i % 6) as f64 * 180.0;
        let y = legend_top + (i / 6) as f64 * 24.0;
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="16" height="16" fill="{}"/>"#,
            y - 13.0,
            color(p)
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{y:.1}" font-size="14">{}</text>"#,
            x + 22.0,
            esc(p)
        );
    }
    // Idle CPU panel.
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="{idle_top:.1}" font-size="16" font-weight="bold">idle-cpu: ms of CPU per idle second after a burst (absolute, lower is better; flock target ≤ 0.05)</text>"#
    );
    let max = idle.iter().map(|r| r.median()).fold(0.05_f64, f64::max);
    let (bx, bwid) = (left + 170.0, 700.0);
    for (i, r) in idle.iter().enumerate() {
        let y = idle_top + 18.0 + i as f64 * 26.0;
        let len = r.median() / max * bwid;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="14" text-anchor="end">{}</text>"#,
            bx - 8.0,
            y + 14.0,
            esc(&r.pool)
        );
        let _ = writeln!(
            s,
            r#"<rect x="{bx:.1}" y="{y:.1}" width="{:.1}" height="18" fill="{}"/>"#,
            len.max(1.0),
            color(&r.pool)
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="13">{:.4} ms/s</text>"#,
            bx + len.max(1.0) + 8.0,
            y + 14.0,
            r.median()
        );
    }
    let tx = bx + 0.05 / max * bwid;
    let _ = writeln!(
        s,
        r##"<line x1="{tx:.1}" x2="{tx:.1}" y1="{:.1}" y2="{:.1}" stroke="#c92a2a" stroke-dasharray="4 3"/>"##,
        idle_top + 12.0,
        idle_top + 22.0 + idle.len() as f64 * 26.0
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" fill="#c92a2a">target 0.05</text>"##,
        tx + 4.0,
        idle_top + 34.0 + idle.len() as f64 * 26.0
    );
    // Lanes: flock against itself, as text.
    for (i, line) in lanes_text(&lane_rows).iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text x="{left}" y="{:.1}" font-size="14">{}</text>"#,
            lanes_top + i as f64 * 20.0,
            esc(line)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A workload's measuring function.
type RowsOf = fn() -> Vec<Row>;

/// The workloads `--only` may name that run in this process (`scripts/scaling.sh` runs
/// them at each CPU count), with the function that measures each.
const IN_PROCESS: [(&str, RowsOf); 8] = [
    ("1u-1Mt", one_submitter_rows),
    ("cpu-1us", cpu_rows),
    ("fib-join", fib_rows),
    ("qsort", qsort_rows),
    ("idle-cpu", idle_rows),
    ("idle-burst", idle_burst_rows),
    ("low-par", low_par_rows),
    ("burst", burst_rows),
];

/// `--only W1,W2`: the workloads to run, none of the others: the subprocess ones
/// (`c-submit`, `metrics-cost`, `cpp-reduce`) and those of [`IN_PROCESS`]; the chart is not
/// written then, and each flock row with ratios for `scripts/scaling.sh` prints them on a
/// line `scaling: WORKLOAD WALL CPU` (flock ÷ rayon by wall time and by process CPU time,
/// `-` for one the row does not measure). `None`: everything.
fn only_arg() -> Option<Vec<String>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => None,
        [flag, list] if flag == "--only" => Some(list.split(',').map(str::to_string).collect()),
        _ => {
            eprintln!("usage: bench_report [--only data-parallel | --only c-submit,metrics-cost,cpp-reduce,1u-1Mt,cpu-1us,fib-join,qsort,idle-cpu,idle-burst,low-par,burst]");
            std::process::exit(2);
        }
    }
}

fn main() {
    // `--only data-parallel`: just those rows, printed, no chart written (a quick check of
    // the helpers against rayon without the hour of the whole report).
    let args: Vec<String> = std::env::args().collect();
    if args.get(1..3) == Some(&["--only".to_string(), "data-parallel".to_string()][..]) {
        let start = Instant::now();
        let before = busy_ticks();
        let mut m = machine();
        let rows = data_parallel_rows();
        let took = start.elapsed();
        let after = busy_ticks();
        let others = (after.0 - before.0).saturating_sub(after.1 - before.1);
        m.others_cpus = others as f64 / 100.0 / took.as_secs_f64();
        print!("{}", markdown(&rows, &m, took));
        return;
    }
    let only = only_arg();
    // The subprocess binaries are built before the clock and the CPU accounting start
    // (not when `--only` names in-process workloads alone).
    let built = Instant::now();
    let in_process = |w: &String| IN_PROCESS.iter().any(|(name, _)| name == w);
    let helpers = match &only {
        Some(only) if only.iter().all(in_process) => Helpers::default(),
        _ => build_helpers(),
    };
    let build_took = built.elapsed();
    for f in &helpers.failures {
        eprintln!("bench_report: build failed: {f}");
    }
    let start = Instant::now();
    let ticks_before = busy_ticks();
    let mut m = machine();
    eprintln!("calibrating: {} spin rounds per µs", common::spins_per_us());
    if let Some(only) = &only {
        return report_only(only, &helpers, m);
    }
    // idle-cpu first: nothing else of this process has run yet, so no stray threads exist.
    let idle = idle_rows();
    let mut rows = one_submitter_rows();
    rows.extend(many_submitters_rows());
    rows.extend(cpu_rows());
    rows.extend(spawn_tree_rows());
    rows.extend(fib_rows());
    rows.extend(qsort_rows());
    rows.extend(data_parallel_rows());
    rows.extend(burst_rows());
    rows.extend(wake_rows());
    rows.extend(idle); // after wake-latency, as numbered in docs/bench.md
    rows.extend(idle_burst_rows());
    rows.extend(low_par_rows());
    let mut skipped = helpers.failures.clone();
    for sub in [
        c_submit_rows(&helpers),
        metrics_cost_rows(&helpers),
        cpp_reduce_rows(&helpers),
    ] {
        match sub {
            Ok(r) => rows.extend(r),
            Err(e) => {
                eprintln!("bench_report: left out: {e}");
                skipped.push(e);
            }
        }
    }
    rows.extend(bulk_rows());
    rows.extend(lanes_split_rows());
    rows.extend(lanes_p99_rows());
    rows.extend(async_offload_rows());
    // Last: valgrind runs one thread at a time and times nothing, so it disturbs no row.
    match instruction_rows() {
        Ok(r) => rows.extend(r),
        Err(e) => {
            eprintln!("bench_report: left out: {e}");
            skipped.push(e);
        }
    }
    let took = start.elapsed();
    let ticks_after = busy_ticks();
    let others = (ticks_after.0 - ticks_before.0).saturating_sub(ticks_after.1 - ticks_before.1);
    // Ticks are 1/100 s (`getconf CLK_TCK`).
    m.others_cpus = others as f64 / 100.0 / took.as_secs_f64();
    print!("{}", markdown(&rows, &m, took));
    println!(
        "\nThe subprocess binaries (c-submit, metrics-cost, cpp-reduce) were built in {:.0} s before the clock started.",
        build_took.as_secs_f64()
    );
    for e in &skipped {
        println!("Left out: {e}");
    }
    let docs = repo_root().join("docs");
    std::fs::create_dir_all(&docs).expect("docs/");
    let path = docs.join("bench.svg");
    std::fs::write(&path, svg(&rows, &m)).expect("write docs/bench.svg");
    eprintln!("wrote {}", path.display());
}

/// `--only`: the named subprocess workloads alone, their table printed; no chart written.
fn report_only(only: &[String], helpers: &Helpers, mut m: Machine) {
    let start = Instant::now();
    let ticks_before = busy_ticks();
    let mut rows = Vec::new();
    for name in only {
        if let Some((_, rows_of)) = IN_PROCESS.iter().find(|(w, _)| w == name) {
            rows.extend(rows_of());
            continue;
        }
        let sub = match name.as_str() {
            "c-submit" => c_submit_rows(helpers),
            "metrics-cost" => metrics_cost_rows(helpers),
            "cpp-reduce" => cpp_reduce_rows(helpers),
            other => Err(format!("--only: no subprocess workload {other}")),
        };
        match sub {
            Ok(r) => rows.extend(r),
            Err(e) => println!("Left out: {e}"),
        }
    }
    let took = start.elapsed();
    let ticks_after = busy_ticks();
    let others = (ticks_after.0 - ticks_before.0).saturating_sub(ticks_after.1 - ticks_before.1);
    // Ticks are 1/100 s (`getconf CLK_TCK`).
    m.others_cpus = others as f64 / 100.0 / took.as_secs_f64();
    print!("{}", markdown(&rows, &m, took));
    // For scripts/scaling.sh: one line per workload with flock ÷ rayon ratios, by wall
    // time and by CPU time, `-` for one not measured.
    let cell = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.3}"));
    for row in &rows {
        if let Some(Scaling { wall, cpu }) = row.scaling {
            println!("scaling: {} {} {}", row.workload, cell(wall), cell(cpu));
        }
    }
}
