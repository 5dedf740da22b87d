//! Adversarial tests: a systems programmer trying to break the pool from its public API.
//!
//! Each test aims at a promise of the README ("What flock guarantees") or of the docs, from
//! an angle the other suites do not take: lifecycle calls and the pool's last handle from
//! inside its own threads (tasks, hooks, the panic handler, tasks run off the workers),
//! destructors that panic or re-enter the pool while the pool drops their task, thread-local
//! destructors that use a pool, capacity-1 backpressure under a concurrent shutdown, cancels
//! racing the workers, and pools waiting on each other. Every test is guarded by a watchdog,
//! and none depends on how long anything takes.

// `Pool::wait_timeout` (the bool form) is deprecated, and still tested here.
#![allow(deprecated)]

mod common;

use common::{open_when_shut_down, stall_all, watchdog, Gate, Live};
use flock::{Backpressure, JoinError, Pool, RejectReason, TaskPanic, WaitError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

/// The books of `Stats` at quiescence: what was accepted ended one way or another.
fn assert_balanced(pool: &Pool) -> flock::Stats {
    let s = pool.stats();
    assert_eq!(s.in_flight, 0, "nothing in flight at quiescence\n{s}");
    assert_eq!(
        s.submitted,
        s.completed + s.panicked + s.dropped,
        "submitted = completed + panicked + dropped\n{s}"
    );
    s
}

/// Panics when dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("destructor bomb");
    }
}

/// A value whose destructor panics, counted live like `Live` (the count drops first).
struct LiveBomb(#[allow(dead_code)] Live, PanicsOnDrop);

// ----- lifecycle calls from inside the pool's own threads --------------------------------

/// `shutdown_now` and `shutdown_timeout` from one of the pool's tasks would wait for the
/// calling task itself: both are refused with `WouldDeadlock` and change nothing, as
/// `shutdown` and `wait` are (tests/submit_wait.rs covers those two).
#[test]
fn shutdown_now_and_shutdown_timeout_from_a_task_are_refused() {
    watchdog(20, "shutdown_now from a task", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let p = pool.clone();
        let (now, timed) = pool
            .spawn(move || {
                (
                    p.shutdown_now(),
                    p.shutdown_timeout(Duration::from_millis(10)),
                )
            })
            .join()
            .unwrap();
        assert_eq!(now, Err(WaitError::WouldDeadlock));
        assert_eq!(timed, Err(WaitError::WouldDeadlock));
        assert!(!pool.is_shutdown(), "a refused shutdown changes nothing");
        assert_eq!(pool.spawn(|| 5).join().unwrap(), 5);
        pool.shutdown().unwrap();
    });
}

/// A task run on the submitting thread (`CallerRuns`) or on a helper thread
/// (`SpawnThread`) is one of the pool's tasks: every lifecycle call that would wait for the
/// pool is refused there (the README: "all take `&self` and race safely"), none hangs.
#[test]
fn lifecycle_calls_from_tasks_run_off_the_workers_are_refused() {
    for policy in [Backpressure::CallerRuns, Backpressure::SpawnThread] {
        watchdog(
            20,
            &format!("lifecycle calls under {policy:?}"),
            move || {
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
                let p = pool.clone();
                pool.submit(move || {
                    tx.send((
                        p.wait(),
                        p.wait_timeout(Duration::from_secs(5)),
                        p.shutdown_timeout(Duration::from_secs(5)),
                        p.shutdown_now(),
                        p.shutdown(),
                    ))
                    .unwrap();
                })
                .unwrap();
                let got = rx
                    .recv_timeout(Duration::from_secs(10))
                    .expect("the task ran");
                assert_eq!(
                    got,
                    (
                        Err(WaitError::WouldDeadlock),
                        false,
                        Err(WaitError::WouldDeadlock),
                        Err(WaitError::WouldDeadlock),
                        Err(WaitError::WouldDeadlock)
                    ),
                    "{policy:?}"
                );
                assert!(!pool.is_shutdown());
                gate.open();
                pool.wait().unwrap();
                assert_balanced(&pool);
                pool.shutdown().unwrap();
            },
        );
    }
}

/// What a hook saw: the worker's index and what its call returned.
type HookResult = (usize, Result<(), WaitError>);

/// The stop hook of a worker retiring after a shrink runs on that worker: a `shutdown` from
/// there would join the calling thread. It must come back (refused, as `resize` is from
/// there, builder docs of `on_worker_stop`), not hang; the pool then shuts down normally.
#[test]
fn shutdown_from_a_retiring_workers_stop_hook_does_not_hang() {
    watchdog(20, "shutdown from a stop hook", || {
        let slot: Arc<Mutex<Option<Arc<Pool>>>> = Arc::default();
        let seen: Arc<Mutex<Vec<HookResult>>> = Arc::default();
        let (s, log) = (slot.clone(), seen.clone());
        let pool = Arc::new(
            Pool::builder()
                .workers(2)
                .max_workers(2)
                .on_worker_stop(move |i| {
                    let pool = s.lock().unwrap().clone();
                    if let Some(pool) = pool {
                        log.lock().unwrap().push((i, pool.shutdown()));
                    }
                })
                .build()
                .unwrap(),
        );
        *slot.lock().unwrap() = Some(pool.clone());
        pool.resize(1).unwrap();
        common::eventually(|| !seen.lock().unwrap().is_empty());
        assert_eq!(
            *seen.lock().unwrap(),
            vec![(1, Err(WaitError::WouldDeadlock))]
        );
        assert!(!pool.is_shutdown());
        assert_eq!(pool.spawn(|| 3).join().unwrap(), 3);
        *slot.lock().unwrap() = None;
        pool.shutdown().unwrap();
    });
}

// ----- the last handle of a pool dropped inside the pool ---------------------------------

