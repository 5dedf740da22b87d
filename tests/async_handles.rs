//! `JoinHandle` as a `Future`, `cancel_on_drop`, and async admission (`submit_async`,
//! `spawn_async`): with a minimal hand-written executor (no runtime at all). The same with
//! tokio is in `integration/tests/async_tokio.rs` (tokio is no dev-dependency of the crate).

mod common;

use flock::{Backpressure, JoinError, Pool, RejectReason};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
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
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// The smallest executor: poll, park until woken, poll again. Also counts the polls, so a
/// test can tell that nothing busy-polled.
fn block_on<F: Future>(fut: F) -> (F::Output, usize) {
    let mut fut = pin!(fut);
    let flag = Unpark::new();
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return (out, polls);
        }
        // Park until a wake arrived since the last poll (`park` may return spuriously).
        let seen = flag.wakes();
        while flag.wakes() == seen {
            if polls > 1_000 {
                panic!("busy-polled");
            }
            thread::park_timeout(Duration::from_secs(10));
        }
    }
}

fn poll_once<F: Future + Unpin>(fut: &mut F, waker: &Waker) -> Poll<F::Output> {
    std::pin::Pin::new(fut).poll(&mut Context::from_waker(waker))
}

/// A pool whose only worker is held by a task until `release` is sent.
fn busy_pool() -> (Pool, mpsc::Sender<()>) {
    busy(Pool::builder().workers(1).build().unwrap())
}

/// One worker, held by a task, and a queue of capacity 1 that is full: the next task
/// submitted from outside finds no room.
fn full_pool(policy: Backpressure) -> (Pool, mpsc::Sender<()>) {
    let (pool, go) = busy(
        Pool::builder()
            .workers(1)
            .capacity(1)
            .when_full(policy)
            .build()
            .unwrap(),
    );
    pool.submit(|| ()).unwrap();
    (pool, go)
}

fn busy(pool: Pool) -> (Pool, mpsc::Sender<()>) {
    let (started_tx, started) = mpsc::channel();
    let (go_tx, go) = mpsc::channel::<()>();
    pool.submit(move || {
        started_tx.send(()).unwrap();
        go.recv().unwrap();
    })
    .unwrap();
    started.recv().unwrap();
    (pool, go_tx)
}

#[test]
fn awaiting_a_handle_gives_its_value() {
    let pool = Pool::new();
    let (value, _) = block_on(pool.spawn(|| 6 * 7));
    assert_eq!(value.unwrap(), 42);
    let values: Vec<u64> = (0..100)
        .map(|i| block_on(pool.spawn(move || i * i)).0.unwrap())
        .collect();
    assert_eq!(values.iter().sum::<u64>(), 328_350);
}

