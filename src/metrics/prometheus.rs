//! [`Stats`] as Prometheus text (exposition format 0.0.4), for one pool or several.
//!
//! Every series is named `flock_*` and carries the pool's name in a `pool` label; each metric
//! family is written once (one `# HELP`, one `# TYPE`, then the samples of every pool), which
//! is what the format requires for two pools on one endpoint. Families whose counters the
//! `stats` feature compiles out are left out without it, rather than exported as zeros.

use super::{LaneStats, LatencyStats, Stats, WorkerState, WorkerStats};
use std::fmt::Write as _;

/// Several pools' snapshots as one Prometheus exposition: each series named `flock_*` with a
/// `pool="<name>"` label, one `# HELP` and `# TYPE` per family. Serve it from a `/metrics`
/// endpoint as it is. Give each pool its own name: two pools under one name would repeat
/// series. [`Stats::to_prometheus`] is the one-pool case.
///
/// Counters end in `_total`; latency (pools built with
/// [`track_latency`](crate::PoolBuilder::track_latency)) is a histogram in seconds with
/// `_bucket`, `_sum` and `_count`. Without the `stats` feature the families of the counters
/// it compiles out (refusals, caller runs, helper threads, lane reserve runs, steals,
/// injector takes, local pushes, parks, wake-ups, lane run time, and with several lanes the
/// per-lane counts) are left out.
///
/// ```
/// use flock::Pool;
/// let db = Pool::builder().workers(1).build().unwrap();
/// let io = Pool::builder().workers(2).lanes(&[("fast", 4), ("slow", 1)]).build().unwrap();
/// db.submit(|| ()).unwrap();
/// io.submit_to("slow", || ()).unwrap();
/// db.wait().unwrap();
/// io.wait().unwrap();
/// let text = flock::prometheus_text([("db", &db.stats()), ("io", &io.stats())]);
/// assert_eq!(text.matches("# TYPE flock_tasks_submitted_total counter").count(), 1);
/// assert!(text.contains("flock_tasks_submitted_total{pool=\"db\"} 1\n"));
/// assert!(text.contains("flock_tasks_submitted_total{pool=\"io\"} 1\n"));
/// assert!(text.contains("flock_workers{pool=\"io\"} 2\n"));
/// ```
pub fn prometheus_text<'a>(pools: impl IntoIterator<Item = (&'a str, &'a Stats)>) -> String {
    let pools: Vec<(String, &Stats)> = pools
        .into_iter()
        .map(|(name, stats)| (escape_label(name), stats))
        .collect();
    let mut out = String::new();
    for family in FAMILIES {
        if family.needs_stats && !cfg!(feature = "stats") {
            continue;
        }
        let mut samples = String::new();
        for (pool, stats) in &pools {
            for s in (family.samples)(stats) {
                let _ = writeln!(
                    samples,
                    "flock_{}{}{{pool=\"{pool}\"{}}} {}",
                    family.name, s.suffix, s.labels, s.value
                );
            }
        }
        // A family no pool has samples for (no latency tracking, a single lane) is left out.
        if !samples.is_empty() {
            let (name, help, kind) = (family.name, family.help, family.kind);
            let _ = writeln!(out, "# HELP flock_{name} {help}");
            let _ = writeln!(out, "# TYPE flock_{name} {kind}");
            out.push_str(&samples);
        }
    }
    out
}

impl Stats {
    /// The snapshot in the Prometheus text exposition format (version 0.0.4), every series
    /// named `flock_*` and labelled `pool="<pool>"`; [`prometheus_text`] renders several
    /// pools as one exposition.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(1).track_latency(true).build().unwrap();
    /// pool.submit(|| ()).unwrap();
    /// pool.wait().unwrap();
    /// let text = pool.stats().to_prometheus("api");
    /// assert!(text.contains("# TYPE flock_tasks_submitted_total counter"));
    /// assert!(text.contains("flock_tasks_submitted_total{pool=\"api\"} 1"));
    /// assert!(text.contains("flock_queue_wait_seconds_bucket{pool=\"api\",le=\"+Inf\"} 1"));
    /// ```
    pub fn to_prometheus(&self, pool: &str) -> String {
        prometheus_text([(pool, self)])
    }
}

