//! Shared by every bench in `benches/` and by `benches/examples/bench_report.rs`: the pools under test
//! behind one trait ([`peers`]), the workload bodies ([`workloads`]; flock's lane workloads,
//! which have no peers, in [`lanes`]), and the small tools they need (a countdown latch, a
//! calibrated spin, CPU-time readings).
//!
//! Every pool gets the same worker count ([`workers`]) and the same task bodies. flock waits
//! with `Pool::wait()`; a pool with no "wait for all" has its tasks count down one shared
//! [`CountDown`] (an atomic counter; the last task to finish takes a mutex and signals a
//! condvar), which the measuring thread waits on.
#![allow(dead_code)]

pub mod lanes;
pub mod low_par;
pub mod peers;
pub mod workloads;

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Worker threads every pool gets: `BENCH_WORKERS` where it is set to a positive number
/// (a pool larger or smaller than the machine, e.g. 16 workers on 2 CPUs to count what a
/// large pool does when idle), else [`cpus`].
pub fn workers() -> usize {
    static WORKERS: OnceLock<usize> = OnceLock::new();
    *WORKERS.get_or_init(|| {
        std::env::var("BENCH_WORKERS")
            .ok()
            .and_then(|w| w.trim().parse().ok())
            .filter(|&w: &usize| w > 0)
            .unwrap_or_else(cpus)
    })
}

/// CPUs this process may run on: `std::thread::available_parallelism()` (it follows
/// `taskset`).
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// CPUs a pool of [`workers`] can keep busy at once: the smaller of the two. What "wall
/// time × workers" and the ideal splits multiply by.
pub fn busy_cpus() -> usize {
    workers().min(cpus())
}

/// The shared "wait for all" of pools that have none: `count_down` once per task, `wait` once.
pub struct CountDown {
    left: AtomicUsize,
    done: Mutex<bool>,
    cond: Condvar,
}

impl CountDown {
    pub fn new(n: usize) -> Self {
        CountDown {
            left: AtomicUsize::new(n),
            done: Mutex::new(n == 0),
            cond: Condvar::new(),
        }
    }

    /// One task finished; the last one wakes the waiter.
    pub fn count_down(&self) {
        // AcqRel: the last decrement sees every other task's writes before it signals.
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.done.lock().unwrap() = true;
            self.cond.notify_all();
        }
    }

    /// Blocks until the count reached zero.
    pub fn wait(&self) {
        let mut done = self.done.lock().unwrap();
        while !*done {
            done = self.cond.wait(done).unwrap();
        }
    }
}

/// Spins for `iters` rounds of a dependent add that the optimiser cannot remove.
#[inline(never)]
pub fn spin(iters: u64) {
    let mut x = 0u64;
    for i in 0..iters {
        x = black_box(x.wrapping_add(i));
    }
    black_box(x);
}

/// Spin rounds per microsecond on this machine, measured once per process (best of several
/// 2 ms runs, so a preempted run does not inflate it).
pub fn spins_per_us() -> u64 {
    static CALIBRATED: OnceLock<u64> = OnceLock::new();
    *CALIBRATED.get_or_init(|| {
        let probe = 200_000u64;
        spin(probe); // warm up
        let best = (0..15)
            .map(|_| {
                let t = Instant::now();
                spin(probe);
                t.elapsed()
            })
            .min()
            .unwrap();
        ((probe as f64) / (best.as_secs_f64() * 1e6))
            .round()
            .max(1.0) as u64
    })
}

/// A task body of about `us` microseconds of CPU (a calibrated spin, never a sleep).
pub fn cpu_work(us: u64) {
    spin(us * spins_per_us());
}

/// This thread's id (`/proc/thread-self` is `/proc/PID/task/TID`).
pub fn this_thread_id() -> Option<u64> {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse::<u64>().ok())
}

/// One thread of this process as `/proc/self/task/TID` shows it ([`tasks`]).
pub struct Task {
    pub tid: u64,
    /// CPU time used so far, ns: `schedstat`'s first field (`/proc/self/stat`'s utime and
    /// stime count 10 ms ticks, too coarse for an idle pool).
    pub cpu_ns: u64,
    /// With `details` only (else empty, `u64::MAX` and 0): the thread's name (`comm`), the
    /// CPU it ran on last (`stat`'s field 39), and its voluntary and involuntary context
    /// switches so far (`status`).
    pub name: String,
    pub last_cpu: u64,
    pub voluntary: u64,
    pub involuntary: u64,
}

/// Every thread of this process ([`Task`]); threads whose `schedstat` cannot be read (gone
/// meanwhile) are left out. `details` adds the reads of `comm`, `stat` and `status`.
pub fn tasks(details: bool) -> Vec<Task> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u64>().ok())
        else {
            continue;
        };
        let read = |f: &str| std::fs::read_to_string(entry.path().join(f)).ok();
        let Some(cpu_ns) =
            read("schedstat").and_then(|t| t.split_whitespace().next()?.parse::<u64>().ok())
        else {
            continue;
        };
        let mut task = Task {
            tid,
            cpu_ns,
            name: String::new(),
            last_cpu: u64::MAX,
            voluntary: 0,
            involuntary: 0,
        };
        if details {
            task.name = read("comm").unwrap_or_default().trim().to_string();
            // `stat`'s fields after the name's closing parenthesis start at field 3.
            let stat = read("stat").unwrap_or_default();
            task.last_cpu = stat
                .rfind(')')
                .and_then(|i| stat.get(i + 2..)?.split(' ').nth(36)?.parse().ok())
                .unwrap_or(u64::MAX);
            let status = read("status").unwrap_or_default();
            task.voluntary = status_field(&status, "voluntary_ctxt_switches");
            task.involuntary = status_field(&status, "nonvoluntary_ctxt_switches");
        }
        out.push(task);
    }
    out
}

