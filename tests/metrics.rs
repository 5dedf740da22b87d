//! Every counter against a workload whose true values are known; monotonic snapshots under
//! stress; Prometheus output parsed back.
#![cfg(feature = "stats")]

mod common;

use common::{stall_all, watchdog};
use flock::{Backpressure, Pool, Stats, WorkerState};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn balanced(s: &Stats) {
    assert_eq!(s.in_flight, 0, "{s}");
    assert_eq!(
        s.submitted,
        s.completed + s.panicked + s.dropped + s.in_flight,
        "{s}"
    );
}

#[test]
fn counters_match_a_known_workload() {
    watchdog(60, "known workload", || {
        let pool = Pool::builder()
            .workers(2)
            .capacity(4)
            .when_full(Backpressure::Reject)
            .build()
            .unwrap();
        // 2 stall tasks + 4 queued fill the pool; 3 more are refused as full.
        let gate = stall_all(&pool);
        let handles: Vec<_> = (0..4).map(|_| pool.spawn(|| ())).collect();
        for _ in 0..3 {
            assert!(pool.submit(|| ()).is_err());
        }
        assert!(handles[3].cancel()); // one queued task cancelled: dropped
        let s = pool.stats();
        assert_eq!((s.rejected_full, s.rejected, s.dropped), (3, 3, 1));
        assert_eq!(
            s.queued, 3,
            "the cancelled task's shell, queued until a worker takes it, is no task"
        );
        assert_eq!(s.in_flight, 2 + 3, "two running, three queued");
        assert!(s.per_worker.iter().all(|w| w.state == WorkerState::Running));
        gate.open();
        pool.wait().unwrap();
        for _ in 0..10 {
            pool.submit(|| panic!("counted")).unwrap(); // one at a time: capacity is 4
            pool.wait().unwrap();
        }
        let s = pool.stats();
        assert_eq!(s.submitted, 2 + 4 + 10);
        assert_eq!(s.completed, 2 + 3);
        assert_eq!(s.panicked, 10);
        assert_eq!(s.dropped, 1);
        assert_eq!(s.queued, 0);
        assert_eq!(s.per_worker.iter().map(|w| w.executed).sum::<u64>(), 15);
        assert_eq!(s.per_worker.iter().map(|w| w.panicked).sum::<u64>(), 10);
        balanced(&s);
        pool.shutdown().unwrap();
        let s = pool.stats();
        assert!(s.per_worker.iter().all(|w| w.state == WorkerState::Stopped));
        assert!(pool.submit(|| ()).is_err());
        assert_eq!(pool.stats().rejected_shutdown, 1);
    });
}

#[test]
fn caller_runs_spawn_thread_and_shutdown_now_are_counted() {
    watchdog(60, "policies counted", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .capacity(2)
                .when_full(Backpressure::CallerRuns)
                .build()
                .unwrap(),
        );
        let gate = stall_all(&pool);
        for _ in 0..5 {
            pool.submit(|| ()).unwrap(); // 2 queue, 3 run here
        }
        let s = pool.stats();
        assert_eq!((s.caller_runs, s.completed), (3, 3));
        let opener = common::open_when_shut_down(&pool, &gate);
        assert_eq!(pool.shutdown_now().unwrap(), 2);
        opener.join().unwrap();
        let s = pool.stats();
        assert_eq!((s.submitted, s.completed, s.dropped), (1 + 5, 1 + 3, 2));
        balanced(&s);

        let pool = Pool::builder()
            .workers(1)
            .capacity(1)
            .when_full(Backpressure::SpawnThread)
            .max_spawned_threads(4)
            .build()
            .unwrap();
        let gate = stall_all(&pool);
        for _ in 0..4 {
            pool.submit(|| ()).unwrap(); // 1 queues, 3 go to helper threads
        }
        gate.open();
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!((s.spawned_thread, s.submitted, s.completed), (3, 5, 5));
        balanced(&s);
    });
}

