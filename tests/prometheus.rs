//! Prometheus text for several pools: the pool's name in a `pool` label, one HELP/TYPE per
//! family, no counters stuck at 0 without the `stats` feature, refusals for an unknown lane
//! counted. (`scripts/prom-check.sh` parses the same output with a real parser.)

mod common;

use common::watchdog;
use flock::{prometheus_text, Pool};
use std::collections::{HashMap, HashSet};

fn two_pools() -> (Pool, Pool) {
    let db = Pool::builder()
        .workers(1)
        .track_latency(true)
        .build()
        .unwrap();
    let io = Pool::builder()
        .workers(2)
        .lanes(&[("fast", 4), ("slow", 1)])
        .build()
        .unwrap();
    for _ in 0..10 {
        db.submit(|| ()).unwrap();
        io.submit_to("fast", || ()).unwrap();
    }
    db.wait().unwrap();
    io.wait().unwrap();
    (db, io)
}

/// Splits a sample line into (family name without histogram suffix, pool label, full series).
fn series(line: &str) -> (&str, &str, &str) {
    let (series, _value) = line.rsplit_once(' ').unwrap();
    let (name, labels) = series.split_once('{').unwrap_or_else(|| panic!("{line}"));
    let pool = labels
        .strip_prefix("pool=\"")
        .and_then(|l| l.split('"').next())
        .unwrap_or_else(|| panic!("no pool label first: {line}"));
    (name, pool, series)
}

#[test]
fn two_pools_make_one_exposition_with_one_help_and_type_per_family() {
    watchdog(60, "two pools", || {
        let (db, io) = two_pools();
        let text = prometheus_text([("db", &db.stats()), ("io", &io.stats())]);
        let mut helps = HashMap::new();
        let mut types = HashMap::new();
        let mut seen = HashSet::new();
        let mut pools_of: HashMap<String, HashSet<String>> = HashMap::new();
        let mut current = String::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let name = rest.split(' ').next().unwrap().to_owned();
                *helps.entry(name.clone()).or_insert(0) += 1;
                current = name;
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap();
                assert_eq!(name, current, "TYPE right after its HELP");
                *types.entry(name.to_owned()).or_insert(0) += 1;
            } else {
                let (name, pool, full) = series(line);
                assert!(name.starts_with(&current), "{name} inside family {current}");
                assert!(seen.insert(full.to_owned()), "series twice: {full}");
                pools_of
                    .entry(current.clone())
                    .or_default()
                    .insert(pool.to_owned());
            }
        }
        assert!(helps.values().all(|&n| n == 1), "{helps:?}");
        assert!(types.values().all(|&n| n == 1), "{types:?}");
        assert_eq!(helps.len(), types.len());
        // Families every pool has carry both pools' samples, under one header.
        for family in [
            "flock_tasks_submitted_total",
            "flock_workers",
            "flock_worker_state",
            "flock_lane_queued",
        ] {
            let pools = &pools_of[family];
            assert_eq!(pools.len(), 2, "{family}: {pools:?}");
        }
        // Only db tracks latency: its histograms have db's samples only.
        let hist = &pools_of["flock_queue_wait_seconds"];
        assert_eq!(hist.iter().collect::<Vec<_>>(), ["db"]);
        assert!(text.contains("flock_tasks_submitted_total{pool=\"db\"} 10\n"));
        assert!(text.contains("flock_tasks_submitted_total{pool=\"io\"} 10\n"));
        assert!(text.contains("flock_lane_queued{pool=\"io\",lane=\"slow\"} 0\n"));
        // One pool alone is the same rendering.
        let one = db.stats().to_prometheus("db");
        assert!(one.contains("flock_workers{pool=\"db\"} 1\n"));
    });
}

#[test]
fn a_pool_name_is_escaped_as_a_label_value() {
    let pool = Pool::builder().workers(1).build().unwrap();
    let text = pool.stats().to_prometheus("a \"b\" \\ c\nd");
    assert!(
        text.contains("flock_workers{pool=\"a \\\"b\\\" \\\\ c\\nd\"} 1\n"),
        "{text}"
    );
}

#[test]
#[cfg(feature = "stats")]
fn refusals_for_an_unknown_lane_are_counted() {
    watchdog(60, "unknown lane", || {
        let pool = Pool::builder().lanes(&[("a", 1)]).build().unwrap();
        let err = pool.submit_to("nope", || ()).unwrap_err();
        assert_eq!(err.reason(), flock::RejectReason::UnknownLane);
        let batch = pool.submit_batch_to("nope", (0..3).map(|_| || ()));
        assert_eq!(batch.unwrap_err().into_rejected().len(), 3);
        let handle = pool.spawn_to(5usize, || 1);
        assert!(handle.join().is_err());
        pool.submit_to("a", || ()).unwrap();
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!((s.rejected_unknown_lane, s.rejected), (5, 5), "{s}");
        assert_eq!(s.submitted, 1);
        let text = s.to_prometheus("p");
        assert!(text.contains("flock_tasks_rejected_total{pool=\"p\",reason=\"unknown_lane\"} 5\n"));
        assert!(s.to_string().contains("unknown lane 5"), "{s}");
    });
}

#[test]
fn families_the_stats_feature_compiles_out_are_left_out_without_it() {
    let (db, io) = two_pools();
    let text = prometheus_text([("db", &db.stats()), ("io", &io.stats())]);
    for family in [
        "flock_tasks_stolen_total",
        "flock_parks_total",
        "flock_wakeups_total",
        "flock_tasks_rejected_total",
        "flock_worker_parks_total",
        "flock_lane_busy_seconds_total",
    ] {
        let header = format!("# TYPE {family} counter");
        assert_eq!(
            text.contains(&header),
            cfg!(feature = "stats"),
            "{family} with stats = {}",
            cfg!(feature = "stats")
        );
    }
    // Always there: the counts wait() relies on, gauges, and a single lane's totals.
    for always in [
        "flock_tasks_submitted_total{pool=\"db\"} 10",
        "flock_tasks_completed_total{pool=\"io\"} 10",
        "flock_lane_executed_total{pool=\"db\",lane=\"default\"} 10",
    ] {
        assert!(text.contains(always), "{always} in\n{text}");
    }
}