#[test]
fn a_panic_surfaces_as_join_error() {
    let pool = Pool::new();
    let (result, _) = block_on(pool.spawn(|| -> u32 { panic!("bad input") }));
    match result {
        Err(e @ JoinError::Panicked(_)) => {
            assert_eq!(e.to_string(), "the task panicked: bad input")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn polling_never_blocks_and_the_waker_is_woken_once_the_task_ends() {
    common::watchdog(
        30,
        "polling_never_blocks_and_the_waker_is_woken_once_the_task_ends",
        || {
            let (pool, go) = busy_pool();
            let mut handle = pool.spawn(|| "done");
            let flag = Unpark::new();
            let waker = Waker::from(flag.clone());
            // A poll that blocked would wait for `go`, sent below: the watchdog calls that a hang.
            for _ in 0..3 {
                assert!(poll_once(&mut handle, &waker).is_pending());
            }
            assert_eq!(flag.wakes(), 0);
            go.send(()).unwrap();
            while flag.wakes() == 0 {
                thread::park_timeout(Duration::from_millis(100));
            }
            assert_eq!(flag.wakes(), 1, "one wake for one set");
            assert!(matches!(
                poll_once(&mut handle, &waker),
                Poll::Ready(Ok("done"))
            ));
        },
    );
}

#[test]
fn a_new_waker_replaces_the_old_one() {
    let (pool, go) = busy_pool();
    let mut handle = pool.spawn(|| 5);
    let (old, new) = (Unpark::new(), Unpark::new());
    assert!(poll_once(&mut handle, &Waker::from(old.clone())).is_pending());
    assert!(poll_once(&mut handle, &Waker::from(new.clone())).is_pending());
    go.send(()).unwrap();
    while new.wakes() == 0 {
        thread::park_timeout(Duration::from_millis(100));
    }
    assert_eq!(old.wakes(), 0, "the replaced waker is not woken");
    let ready = poll_once(&mut handle, &Waker::from(new.clone()));
    assert!(matches!(ready, Poll::Ready(Ok(5))));
}

#[test]
fn join_after_a_pending_poll_still_waits() {
    let (pool, go) = busy_pool();
    let mut handle = pool.spawn(|| 9);
    assert!(poll_once(&mut handle, &Waker::from(Unpark::new())).is_pending());
    let releaser = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        go.send(()).unwrap();
    });
    assert_eq!(handle.join().unwrap(), 9);
    releaser.join().unwrap();
    // And from a worker of another pool, which runs its own tasks while it waits.
    let (pool2, go2) = busy_pool();
    let mut handle = pool2.spawn(|| 10);
    assert!(poll_once(&mut handle, &Waker::from(Unpark::new())).is_pending());
    let other = Pool::builder().workers(1).build().unwrap();
    let joined = other.spawn(move || handle.join().unwrap());
    go2.send(()).unwrap();
    assert_eq!(joined.join().unwrap(), 10);
    drop(pool);
}

#[test]
fn dropping_an_awaited_handle_detaches_the_task() {
    let (pool, go) = busy_pool();
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let mut handle = pool.spawn(move || r.store(true, Ordering::SeqCst));
    assert!(poll_once(&mut handle, &Waker::from(Unpark::new())).is_pending());
    drop(handle);
    go.send(()).unwrap();
    pool.wait().unwrap();
    assert!(ran.load(Ordering::SeqCst), "a plain handle detaches");
}

#[test]
fn dropping_a_cancel_on_drop_handle_cancels_queued_work_only() {
    let (pool, go) = busy_pool();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let mut queued = pool
        .spawn(move || r.fetch_add(1, Ordering::SeqCst))
        .cancel_on_drop();
    assert!(poll_once(&mut queued, &Waker::from(Unpark::new())).is_pending());
    drop(queued);
    go.send(()).unwrap();
    pool.wait().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 0, "cancelled before it started");
    assert_eq!(pool.stats().dropped, 1);

    // Once started, dropping the wrapper lets the task finish.
    let (started_tx, started) = mpsc::channel();
    let (go_tx, go) = mpsc::channel::<()>();
    let r = ran.clone();
    let running = pool
        .spawn(move || {
            started_tx.send(()).unwrap();
            go.recv().unwrap();
            r.fetch_add(1, Ordering::SeqCst);
        })
        .cancel_on_drop();
    started.recv().unwrap();
    drop(running);
    go_tx.send(()).unwrap();
    pool.wait().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

#[test]
fn a_refused_handle_is_ready_at_once() {
    let pool = Pool::new();
    pool.shutdown().unwrap();
    let (result, polls) = block_on(pool.spawn(|| 1));
    assert!(matches!(
        result,
        Err(JoinError::Refused(RejectReason::Shutdown))
    ));
    assert_eq!(polls, 1);
}

/// Counts its drops: tells whether a task's closure was dropped unrun.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Parks until `flag`'s waker was woken; a wake that never comes is the watchdog's hang.
fn wait_for_wake(flag: &Unpark) {
    while flag.wakes() == 0 {
        thread::park_timeout(Duration::from_millis(50));
    }
}

#[test]
fn submit_async_waits_for_room_where_submit_is_refused() {
    common::watchdog(
        30,
        "submit_async_waits_for_room_where_submit_is_refused",
        || {
            let (pool, go) = full_pool(Backpressure::Reject);
            assert_eq!(pool.submit(|| ()).unwrap_err().reason(), RejectReason::Full);
            let ran = Arc::new(AtomicBool::new(false));
            let r = ran.clone();
            let mut fut = pool.submit_async(move || r.store(true, Ordering::SeqCst));
            let flag = Unpark::new();
            let waker = Waker::from(flag.clone());
            assert!(poll_once(&mut fut, &waker).is_pending());
            assert_eq!(flag.wakes(), 0);
            go.send(()).unwrap(); // the worker starts the queued task: room
            wait_for_wake(&flag);
            assert!(matches!(poll_once(&mut fut, &waker), Poll::Ready(Ok(()))));
            pool.wait().unwrap();
            assert!(ran.load(Ordering::SeqCst));
            if cfg!(feature = "stats") {
                // Refusal counters exist with the `metrics` feature only.
                let stats = pool.stats();
                assert_eq!(stats.rejected_full, 1, "waiting is not counted as refusals");
            }
        },
    );
}

/// A submitter that found the queue full is woken at the low-water mark, `capacity -
/// capacity / 32` (docs/protocol.md, "Backpressure"), not at the first task started: with
/// capacity 64, not when the queue goes 64 -> 63 or 63 -> 62, but at 62 -> 61. Waking at the
/// first room made a submitter that keeps the queue full sleep and wake once per flush of
/// the workers (~600 times a `cpu-1us` run), for a few tasks at a time.
#[test]
fn a_waiting_submit_is_woken_at_the_low_water_mark() {
    common::watchdog(
        30,
        "a_waiting_submit_is_woken_at_the_low_water_mark",
        || {
            // `max_workers(2)`: workers give back each start at once (`capacity / (32 × 2)` = 1).
            let pool = Pool::builder()
                .workers(1)
                .max_workers(2)
                .capacity(64)
                .build()
                .unwrap();
            // The worker holds task 0; tasks 1-64 fill the queue.
            let (started, gos) = common::fill_behind_a_held_task(&pool, 64);
            let mut fut = pool.submit_async(|| ());
            let flag = Unpark::new();
            let waker = Waker::from(flag.clone());
            assert!(
                poll_once(&mut fut, &waker).is_pending(),
                "the queue is full"
            );
            for (i, go) in gos.iter().enumerate().take(2) {
                go.send(()).unwrap();
                // Task i + 1 has started: its unit of capacity was given back before it ran.
                assert_eq!(started.recv().unwrap(), i + 1);
                assert_eq!(flag.wakes(), 0, "woken with {} of 64 queued", 63 - i);
            }
            gos[2].send(()).unwrap();
            assert_eq!(started.recv().unwrap(), 3);
            wait_for_wake(&flag);
            assert!(matches!(poll_once(&mut fut, &waker), Poll::Ready(Ok(()))));
            for go in &gos[3..] {
                go.send(()).unwrap();
            }
            pool.wait().unwrap();
            assert_eq!(pool.stats().completed, 66);
        },
    );
}

#[test]
fn submit_async_never_blocks_under_block() {
    common::watchdog(30, "submit_async_never_blocks_under_block", || {
        let (pool, go) = full_pool(Backpressure::Block);
        let mut fut = pool.submit_async(|| ());
        // A poll that blocked would wait for `go`, sent below: the watchdog calls that a hang.
        assert!(poll_once(&mut fut, &Waker::from(Unpark::new())).is_pending());
        let releaser = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            go.send(()).unwrap();
        });
        let (result, polls) = block_on(fut);
        result.unwrap();
        assert!(polls <= 10, "{polls} polls: woken without room too often");
        releaser.join().unwrap();
        pool.wait().unwrap();
        assert_eq!(pool.stats().completed, 3);
    });
}

