//! What bounds `cpu-1us`, `qsort` and the bulk workloads (on two workers, and on the lent 16),
//! measured apart from them.
//!
//! `drain_probe drain W [US]`: a pool of `W` workers, paused, is given 2,000,000 trivial tasks
//! (with `US` > 0: 200,000 that spin `US` µs each) from one outside thread (all in that
//! thread's submitter ring), then resumed; prints the wall time per task of the drain (median
//! of 9). One worker takes from the ring alone; two take turns on the ring's head, one CAS
//! each per task, and the head's cache line moves between them on every take.
//!
//! `drain_probe own`: `bulk-1Mt-own`'s per-task loop alone (tasks that share no line) on the
//! default pool, 9 runs: what the pool's own submit and take cost, for paired runs of two
//! builds.
//!
//! `drain_probe spin`: `cpu-1us`'s 200,000 bodies of about 1 µs, first on one thread, then
//! split over two plain threads with no pool: the efficiency two CPUs of this machine allow
//! (median of 5).
//!
//! `drain_probe ideal`: `cpu-1us` with an outside thread handing out the tasks but no pool
//! (static even/odd split, each task's `Arc` cloned and dropped as in the workload).
//!
//! `drain_probe cpu KIND...`: `cpu-1us` on the bench's pools, with where the CPU time went
//! (bodies, submitter, workers beyond the bodies) and the context switches.
//!
//! `drain_probe cpu-stats W [US...]`: `cpu-1us`'s loop on flock with `W` workers, with the
//! pool's parks and wake-ups and the kernel's account of the submitting thread (CPU, time
//! runnable but waiting for a CPU, voluntary and involuntary switches).
//!
//! `drain_probe one W` / `one-local W`: 1u-1Mt's loop on an unbounded pool of `W` workers,
//! with the workload's body (a hit on a counter shared through an `Arc`) or a thread-local
//! one, and each thread's CPU time; with the CPU 0–1 line round trip before and after (`one-modes`).
//!
//! `drain_probe one-modes POOLS`: 1u-1Mt's loop on `POOLS` pools built one after the other as
//! `bench_report`'s `flock` row builds its pool (the defaults, as many workers as the bench),
//! six runs each. Per run: the rate; for each worker the share of the tasks it ran; and for
//! the submitting thread and each worker the share of the run's wall time it ran, the CPU it
//! ran on last, and its voluntary and involuntary context switches. Three threads on two
//! CPUs: the rate follows which thread shares a CPU with the submitter and how much of it
//! that thread takes. Before and after each run, `line` is the time a cache line takes to go
//! from CPU 0 to CPU 1 and back (the first two CPUs the probe may run on; two threads pinned
//! there, median of 9 bouts of 20,000 round trips, no pool thread running meanwhile): how far
//! apart the host has put the guest's two CPUs then (`common::line_round_trip_ns`).
//!
//! `drain_probe one-ideal ROUNDS`: 1u-1Mt's body with no pool, against the pools. The outside
//! thread clones the shared `Arc` per task and publishes it in its own slot; 1, then 2 plain
//! threads take the slots by a static split (`workloads::one_submitter_no_pool`). What is
//! left is what the body itself costs on this machine. In interleaved rounds with flock (the
//! bench's default pool), the crossbeam-channel pool and rayon running 1u-1Mt itself; prints
//! ns a task, medians over the rounds, and what `1u-1Mt`'s targets would need. Each round's
//! line ends with the cache line's round trip between CPU 0 and CPU 1 before and after it
//! (`one-modes`).
//!
//! `drain_probe fib ROUNDS W [fenced]`: `fib-join` with `W` workers (default: as the bench)
//! in interleaved rounds (sequential, flock, rayon), each run's wall and process CPU time, and
//! the CPU per join beyond the sequential run counted two ways: wall time × workers (the
//! report's measure before) and the process's CPU time (its measure now); per-round ratios
//! flock ÷ rayon and their medians. `fenced`: flock's pool built with `membarrier(false)`.
//!
//! `drain_probe fibloop flock|rayon RUNS W`: `RUNS` runs of `fib-join` on one pool of `W`
//! workers, to run under `perf record`; flock's prints its steals.
//!
//! `drain_probe bystander [US]`: what a pool's idle cycle costs a thread of the same process
//! that has nothing to do with it. A bystander thread spins counting for 2 s while the main
//! thread hands one empty task every `US` µs (default 200) to a one-worker pool, which parks
//! between tasks; flock's park issues the sleep protocol's `membarrier`, which interrupts
//! every running thread of the process. Rounds of: no pool, flock, flock with `spin_limit(0)`,
//! flock with `membarrier(false)`, a crossbeam-channel pool; prints the bystander's count
//! rate, flock's parks, and the function-call interrupts (IPIs) all CPUs took meanwhile
//! (`/proc/interrupts`), which count the membarrier's interrupts where time is too noisy.
//!
//! `drain_probe wake ROUNDS`: `wake-latency`'s p50 (100 samples) for the bare futex wake,
//! flock and the crossbeam-channel pool, in turn, `ROUNDS` times (default 5).
//!
//! `drain_probe many KIND RUNS`: `100u-10Kt` on one pool of `KIND` (`flock`,
//! `flock-unbounded`, `channel`) `RUNS` times, the median rate; to run under `perf record`.
//!
//! `drain_probe qsort ROUNDS W`: `qsort` on `W` workers, interleaved: flock, flock with
//! `membarrier(false)`, rayon, the bound no schedule on `W` workers beats (the sequential
//! recursion's first partition + the rest ÷ `W`); medians, and flock's parks and steals a
//! run.
//!
//! `drain_probe clock`: what one reading of the time-stamp counter costs on this CPU alone
//! and right after a locked read-modify-write (as a worker's reading at a task's end follows
//! the task's atomics), against the locked instruction alone (x86-64 only; median of 5).
//!
//! `drain_probe busy-submit [SAMPLES]`: `wake-latency` with a submitter that keeps running:
//! after `WAKE_IDLE` asleep it submits one task and spins until the task's first
//! instruction, which stamps the time and its CPU. Per pool, `SAMPLES` (default 60) such
//! submits: the median and 90th percentile from the submit call to the task's start, and
//! how many tasks ran on the CPU the submitter was on. Pools: flock as built by default,
//! with `spin_limit(7)` (its spin's rounds without a `sched_yield`), with `spin_limit(0)`,
//! and pinned; rayon, the crossbeam-channel pool and `threadpool` with as many workers; and
//! the bare futex (a thread parked in `std::thread::park`, unparked by a waker that then
//! spins the same way).
//!
//! `drain_probe cold [IDLE_US...]`: what memory costs a thread right after it slept, the
//! state a worker woken by `wake-latency` runs its first instructions in. For each idle
//! time (default 300, 1000, 2000, 5000 and 10000 µs; `wake-latency` idles 5 ms), 200 samples
//! of: touch a set of lines of a 256 MiB buffer, sleep, then time the same loads (cold), and
//! at once again (warm); medians. Sets: 1 line, 8 and 32 lines in one page (64-byte
//! stride), 8 and 32 in as many pages (4 KiB), 32 a MiB apart.
//!
//! `drain_probe steals RUNS W`: how many tasks `fib-join`, `qsort` and `spawn-tree` (scope)
//! steal a run on a flock pool of `W` workers, and how long a run takes: what a cost paid on
//! every steal (the moonshot's `membarrier`, `docs/bench.md`) would add to each.
//!
//! `drain_probe join-events [--runs RUNS] W...`: what each `fib-join` join costs in events that may
//! grow with the workers, on pools of each `W` workers (default 2 4 8 16; on a machine with
//! fewer CPUs the pool is oversubscribed, which leaves the counts meaningful and the times
//! not). `RUNS` (default 20) runs of `fib(FIB_N)` through `flock::Pool::join` after one warm-up
//! run; from `Stats` (the `stats` feature): searches beyond the own deque (each checks the
//! broadcast mailbox), steals, victims scanned, failed steals (searches
//! that found nothing), local pushes that found a sleeper (`local_push_wake_checks`), park
//! attempts (each a membarrier where the pool uses it), parks, wake-ups and read-modify-writes
//! of the sleep state word. Then the same runs in a child process under
//! `strace -f -e trace=futex,membarrier` for flock and for rayon (`rayon::join` in `install`):
//! `FUTEX_WAIT` and `FUTEX_WAKE` calls and membarriers, counted between two markers (a
//! `getppid` call each side of the runs), so pool start and shutdown are left out. strace
//! slows every traced call, so its counts come from a perturbed schedule: compare them
//! between pools and worker counts, not with the in-process ones. The in-process runs (flock's
//! and then a rayon pool's of as many threads) also count the process's context switches,
//! voluntary and involuntary (`getrusage`). Each of these figures is per 1,000,000 joins.
//! Last, instructions and locked instructions a join (every thread's), from callgrind: one
//! `fib(20)` and one `fib(23)` per pool and worker count, each in a child process under
//! `valgrind --tool=callgrind --collect-bus=yes --fair-sched=yes`, the difference of the
//! totals over the difference of the joins (valgrind runs one thread at a time, so an idle
//! worker's search takes turns with the working threads instead of running beside them).
//! (Shared cache lines written are not counted: this guest has no hardware counters for
//! `perf c2c` or `perf stat -e instructions`; the sleep word's writes, the steals and the
//! locked instructions, each a write to a line other workers may read, stand in for them.)
//!
//! `drain_probe trickle-events W...`: `bench_report`'s `trickle` row (one 20 µs task every
//! 200 µs, 2,000 a run) and `2-way` rounds (2,000 joins of two 50 µs halves on a worker) on
//! flock pools of `W` workers (default 2 16): the default pool, one with `spin_limit(0)` and
//! one with `membarrier(false)`, 3 runs each; per task or round, the wall and process CPU
//! time of the run with the median CPU and its `Stats` counts: searches, failed steals, park
//! tries, parks and wake-ups; and the floor, with each task run by the submitting thread
//! between its sleeps. What the CPU beyond the task's 20 µs goes to.
//!
//! `drain_probe two-way [ROUNDS]`: where a `2-way` round's time goes (`bench_report`'s row,
//! two workers), flock and rayon in turn on pools built once, `ROUNDS` (default 6) runs of
//! 4,000 joins each. Each join stamps (one `Instant` for the process) when it is called, when
//! each half starts and ends, and when it returns; per run: the wall time a round, each half's
//! duration (mean and median: the same `cpu_work(50)` on each of the two workers), the steal
//! (join called → the second half started on the other worker) and the return (the later
//! half's end → join returned), over the joins whose second half was stolen, the last two
//! being what the pool itself adds to a round; and how many were not stolen.
//!
//! `drain_probe idle-events W...`: what a pool of `W` workers (default 2 16) does in a burst
//! (`bench_report`'s: 100 tasks of about 2 µs from one thread, waited for) and the second
//! after it, the window of `bench_report`'s `idle-burst` row, in events that do not depend
//! on how many CPUs there are: from flock's `Stats`, searches, failed steals, park tries
//! (each a membarrier where the pool uses it, which interrupts every CPU running a thread
//! of the process), parks, wake-ups and sleep-word writes, the median over 5 bursts, each
//! after a second asleep; and, in a child process under strace as for `join-events`, flock's
//! and rayon's `FUTEX_WAIT`, `FUTEX_WAKE` and membarrier calls per burst (mean of 5).
#[path = "../benches/common/mod.rs"]
mod common;