/// One line of a family for one pool: `flock_<family><suffix>{pool="..."<labels>} <value>`.
struct Sample {
    /// `_bucket`, `_sum` or `_count` for a histogram; empty otherwise.
    suffix: &'static str,
    /// Labels after `pool`, each with its leading comma.
    labels: String,
    value: String,
}

struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    /// Counted only with the `stats` feature: left out without it.
    needs_stats: bool,
    samples: fn(&Stats) -> Vec<Sample>,
}

fn one(value: impl ToString) -> Vec<Sample> {
    vec![Sample {
        suffix: "",
        labels: String::new(),
        value: value.to_string(),
    }]
}

fn labelled(labels: String, value: impl ToString) -> Sample {
    Sample {
        suffix: "",
        labels,
        value: value.to_string(),
    }
}

/// Per-lane counts: with several lanes they are statistics (left out without `stats`); with
/// one lane they are the pool's own totals and always there.
fn per_lane(s: &Stats, f: fn(&LaneStats) -> u64) -> Vec<Sample> {
    if s.lanes.len() > 1 && !cfg!(feature = "stats") {
        return Vec::new();
    }
    s.lanes.iter().map(|l| lane_sample(l, f(l))).collect()
}

fn lane_sample(l: &LaneStats, value: impl ToString) -> Sample {
    labelled(format!(",lane=\"{}\"", escape_label(&l.name)), value)
}

fn per_worker(s: &Stats, f: fn(&WorkerStats) -> u64) -> Vec<Sample> {
    s.per_worker
        .iter()
        .map(|w| labelled(format!(",worker=\"{}\"", w.index), f(w)))
        .collect()
}

fn worker_states(s: &Stats) -> Vec<Sample> {
    const ALL: [WorkerState; 4] = [
        WorkerState::Running,
        WorkerState::Spinning,
        WorkerState::Parked,
        WorkerState::Stopped,
    ];
    s.per_worker
        .iter()
        .flat_map(|w| {
            ALL.into_iter().map(move |state| {
                let labels = format!(",worker=\"{}\",state=\"{}\"", w.index, state.name());
                labelled(labels, u8::from(w.state == state))
            })
        })
        .collect()
}

fn histogram(l: Option<&LatencyStats>) -> Vec<Sample> {
    let Some(l) = l else { return Vec::new() };
    let bucket = |le: String, n: u64| Sample {
        suffix: "_bucket",
        labels: format!(",le=\"{le}\""),
        value: n.to_string(),
    };
    let mut out: Vec<Sample> = l
        .buckets()
        .iter()
        .map(|(le, n)| bucket(le.as_secs_f64().to_string(), *n))
        .collect();
    out.push(bucket("+Inf".into(), l.count));
    for (suffix, value) in [
        ("_sum", l.sum.as_secs_f64().to_string()),
        ("_count", l.count.to_string()),
    ] {
        out.push(Sample {
            suffix,
            labels: String::new(),
            value,
        });
    }
    out
}

const fn counter(
    name: &'static str,
    help: &'static str,
    samples: fn(&Stats) -> Vec<Sample>,
) -> Family {
    Family {
        name,
        kind: "counter",
        help,
        needs_stats: false,
        samples,
    }
}

const fn gauge(
    name: &'static str,
    help: &'static str,
    samples: fn(&Stats) -> Vec<Sample>,
) -> Family {
    Family {
        kind: "gauge",
        ..counter(name, help, samples)
    }
}

/// A counter the `stats` feature compiles out.
const fn stat(
    name: &'static str,
    help: &'static str,
    samples: fn(&Stats) -> Vec<Sample>,
) -> Family {
    Family {
        needs_stats: true,
        ..counter(name, help, samples)
    }
}

