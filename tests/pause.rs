//! Pause and resume: a paused pool starts no task (running ones finish, and what they wait
//! for in `join` or `scope` still runs), keeps queueing, and says so to `wait`; shutdown of a
//! paused pool drains or drops its queue.

// `Pool::wait_timeout` (the bool form) is deprecated, and still tested here.
#![allow(deprecated)]

mod common;

use common::{all_parked, eventually, open_when_shut_down, stall_all, watchdog, Gate, Live};
use flock::{Pool, WaitError, WorkerState};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

/// A chance for a wrongly started task to run; never a condition for correctness.
fn give_it_a_chance() {
    std::thread::sleep(Duration::from_millis(50));
}

fn count_task(ran: &Arc<AtomicUsize>) -> impl FnOnce() + Send + 'static {
    let ran = ran.clone();
    move || {
        ran.fetch_add(1, SeqCst);
    }
}

#[test]
fn a_paused_pool_queues_tasks_without_starting_them() {
    watchdog(60, "pause then submit", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        all_parked(&pool);
        pool.pause();
        assert!(pool.is_paused());
        let ran = counter();
        for _ in 0..10 {
            pool.submit(count_task(&ran)).unwrap();
        }
        give_it_a_chance();
        assert_eq!(
            ran.load(SeqCst),
            0,
            "a task started while the pool was paused"
        );
        let s = pool.stats();
        assert!(s.paused);
        assert_eq!((s.queued, s.in_flight, s.completed), (10, 10, 0), "{s}");
        assert!(s.to_string().contains("PAUSED"), "{s}");
        pool.resume();
        assert!(!pool.is_paused());
        assert!(!pool.stats().paused);
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 10);
    });
}

#[test]
fn a_running_task_finishes_while_queued_ones_wait() {
    watchdog(60, "running task finishes while paused", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = Gate::new();
        let (started_tx, started) = mpsc::channel();
        let finished = Arc::new(AtomicBool::new(false));
        let (g, f) = (gate.clone(), finished.clone());
        pool.submit(move || {
            started_tx.send(()).unwrap();
            g.wait();
            f.store(true, SeqCst);
        })
        .unwrap();
        started.recv().unwrap();
        pool.pause();
        let ran = counter();
        for _ in 0..5 {
            pool.submit(count_task(&ran)).unwrap();
        }
        gate.open();
        eventually(|| pool.stats().completed == 1);
        assert!(finished.load(SeqCst));
        give_it_a_chance();
        assert_eq!(
            ran.load(SeqCst),
            0,
            "a queued task started while the pool was paused"
        );
        assert_eq!(pool.stats().queued, 5);
        pool.resume();
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 5);
    });
}

#[test]
fn wait_while_paused_reports_paused_instead_of_hanging() {
    watchdog(60, "wait while paused", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        all_parked(&pool);
        pool.pause();
        assert_eq!(
            pool.wait(),
            Ok(()),
            "nothing outstanding: nothing to wait for"
        );
        let ran = counter();
        for _ in 0..3 {
            pool.submit(count_task(&ran)).unwrap();
        }
        assert_eq!(pool.wait(), Err(WaitError::Paused));
        assert!(!pool.wait_timeout(Duration::from_millis(20)));
        pool.resume();
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 3);

        // A wait already blocked on running work when the pool is paused.
        let gate = stall_all(&pool);
        for _ in 0..3 {
            pool.submit(count_task(&ran)).unwrap();
        }
        let (done_tx, done) = mpsc::channel();
        let p = pool.clone();
        let waiter = std::thread::spawn(move || done_tx.send(p.wait()).unwrap());
        give_it_a_chance();
        assert!(
            done.try_recv().is_err(),
            "wait() returned while tasks were outstanding and the pool was not paused"
        );
        pool.pause();
        assert_eq!(done.recv().unwrap(), Err(WaitError::Paused));
        waiter.join().unwrap();
        gate.open();
        pool.resume();
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 6);
    });
}