use common::workloads::{cpu_tasks_sequential, BURST_TASKS, BURST_TASK_US, CPU_TASKS, CPU_TASK_US};
use std::cell::Cell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

thread_local!(static HITS: Cell<u64> = const { Cell::new(0) });

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// A pool of `workers` workers with no bound on its queue.
fn unbounded(workers: usize) -> flock::Pool {
    flock::Pool::builder()
        .workers(workers)
        .capacity(usize::MAX)
        .build()
        .expect("pool")
}

fn drain(workers: usize, us: u64) {
    // Empty bodies: 2,000,000 tasks; bodies that spin `us` µs: 200,000 (cpu-1us's count).
    let n = if us == 0 { 2_000_000 } else { CPU_TASKS };
    if us > 0 {
        common::spins_per_us();
    }
    let pool = unbounded(workers);
    let per_task: Vec<f64> = (0..9)
        .map(|_| {
            pool.pause();
            for _ in 0..n {
                pool.submit(move || {
                    common::cpu_work(us);
                    HITS.with(|h| h.set(h.get() + 1))
                })
                .expect("submit");
            }
            let t = Instant::now();
            pool.resume();
            pool.wait().expect("wait");
            t.elapsed().as_secs_f64() * 1e9 / n as f64
        })
        .collect();
    println!(
        "drain, {workers} worker(s), {us} µs bodies: {:.1} ns a task (median of 9; min {:.1}, max {:.1}; the bodies alone, split evenly: {:.1})",
        median(per_task.clone()),
        per_task.iter().copied().fold(f64::MAX, f64::min),
        per_task.iter().copied().fold(0.0, f64::max),
        us as f64 * 1e3 / workers as f64,
    );
}

/// `own`: `bulk-1Mt-own`'s per-task loop (1,000,000 submits of a one-word closure that bumps
/// its worker's own counter: no line shared between tasks) on the default pool, 9 runs.
fn own() {
    let pool = flock::Pool::new();
    let per_task: Vec<f64> = (0..9)
        .map(|_| {
            let n = 1_000_000;
            common::workloads::bulk_own_each(&pool, n).as_secs_f64() * 1e9 / n as f64
        })
        .collect();
    println!(
        "own, {} workers: {:.1} ns a task (median of 9; min {:.1}, max {:.1})",
        pool.workers(),
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

/// Per thread alive at `after`, by thread id: the CPU nanoseconds and context switches it
/// spent since `before` (all of them for a thread started since).
fn usage_between(
    before: &HashMap<u64, (u64, u64)>,
    after: &HashMap<u64, (u64, u64)>,
) -> Vec<(u64, u64, u64)> {
    let mut spent: Vec<_> = after
        .iter()
        .map(|(&tid, &(ns, sw))| {
            let (ns0, sw0) = before.get(&tid).copied().unwrap_or((0, 0));
            (tid, ns.saturating_sub(ns0), sw.saturating_sub(sw0))
        })
        .collect();
    spent.sort_unstable();
    spent
}

/// `drain_probe one W`: 1u-1Mt's loop (one outside thread, 1,000,000 tasks that bump a
/// counter held through an `Arc`, then `wait`) on an unbounded pool of `W` workers; prints
/// ns a task (median of 9), then each thread's CPU time and context switches over the 9
/// runs, and each worker's tasks run and parks.
fn one(workers: usize, shared_body: bool) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let n = 1_000_000;
    let pool = unbounded(workers);
    let line_before = line_ns();
    let before = common::thread_usage(true);
    let stats0 = pool.stats();
    let per_task: Vec<f64> = (0..9)
        .map(|_| {
            let hits = Arc::new(AtomicU64::new(0));
            let t = Instant::now();
            for _ in 0..n {
                if shared_body {
                    let h = hits.clone();
                    pool.submit(move || {
                        h.fetch_add(1, Ordering::Relaxed);
                    })
                    .expect("submit");
                } else {
                    pool.submit(|| HITS.with(|h| h.set(h.get() + 1)))
                        .expect("submit");
                }
            }
            pool.wait().expect("wait");
            let took = t.elapsed().as_secs_f64() * 1e9 / n as f64;
            if shared_body {
                assert_eq!(hits.load(Ordering::Relaxed), n as u64);
            }
            took
        })
        .collect();
    let after = common::thread_usage(true);
    let stats1 = pool.stats();
    println!(
        "one submitter, {workers} worker(s): {:.1} ns a task (median of 9; min {:.1}, max {:.1}) | line {line_before}, {} ns",
        median(per_task.clone()),
        per_task.iter().copied().fold(f64::MAX, f64::min),
        per_task.iter().copied().fold(0.0, f64::max),
        line_ns(),
    );
    for (tid, ns, switches) in usage_between(&before, &after) {
        println!(
            "  thread {tid:>8}: {:.1} ms of CPU, {switches} context switches",
            ns as f64 / 1e6
        );
    }
    for (w0, w1) in stats0.per_worker.iter().zip(&stats1.per_worker) {
        println!(
            "  worker {}: ran {}, stole {}, parked {}",
            w1.index,
            w1.executed - w0.executed,
            w1.stolen - w0.stolen,
            w1.parks - w0.parks
        );
    }
}

/// `drain_probe cpu-stats W [US...]`: `cpu-1us`'s loop (200,000 tasks from one outside
/// thread, each spinning US µs and hitting the shared counter) on flock with the defaults and
/// W workers (0: one per CPU), 5 runs per US (default: 1, then 0), with what the pool counted
/// meanwhile (parks and wake-ups per 1,000 tasks) and what the kernel says of the submitting
/// thread: its CPU, the time it was runnable but waited for a CPU (schedstat), and its
/// voluntary (blocked) and involuntary (preempted) context switches. Says whether one outside
/// thread bounds the run, and whether for lack of a CPU.
fn cpu_stats(workers: usize, us: &[u64]) {
    use common::peers::Flock;
    use common::workloads::cpu_tasks;
    // (CPU ns, runnable-but-waiting ns, voluntary, involuntary switches) of this thread.
    fn me() -> (u64, u64, u64, u64) {
        let sched = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
        let mut f = sched
            .split_whitespace()
            .map(|v| v.parse::<u64>().unwrap_or(0));
        let (cpu, wait) = (f.next().unwrap_or(0), f.next().unwrap_or(0));
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
        let field = |name: &str| common::status_field(&status, name);
        (
            cpu,
            wait,
            field("voluntary_ctxt_switches"),
            field("nonvoluntary_ctxt_switches"),
        )
    }
    common::spins_per_us();
    let flock = if workers == 0 {
        Flock::new()
    } else {
        Flock::with_workers(workers)
    };
    let workers = flock.pool.stats().workers;
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    for &us in us {
        let seq = cpu_tasks_sequential(CPU_TASKS, us).as_secs_f64();
        for _ in 0..5 {
            let s0 = flock.pool.stats();
            let m0 = me();
            let wall = cpu_tasks(&flock, CPU_TASKS, us);
            let m1 = me();
            let s1 = flock.pool.stats();
            let k = CPU_TASKS as f64 / 1000.0;
            println!(
                "{workers} workers on {cpus} CPUs, {us} µs bodies: {:.1} ns a task ({:.2} M/s, {:.0}% of the {workers}-worker ideal); submitter: CPU {:.1} ms, waited for a CPU {:.1} ms, of {:.1} ms wall, switches {} voluntary {} involuntary; per 1,000 tasks: {:.1} parks, {:.1} wake-ups",
                wall.as_secs_f64() * 1e9 / CPU_TASKS as f64,
                CPU_TASKS as f64 / wall.as_secs_f64() / 1e6,
                seq / workers as f64 / wall.as_secs_f64() * 100.0,
                (m1.0 - m0.0) as f64 / 1e6,
                (m1.1 - m0.1) as f64 / 1e6,
                wall.as_secs_f64() * 1e3,
                m1.2 - m0.2,
                m1.3 - m0.3,
                (s1.parks - s0.parks) as f64 / k,
                (s1.wakeups - s0.wakeups) as f64 / k,
            );
        }
    }
}

/// `drain_probe cpu KIND...`: `cpu-1us` (200,000 tasks of about 1 µs from one outside
/// thread) on the bench's pools (`flock`, `flock-unbounded`, `crossbeam-channel`, `rayon`),
/// 5 rounds, each round the sequential run and then every pool's run, so that the machine's
/// drift hits all alike. Prints, per run, the efficiency (sequential ÷ workers ÷ the pool's
/// wall time) and where the CPUs' time went: the bodies (the sequential time), the
/// submitting thread's CPU, the workers' CPU beyond the bodies, time no thread of ours ran,
/// and the context switches of the submitter and of the workers.
fn cpu(kinds: &[String]) {
    use common::peers::Kind;
    common::spins_per_us();
    let pools: Vec<_> = kinds
        .iter()
        .map(|k| match k.as_str() {
            "flock" => Kind::Flock.make(),
            "flock-unbounded" => Kind::FlockUnbounded.make(),
            "channel" | "crossbeam-channel" => Kind::Channel.make(),
            "rayon" => Kind::Rayon.make(),
            other => panic!("cpu: no pool {other}"),
        })
        .collect();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get()) as f64;
    let me = common::this_thread_id();
    let mut effs = vec![Vec::new(); pools.len()];
    for _ in 0..5 {
        let seq = cpu_tasks_sequential(CPU_TASKS, CPU_TASK_US).as_secs_f64() * 1e3;
        for (pool, eff) in pools.iter().zip(&mut effs) {
            let before = common::thread_usage(true);
            let wall = pool.cpu_tasks(CPU_TASKS, CPU_TASK_US).as_secs_f64() * 1e3;
            let after = common::thread_usage(true);
            let (mut submitter, mut workers) = (0.0, 0.0);
            let (mut submitter_switches, mut worker_switches) = (0, 0);
            for (tid, ns, switches) in usage_between(&before, &after) {
                let ms = ns as f64 / 1e6;
                if Some(tid) == me {
                    submitter += ms;
                    submitter_switches += switches;
                } else {
                    workers += ms;
                    worker_switches += switches;
                }
            }
            eff.push(seq / cpus / wall);
            println!(
                "{:>17}: {:.0}% of ideal; of {:.1} ms ({cpus} CPUs x {wall:.1} ms): bodies {seq:.1}, submitter {submitter:.1}, workers beyond the bodies {:.1}, unused {:.1}; context switches: submitter {submitter_switches}, workers {worker_switches}",
                pool.name(),
                seq / cpus / wall * 100.0,
                cpus * wall,
                workers - seq,
                cpus * wall - submitter - workers,
            );
        }
    }
    for (pool, eff) in pools.iter().zip(effs) {
        println!(
            "{:>17}: median {:.0}% of ideal",
            pool.name(),
            median(eff) * 100.0
        );
    }
}

