//! A pool under a mixed workload, printing its stats once a second: the periodic monitoring
//! people set up in production. Run: `cargo run --release --example monitor` (add a number of
//! seconds to run; default 5). The last snapshot is also printed in Prometheus text format.
use flock::{Backpressure, Pool};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn spin_for(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let pool = Arc::new(
        Pool::builder()
            .capacity(2_000)
            .when_full(Backpressure::Reject)
            .track_latency(true)
            .panic_handler(|_| {}) // counted in the stats; the panic hook below keeps stderr quiet
            .build()
            .expect("pool"),
    );
    std::panic::set_hook(Box::new(|_| {}));
    let stop = Arc::new(AtomicBool::new(false));
    let producers: Vec<_> = (0..3)
        .map(|p| {
            let (pool, stop) = (pool.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let inner = pool.clone();
                    let _ = pool.submit(move || match i % 100 {
                        0 => panic!("one in a hundred fails"),
                        1..=9 => {
                            let (a, b) = inner.join(
                                || spin_for(Duration::from_micros(20)),
                                || spin_for(Duration::from_micros(20)),
                            );
                            std::hint::black_box((a, b));
                        }
                        _ => spin_for(Duration::from_micros(5 + p * 5)),
                    });
                    if i % 64 == 0 {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
            })
        })
        .collect();
    for second in 1..=secs {
        std::thread::sleep(Duration::from_secs(1));
        println!("--- t = {second}s ---\n{}", pool.stats());
    }
    stop.store(true, Ordering::Relaxed);
    for p in producers {
        p.join().unwrap();
    }
    pool.wait().unwrap();
    println!(
        "--- final, Prometheus text ---\n{}",
        pool.stats().to_prometheus("flock")
    );
}
