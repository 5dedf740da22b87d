//! One `.await` from async code: `Pool::run_async`, `Pool::wait_async`,
//! `TaskGroup::wait_async`. Each is polled by hand with a waker that counts its wakes, so a
//! test sees that the first poll returns `Pending` (it did not block the polling thread) and
//! that the event it waits for wakes it.

mod common;

use common::{eventually, stall_all, watchdog};
use flock::{Backpressure, GroupError, JoinError, RejectReason, TaskGroup, WaitError};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// A waker that counts its wakes and unparks the thread that made it.
struct Counting {
    wakes: AtomicUsize,
    thread: std::thread::Thread,
}

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

fn counting() -> (Arc<Counting>, Waker) {
    let c = Arc::new(Counting {
        wakes: AtomicUsize::new(0),
        thread: std::thread::current(),
    });
    (c.clone(), Waker::from(c))
}

fn poll_once<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

/// Polls until ready, parking between polls (woken only by the future's waker).
fn block_on<F: Future + Unpin>(mut f: F, waker: &Waker) -> F::Output {
    loop {
        if let Poll::Ready(v) = poll_once(&mut f, waker) {
            return v;
        }
        std::thread::park();
    }
}

/// For a future that returned `Pending`: parks, without polling it again, until its waker
/// has been called, then polls it to the end. So the event it waits for must wake the waker
/// it stored (a missing wake hangs, and the test's watchdog fails it); a second poll made
/// before the wake could find the event done, and the future would rightly drop its waker.
fn block_on_after_a_wake<F: Future + Unpin>(f: F, wakes: &Counting, waker: &Waker) -> F::Output {
    while wakes.wakes.load(Ordering::SeqCst) == 0 {
        std::thread::park();
    }
    block_on(f, waker)
}

#[test]
fn run_async_gives_the_value_the_panic_or_the_refusal() {
    watchdog(30, "run_async outcomes", || {
        let pool = flock::Pool::builder().workers(2).build().unwrap();
        let (_, waker) = counting();
        assert_eq!(block_on(pool.run_async(|| 6 * 7), &waker).unwrap(), 42);
        match block_on(pool.run_async(|| -> u8 { panic!("boom") }), &waker) {
            Err(e @ JoinError::Panicked(_)) => assert!(e.to_string().contains("boom")),
            other => panic!("{other:?}"),
        }
        pool.shutdown().unwrap();
        match block_on(pool.run_async(|| 1), &waker) {
            Err(JoinError::Refused(RejectReason::Shutdown)) => {}
            other => panic!("{other:?}"),
        }
    });
}

#[test]
fn run_async_waits_for_room_without_blocking_then_for_the_result() {
    watchdog(30, "run_async on a full queue", || {
        // Block would stall a blocking spawn here; Reject would refuse it.
        for policy in [Backpressure::Block, Backpressure::Reject] {
            let pool = flock::Pool::builder()
                .workers(1)
                .capacity(1)
                .when_full(policy)
                .build()
                .unwrap();
            let gate = stall_all(&pool);
            pool.submit(|| ()).unwrap(); // the queue is full
            let (wakes, waker) = counting();
            let mut run = pool.run_async(|| 5);
            assert!(poll_once(&mut run, &waker).is_pending(), "returned at once");
            assert_eq!(wakes.wakes.load(Ordering::SeqCst), 0);
            gate.open();
            // Woken, not polled blind.
            assert_eq!(block_on_after_a_wake(run, &wakes, &waker).unwrap(), 5);
        }
    });
}

