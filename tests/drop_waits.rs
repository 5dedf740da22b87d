//! Destructors that wait. A task dropped by `Pool::purge`, `Pool::shutdown_now` or
//! `TaskGroup::cancel` stays outstanding until its closure's destructor has returned (so a
//! `wait` that returns has seen every such destructor through). From that destructor, waiting
//! for the pool (`wait`, `wait_for`, the shutdowns, which wait for every outstanding task)
//! would wait for itself: each answers `WaitError::WouldDeadlock` at once and changes nothing,
//! as from one of the pool's tasks (they all hung once). Waiting for another pool there is
//! fine.

// `Pool::wait_timeout` (the bool form) is deprecated, and still tested here.
#![allow(deprecated)]

mod common;

use common::{stall_all, watchdog};
use flock::{Pool, TaskGroup, WaitError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const K: usize = 10;
/// Long enough that a wait that went ahead instead of refusing would trip the watchdog.
const LONG: Duration = Duration::from_secs(600);

type Answers = Arc<Mutex<Vec<Vec<Result<(), WaitError>>>>>;

/// Waits for `pool` in every way there is when dropped, and records the answers.
struct WaitsOnDrop {
    pool: Arc<Pool>,
    answers: Answers,
}

impl Drop for WaitsOnDrop {
    fn drop(&mut self) {
        let p = &self.pool;
        let got = vec![
            p.wait(),
            p.wait_for(LONG),
            p.shutdown(),
            p.shutdown_timeout(LONG),
            p.shutdown_now().map(drop),
        ];
        assert!(!p.wait_timeout(LONG));
        self.answers.lock().unwrap().push(got);
    }
}

fn waits_on_drop(pool: &Arc<Pool>, answers: &Answers) -> impl FnOnce() + Send + 'static {
    let guard = WaitsOnDrop {
        pool: pool.clone(),
        answers: answers.clone(),
    };
    move || {
        let _keep = &guard;
        unreachable!("dropped unrun");
    }
}

/// Every destructor ran once and was refused everywhere; the pool is as it was.
fn assert_refused_and_unchanged(pool: &Arc<Pool>, answers: &Answers, dropped: usize) {
    assert_eq!(dropped, K);
    let answers = answers.lock().unwrap();
    assert_eq!(answers.len(), K);
    for got in answers.iter() {
        assert!(
            got.iter().all(|r| *r == Err(WaitError::WouldDeadlock)),
            "{got:?}"
        );
    }
    assert!(!pool.is_shutdown());
    let (tx, rx) = std::sync::mpsc::channel();
    pool.submit(move || tx.send(1).unwrap()).unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)), Ok(1));
    pool.wait().unwrap();
    let s = pool.stats();
    assert_eq!((s.dropped, s.in_flight), (K as u64, 0), "{s}");
}

#[test]
fn a_destructor_run_by_purge_cannot_wait_for_its_pool() {
    for paused in [false, true] {
        watchdog(
            30,
            &format!("waits from purge (paused {paused})"),
            move || {
                let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
                let gate = if paused {
                    pool.pause();
                    None
                } else {
                    Some(stall_all(&pool))
                };
                let answers = Answers::default();
                for _ in 0..K {
                    pool.submit(waits_on_drop(&pool, &answers)).unwrap();
                }
                let dropped = pool.purge();
                if let Some(gate) = gate {
                    gate.open();
                }
                pool.resume();
                assert_refused_and_unchanged(&pool, &answers, dropped);
            },
        );
    }
}