/// Under `CallerRuns` and `SpawnThread` a full queue makes `submit` run the task on the
/// caller or on a helper thread; the async forms wait for room instead, whatever the policy:
/// running the task in `poll` would block the executor's thread (README: "Async callers never
/// block"). So the first poll is pending, no helper thread is started, and the task runs on
/// the pool's worker, not on the thread that polled. `spawn_async` and `run_async` too.
#[test]
fn async_admission_waits_for_room_under_caller_runs_and_spawn_thread() {
    common::watchdog(
        60,
        "async admission under CallerRuns and SpawnThread",
        || {
            for policy in [Backpressure::CallerRuns, Backpressure::SpawnThread] {
                for form in ["submit_async", "spawn_async", "run_async"] {
                    let (pool, go) = full_pool(policy);
                    let poller = thread::current().id();
                    let (tx, ran_on) = mpsc::channel();
                    let task = move || {
                        tx.send((thread::current().id(), flock::current_worker_index()))
                            .unwrap();
                    };
                    let mut fut: std::pin::Pin<Box<dyn Future<Output = bool>>> = match form {
                        "submit_async" => Box::pin(async { pool.submit_async(task).await.is_ok() }),
                        "spawn_async" => Box::pin(async {
                            let handle = pool.spawn_async(task).await;
                            handle.await.is_ok()
                        }),
                        _ => Box::pin(async { pool.run_async(task).await.is_ok() }),
                    };
                    let flag = Unpark::new();
                    let waker = Waker::from(flag.clone());
                    assert!(
                        fut.as_mut()
                            .poll(&mut Context::from_waker(&waker))
                            .is_pending(),
                        "{policy:?}, {form}: the first poll did not wait for room"
                    );
                    assert!(
                        ran_on.try_recv().is_err(),
                        "{policy:?}, {form}: the task ran in the poll"
                    );
                    go.send(()).unwrap(); // the worker starts the queued task: room
                    let (ok, _) = block_on(fut);
                    assert!(ok, "{policy:?}, {form}");
                    pool.wait().unwrap();
                    let (thread, worker) = ran_on.recv().unwrap();
                    assert_ne!(
                        thread, poller,
                        "{policy:?}, {form}: ran on the polling thread"
                    );
                    assert_eq!(worker, Some(0), "{policy:?}, {form}: ran off the workers");
                    if cfg!(feature = "stats") {
                        let stats = pool.stats();
                        assert_eq!(stats.spawned_thread, 0, "{policy:?}, {form}");
                        assert_eq!(stats.caller_runs, 0, "{policy:?}, {form}");
                    }
                }
            }
        },
    );
}

