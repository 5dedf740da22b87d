//! `JoinHandle::cancel`: a cancelled task is dropped and counted once, also when its
//! closure's destructor panics (that panic reaches `cancel`'s caller, after the books are
//! balanced), and the shell it leaves queued does not keep the pool's shared state alive.

mod common;

use common::{eventually, stall_all, watchdog};
use flock::{JoinError, Pool, TaskGroup, WorkerState};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Panics when dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("closure destructor");
    }
}

#[test]
fn cancel_whose_closure_destructor_panics_balances_the_books() {
    watchdog(30, "cancel with a panicking closure destructor", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        let bomb = PanicsOnDrop;
        let queued = pool.spawn(move || {
            let _keep = &bomb;
            1
        });
        let raised = catch_unwind(AssertUnwindSafe(|| queued.cancel()));
        let payload = raised.expect_err("the destructor's panic reaches cancel's caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"closure destructor"));
        assert!(queued.is_finished());
        assert!(matches!(queued.join(), Err(JoinError::Cancelled)));
        gate.open();
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!(
            (s.submitted, s.completed, s.dropped, s.panicked, s.in_flight),
            (2, 1, 1, 0, 0)
        );
        pool.shutdown().unwrap();
    });
}

#[test]
fn cancel_of_a_plain_task_counts_it_dropped() {
    watchdog(30, "cancel", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        let queued = pool.spawn(|| 1);
        assert!(queued.cancel());
        assert!(!queued.cancel(), "a second cancel finds it ended");
        gate.open();
        assert!(matches!(queued.join(), Err(JoinError::Cancelled)));
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!(
            (s.submitted, s.completed, s.dropped, s.in_flight),
            (2, 1, 1, 0)
        );
        pool.shutdown().unwrap();
    });
}

/// A task cancelled while queued counts as finished at once, but its job stays in the queue,
/// a shell holding the task's cell, which holds the pool's shared state. A worker still
/// spinning when the shutdown begins exits without looking at the queues (nothing is
/// outstanding), so the shell stayed there and the shared state, holding the queue, was never
/// freed: a cycle that leaked ~50 KB a pool (found from C: `flock_group_cancel` on a paused
/// pool, then `flock_pool_free`). The pool's shutdown now sweeps the queues once the workers
/// have gone. The panic handler is owned by that shared state, so its captures tell whether
/// it was freed.
#[test]
fn a_task_cancelled_while_queued_does_not_keep_the_pool_alive() {
    for how in ["handle", "group", "group, paused"] {
        watchdog(
            60,
            &format!("cancelled task, pool freed ({how})"),
            move || {
                let rounds = if cfg!(miri) { 3 } else { 50 };
                let (mut cancelled, mut leaked) = (0, 0);
                for _ in 0..rounds {
                    let token = Arc::new(());
                    let held = token.clone();
                    let pool = Pool::builder()
                        .workers(1)
                        // Keeps the worker spinning (not parked) until the shutdown.
                        .spin_limit(u32::MAX)
                        .panic_handler(move |_| drop(held.clone()))
                        .build()
                        .unwrap();
                    if how.ends_with("paused") {
                        pool.pause();
                    } else {
                        eventually(|| pool.stats().per_worker[0].state == WorkerState::Spinning);
                    }
                    let group = TaskGroup::new(&pool);
                    let ok = if how == "handle" {
                        let queued = pool.spawn(|| ());
                        queued.cancel()
                    } else {
                        group.spawn(|| ());
                        group.cancel() == 1
                    };
                    drop(pool);
                    drop(group);
                    cancelled += usize::from(ok);
                    leaked += usize::from(Arc::strong_count(&token) != 1);
                }
                assert!(cancelled > 0, "{how}: no round cancelled its task");
                assert_eq!(leaked, 0, "{how}: {leaked} of {rounds} pools never freed");
            },
        );
    }
}