/// The same from a destructor that `shutdown_now` runs: on the closing thread, which drops
/// what is queued before it waits (the workers are held meanwhile, so none of them does).
#[test]
fn a_destructor_run_by_shutdown_now_cannot_wait_for_its_pool() {
    watchdog(30, "waits from shutdown_now", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let gate = stall_all(&pool);
        let answers = Answers::default();
        for _ in 0..K {
            pool.submit(waits_on_drop(&pool, &answers)).unwrap();
        }
        let p = pool.clone();
        let closer = std::thread::spawn(move || p.shutdown_now());
        common::eventually(|| answers.lock().unwrap().len() == K);
        assert!(!closer.is_finished(), "it waits for the held task");
        gate.open();
        assert_eq!(closer.join().unwrap(), Ok(K as u64));
        for got in answers.lock().unwrap().iter() {
            assert!(
                got.iter().all(|r| *r == Err(WaitError::WouldDeadlock)),
                "{got:?}"
            );
        }
        assert_eq!(pool.stats().dropped, K as u64);
    });
}

#[test]
fn a_destructor_run_by_a_group_cancel_cannot_wait_for_its_pool() {
    for paused in [false, true] {
        watchdog(
            30,
            &format!("waits from cancel (paused {paused})"),
            move || {
                let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
                let group = TaskGroup::new(&pool);
                let gate = if paused {
                    pool.pause();
                    None
                } else {
                    Some(stall_all(&pool))
                };
                let answers = Answers::default();
                for _ in 0..K {
                    group.spawn(waits_on_drop(&pool, &answers));
                }
                let dropped = group.cancel();
                if let Some(gate) = gate {
                    gate.open();
                }
                pool.resume();
                assert_eq!(group.wait(), Ok(()));
                assert_refused_and_unchanged(&pool, &answers, dropped);
            },
        );
    }
}

/// The same through `JoinHandle::cancel`, one task at a time.
#[test]
fn a_destructor_run_by_a_handle_cancel_cannot_wait_for_its_pool() {
    watchdog(30, "waits from a handle's cancel", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let gate = stall_all(&pool);
        let answers = Answers::default();
        let handles: Vec<_> = (0..K)
            .map(|_| pool.spawn(waits_on_drop(&pool, &answers)))
            .collect();
        let dropped = handles.iter().filter(|h| h.cancel()).count();
        gate.open();
        assert_refused_and_unchanged(&pool, &answers, dropped);
    });
}

/// Purging B from the destructor of A's task, and waiting for A from the destructor of B's:
/// both pools are the thread's (the marks nest), so the wait for A is refused; a wait for B
/// from A's destructor, B being quiet, returns.
#[test]
fn destructors_know_every_pool_they_were_dropped_by() {
    watchdog(30, "nested purges", || {
        let a = Arc::new(Pool::builder().workers(1).build().unwrap());
        let b = Arc::new(Pool::builder().workers(1).build().unwrap());
        a.pause();
        b.pause();
        let answers = Answers::default();
        b.submit(waits_on_drop(&a, &answers)).unwrap();
        /// Purges its pool when dropped; records how many, and what a wait then answered.
        struct PurgesOnDrop(Arc<Pool>, Arc<Mutex<Option<PurgedThenWaited>>>);
        type PurgedThenWaited = (usize, Result<(), WaitError>);
        impl Drop for PurgesOnDrop {
            fn drop(&mut self) {
                let purged = self.0.purge();
                *self.1.lock().unwrap() = Some((purged, self.0.wait()));
            }
        }
        let seen = Arc::new(Mutex::new(None));
        let guard = PurgesOnDrop(b.clone(), seen.clone());
        a.submit(move || {
            let _keep = &guard;
        })
        .unwrap();
        assert_eq!(a.purge(), 1);
        assert_eq!(*seen.lock().unwrap(), Some((1, Ok(()))));
        let answers = answers.lock().unwrap();
        assert_eq!(answers.len(), 1);
        assert!(answers[0]
            .iter()
            .all(|r| *r == Err(WaitError::WouldDeadlock)));
        a.resume();
        b.resume();
        a.shutdown().unwrap();
        b.shutdown().unwrap();
        assert_eq!((a.stats().dropped, b.stats().dropped), (1, 1));
    });
}
