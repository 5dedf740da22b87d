//! `Pool::wait_for`: `wait` with a time limit that says why it did not wait. `Timeout` when
//! tasks are still outstanding at the limit (a paused pool is waited for like any other),
//! `WouldDeadlock` at once from every thread that runs one of the pool's tasks: a worker,
//! the submitter under `CallerRuns`, a `SpawnThread` helper, the lane reserve. There
//! `wait_timeout` answers a bare `false`, which reads as a time-out (the C layer once turned
//! it into `FLOCK_ERR_TIMEOUT`, and a caller retrying on time-outs spun for good).

// `Pool::wait_timeout` (the bool form) is deprecated, and still tested here.
#![allow(deprecated)]

mod common;

use common::{stall_all, watchdog, Gate};
use flock::{Backpressure, Pool, WaitError};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Long enough that a wait that went ahead instead of refusing would trip the watchdog.
const LONG: Duration = Duration::from_secs(600);

#[test]
fn times_out_then_succeeds() {
    watchdog(30, "wait_for time-out", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        assert_eq!(
            pool.wait_for(Duration::from_millis(20)),
            Err(WaitError::Timeout)
        );
        assert!(!pool.wait_timeout(Duration::from_millis(1)));
        gate.open();
        assert_eq!(pool.wait_for(Duration::from_secs(20)), Ok(()));
        assert!(pool.wait_timeout(Duration::ZERO));
    });
}

#[test]
fn a_paused_pool_is_waited_for_not_refused() {
    watchdog(30, "wait_for on a paused pool", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        pool.pause();
        pool.submit(|| ()).unwrap();
        assert_eq!(pool.wait(), Err(WaitError::Paused));
        assert_eq!(
            pool.wait_for(Duration::from_millis(20)),
            Err(WaitError::Timeout)
        );
        let p = pool.clone();
        let resumer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            p.resume();
        });
        assert_eq!(pool.wait_for(Duration::from_secs(20)), Ok(()));
        resumer.join().unwrap();
        assert_eq!(pool.stats().completed, 1);
    });
}

#[test]
fn a_timeout_beyond_the_clock_means_no_limit() {
    watchdog(30, "wait_for(Duration::MAX)", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        pool.submit(|| std::thread::sleep(Duration::from_millis(5)))
            .unwrap();
        assert_eq!(pool.wait_for(Duration::MAX), Ok(()));
        assert!(pool.wait_timeout(Duration::MAX));
    });
}

/// What `wait_for` and `wait_timeout` answered inside a task, and how long it took.
type Answer = (Result<(), WaitError>, bool, Duration);

fn ask(pool: &Arc<Pool>, tx: mpsc::Sender<Answer>) -> impl FnOnce() + Send + 'static {
    let pool = pool.clone();
    move || {
        let start = Instant::now();
        let checked = pool.wait_for(LONG);
        let bare = pool.wait_timeout(LONG);
        tx.send((checked, bare, start.elapsed())).unwrap();
    }
}

fn assert_refused(answer: Answer, where_: &str) {
    let (checked, bare, took) = answer;
    assert_eq!(checked, Err(WaitError::WouldDeadlock), "{where_}");
    assert!(!bare, "{where_}: wait_timeout answers false");
    assert!(
        took < Duration::from_secs(10),
        "{where_}: at once, took {took:?}"
    );
}

#[test]
fn on_a_worker_it_would_deadlock() {
    watchdog(30, "wait_for on a worker", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let (tx, rx) = mpsc::channel();
        pool.submit(ask(&pool, tx)).unwrap();
        assert_refused(rx.recv().unwrap(), "a worker");
        pool.wait().unwrap();
    });
}

#[test]
fn off_the_workers_it_would_deadlock() {
    for policy in [Backpressure::CallerRuns, Backpressure::SpawnThread] {
        watchdog(30, &format!("wait_for under {policy:?}"), move || {
            let pool = Arc::new(
                Pool::builder()
                    .workers(1)
                    .capacity(1)
                    .when_full(policy)
                    .build()
                    .unwrap(),
            );
            let gate = stall_all(&pool);
            pool.submit(|| ()).unwrap(); // fills the queue
            let (tx, rx) = mpsc::channel();
            let caller = std::thread::current().id();
            let (ran_on_tx, ran_on) = mpsc::channel();
            let task = ask(&pool, tx);
            pool.submit(move || {
                ran_on_tx.send(std::thread::current().id()).unwrap();
                task();
            })
            .unwrap();
            let on = ran_on.recv().unwrap();
            assert_eq!(on == caller, policy == Backpressure::CallerRuns);
            assert_refused(rx.recv().unwrap(), &format!("{policy:?}"));
            gate.open();
            pool.wait().unwrap();
            if cfg!(feature = "stats") {
                let s = pool.stats();
                assert_eq!(
                    (s.caller_runs, s.spawned_thread),
                    match policy {
                        Backpressure::CallerRuns => (1, 0),
                        _ => (0, 1),
                    }
                );
            }
        });
    }
}

#[test]
fn on_the_lane_reserve_it_would_deadlock() {
    watchdog(30, "wait_for on the lane reserve", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .lanes(&[("hi", 8), ("lo", 1)])
                .build()
                .unwrap(),
        );
        let gate = Gate::new();
        let (started_tx, started) = mpsc::channel();
        let g = gate.clone();
        pool.submit_to("lo", move || {
            started_tx.send(()).unwrap();
            g.wait();
        })
        .unwrap();
        started.recv().unwrap(); // the only worker runs a light lane's task
        let (tx, rx) = mpsc::channel();
        pool.submit_to("hi", ask(&pool, tx)).unwrap();
        assert_refused(rx.recv().unwrap(), "the lane reserve");
        gate.open();
        pool.wait().unwrap();
        if cfg!(feature = "stats") {
            assert_eq!(pool.stats().reserve_runs, 1);
        }
    });
}