/// The last `Arc<Pool>` dropped by one of its tasks closes the pool gracefully (`Drop`): the
/// tasks queued behind it still run, spawned handles get their values, and every worker
/// stops. (tests/shutdown.rs checks that it does not hang; this checks that nothing queued
/// is lost.)
#[test]
fn last_handle_dropped_by_a_task_still_runs_everything_queued() {
    watchdog(20, "last handle dropped inside", || {
        let stopped = counter();
        let s = stopped.clone();
        let pool = Arc::new(
            Pool::builder()
                .workers(2)
                .on_worker_stop(move |_| {
                    s.fetch_add(1, SeqCst);
                })
                .build()
                .unwrap(),
        );
        let gate = stall_all(&pool);
        let inner = pool.clone();
        let (g, dropped_tx) = (Gate::new(), mpsc::channel());
        let (g2, tx) = (g.clone(), dropped_tx.0);
        pool.submit(move || {
            g2.wait();
            drop(inner); // the last handle: `Drop` runs on a worker
            tx.send(()).unwrap();
        })
        .unwrap();
        let (ran, live) = (counter(), counter());
        for _ in 0..200 {
            let (ran, l) = (ran.clone(), Live::new(&live));
            pool.submit(move || {
                let _l = l;
                ran.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        let handles: Vec<_> = (0..20u64).map(|i| pool.spawn(move || i * 3)).collect();
        drop(pool);
        g.open();
        gate.open();
        dropped_tx.1.recv_timeout(Duration::from_secs(10)).unwrap();
        let sum: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(sum, 3 * 190);
        common::eventually(|| stopped.load(SeqCst) == 2);
        assert_eq!(ran.load(SeqCst), 200, "every queued task ran");
        assert_eq!(live.load(SeqCst), 0);
    });
}

/// The last handle dropped by the panic handler, on a worker: as from a task, the pool
/// closes gracefully and every worker stops; nothing queued is lost.
#[test]
fn last_handle_dropped_by_the_panic_handler() {
    watchdog(20, "last handle dropped by the panic handler", || {
        let slot: Arc<Mutex<Option<Arc<Pool>>>> = Arc::default();
        let stopped = counter();
        let (s, st) = (slot.clone(), stopped.clone());
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .panic_handler(move |_| {
                    let last = s.lock().unwrap().take();
                    drop(last);
                })
                .on_worker_stop(move |_| {
                    st.fetch_add(1, SeqCst);
                })
                .build()
                .unwrap(),
        );
        let gate = stall_all(&pool);
        pool.submit(|| panic!("hand the pool to the handler"))
            .unwrap();
        let ran = counter();
        for _ in 0..50 {
            let ran = ran.clone();
            pool.submit(move || {
                ran.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        let weak = Arc::downgrade(&pool);
        *slot.lock().unwrap() = Some(pool); // the slot holds the only handle now
        gate.open();
        common::eventually(|| stopped.load(SeqCst) == 1);
        assert_eq!(
            ran.load(SeqCst),
            50,
            "the tasks queued behind the panic ran"
        );
        assert!(weak.upgrade().is_none());
    });
}

/// The last handle dropped by a retiring worker's stop hook (after a shrink): the pool
/// closes gracefully from there; the remaining worker drains and stops.
#[test]
fn last_handle_dropped_by_a_retiring_workers_stop_hook() {
    watchdog(20, "last handle dropped by a stop hook", || {
        let slot: Arc<Mutex<Option<Arc<Pool>>>> = Arc::default();
        let stopped = counter();
        let (s, st) = (slot.clone(), stopped.clone());
        let pool = Arc::new(
            Pool::builder()
                .workers(2)
                .max_workers(2)
                .on_worker_stop(move |i| {
                    if i == 1 {
                        let last = s.lock().unwrap().take();
                        if let Some(last) = last {
                            // Wait until ours is the last handle (the test drops its own).
                            while Arc::strong_count(&last) > 1 {
                                std::thread::yield_now();
                            }
                            drop(last);
                        }
                    }
                    st.fetch_add(1, SeqCst);
                })
                .build()
                .unwrap(),
        );
        let ran = counter();
        let gate = Gate::new();
        {
            let (ran, gate) = (ran.clone(), gate.clone());
            pool.submit(move || {
                gate.wait();
                ran.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        let weak = Arc::downgrade(&pool);
        *slot.lock().unwrap() = Some(pool.clone());
        pool.resize(1).unwrap();
        drop(pool);
        gate.open();
        common::eventually(|| stopped.load(SeqCst) == 2);
        assert_eq!(ran.load(SeqCst), 1);
        common::eventually(|| weak.upgrade().is_none());
    });
}

/// The last handle dropped by a task that runs on a `SpawnThread` helper thread: the helper
/// is not a worker, but `Drop` must still not wait for the task that drops it.
#[test]
fn last_handle_dropped_by_a_task_on_a_helper_thread() {
    watchdog(20, "last handle dropped on a helper thread", || {
        let stopped = counter();
        let st = stopped.clone();
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .capacity(1)
                .when_full(Backpressure::SpawnThread)
                .on_worker_stop(move |_| {
                    st.fetch_add(1, SeqCst);
                })
                .build()
                .unwrap(),
        );
        let gate = stall_all(&pool);
        let ran = counter();
        let r = ran.clone();
        pool.submit(move || {
            r.fetch_add(1, SeqCst);
        })
        .unwrap(); // queued: the queue is full now
        let (inner, g) = (pool.clone(), Gate::new());
        let (g2, (tx, rx)) = (g.clone(), mpsc::channel());
        pool.submit(move || {
            g2.wait();
            drop(inner); // the last handle, on the helper thread
            tx.send(()).unwrap();
        })
        .unwrap();
        drop(pool);
        g.open();
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the helper's task returned from dropping the pool");
        gate.open();
        common::eventually(|| stopped.load(SeqCst) == 1);
        assert_eq!(ran.load(SeqCst), 1, "the queued task ran");
    });
}

// ----- the panic handler re-entering the pool --------------------------------------------

/// A panic handler may submit follow-up work (a restart, say): on a worker it goes to the
/// worker's own queue and runs; the books balance.
#[test]
fn a_panic_handler_that_submits_follow_up_work() {
    watchdog(20, "handler submits", || {
        let slot: Arc<Mutex<Option<Arc<Pool>>>> = Arc::default();
        let restarted = counter();
        let (s, r) = (slot.clone(), restarted.clone());
        let pool = Arc::new(
            Pool::builder()
                .workers(2)
                .panic_handler(move |_| {
                    let pool = s.lock().unwrap().clone();
                    if let Some(pool) = pool {
                        let r = r.clone();
                        pool.submit(move || {
                            r.fetch_add(1, SeqCst);
                        })
                        .expect("a submit from the handler on a worker is not refused");
                    }
                })
                .build()
                .unwrap(),
        );
        *slot.lock().unwrap() = Some(pool.clone());
        for _ in 0..100 {
            pool.submit(|| panic!("restart me")).unwrap();
        }
        pool.wait().unwrap();
        assert_eq!(restarted.load(SeqCst), 100);
        let s = assert_balanced(&pool);
        assert_eq!((s.submitted, s.completed, s.panicked), (200, 100, 100));
        *slot.lock().unwrap() = None;
    });
}

/// On a worker, the panic handler runs inside the pool: `wait` and `shutdown` from it are
/// refused with `WouldDeadlock` (they would wait for the panicked task itself), as from a
/// task.
#[test]
fn a_panic_handler_on_a_worker_may_call_wait_and_shutdown() {
    watchdog(20, "handler waits on a worker", || {
        let slot: Arc<Mutex<Option<Arc<Pool>>>> = Arc::default();
        let (tx, rx) = mpsc::channel();
        let (s, tx) = (slot.clone(), Mutex::new(tx));
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .panic_handler(move |p| {
                    let pool = s.lock().unwrap().clone();
                    if let Some(pool) = pool {
                        let got = (p.worker(), pool.wait(), pool.shutdown());
                        tx.lock().unwrap().send(got).unwrap();
                    }
                })
                .build()
                .unwrap(),
        );
        *slot.lock().unwrap() = Some(pool.clone());
        pool.submit(|| panic!("on a worker")).unwrap();
        let got = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the handler ran");
        assert_eq!(
            got,
            (
                Some(0),
                Err(WaitError::WouldDeadlock),
                Err(WaitError::WouldDeadlock)
            )
        );
        pool.wait().unwrap();
        assert_balanced(&pool);
        assert!(!pool.is_shutdown());
        *slot.lock().unwrap() = None;
    });
}

/// The panic handler of a task run on the caller (`CallerRuns`) or on a helper thread
/// (`SpawnThread`) runs on that thread. On a worker, `wait` from the handler is refused
/// with `WouldDeadlock` (above); off the workers it must not hang either: either refused or
/// it waits for a pool that goes quiet. (A handler that shuts the pool down on the first
/// panic is a natural thing to write; `shutdown` hangs the same way.)
fn a_panic_handler_off_the_workers_calls_wait(policy: Backpressure) {
    watchdog(10, &format!("handler waits under {policy:?}"), move || {
        let slot: Arc<Mutex<Option<Arc<Pool>>>> = Arc::default();
        let (tx, rx) = mpsc::channel();
        let (s, tx) = (slot.clone(), Mutex::new(tx));
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .capacity(1)
                .when_full(policy)
                .panic_handler(move |p| {
                    let pool = s.lock().unwrap().clone();
                    if let Some(pool) = pool {
                        let got = (p.worker(), pool.wait());
                        tx.lock().unwrap().send(got).unwrap();
                    }
                })
                .build()
                .unwrap(),
        );
        *slot.lock().unwrap() = Some(pool.clone());
        let gate = stall_all(&pool);
        pool.submit(|| ()).unwrap(); // fills the queue: the next task runs off the workers
        pool.submit(|| panic!("off the workers")).unwrap();
        gate.open(); // the pool can go quiet, but for the panicked task itself
        let (worker, waited) = rx
            .recv_timeout(Duration::from_secs(8))
            .expect("the handler's wait returned");
        assert_eq!(worker, None, "{policy:?}: ran off the workers");
        assert!(
            matches!(waited, Ok(()) | Err(WaitError::WouldDeadlock)),
            "{waited:?}"
        );
        pool.wait().unwrap();
        assert_balanced(&pool);
        *slot.lock().unwrap() = None;
    });
}

#[test]
fn a_panic_handler_of_a_caller_runs_task_may_call_wait() {
    a_panic_handler_off_the_workers_calls_wait(Backpressure::CallerRuns);
}

#[test]
fn a_panic_handler_of_a_helper_thread_task_may_call_wait() {
    a_panic_handler_off_the_workers_calls_wait(Backpressure::SpawnThread);
}

// ----- destructors that panic -------------------------------------------------------------

/// A task's captured value whose destructor panics, when the task runs: the value is dropped
/// at the end of the task, inside it, so the task counts as panicked and the panic reaches
/// the handler (submit) or the handle (spawn); the worker survives.
#[test]
fn a_captured_value_whose_destructor_panics_when_the_task_runs() {
    watchdog(20, "destructor panics at run", || {
        let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
        let log = seen.clone();
        let pool = Pool::builder()
            .workers(1)
            .panic_handler(move |p: TaskPanic| {
                log.lock().unwrap().push(p.message().map(str::to_owned))
            })
            .build()
            .unwrap();
        let (live, ran) = (counter(), counter());
        for _ in 0..10 {
            let (bomb, ran) = (LiveBomb(Live::new(&live), PanicsOnDrop), ran.clone());
            pool.submit(move || {
                let _bomb = bomb;
                ran.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        let bomb = LiveBomb(Live::new(&live), PanicsOnDrop);
        let h = pool.spawn(move || {
            let _bomb = bomb;
            7
        });
        let err = h.join().unwrap_err();
        assert!(err.is_panic(), "{err}");
        assert_eq!(err.to_string(), "the task panicked: destructor bomb");
        pool.wait().unwrap();
        assert_eq!((ran.load(SeqCst), live.load(SeqCst)), (10, 0));
        assert_eq!(seen.lock().unwrap().len(), 10);
        let s = assert_balanced(&pool);
        assert_eq!((s.submitted, s.completed, s.panicked), (11, 0, 11));
        assert_eq!(pool.spawn(|| 1).join().unwrap(), 1, "the worker survived");
    });
}

/// `shutdown_now` drops queued tasks whose closures' destructors panic: each destructor runs
/// once, no panic escapes, each task counts as dropped, spawned handles say `Dropped`, and
/// `shutdown_now` reports them all.
#[test]
fn shutdown_now_drops_tasks_whose_destructors_panic() {
    watchdog(20, "shutdown_now with panicking destructors", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let gate = stall_all(&pool);
        let (live, ran) = (counter(), counter());
        for _ in 0..100 {
            let (bomb, ran) = (LiveBomb(Live::new(&live), PanicsOnDrop), ran.clone());
            pool.submit(move || {
                let _bomb = bomb;
                ran.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        let handles: Vec<_> = (0..20)
            .map(|_| {
                let bomb = LiveBomb(Live::new(&live), PanicsOnDrop);
                pool.spawn(move || {
                    let _bomb = bomb;
                })
            })
            .collect();
        let opener = open_when_shut_down(&pool, &gate);
        let dropped = pool.shutdown_now().unwrap();
        opener.join().unwrap();
        assert_eq!(dropped, 120);
        assert_eq!((ran.load(SeqCst), live.load(SeqCst)), (0, 0));
        for h in handles {
            assert!(matches!(h.join(), Err(JoinError::Dropped)));
        }
        let s = assert_balanced(&pool);
        assert_eq!((s.completed, s.dropped), (2, 120));
    });
}

/// `purge` and `TaskGroup::cancel` drop tasks whose destructors panic: counted, no panic
/// escapes `purge` (its docs), the pool stays usable.
#[test]
fn purge_drops_tasks_whose_destructors_panic() {
    watchdog(20, "purge with panicking destructors", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        let live = counter();
        for _ in 0..30 {
            let bomb = LiveBomb(Live::new(&live), PanicsOnDrop);
            pool.submit(move || drop(bomb)).unwrap();
        }
        let h = {
            let bomb = LiveBomb(Live::new(&live), PanicsOnDrop);
            pool.spawn(move || drop(bomb))
        };
        assert_eq!(pool.purge(), 31);
        assert_eq!(live.load(SeqCst), 0);
        assert!(matches!(h.join(), Err(JoinError::Dropped)));
        gate.open();
        pool.wait().unwrap();
        let s = assert_balanced(&pool);
        assert_eq!((s.completed, s.dropped), (1, 31));
    });
}

/// A task whose closure is refused comes back to the caller unrun; when its destructor then
/// panics, that is on the caller's thread, and the pool's books (refusals included) are
/// unaffected. For `spawn` (the pool drops a refused closure) the panic comes out of `spawn`,
/// as from a plain drop, and the pool is unaffected.
#[test]
fn refused_tasks_whose_destructors_panic_leave_the_books_balanced() {
    watchdog(20, "refused with panicking destructors", || {
        let pool = Pool::builder()
            .workers(1)
            .capacity(1)
            .when_full(Backpressure::Reject)
            .build()
            .unwrap();
        let gate = stall_all(&pool);
        pool.submit(|| ()).unwrap(); // fills the queue
        let live = counter();
        let bomb = LiveBomb(Live::new(&live), PanicsOnDrop);
        let err = pool.submit(move || drop(bomb)).unwrap_err();
        assert_eq!(err.reason(), RejectReason::Full);
        let raised = catch_unwind(AssertUnwindSafe(|| drop(err)));
        assert!(raised.is_err(), "the destructor ran on this thread");
        let bomb = LiveBomb(Live::new(&live), PanicsOnDrop);
        let raised = catch_unwind(AssertUnwindSafe(|| pool.spawn(move || drop(bomb))));
        if let Ok(h) = raised {
            assert!(matches!(
                h.join(),
                Err(JoinError::Refused(RejectReason::Full))
            ));
        }
        assert_eq!(live.load(SeqCst), 0);
        gate.open();
        pool.wait().unwrap();
        let s = assert_balanced(&pool);
        assert_eq!((s.submitted, s.completed), (2, 2));
        if cfg!(feature = "stats") {
            assert_eq!(s.rejected, 2, "{s}");
        }
    });
}

// ----- destructors that re-enter the pool while it drops their task ---------------------

/// A value whose destructor submits a follow-up task to the pool (a "compensation" task).
struct SubmitsOnDrop {
    pool: Arc<Pool>,
    live: Arc<AtomicUsize>,
    ran: Arc<AtomicUsize>,
    accepted: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
}

impl Drop for SubmitsOnDrop {
    fn drop(&mut self) {
        let (l, ran) = (Live::new(&self.live), self.ran.clone());
        match self.pool.submit(move || {
            let _l = l;
            ran.fetch_add(1, SeqCst);
        }) {
            Ok(()) => {
                self.accepted.fetch_add(1, SeqCst);
            }
            Err(e) => {
                self.refused.fetch_add(1, SeqCst);
                drop(e.into_inner());
            }
        }
    }
}

struct Reentry {
    live: Arc<AtomicUsize>,
    ran: Arc<AtomicUsize>,
    accepted: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
}

impl Reentry {
    fn new() -> Reentry {
        Reentry {
            live: counter(),
            ran: counter(),
            accepted: counter(),
            refused: counter(),
        }
    }
    fn value(&self, pool: &Arc<Pool>) -> SubmitsOnDrop {
        SubmitsOnDrop {
            pool: pool.clone(),
            live: self.live.clone(),
            ran: self.ran.clone(),
            accepted: self.accepted.clone(),
            refused: self.refused.clone(),
        }
    }
}

/// `shutdown_now` drops queued tasks whose destructors submit more work into the pool being
/// shut down: each follow-up is either accepted (and then run or dropped, counted) or handed
/// back; nothing is lost or leaked, nothing hangs, and the books balance.
#[test]
fn shutdown_now_of_tasks_whose_destructors_submit_more() {
    watchdog(20, "shutdown_now with re-entrant destructors", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let gate = stall_all(&pool);
        let re = Reentry::new();
        let queued = 60;
        for _ in 0..queued {
            let v = re.value(&pool);
            pool.submit(move || drop(v)).unwrap();
        }
        let opener = open_when_shut_down(&pool, &gate);
        let dropped = pool.shutdown_now().unwrap();
        opener.join().unwrap();
        // Held by the follow-ups' closures only.
        assert_eq!(re.live.load(SeqCst), 0, "a follow-up closure leaked");
        let (acc, refused) = (re.accepted.load(SeqCst), re.refused.load(SeqCst));
        assert_eq!(acc + refused, queued, "every destructor submitted once");
        let ran = re.ran.load(SeqCst);
        let s = assert_balanced(&pool);
        assert_eq!(s.submitted as usize, 2 + queued + acc, "{s}");
        assert_eq!(s.completed as usize, 2 + ran, "{s}");
        assert_eq!(s.dropped, dropped, "shutdown_now reports every drop\n{s}");
        assert_eq!(dropped as usize, queued + acc - ran, "{s}");
    });
}

/// `purge` drops queued tasks, on the calling thread, whose destructors submit into the
/// same (open) pool: no deadlock on whatever `purge` holds, the follow-ups are accepted and
/// run (or purged), and the books balance.
#[test]
fn purge_of_tasks_whose_destructors_submit_more() {
    watchdog(20, "purge with re-entrant destructors", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let gate = stall_all(&pool);
        let re = Reentry::new();
        for _ in 0..40 {
            let v = re.value(&pool);
            pool.submit(move || drop(v)).unwrap();
        }
        let purged = pool.purge();
        let acc = re.accepted.load(SeqCst);
        assert_eq!(acc + re.refused.load(SeqCst), 40);
        assert!(purged >= 40, "the 40 queued ones at least: {purged}");
        gate.open();
        pool.wait().unwrap();
        assert_eq!(re.live.load(SeqCst), 0);
        let s = assert_balanced(&pool);
        assert_eq!(s.dropped as usize, purged, "{s}");
        assert_eq!(s.completed as usize, 1 + re.ran.load(SeqCst), "{s}");
        assert_eq!(acc, 40, "the pool was open: every follow-up accepted");
    });
}

/// `JoinHandle::cancel` drops the closure on the caller; a destructor that submits to the
/// pool and cancels another handle from there works, and both count once.
#[test]
fn cancel_whose_destructor_cancels_another_and_submits() {
    watchdog(20, "re-entrant cancel", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let gate = stall_all(&pool);
        let re = Reentry::new();
        let second = Arc::new(pool.spawn(|| 2));
        struct CancelsOnDrop(Arc<flock::JoinHandle<i32>>, Arc<AtomicBool>);
        impl Drop for CancelsOnDrop {
            fn drop(&mut self) {
                self.1.store(self.0.cancel(), SeqCst);
            }
        }
        let cancelled_second = Arc::new(AtomicBool::new(false));
        let c = CancelsOnDrop(second.clone(), cancelled_second.clone());
        let v = re.value(&pool);
        let first = pool.spawn(move || {
            let _c = c;
            let _v = v;
            1
        });
        assert!(first.cancel());
        assert!(cancelled_second.load(SeqCst));
        assert!(matches!(first.join(), Err(JoinError::Cancelled)));
        let second = Arc::try_unwrap(second).unwrap_or_else(|_| panic!("the closure let go"));
        assert!(matches!(second.join(), Err(JoinError::Cancelled)));
        gate.open();
        pool.wait().unwrap();
        assert_eq!((re.accepted.load(SeqCst), re.ran.load(SeqCst)), (1, 1));
        let s = assert_balanced(&pool);
        assert_eq!((s.submitted, s.completed, s.dropped), (4, 2, 2));
    });
}

// ----- panic payloads whose destructors panic ---------------------------------------------

fn throw_bomb() {
    std::panic::panic_any(PanicsOnDrop);
}

/// Tasks that panic with a payload whose destructor panics: whoever drops the payload (the
/// worker without a handler, the handler, a detached handle's worker, a scope keeping only
/// the first panic) must not let the second panic escape, and the pool keeps working.
#[test]
fn panic_payloads_whose_destructors_panic_do_not_take_the_pool_down() {
    watchdog(20, "payload bombs", || {
        for with_handler in [false, true] {
            let calls = counter();
            let c = calls.clone();
            let mut b = Pool::builder().workers(2);
            if with_handler {
                b = b.panic_handler(move |p: TaskPanic| {
                    c.fetch_add(1, SeqCst);
                    drop(p); // drops the payload here: its destructor panics
                });
            }
            let pool = b.build().unwrap();
            let gate = stall_all(&pool);
            for _ in 0..10 {
                pool.submit(throw_bomb).unwrap();
            }
            // Detached while it waits behind the stall tasks, so that the worker drops its
            // payload (a handle dropped after the task ended would drop it here).
            drop(pool.spawn(throw_bomb));
            gate.open();
            // In place: the body is not a task of the pool (the counts below leave it out).
            let scoped = catch_unwind(AssertUnwindSafe(|| {
                pool.in_place_scope(|s| {
                    for _ in 0..4 {
                        s.spawn(|_| throw_bomb());
                    }
                })
            }));
            // The first payload comes back to us; dropping it would panic: keep it.
            std::mem::forget(scoped.expect_err("the scope re-raises a panic"));
            pool.wait().unwrap();
            if with_handler {
                // Ten submitted tasks, and the detached task's payload destructor (spawn
                // docs: a detached value's destructor panic goes to the handler).
                assert_eq!(calls.load(SeqCst), 11);
            }
            assert_eq!(pool.spawn(|| 9).join().unwrap(), 9);
            // `join` returns once the result is there, a moment before the worker counts the
            // task completed: the books balance at quiescence.
            pool.wait().unwrap();
            let s = assert_balanced(&pool);
            // Ten submitted, one spawned, four scope tasks (counted: they came from outside);
            // the two stall tasks and the last spawn completed.
            assert_eq!((s.panicked, s.completed), (15, 3), "{s}");
        }
    });
}

// ----- thread-local destructors that use a pool (in child processes: a panic in a
// ----- thread-local destructor aborts the process) -----------------------------------------

/// Set in a child process of this test binary to the case it runs.
const CHILD_VAR: &str = "FLOCK_ADVERSARIAL_CHILD";
/// What a child prints once its case passed.
const CHILD_OK: &str = "adversarial-child-ok";

/// Runs `case` in a child process (`child_process_entry`), failing if it does not end
/// within 20 s; returns whether it passed, and its output for the failure message.
fn run_child(case: &str) -> (bool, String) {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "child_process_entry",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD_VAR, case)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("child {case}: did not end within 20 s (hang)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    let passed = status.success() && out.contains(CHILD_OK);
    (
        passed,
        format!("{status}\n--- stdout\n{out}\n--- stderr\n{err}"),
    )
}

fn expect_child_ok(case: &str) {
    let (passed, output) = run_child(case);
    assert!(passed, "child {case} failed: {output}");
}

/// A thread-local whose destructor uses a pool: `use_pool` runs from the destructor and
/// reports what it saw on `tx`.
struct UsesPoolOnExit {
    pool: Arc<Pool>,
    tx: mpsc::Sender<String>,
    use_pool: fn(&Pool) -> String,
}

impl Drop for UsesPoolOnExit {
    fn drop(&mut self) {
        let _ = self.tx.send((self.use_pool)(&self.pool));
    }
}

std::thread_local! {
    static ON_EXIT: std::cell::RefCell<Option<UsesPoolOnExit>> = const { std::cell::RefCell::new(None) };
    static OWN_POOL: std::cell::RefCell<Option<Pool>> = const { std::cell::RefCell::new(None) };
}

/// In a child: a thread sets up `ON_EXIT` first, then uses `pool` from outside (so that
/// flock's own thread-locals are made after ours and destroyed before ours: a submit, and
/// with `settle` a join and a wait), and exits; its destructor runs `use_pool`. Returns
/// what it reported.
fn from_a_thread_local_destructor(
    pool: &Arc<Pool>,
    settle: bool,
    use_pool: fn(&Pool) -> String,
) -> String {
    let (tx, rx) = mpsc::channel();
    let p = pool.clone();
    std::thread::spawn(move || {
        ON_EXIT.with(|slot| {
            *slot.borrow_mut() = Some(UsesPoolOnExit {
                pool: p.clone(),
                tx,
                use_pool,
            })
        });
        p.submit(|| ()).unwrap();
        if settle {
            let _ = p.spawn(|| ()).join();
            p.wait().unwrap();
        }
    })
    .join()
    .expect("the thread and its thread-local destructors ended");
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the destructor reported")
}

fn submit_and_join(pool: &Pool) -> String {
    let (tx, rx) = mpsc::channel();
    pool.submit(move || tx.send(1).unwrap()).unwrap();
    let two = pool.spawn(|| 2).join().unwrap();
    format!("{}", rx.recv().unwrap() + two)
}

fn wait_for_the_pool(pool: &Pool) -> String {
    pool.submit(|| ()).unwrap();
    format!("{:?}", pool.wait())
}

/// The child's side: with the variable unset (an ordinary run) it does nothing.
#[test]
fn child_process_entry() {
    let Ok(case) = std::env::var(CHILD_VAR) else {
        return;
    };
    #[cfg(unix)]
    {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setrlimit reads the struct we pass and changes only this process's limit.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core) };
    }
    let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
    match case.as_str() {
        "tls_submit_and_join" => {
            assert_eq!(
                from_a_thread_local_destructor(&pool, true, submit_and_join),
                "3"
            );
        }
        "tls_wait" => {
            assert_eq!(
                from_a_thread_local_destructor(&pool, true, wait_for_the_pool),
                "Ok(())"
            );
        }
        "tls_submit_with_lanes" => {
            let lanes = Arc::new(
                Pool::builder()
                    .workers(1)
                    .lanes(&[("a", 1), ("b", 1)])
                    .build()
                    .unwrap(),
            );
            assert_eq!(
                from_a_thread_local_destructor(&lanes, true, submit_and_join),
                "3"
            );
        }
        "tls_caller_runs" => {
            let pool = Arc::new(
                Pool::builder()
                    .workers(1)
                    .capacity(1)
                    .when_full(Backpressure::CallerRuns)
                    .build()
                    .unwrap(),
            );
            let gate = stall_all(&pool);
            pool.submit(|| ()).unwrap(); // full: submits run on the caller
            fn on_the_caller(pool: &Pool) -> String {
                let (tx, rx) = mpsc::channel();
                pool.submit(move || tx.send(std::thread::current().id()).unwrap())
                    .unwrap();
                format!("{}", rx.try_recv().unwrap() == std::thread::current().id())
            }
            assert_eq!(
                from_a_thread_local_destructor(&pool, false, on_the_caller),
                "true"
            );
            gate.open();
            pool.wait().unwrap();
        }
        "tls_own_pool" => {
            // A pool owned by a thread-local: dropped (closed and joined) by its destructor.
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                OWN_POOL
                    .with(|p| *p.borrow_mut() = Some(Pool::builder().workers(1).build().unwrap()));
                OWN_POOL.with(|p| {
                    let p = p.borrow();
                    let p = p.as_ref().unwrap();
                    p.submit(move || tx.send(()).unwrap()).unwrap();
                    p.wait().unwrap();
                });
            })
            .join()
            .expect("the thread and its thread-local destructors ended");
            rx.recv().unwrap();
        }
        "join_payload_bombs" => {
            // Both halves panic with payloads whose destructors panic: the first is
            // re-raised, the second must be disposed of without a panic during the unwind.
            for _ in 0..3 {
                let raised = catch_unwind(AssertUnwindSafe(|| pool.join(throw_bomb, throw_bomb)));
                std::mem::forget(raised.expect_err("join re-raises"));
                let p = pool.clone();
                let raised = catch_unwind(AssertUnwindSafe(|| {
                    pool.install(move || p.join(throw_bomb, throw_bomb))
                }));
                std::mem::forget(raised.expect_err("join re-raises"));
            }
            assert_eq!(pool.join(|| 1, || 2), (1, 2));
        }
        other => panic!("unknown child case {other}"),
    }
    println!("{CHILD_OK}");
}

/// From a thread-local destructor of an exiting thread, after flock's own thread-locals of
/// that thread are gone: `submit`, `spawn` and `join` work (src/submitq.rs falls back to the
/// injector for this case).
#[test]
fn submit_and_join_from_a_thread_local_destructor() {
    watchdog(30, "tls submit", || expect_child_ok("tls_submit_and_join"));
}

/// `wait` from a thread-local destructor (a per-thread batcher that flushes on exit).
#[test]
fn wait_from_a_thread_local_destructor() {
    watchdog(30, "tls wait", || expect_child_ok("tls_wait"));
}

/// `submit` into a pool with lanes from a thread-local destructor.
#[test]
fn submit_with_lanes_from_a_thread_local_destructor() {
    watchdog(30, "tls lanes", || expect_child_ok("tls_submit_with_lanes"));
}

/// A `CallerRuns` submit that runs its task on the exiting thread, from a thread-local
/// destructor.
#[test]
fn caller_runs_from_a_thread_local_destructor() {
    watchdog(30, "tls caller runs", || expect_child_ok("tls_caller_runs"));
}

/// A pool owned by a thread-local (`thread_local!{ static POOL: Pool }`, a per-thread pool)
/// is dropped, so closed and joined, by that thread-local's destructor.
#[test]
fn a_pool_owned_by_a_thread_local_is_dropped_at_thread_exit() {
    watchdog(30, "tls own pool", || expect_child_ok("tls_own_pool"));
}

/// `join` whose halves both panic re-raises the first panic and disposes of the second, as
/// `scope` and `broadcast` do (each drops a second payload with its destructor's panic
/// caught: `panic_payloads_whose_destructors_panic_do_not_take_the_pool_down` above). Here
/// both payloads' destructors panic.
#[test]
fn join_whose_halves_both_panic_with_payloads_that_panic_on_drop() {
    watchdog(30, "join payload bombs", || {
        expect_child_ok("join_payload_bombs")
    });
}

// ----- capacity 1, many submitters, every policy, and a concurrent shutdown ---------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Stop {
    Graceful,
    Now,
}

/// What the submitters saw, by task id.
#[derive(Default)]
struct Ledger {
    accepted: AtomicUsize,
    refused: AtomicUsize,
    ops: AtomicUsize,
}

/// Six threads offer tasks to a 2-worker pool of capacity 1 under `policy`, through
/// `submit`, `try_spawn`, `spawn` and `submit_batch`, while another thread shuts the pool
/// down (gracefully or now) once some tasks went in. Every task is run exactly once,
/// dropped by `shutdown_now` (destructor run, counted), or refused and handed back (the
/// README: "A refused task is handed back in the error"; a refused `spawn` drops its
/// closure and says `Refused`); the submitters' books and `Stats` agree.
fn capacity_one_race(policy: Backpressure, block_timeout: Option<Duration>, stop: Stop) {
    for _round in 0..4 {
        capacity_one_round(policy, block_timeout, stop);
    }
}

fn capacity_one_round(policy: Backpressure, block_timeout: Option<Duration>, stop: Stop) {
    const THREADS: usize = 6;
    const OPS: usize = 60;
    const PER_THREAD: usize = OPS * 3; // room for batches of 3
    let what = format!("{policy:?} {block_timeout:?} {stop:?}");
    watchdog(30, &what.clone(), move || {
        let mut b = Pool::builder()
            .workers(2)
            .capacity(1)
            .when_full(policy)
            .max_spawned_threads(1);
        if let Some(t) = block_timeout {
            b = b.block_timeout(t);
        }
        let pool = Arc::new(b.build().unwrap());
        let runs: Arc<Vec<AtomicU8>> = Arc::new(
            (0..THREADS * PER_THREAD)
                .map(|_| AtomicU8::new(0))
                .collect(),
        );
        let live = counter();
        let ledger = Arc::new(Ledger::default());
        let make = |id: usize| {
            let (l, runs) = (Live::new(&live), runs.clone());
            move || {
                let _l = l;
                runs[id].fetch_add(1, SeqCst);
                std::hint::black_box((0..200).sum::<u64>());
            }
        };
        let handles = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (pool, ledger, handles, make) = (&pool, &ledger, &handles, &make);
                s.spawn(move || {
                    let mut next = t * PER_THREAD;
                    let mut id = || {
                        next += 1;
                        next - 1
                    };
                    for op in 0..OPS {
                        if t % 2 == 1 && op == OPS / 2 {
                            // Half the threads go on only once the shutdown has begun, so
                            // that some offers surely meet it; the others race it.
                            common::eventually(|| pool.is_shutdown());
                        }
                        match (op + t) % 4 {
                            0 => match pool.submit(make(id())) {
                                Ok(()) => {
                                    ledger.accepted.fetch_add(1, SeqCst);
                                }
                                Err(e) => {
                                    ledger.refused.fetch_add(1, SeqCst);
                                    drop(e.into_inner());
                                }
                            },
                            1 => {
                                let i = id();
                                match pool.try_spawn(make(i)) {
                                    Ok(h) => {
                                        ledger.accepted.fetch_add(1, SeqCst);
                                        handles.lock().unwrap().push((i, h));
                                    }
                                    Err(e) => {
                                        ledger.refused.fetch_add(1, SeqCst);
                                        drop(e.into_inner());
                                    }
                                }
                            }
                            2 => {
                                let i = id();
                                let h = pool.spawn(make(i));
                                handles.lock().unwrap().push((i, h));
                            }
                            _ => {
                                let batch: Vec<_> = (0..3).map(|_| make(id())).collect();
                                match pool.submit_batch(batch) {
                                    Ok(n) => {
                                        ledger.accepted.fetch_add(n, SeqCst);
                                    }
                                    Err(e) => {
                                        ledger.accepted.fetch_add(e.accepted(), SeqCst);
                                        let back = e.into_rejected();
                                        ledger.refused.fetch_add(back.len(), SeqCst);
                                        drop(back);
                                    }
                                }
                            }
                        }
                        ledger.ops.fetch_add(1, SeqCst);
                    }
                });
            }
            s.spawn(|| {
                common::eventually(|| ledger.ops.load(SeqCst) >= THREADS * OPS / 4);
                match stop {
                    Stop::Graceful => pool.shutdown().unwrap(),
                    Stop::Now => drop(pool.shutdown_now().unwrap()),
                }
            });
        });
        let dropped = pool.shutdown_now().unwrap() as usize;
        if stop == Stop::Graceful {
            assert_eq!(dropped, 0, "{what}: a graceful shutdown drops nothing");
        }
        let mut spawn_refused = 0;
        for (i, h) in handles.into_inner().unwrap() {
            let ran = runs[i].load(SeqCst);
            match h.join() {
                Ok(()) => assert_eq!(ran, 1, "{what}: task {i} joined Ok"),
                Err(JoinError::Dropped) => assert_eq!(ran, 0, "{what}: task {i} dropped"),
                Err(JoinError::Refused(_)) => {
                    assert_eq!(ran, 0, "{what}: task {i} refused");
                    spawn_refused += 1;
                }
                Err(e) => panic!("{what}: task {i}: {e}"),
            }
        }
        let ran: usize = runs
            .iter()
            .map(|r| {
                let n = r.load(SeqCst);
                assert!(n <= 1, "{what}: a task ran {n} times");
                n as usize
            })
            .sum();
        // `spawn`'s accepted tasks are the ones not refused.
        let offered: usize = (0..THREADS)
            .map(|t| {
                (0..OPS)
                    .map(|op| if (op + t) % 4 == 3 { 3 } else { 1 })
                    .sum::<usize>()
            })
            .sum();
        let spawned: usize = (0..THREADS)
            .map(|t| (0..OPS).filter(|op| (op + t) % 4 == 2).count())
            .sum();
        let accepted = ledger.accepted.load(SeqCst) + spawned - spawn_refused;
        let refused = ledger.refused.load(SeqCst) + spawn_refused;
        assert_eq!(live.load(SeqCst), 0, "{what}: a closure leaked");
        assert_eq!(
            accepted + refused,
            offered,
            "{what}: every task accounted for"
        );
        assert_eq!(ran + dropped, accepted, "{what}: accepted = ran + dropped");
        let s = assert_balanced(&pool);
        assert_eq!(
            (
                s.submitted as usize,
                s.completed as usize,
                s.dropped as usize
            ),
            (accepted, ran, dropped),
            "{what}\n{s}"
        );
        if cfg!(feature = "stats") {
            assert_eq!(s.rejected as usize, refused, "{what}\n{s}");
        }
    });
}

