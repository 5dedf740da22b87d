//! `Pool::purge`: drops what is queued (shared queues, workers' deques, bundles), runs each
//! task's destructor, counts it dropped, frees its capacity, and keeps the pool open; jobs
//! someone blocks on (`join` halves, scope tasks) are left to run.

mod common;

use common::{stall_all, watchdog, Live};
use flock::{JoinError, Pool, TaskGroup};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn count() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

#[test]
fn purge_drops_queued_tasks_and_keeps_the_pool_open() {
    watchdog(30, "purge", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        let gate = stall_all(&pool);
        let (live, ran) = (count(), count());
        for _ in 0..50 {
            let (l, r) = (Live::new(&live), ran.clone());
            pool.submit(move || {
                let _l = l;
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
        // A batch, queued as bundles.
        let batch: Vec<_> = (0..40)
            .map(|_| {
                let (l, r) = (Live::new(&live), ran.clone());
                move || {
                    let _l = l;
                    r.fetch_add(1, Ordering::SeqCst);
                }
            })
            .collect();
        pool.submit_batch(batch).unwrap();
        let handle = pool.spawn(|| 1);
        let group = TaskGroup::new(&pool);
        for _ in 0..5 {
            let l = Live::new(&live);
            group.spawn(move || drop(l));
        }
        assert_eq!(pool.purge(), 50 + 40 + 1 + 5);
        assert_eq!(live.load(Ordering::SeqCst), 0, "destructors ran");
        assert!(matches!(handle.join(), Err(JoinError::Dropped)));
        group.wait().unwrap();
        assert_eq!(pool.purge(), 0, "nothing left");
        gate.open();
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!(s.dropped, 96);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(s.queued, 0);
        // Still open.
        let r = ran.clone();
        pool.submit(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn purge_frees_capacity_for_blocked_submitters() {
    watchdog(30, "purge and capacity", || {
        let pool = Pool::builder()
            .workers(1)
            .capacity(4)
            .when_full(flock::Backpressure::Reject)
            .build()
            .unwrap();
        let gate = stall_all(&pool);
        for _ in 0..4 {
            pool.submit(|| ()).unwrap();
        }
        assert!(pool.submit(|| ()).is_err(), "full");
        assert_eq!(pool.purge(), 4);
        for _ in 0..4 {
            pool.submit(|| ()).unwrap();
        }
        gate.open();
        pool.wait().unwrap();
    });
}

#[test]
fn purge_leaves_join_and_scope_work_alone() {
    watchdog(60, "purge with joins and scopes", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let purger = {
            let (pool, stop) = (pool.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    n += pool.purge();
                    std::thread::yield_now();
                }
                n
            })
        };
        fn fib(pool: &Pool, n: u64) -> u64 {
            if n < 2 {
                return n;
            }
            let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2));
            a + b
        }
        for _ in 0..20 {
            let p = pool.clone();
            assert_eq!(
                pool.spawn(move || fib(&p, 15)).join().ok().unwrap_or(610),
                610
            );
            let sum = AtomicUsize::new(0);
            pool.scope(|s| {
                for i in 0..50 {
                    let sum = &sum;
                    s.spawn(move |_| {
                        sum.fetch_add(i, Ordering::SeqCst);
                    });
                }
            });
            assert_eq!(sum.load(Ordering::SeqCst), 49 * 50 / 2);
        }
        stop.store(true, Ordering::SeqCst);
        purger.join().unwrap();
    });
}

#[test]
fn purge_racing_submitters_balances_the_books() {
    watchdog(60, "purge racing submitters", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(2)
                .lanes(&[("a", 2), ("b", 1)])
                .build()
                .unwrap(),
        );
        let (live, ran) = (count(), count());
        let per_thread = if cfg!(miri) { 50 } else { 5_000 };
        let submitters: Vec<_> = (0..2)
            .map(|t| {
                let (pool, live, ran) = (pool.clone(), live.clone(), ran.clone());
                std::thread::spawn(move || {
                    for i in 0..per_thread {
                        let (l, r) = (Live::new(&live), ran.clone());
                        pool.submit_to((t + i) % 2, move || {
                            let _l = l;
                            r.fetch_add(1, Ordering::SeqCst);
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        let mut purged = 0;
        while submitters.iter().any(|s| !s.is_finished()) {
            purged += pool.purge();
        }
        for s in submitters {
            s.join().unwrap();
        }
        purged += pool.purge();
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!(live.load(Ordering::SeqCst), 0, "every closure dropped once");
        assert_eq!(ran.load(Ordering::SeqCst) + purged, 2 * per_thread);
        assert_eq!(s.dropped as usize, purged);
        assert_eq!(s.completed as usize + purged, 2 * per_thread);
    });
}
