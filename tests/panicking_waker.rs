//! A `Waker` whose `wake` panics, at each place flock wakes one: the room waiters of
//! `submit_async` / `spawn_async` (woken by the worker that frees room, or by a shutdown) and
//! an awaited `JoinHandle` (woken by the task's end or its cancel). The rule: the panic is
//! caught and printed, as a panicking hook's is; the task's outcome and the counters are
//! unchanged; every other waiter is still woken.

mod common;

use common::watchdog;
use flock::{Backpressure, JoinError, Pool, RejectReason};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

/// A waker that counts its wakes and unparks the thread that made it.
struct Unpark {
    thread: Thread,
    wakes: AtomicUsize,
}

impl Unpark {
    fn new() -> Arc<Unpark> {
        Arc::new(Unpark {
            thread: thread::current(),
            wakes: AtomicUsize::new(0),
        })
    }

    fn wakes(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }

    /// Parks until woken at least once (a hang is caught by the caller's watchdog).
    fn wait_for_wake(&self) {
        while self.wakes() == 0 {
            thread::park_timeout(Duration::from_millis(50));
        }
    }
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// A waker whose `wake` counts, then panics.
struct Panicky {
    wakes: AtomicUsize,
}

impl Panicky {
    fn new() -> Arc<Panicky> {
        Arc::new(Panicky {
            wakes: AtomicUsize::new(0),
        })
    }

    fn wakes(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }

    /// Spins until `wake` was called (a hang is caught by the caller's watchdog).
    fn wait_for_wake(&self) {
        while self.wakes() == 0 {
            thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Wake for Panicky {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        panic!("the waker's own panic");
    }
}

fn poll_once<F: Future + Unpin>(fut: &mut F, waker: &Waker) -> Poll<F::Output> {
    std::pin::Pin::new(fut).poll(&mut Context::from_waker(waker))
}

/// Polls `fut` with a waker of this thread until it is ready.
fn block_on<F: Future + Unpin>(mut fut: F) -> F::Output {
    let flag = Unpark::new();
    let waker = Waker::from(flag.clone());
    loop {
        let seen = flag.wakes();
        if let Poll::Ready(out) = poll_once(&mut fut, &waker) {
            return out;
        }
        while flag.wakes() == seen {
            thread::park_timeout(Duration::from_millis(50));
        }
    }
}

/// One worker held by a task until `go` is sent, and a queue of capacity 1 that is full.
/// The pool's panic handler counts its calls in the returned counter.
fn full_pool() -> (Pool, mpsc::Sender<()>, Arc<AtomicUsize>) {
    let (pool, handled) = counting_pool(1);
    let go = hold_the_worker(&pool);
    pool.submit(|| ()).unwrap();
    (pool, go, handled)
}

/// One worker, a queue of `capacity` that refuses when full, and a panic handler that counts
/// its calls in the returned counter.
fn counting_pool(capacity: usize) -> (Pool, Arc<AtomicUsize>) {
    let handled = Arc::new(AtomicUsize::new(0));
    let h = handled.clone();
    let pool = Pool::builder()
        .workers(1)
        .capacity(capacity)
        .when_full(Backpressure::Reject)
        .panic_handler(move |_| {
            h.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    (pool, handled)
}

/// Submits a task that holds the pool's (only) worker until the returned sender sends.
fn hold_the_worker(pool: &Pool) -> mpsc::Sender<()> {
    let (started_tx, started) = mpsc::channel();
    let (go_tx, go) = mpsc::channel::<()>();
    pool.submit(move || {
        started_tx.send(()).unwrap();
        go.recv().unwrap();
    })
    .unwrap();
    started.recv().unwrap();
    go_tx
}

#[test]
fn a_worker_that_frees_room_wakes_every_waiter_past_a_panicking_one() {
    watchdog(30, "room waiters past a panicking waker", || {
        let (pool, go, handled) = full_pool();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let mut first = pool.submit_async(move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        let panicky = Panicky::new();
        assert!(poll_once(&mut first, &Waker::from(panicky.clone())).is_pending());
        // Registered after the panicking one: woken after it, from the same list.
        let mut second = pool.spawn_async(|| 7);
        let flag = Unpark::new();
        assert!(poll_once(&mut second, &Waker::from(flag.clone())).is_pending());
        go.send(()).unwrap(); // the worker starts the queued task: room
        flag.wait_for_wake();
        assert_eq!(panicky.wakes(), 1);
        let handle = block_on(second);
        block_on(first).unwrap();
        assert_eq!(block_on(handle).unwrap(), 7);
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        let stats = pool.stats();
        assert_eq!((stats.completed, stats.panicked), (4, 0));
        assert_eq!(handled.load(Ordering::SeqCst), 0, "no task panicked");
    });
}

#[test]
fn shutdown_wakes_every_room_waiter_past_a_panicking_one_and_joins() {
    watchdog(30, "shutdown past a panicking waker", || {
        let (pool, go, handled) = full_pool();
        let pool = Arc::new(pool);
        // One task type for both, so that one loop polls them.
        fn nothing() {}
        let mut first = pool.submit_async(nothing as fn());
        let panicky = Panicky::new();
        assert!(poll_once(&mut first, &Waker::from(panicky.clone())).is_pending());
        let mut second = pool.submit_async(nothing as fn());
        let flag = Unpark::new();
        let waker = Waker::from(flag.clone());
        assert!(poll_once(&mut second, &waker).is_pending());
        let p = pool.clone();
        let closer = thread::spawn(move || p.shutdown_timeout(Duration::from_secs(20)));
        // The worker is still held: no room is freed, only the shutdown wakes.
        flag.wait_for_wake();
        assert_eq!(panicky.wakes(), 1);
        for fut in [&mut first, &mut second] {
            match poll_once(fut, &waker) {
                Poll::Ready(Err(e)) => assert_eq!(e.reason(), RejectReason::Shutdown),
                other => panic!("{:?}", other.map(|r| r.map_err(|e| e.reason()))),
            }
        }
        go.send(()).unwrap();
        closer
            .join()
            .expect("the waker's panic does not escape the shutdown")
            .unwrap();
        let stats = pool.stats();
        assert_eq!((stats.completed, stats.panicked), (2, 0));
        assert_eq!(handled.load(Ordering::SeqCst), 0, "no task panicked");
    });
}

#[test]
fn a_task_whose_awaiting_waker_panics_counts_as_completed() {
    watchdog(30, "a handle awaited by a panicking waker", || {
        let (pool, handled) = counting_pool(16);
        let go = hold_the_worker(&pool);
        let mut handle = pool.spawn(|| 42);
        let panicky = Panicky::new();
        assert!(poll_once(&mut handle, &Waker::from(panicky.clone())).is_pending());
        go.send(()).unwrap();
        panicky.wait_for_wake();
        assert_eq!(block_on(handle).unwrap(), 42);
        pool.wait().unwrap();
        let stats = pool.stats();
        assert_eq!((stats.completed, stats.panicked), (2, 0));
        assert_eq!(
            handled.load(Ordering::SeqCst),
            0,
            "the waker's panic is not the task's"
        );
    });
}

#[test]
fn cancel_wakes_a_panicking_waker_and_returns_true() {
    watchdog(
        30,
        "cancel of a handle awaited by a panicking waker",
        || {
            let pool = Pool::builder().workers(1).build().unwrap();
            let go = hold_the_worker(&pool);
            let mut handle = pool.spawn(|| 42);
            let panicky = Panicky::new();
            assert!(poll_once(&mut handle, &Waker::from(panicky.clone())).is_pending());
            assert!(handle.cancel(), "the waker's panic does not escape cancel");
            assert_eq!(panicky.wakes(), 1);
            assert!(matches!(block_on(handle), Err(JoinError::Cancelled)));
            go.send(()).unwrap();
            pool.wait().unwrap();
            let stats = pool.stats();
            assert_eq!((stats.completed, stats.dropped, stats.panicked), (1, 1, 0));
        },
    );
}

/// Set in the child process `a_waker_panic_is_reported_on_stderr` starts.
const CHILD_VAR: &str = "FLOCK_PANICKING_WAKER_CHILD";

/// The child's half of `a_waker_panic_is_reported_on_stderr`: a task's end wakes a waker
/// that panics. Does nothing in an ordinary run.
#[test]
fn child_process_entry() {
    if std::env::var_os(CHILD_VAR).is_none() {
        return;
    }
    watchdog(20, "the child's pool", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let go = hold_the_worker(&pool);
        let mut handle = pool.spawn(|| ());
        let panicky = Panicky::new();
        assert!(poll_once(&mut handle, &Waker::from(panicky.clone())).is_pending());
        go.send(()).unwrap();
        panicky.wait_for_wake();
        pool.shutdown().unwrap();
    });
}

#[test]
fn a_waker_panic_is_reported_on_stderr() {
    let out = watchdog(30, "the child process", || {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_process_entry", "--nocapture"])
            .env(CHILD_VAR, "1")
            .env("RUST_BACKTRACE", "0")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{err}", out.status);
    assert!(
        err.contains(
            "flock: the waker panicked (worker Some(0)): the waker's own panic; the pool goes on"
        ),
        "{err}"
    );
}