#[test]
fn capacity_one_block_racing_shutdown_loses_nothing() {
    capacity_one_race(Backpressure::Block, None, Stop::Graceful);
    capacity_one_race(Backpressure::Block, None, Stop::Now);
}

#[test]
fn capacity_one_block_with_timeout_racing_shutdown_loses_nothing() {
    let t = Some(Duration::from_micros(50));
    capacity_one_race(Backpressure::Block, t, Stop::Graceful);
    capacity_one_race(Backpressure::Block, t, Stop::Now);
}

#[test]
fn capacity_one_reject_racing_shutdown_loses_nothing() {
    capacity_one_race(Backpressure::Reject, None, Stop::Graceful);
    capacity_one_race(Backpressure::Reject, None, Stop::Now);
}

#[test]
fn capacity_one_caller_runs_racing_shutdown_loses_nothing() {
    capacity_one_race(Backpressure::CallerRuns, None, Stop::Graceful);
    capacity_one_race(Backpressure::CallerRuns, None, Stop::Now);
}

#[test]
fn capacity_one_spawn_thread_racing_shutdown_loses_nothing() {
    capacity_one_race(Backpressure::SpawnThread, None, Stop::Graceful);
    capacity_one_race(Backpressure::SpawnThread, None, Stop::Now);
}

