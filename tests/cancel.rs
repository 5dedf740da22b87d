//! `JoinHandle::cancel`: a cancelled task is dropped and counted once, also when its
//! closure's destructor panics (that panic reaches `cancel`'s caller, after the books are
//! balanced), and the shell it leaves queued does not keep the pool's shared state alive,
//! also when the pool is dropped from inside one of its own tasks. A cancel gives the task's
//! unit of capacity back at once, waking a submitter waiting for room, and the shell's later
//! pop gives nothing back a second time.

mod common;

use common::{asleep, eventually, stall_all, this_thread_id, watchdog};
use flock::{Backpressure, JoinError, Pool, TaskGroup, WorkerState};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// Panics when dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("closure destructor");
    }
}

#[test]
fn cancel_whose_closure_destructor_panics_balances_the_books() {
    watchdog(30, "cancel with a panicking closure destructor", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        let bomb = PanicsOnDrop;
        let queued = pool.spawn(move || {
            let _keep = &bomb;
            1
        });
        let raised = catch_unwind(AssertUnwindSafe(|| queued.cancel()));
        let payload = raised.expect_err("the destructor's panic reaches cancel's caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"closure destructor"));
        assert!(queued.is_finished());
        assert!(matches!(queued.join(), Err(JoinError::Cancelled)));
        gate.open();
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!(
            (s.submitted, s.completed, s.dropped, s.panicked, s.in_flight),
            (2, 1, 1, 0, 0)
        );
        pool.shutdown().unwrap();
    });
}

#[test]
fn cancel_of_a_plain_task_counts_it_dropped() {
    watchdog(30, "cancel", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        let queued = pool.spawn(|| 1);
        assert!(queued.cancel());
        assert!(!queued.cancel(), "a second cancel finds it ended");
        gate.open();
        assert!(matches!(queued.join(), Err(JoinError::Cancelled)));
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!(
            (s.submitted, s.completed, s.dropped, s.in_flight),
            (2, 1, 1, 0)
        );
        pool.shutdown().unwrap();
    });
}

/// A task cancelled while queued counts as finished at once, but its job stays in the queue,
/// a shell holding the task's cell, which holds the pool's shared state. A worker still
/// spinning when the shutdown begins exits without looking at the queues (nothing is
/// outstanding), so the shell stayed there and the shared state, holding the queue, was never
/// freed: a cycle that leaked ~50 KB a pool (found from C: `flock_group_cancel` on a paused
/// pool, then `flock_pool_free`). The pool's shutdown now sweeps the queues once the workers
/// have gone. The panic handler is owned by that shared state, so its captures tell whether
/// it was freed.
#[test]
fn a_task_cancelled_while_queued_does_not_keep_the_pool_alive() {
    for how in ["handle", "group", "group, paused"] {
        watchdog(
            60,
            &format!("cancelled task, pool freed ({how})"),
            move || {
                let rounds = if cfg!(miri) { 3 } else { 50 };
                let (mut cancelled, mut leaked) = (0, 0);
                for _ in 0..rounds {
                    let token = Arc::new(());
                    let held = token.clone();
                    let pool = Pool::builder()
                        .workers(1)
                        // Keeps the worker spinning (not parked) until the shutdown.
                        .spin_limit(u32::MAX)
                        .panic_handler(move |_| drop(held.clone()))
                        .build()
                        .unwrap();
                    if how.ends_with("paused") {
                        pool.pause();
                    } else {
                        eventually(|| pool.stats().per_worker[0].state == WorkerState::Spinning);
                    }
                    let group = TaskGroup::new(&pool);
                    let ok = if how == "handle" {
                        let queued = pool.spawn(|| ());
                        queued.cancel()
                    } else {
                        group.spawn(|| ());
                        group.cancel() == 1
                    };
                    drop(pool);
                    drop(group);
                    cancelled += usize::from(ok);
                    leaked += usize::from(Arc::strong_count(&token) != 1);
                }
                assert!(cancelled > 0, "{how}: no round cancelled its task");
                assert_eq!(leaked, 0, "{how}: {leaked} of {rounds} pools never freed");
            },
        );
    }
}

