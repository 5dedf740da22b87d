//! Graceful shutdown, shutdown_now, drop, and submits racing them: nothing lost, nothing leaked.

mod common;

use common::{stall_all, watchdog, Live};
use flock::{JoinError, Pool, RejectReason, WaitError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

#[test]
fn graceful_shutdown_runs_everything_queued_and_joins_threads() {
    watchdog(60, "graceful", || {
        let stopped = counter();
        let s = stopped.clone();
        let pool = Pool::builder()
            .workers(3)
            .on_worker_stop(move |_| {
                s.fetch_add(1, Ordering::SeqCst);
            })
            .build()
            .unwrap();
        let ran = counter();
        for _ in 0..10_000 {
            let ran = ran.clone();
            pool.submit(move || {
                ran.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
        }
        pool.shutdown().unwrap();
        assert_eq!(ran.load(Ordering::Relaxed), 10_000);
        assert_eq!(
            stopped.load(Ordering::SeqCst),
            3,
            "every worker stopped before shutdown returned"
        );
        let err = pool.submit(|| ()).unwrap_err();
        assert_eq!(err.reason(), RejectReason::Shutdown);
        pool.shutdown().unwrap(); // idempotent
        pool.wait().unwrap();
    });
}

#[test]
fn shutdown_now_drops_queued_tasks_and_runs_their_destructors() {
    watchdog(60, "shutdown_now", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let gate = stall_all(&pool);
        let live = counter();
        let ran = counter();
        for _ in 0..500 {
            let (guard, ran) = (Live::new(&live), ran.clone());
            pool.submit(move || {
                let _g = guard;
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
        let handle = pool.spawn(|| 1);
        assert_eq!(live.load(Ordering::SeqCst), 500);
        let opener = common::open_when_shut_down(&pool, &gate);
        let dropped = pool.shutdown_now().unwrap();
        opener.join().unwrap();
        assert_eq!(
            dropped, 501,
            "500 closures and one spawned task were queued"
        );
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(
            live.load(Ordering::SeqCst),
            0,
            "every dropped closure's destructor ran"
        );
        assert!(matches!(handle.join(), Err(JoinError::Dropped)));
    });
}

/// The queued tasks are dropped as `shutdown_now` begins, not once a worker is free: with
/// every worker held by a task, the queued closures' destructors have run and a queued
/// spawned task's handle answers `Dropped` while the shutdown still waits for the held ones.
#[test]
fn shutdown_now_drops_queued_tasks_while_the_running_ones_still_run() {
    watchdog(30, "shutdown_now with every worker held", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let gate = stall_all(&pool);
        let live = counter();
        for _ in 0..100 {
            let guard = Live::new(&live);
            pool.submit(move || drop(guard)).unwrap();
        }
        let handle = pool.spawn(|| 1);
        let p = pool.clone();
        let closer = std::thread::spawn(move || p.shutdown_now());
        // No worker is free: only the closer can have dropped these.
        assert!(matches!(handle.join(), Err(JoinError::Dropped)));
        common::eventually(|| live.load(Ordering::SeqCst) == 0);
        assert!(!closer.is_finished(), "it waits for the held tasks");
        gate.open();
        assert_eq!(closer.join().unwrap(), Ok(101));
        let stats = pool.stats();
        assert_eq!(
            (stats.dropped, stats.completed),
            (101, 2),
            "none of them ran"
        );
    });
}

#[test]
fn shutdown_now_lets_running_tasks_finish() {
    watchdog(30, "now vs running", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let (started_tx, started) = mpsc::channel();
        let finished = counter();
        let f = finished.clone();
        pool.submit(move || {
            started_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            f.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        started.recv().unwrap();
        assert_eq!(pool.shutdown_now().unwrap(), 0);
        assert_eq!(finished.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn shutdown_timeout_reports_and_a_later_shutdown_completes() {
    watchdog(30, "shutdown timeout", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        assert_eq!(
            pool.shutdown_timeout(Duration::from_millis(30)),
            Err(WaitError::Timeout)
        );
        assert!(pool.is_shutdown());
        gate.open();
        pool.shutdown().unwrap();
    });
}

#[test]
fn dropping_the_pool_is_a_graceful_shutdown_that_joins() {
    watchdog(30, "drop", || {
        let stopped = counter();
        let ran = counter();
        {
            let s = stopped.clone();
            let pool = Pool::builder()
                .workers(2)
                .on_worker_stop(move |_| {
                    s.fetch_add(1, Ordering::SeqCst);
                })
                .build()
                .unwrap();
            for _ in 0..1000 {
                let ran = ran.clone();
                pool.submit(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
            }
        }
        assert_eq!(ran.load(Ordering::SeqCst), 1000);
        assert_eq!(stopped.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn a_pool_dropped_by_its_own_task_closes_without_hanging() {
    watchdog(30, "drop inside", || {
        let stopped = counter();
        let s = stopped.clone();
        let pool = Arc::new(
            Pool::builder()
                .workers(2)
                .on_worker_stop(move |_| {
                    s.fetch_add(1, Ordering::SeqCst);
                })
                .build()
                .unwrap(),
        );
        let (tx, rx) = mpsc::channel();
        let inner = pool.clone();
        let gate = common::Gate::new();
        let g = gate.clone();
        pool.submit(move || {
            g.wait();
            drop(inner); // the last reference: Drop runs on a worker
            tx.send(()).unwrap();
        })
        .unwrap();
        drop(pool);
        gate.open();
        rx.recv().unwrap();
        while stopped.load(Ordering::SeqCst) < 2 {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

#[test]
fn concurrent_shutdown_callers_all_return_after_the_join() {
    watchdog(30, "concurrent shutdown", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let ran = counter();
        for _ in 0..1000 {
            let ran = ran.clone();
            pool.submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
        let callers: Vec<_> = (0..4)
            .map(|i| {
                let p = pool.clone();
                std::thread::spawn(move || {
                    if i % 2 == 0 {
                        p.shutdown().map(|_| 0)
                    } else {
                        p.shutdown_now()
                    }
                })
            })
            .collect();
        for c in callers {
            c.join().unwrap().unwrap();
        }
        // Every task either ran or was dropped, never both, never neither.
        let dropped = pool.shutdown_now().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst) as u64 + dropped, 1000);
    });
}

/// A small seeded generator, so a failing seed can be replayed.
fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn submits_racing_shutdown_are_run_or_handed_back() {
    let seeds: u64 = if cfg!(miri) { 2 } else { 60 };
    for seed in 1..=seeds {
        watchdog(60, &format!("race seed {seed}"), move || {
            let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let now = xorshift(&mut rng) % 2 == 0;
            let pool = Arc::new(Pool::builder().workers(2).capacity(256).build().unwrap());
            let live = counter();
            let ran = counter();
            let accepted = counter();
            let returned = counter();
            std::thread::scope(|s| {
                for t in 0..4 {
                    let (pool, live, ran, accepted, returned) = (
                        pool.clone(),
                        live.clone(),
                        ran.clone(),
                        accepted.clone(),
                        returned.clone(),
                    );
                    let n = 200 + (xorshift(&mut rng) % 800) as usize + t;
                    s.spawn(move || {
                        for _ in 0..n {
                            let (guard, ran) = (Live::new(&live), ran.clone());
                            match pool.submit(move || {
                                let _g = guard;
                                ran.fetch_add(1, Ordering::SeqCst);
                            }) {
                                Ok(()) => {
                                    accepted.fetch_add(1, Ordering::SeqCst);
                                }
                                Err(e) => {
                                    assert_eq!(e.reason(), RejectReason::Shutdown);
                                    returned.fetch_add(1, Ordering::SeqCst);
                                    drop(e.into_inner());
                                }
                            }
                        }
                    });
                }
                let delay = xorshift(&mut rng) % 3000;
                let pool = pool.clone();
                s.spawn(move || {
                    std::thread::sleep(Duration::from_micros(delay));
                    let dropped = if now {
                        pool.shutdown_now().unwrap()
                    } else {
                        pool.shutdown().map(|_| 0).unwrap()
                    };
                    assert!(now || dropped == 0);
                });
            });
            let dropped = pool.shutdown_now().unwrap() as usize;
            let (acc, ran) = (accepted.load(Ordering::SeqCst), ran.load(Ordering::SeqCst));
            assert_eq!(
                acc,
                ran + dropped,
                "seed {seed}: accepted == completed + dropped"
            );
            assert!(returned.load(Ordering::SeqCst) + acc > 0);
            assert_eq!(
                live.load(Ordering::SeqCst),
                0,
                "seed {seed}: a closure leaked"
            );
        });
    }
}

/// `dropped_by_shutdown` (and `shutdown_now`'s answer) count what shutdowns dropped, not what
/// `purge`, `JoinHandle::cancel` or `TaskGroup::cancel` did (`Stats::dropped` counts all of
/// them): a graceful shutdown after those reports 0, a `shutdown_now` only its own, and later
/// shutdowns of either kind the same total. The C layer's `flock_shutdown` reports this.
#[test]
fn dropped_by_shutdown_counts_only_what_shutdowns_dropped() {
    for now in [false, true] {
        watchdog(30, &format!("dropped_by_shutdown (now {now})"), move || {
            let pool = Pool::builder().workers(1).build().unwrap();
            let group = flock::TaskGroup::new(&pool);
            pool.pause();
            for _ in 0..5 {
                pool.submit(|| ()).unwrap();
            }
            for _ in 0..3 {
                group.spawn(|| ());
            }
            let cancelled = pool.spawn(|| ());
            assert!(cancelled.cancel());
            assert_eq!(group.cancel(), 3);
            assert_eq!(pool.purge(), 5);
            assert_eq!(pool.dropped_by_shutdown(), 0);
            let ran = counter();
            for _ in 0..4 {
                let ran = ran.clone();
                pool.submit(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
            }
            let by_shutdown = if now {
                pool.shutdown_now().unwrap()
            } else {
                pool.shutdown().unwrap();
                pool.dropped_by_shutdown()
            };
            let expected = if now { 4 } else { 0 };
            assert_eq!(by_shutdown, expected);
            assert_eq!(ran.load(Ordering::SeqCst) as u64, 4 - expected);
            pool.shutdown().unwrap();
            assert_eq!(pool.dropped_by_shutdown(), expected);
            assert_eq!(pool.shutdown_now().unwrap(), expected);
            assert_eq!(pool.stats().dropped, 9 + expected);
        });
    }
}

/// A graceful shutdown and a `shutdown_now` racing: both wait for every worker to exit, so
/// both then read the same final total, and every task either ran or was counted in it.
#[test]
fn racing_shutdowns_agree_on_the_total_dropped() {
    let rounds = if cfg!(miri) { 2 } else { 30 };
    for round in 0..rounds {
        watchdog(30, &format!("racing shutdowns, round {round}"), move || {
            let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
            let gate = stall_all(&pool);
            let ran = counter();
            for _ in 0..100 {
                let ran = ran.clone();
                pool.submit(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
            }
            let opener = common::open_when_shut_down(&pool, &gate);
            let (graceful, now) = std::thread::scope(|s| {
                let g = s.spawn(|| {
                    pool.shutdown().unwrap();
                    pool.dropped_by_shutdown()
                });
                let n = s.spawn(|| pool.shutdown_now().unwrap());
                (g.join().unwrap(), n.join().unwrap())
            });
            opener.join().unwrap();
            assert_eq!(graceful, now);
            assert_eq!(ran.load(Ordering::SeqCst) as u64 + now, 100);
        });
    }
}