// ----- join handles -----------------------------------------------------------------------

/// `cancel` racing the worker that takes the task: exactly one side wins, every time. A
/// `true` cancel means the closure never ran and `join` says `Cancelled`; a `false` one
/// means it ran once and `join` gives its value. The books count each cancel as dropped.
#[test]
fn cancel_racing_the_worker_decides_exactly_once() {
    watchdog(30, "cancel race", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        let runs: Arc<Vec<AtomicU8>> = Arc::new((0..2000).map(|_| AtomicU8::new(0)).collect());
        let live = counter();
        let mut cancelled = 0u64;
        for i in 0..2000 {
            let (l, r) = (Live::new(&live), runs.clone());
            let h = pool.spawn(move || {
                let _l = l;
                r[i].fetch_add(1, SeqCst);
                i
            });
            if i % 3 == 0 {
                std::thread::yield_now(); // let the worker get there first, sometimes
            }
            if h.cancel() {
                cancelled += 1;
                assert!(h.is_finished());
                assert!(matches!(h.join(), Err(JoinError::Cancelled)));
                assert_eq!(runs[i].load(SeqCst), 0, "task {i} cancelled and ran");
            } else {
                assert_eq!(h.join().unwrap(), i);
                assert_eq!(runs[i].load(SeqCst), 1, "task {i}");
            }
        }
        pool.wait().unwrap();
        assert_eq!(live.load(SeqCst), 0);
        assert!(runs.iter().all(|r| r.load(SeqCst) <= 1));
        let s = assert_balanced(&pool);
        assert_eq!((s.submitted, s.dropped), (2000, cancelled), "{s}");
    });
}

