//! Workloads with little parallelism on a pool with every CPU as a worker (issue 41), and
//! the CPU a pool burns in the first second after a burst: what a pool spends searching for
//! work that is not there. Each returns wall time and the process's CPU time (`getrusage`,
//! every thread: the workers, the caller, anything else of ours awake), so run one pool at a
//! time.
//!
//! - `two_way`: `rounds` rounds that each offer 2-way parallelism, two halves of about `us`
//!   µs. On flock and rayon the rounds are joins (`Pool::join`, `rayon::join`) in a loop on
//!   a worker (`install`); on pools without a join the caller submits the two halves and
//!   waits for both (a [`CountDown`]).
//! - `trickle`: `tasks` tasks of about `us` µs, one every `every`, each submitted by the caller
//!   at its due time (it sleeps in between), then a wait for all.
//! - `after_burst`: one burst of the `burst` workload, then the CPU of every thread but the
//!   caller over the first second and over the second one.

use super::peers::Runner;
use super::{cpu_work, spins_per_us, CountDown};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a run took: wall time and the process's CPU time over it.
#[derive(Clone, Copy)]
pub struct Spent {
    pub wall: Duration,
    pub cpu: Duration,
}

/// The process's user + system CPU time so far (`getrusage(RUSAGE_SELF)`).
pub fn rusage_cpu() -> Duration {
    // SAFETY: an all-zero rusage is a valid value; getrusage writes only into it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    assert_eq!(rc, 0, "getrusage");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Runs `f`, measuring [`Spent`].
pub fn spent(f: impl FnOnce()) -> Spent {
    let cpu = rusage_cpu();
    let start = Instant::now();
    f();
    let wall = start.elapsed();
    Spent {
        wall,
        cpu: rusage_cpu().saturating_sub(cpu),
    }
}

/// `two_way` on flock: the rounds are `Pool::join`s in a loop on one of its workers.
pub fn two_way_flock(pool: &flock::Pool, rounds: usize, us: u64) -> Spent {
    spins_per_us();
    spent(|| {
        pool.install(|| {
            for _ in 0..rounds {
                pool.join(|| cpu_work(us), || cpu_work(us));
            }
        })
    })
}

/// `two_way` on rayon: the rounds are `rayon::join`s in a loop on one of its workers.
pub fn two_way_rayon(pool: &rayon::ThreadPool, rounds: usize, us: u64) -> Spent {
    spins_per_us();
    spent(|| {
        pool.install(|| {
            for _ in 0..rounds {
                rayon::join(|| cpu_work(us), || cpu_work(us));
            }
        })
    })
}

/// `two_way` on a pool without a join: each round, the caller submits both halves and
/// waits for them.
pub fn two_way_submit<R: Runner>(pool: &R, rounds: usize, us: u64) -> Spent {
    spins_per_us();
    spent(|| {
        for _ in 0..rounds {
            let done = Arc::new(CountDown::new(2));
            for _ in 0..2 {
                let done = done.clone();
                pool.execute(move || {
                    cpu_work(us);
                    done.count_down();
                });
            }
            done.wait();
        }
    })
}

/// `trickle`: see the module doc.
pub fn trickle<R: Runner>(pool: &R, tasks: usize, us: u64, every: Duration) -> Spent {
    spins_per_us();
    let done = Arc::new(CountDown::new(tasks));
    spent(|| {
        let start = Instant::now();
        for i in 0..tasks {
            let due = start + every * i as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let done = done.clone();
            pool.execute(move || {
                cpu_work(us);
                done.count_down();
            });
        }
        done.wait();
    })
}

/// `after_burst`: the CPU time in ms of every thread but the caller's over the first second
/// after one burst of `tasks` tasks of about `us` µs (the `burst` workload's), and over
/// the second one.
pub fn after_burst<R: Runner>(pool: &R, tasks: usize, us: u64) -> (f64, f64) {
    spins_per_us();
    // Settled first: whatever an earlier run left awake has gone to sleep.
    std::thread::sleep(Duration::from_millis(50));
    let done = Arc::new(CountDown::new(tasks));
    for _ in 0..tasks {
        let done = done.clone();
        pool.execute(move || {
            cpu_work(us);
            done.count_down();
        });
    }
    done.wait();
    let window = |before: &_| {
        let start = Instant::now();
        std::thread::sleep(Duration::from_secs(1));
        let after = super::thread_cpu_ns();
        let ms = super::cpu_ns_between(before, &after) as f64 / 1e6;
        (ms / start.elapsed().as_secs_f64(), after)
    };
    let (first, mid) = window(&super::thread_cpu_ns());
    let (second, _) = window(&mid);
    (first, second)
}