/// An awaited handle whose task `shutdown_now` or `purge` drops unrun: the waiter registered
/// by the pending poll is woken, once, and the next poll is ready with `Dropped` (README:
/// "the task's end ... and a shutdown each wake what registered"; a blocking `join` has the
/// same checks in `tests/shutdown.rs` and `tests/purge.rs`).
#[test]
fn an_awaited_handle_whose_task_is_dropped_is_woken_with_dropped() {
    common::watchdog(30, "awaited handle of a dropped task", || {
        for how in ["shutdown_now", "purge"] {
            let (pool, go) = busy_pool();
            let mut handle = pool.spawn(|| 7);
            let flag = Unpark::new();
            let waker = Waker::from(flag.clone());
            assert!(poll_once(&mut handle, &waker).is_pending(), "{how}");
            let dropped = match how {
                "shutdown_now" => {
                    let pool = Arc::new(pool);
                    let p = pool.clone();
                    // Returns once the held worker's task ends (`go`, below, sent once the
                    // shutdown has begun).
                    let shut = thread::spawn(move || p.shutdown_now().unwrap());
                    while !pool.is_shutdown() {
                        thread::yield_now();
                    }
                    go.send(()).unwrap();
                    shut.join().unwrap() as usize
                }
                _ => {
                    let n = pool.purge();
                    go.send(()).unwrap();
                    pool.wait().unwrap();
                    n
                }
            };
            assert_eq!(dropped, 1, "{how}");
            wait_for_wake(&flag);
            assert_eq!(flag.wakes(), 1, "{how}: woken once");
            match poll_once(&mut handle, &waker) {
                Poll::Ready(Err(flock::JoinError::Dropped)) => {}
                other => panic!("{how}: {other:?}"),
            }
        }
    });
}