/// One thread cancels queued tasks while another calls `shutdown_now`: each task is
/// dropped once, by whichever got there first; the cancels that won plus what
/// `shutdown_now` reports add up to all of them, and `Stats::dropped` agrees.
#[test]
fn cancel_racing_shutdown_now_counts_each_task_once() {
    watchdog(30, "cancel vs shutdown_now", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let gate = stall_all(&pool);
        let live = counter();
        let handles: Vec<_> = (0..500)
            .map(|_| {
                let l = Live::new(&live);
                pool.spawn(move || drop(l))
            })
            .collect();
        let opener = open_when_shut_down(&pool, &gate);
        let (by_cancel, by_shutdown) = std::thread::scope(|s| {
            let c = s.spawn(|| handles.iter().filter(|h| h.cancel()).count() as u64);
            let n = s.spawn(|| pool.shutdown_now().unwrap());
            (c.join().unwrap(), n.join().unwrap())
        });
        opener.join().unwrap();
        assert_eq!(by_cancel + by_shutdown, 500);
        assert_eq!(live.load(SeqCst), 0);
        for h in handles {
            assert!(matches!(
                h.join(),
                Err(JoinError::Cancelled | JoinError::Dropped)
            ));
        }
        let s = assert_balanced(&pool);
        assert_eq!((s.completed, s.dropped), (1, 500), "{s}");
    });
}

