//! The per-operation cost probe that `scripts/callgrind.sh` runs under
//! `valgrind --tool=callgrind --collect-bus=yes`: one operation kind, one pool, one size per
//! process, so that the difference between two sizes divided by the difference in operations
//! is the instructions (and locked instructions) one operation costs, start-up and tear-down
//! cancelled. Instruction counts do not move with machine load, unlike time.
//!
//! Every pool has **one worker**: valgrind runs one thread at a time anyway, and with one
//! worker nothing is stolen, so the counts are the fork, spawn and submit paths themselves.
//!
//! ```text
//! callgrind_probe join  flock|rayon   N   # fib(N) through join: F(N+1) - 1 joins
//! callgrind_probe spawn flock|rayon   D   # a binary tree of scope spawns: 2^(D+1) - 2 tasks
//! callgrind_probe submit flock|flock-latency|rayon|channel N   # N empty tasks from an outside thread, then wait
//! ```
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn fib_flock(pool: &flock::Pool, n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let (a, b) = pool.join(|| fib_flock(pool, n - 1), || fib_flock(pool, n - 2));
    a + b
}

fn fib_rayon(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1), || fib_rayon(n - 2));
    a + b
}

fn tree_flock<'s>(s: &flock::Scope<'s>, depth: u32, leaves: &'s AtomicU64) {
    if depth == 0 {
        leaves.fetch_add(1, Ordering::Relaxed);
        return;
    }
    s.spawn(move |s| tree_flock(s, depth - 1, leaves));
    s.spawn(move |s| tree_flock(s, depth - 1, leaves));
}

fn tree_rayon<'s>(s: &rayon::Scope<'s>, depth: u32, leaves: &'s AtomicU64) {
    if depth == 0 {
        leaves.fetch_add(1, Ordering::Relaxed);
        return;
    }
    s.spawn(move |s| tree_rayon(s, depth - 1, leaves));
    s.spawn(move |s| tree_rayon(s, depth - 1, leaves));
}

fn flock_pool() -> Arc<flock::Pool> {
    Arc::new(flock::Pool::builder().workers(1).build().expect("pool"))
}

/// The same pool with `track_latency(true)`: what the queue-wait and run-time histograms
/// cost per task.
fn flock_latency_pool() -> Arc<flock::Pool> {
    let pool = flock::Pool::builder().workers(1).track_latency(true);
    Arc::new(pool.build().expect("pool"))
}

fn rayon_pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("rayon pool")
}

/// A crossbeam-channel pool with one thread: the simplest pool people write by hand.
fn submit_channel(n: usize) -> u64 {
    let hits = Arc::new(AtomicU64::new(0));
    let (tx, rx) = crossbeam_channel::unbounded::<Box<dyn FnOnce() + Send>>();
    let worker = std::thread::spawn(move || {
        while let Ok(task) = rx.recv() {
            task();
        }
    });
    for _ in 0..n {
        let h = hits.clone();
        tx.send(Box::new(move || {
            h.fetch_add(1, Ordering::Relaxed);
        }))
        .expect("worker alive");
    }
    drop(tx);
    worker.join().expect("worker");
    hits.load(Ordering::Relaxed)
}

fn submit_flock(pool: Arc<flock::Pool>, n: usize) -> u64 {
    let hits = Arc::new(AtomicU64::new(0));
    for _ in 0..n {
        let h = hits.clone();
        pool.submit(move || {
            h.fetch_add(1, Ordering::Relaxed);
        })
        .expect("accepted");
    }
    pool.wait().expect("quiet");
    hits.load(Ordering::Relaxed)
}

fn submit_rayon(n: usize) -> u64 {
    let pool = rayon_pool();
    let hits = Arc::new(AtomicU64::new(0));
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let left = Arc::new(AtomicU64::new(n as u64));
    for _ in 0..n {
        let (h, left, done) = (hits.clone(), left.clone(), done_tx.clone());
        pool.spawn(move || {
            h.fetch_add(1, Ordering::Relaxed);
            if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                done.send(()).expect("main waits");
            }
        });
    }
    if n > 0 {
        done_rx.recv().expect("all ran");
    }
    hits.load(Ordering::Relaxed)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [op, pool, size] = &args[..] else {
        panic!("usage: callgrind_probe join|spawn|submit flock|flock-latency|rayon|channel SIZE");
    };
    let size: u32 = size.parse().expect("a number");
    let result = match (op.as_str(), pool.as_str()) {
        ("join", "flock") => {
            let p = flock_pool();
            let q = p.clone();
            p.spawn(move || fib_flock(&q, size)).join().expect("fib")
        }
        ("join", "rayon") => rayon_pool().install(|| fib_rayon(size)),
        ("spawn", "flock") => {
            let p = flock_pool();
            let q = p.clone();
            p.spawn(move || {
                let leaves = AtomicU64::new(0);
                q.scope(|s| tree_flock(s, size, &leaves));
                leaves.into_inner()
            })
            .join()
            .expect("tree")
        }
        ("spawn", "rayon") => rayon_pool().install(|| {
            let leaves = AtomicU64::new(0);
            rayon::scope(|s| tree_rayon(s, size, &leaves));
            leaves.into_inner()
        }),
        ("submit", "flock") => submit_flock(flock_pool(), size as usize),
        ("submit", "flock-latency") => submit_flock(flock_latency_pool(), size as usize),
        ("submit", "rayon") => submit_rayon(size as usize),
        ("submit", "channel") => submit_channel(size as usize),
        _ => panic!("unknown op/pool {op} {pool}"),
    };
    println!("{result}");
}