#[test]
fn join_and_scope_inside_a_running_task_complete_while_paused() {
    watchdog(60, "join and scope while paused", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let gate = Gate::new();
        let (started_tx, started) = mpsc::channel();
        let forks = {
            let (p, gate, started_tx) = (pool.clone(), gate.clone(), started_tx.clone());
            pool.spawn(move || {
                started_tx.send(()).unwrap();
                gate.wait();
                let (a, b) = p.join(|| p.join(|| 1, || 2), || 3);
                let mut parts = [0u64; 8];
                p.scope(|s| {
                    for (i, part) in parts.iter_mut().enumerate() {
                        s.spawn(move |_| *part = i as u64 + 1);
                    }
                });
                a.0 + a.1 + b + parts.iter().sum::<u64>()
            })
        };
        let loop_sum = {
            let (p, gate) = (pool.clone(), gate.clone());
            pool.spawn(move || {
                started_tx.send(()).unwrap();
                gate.wait();
                let sum = AtomicU64::new(0);
                p.for_each(0..100, Some(1), |i| {
                    sum.fetch_add(i as u64, SeqCst);
                });
                sum.into_inner()
            })
        };
        started.recv().unwrap();
        started.recv().unwrap(); // both workers are inside a task
        pool.pause();
        let ran = counter();
        for _ in 0..5 {
            pool.submit(count_task(&ran)).unwrap();
        }
        gate.open();
        assert_eq!(forks.join().unwrap(), 6 + 36);
        assert_eq!(loop_sum.join().unwrap(), 4950);
        give_it_a_chance();
        assert_eq!(
            ran.load(SeqCst),
            0,
            "a queued task started while the pool was paused"
        );
        assert_eq!(pool.stats().queued, 5);
        pool.resume();
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 5);
    });
}

#[test]
fn graceful_shutdown_of_a_paused_pool_runs_its_queue() {
    watchdog(60, "shutdown while paused", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        all_parked(&pool);
        pool.pause();
        let ran = counter();
        for _ in 0..20 {
            pool.submit(count_task(&ran)).unwrap();
        }
        pool.shutdown().unwrap();
        assert_eq!(ran.load(SeqCst), 20);
        let s = pool.stats();
        assert_eq!((s.completed, s.dropped, s.in_flight), (20, 0, 0), "{s}");
    });
}

#[test]
fn shutdown_now_of_a_paused_pool_drops_its_queue() {
    watchdog(60, "shutdown_now while paused", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        all_parked(&pool);
        pool.pause();
        let ran = counter();
        let live = counter();
        for _ in 0..20 {
            let (ran, guard) = (ran.clone(), Live::new(&live));
            pool.submit(move || {
                drop(guard);
                ran.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        assert_eq!(live.load(SeqCst), 20);
        assert_eq!(pool.shutdown_now().unwrap(), 20);
        assert_eq!(ran.load(SeqCst), 0, "dropped, not run");
        assert_eq!(live.load(SeqCst), 0, "every dropped task's destructor ran");
        let s = pool.stats();
        assert_eq!((s.completed, s.dropped, s.in_flight), (0, 20, 0), "{s}");
    });
}

#[test]
fn submit_batch_while_paused_queues_the_whole_batch() {
    watchdog(60, "submit_batch while paused", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        all_parked(&pool);
        pool.pause();
        let ran = counter();
        let tasks: Vec<_> = (0..500).map(|_| count_task(&ran)).collect();
        assert_eq!(pool.submit_batch(tasks).unwrap(), 500);
        give_it_a_chance();
        assert_eq!(
            ran.load(SeqCst),
            0,
            "a task started while the pool was paused"
        );
        let s = pool.stats();
        assert_eq!((s.queued, s.in_flight), (500, 500), "{s}");
        pool.resume();
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 500);
    });
}

/// Bug: a worker that is spinning (idle, looking for work before it parks) when `pause()` is
/// called still starts the next task it finds: `WorkerThread::main_loop`'s spin loop runs
/// `find_work` + `execute` without looking at the pause bit, which only the top of the loop
/// reads. A long `spin_limit` makes the window as wide as the spin; the default one makes it
/// short but real.
#[test]
fn a_spinning_worker_does_not_start_tasks_while_paused() {
    watchdog(60, "pause vs spinning worker", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .spin_limit(u32::MAX)
                .build()
                .unwrap(),
        );
        eventually(|| pool.stats().per_worker[0].state == WorkerState::Spinning);
        pool.pause();
        let ran = counter();
        pool.submit(count_task(&ran)).unwrap();
        give_it_a_chance();
        let ran_while_paused = ran.load(SeqCst);
        pool.resume();
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 1);
        // The idle worker spins for ~ever: end the test through a task that returns only
        // once the shutdown has begun, so that the worker sees it before it spins again.
        let gate = Gate::new();
        let (started_tx, started) = mpsc::channel();
        let g = gate.clone();
        pool.submit(move || {
            started_tx.send(()).unwrap();
            g.wait();
        })
        .unwrap();
        started.recv().unwrap();
        let opener = open_when_shut_down(&pool, &gate);
        pool.shutdown().unwrap();
        opener.join().unwrap();
        assert_eq!(
            ran_while_paused, 0,
            "a task submitted after pause() returned was started by the spinning worker"
        );
    });
}