/// A `cancel_on_drop` handle dropped after its task finished cancels nothing and drops the
/// value once; one dropped while the task runs lets it finish. Neither blocks.
#[test]
fn cancel_on_drop_after_start_or_end_cancels_nothing() {
    watchdog(20, "cancel_on_drop late", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let live = counter();
        let l = Live::new(&live);
        let done = pool.spawn(move || l).cancel_on_drop();
        pool.wait().unwrap();
        assert_eq!(live.load(SeqCst), 1, "the value waits in the handle");
        drop(done);
        assert_eq!(live.load(SeqCst), 0);
        let (started_tx, started) = mpsc::channel();
        let g = Gate::new();
        let (g2, ran) = (g.clone(), counter());
        let r = ran.clone();
        let running = pool
            .spawn(move || {
                started_tx.send(()).unwrap();
                g2.wait();
                r.fetch_add(1, SeqCst);
            })
            .cancel_on_drop();
        started.recv().unwrap();
        drop(running);
        g.open();
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 1);
        let s = assert_balanced(&pool);
        assert_eq!((s.completed, s.dropped), (2, 0));
    });
}

// ----- scopes -----------------------------------------------------------------------------

/// A scope task panics while a sibling is blocked: the scope must not return (nor re-raise)
/// before the blocked sibling ends, and it re-raises the panic then.
#[test]
fn a_scope_waits_for_a_blocked_task_after_another_panicked() {
    watchdog(20, "scope panic vs blocked sibling", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        let (panicked_tx, panicked) = mpsc::channel::<()>();
        let gate = Gate::new();
        let sibling_done = AtomicBool::new(false);
        let opener = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                // Release the blocked sibling only once the other task has panicked.
                panicked.recv().unwrap();
                gate.open();
            })
        };
        let result = catch_unwind(AssertUnwindSafe(|| {
            pool.scope(|s| {
                s.spawn(|_| {
                    gate.wait();
                    sibling_done.store(true, SeqCst);
                });
                s.spawn(move |_| {
                    struct SignalOnUnwind(mpsc::Sender<()>);
                    impl Drop for SignalOnUnwind {
                        fn drop(&mut self) {
                            let _ = self.0.send(());
                        }
                    }
                    let _signal = SignalOnUnwind(panicked_tx);
                    panic!("sibling fails");
                });
            })
        }));
        let payload = result.expect_err("the scope re-raises");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"sibling fails"));
        assert!(
            sibling_done.load(SeqCst),
            "the scope returned before its blocked task ended"
        );
        opener.join().unwrap();
        pool.wait().unwrap();
        assert_balanced(&pool);
    });
}

/// A scope body that panics while its tasks are blocked: the same, from the body's side,
/// on a one-worker pool whose only worker runs the blocked task.
#[test]
fn a_scope_body_panic_waits_for_its_blocked_tasks() {
    watchdog(20, "scope body panic vs blocked task", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = Gate::new();
        let done = AtomicBool::new(false);
        let (started_tx, started) = mpsc::channel();
        let g = gate.clone();
        let opener = std::thread::spawn(move || {
            started.recv().unwrap();
            g.open();
        });
        let result = catch_unwind(AssertUnwindSafe(|| {
            pool.scope(|s| {
                s.spawn(|_| {
                    started_tx.send(()).unwrap();
                    gate.wait();
                    done.store(true, SeqCst);
                });
                panic!("body fails");
            })
        }));
        assert_eq!(
            result.unwrap_err().downcast_ref::<&str>(),
            Some(&"body fails")
        );
        assert!(
            done.load(SeqCst),
            "the scope returned before its task ended"
        );
        opener.join().unwrap();
        pool.wait().unwrap();
        assert_balanced(&pool);
    });
}