/// `drain_probe ideal`: `cpu-1us` with no pool in the way, its ceiling on this machine. The
/// outside thread clones the shared `Arc` for each of the 200,000 tasks, as the workload
/// does, and publishes it in slot `i` (a Release store); two threads run the even and the
/// odd slots (no shared head: each knows its slots), each body followed by the workload's
/// hit on the shared counter and the `Arc`'s drop. What is left of the ideal split is the
/// submitting thread's CPU and the body's shared cache line, which any pool pays too.
fn ideal() {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Arc;
    common::spins_per_us();
    let n = CPU_TASKS;
    let effs: Vec<f64> = (0..5)
        .map(|_| {
            let seq = cpu_tasks_sequential(n, CPU_TASK_US).as_secs_f64();
            let hits = Arc::new(AtomicU64::new(0));
            let slots: Arc<Vec<AtomicUsize>> =
                Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect());
            let go = Arc::new(std::sync::Barrier::new(3));
            let runners: Vec<_> = (0..2)
                .map(|w| {
                    let (slots, go) = (slots.clone(), go.clone());
                    std::thread::spawn(move || {
                        go.wait();
                        for i in (w..n).step_by(2) {
                            let mut spins = 0u32;
                            let p = loop {
                                let p = slots[i].load(Ordering::Acquire);
                                if p != 0 {
                                    break p;
                                }
                                spins += 1;
                                if spins > 64 {
                                    std::thread::yield_now();
                                } else {
                                    std::hint::spin_loop();
                                }
                            };
                            common::cpu_work(CPU_TASK_US);
                            // SAFETY: `p` came from `Arc::into_raw` below, taken once.
                            let h = unsafe { Arc::from_raw(p as *const AtomicU64) };
                            h.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            go.wait();
            let t = Instant::now();
            for slot in slots.iter() {
                slot.store(Arc::into_raw(hits.clone()) as usize, Ordering::Release);
            }
            for r in runners {
                r.join().expect("runner");
            }
            let wall = t.elapsed().as_secs_f64();
            assert_eq!(hits.load(Ordering::Relaxed), n as u64);
            seq / 2.0 / wall
        })
        .collect();
    println!(
        "no pool, one outside thread handing out the tasks: {:.0}% of the ideal split (median of 5; min {:.0}%, max {:.0}%)",
        median(effs.clone()) * 100.0,
        effs.iter().copied().fold(f64::MAX, f64::min) * 100.0,
        effs.iter().copied().fold(0.0, f64::max) * 100.0,
    );
}

/// `drain_probe one-modes POOLS`: see the module doc.
fn one_modes(pools: usize) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    // SAFETY: gettid has no preconditions and touches no memory of ours.
    let me = unsafe { libc::gettid() } as u64;
    for p in 0..pools {
        let pool = flock::Pool::builder()
            .workers(common::workers())
            .build()
            .expect("pool");
        for _ in 0..6 {
            let line_before = line_ns();
            let before = common::tasks(true);
            let ran0: Vec<u64> = pool.stats().per_worker.iter().map(|w| w.executed).collect();
            let hits = Arc::new(AtomicU64::new(0));
            let t = Instant::now();
            for _ in 0..1_000_000 {
                let h = hits.clone();
                pool.submit(move || {
                    h.fetch_add(1, Ordering::Relaxed);
                })
                .expect("submit");
            }
            pool.wait().expect("wait");
            let wall = t.elapsed().as_secs_f64();
            let ran: Vec<u64> = pool.stats().per_worker.iter().map(|w| w.executed).collect();
            let after = common::tasks(true);
            let line_after = line_ns();
            // 1,000,000 tasks: millions a second is one over the seconds.
            let mut line = format!(
                "pool {p}: {:5.1} M/s | line {line_before}, {line_after} ns",
                1.0 / wall
            );
            for t in after {
                if t.tid != me && !t.name.starts_with("flock-worker") {
                    continue;
                }
                let (ns0, vol0, invol0) = before
                    .iter()
                    .find(|b| b.tid == t.tid)
                    .map_or((0, 0, 0), |b| (b.cpu_ns, b.voluntary, b.involuntary));
                let who = if t.tid == me {
                    "submitter".to_string()
                } else {
                    // `flock-worker-N`: the share of the run's tasks worker N ran.
                    let i: usize = t
                        .name
                        .rsplit('-')
                        .next()
                        .and_then(|i| i.parse().ok())
                        .unwrap_or(0);
                    let ran = ran.get(i).zip(ran0.get(i)).map_or(0, |(a, b)| a - b);
                    let share = ran as f64 / 1e4;
                    format!("{} ran {share:.0}% of the tasks,", t.name)
                };
                line += &format!(
                    " | {who} {:3.0}% cpu{} vol {} invol {}",
                    (t.cpu_ns - ns0) as f64 / (wall * 1e9) * 100.0,
                    t.last_cpu,
                    t.voluntary - vol0,
                    t.involuntary - invol0
                );
            }
            println!("{line}");
        }
    }
}

/// `common::line_round_trip_ns`, as text ("?" where it cannot be measured).
fn line_ns() -> String {
    common::line_round_trip_ns().map_or("?".into(), |ns| format!("{ns:.0}"))
}

/// `drain_probe one-ideal ROUNDS`: see the module doc.
fn one_ideal(rounds: usize) {
    use common::peers::Kind;
    use common::workloads::ONE_SUBMITTER_TASKS as N;
    let pools: Vec<_> = [Kind::Flock, Kind::Channel, Kind::Rayon]
        .iter()
        .map(|k| k.make())
        .collect();
    let names = [
        "no pool, 1 runner",
        "no pool, 2 runners",
        "flock",
        "crossbeam-channel",
        "rayon",
    ];
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for round in 0..rounds {
        let line_before = line_ns();
        for runners in [1, 2] {
            let took = common::workloads::one_submitter_no_pool(runners, N);
            ns[runners - 1].push(took.as_secs_f64() * 1e9 / N as f64);
        }
        for (i, p) in pools.iter().enumerate() {
            ns[2 + i].push(p.one_submitter(N).as_secs_f64() * 1e9 / N as f64);
        }
        let row: Vec<String> = ns.iter().map(|v| format!("{:.1}", v[round])).collect();
        println!(
            "round {round}: {} (line {line_before}, {} ns)",
            row.join(", "),
            line_ns()
        );
    }
    let med: Vec<f64> = ns.iter().map(|v| median(v.clone())).collect();
    for (name, m) in names.iter().zip(&med) {
        println!("  {name:<20} {m:>6.1} ns a task (median of {rounds})");
    }
    let plain = med[0].min(med[1]);
    println!(
        "  1u-1Mt's targets need flock at ≤ {:.1} ns (channel ÷ 3) and ≤ {:.1} ns (rayon ÷ 5); \
         the pool-less hand-off took {plain:.1} ns, flock {:.2}× it",
        med[3] / 3.0,
        med[4] / 5.0,
        med[2] / plain
    );
}

/// `drain_probe fib ROUNDS W`: see the module doc.
/// `fenced`: flock's pool built with `membarrier(false)` (every push fenced).
fn fib(rounds: usize, w: usize, fenced: bool) {
    use common::workloads::{fib_joins, fib_spent, FibRun, FibSpent, FIB_N};
    let joins = fib_joins(FIB_N) as f64;
    let flock = flock::Pool::builder()
        .workers(w)
        .membarrier(!fenced)
        .build()
        .expect("flock");
    println!("flock uses the membarrier: {}", flock.uses_membarrier());
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(w)
        .build()
        .expect("rayon");
    let run = |on| {
        // Every thread of ours asleep first, as in bench_report.
        std::thread::sleep(std::time::Duration::from_millis(20));
        fib_spent(on, FIB_N)
    };
    let (mut by_wall, mut by_cpu) = (Vec::new(), Vec::new());
    println!("round: seq ms | flock wall ms, CPU ms, ns/join by wall × W, by CPU | rayon likewise | ratios by wall, by CPU");
    for r in 0..rounds {
        let s = run(FibRun::Seq);
        let [fl, ra] = [run(FibRun::Flock(&flock)), run(FibRun::Rayon(&rayon))];
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let wall =
            |x: FibSpent| (x.wall.as_secs_f64() * w as f64 - s.wall.as_secs_f64()) * 1e9 / joins;
        let cpu = |x: FibSpent| x.cpu.saturating_sub(s.cpu).as_secs_f64() * 1e9 / joins;
        by_wall.push(wall(fl) / wall(ra));
        by_cpu.push(cpu(fl) / cpu(ra));
        println!(
            "{r:>3}: {:.2} | {:.2}, {:.2}, {:.1}, {:.1} | {:.2}, {:.2}, {:.1}, {:.1} | {:.2}, {:.2}",
            ms(s.wall),
            ms(fl.wall),
            ms(fl.cpu),
            wall(fl),
            cpu(fl),
            ms(ra.wall),
            ms(ra.cpu),
            wall(ra),
            cpu(ra),
            wall(fl) / wall(ra),
            cpu(fl) / cpu(ra)
        );
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    println!(
        "median ratio flock ÷ rayon: by wall × workers {:.2}, by CPU {:.2}",
        med(&mut by_wall),
        med(&mut by_cpu)
    );
}

/// `drain_probe qsort ROUNDS W`: `qsort` on `W` workers in interleaved rounds: flock as
/// the report builds it, flock with `membarrier(false)` (its parks interrupt no running
/// thread), rayon; each run's wall time, and flock's parks and steals a run; the medians.
fn qsort(rounds: usize, w: usize) {
    use common::workloads::{qsort_input, time_qsort_flock, time_qsort_rayon, QSORT_LEN};
    let input = qsort_input(QSORT_LEN);
    let pools: Vec<flock::Pool> = [true, false]
        .map(|m| {
            flock::Pool::builder()
                .workers(w)
                .membarrier(m)
                .build()
                .expect("flock")
        })
        .into();
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(w)
        .build()
        .expect("rayon");
    let mut times = vec![Vec::new(); 4];
    let (mut parks, mut stolen) = ([0u64; 2], [0u64; 2]);
    for _ in 0..rounds {
        for (i, pool) in pools.iter().enumerate() {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let s0 = pool.stats();
            times[i].push(time_qsort_flock(pool, &input).as_secs_f64() * 1e3);
            let s1 = pool.stats();
            parks[i] += s1.parks - s0.parks;
            stolen[i] += s1.stolen - s0.stolen;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        times[2].push(time_qsort_rayon(&rayon, &input).as_secs_f64() * 1e3);
        let (first, whole) = common::workloads::time_qsort_sequential(&input);
        let (first, whole) = (first.as_secs_f64() * 1e3, whole.as_secs_f64() * 1e3);
        times[3].push(first + (whole - first) / w as f64);
    }
    let r = rounds as f64;
    for (i, name) in [
        "flock",
        "flock membarrier(false)",
        "rayon",
        "bound (first partition + rest / W)",
    ]
    .iter()
    .enumerate()
    {
        let extra = if i < 2 {
            format!(
                "; {:.0} parks, {:.0} steals a run",
                parks[i] as f64 / r,
                stolen[i] as f64 / r
            )
        } else {
            String::new()
        };
        println!(
            "qsort, {w} workers, {name}: median {:.2} ms (min {:.2}, max {:.2}){extra}",
            median(times[i].clone()),
            times[i].iter().copied().fold(f64::MAX, f64::min),
            times[i].iter().copied().fold(0.0, f64::max),
        );
    }
}

/// The bystander's count rate while `kind` (`none`, `flock`, `flock-nospin`, `flock-fenced`,
/// `channel`) runs one empty task every `us` µs for 2 s; and flock's parks meanwhile.
fn bystander_round(kind: &str, us: u64) -> (f64, u64, Option<u64>) {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let counter = std::thread::spawn(move || {
        let start = Instant::now();
        let mut n = 0u64;
        while !s.load(Relaxed) {
            n = std::hint::black_box(n + 1);
        }
        n as f64 / start.elapsed().as_secs_f64()
    });
    let pool = kind.starts_with("flock").then(|| {
        let builder = flock::Pool::builder().workers(1).capacity(usize::MAX);
        // `flock-nospin`: parks as soon as it finds nothing, as the channel pool's worker
        // blocks, so the two differ by the park itself.
        // `flock-fenced`: `membarrier(false)`, its parks interrupt no other thread.
        let builder = match kind {
            "flock-nospin" => builder.spin_limit(0),
            "flock-fenced" => builder.membarrier(false),
            _ => builder,
        };
        builder.build().expect("pool")
    });
    let (tx, rx) = crossbeam_channel::unbounded::<()>();
    let channel_worker =
        (kind == "channel").then(|| std::thread::spawn(move || while rx.recv().is_ok() {}));
    let parks_before = pool.as_ref().map_or(0, |p| p.stats().parks);
    let calls_before = call_interrupts();
    let start = Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(2) {
        match (&pool, kind) {
            (Some(p), _) => p.submit(|| ()).expect("submit"),
            (None, "channel") => tx.send(()).expect("send"),
            _ => {}
        }
        std::thread::sleep(std::time::Duration::from_micros(us));
    }
    let parks = pool.as_ref().map_or(0, |p| p.stats().parks - parks_before);
    let calls = call_interrupts().zip(calls_before).map(|(a, b)| a - b);
    stop.store(true, Relaxed);
    drop(tx);
    if let Some(w) = channel_worker {
        w.join().expect("channel worker");
    }
    (counter.join().expect("bystander"), parks, calls)
}

/// Function-call interrupts (IPIs; a `membarrier` sends one to each CPU it interrupts) taken
/// by all CPUs so far, from `/proc/interrupts`' `CAL` row; `None` where there is none.
fn call_interrupts() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/interrupts").ok()?;
    let row = text.lines().find(|l| l.trim_start().starts_with("CAL:"))?;
    Some(
        row.split_whitespace()
            .skip(1)
            .map_while(|f| f.parse::<u64>().ok())
            .sum(),
    )
}

fn bystander(us: u64) {
    for round in 0..3 {
        for kind in ["none", "flock", "flock-nospin", "flock-fenced", "channel"] {
            let (rate, parks, calls) = bystander_round(kind, us);
            let parks = if kind.starts_with("flock") {
                format!(", {parks} parks")
            } else {
                String::new()
            };
            let calls = calls.map_or(String::new(), |c| format!(", {c} call interrupts"));
            println!(
                "round {round}, {kind:>12}: bystander {:.0} M counts/s{parks}{calls}",
                rate / 1e6
            );
        }
    }
}

/// Steals a run of the workloads built on `join` and `scope`, on one pool of `workers`, and
/// the share of the jobs pushed onto a worker's own deque that another worker stole.
fn steals(runs: usize, workers: usize) {
    use common::workloads::{
        qsort_input, spawn_tree_flock_scope, time_fib_flock, time_qsort_flock, FIB_N, QSORT_LEN,
        TREE_LEAVES,
    };
    let pool = flock::Pool::builder()
        .workers(workers)
        .build()
        .expect("flock");
    let input = qsort_input(QSORT_LEN);
    let workloads: [(&str, &dyn Fn() -> std::time::Duration); 3] = [
        ("fib-join", &|| time_fib_flock(&pool, FIB_N)),
        ("qsort", &|| time_qsort_flock(&pool, &input)),
        ("spawn-tree", &|| spawn_tree_flock_scope(&pool, TREE_LEAVES)),
    ];
    for (name, run) in workloads {
        let before = pool.stats();
        let mut times: Vec<f64> = (0..runs).map(|_| run().as_secs_f64() * 1e3).collect();
        let after = pool.stats();
        let (stolen, pushed) = (
            after.stolen - before.stolen,
            after.local_pushes - before.local_pushes,
        );
        times.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{name}, {workers} workers: {:.1} steals a run ({stolen} in {runs}) of {:.0} local pushes a run ({:.4}% stolen), median run {:.2} ms",
            stolen as f64 / runs as f64,
            pushed as f64 / runs as f64,
            stolen as f64 * 100.0 / pushed.max(1) as f64,
            times[times.len() / 2]
        );
    }
}

/// `drain_probe wake ROUNDS`: `wake-latency`'s p50 for the bare futex wake, flock and the
/// channel pool, 100 samples each, in turn, `ROUNDS` times.
fn wake(rounds: usize) {
    use common::peers::{ChannelPool, Flock};
    use common::workloads::{futex_wake_latency, wake_latency};
    let p50 = |mut v: Vec<std::time::Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e6
    };
    let (flock, channel) = (Flock::new(), ChannelPool::new());
    for r in 0..rounds {
        let futex = p50(futex_wake_latency(100));
        let fl = p50(wake_latency(&flock, 100));
        let ch = p50(wake_latency(&channel, 100));
        println!(
            "round {r}: p50 futex {futex:.1} µs, flock {fl:.1} µs ({:.2}×), channel {ch:.1} µs ({:.2}×)",
            fl / futex,
            ch / futex
        );
    }
}

/// `drain_probe many KIND RUNS`: `100u-10Kt` (100 outside threads, 10,000 tasks each) `RUNS`
/// times on one pool of `KIND` (`flock`, `flock-unbounded` or `channel`), the median rate
/// printed; a loop to run under `perf record`.
fn many(kind: &str, runs: usize) {
    use common::peers::{ChannelPool, Flock, Runner};
    use common::workloads::many_submitters;
    fn median_rate<R: Runner>(pool: &R, runs: usize) -> f64 {
        let mut took: Vec<f64> = (0..runs)
            .map(|_| many_submitters(pool, 100, 10_000).as_secs_f64())
            .collect();
        took.sort_by(|a, b| a.total_cmp(b));
        1.0 / took[took.len() / 2] // a million tasks a run: M tasks/s
    }
    let rate = match kind {
        "flock" => median_rate(&Flock::new(), runs),
        "flock-unbounded" => median_rate(&Flock::unbounded(), runs),
        "channel" => median_rate(&ChannelPool::new(), runs),
        other => panic!("unknown pool {other}"),
    };
    println!("{kind}: median {rate:.2} M tasks/s over {runs} runs");
}

/// ns per iteration of `body` over 10M iterations, median of 5.
#[cfg(target_arch = "x86_64")]
fn per_iteration(mut body: impl FnMut(u64)) -> f64 {
    const N: u64 = 10_000_000;
    median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                (0..N).for_each(&mut body);
                t.elapsed().as_nanos() as f64 / N as f64
            })
            .collect(),
    )
}

