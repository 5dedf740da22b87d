//! Two pools on one Prometheus endpoint: what a `/metrics` handler would return.
//!
//! ```text
//! cargo run --example prometheus
//! ```
//!
//! Each series is named `flock_*` and labelled with its pool (`pool="db"`, `pool="io"`);
//! each family has one `# HELP` and one `# TYPE` line for both pools. `scripts/prom-check.sh`
//! feeds this output to a real parser (the Python `prometheus_client`).
use flock::{Backpressure, Pool};

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let db = Pool::builder()
        .workers(1)
        .track_latency(true)
        .capacity(8)
        .when_full(Backpressure::Reject)
        .build()?;
    let io = Pool::builder()
        .workers(2)
        .lanes(&[("interactive", 8), ("batch", 1)])
        .build()?;
    for i in 0..100u64 {
        let _ = db.submit(move || {
            std::hint::black_box(i * i);
        }); // some are refused: full
        io.submit_to(
            if i % 4 == 0 { "batch" } else { "interactive" },
            move || {
                std::hint::black_box(i + 1);
            },
        )?;
    }
    let _ = io.submit_to("no such lane", || ()); // counted as rejected, reason="unknown_lane"
    db.wait()?;
    io.wait()?;
    print!(
        "{}",
        flock::prometheus_text([("db", &db.stats()), ("io", &io.stats())])
    );
    Ok(())
}