#[test]
fn wait_async_is_pending_while_tasks_run_and_woken_when_they_finish() {
    watchdog(30, "wait_async", || {
        let pool = flock::Pool::builder().workers(2).build().unwrap();
        let gate = stall_all(&pool);
        let done = Arc::new(AtomicUsize::new(0));
        for _ in 0..50 {
            let done = done.clone();
            pool.submit(move || {
                done.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
        let (wakes, waker) = counting();
        let mut waiting = pool.wait_async();
        assert!(poll_once(&mut waiting, &waker).is_pending());
        assert_eq!(pool.stats().waiters, 1, "counted as a waiter");
        gate.open();
        assert_eq!(block_on_after_a_wake(waiting, &wakes, &waker), Ok(()));
        assert_eq!(done.load(Ordering::SeqCst), 50);
        assert_eq!(pool.stats().waiters, 0);
        // Quiet already: ready at the first poll.
        assert_eq!(
            poll_once(&mut pool.wait_async(), &waker),
            Poll::Ready(Ok(()))
        );
    });
}

#[test]
fn a_dropped_wait_async_stops_counting_as_a_waiter() {
    watchdog(30, "wait_async dropped", || {
        let pool = flock::Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        let (_, waker) = counting();
        let mut waiting = pool.wait_async();
        assert!(poll_once(&mut waiting, &waker).is_pending());
        assert_eq!(pool.stats().waiters, 1);
        drop(waiting);
        assert_eq!(pool.stats().waiters, 0);
        gate.open();
        pool.wait().unwrap();
    });
}

#[test]
fn wait_async_from_a_task_of_the_pool_would_deadlock() {
    watchdog(30, "wait_async inside", || {
        let pool = Arc::new(flock::Pool::builder().workers(1).build().unwrap());
        let p = pool.clone();
        let got = pool
            .spawn(move || {
                let (_, waker) = counting();
                poll_once(&mut p.wait_async(), &waker)
            })
            .join()
            .unwrap();
        assert_eq!(got, Poll::Ready(Err(WaitError::WouldDeadlock)));
    });
}

#[test]
fn group_wait_async_is_woken_by_the_last_task_and_reports_panics() {
    watchdog(30, "group wait_async", || {
        let pool = flock::Pool::builder().workers(2).build().unwrap();
        let group = TaskGroup::new(&pool);
        let gate = common::Gate::new();
        for _ in 0..4 {
            let gate = gate.clone();
            group.spawn(move || gate.wait());
        }
        group.spawn(|| panic!("one"));
        let (wakes, waker) = counting();
        let mut waiting = group.wait_async();
        assert!(poll_once(&mut waiting, &waker).is_pending());
        gate.open();
        assert_eq!(
            block_on_after_a_wake(waiting, &wakes, &waker),
            Err(GroupError::Panicked(1))
        );
        assert_eq!(group.unfinished(), 0);
        assert_eq!(block_on(group.wait_async(), &waker), Ok(()));
    });
}

/// A zero the future did not see, because a spawn raised the count again before the next
/// poll, still ends its wait: the wait covered a moment when the group was idle. The next
/// wait waits for the new task.
#[test]
fn group_wait_async_is_ready_after_a_zero_it_polled_too_late_to_see() {
    watchdog(30, "group wait_async after a missed zero", || {
        let pool = flock::Pool::builder().workers(2).build().unwrap();
        let group = TaskGroup::new(&pool);
        let first = common::Gate::new();
        let f = first.clone();
        group.spawn(move || f.wait());
        let (wakes, waker) = counting();
        let mut waiting = group.wait_async();
        assert!(poll_once(&mut waiting, &waker).is_pending());
        first.open();
        eventually(|| group.unfinished() == 0);
        let second = common::Gate::new();
        let s = second.clone();
        group.spawn(move || s.wait());
        assert_eq!(group.unfinished(), 1, "the second task is held by its gate");
        assert_eq!(poll_once(&mut waiting, &waker), Poll::Ready(Ok(())));
        // The finisher wakes the future after its CAS, so perhaps after the poll above.
        eventually(|| wakes.wakes.load(Ordering::SeqCst) >= 1);
        let mut next = group.wait_async();
        assert!(poll_once(&mut next, &waker).is_pending());
        second.open();
        assert_eq!(block_on(next, &waker), Ok(()));
    });
}

#[test]
fn group_wait_async_from_its_own_task_would_deadlock() {
    watchdog(30, "group wait_async inside", || {
        let pool = flock::Pool::builder().workers(1).build().unwrap();
        let group = Arc::new(TaskGroup::new(&pool));
        let (tx, rx) = std::sync::mpsc::channel();
        let g = group.clone();
        group.spawn(move || {
            let (_, waker) = counting();
            tx.send(poll_once(&mut g.wait_async(), &waker)).unwrap();
        });
        assert_eq!(
            rx.recv().unwrap(),
            Poll::Ready(Err(GroupError::WouldDeadlock))
        );
        group.wait().unwrap();
    });
}

#[test]
fn many_wait_async_futures_all_return_for_one_quiet_moment() {
    watchdog(30, "wait_async many", || {
        let pool = flock::Pool::builder().workers(2).build().unwrap();
        let gate = stall_all(&pool);
        let (_, waker) = counting();
        let mut futures: Vec<_> = (0..8).map(|_| pool.wait_async()).collect();
        for f in &mut futures {
            assert!(poll_once(f, &waker).is_pending());
        }
        assert_eq!(pool.stats().waiters, 8);
        gate.open();
        for f in futures {
            assert_eq!(block_on(f, &waker), Ok(()));
        }
        eventually(|| pool.stats().waiters == 0);
    });
}
