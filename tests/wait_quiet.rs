//! Concurrent `wait()`ers: each returns once the pool has been seen quiet after it began to
//! wait, even when another waiter, returning first, submits more work at once
//! (threadpool's `test_join_wavesurfer`).

// `Pool::wait_timeout` (the bool form) is deprecated, and still tested here.
#![allow(deprecated)]

mod common;

use common::{eventually, watchdog, Gate};
use flock::Pool;
use std::sync::{mpsc, Arc};

#[test]
fn concurrent_waiters_all_return_for_one_quiet_moment() {
    watchdog(30, "four waiters, each submitting when it returns", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        // The task they all wait for, and the tasks each submits when it returns: those
        // stay blocked until all four have returned, so a waiter that waits for them hangs.
        let (first, after) = (Gate::new(), Gate::new());
        let held = first.clone();
        pool.submit(move || held.wait()).unwrap();
        let (returned, all) = mpsc::channel();
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let (pool, after, returned) = (pool.clone(), after.clone(), returned.clone());
                std::thread::spawn(move || {
                    pool.wait().unwrap();
                    pool.submit(move || after.wait()).unwrap();
                    returned.send(()).unwrap();
                })
            })
            .collect();
        eventually(|| pool.stats().waiters == 4);
        first.open();
        for _ in 0..4 {
            all.recv().unwrap();
        }
        after.open();
        for w in waiters {
            w.join().unwrap();
        }
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!(
            (s.submitted, s.completed, s.in_flight, s.waiters),
            (5, 5, 0, 0)
        );
    });
}

#[test]
fn a_waiter_still_waits_for_running_work() {
    watchdog(30, "wait for a running task", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let gate = Gate::new();
        let held = gate.clone();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = done.clone();
        pool.submit(move || {
            held.wait();
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        })
        .unwrap();
        let waiter = {
            let (pool, done) = (pool.clone(), done.clone());
            std::thread::spawn(move || {
                pool.wait().unwrap();
                done.load(std::sync::atomic::Ordering::SeqCst)
            })
        };
        eventually(|| pool.stats().waiters == 1);
        // A second waiter that finds the pool busy leaves the first waiting too.
        assert!(!pool.wait_timeout(std::time::Duration::from_millis(1)));
        gate.open();
        assert!(
            waiter.join().unwrap(),
            "wait returned only after the task ended"
        );
    });
}
