//! The counters add up at quiescence: tasks run on the caller after shutdown are not
//! counted refused, a batch whose iterator panics counts what it submitted, and a detached
//! task whose value's destructor panics counts as completed (the panic is reported).

mod common;

use common::{stall_all, watchdog};
use flock::{Pool, TaskPanic};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

/// After shutdown, a scope's tasks (spawned one by one and as a batch) and a `join` from
/// outside run on the caller: they ran, so they are not refused; they are not the pool's
/// tasks, so nothing else counts them either. A plain submit is refused and counted.
#[cfg(feature = "stats")]
#[test]
fn tasks_run_on_the_caller_after_shutdown_are_not_counted_refused() {
    watchdog(30, "scope and join after shutdown", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        pool.shutdown().unwrap();
        let ran = AtomicUsize::new(0);
        pool.scope(|s| {
            s.spawn(|_| {
                ran.fetch_add(1, SeqCst);
            });
            s.spawn_batch((0..3).map(|_| {
                |_: &flock::Scope<'_>| {
                    ran.fetch_add(1, SeqCst);
                }
            }));
        });
        assert_eq!(pool.join(|| 1, || 2), (1, 2));
        assert_eq!(ran.load(SeqCst), 4);
        let s = pool.stats();
        assert_eq!((s.rejected, s.rejected_shutdown), (0, 0));
        assert_eq!(
            (s.submitted, s.completed, s.caller_runs, s.in_flight),
            (0, 0, 0, 0)
        );
        assert!(pool.submit(|| ()).is_err());
        let s = pool.stats();
        assert_eq!((s.rejected, s.rejected_shutdown, s.submitted), (1, 1, 0));
    });
}

/// A task submits a batch whose iterator panics after 5 items: the 5 are submitted and run,
/// and the task itself panics with the iterator's panic. 6 submitted = 5 completed + 1
/// panicked.
#[test]
fn batch_from_a_task_whose_iterator_panics_adds_up() {
    watchdog(
        30,
        "submit_batch with a panicking iterator, from a task",
        || {
            // The task's panic, by message: the iterator's, not the `unreachable!` after it.
            let panics = Arc::new(std::sync::Mutex::new(Vec::new()));
            let seen = panics.clone();
            let pool = Arc::new(
                Pool::builder()
                    .workers(2)
                    .panic_handler(move |p| {
                        seen.lock()
                            .unwrap()
                            .push(p.message().unwrap_or("?").to_string())
                    })
                    .build()
                    .unwrap(),
            );
            let ran = Arc::new(AtomicUsize::new(0));
            let (inner, counter) = (pool.clone(), ran.clone());
            pool.submit(move || {
                let tasks = (0..10).map(move |i| {
                    assert!(i < 5, "iterator gives up at 5");
                    let counter = counter.clone();
                    move || {
                        counter.fetch_add(1, SeqCst);
                    }
                });
                let _ = inner.submit_batch(tasks);
                unreachable!("the iterator's panic propagates from submit_batch");
            })
            .unwrap();
            pool.wait().unwrap();
            assert_eq!(ran.load(SeqCst), 5);
            let s = pool.stats();
            assert_eq!(
                (s.submitted, s.completed, s.panicked, s.in_flight),
                (6, 5, 1, 0)
            );
            assert_eq!(*panics.lock().unwrap(), ["iterator gives up at 5"]);
        },
    );
}

/// The same from outside the pool: the 5 are submitted, then the panic reaches the caller.
#[test]
fn batch_from_outside_whose_iterator_panics_adds_up() {
    watchdog(
        30,
        "submit_batch with a panicking iterator, from outside",
        || {
            let pool = Pool::builder().workers(2).build().unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            let counter = ran.clone();
            let tasks = (0..10).map(move |i| {
                assert!(i < 5, "iterator gives up at 5");
                let counter = counter.clone();
                move || {
                    counter.fetch_add(1, SeqCst);
                }
            });
            let raised = catch_unwind(AssertUnwindSafe(|| pool.submit_batch(tasks)));
            assert!(raised.is_err(), "the iterator's panic reaches the caller");
            pool.wait().unwrap();
            assert_eq!(ran.load(SeqCst), 5);
            let s = pool.stats();
            assert_eq!(
                (s.submitted, s.completed, s.panicked, s.in_flight),
                (5, 5, 0, 0)
            );
        },
    );
}

/// Panics when dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("value destructor");
    }
}

/// A detached spawned task ran to its end and made its value; the value's destructor
/// panicking on the worker is reported to the panic handler, and the task counts completed.
#[test]
fn detached_task_whose_value_destructor_panics_counts_completed() {
    watchdog(
        30,
        "detached task with a panicking value destructor",
        || {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let log = seen.clone();
            let pool = Pool::builder()
                .workers(1)
                .panic_handler(move |p: TaskPanic| {
                    log.lock()
                        .unwrap()
                        .push((p.worker(), p.message().map(str::to_owned)));
                })
                .build()
                .unwrap();
            let gate = stall_all(&pool);
            // Detached while it waits behind the stall task: the worker drops the value.
            drop(pool.spawn(|| PanicsOnDrop));
            gate.open();
            pool.wait().unwrap();
            let s = pool.stats();
            assert_eq!(
                (s.submitted, s.completed, s.panicked, s.in_flight),
                (2, 2, 0, 0)
            );
            assert_eq!(
                *seen.lock().unwrap(),
                vec![(Some(0), Some("value destructor".to_owned()))]
            );
        },
    );
}

/// Outside threads beyond the pool's sixteen submitter rings per lane: the first ones count
/// their tasks `Submitted` on their rings, the rest on their shards (they go through the
/// injector). At quiescence the two add up to exactly what ran, while the threads still
/// hold their rings and after they have ended.
#[test]
fn submitted_counts_add_up_across_rings_and_the_injector() {
    let pool = flock::Pool::builder().workers(2).build().unwrap();
    let threads = 20;
    let each = if cfg!(miri) { 5 } else { 500 };
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let pushed = std::sync::Barrier::new(threads + 1);
    let checked = std::sync::Barrier::new(threads + 1);
    let total = (threads * each) as u64;
    let while_held = std::thread::scope(|s| {
        for _ in 0..threads {
            let (pool, ran, pushed, checked) = (&pool, &ran, &pushed, &checked);
            s.spawn(move || {
                for _ in 0..each {
                    let ran = ran.clone();
                    pool.submit(move || {
                        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    })
                    .unwrap();
                }
                pushed.wait();
                checked.wait();
            });
        }
        pushed.wait();
        pool.wait().unwrap();
        let s = pool.stats();
        checked.wait(); // (asserted outside: a failed assertion here would leave them waiting)
        (s.submitted, s.completed, s.in_flight)
    });
    assert_eq!(while_held, (total, total, 0));
    pool.wait().unwrap();
    let s = pool.stats();
    assert_eq!((s.submitted, s.completed, s.in_flight), (total, total, 0));
    assert_eq!(ran.load(std::sync::atomic::Ordering::Relaxed), total);
}
