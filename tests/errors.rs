//! flock's errors compose: every one is `Send + Sync + 'static` whatever task or panic
//! payload it holds, so `?` turns it into `Box<dyn Error + Send + Sync>` (what `anyhow` needs
//! too); `Scope` has `Debug`; `for_each` takes its chunk as an `Option`.

mod common;

use common::watchdog;
use flock::{
    BatchError, BuildError, JoinError, PanicPayload, Pool, RejectReason, ResizeError, Scope,
    SubmitError, TaskPanic, WaitError,
};
use std::cell::Cell;
use std::error::Error;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc::{channel, Receiver};

type BoxError = Box<dyn Error + Send + Sync>;

/// Compile-time: these bounds are checked when the test is built, not when it runs.
fn error_that_composes<E: Error + Send + Sync + 'static>() {}
fn send_sync<T: Send + Sync + 'static>() {}

/// A task that is `Send` but not `Sync` (a `Receiver` and a `Cell` inside).
type NotSyncTask = Box<dyn FnOnce() + Send>;
fn not_sync_task(rx: Receiver<u32>) -> impl FnOnce() + Send + 'static {
    let seen = Cell::new(0);
    move || {
        while let Ok(n) = rx.recv() {
            seen.set(seen.get() + n);
        }
    }
}

#[test]
fn every_public_error_is_send_sync_static_and_an_error() {
    error_that_composes::<JoinError>();
    error_that_composes::<SubmitError<NotSyncTask>>();
    error_that_composes::<BatchError<NotSyncTask>>();
    error_that_composes::<BuildError>();
    error_that_composes::<ResizeError>();
    error_that_composes::<WaitError>();
    error_that_composes::<RejectReason>();
    send_sync::<TaskPanic>();
    send_sync::<PanicPayload>();
}

fn join_with_question_mark(pool: &Pool, fail: bool) -> Result<u32, BoxError> {
    let value = pool
        .spawn(move || {
            assert!(!fail, "asked to fail");
            7
        })
        .join()?;
    Ok(value * 6)
}

#[test]
fn join_question_mark_into_a_boxed_send_sync_error() {
    watchdog(30, "join ?", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        assert_eq!(join_with_question_mark(&pool, false).unwrap(), 42);
        let err = join_with_question_mark(&pool, true).unwrap_err();
        assert_eq!(err.to_string(), "the task panicked: asked to fail");
        // The boxed error is still the JoinError, payload and all.
        let join = err.downcast::<JoinError>().unwrap();
        assert!(join.is_panic());
        let payload = join.into_panic().unwrap();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"asked to fail"));
        // And it crosses threads, as errors in async code and anyhow must.
        let err = join_with_question_mark(&pool, true).unwrap_err();
        let text = std::thread::spawn(move || err.to_string()).join().unwrap();
        assert!(text.contains("asked to fail"));
    });
}

fn submit_with_question_mark(pool: &Pool) -> Result<std::sync::mpsc::Sender<u32>, BoxError> {
    let (tx, rx) = channel();
    pool.submit(not_sync_task(rx))?; // the task is not Sync; the error still is
    Ok(tx)
}

#[test]
fn submit_question_mark_with_a_task_that_is_not_sync() {
    watchdog(30, "submit ?", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let tx = submit_with_question_mark(&pool).unwrap();
        tx.send(1).unwrap();
        drop(tx);
        pool.wait().unwrap();
        pool.shutdown().unwrap();
        let err = submit_with_question_mark(&pool).unwrap_err();
        assert_eq!(err.to_string(), "task refused: the pool is shut down");
        // A batch of such tasks too.
        let batch = || -> Result<usize, BoxError> {
            let (_tx, rx) = channel();
            Ok(pool.submit_batch([not_sync_task(rx)])?)
        };
        assert!(batch().unwrap_err().to_string().contains("shut down"));
    });
}

#[test]
fn the_refused_task_comes_back_and_runs() {
    static RAN: AtomicUsize = AtomicUsize::new(0);
    let pool = Pool::new();
    pool.shutdown().unwrap();
    let err = pool
        .submit(|| {
            RAN.fetch_add(1, SeqCst);
        })
        .unwrap_err();
    assert_eq!(err.reason(), RejectReason::Shutdown);
    (err.into_inner())(); // the Mutex that makes the error Sync gives the task back as it was
    assert_eq!(RAN.load(SeqCst), 1);
    let err = pool.submit(|| ()).unwrap_err();
    assert_eq!(err.into_reason(), RejectReason::Shutdown);
}

#[test]
fn scope_has_debug() {
    let pool = Pool::builder().workers(1).build().unwrap();
    let text = pool.scope(|s: &Scope<'_>| format!("{s:?}"));
    assert!(text.starts_with("Scope {"), "{text}");
    assert!(text.contains("pending: 1"), "{text}"); // the body itself, no task yet
}

#[test]
fn for_each_takes_an_optional_chunk() {
    watchdog(30, "for_each chunk", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        for chunk in [None, Some(1), Some(10), Some(1_000)] {
            let sum = AtomicUsize::new(0);
            pool.for_each(0..100, chunk, |i| {
                sum.fetch_add(i, SeqCst);
            });
            assert_eq!(sum.into_inner(), 4950, "chunk {chunk:?}");
        }
    });
}

#[test]
#[should_panic(expected = "pass None to let the pool choose")]
fn for_each_with_a_chunk_of_zero_panics() {
    let pool = Pool::builder().workers(1).build().unwrap();
    pool.for_each(0..10, Some(0), |_| ());
}
