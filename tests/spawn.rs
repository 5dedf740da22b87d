//! spawn and JoinHandle: values, cancel, refusal.

mod common;

use common::{stall_all, watchdog, Live};
use flock::{Backpressure, JoinError, Pool, RejectReason};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn join_returns_values_and_is_finished_follows() {
    let pool = Pool::builder().workers(2).build().unwrap();
    let handles: Vec<_> = (0..100u64).map(|i| pool.spawn(move || i * 3)).collect();
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total, 3 * 4950);
    let h = pool.spawn(|| ());
    pool.wait().unwrap();
    assert!(h.is_finished());
    h.join().unwrap();
}

#[test]
fn cancel_removes_a_queued_task_and_drops_its_closure_now() {
    watchdog(30, "cancel", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        let live = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(AtomicUsize::new(0));
        let (guard, r) = (Live::new(&live), ran.clone());
        let h = pool.spawn(move || {
            let _g = guard;
            r.fetch_add(1, Ordering::SeqCst);
        });
        assert!(!h.is_finished());
        assert!(h.cancel());
        assert_eq!(
            live.load(Ordering::SeqCst),
            0,
            "the closure was dropped at cancel time"
        );
        assert!(h.is_finished());
        assert!(!h.cancel(), "a second cancel reports nothing to do");
        gate.open();
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert!(matches!(h.join(), Err(JoinError::Cancelled)));
    });
}

#[test]
fn cancel_after_start_returns_false_and_the_value_arrives() {
    watchdog(30, "cancel late", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let gate = common::Gate::new();
        let g = gate.clone();
        let h = pool.spawn(move || {
            tx.send(()).unwrap();
            g.wait();
            5
        });
        rx.recv().unwrap();
        assert!(!h.cancel());
        gate.open();
        assert_eq!(h.join().unwrap(), 5);
    });
}

#[test]
fn refused_spawns_report_why_and_try_spawn_hands_the_closure_back() {
    watchdog(30, "refused spawn", || {
        let pool = Pool::builder()
            .workers(1)
            .capacity(1)
            .when_full(Backpressure::Reject)
            .build()
            .unwrap();
        let gate = stall_all(&pool);
        let queued = pool.spawn(|| 1);
        let refused = pool.spawn(|| 2);
        assert!(refused.is_finished());
        assert!(matches!(
            refused.join(),
            Err(JoinError::Refused(RejectReason::Full))
        ));
        let back = pool.try_spawn(|| 3).unwrap_err();
        assert_eq!(back.reason(), RejectReason::Full);
        assert_eq!(back.into_inner()(), 3);
        gate.open();
        assert_eq!(queued.join().unwrap(), 1);
    });
}

#[test]
fn joining_a_child_from_inside_a_single_worker_pool_does_not_deadlock() {
    watchdog(30, "join child in worker", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let p = pool.clone();
        let v = pool
            .spawn(move || {
                let children: Vec<_> = (0..50).map(|i| p.spawn(move || i)).collect();
                children.into_iter().map(|h| h.join().unwrap()).sum::<i32>()
            })
            .join()
            .unwrap();
        assert_eq!(v, 1225);
    });
}
