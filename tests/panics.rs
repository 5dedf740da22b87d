//! Task panics are caught, counted and reported; they never take a worker down.

mod common;

use common::watchdog;
use flock::{Backpressure, Pool, TaskPanic};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What the panic handler saw: (worker index, message) per panic.
type Seen = Arc<Mutex<Vec<(Option<usize>, Option<String>)>>>;

#[test]
fn panicking_tasks_do_not_kill_the_worker_and_reach_the_handler() {
    watchdog(30, "panics", || {
        let seen: Seen = Arc::default();
        let log = seen.clone();
        let pool = Pool::builder()
            .workers(1)
            .panic_handler(move |p: TaskPanic| {
                log.lock()
                    .unwrap()
                    .push((p.worker(), p.message().map(str::to_owned)))
            })
            .build()
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        for i in 0..20 {
            let ran = ran.clone();
            pool.submit(move || {
                if i % 2 == 0 {
                    panic!("task {i} failed");
                }
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
        pool.wait().unwrap();
        assert_eq!(
            ran.load(Ordering::SeqCst),
            10,
            "the single worker survived every panic"
        );
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 10);
        assert!(seen.iter().all(|(w, _)| *w == Some(0)));
        assert_eq!(seen[0].1.as_deref(), Some("task 0 failed"));
    });
}

#[test]
fn a_panicking_panic_handler_does_not_take_the_worker_down() {
    watchdog(30, "handler panics", || {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let pool = Pool::builder()
            .workers(1)
            .panic_handler(move |_| {
                c.fetch_add(1, Ordering::SeqCst);
                panic!("the handler itself fails");
            })
            .build()
            .unwrap();
        for _ in 0..5 {
            pool.submit(|| panic!("task")).unwrap();
        }
        let after = pool.spawn(|| "still alive");
        assert_eq!(after.join().unwrap(), "still alive");
        pool.wait().unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 5);
    });
}

#[test]
fn panicking_hooks_do_not_take_workers_down() {
    watchdog(30, "hooks panic", || {
        let pool = Pool::builder()
            .workers(2)
            .on_worker_start(|i| panic!("start hook {i}"))
            .on_worker_stop(|i| panic!("stop hook {i}"))
            .build()
            .unwrap();
        let results: Vec<_> = (0..100).map(|i| pool.spawn(move || i * 2)).collect();
        let sum: i32 = results.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(sum, 9900);
        pool.shutdown().unwrap();
    });
}

#[test]
fn spawned_task_panics_go_to_the_join_handle() {
    let pool = Pool::builder().workers(2).build().unwrap();
    let h = pool.spawn(|| -> u8 { panic!("spawned boom") });
    let err = h.join().unwrap_err();
    assert!(err.is_panic());
    assert_eq!(err.to_string(), "the task panicked: spawned boom");
    let payload = err.into_panic().unwrap();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"spawned boom"));
}

#[test]
fn caller_runs_panics_are_caught_and_reported_without_a_worker_index() {
    watchdog(30, "caller runs panic", || {
        let seen: Arc<Mutex<Vec<Option<usize>>>> = Arc::default();
        let log = seen.clone();
        let pool = Pool::builder()
            .workers(1)
            .capacity(1)
            .when_full(Backpressure::CallerRuns)
            .panic_handler(move |p| log.lock().unwrap().push(p.worker()))
            .build()
            .unwrap();
        let gate = common::stall_all(&pool);
        pool.submit(|| ()).unwrap();
        // Runs here, panics here, and is still reported, not propagated.
        pool.submit(|| panic!("on the caller")).unwrap();
        assert_eq!(*seen.lock().unwrap(), vec![None]);
        gate.open();
        pool.wait().unwrap();
    });
}
