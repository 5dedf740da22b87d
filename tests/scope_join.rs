//! Scoped tasks and fork-join.

mod common;

use common::watchdog;
use flock::Pool;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn fib(pool: &Pool, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2));
    a + b
}

#[test]
fn join_computes_fib_from_outside_and_inside() {
    watchdog(60, "fib", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        // Miri is ~1000× slower: a smaller tree still forks, steals and joins.
        let (outside, inside) = if cfg!(miri) { (10, 8) } else { (22, 18) };
        let fib_seq = |n: u64| (0..n).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0;
        assert_eq!(fib(&pool, outside), fib_seq(outside));
        let p = pool.clone();
        assert_eq!(
            pool.spawn(move || fib(&p, inside)).join().unwrap(),
            fib_seq(inside)
        );
    });
}

#[test]
fn join_offers_b_to_other_workers() {
    watchdog(60, "join steals", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        let mut stolen = 0;
        for _ in 0..20 {
            let (a, b) = pool.join(
                || {
                    std::thread::sleep(Duration::from_millis(10));
                    flock::current_worker_index()
                },
                flock::current_worker_index,
            );
            assert!(a.is_some() && b.is_some());
            if a != b {
                stolen += 1;
            }
        }
        assert!(stolen > 0, "b never ran on another worker while a slept");
    });
}

#[test]
fn join_reraises_a_panic_after_both_sides_finished() {
    watchdog(30, "join panic", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        let b_done = Arc::new(AtomicUsize::new(0));
        let bd = b_done.clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.join(
                || panic!("left side"),
                move || {
                    std::thread::sleep(Duration::from_millis(20));
                    bd.fetch_add(1, Ordering::SeqCst);
                },
            )
        }));
        assert!(r.is_err());
        assert_eq!(b_done.load(Ordering::SeqCst), 1);
        // The pool is fine afterwards.
        assert_eq!(pool.join(|| 1, || 2), (1, 2));
    });
}

#[test]
fn scope_tasks_borrow_and_are_all_done_on_return() {
    watchdog(30, "scope", || {
        let pool = Pool::builder().workers(3).build().unwrap();
        // Under Miri 100 tasks, still more than the workers can run at once (28 s of each of
        // four Miri jobs with 1000).
        let mut slots = vec![0usize; if cfg!(miri) { 100 } else { 1000 }];
        let base = 7;
        pool.scope(|s| {
            for (i, slot) in slots.iter_mut().enumerate() {
                let base = &base;
                s.spawn(move |_| *slot = i + *base);
            }
        });
        assert!(slots.iter().enumerate().all(|(i, &v)| v == i + 7));
    });
}

#[test]
fn scope_tasks_can_spawn_more_tasks_into_the_scope() {
    watchdog(30, "nested scope", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        let count = AtomicUsize::new(0);
        pool.scope(|s| {
            for _ in 0..10 {
                s.spawn(|s| {
                    for _ in 0..10 {
                        s.spawn(|_| {
                            count.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
            }
        });
        assert_eq!(count.load(Ordering::Relaxed), 100);
    });
}

#[test]
fn scope_reraises_the_first_panic_after_the_others_finished() {
    watchdog(30, "scope panic", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        let finished = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.scope(|s| {
                s.spawn(|_| panic!("scoped boom"));
                for _ in 0..4 {
                    s.spawn(|_| {
                        std::thread::sleep(Duration::from_millis(10));
                        finished.fetch_add(1, Ordering::SeqCst);
                    });
                }
            })
        }));
        let payload = r.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"scoped boom"));
        assert_eq!(
            finished.load(Ordering::SeqCst),
            4,
            "the others finished before the panic was re-raised"
        );
    });
}

#[test]
fn scope_inside_a_single_worker_does_not_deadlock() {
    watchdog(30, "scope in worker", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let p = pool.clone();
        let total = pool
            .spawn(move || {
                let data: Vec<u64> = (1..=64).collect();
                let sum = AtomicUsize::new(0);
                p.scope(|s| {
                    for chunk in data.chunks(8) {
                        let sum = &sum;
                        s.spawn(move |_| {
                            sum.fetch_add(chunk.iter().sum::<u64>() as usize, Ordering::Relaxed);
                        });
                    }
                });
                sum.into_inner()
            })
            .join()
            .unwrap();
        assert_eq!(total, 2080);
    });
}