// ----- pools waiting on each other ----------------------------------------------------------

/// Builds a pool of two workers and holds one of them on a gate: one free worker.
fn one_free_worker() -> (Arc<Pool>, Gate) {
    let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
    let gate = Gate::new();
    let (tx, rx) = mpsc::channel();
    let g = gate.clone();
    pool.submit(move || {
        tx.send(()).unwrap();
        g.wait();
    })
    .unwrap();
    rx.recv().unwrap();
    (pool, gate)
}

/// A task of A waits on a task of B, which waits on a task of A, ... ten levels deep, each
/// level waiting a different way (`JoinHandle::join`, `install`, `scope`, `join`), with one
/// worker of each pool held by an unrelated blocked task: the README's "Pools that wait on
/// each other complete with one worker each" must hold with a free worker each.
#[test]
fn pools_waiting_on_each_other_ten_deep_with_one_free_worker_each() {
    fn level(pools: &[Arc<Pool>; 2], depth: usize) -> usize {
        if depth == 0 {
            return 0;
        }
        let next = pools[depth % 2].clone();
        let ps = pools.clone();
        1 + match depth % 4 {
            0 => next.spawn(move || level(&ps, depth - 1)).join().unwrap(),
            1 => next.install(move || level(&ps, depth - 1)),
            2 => {
                let mut out = 0;
                next.scope(|s| s.spawn(|_| out = level(&ps, depth - 1)));
                out
            }
            _ => next.join(|| level(&ps, depth - 1), || 0).0,
        }
    }
    watchdog(20, "ping-pong ten deep", || {
        let (a, ga) = one_free_worker();
        let (b, gb) = one_free_worker();
        let pools = [a.clone(), b.clone()];
        for _ in 0..5 {
            let ps = pools.clone();
            assert_eq!(a.spawn(move || level(&ps, 10)).join().unwrap(), 10);
            let ps = pools.clone();
            assert_eq!(b.install(move || level(&ps, 9)), 9);
        }
        ga.open();
        gb.open();
        a.wait().unwrap();
        b.wait().unwrap();
        assert_balanced(&a);
        assert_balanced(&b);
    });
}

// ----- resize and wait racing shutdown ------------------------------------------------------

