//! Native stress with the real crossbeam queues: conservation, overload with stalled workers
//! and bounded memory. Sizes shrink under Miri. (Submit racing shutdown over many seeds lives
//! in tests/shutdown.rs; wait() against concurrent submitters in tests/submit_wait.rs.)

mod common;

use common::{stall_all, watchdog};
use flock::{Backpressure, Pool};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

const SUBMITTERS: usize = 8;
const PER_SUBMITTER: usize = if cfg!(miri) { 50 } else { 50_000 };

#[test]
fn conservation_every_bit_set_exactly_once() {
    watchdog(300, "conservation", || {
        let total = SUBMITTERS * PER_SUBMITTER;
        let bits: Arc<Vec<AtomicU64>> =
            Arc::new((0..total.div_ceil(64)).map(|_| AtomicU64::new(0)).collect());
        let twice = Arc::new(AtomicUsize::new(0));
        let pool = Arc::new(Pool::builder().workers(4).build().unwrap());
        std::thread::scope(|s| {
            for t in 0..SUBMITTERS {
                let (pool, bits, twice) = (pool.clone(), bits.clone(), twice.clone());
                s.spawn(move || {
                    for i in 0..PER_SUBMITTER {
                        let id = t * PER_SUBMITTER + i;
                        let (bits, twice, p) = (bits.clone(), twice.clone(), pool.clone());
                        let task = move || {
                            let mask = 1u64 << (id % 64);
                            if bits[id / 64].fetch_or(mask, Ordering::Relaxed) & mask != 0 {
                                twice.fetch_add(1, Ordering::Relaxed);
                            }
                        };
                        // Every fourth task is re-submitted from inside the pool, so local
                        // deques and stealing carry part of the load.
                        if id % 4 == 0 {
                            pool.submit(move || p.submit(task).unwrap()).unwrap();
                        } else {
                            pool.submit(task).unwrap();
                        }
                    }
                });
            }
        });
        pool.wait().unwrap();
        assert_eq!(twice.load(Ordering::Relaxed), 0, "a task ran twice");
        let set: u64 = bits
            .iter()
            .map(|b| b.load(Ordering::Relaxed).count_ones() as u64)
            .sum();
        assert_eq!(set, total as u64, "a task never ran");
        println!("conservation: {total} tasks from {SUBMITTERS} submitters, each ran exactly once");
    });
}

/// Peak resident memory of this process, from the kernel (Linux), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[test]
fn overload_with_stalled_workers_stays_bounded() {
    watchdog(300, "overload", || {
        let workers = 2;
        let capacity = 1_000;
        let pool = Arc::new(
            Pool::builder()
                .workers(workers)
                .capacity(capacity)
                .when_full(Backpressure::Reject)
                .build()
                .unwrap(),
        );
        let before = peak_rss_kib();
        let gate = stall_all(&pool);
        let accepted = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(AtomicUsize::new(0));
        let offered = if cfg!(miri) { 200 } else { 200_000 };
        std::thread::scope(|s| {
            for _ in 0..4 {
                let (pool, accepted, ran) = (pool.clone(), accepted.clone(), ran.clone());
                s.spawn(move || {
                    for _ in 0..offered / 4 {
                        // Each task carries 1 KiB, so an unbounded queue would show in the RSS.
                        let (ran, payload) = (ran.clone(), vec![1u8; 1024]);
                        let task = move || {
                            ran.fetch_add(payload.len() / 1024, Ordering::SeqCst);
                        };
                        match pool.submit(task) {
                            Ok(()) => {
                                accepted.fetch_add(1, Ordering::SeqCst);
                            }
                            Err(refused) => drop(refused.into_inner()),
                        }
                    }
                });
            }
        });
        let acc = accepted.load(Ordering::SeqCst);
        let rejected_full = pool.stats().rejected_full as usize;
        // Release the workers before any assertion, so a failure cannot leave them stalled
        // (and the pool's drop waiting for them).
        gate.open();
        pool.wait().unwrap();
        assert!(
            acc <= capacity + workers,
            "accepted {acc} > capacity + workers"
        );
        if cfg!(feature = "stats") {
            assert_eq!(rejected_full, offered - acc, "the rest was refused");
        }
        assert_eq!(
            ran.load(Ordering::SeqCst),
            acc,
            "every accepted task finished after the stall"
        );
        if let (Some(b), Some(a)) = (before, peak_rss_kib()) {
            println!("overload: offered {offered}, accepted {acc}, peak RSS {b} KiB -> {a} KiB (+{} KiB)", a - b);
            // 1 KiB per queued task: a bounded queue adds ~1 MiB; an unbounded one ~200 MiB.
            // (Not under sanitizers, whose shadow memory inflates RSS: scripts/tsan.sh sets
            // FLOCK_NO_RSS_BOUND.)
            if std::env::var_os("FLOCK_NO_RSS_BOUND").is_none() {
                assert!(a - b < 64 * 1024, "peak RSS grew by {} KiB", a - b);
            }
        }
    });
}

/// fib through `join`, to make a worker's pushes find sleepers and searchers.
fn fib(pool: &Pool, n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2));
    a + b
}

/// More workers than CPUs, so that workers sleep while others fork: after a worker's first
/// 64 pushes that find a sleeper and a searcher, its pushes skip their fence and rely on the
/// membarrier of the searcher that leaves last (docs/protocol.md, "Pushes that rely on a
/// searcher's membarrier"). Each round forks a few thousand times, then pushes one job and
/// blocks outside flock until another worker ran it, twice: a task submitted from the task,
/// and a join's second half that the first half waits for. A push that nobody sees hangs the
/// round (the watchdog fails the test). A stress test only: the loom models
/// `loom_an_unfenced_push_seen_by_the_last_searcher_*` are what check the protocol.
#[test]
// Under Miri parks use fences, not the membarrier, so no push ever skips its fence.
#[cfg_attr(miri, ignore)]
fn pushes_after_many_forks_then_a_block_are_run_by_others() {
    const ROUNDS: usize = 2_000;
    const FIB: u32 = 14;
    watchdog(300, "pushes after forks, then a block", || {
        let pool = Arc::new(Pool::builder().workers(16).build().unwrap());
        for round in 0..ROUNDS {
            let p = pool.clone();
            let (tx, rx) = std::sync::mpsc::channel::<u64>();
            pool.submit(move || {
                assert_eq!(fib(&p, FIB), 377);
                // A submit from the task, which then blocks until another worker ran it.
                let (done_tx, done_rx) = std::sync::mpsc::channel();
                p.submit(move || done_tx.send(()).unwrap()).unwrap();
                done_rx.recv().unwrap();
                assert_eq!(fib(&p, FIB), 377);
                // A join whose first half waits for its second (pushed) half.
                let (half_tx, half_rx) = std::sync::mpsc::channel();
                p.join(
                    move || half_rx.recv().unwrap(),
                    move || half_tx.send(()).unwrap(),
                );
                tx.send(round as u64).unwrap();
            })
            .unwrap();
            assert_eq!(rx.recv().unwrap(), round as u64);
        }
        pool.wait().unwrap();
    });
}
