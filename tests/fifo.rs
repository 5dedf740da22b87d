//! FIFO within a lane: tasks submitted from one thread start in the order they were submitted
//! (threadpool's `test_shrink`). A worker takes one task at a time from the shared queue,
//! never a batch that would wait behind its own long task while idle workers take younger
//! tasks.
mod common;

use common::{eventually, watchdog, Gate};
use flock::Pool;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

fn first_started(pool: Pool, tasks: usize) -> BTreeSet<usize> {
    let workers = pool.workers();
    let gate = Gate::new();
    let started = Arc::new(Mutex::new(BTreeSet::new()));
    for i in 0..tasks {
        let (gate, started) = (gate.clone(), started.clone());
        pool.submit(move || {
            started.lock().unwrap().insert(i);
            gate.wait();
        })
        .unwrap();
    }
    eventually(|| started.lock().unwrap().len() == workers);
    let first = started.lock().unwrap().clone();
    gate.open();
    pool.wait().unwrap();
    assert_eq!(started.lock().unwrap().len(), tasks);
    pool.shutdown().unwrap();
    first
}

#[test]
fn blocking_tasks_start_in_submission_order() {
    watchdog(20, "ten blocking tasks on six workers", || {
        let pool = Pool::builder().workers(6).build().unwrap();
        assert_eq!(first_started(pool, 10), (0..6).collect());
    });
}

#[test]
fn blocking_tasks_of_one_lane_start_in_submission_order() {
    watchdog(20, "ten blocking tasks in a lane on three workers", || {
        let pool = Pool::builder()
            .workers(3)
            .lanes(&[("a", 1)])
            .build()
            .unwrap();
        assert_eq!(first_started(pool, 10), (0..3).collect());
    });
}

/// One thread's tasks start in submission order across its submitter ring's growth (a first
/// ring holds 256), with batches mixed in: bundles of ten and batches of three (pushed one by
/// one) go through the same ring. One worker, everything queued while the pool is paused,
/// then run: the run order is the submission order.
#[test]
fn one_threads_tasks_and_batches_run_in_submission_order() {
    watchdog(60, "810 tasks and batches on one worker", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        pool.pause();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut next = 0;
        for round in 0..60 {
            for _ in 0..7 {
                let (order, i) = (order.clone(), next);
                next += 1;
                pool.submit(move || order.lock().unwrap().push(i)).unwrap();
            }
            let k = if round % 2 == 0 { 10 } else { 3 };
            let batch: Vec<_> = (next..next + k)
                .map(|i| {
                    let order = order.clone();
                    move || order.lock().unwrap().push(i)
                })
                .collect();
            next += k;
            assert_eq!(pool.submit_batch(batch).unwrap(), k);
        }
        pool.resume();
        pool.wait().unwrap();
        assert_eq!(*order.lock().unwrap(), (0..next).collect::<Vec<_>>());
        pool.shutdown().unwrap();
    });
}
