//! flock as the CPU pool of an async service: a tokio loop takes requests, offloads the CPU
//! work to flock through futures, and stays responsive while it runs.
//!
//! - `spawn_async` waits for room in the pool's (small) queue without blocking a runtime
//!   thread, where `spawn` under `Backpressure::Block` would stall every task of that thread;
//! - awaiting the `JoinHandle` never blocks either, and a panic in the work surfaces as
//!   `JoinError::Panicked`, answered as an error instead of taking the service down;
//! - a request whose deadline passes drops its handle; `cancel_on_drop` makes that remove the
//!   work if it is still queued, so a slow backlog does not run work nobody waits for.
//!
//! A heartbeat task ticks every 5 ms meanwhile and reports how late its ticks were.
//!
//! ```text
//! cargo run --release -p flock-integration --example async_offload
//! ```

use flock::{Backpressure, JoinError, Pool};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One request: how much CPU work it asks for, and how long the client waits.
struct Request {
    id: u64,
    work: u64,
    deadline: Duration,
}

/// What the service answered.
#[derive(Debug)]
enum Reply {
    Done(u64),
    Failed(String),
    TimedOut,
}

/// ~`n` microseconds of CPU work; "bad input" (a multiple of 97) panics, as a real parser might.
fn crunch(id: u64, n: u64) -> u64 {
    assert!(id % 97 != 96, "bad input in request {id}");
    let start = Instant::now();
    let mut x = id | 1;
    while start.elapsed() < Duration::from_micros(n) {
        for _ in 0..1_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        }
    }
    x
}

async fn handle(pool: Arc<Pool>, req: Request, ran: Arc<AtomicUsize>) -> Reply {
    let (id, work) = (req.id, req.work);
    // Waits for room in the queue (never blocks this runtime thread).
    let handle = pool
        .spawn_async(move || {
            ran.fetch_add(1, Ordering::Relaxed);
            crunch(id, work)
        })
        .await
        .cancel_on_drop();
    match tokio::time::timeout(req.deadline, handle).await {
        Ok(Ok(value)) => Reply::Done(value),
        Ok(Err(JoinError::Panicked(payload))) => {
            Reply::Failed(payload.message().unwrap_or("panicked").to_owned())
        }
        Ok(Err(other)) => Reply::Failed(other.to_string()),
        // The timeout dropped the handle: cancelled if it had not started.
        Err(_) => Reply::TimedOut,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The handles report the panics; keep the default hook from printing each one.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.to_string().contains("bad input") {
            default_hook(info);
        }
    }));
    let pool = Arc::new(
        Pool::builder()
            .capacity(16)
            .when_full(Backpressure::Block) // only sync callers block; async ones await room
            .build()?,
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()?;
    let ran = Arc::new(AtomicUsize::new(0));
    let requests = 400u64;
    let (replies, lateness) = rt.block_on(async {
        let heartbeat = tokio::spawn(async {
            let mut worst = Duration::ZERO;
            let mut next = Instant::now();
            for _ in 0..100 {
                next += Duration::from_millis(5);
                tokio::time::sleep_until(next.into()).await;
                worst = worst.max(next.elapsed());
            }
            worst
        });
        let mut tasks = Vec::new();
        for id in 0..requests {
            // Every tenth client is impatient: 1 ms for 2 ms of work.
            let deadline = Duration::from_millis(if id % 10 == 9 { 1 } else { 2_000 });
            let req = Request {
                id,
                work: 1_000 + (id % 3) * 500,
                deadline,
            };
            tasks.push(tokio::spawn(handle(pool.clone(), req, ran.clone())));
            if id % 20 == 19 {
                tokio::time::sleep(Duration::from_millis(1)).await; // requests arrive over time
            }
        }
        let mut replies = Vec::new();
        for t in tasks {
            replies.push(t.await.expect("the handler does not panic"));
        }
        (replies, heartbeat.await.expect("heartbeat"))
    });
    let (done, checksum) = replies.iter().fold((0, 0u64), |(n, sum), r| match r {
        Reply::Done(v) => (n + 1, sum ^ v),
        _ => (n, sum),
    });
    let failed: Vec<_> = replies
        .iter()
        .filter_map(|r| match r {
            Reply::Failed(why) => Some(why.as_str()),
            _ => None,
        })
        .collect();
    let timed_out = replies
        .iter()
        .filter(|r| matches!(r, Reply::TimedOut))
        .count();
    pool.wait()?;
    let ran = ran.load(Ordering::Relaxed);
    println!(
        "{requests} requests: {done} done, {} failed, {timed_out} timed out",
        failed.len()
    );
    println!(
        "checksum of the answers: {checksum:#x}; first failure: {:?}",
        failed.first()
    );
    println!(
        "work run: {ran}; cancelled before starting: {} (timed out while queued)",
        requests as usize - ran
    );
    println!("worst heartbeat lateness: {lateness:?}");
    assert_eq!(done + failed.len() + timed_out, requests as usize);
    Ok(())
}
