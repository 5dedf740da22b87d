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
