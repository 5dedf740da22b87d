//! A panic in the iterator given to `Scope::spawn_batch`: the tasks it yielded before the
//! panic are spawned (and run), the scope completes, and the panic reaches the caller.
//!
//! The scopes here are opened in place (`Pool::in_place_scope`): their bodies spawn from the
//! calling thread, outside the pool, and are no task of it, so the counts are the spawned
//! tasks' only.

mod common;

use common::watchdog;
use flock::{Pool, Scope};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// Tasks that each add one to `ran`, the iterator panicking when asked for task `at`.
fn tasks_panicking_at<'a>(
    ran: &'a AtomicUsize,
    at: usize,
) -> impl Iterator<Item = impl FnOnce(&Scope<'_>) + Send + 'a> {
    (0..at + 10).map(move |i| {
        assert!(i != at, "iterator gives up at {at}");
        move |_: &Scope<'_>| {
            ran.fetch_add(1, SeqCst);
        }
    })
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>().cloned().unwrap_or_default()
}

/// `at` tasks yielded, then the panic: from outside the pool (in batches of 256 and the
/// rest), every yielded task runs once and the scope re-raises the iterator's panic.
fn from_outside(at: usize) {
    let pool = Pool::builder().workers(2).build().unwrap();
    let ran = AtomicUsize::new(0);
    let result = catch_unwind(AssertUnwindSafe(|| {
        pool.in_place_scope(|s| s.spawn_batch(tasks_panicking_at(&ran, at)))
    }));
    let payload = result.expect_err("the iterator's panic reaches the caller");
    assert_eq!(
        panic_message(&*payload),
        format!("iterator gives up at {at}")
    );
    assert_eq!(
        ran.load(SeqCst),
        at,
        "each task yielded before the panic ran once"
    );
    pool.wait().unwrap();
    let s = pool.stats();
    assert_eq!(s.in_flight, 0);
    assert_eq!(s.submitted, at as u64);
    assert_eq!(s.completed, at as u64);
}

#[test]
fn iterator_panic_from_outside_completes_the_scope() {
    watchdog(
        30,
        "spawn_batch with a panicking iterator, from outside",
        || {
            for at in [0, 5, 256, 300] {
                from_outside(at);
            }
        },
    );
}

#[test]
fn iterator_panic_inside_the_pool_completes_the_scope() {
    watchdog(
        30,
        "spawn_batch with a panicking iterator, from a task",
        || {
            let pool = Pool::builder().workers(2).build().unwrap();
            let ran = AtomicUsize::new(0);
            let result = catch_unwind(AssertUnwindSafe(|| {
                pool.in_place_scope(|s| {
                    s.spawn(|s| s.spawn_batch(tasks_panicking_at(&ran, 5)));
                })
            }));
            let payload = result.expect_err("the iterator's panic reaches the scope's owner");
            assert_eq!(panic_message(&*payload), "iterator gives up at 5");
            assert_eq!(
                ran.load(SeqCst),
                5,
                "each task yielded before the panic ran once"
            );
            pool.wait().unwrap();
            let s = pool.stats();
            // The scope task (panicked) and the five it spawned.
            assert_eq!((s.submitted, s.completed, s.panicked), (6, 5, 1));
        },
    );
}