#[test]
fn fork_join_shows_steals_and_local_pushes() {
    watchdog(120, "steals", || {
        fn fib(pool: &Pool, n: u32) -> u64 {
            if n < 2 {
                return n as u64;
            }
            let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2));
            a + b
        }
        let pool = Pool::builder().workers(2).build().unwrap();
        let mut tries = 0;
        while pool.stats().stolen == 0 {
            assert_eq!(fib(&pool, 24), 46368);
            tries += 1;
            assert!(tries < 50, "no steal in 50 fork-join runs on 2 workers");
        }
        let s = pool.stats();
        assert!(s.local_pushes > 0);
        assert_eq!(s.per_worker.iter().map(|w| w.stolen).sum::<u64>(), s.stolen);
        assert_eq!(s.submitted, tries, "each outside join is one task");
        pool.wait().unwrap();
        balanced(&pool.stats());
    });
}

#[test]
fn injector_counts_and_parks_are_seen() {
    watchdog(60, "injector", || {
        let pool = Pool::builder().workers(2).spin_limit(0).build().unwrap();
        for _ in 0..1000 {
            pool.submit(|| ()).unwrap();
        }
        pool.wait().unwrap();
        let s = until_all_parked(&pool);
        // Every outside task leaves the injector exactly once (alone or in a batch moved
        // into a worker's deque, from which it may be stolen again).
        assert_eq!(s.from_injector, 1000);
        assert!(s.parks >= 1, "idle workers park");
        assert!(
            s.per_worker.iter().all(|w| w.state == WorkerState::Parked),
            "{s}"
        );
    });
}

#[test]
fn snapshots_never_go_backwards_under_stress() {
    watchdog(120, "monotonic", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(2)
                .capacity(64)
                .track_latency(true)
                .build()
                .unwrap(),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (pool, stop) = (pool.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut prev = pool.stats();
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let s = pool.stats();
                    let pairs = [
                        (prev.submitted, s.submitted),
                        (prev.completed, s.completed),
                        (prev.panicked, s.panicked),
                        (prev.rejected, s.rejected),
                        (prev.stolen, s.stolen),
                        (prev.from_injector, s.from_injector),
                        (prev.parks, s.parks),
                        (
                            prev.run_time.as_ref().unwrap().count,
                            s.run_time.as_ref().unwrap().count,
                        ),
                    ];
                    for (i, (a, b)) in pairs.into_iter().enumerate() {
                        assert!(b >= a, "counter {i} went backwards: {a} -> {b}");
                    }
                    assert!(
                        s.in_flight <= s.submitted
                            && s.completed + s.panicked + s.dropped <= s.submitted,
                        "in_flight underflowed: {s}"
                    );
                    prev = s;
                    reads += 1;
                }
                reads
            })
        };
        std::thread::scope(|sc| {
            for t in 0..4 {
                let pool = pool.clone();
                sc.spawn(move || {
                    for i in 0..20_000u32 {
                        let p = pool.clone();
                        let _ = pool.submit(move || {
                            if i % 1000 == 999 && t == 0 {
                                panic!("sometimes");
                            }
                            if i % 7 == 0 {
                                let _ = p.submit(|| ());
                            }
                        });
                    }
                });
            }
        });
        pool.wait().unwrap();
        stop.store(true, Ordering::Relaxed);
        let reads = reader.join().unwrap();
        println!("{reads} snapshots read during the run");
        assert!(reads > 10);
        balanced(&pool.stats());
    });
}

#[test]
fn latency_histograms_see_what_tasks_did() {
    watchdog(60, "latency", || {
        let pool = Pool::builder()
            .workers(1)
            .track_latency(true)
            .build()
            .unwrap();
        for _ in 0..20 {
            pool.submit(|| std::thread::sleep(Duration::from_millis(2)))
                .unwrap();
        }
        pool.wait().unwrap();
        let s = pool.stats();
        let run = s.run_time.clone().unwrap();
        let wait = s.queue_wait.clone().unwrap();
        assert_eq!((run.count, wait.count), (20, 20));
        assert!(
            run.p50 >= Duration::from_millis(2) && run.min_ok(),
            "{run:?}"
        );
        assert!(run.max >= run.p99 && run.p99 >= run.p90 && run.p90 >= run.p50);
        // One worker ran them in turn: the last one waited for the nineteen before it.
        assert!(wait.max >= Duration::from_millis(19 * 2), "{wait:?}");
        assert!(run.mean >= Duration::from_millis(2));
        let text = format!("{s}");
        assert!(
            text.contains("queue wait") && text.contains("run time"),
            "{text}"
        );
        assert!(Pool::new().stats().run_time.is_none(), "off by default");
    });
}