#[cfg(target_arch = "x86_64")]
fn clock() {
    use std::hint::black_box;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    // SAFETY (each `_rdtsc` below): `rdtsc` exists on every x86-64 CPU and touches no memory.
    let tsc = || unsafe { std::arch::x86_64::_rdtsc() };
    let counter = AtomicU64::new(0);
    let mut hist = [0u64; 64];
    let alone = per_iteration(|_| {
        black_box(tsc());
    });
    let locked = per_iteration(|i| {
        counter.fetch_add(1, Relaxed);
        black_box(i);
    });
    let both = per_iteration(|_| {
        counter.fetch_add(1, Relaxed);
        black_box(tsc());
    });
    let bucketed = per_iteration(|_| {
        counter.fetch_add(1, Relaxed);
        hist[(tsc() >> 3) as usize & 63] += 1;
    });
    black_box(&hist);
    println!(
        "rdtsc alone {alone:.2} ns; locked add alone {locked:.2} ns; locked add then rdtsc {both:.2} ns \
         (the reading adds {:.2} ns); and a store indexed by the reading {bucketed:.2} ns",
        both - locked
    );
}

#[cfg(not(target_arch = "x86_64"))]
fn clock() {
    println!("drain_probe clock: x86-64 only");
}

/// A task handed to `busy_samples`' submit.
type Task = Box<dyn FnOnce() + Send>;