#[test]
fn scope_after_shutdown_still_completes_on_the_caller() {
    let pool = Pool::builder().workers(1).build().unwrap();
    pool.shutdown().unwrap();
    let mut v = [0u8; 4];
    pool.scope(|s| {
        for x in v.iter_mut() {
            s.spawn(move |_| *x = 1);
        }
    });
    assert_eq!(v, [1; 4]);
    assert_eq!(pool.join(|| 3, || 4), (3, 4));
}

/// A worker keeps the units of a scope's count that its finished tasks held, for its next
/// spawns into that scope (`scope::Credit`). It must give them back before it runs a task
/// of anything else: here, on the only worker, a task that waits for the scope to return
/// runs right after the scope's last task, so the scope completes only if the worker gave
/// the units back first (docs/protocol.md, "Scope counts held by workers").
#[test]
fn a_worker_gives_back_a_scopes_units_before_it_runs_other_work() {
    watchdog(30, "scope units held while other work runs", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let returned = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ran = AtomicUsize::new(0);
        pool.scope(|s| {
            let (pool, returned, ran) = (&pool, &returned, &ran);
            // From outside: the first task goes through the shared queue.
            s.spawn(move |s| {
                // Onto the worker's task deque: it runs after the join deque is empty.
                let returned = returned.clone();
                pool.submit(move || {
                    while !returned.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                })
                .unwrap();
                // Onto its join deque (the two-word path): runs first, and its unit is kept.
                s.spawn(move |_| {
                    ran.fetch_add(1, Ordering::SeqCst);
                });
            });
        });
        returned.store(true, Ordering::SeqCst);
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        pool.wait().unwrap();
    });
}

/// The same from inside the pool: the scope's owner is the only worker, and waits for the
/// scope while it holds the units of the tasks it ran meanwhile; it gives them back as soon
/// as it finds nothing to run, and its own wait then ends.
#[test]
fn a_waiting_owner_gives_back_the_units_it_holds() {
    watchdog(30, "scope owner holding its scope's units", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let ran = AtomicUsize::new(0);
        pool.install(|| {
            flock::scope(|s| {
                let ran = &ran;
                for _ in 0..3 {
                    s.spawn(move |s| {
                        s.spawn(move |_| {
                            ran.fetch_add(1, Ordering::SeqCst);
                        });
                    });
                }
            })
        });
        assert_eq!(ran.load(Ordering::SeqCst), 3);
        // `install` returns once its job's result is in, a moment before the worker counts
        // that job's end: the counters are exact at quiescence.
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!((s.submitted, s.completed), (7, 7), "{s}");
    });
}

/// A scope whose tasks all ended returns before its owner takes up anything else, though
/// the worker still held the tasks' units of the scope's count when it looked for more work
/// (rayon returns there too). One worker, which waits for the scope with an unrelated task
/// queued: that task waits for what the scope's caller does next, so running it inside the
/// scope's wait would stall it for good. Both kinds of queued work are checked: a task
/// submitted from the worker (its task deque) and a task of an outer scope (its join
/// deque, two words; rayon-core's `mixed_lifo_order` in its smallest form).
#[test]
fn a_finished_scope_returns_before_its_owner_runs_unrelated_work() {
    const BOUND: Duration = Duration::from_secs(20);
    watchdog(60, "a finished scope returns first", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        for round in 0..2 {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let waited = pool.install(|| {
                let waits = move || {
                    rx.recv_timeout(BOUND)
                        .expect("the unrelated task ran inside the finished scope's wait")
                };
                flock::scope(|outer| {
                    if round == 0 {
                        flock::submit(waits).unwrap();
                    } else {
                        outer.spawn(move |_| waits());
                    }
                    flock::scope(|inner| inner.spawn(|_| ()));
                    tx.send(()).unwrap();
                });
                round
            });
            assert_eq!(waited, round);
            pool.wait().unwrap();
        }
    });
}