/// The number after `key` in the text of a `/proc/.../status` file (0 if absent).
pub fn status_field(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// For each thread of this process, by thread id: the CPU time it has used so far, in
/// nanoseconds, and, with `switches`, its context switches so far (voluntary +
/// involuntary; 0 without). See [`tasks`].
pub fn thread_usage(switches: bool) -> HashMap<u64, (u64, u64)> {
    tasks(switches)
        .into_iter()
        .map(|t| (t.tid, (t.cpu_ns, t.voluntary + t.involuntary)))
        .collect()
}

/// CPU time this whole process (every thread) has used so far, in nanoseconds:
/// `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`, which counts the running threads' time up to
/// now (a thread's `schedstat` advances only when it is switched out or at a tick, too coarse
/// for a 10 ms run).
pub fn process_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the call writes nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CPU time each thread of this process has used so far, in nanoseconds, by thread id
/// ([`thread_usage`]). The calling thread is left out: it is the one measuring.
pub fn thread_cpu_ns() -> HashMap<u64, u64> {
    let me = this_thread_id();
    thread_usage(false)
        .into_iter()
        .filter(|&(tid, _)| Some(tid) != me)
        .map(|(tid, (ns, _))| (tid, ns))
        .collect()
}

/// CPU nanoseconds the threads alive at both readings used between them.
pub fn cpu_ns_between(before: &HashMap<u64, u64>, after: &HashMap<u64, u64>) -> u64 {
    after
        .iter()
        .filter_map(|(tid, ns)| Some(ns.saturating_sub(*before.get(tid)?)))
        .sum()
}

/// The `q`-quantile (0.0..=1.0) of `samples`, nearest-rank.
pub fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    assert!(!samples.is_empty());
    samples.sort_unstable();
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1]
}

/// A criterion group set up for multi-millisecond iterations: 10 samples of equal iteration
/// counts (flat sampling), a short warm-up, `measure` of measurement.
pub fn group<'a>(
    c: &'a mut criterion::Criterion,
    name: &str,
    measure: Duration,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .sampling_mode(criterion::SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(measure);
    g
}

/// The round trip of a cache line between the first two CPUs the calling thread may run on
/// (CPUs 0 and 1 on the 2-vCPU guest), in ns: two threads pinned one to each take turns to
/// bump one counter; median of 9 bouts of 20,000 round trips. On that guest it tells where the
/// host has put the two CPUs at that moment (about 197 or 590 ns, at times 80), which sets
/// `1u-1Mt`'s speed (docs/bench.md, "What limits the misses"). `None` where the thread may run
/// on fewer than two CPUs or cannot be pinned: two spinners sharing one CPU would take a time
/// slice a trip. The calling thread's affinity is put back as it was (under `taskset`, as
/// `scripts/scaling.sh` runs the report, it stays within the set).
#[cfg(target_os = "linux")]
pub fn line_round_trip_ns() -> Option<f64> {
    use std::sync::atomic::AtomicU64;
    const TRIPS: u64 = 20_000;
    const SET: usize = std::mem::size_of::<libc::cpu_set_t>();
    fn pin(cpu: usize) -> bool {
        // SAFETY: the set is a local, zeroed and filled by the libc macro; the call reads
        // `SET` bytes of it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, SET, &set) == 0
        }
    }
    // SAFETY: the set is a local, zeroed; the call writes at most `SET` bytes of it.
    let original = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, SET, &mut set) != 0 {
            return None;
        }
        set
    };
    let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: the macro reads one bit of the set, `cpu` below its size.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &original) })
        .collect();
    let [a, b, ..] = allowed[..] else {
        return None;
    };
    let bout = || -> Option<f64> {
        let turn = crossbeam_utils::CachePadded::new(AtomicU64::new(0));
        let took = std::thread::scope(|s| {
            let turn = &turn;
            let other = s.spawn(move || {
                if !pin(b) {
                    // Tell the first thread (spinning for turn 2) to give up.
                    turn.store(u64::MAX, Ordering::Release);
                    return;
                }
                // Odd turns are this thread's.
                for i in 0..TRIPS {
                    loop {
                        match turn.load(Ordering::Acquire) {
                            v if v == 2 * i + 1 => break,
                            u64::MAX => return,
                            _ => std::hint::spin_loop(),
                        }
                    }
                    turn.store(2 * i + 2, Ordering::Release);
                }
            });
            if !pin(a) {
                turn.store(u64::MAX, Ordering::Release);
                let _ = other.join();
                return None;
            }
            let start = Instant::now();
            for i in 0..TRIPS {
                // A CAS, not a store: it must not overwrite the other thread's give-up.
                if turn
                    .compare_exchange(2 * i, 2 * i + 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    return None;
                }
                loop {
                    match turn.load(Ordering::Acquire) {
                        v if v == 2 * i + 2 => break,
                        u64::MAX => return None,
                        _ => std::hint::spin_loop(),
                    }
                }
            }
            Some(start.elapsed())
        })?;
        Some(took.as_secs_f64() * 1e9 / TRIPS as f64)
    };
    let bouts: Option<Vec<f64>> = (0..9).map(|_| bout()).collect();
    // SAFETY: the set the thread had, as `sched_getaffinity` filled it above.
    unsafe { libc::sched_setaffinity(0, SET, &original) };
    let mut bouts = bouts?;
    bouts.sort_by(|x, y| x.total_cmp(y));
    Some(bouts[bouts.len() / 2])
}

/// Not measured off Linux (see the Linux version).
#[cfg(not(target_os = "linux"))]
pub fn line_round_trip_ns() -> Option<f64> {
    None
}