/// One `busy-submit` sample set: `samples` times, sleep `WAKE_IDLE`, then `submit` a task
/// that reports its start through the closure `submit` is given, and spin until it starts.
/// Returns the start latencies in µs and how many tasks ran on the submitter's CPU.
fn busy_samples(samples: usize, submit: impl Fn(Task)) -> (Vec<f64>, usize) {
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
    use std::sync::Arc;
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = || unsafe { libc::sched_getcpu() };
    let mut took = Vec::with_capacity(samples);
    let mut on_submitter = 0;
    for _ in 0..samples {
        std::thread::sleep(common::workloads::WAKE_IDLE);
        let started = Arc::new(AtomicU64::new(0));
        let ran_on = Arc::new(AtomicI64::new(-1));
        let (s, r) = (started.clone(), ran_on.clone());
        let t0 = Instant::now();
        let here = cpu();
        submit(Box::new(move || {
            r.store(i64::from(cpu()), Ordering::Relaxed);
            // + 1: a start in the same nanosecond still reads as started.
            s.store(t0.elapsed().as_nanos() as u64 + 1, Ordering::Release);
        }));
        while started.load(Ordering::Acquire) == 0 {
            std::hint::spin_loop();
        }
        took.push(started.load(Ordering::Relaxed) as f64 / 1e3);
        on_submitter += usize::from(ran_on.load(Ordering::Relaxed) == i64::from(here));
    }
    (took, on_submitter)
}

