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
//! callgrind_probe batch flock N   # the same N tasks through one `submit_batch`, then wait
//! callgrind_probe chain flock|rayon N   # N tasks, each submitted by the one before it on the worker
//! callgrind_probe chunks|reduce|sort flock|rayon N   # bench_report's data-parallel bodies over N u64
//! ```
//!
//! The data-parallel ops (`par_chunks_mut` in chunks of 4096, `map_reduce` against
//! `par_iter().map().reduce()`, `par_sort_unstable`) run on pools of
//! `available_parallelism()` workers, as in `bench_report`: their cost per element includes
//! how each pool splits the slice, which depends on the worker count.
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

/// `submit_flock`'s tasks, made lazily by an iterator handed to one `Pool::submit_batch`
/// (`bulk-1Mt`'s `flock-batch` variant).
fn batch_flock(pool: Arc<flock::Pool>, n: usize) -> u64 {
    let hits = Arc::new(AtomicU64::new(0));
    let tasks = (0..n).map(|_| {
        let h = hits.clone();
        move || {
            h.fetch_add(1, Ordering::Relaxed);
        }
    });
    assert_eq!(pool.submit_batch(tasks).ok(), Some(n), "accepted");
    pool.wait().expect("quiet");
    hits.load(Ordering::Relaxed)
}

/// A chain of `n` tasks, each submitted by the one before it: on flock's worker each goes
/// through the worker's own task deque as a five-word job (a push and a pop), the path of a
/// task's `submit`, as against a join's or a scope's two-word entry. The closure is two
/// words (an `Arc` and the count left), so a job with a payload of two words or more holds
/// it inline.
fn chain_flock(pool: Arc<flock::Pool>, n: usize) -> u64 {
    struct Chain {
        pool: Arc<flock::Pool>,
        hits: AtomicU64,
    }
    fn link(chain: Arc<Chain>, left: usize) {
        chain.hits.fetch_add(1, Ordering::Relaxed);
        if left > 1 {
            let c = chain.clone();
            chain
                .pool
                .submit(move || link(c, left - 1))
                .expect("accepted");
        }
    }
    let chain = Arc::new(Chain {
        pool: pool.clone(),
        hits: AtomicU64::new(0),
    });
    if n > 0 {
        let c = chain.clone();
        pool.submit(move || link(c, n)).expect("accepted");
    }
    pool.wait().expect("quiet");
    chain.hits.load(Ordering::Relaxed)
}

/// `chain_flock` on rayon: each task `rayon::spawn`s the next onto its worker's deque.
fn chain_rayon(n: usize) -> u64 {
    fn link(left: usize, hits: Arc<AtomicU64>, done: std::sync::mpsc::Sender<()>) {
        hits.fetch_add(1, Ordering::Relaxed);
        if left > 1 {
            rayon::spawn(move || link(left - 1, hits, done));
        } else {
            done.send(()).expect("main waits");
        }
    }
    let pool = rayon_pool();
    let hits = Arc::new(AtomicU64::new(0));
    if n > 0 {
        let (tx, rx) = std::sync::mpsc::channel();
        let h = hits.clone();
        pool.spawn(move || link(n, h, tx));
        rx.recv().expect("all ran");
    }
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

/// `bench_report`'s data-parallel input: `n` pseudo-random `u64` (xorshift64, fixed seed).
fn data(n: usize) -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

fn mix(x: &u64) -> u64 {
    x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17)
}

fn bump(i: usize, c: &mut [u64]) {
    c.iter_mut().for_each(|x| *x = x.wrapping_mul(3) ^ i as u64);
}

/// One data-parallel op of `bench_report` over `n` elements, on pools of as many workers
/// as the report uses.
fn data_parallel(op: &str, pool: &str, n: usize) -> u64 {
    use rayon::prelude::*;
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let mut v = data(n);
    let f = || {
        flock::Pool::builder()
            .workers(workers)
            .build()
            .expect("pool")
    };
    let r = || {
        rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .build()
            .expect("rayon pool")
    };
    let add = |a: u64, b: u64| a.wrapping_add(b);
    match (op, pool) {
        ("chunks", "flock") => f().par_chunks_mut(&mut v, 4096, bump),
        ("chunks", "rayon") => r().install(|| {
            v.par_chunks_mut(4096)
                .enumerate()
                .for_each(|(i, c)| bump(i, c))
        }),
        ("reduce", "flock") => return f().map_reduce(&v, || 0, mix, add),
        ("reduce", "rayon") => return r().install(|| v.par_iter().map(mix).reduce(|| 0, add)),
        ("sort", "flock") => f().par_sort_unstable(&mut v),
        ("sort", "rayon") => r().install(|| v.par_sort_unstable()),
        _ => panic!("unknown op/pool {op} {pool}"),
    }
    v.iter().copied().fold(0, add)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [op, pool, size] = &args[..] else {
        panic!("usage: callgrind_probe join|spawn|submit flock|flock-latency|rayon|channel SIZE");
    };
    let size: u32 = size.parse().expect("a number");
    if matches!(op.as_str(), "chunks" | "reduce" | "sort") {
        println!("{}", data_parallel(op, pool, size as usize));
        return;
    }
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
        ("batch", "flock") => batch_flock(flock_pool(), size as usize),
        ("chain", "flock") => chain_flock(flock_pool(), size as usize),
        ("chain", "rayon") => chain_rayon(size as usize),
        ("submit", "channel") => submit_channel(size as usize),
        _ => panic!("unknown op/pool {op} {pool}"),
    };
    println!("{result}");
}