/// Bug: while paused, a worker waiting in `join`/`scope` runs tasks from workers' deques,
/// meant to be what running tasks spawned. But a worker's deque also holds tasks submitted
/// from outside that it moved there in a batch from the shared queue (`steal_batch_and_pop`
/// in `steal_from_injector`), so such a waiter starts queued outside tasks while paused.
/// `fifo()` makes it deterministic: the waiter's own child is behind them in its deque.
#[test]
fn a_waiting_worker_does_not_start_outside_tasks_while_paused() {
    watchdog(60, "pause vs batch in a deque", || {
        let pool = Arc::new(Pool::builder().workers(1).fifo().build().unwrap());
        let stall = stall_all(&pool);
        // T, then ten outside tasks, queue behind the stall; the worker will take T together
        // with some of them into its deque.
        let gate = Gate::new();
        let (started_tx, started) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        let (p, g) = (pool.clone(), gate.clone());
        pool.submit(move || {
            started_tx.send(()).unwrap();
            g.wait();
            p.scope(|s| s.spawn(|_| ()));
            done_tx.send(()).unwrap();
        })
        .unwrap();
        let ran = counter();
        for _ in 0..10 {
            pool.submit(count_task(&ran)).unwrap();
        }
        stall.open();
        started.recv().unwrap();
        pool.pause();
        let queued_in_deques = pool.stats().queued - pool.stats().lanes[0].queued;
        gate.open();
        done.recv().unwrap();
        give_it_a_chance();
        let ran_while_paused = ran.load(SeqCst);
        pool.resume();
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 10);
        assert_eq!(
            ran_while_paused, 0,
            "{ran_while_paused} outside tasks started while paused ({queued_in_deques} of them \
             were in the worker's deque when it paused)"
        );
    });
}

/// A task that paused the pool and waits in a scope for a task it spawned, in a pool with
/// latency tracking (scope tasks go to the lane deque): `purge()` takes that task out of the
/// deque and keeps it, and the waiting worker must still reach it while the pool is paused.
#[test]
fn a_scope_waiting_in_a_paused_pool_runs_the_task_purge_kept() {
    watchdog(30, "scope wait across purge while paused", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .track_latency(true)
                .build()
                .unwrap(),
        );
        let (ready_tx, ready) = mpsc::channel();
        let (purged_tx, purged) = mpsc::channel::<()>();
        let (done_tx, done) = mpsc::channel();
        let ran = Arc::new(AtomicBool::new(false));
        let (p, r) = (pool.clone(), ran.clone());
        pool.submit(move || {
            // In place (on this worker, as `scope` from here would be): the body borrows the
            // receiver, which is not `Sync`.
            p.in_place_scope(|s| {
                s.spawn(|_| r.store(true, SeqCst));
                p.pause();
                ready_tx.send(()).unwrap();
                purged.recv().unwrap();
            });
            done_tx.send(r.load(SeqCst)).unwrap();
            p.resume();
        })
        .unwrap();
        ready.recv().unwrap();
        assert_eq!(pool.purge(), 0, "a scope's task is never dropped");
        purged_tx.send(()).unwrap();
        assert!(
            done.recv().unwrap(),
            "the scope returned before its task ran"
        );
        pool.wait().unwrap();
        assert!(ran.load(SeqCst));
    });
}

/// As above with `join` in a pool with lanes (its second half goes to the lane deque).
#[test]
fn a_join_waiting_in_a_paused_pool_runs_the_half_purge_kept() {
    watchdog(30, "join wait across purge while paused", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .lanes(&[("a", 1), ("b", 1)])
                .build()
                .unwrap(),
        );
        let (ready_tx, ready) = mpsc::channel();
        let (purged_tx, purged) = mpsc::channel::<()>();
        let (done_tx, done) = mpsc::channel();
        let p = pool.clone();
        pool.submit(move || {
            let q = p.clone();
            let ((), b) = q.join(
                move || {
                    p.pause();
                    ready_tx.send(()).unwrap();
                    purged.recv().unwrap();
                },
                || 7,
            );
            done_tx.send(b).unwrap();
            q.resume();
        })
        .unwrap();
        ready.recv().unwrap();
        assert_eq!(pool.purge(), 0, "a join half is never dropped");
        purged_tx.send(()).unwrap();
        assert_eq!(done.recv().unwrap(), 7);
        pool.wait().unwrap();
    });
}

