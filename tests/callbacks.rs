//! User callbacks run guarded: a `thread_name` callback that panics makes `build` fail with
//! an error (stopping the workers it started) and `resize` fail with one (keeping the
//! workers below the failed one, and a worker count that matches them); an `on_worker_stop`
//! hook of a retiring worker that resizes its pool gets an error instead of a deadlock.

mod common;

use common::watchdog;
use flock::{BuildError, Pool, ResizeError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, OnceLock, Weak};
use std::time::Duration;

/// Names workers, panicking for index `from` and above.
fn names_until(from: usize) -> impl Fn(usize) -> String + Send + Sync + 'static {
    move |i| {
        assert!(i < from, "no name for worker {i}");
        format!("named-{i}")
    }
}

#[test]
fn build_with_a_panicking_thread_name_fails_and_stops_what_it_started() {
    watchdog(30, "build with a panicking thread_name", || {
        let (started, stopped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (s, t) = (started.clone(), stopped.clone());
        let built = catch_unwind(AssertUnwindSafe(|| {
            Pool::builder()
                .workers(4)
                .thread_name(names_until(2))
                .on_worker_start(move |_| {
                    s.fetch_add(1, SeqCst);
                })
                .on_worker_stop(move |_| {
                    t.fetch_add(1, SeqCst);
                })
                .build()
        }))
        .expect("build returns, it does not unwind");
        match built {
            Err(BuildError::ThreadNamePanicked { worker, message }) => {
                assert_eq!(worker, 2);
                assert_eq!(message, "no name for worker 2");
            }
            other => panic!("expected ThreadNamePanicked, got {other:?}"),
        }
        // The two workers started before the failure were stopped and joined.
        assert_eq!((started.load(SeqCst), stopped.load(SeqCst)), (2, 2));
    });
}

#[test]
fn resize_with_a_panicking_thread_name_keeps_a_consistent_count() {
    watchdog(30, "resize with a panicking thread_name", || {
        let pool = Pool::builder()
            .workers(1)
            .max_workers(4)
            .thread_name(names_until(2))
            .build()
            .unwrap();
        let resized = catch_unwind(AssertUnwindSafe(|| pool.resize(3)))
            .expect("resize returns, it does not unwind");
        match resized {
            Err(ResizeError::ThreadNamePanicked { worker, .. }) => assert_eq!(worker, 2),
            other => panic!("expected ThreadNamePanicked, got {other:?}"),
        }
        assert_eq!(pool.workers(), 2, "the worker below the failed one stays");
        let names: Vec<_> = (0..20)
            .map(|_| pool.spawn(|| std::thread::current().name().map(str::to_owned)))
            .collect();
        for name in names {
            let name = name.join().unwrap().unwrap();
            assert!(name == "named-0" || name == "named-1", "{name}");
        }
        assert_eq!(pool.stats().per_worker.len(), 2);
        pool.shutdown().unwrap();
    });
}

/// A retiring worker's stop hook calls `resize`: a resize waits for retiring workers to be
/// gone, this one included, so it is refused at once.
#[test]
fn resize_from_a_retiring_workers_stop_hook_is_refused() {
    watchdog(30, "resize from on_worker_stop", || {
        let slot: Arc<OnceLock<Weak<Pool>>> = Arc::new(OnceLock::new());
        let (tx, rx) = mpsc::channel();
        let (hook_slot, tx) = (slot.clone(), std::sync::Mutex::new(tx));
        let pool = Arc::new(
            Pool::builder()
                .workers(2)
                .on_worker_stop(move |i| {
                    if let Some(pool) = hook_slot.get().and_then(Weak::upgrade) {
                        let _ = tx.lock().unwrap().send((i, pool.resize(2)));
                    }
                })
                .build()
                .unwrap(),
        );
        slot.set(Arc::downgrade(&pool)).unwrap();
        pool.resize(1).unwrap();
        let (worker, resized) = rx.recv_timeout(Duration::from_secs(20)).unwrap();
        assert_eq!(worker, 1);
        assert!(
            matches!(resized, Err(ResizeError::WouldDeadlock)),
            "{resized:?}"
        );
        // The pool goes on: it can still grow, from outside.
        common::eventually(|| pool.stats().per_worker.len() == 1);
        pool.resize(2).unwrap();
        assert_eq!(pool.spawn(|| 5).join().unwrap(), 5);
        pool.shutdown().unwrap();
        drop(rx);
    });
}
