//! submit + wait: every accepted task runs exactly once, wait() covers them all.

// `Pool::wait_timeout` (the bool form) is deprecated, and still tested here.
#![allow(deprecated)]

mod common;

use common::watchdog;
use flock::{Pool, WaitError};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn every_task_runs_exactly_once() {
    watchdog(60, "submit 8 x 20k", || {
        let pool = Arc::new(Pool::builder().workers(4).build().unwrap());
        const THREADS: usize = 8;
        const PER: usize = 20_000;
        let hits: Arc<Vec<AtomicU64>> =
            Arc::new((0..THREADS * PER).map(|_| AtomicU64::new(0)).collect());
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (pool, hits) = (pool.clone(), hits.clone());
                s.spawn(move || {
                    for i in 0..PER {
                        let hits = hits.clone();
                        pool.submit(move || {
                            hits[t * PER + i].fetch_add(1, Ordering::Relaxed);
                        })
                        .unwrap();
                    }
                });
            }
        });
        pool.wait().unwrap();
        let counts: Vec<u64> = hits.iter().map(|h| h.load(Ordering::Relaxed)).collect();
        assert!(
            counts.iter().all(|&c| c == 1),
            "some task ran 0 or 2+ times"
        );
    });
}

#[test]
fn wait_covers_tasks_spawned_by_tasks() {
    watchdog(60, "nested submits", || {
        let pool = Arc::new(Pool::builder().workers(3).build().unwrap());
        let done = Arc::new(AtomicUsize::new(0));
        fn tree(pool: &Arc<Pool>, done: &Arc<AtomicUsize>, depth: u32) {
            if depth == 0 {
                done.fetch_add(1, Ordering::Relaxed);
                return;
            }
            for _ in 0..2 {
                let (p, d) = (pool.clone(), done.clone());
                pool.submit(move || tree(&p, &d, depth - 1)).unwrap();
            }
        }
        let (p, d) = (pool.clone(), done.clone());
        pool.submit(move || tree(&p, &d, 12)).unwrap();
        pool.wait().unwrap();
        assert_eq!(done.load(Ordering::Relaxed), 1 << 12);
    });
}

#[test]
fn wait_from_a_worker_is_an_error_not_a_deadlock() {
    watchdog(30, "wait inside", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let p = pool.clone();
        let inner = pool.spawn(move || {
            (
                p.wait(),
                p.wait_timeout(Duration::from_secs(5)),
                p.shutdown(),
            )
        });
        let (wait, timed, shut) = inner.join().unwrap();
        assert_eq!(wait, Err(WaitError::WouldDeadlock));
        assert!(!timed);
        assert_eq!(shut, Err(WaitError::WouldDeadlock));
        assert!(!pool.is_shutdown(), "a refused shutdown changes nothing");
        pool.wait().unwrap();
    });
}

#[test]
fn wait_timeout_reports_unfinished_work() {
    watchdog(30, "wait_timeout", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = common::stall_all(&pool);
        assert!(!pool.wait_timeout(Duration::from_millis(50)));
        gate.open();
        assert!(pool.wait_timeout(Duration::from_secs(20)));
    });
}

#[test]
fn wait_in_a_loop_never_returns_with_work_outstanding() {
    watchdog(120, "wait loop vs submitters", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        for round in 0..200 {
            let done = Arc::new(AtomicUsize::new(0));
            let n = 50 + round % 50;
            for _ in 0..n {
                let done = done.clone();
                pool.submit(move || {
                    std::hint::black_box((0..200).sum::<u64>());
                    done.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
            }
            pool.wait().unwrap();
            assert_eq!(
                done.load(Ordering::SeqCst),
                n,
                "round {round}: wait returned early"
            );
        }
    });
}

/// Threads sharing a pool, each submitting its own tasks and waiting: every wait returns
/// with the caller's own tasks run, whatever quiet moments the others' tasks made just
/// before it began (the task-group form of this race is
/// `threads_sharing_a_group_each_find_their_own_tasks_run_after_a_wait`).
#[test]
fn threads_sharing_a_pool_each_find_their_own_tasks_run_after_a_wait() {
    watchdog(120, "shared pool wait stress", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let rounds = if cfg!(miri) { 5 } else { 3_000 };
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let pool = pool.clone();
                std::thread::spawn(move || {
                    for round in 0..rounds {
                        let done = Arc::new(AtomicUsize::new(0));
                        let n = 1 + round % 3;
                        for _ in 0..n {
                            let done = done.clone();
                            pool.submit(move || {
                                done.fetch_add(1, Ordering::SeqCst);
                            })
                            .unwrap();
                        }
                        pool.wait().unwrap();
                        assert_eq!(
                            done.load(Ordering::SeqCst),
                            n,
                            "round {round}: the wait returned before this thread's tasks ran"
                        );
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    });
}

#[test]
fn pool_is_usable_after_wait_and_reports_its_shape() {
    let pool = Pool::builder().workers(3).capacity(100).build().unwrap();
    assert_eq!(pool.workers(), 3);
    assert_eq!(pool.capacity(), 100);
    pool.wait().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    pool.submit(move || tx.send(flock::current_worker_index()).unwrap())
        .unwrap();
    let idx = rx.recv().unwrap();
    assert!(matches!(idx, Some(i) if i < 3));
    assert_eq!(flock::current_worker_index(), None);
}

#[test]
fn a_parked_pool_wakes_for_a_single_late_task() {
    // No lost wake-up: after the workers have parked, one submit must run without any timer.
    watchdog(30, "late task", || {
        let pool = Pool::builder().workers(2).spin_limit(0).build().unwrap();
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(2));
            let (tx, rx) = std::sync::mpsc::channel();
            pool.submit(move || tx.send(()).unwrap()).unwrap();
            rx.recv_timeout(Duration::from_secs(10))
                .expect("the task ran");
        }
    });
}