/// Every family, in output order.
static FAMILIES: &[Family] = &[
    counter(
        "tasks_submitted_total",
        "Tasks accepted by the pool.",
        |s| one(s.submitted),
    ),
    counter(
        "tasks_completed_total",
        "Tasks that ran to their end.",
        |s| one(s.completed),
    ),
    counter("tasks_panicked_total", "Tasks that panicked.", |s| {
        one(s.panicked)
    }),
    counter(
        "tasks_dropped_total",
        "Tasks dropped unrun (shutdown_now, cancel).",
        |s| one(s.dropped),
    ),
    stat("tasks_rejected_total", "Tasks refused, by reason.", |s| {
        [
            ("full", s.rejected_full),
            ("timeout", s.rejected_timeout),
            ("shutdown", s.rejected_shutdown),
            ("unknown_lane", s.rejected_unknown_lane),
        ]
        .into_iter()
        .map(|(reason, n)| labelled(format!(",reason=\"{reason}\""), n))
        .collect()
    }),
    stat(
        "tasks_caller_runs_total",
        "Tasks run on the submitting thread.",
        |s| one(s.caller_runs),
    ),
    stat(
        "tasks_spawned_thread_total",
        "Tasks run on a helper thread.",
        |s| one(s.spawned_thread),
    ),
    stat(
        "tasks_reserve_runs_total",
        "Tasks of a heavy lane run by the lane reserve.",
        |s| one(s.reserve_runs),
    ),
    stat(
        "tasks_stolen_total",
        "Tasks stolen from other workers.",
        |s| one(s.stolen),
    ),
    stat(
        "tasks_from_injector_total",
        "Tasks taken from the shared queue.",
        |s| one(s.from_injector),
    ),
    stat(
        "local_pushes_total",
        "Tasks pushed by workers onto their own deques.",
        |s| one(s.local_pushes),
    ),
    stat("parks_total", "Times a worker went to sleep.", |s| {
        one(s.parks)
    }),
    stat("wakeups_total", "Times a sleeping worker woke up.", |s| {
        one(s.wakeups)
    }),
    gauge(
        "tasks_in_flight",
        "Tasks accepted and not yet ended.",
        |s| one(s.in_flight),
    ),
    gauge("tasks_queued", "Tasks waiting in a queue.", |s| {
        one(s.queued)
    }),
    gauge(
        "capacity",
        "Bound on queued tasks from outside the pool.",
        |s| match s.capacity {
            usize::MAX => one("+Inf"),
            cap => one(cap),
        },
    ),
    gauge("workers", "Worker threads.", |s| one(s.workers)),
    gauge("uptime_seconds", "Seconds since the pool was built.", |s| {
        one(s.uptime.as_secs_f64())
    }),
    gauge(
        "max_workers",
        "The most workers the pool may be resized to.",
        |s| one(s.max_workers),
    ),
    gauge("paused", "1 while the pool is paused.", |s| {
        one(u8::from(s.paused))
    }),
    counter(
        "lane_submitted_total",
        "Tasks accepted into each lane.",
        |s| per_lane(s, |l| l.submitted),
    ),
    counter("lane_executed_total", "Tasks of each lane that ran.", |s| {
        per_lane(s, |l| l.executed)
    }),
    gauge(
        "lane_queued",
        "Tasks waiting in each lane's queues (its shared queue and the workers' deques).",
        |s| s.lanes.iter().map(|l| lane_sample(l, l.queued)).collect(),
    ),
    stat(
        "lane_busy_seconds_total",
        "Run time charged to each lane.",
        |s| {
            s.lanes
                .iter()
                .filter_map(|l| Some(lane_sample(l, l.busy?.as_secs_f64())))
                .collect()
        },
    ),
    counter("worker_executed_total", "Tasks each worker ran.", |s| {
        per_worker(s, |w| w.executed)
    }),
    counter(
        "worker_panicked_total",
        "Tasks each worker ran that panicked.",
        |s| per_worker(s, |w| w.panicked),
    ),
    stat("worker_stolen_total", "Tasks each worker stole.", |s| {
        per_worker(s, |w| w.stolen)
    }),
    stat("worker_parks_total", "Times each worker parked.", |s| {
        per_worker(s, |w| w.parks)
    }),
    gauge(
        "worker_state",
        "1 for the state each worker is in.",
        worker_states,
    ),
    Family {
        kind: "histogram",
        ..counter("queue_wait_seconds", "Time from submit to start.", |s| {
            histogram(s.queue_wait.as_ref())
        })
    },
    Family {
        kind: "histogram",
        ..counter("run_time_seconds", "Time from start to end.", |s| {
            histogram(s.run_time.as_ref())
        })
    },
];

/// A Prometheus label value: backslash, double quote and newline escaped.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