trait MinOk {
    fn min_ok(&self) -> bool;
}
impl MinOk for flock::LatencyStats {
    fn min_ok(&self) -> bool {
        self.sum >= self.mean * self.count as u32 / 2
    }
}

#[test]
fn prometheus_text_parses_back() {
    let pool = Pool::builder()
        .workers(2)
        .track_latency(true)
        .build()
        .unwrap();
    for i in 0..500u64 {
        pool.submit(move || {
            std::hint::black_box((0..i).sum::<u64>());
        })
        .unwrap();
    }
    pool.wait().unwrap();
    let text = pool.stats().to_prometheus("svc-1.pool");
    let mut types: HashMap<String, String> = HashMap::new();
    let mut values: Vec<(String, String, f64)> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            types.insert(name.to_owned(), kind.to_owned());
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => {
                assert!(l.ends_with('}'), "labels close: {line}");
                (n, l.trim_end_matches('}').to_owned())
            }
            None => (series, String::new()),
        };
        // The pool's name is a label, any characters allowed; the names are flock's own.
        let labels = labels
            .strip_prefix("pool=\"svc-1.pool\"")
            .unwrap_or_else(|| panic!("pool label first: {line}"))
            .trim_start_matches(',')
            .to_owned();
        assert!(name.starts_with("flock_"), "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "{name}"
        );
        let v: f64 = if value == "+Inf" {
            f64::INFINITY
        } else {
            value.parse().unwrap_or_else(|_| panic!("{line}"))
        };
        values.push((name.to_owned(), labels, v));
    }
    for (name, _, _) in &values {
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| types.get(*f).is_some_and(|t| t == "histogram"))
            })
            .unwrap_or(name);
        let kind = types
            .get(family)
            .unwrap_or_else(|| panic!("no TYPE for {name}"));
        if kind == "counter" {
            assert!(family.ends_with("_total"), "{family}");
        }
    }
    let get = |n: &str| {
        values
            .iter()
            .find(|(name, l, _)| name == n && l.is_empty())
            .unwrap()
            .2
    };
    assert_eq!(get("flock_tasks_completed_total"), 500.0);
    for hist in ["flock_queue_wait_seconds", "flock_run_time_seconds"] {
        let buckets: Vec<(f64, f64)> = values
            .iter()
            .filter(|(n, _, _)| *n == format!("{hist}_bucket"))
            .map(|(_, l, v)| {
                let le = l.strip_prefix("le=\"").unwrap().trim_end_matches('"');
                (
                    if le == "+Inf" {
                        f64::INFINITY
                    } else {
                        le.parse().unwrap()
                    },
                    *v,
                )
            })
            .collect();
        assert!(buckets.len() > 10);
        assert!(
            buckets
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "cumulative, ordered"
        );
        assert_eq!(buckets.last().unwrap(), &(f64::INFINITY, 500.0));
        assert_eq!(get(&format!("{hist}_count")), 500.0);
        assert!(get(&format!("{hist}_sum")) > 0.0);
    }
}

/// The search and sleep counters of issue 41's event counts (`drain_probe join-events`)
/// against what the protocol guarantees: a search that finds nothing has looked at every
/// other worker, every park was announced (one write of the sleep word each), and only a
/// local push can find a sleeper on the local path.
#[test]
fn search_and_sleep_counters_add_up_after_fork_join() {
    watchdog(120, "search counters", || {
        fn fib(pool: &Pool, n: u32) -> u64 {
            if n < 2 {
                return n as u64;
            }
            let (a, b) = pool.join(|| fib(pool, n - 1), || fib(pool, n - 2));
            a + b
        }
        let workers = 4;
        let pool = Pool::builder().workers(workers).build().unwrap();
        for _ in 0..5 {
            assert_eq!(fib(&pool, 20), 6765);
        }
        pool.wait().unwrap();
        let s = until_all_parked(&pool);
        assert!(s.parks >= workers as u64, "every worker parked: {s:?}");
        assert!(s.park_attempts >= s.parks, "{s:?}");
        assert!(s.sleep_word_writes >= s.park_attempts, "{s:?}");
        assert!(
            s.victims_scanned >= s.failed_steals * (workers as u64 - 1),
            "a failed search looks at every other worker: {s:?}"
        );
        assert!(s.local_push_wake_checks <= s.local_pushes, "{s:?}");
        assert!(
            s.searches >= s.failed_steals,
            "outside a pause, a failed steal ends a search: {s:?}"
        );
    });
}