/// Whether the shared state of the pool whose panic handler holds `token` is freed within
/// `limit`. After a drop from inside the pool nothing joins its workers: the last of them
/// frees it as its thread ends, so we poll.
fn freed_within(token: &Arc<()>, limit: Duration) -> bool {
    let start = Instant::now();
    while Arc::strong_count(token) != 1 {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// As above, but the last `Arc<Pool>` is dropped from inside one of the pool's tasks, right
/// after that task cancelled a queued one. `Drop for Pool` then only begins the shutdown
/// (a thread cannot join itself), so `Pool::close` and its sweep never ran: the shell
/// stayed queued and the pool leaked in every round that cancelled (20 of 20) before the
/// last worker to leave swept the queues. The task runs off the workers, on the submitting thread
/// (`CallerRuns`, the queue full with the task it cancels): one running on a worker leaves
/// no shell, as that worker looks at the queues again once its task returns. The spinning
/// worker may take the queued task before it is cancelled; such rounds prove nothing.
#[test]
fn a_pool_dropped_by_its_own_task_after_a_cancel_is_freed() {
    watchdog(120, "pool dropped from inside, freed", || {
        let (rounds, wanted) = if cfg!(miri) { (3, 1) } else { (200, 20) };
        let (mut cancelled, mut leaked) = (0, 0);
        for _ in 0..rounds {
            let token = Arc::new(());
            let held = token.clone();
            let pool = Arc::new(
                Pool::builder()
                    .workers(1)
                    .capacity(1)
                    .when_full(Backpressure::CallerRuns)
                    // Keeps the worker spinning (not parked) until the shutdown.
                    .spin_limit(u32::MAX)
                    .panic_handler(move |_| drop(held.clone()))
                    .build()
                    .unwrap(),
            );
            eventually(|| pool.stats().per_worker[0].state == WorkerState::Spinning);
            // Submits without an `Arc<Pool>` of ours, so the task's is the last.
            let group = TaskGroup::new(&pool);
            let victim = pool.spawn(|| ());
            let (last, ok) = (pool, Arc::new(AtomicBool::new(false)));
            let seen = ok.clone();
            group.spawn(move || {
                let off_workers = flock::current_worker_index().is_none();
                seen.store(victim.cancel() && off_workers, Ordering::SeqCst);
                drop(last);
            });
            drop(group);
            let ok = ok.load(Ordering::SeqCst);
            cancelled += usize::from(ok);
            leaked += usize::from(!freed_within(&token, Duration::from_secs(2)));
            if cancelled == wanted {
                break;
            }
        }
        assert!(cancelled > 0, "no round cancelled its task off the workers");
        assert_eq!(
            leaked, 0,
            "{leaked} pools never freed ({cancelled} rounds cancelled)"
        );
    });
}

/// A one-worker pool of capacity 4 that refuses when full, its worker stalled: every task
/// spawned from here stays queued until the gate opens.
fn full_pool_of_four() -> (Pool, common::Gate) {
    let pool = Pool::builder()
        .workers(1)
        .capacity(4)
        .when_full(Backpressure::Reject)
        .build()
        .unwrap();
    let gate = stall_all(&pool);
    (pool, gate)
}

/// Fills the pool's capacity (4) with `submit`s, then checks the next one is refused Full.
fn fills_exactly_four(pool: &Pool) {
    for i in 0..4 {
        assert!(pool.submit(|| ()).is_ok(), "submit {i} after the cancels");
    }
    let refused = pool.submit(|| ()).expect_err("the fifth is over capacity");
    assert_eq!(refused.reason(), flock::RejectReason::Full);
}

/// Once every task has ended: the counters add up, and nothing is counted queued (the shells
/// of cancelled tasks the worker has not reached yet are no tasks).
fn books_balance(pool: &Pool) {
    pool.wait().unwrap();
    let s = pool.stats();
    assert_eq!(s.submitted, s.completed + s.panicked + s.dropped, "{s:?}");
    assert_eq!((s.in_flight, s.queued), (0, 0), "{s:?}");
}

/// Four tasks cancelled by each way there is (the handle, a wrapper's drop, the group) give
/// their four units back at once: four submits fit again while the shells are still queued,
/// and no more. The shells are no tasks: nothing is counted queued.
#[test]
fn cancelled_tasks_give_their_capacity_back() {
    for how in ["handle", "cancel_on_drop", "group"] {
        watchdog(
            30,
            &format!("cancel gives capacity back ({how})"),
            move || {
                let (pool, gate) = full_pool_of_four();
                let group = TaskGroup::new(&pool);
                match how {
                    "handle" => {
                        let handles: Vec<_> = (0..4).map(|_| pool.spawn(|| ())).collect();
                        assert!(handles.iter().all(|h| h.cancel()));
                    }
                    "cancel_on_drop" => {
                        let wrapped: Vec<_> =
                            (0..4).map(|_| pool.spawn(|| ()).cancel_on_drop()).collect();
                        drop(wrapped);
                    }
                    _ => {
                        (0..4).for_each(|_| group.spawn(|| ()));
                        assert_eq!(group.cancel(), 4);
                    }
                }
                let s = pool.stats();
                assert_eq!(
                    (s.dropped, s.queued, pool.queued()),
                    (4, 0, 0),
                    "{how}: {s:?}"
                );
                fills_exactly_four(&pool);
                gate.open();
                books_balance(&pool);
                group.wait().unwrap();
            },
        );
    }
}

/// The shells of cancelled tasks, taken later by the worker, give nothing back again: once
/// they are gone, the pool holds 4 queued tasks and no more.
#[test]
fn a_cancelled_tasks_shell_gives_no_second_unit_back() {
    watchdog(30, "a shell gives no unit back", || {
        let (pool, gate) = full_pool_of_four();
        let handles: Vec<_> = (0..4).map(|_| pool.spawn(|| ())).collect();
        assert!(handles.iter().all(|h| h.cancel()));
        gate.open();
        pool.wait().unwrap(); // the worker took the four shells
        let gate = stall_all(&pool);
        fills_exactly_four(&pool);
        gate.open();
        books_balance(&pool);
    });
}

/// A spawn-and-cancel loop on a busy pool runs for ever: each round's unit comes back with
/// its cancel (before, the loop was refused once `capacity` shells were queued).
#[test]
fn spawning_and_cancelling_on_a_busy_pool_never_fills_it() {
    watchdog(60, "spawn and cancel loop", || {
        let pool = Pool::builder()
            .workers(1)
            .capacity(64)
            .when_full(Backpressure::Reject)
            .build()
            .unwrap();
        let gate = stall_all(&pool);
        let rounds = if cfg!(miri) { 200 } else { 5_000 };
        for round in 0..rounds {
            let handle = pool.spawn(|| ());
            assert!(
                handle.cancel(),
                "round {round}: refused ({:?})",
                handle.join()
            );
        }
        gate.open();
        books_balance(&pool);
        assert_eq!(pool.stats().dropped, rounds);
    });
}

/// A submitter blocked for room (`Backpressure::Block`) is woken by a cancel.
#[test]
fn a_cancel_wakes_a_submitter_blocked_for_room() {
    watchdog(30, "cancel wakes a blocked submit", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .capacity(4)
                .when_full(Backpressure::Block)
                .build()
                .unwrap(),
        );
        let gate = stall_all(&pool);
        let handles: Vec<_> = (0..4).map(|_| pool.spawn(|| ())).collect();
        let p = pool.clone();
        let blocked = std::thread::spawn(move || p.submit(|| ()).is_ok());
        assert!(handles[0].cancel());
        assert!(blocked.join().unwrap(), "the blocked submit is admitted");
        gate.open();
        books_balance(&pool);
    });
}

struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `fut` on this thread, parking between polls until woken.
fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// A `spawn_async` waiting for room is woken by a cancel.
#[test]
fn a_cancel_wakes_an_async_spawn_waiting_for_room() {
    watchdog(30, "cancel wakes spawn_async", || {
        let (pool, gate) = full_pool_of_four();
        let pool = Arc::new(pool);
        let handles: Vec<_> = (0..4).map(|_| pool.spawn(|| ())).collect();
        let p = pool.clone();
        let waiting = std::thread::spawn(move || block_on(p.spawn_async(|| 7)));
        assert!(handles[3].cancel());
        let handle = waiting.join().unwrap();
        gate.open();
        assert_eq!(handle.join().unwrap(), 7);
        books_balance(&pool);
    });
}

/// A cancel of each kind (the handle, a `cancel_on_drop` wrapper's drop, the group's
/// `cancel`) wakes a submitter that is already waiting for room: a thread blocked in `submit`
/// (seen asleep in `/proc` before the cancel) and a `spawn_async` polled to pending. The
/// two tests above start their waiter and cancel at once, so there the cancel usually came
/// first and the submit simply found room.
#[test]
#[cfg_attr(miri, ignore = "reads /proc")]
fn a_cancel_of_each_kind_wakes_a_submitter_already_waiting_for_room() {
    for how in ["handle", "cancel_on_drop", "group"] {
        for waiter in ["blocked submit", "spawn_async"] {
            watchdog(30, &format!("{how} cancel wakes a {waiter}"), move || {
                let pool = Arc::new(
                    Pool::builder()
                        .workers(1)
                        .capacity(4)
                        .when_full(Backpressure::Block)
                        .build()
                        .unwrap(),
                );
                let gate = stall_all(&pool);
                let group = TaskGroup::new(&pool);
                let (mut handles, mut wrapped) = (Vec::new(), Vec::new());
                for _ in 0..4 {
                    match how {
                        "handle" => handles.push(pool.spawn(|| ())),
                        "cancel_on_drop" => wrapped.push(pool.spawn(|| ()).cancel_on_drop()),
                        _ => group.spawn(|| ()),
                    }
                }
                let mut cancel = || match how {
                    "handle" => assert!(handles[0].cancel()),
                    "cancel_on_drop" => drop(wrapped.pop()),
                    _ => assert_eq!(group.cancel(), 4),
                };
                if waiter == "blocked submit" {
                    let (tid_tx, tid) = std::sync::mpsc::channel();
                    let p = pool.clone();
                    let blocked = std::thread::spawn(move || {
                        tid_tx.send(this_thread_id()).unwrap();
                        p.submit(|| ()).is_ok()
                    });
                    let tid = tid.recv().unwrap();
                    eventually(|| asleep(tid));
                    cancel();
                    assert!(blocked.join().unwrap(), "the blocked submit is admitted");
                } else {
                    let woken = Arc::new(Woken::default());
                    let waker = Waker::from(woken.clone());
                    let mut fut = pin!(pool.spawn_async(|| 7));
                    let mut cx = Context::from_waker(&waker);
                    assert!(fut.as_mut().poll(&mut cx).is_pending());
                    cancel();
                    assert!(woken.0.load(Ordering::SeqCst), "the cancel woke the waiter");
                    let Poll::Ready(handle) = fut.as_mut().poll(&mut cx) else {
                        panic!("room after the cancel");
                    };
                    gate.open();
                    assert_eq!(handle.join().unwrap(), 7);
                }
                gate.open();
                drop(wrapped);
                books_balance(&pool);
                group.wait().unwrap();
            });
        }
    }
}

/// A waker that records whether it was woken.
#[derive(Default)]
struct Woken(AtomicBool);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// On a pool with lanes, a task cancelled in its lane leaves that lane's queued figure, and
/// the figures still add up to the pool's.
#[test]
fn a_cancelled_task_is_not_counted_queued_in_its_lane() {
    watchdog(30, "cancel and lane queued", || {
        let pool = Pool::builder()
            .workers(1)
            .lanes(&[("a", 1), ("b", 1)])
            .build()
            .unwrap();
        pool.pause();
        let kept = pool.spawn_to("b", || ());
        let cancelled: Vec<_> = (0..3).map(|_| pool.spawn_to("b", || ())).collect();
        assert!(cancelled.iter().all(|h| h.cancel()));
        let s = pool.stats();
        let lanes: Vec<u64> = s.lanes.iter().map(|l| l.queued).collect();
        assert_eq!((s.queued, lanes), (1, vec![0, 1]), "{s:?}");
        pool.resume();
        kept.join().unwrap();
        books_balance(&pool);
    });
}
