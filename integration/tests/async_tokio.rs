//! `JoinHandle` as a `Future`, `cancel_on_drop` and `spawn_async` under tokio (the crate's own
//! `tests/async_handles.rs` checks the same with a hand-written executor: tokio is a
//! dev-dependency of this workspace member only, so building flock never compiles it).

use flock::{Backpressure, Pool};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

/// A pool whose only worker is held by a task until `release` is sent.
fn busy_pool() -> (Pool, mpsc::Sender<()>) {
    busy(Pool::builder().workers(1).build().unwrap())
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
fn tokio_awaits_many_handles_without_blocking_its_threads() {
    let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let total = rt.block_on(async {
        let tasks: Vec<_> = (0..200u64)
            .map(|i| {
                let pool = pool.clone();
                tokio::spawn(async move { pool.spawn(move || i * 2).await.unwrap() })
            })
            .collect();
        // A heartbeat on the runtime keeps ticking while the handles are awaited.
        let beat = tokio::spawn(async {
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        beat.await.unwrap();
        total
    });
    assert_eq!(total, 39_800);
}

#[test]
fn tokio_timeout_cancels_queued_work() {
    let (pool, go) = busy_pool();
    let ran = Arc::new(AtomicBool::new(false));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let r = ran.clone();
    let outcome = rt.block_on(async {
        let queued = pool
            .spawn(move || r.store(true, Ordering::SeqCst))
            .cancel_on_drop();
        tokio::time::timeout(Duration::from_millis(20), queued).await
    });
    assert!(outcome.is_err(), "timed out");
    go.send(()).unwrap();
    pool.wait().unwrap();
    assert!(!ran.load(Ordering::SeqCst), "the timeout cancelled it");
}

#[test]
fn tokio_offloads_through_a_small_queue() {
    let pool = Arc::new(
        Pool::builder()
            .workers(2)
            .capacity(4)
            .when_full(Backpressure::Reject)
            .build()
            .unwrap(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let total = rt.block_on(async {
        let tasks: Vec<_> = (0..300u64)
            .map(|i| {
                let pool = pool.clone();
                tokio::spawn(async move {
                    let handle = pool
                        .spawn_async(move || {
                            thread::sleep(Duration::from_micros(50));
                            i
                        })
                        .await;
                    handle.await.unwrap()
                })
            })
            .collect();
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        total
    });
    assert_eq!(total, 44_850);
    assert_eq!(pool.stats().rejected_full, 0);
}