/// `resize` up and down from one thread while every worker is blocked, tasks queue, and
/// another thread calls `shutdown_now`: every resize returns (`Ok` or `Shutdown`), nothing
/// hangs, and each task ran once or was dropped once.
#[test]
fn resize_racing_shutdown_now_while_workers_block() {
    watchdog(30, "resize vs shutdown_now", || {
        let pool = Arc::new(Pool::builder().workers(2).max_workers(4).build().unwrap());
        let gate = common::stall_each(&pool);
        let (live, ran) = (counter(), counter());
        for _ in 0..200 {
            let (l, r) = (Live::new(&live), ran.clone());
            pool.submit(move || {
                let _l = l;
                r.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        let opener = open_when_shut_down(&pool, &gate);
        let resizer_done = AtomicBool::new(false);
        let dropped = std::thread::scope(|s| {
            let resizer = s.spawn(|| {
                // Up and down until the shutdown (or a while), then up: some workers are
                // free to run the queue whatever the timing.
                for n in 0..2_000usize {
                    if pool.is_shutdown() {
                        break;
                    }
                    match pool.resize(1 + n % 4) {
                        Ok(()) | Err(flock::ResizeError::Shutdown) => {}
                        Err(e) => panic!("resize: {e}"),
                    }
                }
                match pool.resize(4) {
                    Ok(()) | Err(flock::ResizeError::Shutdown) => {}
                    Err(e) => panic!("resize: {e}"),
                }
                resizer_done.store(true, SeqCst);
            });
            // Shut down once some queued task ran on a grown worker, or the resizer is done.
            common::eventually(|| ran.load(SeqCst) > 0 || resizer_done.load(SeqCst));
            let dropped = pool.shutdown_now().unwrap();
            resizer.join().unwrap();
            dropped
        });
        opener.join().unwrap();
        assert_eq!(live.load(SeqCst), 0);
        assert_eq!(ran.load(SeqCst) as u64 + dropped, 200);
        let s = assert_balanced(&pool);
        assert_eq!(s.dropped, dropped, "{s}");
    });
}

/// Threads blocked in `wait` while the pool is stalled are released by a `shutdown_now`
/// from another thread (it ends every task), and `wait` after any shutdown returns at once.
#[test]
fn waiters_are_released_by_shutdown_now_and_wait_after_shutdown_returns() {
    watchdog(20, "waiters vs shutdown_now", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let gate = stall_all(&pool);
        for _ in 0..10 {
            pool.submit(|| ()).unwrap();
        }
        let opener = open_when_shut_down(&pool, &gate);
        std::thread::scope(|s| {
            let waiters: Vec<_> = (0..3).map(|_| s.spawn(|| pool.wait())).collect();
            // `wait` has no "I am waiting" signal; the waiters may start after the shutdown,
            // which must work too.
            assert_eq!(pool.shutdown_now().unwrap(), 10);
            for w in waiters {
                assert_eq!(w.join().unwrap(), Ok(()));
            }
        });
        opener.join().unwrap();
        assert_eq!(pool.wait(), Ok(()));
        assert!(pool.wait_timeout(Duration::ZERO));
        assert_eq!(pool.shutdown_timeout(Duration::ZERO), Ok(()));
        assert!(
            pool.shutdown_now().is_ok(),
            "a second shutdown_now returns too"
        );
        assert_balanced(&pool);
    });
}

// ----- batches whose iterators re-enter the pool ----------------------------------------------

/// In a task on a two-worker pool whose other worker is parked: runs `batch` with an
/// iterator of three tasks, each sending its index on a channel, that before yielding task
/// `i > 0` waits for task `i - 1` to have run (a pipeline reading the results of earlier
/// tasks). Only the parked worker can run them.
fn batch_iterator_waiting_for_earlier_tasks(
    batch: impl FnOnce(&Pool, &mut dyn Iterator<Item = Box<dyn FnOnce() + Send>>) + Send + 'static,
) {
    let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
    let p = pool.clone();
    let (tx, rx) = mpsc::channel::<usize>();
    let got = pool.spawn(move || {
        // Let the other worker go to sleep first.
        common::eventually(|| {
            p.stats()
                .per_worker
                .iter()
                .any(|w| w.state == flock::WorkerState::Parked)
        });
        let mut tasks = (0..3).map(|i| {
            if i > 0 {
                // Blocks until the task yielded before has run (on the other worker).
                assert_eq!(rx.recv().unwrap(), i - 1);
            }
            let tx = tx.clone();
            Box::new(move || tx.send(i).unwrap()) as Box<dyn FnOnce() + Send>
        });
        batch(&p, &mut tasks);
        rx.recv().unwrap()
    });
    assert_eq!(got.join().unwrap(), 2);
    pool.wait().unwrap();
    assert_balanced(&pool);
}

/// From a task, `submit_batch` pushes each task onto the worker's deque as the iterator
/// yields it, and wakes sleeping workers once at the end. An iterator that waits for a task
/// it yielded earlier while the other worker sleeps: the README's "No lost wake-up ... also
/// when the pushing task then blocks until what it pushed has run" says the sleeping worker
/// runs the pushed task.
#[test]
fn a_batch_iterator_inside_a_task_that_waits_for_an_earlier_task() {
    watchdog(10, "submit_batch iterator waits for its first task", || {
        batch_iterator_waiting_for_earlier_tasks(|pool, tasks| {
            assert_eq!(pool.submit_batch(tasks).unwrap(), 3);
        });
    });
}

/// `Scope::spawn_batch` from a task: the same. (An in-place scope, on the task's worker as
/// `scope` from there would be: the iterator borrows a receiver, so it is not `Send`.)
#[test]
fn a_scope_batch_iterator_inside_a_task_that_waits_for_an_earlier_task() {
    watchdog(10, "spawn_batch iterator waits for its first task", || {
        batch_iterator_waiting_for_earlier_tasks(|pool, tasks| {
            pool.in_place_scope(|s| s.spawn_batch(tasks.map(|t| move |_: &flock::Scope<'_>| t())));
        });
    });
}

/// An iterator, driven by `submit_batch` from outside, that shuts the pool down half way:
/// the tasks admitted before run or are dropped (counted), the rest come back in the error,
/// and nothing is lost or leaked.
#[test]
fn a_batch_iterator_that_shuts_the_pool_down_half_way() {
    for now in [false, true] {
        watchdog(
            20,
            &format!("batch iterator shuts down (now: {now})"),
            move || {
                let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
                let (live, ran) = (counter(), counter());
                let p = pool.clone();
                let (l, r) = (live.clone(), ran.clone());
                let tasks = (0..700).map(move |i| {
                    if i == 400 {
                        if now {
                            p.shutdown_now().unwrap();
                        } else {
                            p.shutdown().unwrap();
                        }
                    }
                    let (l, r) = (Live::new(&l), r.clone());
                    move || {
                        let _l = l;
                        r.fetch_add(1, SeqCst);
                    }
                });
                let err = pool.submit_batch(tasks).unwrap_err();
                assert_eq!(err.reason(), RejectReason::Shutdown);
                let accepted = err.accepted();
                let back = err.into_rejected();
                assert_eq!(accepted + back.len(), 700);
                drop(back);
                let dropped = pool.shutdown_now().unwrap() as usize;
                assert_eq!(live.load(SeqCst), 0);
                assert_eq!(ran.load(SeqCst) + dropped, accepted);
                let s = assert_balanced(&pool);
                assert_eq!(s.submitted as usize, accepted, "{s}");
            },
        );
    }
}

/// From a task, a batch iterator that re-enters the pool on every item (a submit onto the
/// same deque, a nested batch, a `join` whose waiting runs other tasks, `yield_now`): every
/// task runs once, and the books balance.
#[test]
fn a_batch_iterator_inside_a_task_that_re_enters_the_pool() {
    watchdog(20, "re-entrant batch iterator", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let ran = counter();
        let (p, r) = (pool.clone(), ran.clone());
        let n = pool
            .spawn(move || {
                let tasks = (0..40).map(|i| {
                    let bump = {
                        let r = r.clone();
                        move || {
                            r.fetch_add(1, SeqCst);
                        }
                    };
                    match i % 4 {
                        0 => p.submit(bump.clone()).unwrap(),
                        1 => assert_eq!(p.submit_batch([bump.clone(), bump.clone()]).unwrap(), 2),
                        2 => drop(p.join(bump.clone(), bump.clone())),
                        _ => drop(flock::yield_now()),
                    }
                    bump
                });
                p.submit_batch(tasks).unwrap()
            })
            .join()
            .unwrap();
        assert_eq!(n, 40);
        pool.wait().unwrap();
        // 40 from the batch, and per four items: 1 submit + 2 batched + 2 joined.
        assert_eq!(ran.load(SeqCst), 40 + 10 * 5);
        let s = assert_balanced(&pool);
        assert_eq!(s.completed, 1 + 40 + 10 * 3, "joins are not tasks\n{s}");
    });
}

// ----- hooks that submit work -----------------------------------------------------------------

/// A pool of `workers` whose `on_worker_stop` hooks submit a task (a "flush" on the way
/// out) into their own pool, counting what was accepted, refused and run.
struct StopHookSubmits {
    pool: Arc<Pool>,
    slot: Arc<Mutex<Option<Arc<Pool>>>>,
    live: Arc<AtomicUsize>,
    ran: Arc<AtomicUsize>,
    accepted: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
}

impl StopHookSubmits {
    fn new(workers: usize) -> StopHookSubmits {
        let slot: Arc<Mutex<Option<Arc<Pool>>>> = Arc::default();
        let (live, ran, accepted, refused) = (counter(), counter(), counter(), counter());
        let (s, l, r, a, f) = (
            slot.clone(),
            live.clone(),
            ran.clone(),
            accepted.clone(),
            refused.clone(),
        );
        let pool = Arc::new(
            Pool::builder()
                .workers(workers)
                .max_workers(workers)
                .on_worker_stop(move |_| {
                    let pool = s.lock().unwrap().clone();
                    let Some(pool) = pool else { return };
                    let (l, r) = (Live::new(&l), r.clone());
                    match pool.submit(move || {
                        let _l = l;
                        r.fetch_add(1, SeqCst);
                    }) {
                        Ok(()) => {
                            a.fetch_add(1, SeqCst);
                        }
                        Err(e) => {
                            f.fetch_add(1, SeqCst);
                            drop(e.into_inner());
                        }
                    }
                })
                .build()
                .unwrap(),
        );
        *slot.lock().unwrap() = Some(pool.clone());
        StopHookSubmits {
            pool,
            slot,
            live,
            ran,
            accepted,
            refused,
        }
    }

    fn hooks_done(&self) -> usize {
        self.accepted.load(SeqCst) + self.refused.load(SeqCst)
    }
}

/// `on_worker_stop` hooks of workers retiring after a shrink submit into their own pool: a
/// submit that returns `Ok` was accepted, so its task must run (the pool is open), never
/// be left in the deque of a thread that is gone (README: "Nothing lost"; `resize`: "nothing
/// is dropped").
#[test]
fn stop_hooks_of_retiring_workers_that_submit_lose_nothing() {
    watchdog(10, "retiring stop hooks submit", || {
        let t = StopHookSubmits::new(3);
        t.pool.resize(1).unwrap();
        // The two retiring workers' hooks ran (the retire is asynchronous).
        common::eventually(|| t.hooks_done() == 2);
        assert_eq!(t.accepted.load(SeqCst), 2, "the pool is open");
        t.pool.wait().unwrap();
        assert_eq!(t.ran.load(SeqCst), 2, "what the hooks submitted ran");
        *t.slot.lock().unwrap() = None;
        t.pool.shutdown().unwrap();
        assert_eq!(t.live.load(SeqCst), 0);
        assert_balanced(&t.pool);
    });
}

/// The same during a graceful shutdown: each hook's submit is either refused (handed back)
/// or accepted, and then its task runs or is dropped and counted; the shutdown returns.
#[test]
fn stop_hooks_that_submit_during_shutdown_lose_nothing() {
    watchdog(10, "stop hooks submit during shutdown", || {
        let t = StopHookSubmits::new(2);
        t.pool.shutdown().unwrap();
        assert_eq!(t.hooks_done(), 2, "every hook ran before shutdown returned");
        *t.slot.lock().unwrap() = None;
        let dropped = t.pool.shutdown_now().unwrap() as usize;
        assert_eq!(
            t.ran.load(SeqCst) + dropped,
            t.accepted.load(SeqCst),
            "an accepted task neither ran nor was dropped"
        );
        assert_eq!(t.live.load(SeqCst), 0, "an accepted task's closure leaked");
        assert_balanced(&t.pool);
    });
}

/// `on_worker_start` hooks that submit into their own pool (warming a cache, say), at build
/// and when `resize` grows the pool: the tasks go to the new worker's deque and run.
#[test]
fn start_hooks_that_submit_into_their_own_pool() {
    watchdog(20, "start hooks submit", || {
        let slot: Arc<Mutex<Option<Arc<Pool>>>> = Arc::default();
        let (ran, hooked) = (counter(), counter());
        let (s, r, h) = (slot.clone(), ran.clone(), hooked.clone());
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .max_workers(3)
                .on_worker_start(move |i| {
                    // Only the workers `resize` starts: the first one's hook may run before
                    // or after `build` returned.
                    if i == 0 {
                        return;
                    }
                    let pool = s.lock().unwrap().clone();
                    if let Some(pool) = pool {
                        let r = r.clone();
                        pool.submit(move || {
                            r.fetch_add(1, SeqCst);
                        })
                        .unwrap();
                        h.fetch_add(1, SeqCst);
                    }
                })
                .build()
                .unwrap(),
        );
        *slot.lock().unwrap() = Some(pool.clone());
        pool.resize(3).unwrap();
        common::eventually(|| hooked.load(SeqCst) == 2);
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 2);
        *slot.lock().unwrap() = None;
        assert_balanced(&pool);
    });
}

/// The last handle of a paused pool, dropped by its running task: the graceful close
/// resumes the pool ("a graceful shutdown resumes the pool so that its queue drains"), so
/// the tasks queued while paused run and the worker stops.
#[test]
fn last_handle_of_a_paused_pool_dropped_by_its_task_drains_the_queue() {
    watchdog(20, "paused pool dropped inside", || {
        let stopped = counter();
        let st = stopped.clone();
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .on_worker_stop(move |_| {
                    st.fetch_add(1, SeqCst);
                })
                .build()
                .unwrap(),
        );
        let (started_tx, started) = mpsc::channel();
        let (gate, inner) = (Gate::new(), pool.clone());
        let g = gate.clone();
        pool.submit(move || {
            started_tx.send(()).unwrap();
            g.wait();
            drop(inner);
        })
        .unwrap();
        started.recv().unwrap();
        pool.pause();
        let ran = counter();
        for _ in 0..20 {
            let r = ran.clone();
            pool.submit(move || {
                r.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        drop(pool);
        gate.open();
        common::eventually(|| stopped.load(SeqCst) == 1);
        assert_eq!(ran.load(SeqCst), 20);
    });
}