/// A task that paused the pool waits in a scope for a task that another worker's task
/// spawned; that worker, parked by the pause with the task on its deque, is retired by a
/// shrink and hands it over: the waiting worker must still reach it while the pool is
/// paused.
#[test]
fn a_scope_waiting_in_a_paused_pool_runs_the_task_a_retiring_worker_handed_over() {
    watchdog(30, "scope wait across a shrink while paused", || {
        let (stopped_tx, stopped) = mpsc::channel();
        let stopped_tx = std::sync::Mutex::new(stopped_tx);
        let pool = Arc::new(
            Pool::builder()
                .workers(2)
                .on_worker_stop(move |index| {
                    if index == 1 {
                        stopped_tx.lock().unwrap().send(()).unwrap();
                    }
                })
                .build()
                .unwrap(),
        );
        let ran = Arc::new(AtomicBool::new(false));
        let stopped = std::sync::Mutex::new(stopped);
        let returned = pool.broadcast(|index| {
            if index != 0 {
                return true;
            }
            let (spawned_tx, spawned) = mpsc::channel();
            let (paused_tx, paused) = mpsc::channel::<()>();
            // In place (on worker 0, as `scope` from here would be): the body borrows the
            // receiver, which is not `Sync`.
            pool.in_place_scope(|s| {
                let ran = &ran;
                s.spawn(move |s| {
                    // Worker 0 is blocked below: worker 1 runs this.
                    assert_eq!(flock::current_worker_index(), Some(1));
                    s.spawn(move |_| ran.store(true, SeqCst));
                    spawned_tx.send(()).unwrap();
                    paused.recv().unwrap();
                });
                spawned.recv().unwrap();
                pool.pause();
                paused_tx.send(()).unwrap();
                pool.resize(1).unwrap();
                stopped.lock().unwrap().recv().unwrap();
            });
            let ran = ran.load(SeqCst);
            pool.resume();
            ran
        });
        assert_eq!(returned, [true, true]);
        pool.wait().unwrap();
        assert_eq!(pool.workers(), 1);
    });
}

/// While paused, submissions still queue "within capacity" (README): a paused pool of
/// capacity 4 takes four tasks from outside and refuses the fifth as `Full` (handing it
/// back), under `Reject`; under `Block` with a timeout the fifth waits and is refused as
/// `Timeout`; the four run once the pool resumes.
#[test]
fn a_paused_pool_queues_within_capacity() {
    watchdog(30, "paused pool and capacity", || {
        for policy in [flock::Backpressure::Reject, flock::Backpressure::Block] {
            let pool = Pool::builder()
                .workers(2)
                .capacity(4)
                .when_full(policy)
                .block_timeout(Duration::from_millis(20))
                .build()
                .unwrap();
            pool.pause();
            let ran = Arc::new(AtomicUsize::new(0));
            for i in 0..4 {
                let r = ran.clone();
                assert!(
                    pool.submit(move || {
                        r.fetch_add(1, SeqCst);
                    })
                    .is_ok(),
                    "{policy:?}: submit {i} while paused"
                );
            }
            let fifth = Arc::new(AtomicBool::new(false));
            let f = fifth.clone();
            let refused = pool
                .submit(move || f.store(true, SeqCst))
                .expect_err("over capacity while paused");
            let want = match policy {
                flock::Backpressure::Reject => flock::RejectReason::Full,
                _ => flock::RejectReason::Timeout,
            };
            assert_eq!(refused.reason(), want, "{policy:?}");
            refused.into_inner()();
            assert!(fifth.load(SeqCst), "{policy:?}: handed back");
            assert_eq!(ran.load(SeqCst), 0, "{policy:?}: ran while paused");
            pool.resume();
            pool.wait().unwrap();
            assert_eq!(ran.load(SeqCst), 4, "{policy:?}");
        }
    });
}
