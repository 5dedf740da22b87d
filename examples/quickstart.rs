//! flock in one screen: submit, spawn, join, scope, wait, shutdown.
use flock::{Backpressure, Pool};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn fib(pool: &Pool, n: u64) -> u64 {
    if n < 20 {
        return if n < 2 {
            n
        } else {
            fib(pool, n - 1) + fib(pool, n - 2)
        };
    }
    let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2)); // fork-join
    a + b
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pool = Pool::builder()
        .capacity(10_000)
        .when_full(Backpressure::Block)
        .build()?;

    let total = Arc::new(AtomicU64::new(0)); // fire and forget, then wait for all
    for i in 1..=100_000u64 {
        let total = total.clone();
        pool.submit(move || {
            total.fetch_add(i, Ordering::Relaxed);
        })?;
    }
    pool.wait()?;
    println!("sum 1..=100000 = {}", total.load(Ordering::Relaxed));

    let answer = pool.spawn(|| 6 * 7); // a result through a join handle
    println!("answer = {}", answer.join()?);

    let words = ["work", "stealing", "pool"]; // scoped tasks borrow from the stack
    let mut lengths = [0usize; 3];
    pool.scope(|s| {
        for (w, len) in words.iter().zip(lengths.iter_mut()) {
            s.spawn(move |_| *len = w.len());
        }
    });
    println!("lengths = {lengths:?}; fib(32) = {}", fib(&pool, 32));

    pool.shutdown()?; // runs what is queued, joins every thread
    Ok(())
}