/// `drain_probe busy-submit [SAMPLES]`: see the module doc.
fn busy_submit(samples: usize) {
    use common::peers::{ChannelPool, Flock, Rayon, Runner, Threadpool};
    fn pool<R: Runner>(name: &str, pool: R, samples: usize) {
        let (took, on) = busy_samples(samples, |task| pool.execute(task));
        line(name, took, on, samples);
    }
    fn line(name: &str, mut took: Vec<f64>, on: usize, samples: usize) {
        took.sort_by(f64::total_cmp);
        println!(
            "{name:<22} start p50 {:8.1} µs, p90 {:8.1} µs; ran on the submitter's CPU {on} of {samples}",
            took[samples / 2],
            took[samples * 9 / 10]
        );
    }
    println!(
        "one task into a parked pool ({} ms idle) while the submitter keeps running; {} CPUs here",
        common::workloads::WAKE_IDLE.as_millis(),
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    for (name, builder) in [
        ("flock", flock::Pool::builder()),
        ("flock spin_limit(7)", flock::Pool::builder().spin_limit(7)),
        ("flock spin_limit(0)", flock::Pool::builder().spin_limit(0)),
        ("flock pinned", flock::Pool::builder().pin_workers(true)),
    ] {
        let built = builder.workers(common::workers()).build().expect("pool");
        pool(name, Flock::from_pool(built, "flock"), samples);
    }
    pool("rayon", Rayon::new(), samples);
    pool("crossbeam-channel", ChannelPool::new(), samples);
    pool("threadpool", Threadpool::new(), samples);
    // The bare futex: a thread parked in `std::thread::park`, given one job at a time.
    let job: std::sync::Arc<std::sync::Mutex<Option<Task>>> = Default::default();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (j, st) = (job.clone(), stop.clone());
    let sleeper = std::thread::spawn(move || loop {
        // Taken out first, so the lock is not held while the task runs.
        let task = j.lock().unwrap().take();
        if let Some(task) = task {
            task();
            continue;
        }
        if st.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        std::thread::park();
    });
    let (took, on) = busy_samples(samples, |task| {
        *job.lock().unwrap() = Some(task);
        sleeper.thread().unpark();
    });
    line("bare futex", took, on, samples);
    stop.store(true, std::sync::atomic::Ordering::Release);
    sleeper.thread().unpark();
    sleeper.join().expect("sleeper");
}

/// `drain_probe cold [IDLE_US...]`: see the module doc.
fn cold(idles: &[u64]) {
    use std::hint::black_box;
    // Volatile loads, so none is folded away or hoisted out of the timed stretch.
    fn touch(buf: &[u8], base: usize, lines: usize, stride: usize) -> u8 {
        (0..lines).fold(0u8, |acc, i| {
            // SAFETY: `base + i * stride` is inside `buf` (the callers' sets fit in it).
            acc.wrapping_add(unsafe { std::ptr::read_volatile(&buf[base + i * stride]) })
        })
    }
    const SETS: [(usize, usize); 6] = [
        (1, 64),
        (8, 64),
        (8, 4096),
        (32, 64),
        (32, 4096),
        (32, 1 << 20),
    ];
    const SAMPLES: usize = 200;
    // Written once, so every page is backed before the first sample.
    let buf = vec![1u8; 256 << 20];
    println!("lines touched after an idle sleep: median ns of {SAMPLES} samples, cold (first touch after the sleep) / warm (the same loads at once again)");
    for &idle in idles {
        let mut line = format!("idle {idle:>6} µs:");
        for (lines, stride) in SETS {
            let (mut cold, mut warm) = (Vec::new(), Vec::new());
            for s in 0..SAMPLES {
                // Seven sets 4 MiB apart, in turn, so that no sample reuses the one before.
                let base = (s % 7) << 22;
                black_box(touch(&buf, base, lines, stride));
                std::thread::sleep(std::time::Duration::from_micros(idle));
                // The first clock reading after a sleep is itself cold: not in the sample.
                black_box(Instant::now());
                let t1 = Instant::now();
                black_box(touch(&buf, base, lines, stride));
                let t2 = Instant::now();
                black_box(touch(&buf, base, lines, stride));
                let t3 = Instant::now();
                cold.push((t2 - t1).as_nanos() as f64);
                warm.push((t3 - t2).as_nanos() as f64);
            }
            line += &format!(
                " | {lines} × {stride} B: {:.0} / {:.0}",
                median(cold),
                median(warm)
            );
        }
        println!("{line}");
    }
}

// ----- join-events: per-join event counts at several worker counts (issue 41) ----------

/// A counter of a `Stats` snapshot.
type StatOf = fn(&flock::Stats) -> u64;

/// The `Stats` counters `join-events` reads, in its table's order.
const JOIN_EVENTS: [(&str, StatOf); 10] = [
    ("searches", |s| s.searches),
    ("stolen", |s| s.stolen),
    ("victims", |s| s.victims_scanned),
    ("failed steals", |s| s.failed_steals),
    ("push→sleeper", |s| s.local_push_wake_checks),
    ("park tries", |s| s.park_attempts),
    ("parks", |s| s.parks),
    ("wake-ups", |s| s.wakeups),
    ("sleep-word RMW", |s| s.sleep_word_writes),
    ("local pushes", |s| s.local_pushes),
];

/// `drain_probe join-events [--runs RUNS] W...`: see the module doc.
fn join_events(runs: usize, workers: &[usize]) {
    use common::workloads::{fib_joins, FIB_N};
    let per = 1e6 / (fib_joins(FIB_N) * runs) as f64;
    println!(
        "fib({FIB_N}) through join, {runs} runs after one warm-up, per 1,000,000 joins ({} joins a run); {} CPUs here",
        fib_joins(FIB_N),
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    let mut head = String::from("| pool | W |");
    for (name, _) in JOIN_EVENTS {
        head += &format!(" {name} |");
    }
    head += " ctx switches vol / invol | futex wait | futex wake | membarrier | instructions a join | locked a join |";
    println!("{head}");
    println!("|{}", "---|".repeat(JOIN_EVENTS.len() + 8));
    for &w in workers {
        let (counts, switches) = flock_join_counts(runs, w);
        let mut line = format!("| flock | {w} |");
        for c in counts {
            line += &format!(" {:.1} |", c as f64 * per);
        }
        line += &switch_cell(switches, per);
        line += &strace_cells("flock", runs, w, per);
        line += &callgrind_cells("flock", w);
        println!("{line}");
        let mut line = format!("| rayon | {w} |");
        line += &" – |".repeat(JOIN_EVENTS.len());
        line += &switch_cell(rayon_join_switches(runs, w), per);
        line += &strace_cells("rayon", runs, w, per);
        line += &callgrind_cells("rayon", w);
        println!("{line}");
    }
}

/// The `JOIN_EVENTS` counters over `runs` runs of fib on a pool of `w` workers, and the
/// process's context switches over them ([`switches`]).
fn flock_join_counts(runs: usize, w: usize) -> (Vec<u64>, [u64; 2]) {
    use common::workloads::{time_fib_flock, FIB_N};
    let pool = flock::Pool::builder().workers(w).build().expect("flock");
    time_fib_flock(&pool, FIB_N);
    let (before, s0) = (pool.stats(), switches());
    for _ in 0..runs {
        time_fib_flock(&pool, FIB_N);
    }
    let (s1, after) = (switches(), pool.stats());
    let counts = JOIN_EVENTS
        .iter()
        .map(|(_, f)| f(&after) - f(&before))
        .collect();
    (counts, [s1[0] - s0[0], s1[1] - s0[1]])
}

/// The process's context switches over `runs` runs of fib on a rayon pool of `w` workers,
/// after one warm-up run ([`switches`]).
fn rayon_join_switches(runs: usize, w: usize) -> [u64; 2] {
    use common::workloads::{time_fib_rayon, FIB_N};
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(w)
        .build()
        .expect("rayon");
    time_fib_rayon(&pool, FIB_N);
    let s0 = switches();
    for _ in 0..runs {
        time_fib_rayon(&pool, FIB_N);
    }
    let s1 = switches();
    [s1[0] - s0[0], s1[1] - s0[1]]
}

/// Voluntary and involuntary context switches of every thread of this process so far
/// (`getrusage(RUSAGE_SELF)`: a thread that blocks, e.g. in a futex wait, switches
/// voluntarily; one the scheduler takes the CPU from, involuntarily).
fn switches() -> [u64; 2] {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed struct we own and reads nothing.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    [usage.ru_nvcsw as u64, usage.ru_nivcsw as u64]
}

/// ` vol / invol |` per 1,000,000 joins.
fn switch_cell([vol, invol]: [u64; 2], per: f64) -> String {
    format!(" {:.1} / {:.1} |", vol as f64 * per, invol as f64 * per)
}

/// fib sizes `callgrind_cells` runs: the difference between them is the joins counted.
const INSTR_FIB: [u32; 2] = [20, 23];

/// ` instructions | locked |` a join of fib on `kind` with `w` workers under callgrind
/// (`valgrind --tool=callgrind --collect-bus=yes --fair-sched=yes`, every thread counted):
/// a child process per size of [`INSTR_FIB`], the difference of their totals over the
/// difference of their joins, so that start-up and shutdown cancel. valgrind runs one
/// thread at a time (in turn, with `--fair-sched`), so an idle worker's search runs between
/// the other threads' slices rather than beside them: these are the instructions of that
/// schedule, which grow with the workers as their searches and spins do. `?` cells where
/// valgrind is missing or fails.
fn callgrind_cells(kind: &str, w: usize) -> String {
    use common::workloads::fib_joins;
    let totals = INSTR_FIB.map(|n| callgrind_totals(kind, w, n));
    match totals {
        [Some([ir0, ge0]), Some([ir1, ge1])] => {
            let joins = (fib_joins(INSTR_FIB[1]) - fib_joins(INSTR_FIB[0])) as f64;
            format!(
                " {:.1} | {:.2} |",
                (ir1 as f64 - ir0 as f64) / joins,
                (ge1 as f64 - ge0 as f64) / joins
            )
        }
        _ => " ? | ? |".into(),
    }
}

/// Total instructions (Ir) and locked instructions (Ge) of `join-instr-child KIND W N`
/// under callgrind.
fn callgrind_totals(kind: &str, w: usize, n: u32) -> Option<[u64; 2]> {
    let out = std::env::temp_dir().join(format!(
        "join-instr-{}-{kind}-{w}-{n}.cg",
        std::process::id()
    ));
    let exe = std::env::current_exe().expect("current_exe");
    let status = std::process::Command::new("valgrind")
        .args(["--tool=callgrind", "--collect-bus=yes", "--fair-sched=yes"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .args(["join-instr-child", kind, &w.to_string(), &n.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    let text = match status {
        Ok(s) if s.success() => std::fs::read_to_string(&out).unwrap_or_default(),
        _ => String::new(),
    };
    let _ = std::fs::remove_file(&out);
    // `events: Ir Ge ...` names the columns of `summary: N N ...`.
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|rest| rest.split_whitespace().collect::<Vec<_>>())
    };
    let (events, summary) = (field("events:")?, field("summary:")?);
    let of = |name: &str| {
        let i = events.iter().position(|e| *e == name)?;
        summary.get(i)?.parse().ok()
    };
    Some([of("Ir")?, of("Ge")?])
}

// ----- trickle-events: where a trickle task's CPU goes (issue 41) ---------------------------

/// The `Stats` counters `trickle-events` reads, per task.
const TRICKLE_EVENTS: [(&str, StatOf); 5] = [
    ("searches", |s| s.searches),
    ("failed steals", |s| s.failed_steals),
    ("park tries", |s| s.park_attempts),
    ("parks", |s| s.parks),
    ("wake-ups", |s| s.wakeups),
];

/// The trickle's floor: each task run by the submitting thread itself, between its sleeps.
struct Inline;

impl common::peers::Runner for Inline {
    const WAITS: bool = false;

    fn name(&self) -> &'static str {
        "inline"
    }

    fn execute<F: FnOnce() + Send + 'static>(&self, f: F) {
        f()
    }
}

/// `drain_probe two-way ROUNDS`: see the module doc.
fn two_way(runs: usize) {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    const JOINS: usize = 4000;
    const US: u64 = 50;
    let t0 = Instant::now();
    let now = || t0.elapsed().as_nanos() as u64;
    common::spins_per_us();
    let flock = flock::Pool::builder().workers(2).build().expect("flock");
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("rayon");
    println!(
        "2-way: {JOINS} joins of two {US} µs halves a run, flock and rayon in turn, 2 workers each; \
         µs; halves: mean/median"
    );
    println!("| run | pool | wall a round | first half | second half | steal p50 (mean) | return p50 (mean) | not stolen |");
    println!("|---|---|---|---|---|---|---|---|");
    for run in 0..runs {
        for pool in ["flock", "rayon"] {
            std::thread::sleep(Duration::from_millis(20));
            // Per join: called, first half's start and end, returned (this thread); the
            // second half's start and end (whichever worker ran it).
            let mut mine = vec![[0u64; 4]; JOINS];
            let theirs: Vec<[AtomicU64; 2]> = (0..JOINS)
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                .collect();
            let start = Instant::now();
            macro_rules! rounds {
                ($join:expr) => {
                    for (m, t) in mine.iter_mut().zip(&theirs) {
                        m[0] = now();
                        let ((a0, a1), ()) = $join(
                            || {
                                let a0 = now();
                                common::cpu_work(US);
                                (a0, now())
                            },
                            || {
                                t[0].store(now(), Relaxed);
                                common::cpu_work(US);
                                t[1].store(now(), Relaxed);
                            },
                        );
                        (m[1], m[2], m[3]) = (a0, a1, now());
                    }
                };
            }
            if pool == "flock" {
                flock.install(|| rounds!(|a, b| flock.join(a, b)));
            } else {
                rayon.install(|| rounds!(rayon::join));
            }
            let wall = start.elapsed().as_secs_f64() * 1e6 / JOINS as f64;
            let us = |ns: u64| ns as f64 / 1e3;
            let (mut first, mut second, mut steal, mut ret) = (vec![], vec![], vec![], vec![]);
            let mut inline = 0;
            for (m, t) in mine.iter().zip(&theirs).skip(1) {
                let (b0, b1) = (t[0].load(Relaxed), t[1].load(Relaxed));
                first.push(us(m[2] - m[1]));
                second.push(us(b1 - b0));
                if b0 >= m[2] {
                    // Not stolen: the caller ran it after the first half.
                    inline += 1;
                    continue;
                }
                steal.push(us(b0 - m[0]));
                ret.push(us(m[3] - m[2].max(b1)));
            }
            let stat = |v: &[f64]| (median(v.to_vec()), v.iter().sum::<f64>() / v.len() as f64);
            let half = |v: &[f64]| {
                let (p50, mean) = stat(v);
                format!("{mean:.2}/{p50:.2}")
            };
            let cost = |v: &[f64]| {
                let (p50, mean) = stat(v);
                format!("{p50:.2} ({mean:.2})")
            };
            println!(
                "| {run} | {pool} | {wall:.2} | {} | {} | {} | {} | {inline} |",
                half(&first),
                half(&second),
                cost(&steal),
                cost(&ret)
            );
        }
    }
}

/// `drain_probe trickle-events W...`: see the module doc.
fn trickle_events(workers: &[usize]) {
    use common::low_par::{trickle, two_way_flock};
    const TASKS: usize = 2000;
    const ROUNDS: usize = 2000;
    const RUNS: usize = 3;
    println!(
        "trickle: one 20 µs task every 200 µs, {TASKS} a run; 2-way: {ROUNDS} joins of two 50 µs halves on a worker; median of {RUNS} runs; {} CPUs here",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    let mut floor: Vec<Duration> = (0..RUNS)
        .map(|_| trickle(&Inline, TASKS, 20, Duration::from_micros(200)).cpu)
        .collect();
    floor.sort();
    println!(
        "no pool (each task run by the submitting thread between its sleeps): {:.1} µs of CPU a task",
        floor[RUNS / 2].as_secs_f64() * 1e6 / TASKS as f64
    );
    let mut head =
        String::from("| workload | pool | W | wall a task or round | CPU a task or round |");
    for (name, _) in TRICKLE_EVENTS {
        head += &format!(" {name} |");
    }
    println!("{head}");
    println!("|{}", "---|".repeat(TRICKLE_EVENTS.len() + 5));
    for &w in workers {
        for variant in ["flock", "spin_limit(0)", "membarrier(false)"] {
            let builder = flock::Pool::builder().workers(w);
            let builder = match variant {
                "spin_limit(0)" => builder.spin_limit(0),
                "membarrier(false)" => builder.membarrier(false),
                _ => builder,
            };
            let pool = common::peers::Flock::from_pool(builder.build().expect("pool"), "flock");
            trickle(&pool, 100, 20, Duration::from_micros(200)); // warm-up
            for workload in ["trickle", "2-way"] {
                let n = if workload == "trickle" { TASKS } else { ROUNDS };
                let mut runs: Vec<(common::low_par::Spent, Vec<u64>)> = (0..RUNS)
                    .map(|_| {
                        let before = pool.pool.stats();
                        let spent = if workload == "trickle" {
                            trickle(&pool, TASKS, 20, Duration::from_micros(200))
                        } else {
                            two_way_flock(&pool.pool, ROUNDS, 50)
                        };
                        let after = pool.pool.stats();
                        let counts = TRICKLE_EVENTS.iter().map(|(_, f)| f(&after) - f(&before));
                        (spent, counts.collect())
                    })
                    .collect();
                runs.sort_by_key(|(spent, _)| spent.cpu);
                let (spent, counts) = &runs[RUNS / 2];
                let per = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
                let mut line = format!(
                    "| {workload} | {variant} | {w} | {:.1} µs | {:.1} µs |",
                    per(spent.wall),
                    per(spent.cpu)
                );
                for c in counts {
                    line += &format!(" {:.2} |", *c as f64 / n as f64);
                }
                println!("{line}");
            }
        }
    }
}

// ----- idle-events: what the first idle second after a burst costs, in events (issue 41) --

/// The `Stats` counters `idle-events` reads, in its table's order.
const IDLE_EVENTS: [(&str, StatOf); 6] = [
    ("searches", |s| s.searches),
    ("failed steals", |s| s.failed_steals),
    ("park tries", |s| s.park_attempts),
    ("parks", |s| s.parks),
    ("wake-ups", |s| s.wakeups),
    ("sleep-word RMW", |s| s.sleep_word_writes),
];

/// Bursts `idle-events` measures a pool size with (each in its own second).
const IDLE_BURSTS: usize = 5;

/// `drain_probe idle-events W...`: see the module doc.
fn idle_events(workers: &[usize]) {
    println!(
        "a burst of {BURST_TASKS} tasks of ~{BURST_TASK_US} µs and the second after it, per burst (median of {IDLE_BURSTS}); {} CPUs here",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    let mut head = String::from("| pool | W |");
    for (name, _) in IDLE_EVENTS {
        head += &format!(" {name} |");
    }
    head += " futex wait | futex wake | membarrier |";
    println!("{head}");
    println!("|{}", "---|".repeat(IDLE_EVENTS.len() + 5));
    for &w in workers {
        let mut line = format!("| flock | {w} |");
        for c in flock_idle_counts(w) {
            line += &format!(" {c} |");
        }
        line += &idle_strace_cells("flock", w);
        println!("{line}");
        let mut line = format!("| rayon | {w} |");
        line += &" – |".repeat(IDLE_EVENTS.len());
        line += &idle_strace_cells("rayon", w);
        println!("{line}");
    }
}

/// The pool `idle-events` bursts on: flock's or rayon's.
enum BurstPool {
    Flock(flock::Pool),
    Rayon(rayon::ThreadPool),
}

impl BurstPool {
    fn new(kind: &str, w: usize) -> BurstPool {
        match kind {
            "flock" => BurstPool::Flock(flock::Pool::builder().workers(w).build().expect("flock")),
            "rayon" => BurstPool::Rayon(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(w)
                    .build()
                    .expect("rayon"),
            ),
            other => panic!("idle-events: no pool {other}"),
        }
    }

    /// [`BURST_TASKS`] tasks of about [`BURST_TASK_US`] µs from this thread, then a wait
    /// for them all (the `burst` workload's).
    fn burst(&self) {
        match self {
            BurstPool::Flock(pool) => {
                for _ in 0..BURST_TASKS {
                    pool.submit(|| common::cpu_work(BURST_TASK_US))
                        .expect("accepted");
                }
                pool.wait().expect("quiet");
            }
            BurstPool::Rayon(pool) => pool.scope(|s| {
                for _ in 0..BURST_TASKS {
                    s.spawn(|_| common::cpu_work(BURST_TASK_US));
                }
            }),
        }
    }

    /// A burst and the second after it; the pool settled first (a second asleep).
    fn burst_and_second(&self) {
        std::thread::sleep(Duration::from_millis(1000));
        self.burst();
        std::thread::sleep(Duration::from_millis(1000));
    }
}

/// The `IDLE_EVENTS` counters over a burst and the second after it, median of
/// [`IDLE_BURSTS`], on a flock pool of `w` workers.
fn flock_idle_counts(w: usize) -> Vec<u64> {
    common::spins_per_us();
    let pool = BurstPool::new("flock", w);
    let BurstPool::Flock(flock) = &pool else {
        unreachable!()
    };
    pool.burst(); // warm-up: every worker has run once
    let mut runs: Vec<Vec<u64>> = vec![Vec::new(); IDLE_EVENTS.len()];
    for _ in 0..IDLE_BURSTS {
        std::thread::sleep(Duration::from_millis(1000));
        let before = flock.stats();
        pool.burst();
        std::thread::sleep(Duration::from_millis(1000));
        let after = flock.stats();
        for (i, (_, f)) in IDLE_EVENTS.iter().enumerate() {
            runs[i].push(f(&after) - f(&before));
        }
    }
    runs.into_iter()
        .map(|mut v| {
            v.sort_unstable();
            v[v.len() / 2]
        })
        .collect()
}

/// ` wait | wake | membarrier |` per burst and its second, from a child process under
/// strace running [`IDLE_BURSTS`] of them between two markers; `?` where strace fails.
fn idle_strace_cells(kind: &str, w: usize) -> String {
    let text = strace_child(
        &format!("idle-{kind}-{w}"),
        &["idle-events-child", kind, &w.to_string()],
    );
    match count_between_markers(&text) {
        Some(c) => {
            let [wait, wake, mb] = c.map(|x| x as f64 / IDLE_BURSTS as f64);
            format!(" {wait:.1} | {wake:.1} | {mb:.1} |")
        }
        None => " ? | ? | ? |".into(),
    }
}

/// The child of `idle_strace_cells`: a warm-up burst, a marker, [`IDLE_BURSTS`] settled
/// bursts each with the second after it, a marker.
fn idle_events_child(kind: &str, w: usize) {
    common::spins_per_us();
    // SAFETY: getppid has no preconditions and touches no memory of ours.
    let marker = || unsafe { libc::getppid() };
    let pool = BurstPool::new(kind, w);
    pool.burst();
    marker();
    for _ in 0..IDLE_BURSTS {
        pool.burst_and_second();
    }
    marker();
}

/// The child of `callgrind_totals`: one `fib(n)` through join on a pool of `w` workers.
fn join_instr_child(kind: &str, w: usize, n: u32) {
    use common::workloads::{time_fib_flock, time_fib_rayon};
    match kind {
        "flock" => {
            let pool = flock::Pool::builder().workers(w).build().expect("flock");
            time_fib_flock(&pool, n);
        }
        "rayon" => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .expect("rayon");
            time_fib_rayon(&pool, n);
        }
        other => panic!("join-instr-child: no pool {other}"),
    }
}

/// ` wait | wake | membarrier |` cells from a child process running `runs` fib runs on
/// `kind` with `w` workers under strace; `?` cells where strace is missing or fails.
fn strace_cells(kind: &str, runs: usize, w: usize, per: f64) -> String {
    let (runs, w) = (runs.to_string(), w.to_string());
    let text = strace_child(
        &format!("join-events-{kind}-{w}"),
        &["join-events-child", kind, &runs, &w],
    );
    match count_between_markers(&text) {
        Some([wait, wake, mb]) => format!(
            " {:.1} | {:.1} | {:.1} |",
            wait as f64 * per,
            wake as f64 * per,
            mb as f64 * per
        ),
        None => " ? | ? | ? |".into(),
    }
}

/// This program run with `args` under `strace -f -e trace=futex,membarrier,getppid`: the
/// log, empty where strace is missing or fails. `name` names the temporary log file.
fn strace_child(name: &str, args: &[&str]) -> String {
    let out = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let exe = std::env::current_exe().expect("current_exe");
    let status = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=futex,membarrier,getppid", "-o"])
        .arg(&out)
        .arg(exe)
        .args(args)
        .status();
    let text = match status {
        Ok(s) if s.success() => std::fs::read_to_string(&out).unwrap_or_default(),
        _ => String::new(),
    };
    let _ = std::fs::remove_file(&out);
    text
}

/// FUTEX_WAIT*, FUTEX_WAKE* and membarrier(PRIVATE_EXPEDITED) calls in an strace log,
/// between the first two `getppid` lines. A call cut in two by another thread's line counts
/// once, at its start.
fn count_between_markers(log: &str) -> Option<[u64; 3]> {
    let mut inside = None;
    let mut counts = [0u64; 3];
    for line in log.lines() {
        if line.contains("getppid(") {
            match inside {
                None => inside = Some(()),
                Some(()) => return Some(counts),
            }
            continue;
        }
        if inside.is_none() || line.contains("resumed>") {
            continue;
        }
        if line.contains("FUTEX_WAIT") {
            counts[0] += 1;
        } else if line.contains("FUTEX_WAKE") {
            counts[1] += 1;
        } else if line.contains("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED,")
            || line.contains("membarrier(0x8,")
        {
            counts[2] += 1;
        }
    }
    None
}

/// The child of `strace_cells`: a pool of `w` workers of `kind`, one warm-up run, a
/// `getppid` marker, `runs` runs, another marker.
fn join_events_child(kind: &str, runs: usize, w: usize) {
    use common::workloads::{time_fib_flock, time_fib_rayon, FIB_N};
    // SAFETY: getppid has no preconditions and touches no memory of ours.
    let marker = || unsafe { libc::getppid() };
    match kind {
        "flock" => {
            let pool = flock::Pool::builder().workers(w).build().expect("flock");
            time_fib_flock(&pool, FIB_N);
            marker();
            for _ in 0..runs {
                time_fib_flock(&pool, FIB_N);
            }
            marker();
        }
        "rayon" => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .expect("rayon");
            time_fib_rayon(&pool, FIB_N);
            marker();
            for _ in 0..runs {
                time_fib_rayon(&pool, FIB_N);
            }
            marker();
        }
        other => panic!("join-events-child: no pool {other}"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("drain") => drain(
            args.next().map_or(2, |w| w.parse().expect("workers")),
            args.next().map_or(0, |u| u.parse().expect("µs")),
        ),
        Some("spin") => spin(),
        Some("ideal") => ideal(),
        Some("cpu") => cpu(&args.collect::<Vec<_>>()),
        Some("cpu-stats") => {
            let w = args.next().map_or(0, |w| w.parse().expect("workers"));
            let us: Vec<u64> = args.map(|u| u.parse().expect("µs")).collect();
            cpu_stats(w, if us.is_empty() { &[1, 0] } else { &us })
        }
        Some("own") => own(),
        Some("one-ideal") => one_ideal(args.next().map_or(7, |r| r.parse().expect("rounds"))),
        Some("one-modes") => one_modes(args.next().map_or(8, |p| p.parse().expect("pools"))),
        Some("one") => one(args.next().map_or(2, |w| w.parse().expect("workers")), true),
        Some("bystander") => bystander(args.next().map_or(200, |u| u.parse().expect("µs"))),
        Some("steals") => steals(
            args.next().map_or(20, |r| r.parse().expect("runs")),
            args.next().map_or(common::workers(), |w| w.parse().expect("workers")),
        ),
        Some("fib") => fib(
            args.next().map_or(15, |r| r.parse().expect("rounds")),
            args.next().map_or(common::workers(), |w| w.parse().expect("workers")),
            args.next().as_deref() == Some("fenced"),
        ),
        Some("fibloop") => {
            use common::workloads::{time_fib_flock, time_fib_rayon, FIB_N};
            let kind = args.next().expect("flock|rayon");
            let n: usize = args.next().map_or(200, |r| r.parse().expect("runs"));
            let w: usize = args.next().map_or(common::workers(), |w| w.parse().expect("workers"));
            if kind == "flock" {
                let f = flock::Pool::builder().workers(w).build().expect("flock");
                (0..n).for_each(|_| {
                    time_fib_flock(&f, FIB_N);
                });
                let st = f.stats();
                println!("{n} runs: {} stolen, {:.0} a run", st.stolen, st.stolen as f64 / n as f64);
            } else {
                let r = rayon::ThreadPoolBuilder::new().num_threads(w).build().expect("rayon");
                (0..n).for_each(|_| {
                    time_fib_rayon(&r, FIB_N);
                });
            }
        }
        Some("clock") => clock(),
        Some("busy-submit") => busy_submit(args.next().map_or(60, |n| n.parse().expect("samples"))),
        Some("cold") => {
            let idles: Vec<u64> = args.map(|u| u.parse().expect("µs")).collect();
            cold(if idles.is_empty() {
                &[300, 1000, 2000, 5000, 10_000]
            } else {
                &idles
            })
        }
        Some("qsort") => qsort(
            args.next().map_or(15, |r| r.parse().expect("rounds")),
            args.next().map_or(common::workers(), |w| w.parse().expect("workers")),
        ),
        Some("many") => many(
            &args.next().unwrap_or_else(|| "flock".into()),
            args.next().map_or(20, |r| r.parse().expect("runs")),
        ),
        Some("wake") => wake(args.next().map_or(5, |r| r.parse().expect("rounds"))),
        Some("one-local") => one(args.next().map_or(2, |w| w.parse().expect("workers")), false),
        Some("join-events") => {
            let mut rest: Vec<String> = args.collect();
            let runs = match rest.first().map(String::as_str) {
                Some("--runs") => {
                    let n = rest.get(1).expect("--runs N").parse().expect("runs");
                    rest.drain(..2);
                    n
                }
                _ => 20,
            };
            let w: Vec<usize> = rest.iter().map(|w| w.parse().expect("workers")).collect();
            join_events(runs, if w.is_empty() { &[2, 4, 8, 16] } else { &w })
        }
        Some("trickle-events") => {
            let w: Vec<usize> = args.map(|w| w.parse().expect("workers")).collect();
            trickle_events(if w.is_empty() { &[2, 16] } else { &w })
        }
        Some("two-way") => two_way(args.next().map_or(6, |r| r.parse().expect("rounds"))),
        Some("idle-events") => {
            let w: Vec<usize> = args.map(|w| w.parse().expect("workers")).collect();
            idle_events(if w.is_empty() { &[2, 16] } else { &w })
        }
        Some("idle-events-child") => {
            let kind = args.next().expect("flock|rayon");
            idle_events_child(&kind, args.next().expect("w").parse().expect("workers"))
        }
        Some("join-instr-child") => {
            let kind = args.next().expect("flock|rayon");
            let w = args.next().expect("w").parse().expect("workers");
            join_instr_child(&kind, w, args.next().expect("n").parse().expect("fib n"))
        }
        Some("join-events-child") => {
            let kind = args.next().expect("flock|rayon");
            let runs = args.next().expect("runs").parse().expect("runs");
            join_events_child(&kind, runs, args.next().expect("w").parse().expect("workers"))
        }
        _ => eprintln!("usage: drain_probe drain W [US] | own | spin | one W | one-local W | cpu KIND... | cpu-stats W [US...] | ideal | fib ROUNDS [W [fenced]] | fibloop flock|rayon RUNS [W] | steals [RUNS] [W] | bystander [US] | wake [ROUNDS] | qsort [ROUNDS [W]] | clock | many KIND [RUNS] | join-events [--runs RUNS] W... | trickle-events W... | two-way [ROUNDS] | idle-events W... | busy-submit [SAMPLES] | cold [IDLE_US...]"),
    }
}