#[test]
fn dropping_a_waiting_submit_drops_the_task_unrun() {
    let (pool, go) = full_pool(Backpressure::Reject);
    let drops = Arc::new(AtomicUsize::new(0));
    let token = DropCount(drops.clone());
    let mut fut = pool.submit_async(move || drop(token));
    assert!(poll_once(&mut fut, &Waker::from(Unpark::new())).is_pending());
    drop(fut);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    go.send(()).unwrap();
    pool.wait().unwrap();
    assert_eq!(pool.stats().completed, 2, "only the two tasks admitted ran");
}

#[test]
fn shutdown_wakes_a_waiting_submit_and_hands_the_task_back() {
    common::watchdog(
        30,
        "shutdown_wakes_a_waiting_submit_and_hands_the_task_back",
        || {
            let (pool, go) = full_pool(Backpressure::Block);
            let pool = Arc::new(pool);
            let (tx, rx) = mpsc::channel();
            let mut fut = pool.submit_async(move || tx.send(5).unwrap());
            let flag = Unpark::new();
            let waker = Waker::from(flag.clone());
            assert!(poll_once(&mut fut, &waker).is_pending());
            let p = pool.clone();
            let closer = thread::spawn(move || p.shutdown().unwrap());
            wait_for_wake(&flag);
            match poll_once(&mut fut, &waker) {
                Poll::Ready(Err(refused)) => {
                    assert_eq!(refused.reason(), RejectReason::Shutdown);
                    refused.into_inner()(); // handed back unrun: run it here
                    assert_eq!(rx.recv().unwrap(), 5);
                }
                other => panic!("{:?}", other.map(|r| r.map_err(|e| e.reason()))),
            }
            go.send(()).unwrap();
            closer.join().unwrap();
        },
    );
}

#[test]
fn spawn_async_from_a_worker_resolves_at_once() {
    let pool = Arc::new(Pool::builder().workers(2).capacity(1).build().unwrap());
    let p = pool.clone();
    let inner = pool
        .spawn(move || {
            // From a task: onto the worker's own deque, never waiting for room.
            let (handle, polls) = block_on(p.spawn_async(|| 3));
            assert_eq!(polls, 1);
            handle.join().unwrap()
        })
        .join()
        .unwrap();
    assert_eq!(inner, 3);
}

#[test]
fn async_admission_into_a_lane() {
    let pool = Pool::builder()
        .workers(1)
        .lanes(&[("interactive", 8), ("batch", 1)])
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    block_on(pool.submit_async_to("batch", move || tx.send(1).unwrap()))
        .0
        .unwrap();
    let (handle, _) = block_on(pool.spawn_async_to(1usize, || 2));
    assert_eq!(block_on(handle).0.unwrap(), 2);
    assert_eq!(rx.recv().unwrap(), 1);
    pool.wait().unwrap();
    if cfg!(feature = "stats") {
        let batch = &pool.stats().lanes[1];
        assert_eq!((batch.submitted, batch.executed), (2, 2));
    }
    let (refused, polls) = block_on(pool.submit_async_to("nope", || ()));
    assert_eq!(refused.unwrap_err().reason(), RejectReason::UnknownLane);
    assert_eq!(polls, 1);
    let (handle, _) = block_on(pool.spawn_async_to("nope", || 3));
    assert!(matches!(
        block_on(handle).0,
        Err(JoinError::Refused(RejectReason::UnknownLane))
    ));
}