/// Polls until every worker is parked (a state, not a time: the poll has a watchdog).
///
/// A worker shows `Parked` from the start of its way to sleep: it announces itself, issues
/// the membarrier and re-checks the queues before it blocks, and counts a park only then. A
/// task submitted in that window is found by the re-check, with no wake-up counted (the
/// waker's token, if any, is consumed there), which is right but is not what the tests that
/// count wake-ups measure. So the state must hold with the park count unchanged across a
/// pause: each worker is then blocked, not on its way.
fn until_all_parked(pool: &Pool) -> Stats {
    let all_parked = |s: &Stats| s.per_worker.iter().all(|w| w.state == WorkerState::Parked);
    loop {
        let s = pool.stats();
        if all_parked(&s) {
            std::thread::sleep(Duration::from_millis(10));
            let again = pool.stats();
            if all_parked(&again) && again.parks == s.parks && again.wakeups == s.wakeups {
                return again;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn an_idle_pool_makes_no_wakeups() {
    watchdog(60, "idle", || {
        let pool = Pool::builder().workers(4).build().unwrap();
        for _ in 0..1000 {
            pool.submit(|| ()).unwrap();
        }
        pool.wait().unwrap();
        let before = until_all_parked(&pool);
        std::thread::sleep(Duration::from_millis(300));
        let after = pool.stats();
        assert_eq!(
            after.wakeups, before.wakeups,
            "a parked pool woke up with nothing to do"
        );
        assert_eq!(after.parks, before.parks);
        assert!(after
            .per_worker
            .iter()
            .all(|w| w.state == WorkerState::Parked));
    });
}

#[test]
fn one_submit_to_a_parked_pool_wakes_exactly_one_worker() {
    watchdog(60, "no herd", || {
        let pool = Pool::builder().workers(4).build().unwrap();
        for round in 0..20 {
            let before = until_all_parked(&pool);
            pool.submit(|| ()).unwrap();
            pool.wait().unwrap();
            let after = until_all_parked(&pool);
            assert_eq!(
                after.wakeups - before.wakeups,
                1,
                "round {round}: one task, one wake-up"
            );
        }
    });
}

/// A task that follows another on a worker starts its clock where the other ended (one
/// clock reading per task), but never earlier than it was queued, and never across idle
/// time: a task submitted to an idle worker does not count the idle time as its run.
#[test]
fn back_to_back_tasks_share_a_clock_reading_but_idle_time_is_nobodys() {
    watchdog(60, "latency across idle time", || {
        let pool = Pool::builder()
            .workers(1)
            .track_latency(true)
            .build()
            .unwrap();
        // Queued together: the second waits for the first, then runs in no time.
        pool.submit(|| std::thread::sleep(Duration::from_millis(200)))
            .unwrap();
        pool.submit(|| {}).unwrap();
        pool.wait().unwrap();
        // Idle, then one more quick task: the idle 300 ms are neither its run nor its wait.
        std::thread::sleep(Duration::from_millis(300));
        pool.submit(|| {}).unwrap();
        pool.wait().unwrap();
        let s = pool.stats();
        let (run, wait) = (s.run_time.unwrap(), s.queue_wait.unwrap());
        assert_eq!((run.count, wait.count), (3, 3));
        let at_least = |h: &flock::LatencyStats, d: Duration| -> u64 {
            let below: u64 = h
                .buckets()
                .iter()
                .filter(|(le, _)| *le < d)
                .map(|(_, n)| *n)
                .max()
                .unwrap_or(0);
            h.count - below
        };
        // Only the sleeping task ran for 100 ms or more (buckets are cumulative). The bounds
        // are far from the quick tasks' run: a worker preempted on a loaded machine once
        // made an empty task last 10 ms, when these bounds were ten times smaller.
        assert_eq!(at_least(&run, Duration::from_millis(100)), 1, "{run:?}");
        // Only the second waited that long (for the first).
        assert_eq!(at_least(&wait, Duration::from_millis(100)), 1, "{wait:?}");
        assert!(wait.max >= Duration::from_millis(150), "{wait:?}");
    });
}
