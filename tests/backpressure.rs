//! Capacity and the four policies: what is accepted, what is handed back, where it runs.

mod common;

use common::{
    asleep, eventually, fill_behind_a_held_task, stall_all, this_thread_id, watchdog, Gate,
};
use flock::{Backpressure, Pool, RejectReason};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

#[test]
fn reject_accepts_exactly_capacity_and_hands_the_rest_back() {
    watchdog(30, "reject", || {
        let pool = Pool::builder()
            .workers(1)
            .capacity(4)
            .when_full(Backpressure::Reject)
            .build()
            .unwrap();
        let gate = stall_all(&pool);
        let ran = counter();
        let mut refused = Vec::new();
        for _ in 0..10 {
            let ran = ran.clone();
            if let Err(e) = pool.submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            }) {
                assert_eq!(e.reason(), RejectReason::Full);
                refused.push(e.into_inner());
            }
        }
        assert_eq!(
            refused.len(),
            6,
            "capacity 4 with a busy worker accepts exactly 4"
        );
        for task in refused {
            task(); // handed back intact: runs here
        }
        assert_eq!(ran.load(Ordering::SeqCst), 6);
        gate.open();
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 10);
    });
}

#[test]
fn block_with_timeout_hands_the_task_back() {
    watchdog(30, "block timeout", || {
        let pool = Pool::builder()
            .workers(1)
            .capacity(2)
            .when_full(Backpressure::Block)
            .block_timeout(Duration::from_millis(30))
            .build()
            .unwrap();
        let gate = stall_all(&pool);
        let ran = counter();
        for _ in 0..2 {
            let ran = ran.clone();
            pool.submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
        let ran2 = ran.clone();
        let err = pool
            .submit(move || {
                ran2.fetch_add(100, Ordering::SeqCst);
            })
            .unwrap_err();
        assert_eq!(err.reason(), RejectReason::Timeout);
        gate.open();
        pool.wait().unwrap();
        assert_eq!(
            ran.load(Ordering::SeqCst),
            2,
            "the timed-out task did not run in the pool"
        );
        err.into_inner()();
        assert_eq!(ran.load(Ordering::SeqCst), 102);
    });
}

#[test]
fn block_waits_for_room_then_succeeds() {
    watchdog(30, "block", || {
        let pool = Arc::new(Pool::builder().workers(1).capacity(1).build().unwrap());
        let gate = stall_all(&pool);
        let ran = counter();
        let r = ran.clone();
        pool.submit(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        let (tx, rx) = mpsc::channel();
        let (p, r) = (pool.clone(), ran.clone());
        let submitter = std::thread::spawn(move || {
            let res = p.submit(move || {
                r.fetch_add(1, Ordering::SeqCst);
            });
            tx.send(()).unwrap();
            res.is_ok()
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(100)).is_err(),
            "the submit must block while the queue is full"
        );
        gate.open();
        rx.recv_timeout(Duration::from_secs(20))
            .expect("room appeared and the submit returned");
        assert!(submitter.join().unwrap());
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn blocked_submitter_gets_its_task_back_at_shutdown() {
    watchdog(30, "block vs shutdown", || {
        let pool = Arc::new(Pool::builder().workers(1).capacity(1).build().unwrap());
        let gate = stall_all(&pool);
        pool.submit(|| ()).unwrap();
        let p = pool.clone();
        let submitter = std::thread::spawn(move || p.submit(|| ()).map_err(|e| e.reason()));
        std::thread::sleep(Duration::from_millis(50));
        let p = pool.clone();
        let closer = std::thread::spawn(move || p.shutdown());
        let res = submitter.join().unwrap();
        assert_eq!(res, Err(RejectReason::Shutdown));
        gate.open();
        closer.join().unwrap().unwrap();
    });
}

#[test]
fn caller_runs_runs_on_the_submitting_thread() {
    watchdog(30, "caller runs", || {
        let pool = Pool::builder()
            .workers(1)
            .capacity(1)
            .when_full(Backpressure::CallerRuns)
            .build()
            .unwrap();
        let gate = stall_all(&pool);
        pool.submit(|| ()).unwrap();
        let (tx, rx) = mpsc::channel();
        pool.submit(move || tx.send(std::thread::current().id()).unwrap())
            .unwrap();
        assert_eq!(rx.try_recv().unwrap(), std::thread::current().id());
        gate.open();
        pool.wait().unwrap();
    });
}

#[test]
fn spawn_thread_runs_on_a_helper_and_is_bounded() {
    watchdog(30, "spawn thread", || {
        let pool = Pool::builder()
            .workers(1)
            .capacity(1)
            .when_full(Backpressure::SpawnThread)
            .max_spawned_threads(1)
            .block_timeout(Duration::from_millis(50))
            .build()
            .unwrap();
        let gate = stall_all(&pool);
        pool.submit(|| ()).unwrap();
        let (tx, rx) = mpsc::channel();
        let helper_gate = Gate::new();
        let hg = helper_gate.clone();
        pool.submit(move || {
            tx.send(std::thread::current().name().map(str::to_owned))
                .unwrap();
            hg.wait();
        })
        .unwrap();
        let name = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(name.as_deref(), Some("flock-helper"));
        // The one helper slot is taken and the queue is full: the next submit blocks, then
        // times out and comes back.
        let err = pool.submit(|| ()).unwrap_err();
        assert_eq!(err.reason(), RejectReason::Timeout);
        helper_gate.open();
        gate.open();
        pool.wait().unwrap();
        pool.shutdown().unwrap();
    });
}

#[test]
fn tasks_submitting_from_inside_never_block_on_a_full_queue() {
    watchdog(60, "inside full", || {
        let pool = Arc::new(Pool::builder().workers(2).capacity(1).build().unwrap());
        let ran = counter();
        let (p, r) = (pool.clone(), ran.clone());
        pool.submit(move || {
            for _ in 0..10_000 {
                let r = r.clone();
                p.submit(move || {
                    r.fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
            }
        })
        .unwrap();
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::Relaxed), 10_000);
    });
}

#[test]
fn overload_accepts_at_most_capacity_plus_workers() {
    watchdog(60, "overload", || {
        let workers = 2;
        let capacity = 64;
        let pool = Arc::new(
            Pool::builder()
                .workers(workers)
                .capacity(capacity)
                .when_full(Backpressure::Reject)
                .build()
                .unwrap(),
        );
        let gate = stall_all(&pool);
        let accepted = counter();
        let ran = counter();
        std::thread::scope(|s| {
            for _ in 0..4 {
                let (pool, accepted, ran) = (pool.clone(), accepted.clone(), ran.clone());
                s.spawn(move || {
                    for _ in 0..1000 {
                        let ran = ran.clone();
                        if pool
                            .submit(move || {
                                ran.fetch_add(1, Ordering::SeqCst);
                            })
                            .is_ok()
                        {
                            accepted.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
            }
        });
        let acc = accepted.load(Ordering::SeqCst);
        assert!(
            acc <= capacity,
            "accepted {acc} while every worker was stalled"
        );
        assert_eq!(acc, capacity, "a stalled pool fills exactly to capacity");
        gate.open();
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), acc);
    });
}

/// A thread blocked for room (`Backpressure::Block`) is woken at the low-water mark,
/// `capacity - capacity / 32`, not at the first unit given back (README: "a blocked submitter
/// wakes once the queue drained below `capacity − capacity/32`, not once per task"): with
/// capacity 64 the queue goes 64 -> 63 -> 62 and the submit stays blocked, then 62 -> 61
/// lets it in. The async form has the same test (`tests/async_handles.rs`).
#[test]
#[cfg_attr(miri, ignore = "reads /proc")]
fn a_blocked_submit_is_woken_at_the_low_water_mark() {
    watchdog(30, "blocked submit and the low-water mark", || {
        // `max_workers(2)`: workers give back each start at once (`capacity / (32 × 2)` = 1).
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .max_workers(2)
                .capacity(64)
                .when_full(Backpressure::Block)
                .build()
                .unwrap(),
        );
        // The worker holds task 0; tasks 1-64 fill the queue.
        let (started, gos) = fill_behind_a_held_task(&pool, 64);
        let admitted = Arc::new(AtomicUsize::new(0));
        let (p, a) = (pool.clone(), admitted.clone());
        let (tid_tx, tid) = mpsc::channel();
        let blocked = std::thread::spawn(move || {
            tid_tx.send(this_thread_id()).unwrap();
            p.submit(|| ()).unwrap();
            a.store(1, Ordering::SeqCst);
        });
        // Blocked (asleep) before any room is given back.
        let tid = tid.recv().unwrap();
        eventually(|| asleep(tid));
        for (i, go) in gos.iter().enumerate().take(2) {
            go.send(()).unwrap();
            // Task i + 1 has started: its unit of capacity was given back before it ran.
            assert_eq!(started.recv().unwrap(), i + 1);
            // Room for one: a submitter woken now would take it and return at once. A
            // moment for it to do so (a wake that comes later still fails the check).
            std::thread::sleep(Duration::from_millis(30));
            assert_eq!(
                admitted.load(Ordering::SeqCst),
                0,
                "admitted with {} of 64 queued",
                63 - i
            );
        }
        gos[2].send(()).unwrap();
        assert_eq!(started.recv().unwrap(), 3);
        blocked.join().unwrap();
        for go in &gos[3..] {
            go.send(()).unwrap();
        }
        pool.wait().unwrap();
        assert_eq!(pool.stats().completed, 66);
    });
}
