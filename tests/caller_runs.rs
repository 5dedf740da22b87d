//! `Backpressure::CallerRuns` across pools: a thread running tasks of several pools inline
//! (one inside the other) knows it runs a task of each, so waiting for any of them from
//! there reports `WouldDeadlock` instead of waiting for itself.

mod common;

use common::{stall_all, watchdog};
use flock::{Backpressure, Pool, WaitError};
use std::sync::Arc;

/// One worker, room for one queued task, `CallerRuns`.
fn small_pool() -> Arc<Pool> {
    Arc::new(
        Pool::builder()
            .workers(1)
            .capacity(1)
            .when_full(Backpressure::CallerRuns)
            .build()
            .unwrap(),
    )
}

/// A stalled worker and a full queue: the next submit from outside runs on the caller.
fn fill(pool: &Pool) -> common::Gate {
    let gate = stall_all(pool);
    pool.submit(|| ()).unwrap();
    gate
}

#[test]
fn nested_caller_runs_across_pools_would_deadlock() {
    watchdog(
        30,
        "A.wait() from B's inline task inside A's inline task",
        || {
            let (a, b) = (small_pool(), small_pool());
            let (gate_a, gate_b) = (fill(&a), fill(&b));
            let (tx, rx) = std::sync::mpsc::channel();
            let (a2, b2) = (a.clone(), b.clone());
            a.submit(move || {
                let on_a = std::thread::current().id();
                let (a3, b3) = (a2.clone(), b2.clone());
                b2.submit(move || {
                    assert_eq!(
                        std::thread::current().id(),
                        on_a,
                        "B's task runs inline too"
                    );
                    tx.send((a3.wait(), b3.wait())).unwrap();
                })
                .unwrap();
                // Back in A's task only: A's task is still ours.
                assert_eq!(a2.wait(), Err(WaitError::WouldDeadlock));
            })
            .unwrap();
            assert_eq!(
                rx.recv().unwrap(),
                (Err(WaitError::WouldDeadlock), Err(WaitError::WouldDeadlock))
            );
            gate_a.open();
            gate_b.open();
            a.wait().unwrap();
            b.wait().unwrap();
            let (sa, sb) = (a.stats(), b.stats());
            assert_eq!((sa.submitted, sa.completed, sa.in_flight), (3, 3, 0));
            assert_eq!((sb.submitted, sb.completed, sb.in_flight), (3, 3, 0));
        },
    );
}
