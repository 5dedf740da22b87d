//! Priority lanes: each worker shares its time between the lanes with work in proportion to
//! their weights (start-time fair queueing over measured run time); tasks inherit their
//! parent's lane; FIFO within a lane; unknown lanes and bad lane lists are refused; per-lane
//! statistics add up; the lane reserve runs a heavy lane's task at once when every worker runs
//! a lighter lane's, and only then.

// `Pool::wait_timeout` (the bool form) is deprecated, and still tested here.
#![allow(deprecated)]

mod common;

use common::{all_parked, spin_for, stall_all, stall_each_in, watchdog, Gate, Live};
use flock::{BuildError, JoinError, Pool, RejectReason, MAX_LANES};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

const LANES: &[(&str, u32)] = &[("interactive", 8), ("batch", 1)];
const INTERACTIVE: usize = 0;
const BATCH: usize = 1;

/// The tests of this file run one at a time: those that measure shares of run time must not
/// have the others' threads competing for the two cores, and the others are short.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A pool with the lanes interactive (weight 8) and batch (weight 1), unbounded, measuring
/// run times (the longest one tells a test whether its tasks really cost the same).
fn two_lane_pool(workers: usize) -> Pool {
    Pool::builder()
        .workers(workers)
        .lanes(LANES)
        .capacity(usize::MAX)
        .track_latency(true)
        .build()
        .unwrap()
}

/// How the first `n` tasks to start split between the two lanes, both saturated from the
/// start.
struct Split {
    /// Tasks of each lane among the first `n` to start.
    counts: [usize; 2],
    /// The longest run of any task, as the pool measured (and charged) it.
    longest: Duration,
}

impl Split {
    fn ratio(&self) -> f64 {
        self.counts[INTERACTIVE] as f64 / self.counts[BATCH].max(1) as f64
    }
}

/// Queues `per_lane` tasks in each lane while the pool is paused, so both lanes are saturated
/// from the first task on, then lets them run: each of the first `n` to start costs `cost`,
/// the rest return at once (well before either lane could run dry). Paused rather than held
/// by a gate task: a gate task's run time is charged to its lane like any other, and the
/// other lane would then run alone until it caught up.
///
/// The tasks sleep rather than spin. The pool charges lanes by wall-clock run time, and a
/// task that spins on a loaded 2-core machine is preempted by other processes and charged for
/// that too. Measured there, 50 µs spinning tasks ran up to 13 ms, and the first 900 of them
/// split anywhere between 2:1 and 11:1; 0.5 ms sleeping tasks split between 7.7:1 and 8:1. A
/// sleeping task is off the CPU, so preemption rarely stretches it.
fn saturated_split(pool: &Pool, per_lane: usize, n: usize, cost: Duration) -> Split {
    assert!(n < per_lane);
    let seq = Arc::new(AtomicUsize::new(0));
    let counts = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    // Parked first: a worker still spinning could start a task while the pool is paused
    // (see pause.rs, `a_spinning_worker_does_not_start_tasks_while_paused`).
    all_parked(pool);
    pool.pause();
    for lane in [INTERACTIVE, BATCH] {
        let tasks = (0..per_lane).map(|_| {
            let (seq, counts) = (seq.clone(), counts.clone());
            move || {
                if seq.fetch_add(1, SeqCst) < n {
                    std::thread::sleep(cost);
                    counts[lane].fetch_add(1, SeqCst);
                }
            }
        });
        assert_eq!(pool.submit_batch_to(lane, tasks).unwrap(), per_lane);
    }
    pool.resume();
    pool.wait().unwrap();
    let counts = [counts[0].load(SeqCst), counts[1].load(SeqCst)];
    assert_eq!(counts[0] + counts[1], n);
    let longest = pool.stats().run_time.expect("track_latency is on").max;
    Split { counts, longest }
}

/// The weighted split of the first 900 tasks, 8:1 within 10%. Counts show the share of run
/// time only if every task cost the same: an attempt out of bounds is retried only when the
/// pool measured a task stretched to over twice its cost (the machine, not the scheduler);
/// one out of bounds with every task at its cost fails at once.
fn weighted_split(workers: usize) {
    let _serial = serial();
    watchdog(120, "weighted split", move || {
        let cost = Duration::from_millis(1);
        let mut attempts = Vec::new();
        for attempt in 1..=5 {
            let pool = two_lane_pool(workers);
            let split = saturated_split(&pool, 1000, 900, cost);
            let ratio = split.ratio();
            let busy: Vec<_> = pool.stats().lanes.iter().map(|l| l.busy).collect();
            println!(
                "weighted split, {workers} worker(s), attempt {attempt}: interactive {} : batch {} \
                 = {ratio:.2} (want 8 ± 10%); longest task {:?}; charged run time {busy:?}",
                split.counts[INTERACTIVE], split.counts[BATCH], split.longest
            );
            if (7.2..=8.8).contains(&ratio) {
                return;
            }
            assert!(
                split.longest > 2 * cost,
                "interactive:batch = {:?} = {ratio:.2}, not 8:1 within 10%, although no task ran \
                 longer than {:?} (cost {cost:?}): the split is wrong",
                split.counts,
                split.longest
            );
            attempts.push((split.counts, split.longest));
        }
        panic!("5 attempts out of bounds, each with a task stretched over twice its cost: {attempts:?}");
    });
}

#[test]
fn one_worker_splits_its_time_eight_to_one() {
    weighted_split(1);
}

#[test]
fn two_workers_split_their_time_eight_to_one() {
    weighted_split(2);
}

/// One link of a chain of tasks: does its work, then submits the next link from inside the
/// task (into the same lane, onto the worker's own deque), until `seq` reaches `STOP_AT`.
fn chain(pool: Arc<Pool>, lane: usize, seq: Arc<AtomicUsize>, counts: Arc<[AtomicUsize; 2]>) {
    const STOP_AT: usize = 900;
    if seq.fetch_add(1, SeqCst) >= STOP_AT {
        return;
    }
    std::thread::sleep(Duration::from_micros(500));
    counts[lane].fetch_add(1, SeqCst);
    let p = pool.clone();
    pool.submit(move || chain(p, lane, seq, counts)).unwrap();
}

#[test]
fn a_saturated_low_weight_lane_is_not_starved() {
    let _serial = serial();
    watchdog(120, "no starvation", || {
        let pool = Arc::new(two_lane_pool(2));
        let seq = Arc::new(AtomicUsize::new(0));
        let counts = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        all_parked(&pool);
        pool.pause();
        // 16 self-renewing chains per lane: both lanes stay saturated, on both workers' deques.
        for lane in [INTERACTIVE, BATCH] {
            for _ in 0..16 {
                let (p, seq, counts) = (pool.clone(), seq.clone(), counts.clone());
                pool.submit_to(lane, move || chain(p, lane, seq, counts))
                    .unwrap();
            }
        }
        pool.resume();
        pool.wait().unwrap();
        let (hi, lo) = (counts[INTERACTIVE].load(SeqCst), counts[BATCH].load(SeqCst));
        let share = lo as f64 / (hi + lo) as f64;
        println!(
            "no starvation: interactive {hi} : batch {lo}, batch share {share:.3} (1/9 = 0.111)"
        );
        assert_eq!(hi + lo, 900);
        assert!(lo > 0, "the weight-1 lane was starved");
        assert!(
            (1.0 / 18.0..=2.0 / 9.0).contains(&share),
            "batch ran {lo} of {}: not roughly 1/9",
            hi + lo
        );
    });
}

#[test]
fn an_idle_lane_saves_no_credit() {
    let _serial = serial();
    watchdog(120, "idle lane credit", || {
        let cost = Duration::from_millis(2);
        let mut attempts = Vec::new();
        for attempt in 1..=5 {
            let pool = two_lane_pool(1);
            // Only batch runs, 100 ms of it or more. Were the idle interactive lane to bank
            // that, it would then run alone for 8 × as long: 400 of the tasks below or more.
            // (Sleeping, as `saturated_split` explains: the longest run decides a retry.)
            let alone = (0..2000).map(|_| || std::thread::sleep(Duration::from_micros(50)));
            assert_eq!(pool.submit_batch_to("batch", alone).unwrap(), 2000);
            pool.wait().unwrap();
            let split = saturated_split(&pool, 200, 90, cost);
            println!(
                "idle lane, attempt {attempt}: first 90 after both lanes filled: interactive {} : batch {} \
                 (longest task {:?})",
                split.counts[INTERACTIVE], split.counts[BATCH], split.longest
            );
            if (5..=30).contains(&split.counts[BATCH]) {
                return;
            }
            assert!(
                split.longest > 2 * cost,
                "first 90 tasks split {:?}; want about 80:10 (batch between 5 and 30) and no task \
                 ran longer than {:?}: the lane idle before was credited (or debited) for it",
                split.counts,
                split.longest
            );
            attempts.push((split.counts, split.longest));
        }
        panic!("5 attempts out of bounds, each with a task stretched over twice its cost: {attempts:?}");
    });
}

#[test]
fn a_lane_that_gets_work_is_served_at_the_next_task_boundary() {
    let _serial = serial();
    watchdog(60, "next task boundary", || {
        for (fill, arrive) in [(BATCH, INTERACTIVE), (INTERACTIVE, BATCH)] {
            // Without the lane reserve, which would run the interactive task at once (tested
            // below): this is about the worker's own choice at its task boundary.
            let pool = Pool::builder()
                .workers(1)
                .lanes(LANES)
                .lane_reserve(false)
                .build()
                .unwrap();
            let seq = Arc::new(AtomicUsize::new(0));
            // The worker is held in the `fill` lane while 1000 more of its tasks queue.
            let gate = Gate::new();
            let (started_tx, started) = mpsc::channel();
            let g = gate.clone();
            pool.submit_to(fill, move || {
                started_tx.send(()).unwrap();
                g.wait();
            })
            .unwrap();
            started.recv().unwrap();
            let hold = Gate::new();
            let (at_100_tx, at_100) = mpsc::channel();
            for j in 0..1000 {
                let (seq, hold, at_100_tx) = (seq.clone(), hold.clone(), at_100_tx.clone());
                pool.submit_to(fill, move || {
                    seq.fetch_add(1, SeqCst);
                    spin_for(Duration::from_micros(20));
                    if j == 100 {
                        at_100_tx.send(()).unwrap();
                        hold.wait();
                    }
                })
                .unwrap();
            }
            gate.open();
            // Task 100 of the fill lane is running: the moment to submit in the other lane.
            at_100.recv().unwrap();
            let ran_at = Arc::new(AtomicUsize::new(usize::MAX));
            let (s, r) = (seq.clone(), ran_at.clone());
            pool.submit_to(arrive, move || r.store(s.fetch_add(1, SeqCst), SeqCst))
                .unwrap();
            // Nothing else starts while task 100 holds the only worker.
            let submitted_at = seq.load(SeqCst);
            hold.open();
            pool.wait().unwrap();
            let ran_at = ran_at.load(SeqCst);
            assert!(ran_at >= submitted_at && ran_at != usize::MAX);
            assert_eq!(
                ran_at - submitted_at,
                0,
                "lane {fill} tasks started after the lane {arrive} task was submitted and before it ran"
            );
        }
    });
}

#[test]
fn tasks_submitted_by_a_task_inherit_its_lane() {
    let _serial = serial();
    watchdog(60, "lane inheritance", || {
        let pool = Arc::new(Pool::builder().workers(2).lanes(LANES).build().unwrap());
        let on_worker = Arc::new(AtomicUsize::new(0));
        let off_worker = Arc::new(AtomicUsize::new(0));
        let note = {
            let (on, off) = (on_worker.clone(), off_worker.clone());
            move || {
                let counter = if flock::current_worker_index().is_some() {
                    &on
                } else {
                    &off
                };
                counter.fetch_add(1, SeqCst);
            }
        };
        let p = pool.clone();
        let (done_tx, done) = mpsc::channel();
        pool.submit_to("batch", move || {
            // 3 submits, 2 spawns, 4 scoped spawns, and a join whose halves submit one each:
            // 11 tasks that inherit the batch lane, plus one sent to interactive explicitly.
            for _ in 0..3 {
                p.submit(note.clone()).unwrap();
            }
            for _ in 0..2 {
                drop(p.spawn(note.clone()));
            }
            p.scope(|s| {
                for _ in 0..4 {
                    let note = note.clone();
                    s.spawn(move |_| note());
                }
            });
            let half = || {
                note();
                p.submit(note.clone()).unwrap();
            };
            p.join(half, half);
            p.submit_to("interactive", note.clone()).unwrap();
            done_tx.send(()).unwrap();
        })
        .unwrap();
        done.recv().unwrap();
        pool.wait().unwrap();
        // 3 + 2 + 4 + 2 children, the join's 2 halves, and the explicit interactive one.
        assert_eq!(on_worker.load(SeqCst), 14);
        assert_eq!(off_worker.load(SeqCst), 0);
        let s = pool.stats();
        assert_eq!((s.submitted, s.completed), (13, 13), "{s}");
        if cfg!(feature = "stats") {
            let lanes: Vec<_> = s.lanes.iter().map(|l| (l.submitted, l.executed)).collect();
            assert_eq!(
                lanes,
                [(1, 1), (12, 12)],
                "interactive, batch: (submitted, executed)\n{s}"
            );
        }
    });
}

#[test]
fn tasks_of_a_lane_run_in_submit_order() {
    let _serial = serial();
    watchdog(60, "FIFO within a lane", || {
        let pools = [
            Pool::builder().workers(1).lanes(LANES).build().unwrap(),
            Pool::builder().workers(1).build().unwrap(),
        ];
        for pool in &pools {
            let lanes = pool.stats().lanes.len();
            let order = Arc::new(Mutex::new(Vec::new()));
            let gate = stall_all(pool);
            for id in 0..100 {
                for lane in 0..lanes {
                    let order = order.clone();
                    pool.submit_to(lane, move || order.lock().unwrap().push((lane, id)))
                        .unwrap();
                }
            }
            gate.open();
            pool.wait().unwrap();
            let order = order.lock().unwrap();
            assert_eq!(order.len(), 100 * lanes);
            for lane in 0..lanes {
                let ids: Vec<usize> = order
                    .iter()
                    .filter(|(l, _)| *l == lane)
                    .map(|&(_, id)| id)
                    .collect();
                assert_eq!(ids, (0..100).collect::<Vec<_>>(), "lane {lane} of {lanes}");
            }
        }
    });
}

#[test]
fn an_unknown_lane_is_refused_with_the_task_handed_back() {
    let _serial = serial();
    watchdog(60, "unknown lane", || {
        let pool = Pool::builder().workers(1).lanes(LANES).build().unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let live = Arc::new(AtomicUsize::new(0));
        let before = pool.stats();
        let task = |ran: &Arc<AtomicUsize>| {
            let ran = ran.clone();
            move || {
                ran.fetch_add(1, SeqCst);
            }
        };
        let by_name = pool.submit_to("nope", task(&ran)).unwrap_err();
        let by_index = pool.submit_to(99usize, task(&ran)).unwrap_err();
        let one_past = pool.submit_to(LANES.len(), task(&ran)).unwrap_err();
        for err in [by_name, by_index, one_past] {
            assert_eq!(err.reason(), RejectReason::UnknownLane);
            err.into_inner()(); // handed back intact: runs here
        }
        assert_eq!(ran.load(SeqCst), 3);
        let guard = Live::new(&live);
        let r = ran.clone();
        let handle = pool.spawn_to("nope", move || {
            drop(guard);
            r.fetch_add(100, SeqCst);
            7
        });
        assert!(matches!(
            handle.join(),
            Err(JoinError::Refused(RejectReason::UnknownLane))
        ));
        assert_eq!(
            live.load(SeqCst),
            0,
            "the refused spawn's closure is dropped"
        );
        assert!(pool.lane("nope").is_none());
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 3, "nothing ran in the pool");
        let after = pool.stats();
        assert_eq!(
            (
                after.submitted,
                after.completed,
                after.rejected,
                after.rejected_full,
                after.rejected_timeout,
                after.rejected_shutdown
            ),
            (
                before.submitted,
                before.completed,
                // The four refusals for an unknown lane are counted (a statistic).
                before.rejected + if cfg!(feature = "stats") { 4 } else { 0 },
                before.rejected_full,
                before.rejected_timeout,
                before.rejected_shutdown
            ),
            "{after}"
        );
        let lanes = |s: &flock::Stats| -> Vec<(u64, u64)> {
            s.lanes.iter().map(|l| (l.submitted, l.executed)).collect()
        };
        assert_eq!(lanes(&after), lanes(&before));
    });
}

#[test]
fn bad_lane_lists_are_build_errors() {
    let _serial = serial();
    let build = |lanes: &[(&str, u32)]| Pool::builder().workers(1).lanes(lanes).build();
    assert!(matches!(build(&[]), Err(BuildError::NoLanes)));
    match build(&[("a", 1), ("b", 0)]) {
        Err(BuildError::ZeroLaneWeight { lane }) => assert_eq!(lane, "b"),
        other => panic!("{other:?}"),
    }
    match build(&[("a", 1), ("b", 2), ("a", 3)]) {
        Err(BuildError::DuplicateLane { lane }) => assert_eq!(lane, "a"),
        other => panic!("{other:?}"),
    }
    let names: Vec<String> = (0..=MAX_LANES).map(|i| format!("l{i}")).collect();
    let lanes: Vec<(&str, u32)> = names.iter().map(|n| (n.as_str(), 1)).collect();
    assert_eq!(lanes.len(), 17);
    match build(&lanes) {
        Err(BuildError::TooManyLanes { requested, max }) => {
            assert_eq!((requested, max), (17, MAX_LANES))
        }
        other => panic!("{other:?}"),
    }
    // The largest list is accepted, and its last lane runs tasks.
    let pool = build(&lanes[..MAX_LANES]).unwrap();
    let last = pool.lane("l15").unwrap();
    assert_eq!(last.index(), 15);
    assert_eq!(pool.spawn_to(last, || 15).join().unwrap(), 15);
}

#[test]
fn per_lane_stats_add_up() {
    let _serial = serial();
    watchdog(60, "per-lane stats", || {
        let pool = Pool::builder()
            .workers(2)
            .lanes(&[("interactive", 4), ("batch", 1), ("idle", 2)])
            .panic_handler(|_| ())
            .build()
            .unwrap();
        let work = || spin_for(Duration::from_micros(20));
        for i in 0..30 {
            if i == 7 {
                pool.submit_to("interactive", || panic!("one interactive task panics"))
                    .unwrap();
            } else {
                pool.submit_to("interactive", work).unwrap();
            }
        }
        for _ in 0..5 {
            pool.submit(work).unwrap(); // the first lane
        }
        let batch = pool.lane("batch").unwrap();
        for _ in 0..20 {
            pool.submit_to(batch, work).unwrap();
        }
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!((s.submitted, s.completed, s.panicked), (55, 54, 1), "{s}");
        let names: Vec<_> = s
            .lanes
            .iter()
            .map(|l| (l.name.as_str(), l.weight))
            .collect();
        assert_eq!(names, [("interactive", 4), ("batch", 1), ("idle", 2)]);
        assert!(s.lanes.iter().all(|l| l.queued == 0));
        let text = s.to_string();
        for name in ["interactive", "batch", "idle"] {
            assert!(text.contains(name), "Display lacks lane {name}:\n{text}");
        }
        if cfg!(feature = "stats") {
            let counts: Vec<_> = s.lanes.iter().map(|l| (l.submitted, l.executed)).collect();
            assert_eq!(counts, [(35, 35), (20, 20), (0, 0)], "{s}");
            let executed: u64 = s.lanes.iter().map(|l| l.executed).sum();
            assert_eq!(executed, s.completed + s.panicked);
            assert!(s.lanes[0].busy.unwrap() > Duration::ZERO, "{s}");
            assert!(s.lanes[1].busy.unwrap() > Duration::ZERO, "{s}");
            assert_eq!(s.lanes[2].busy, Some(Duration::ZERO), "{s}");
            let prom = s.to_prometheus("flock");
            for (lane, n) in [("interactive", 35), ("batch", 20), ("idle", 0)] {
                let line =
                    format!("flock_lane_executed_total{{pool=\"flock\",lane=\"{lane}\"}} {n}");
                assert!(prom.lines().any(|l| l == line), "no `{line}` in\n{prom}");
            }
        }
        // With one lane there is nothing to share: no run time is measured for it.
        let single = Pool::builder().workers(1).build().unwrap();
        for _ in 0..3 {
            single.submit(work).unwrap();
        }
        single.wait().unwrap();
        let s = single.stats();
        assert_eq!(s.lanes.len(), 1);
        let l = &s.lanes[0];
        assert_eq!(
            (l.name.as_str(), l.weight, l.submitted, l.executed, l.busy),
            ("default", 1, 3, 3, None)
        );
    });
}

/// `flock::yield_to_lanes` from a long batch task: an interactive task that arrives while
/// the only worker runs it starts inside it, on the same thread, before it ends; each is
/// counted in its own lane.
#[test]
fn yield_to_lanes_runs_a_waiting_interactive_task_inside_a_batch_task() {
    let _serial = serial();
    watchdog(60, "yield_to_lanes", || {
        let pool = Arc::new(two_lane_pool(1));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (p, l) = (pool.clone(), log.clone());
        let batch = pool.spawn_to("batch", move || {
            let me = flock::current_worker_index();
            let l2 = l.clone();
            p.submit_to("interactive", move || {
                l2.lock()
                    .unwrap()
                    .push(("interactive", flock::current_worker_index()));
            })
            .unwrap();
            let mut ran = 0;
            while l.lock().unwrap().is_empty() {
                ran += flock::yield_to_lanes();
            }
            l.lock().unwrap().push(("batch ends", me));
            ran
        });
        assert_eq!(batch.join().unwrap(), 1);
        pool.wait().unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            [("interactive", Some(0)), ("batch ends", Some(0))]
        );
        if cfg!(feature = "stats") {
            let s = pool.stats();
            let executed: Vec<u64> = s.lanes.iter().map(|l| l.executed).collect();
            assert_eq!(executed, [1, 1], "{s}");
        }
    });
}

/// It runs only heavier lanes: never the caller's own lane, an equally weighted one or a
/// lighter one; it returns 0 outside a worker and in a pool of one lane.
#[test]
fn yield_to_lanes_runs_only_heavier_lanes() {
    let _serial = serial();
    watchdog(60, "yield_to_lanes: heavier only", || {
        assert_eq!(flock::yield_to_lanes(), 0, "outside any pool");
        let single = Pool::builder().workers(1).build().unwrap();
        let inside = single.spawn(flock::yield_to_lanes);
        assert_eq!(inside.join().unwrap(), 0, "one lane: nothing is heavier");

        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .lanes(&[("high", 8), ("low", 1), ("also-low", 1)])
                .build()
                .unwrap(),
        );
        let ran = Arc::new(AtomicUsize::new(0));
        let (p, r) = (pool.clone(), ran.clone());
        let from_low = pool.spawn_to("low", move || {
            // Queued on this worker's deques: a lane as heavy as ours, and our own.
            for lane in ["also-low", "low"] {
                let r = r.clone();
                p.submit_to(lane, move || {
                    r.fetch_add(1, SeqCst);
                })
                .unwrap();
            }
            let none = flock::yield_to_lanes();
            let high = p.spawn_to("high", flock::yield_to_lanes);
            let mut yielded = 0;
            while yielded == 0 {
                yielded += flock::yield_to_lanes();
            }
            (none, yielded, r.load(SeqCst), high)
        });
        let (none, yielded, equal_or_own, high) = from_low.join().unwrap();
        assert_eq!((none, yielded, equal_or_own), (0, 1, 0));
        assert_eq!(
            high.join().unwrap(),
            0,
            "from the heaviest lane nothing is heavier"
        );
        pool.wait().unwrap();
        assert_eq!(
            ran.load(SeqCst),
            2,
            "the equal and own-lane tasks ran after, as usual"
        );
    });
}

/// The heavier lanes get their share of the caller's time, not all of it: with 50 queued
/// interactive tasks of 2 ms each and a batch task that has run about 1 ms, one call runs
/// about 8 × 1 ms of them (weights 8 : 1), not 100 ms. Then, while paused, it runs nothing
/// submitted from outside.
#[test]
fn yield_to_lanes_gives_heavier_lanes_only_their_share() {
    let _serial = serial();
    watchdog(60, "yield_to_lanes: share", || {
        let pool = Arc::new(two_lane_pool(1));
        let ran = Arc::new(AtomicUsize::new(0));
        let (p, r) = (pool.clone(), ran.clone());
        let batch = pool.spawn_to("batch", move || {
            for _ in 0..50 {
                let r = r.clone();
                p.submit_to("interactive", move || {
                    std::thread::sleep(Duration::from_millis(2));
                    r.fetch_add(1, SeqCst);
                })
                .unwrap();
            }
            spin_for(Duration::from_millis(1));
            flock::yield_to_lanes()
        });
        let yielded = batch.join().unwrap();
        eprintln!("one yield after 1 ms ran {yielded} of 50 interactive tasks of 2 ms");
        // About 5 (8 ms of 2 ms tasks, the last one may overrun); all 50 would take this
        // task being descheduled for over 12 ms between its start and its yield.
        assert!(
            (1..50).contains(&yielded),
            "{yielded} interactive tasks ran inside one yield"
        );
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 50);

        // Paused: a task submitted from outside is not started by a yield.
        let gate = Gate::new();
        let g = gate.clone();
        let batch = pool.spawn_to("batch", move || {
            g.wait();
            flock::yield_to_lanes()
        });
        common::eventually(|| pool.stats().in_flight == 1 && pool.stats().queued == 0);
        pool.pause();
        let r = ran.clone();
        pool.submit_to("interactive", move || {
            r.fetch_add(1, SeqCst);
        })
        .unwrap();
        gate.open();
        assert_eq!(
            batch.join().unwrap(),
            0,
            "paused: nothing from outside starts"
        );
        assert_eq!(ran.load(SeqCst), 50);
        pool.resume();
        pool.wait().unwrap();
        assert_eq!(ran.load(SeqCst), 51);
    });
}

/// With every worker held in a batch task, an interactive task submitted from outside runs at
/// once on the lane reserve (not a worker), counted in its lane and in `reserve_runs`; a batch
/// task submitted beside it waits for a worker; what the reserve's task submits inherits its
/// lane; `wait()` from it is refused instead of waiting for itself.
#[test]
fn the_lane_reserve_runs_a_heavy_task_while_every_worker_runs_a_light_one() {
    let _serial = serial();
    watchdog(60, "lane reserve", || {
        let pool = Arc::new(Pool::builder().workers(2).lanes(LANES).build().unwrap());
        let gate = stall_each_in(&pool, BATCH);
        let batch_ran = Arc::new(AtomicUsize::new(0));
        let b = batch_ran.clone();
        pool.submit_to(BATCH, move || {
            b.fetch_add(1, SeqCst);
        })
        .unwrap();
        let p = pool.clone();
        let answer = pool.spawn_to(INTERACTIVE, move || {
            let child = p.spawn(flock::current_worker_index);
            let waited = p.wait();
            (flock::current_worker_index(), waited, child)
        });
        // Joined while both workers are still held: only the reserve can have run it.
        let (worker, waited, child) = answer.join().unwrap();
        assert_eq!(worker, None, "ran on the reserve, not a worker");
        assert_eq!(waited, Err(flock::WaitError::WouldDeadlock));
        // The child (its lane's second task) is also run by the reserve: the workers are held.
        assert_eq!(child.join().unwrap(), None);
        assert_eq!(
            batch_ran.load(SeqCst),
            0,
            "the reserve never runs the lightest lane"
        );
        gate.open();
        pool.wait().unwrap();
        assert_eq!(batch_ran.load(SeqCst), 1);
        let s = pool.stats();
        assert_eq!((s.submitted, s.completed), (5, 5), "{s}");
        if cfg!(feature = "stats") {
            assert_eq!(s.reserve_runs, 2, "{s}");
            let lanes: Vec<_> = s.lanes.iter().map(|l| (l.submitted, l.executed)).collect();
            assert_eq!(lanes, [(2, 2), (3, 3)], "interactive, batch\n{s}");
        }
    });
}

/// The reserve stays asleep while some worker runs a task of a lane as heavy as the new
/// task's (that lane is served at its next boundary), when turned off, with lanes of one
/// weight, and while the pool is paused (`resume` wakes it, also for a backlog).
#[test]
fn the_lane_reserve_stays_asleep_unless_every_worker_runs_a_lighter_lane() {
    let _serial = serial();
    watchdog(60, "lane reserve: when not", || {
        let run_interactive = |pool: &Pool| {
            let (tx, rx) = mpsc::channel();
            pool.submit_to(INTERACTIVE, move || {
                tx.send(flock::current_worker_index()).unwrap();
            })
            .unwrap();
            rx
        };
        // One worker held in an interactive task, the other in a batch task.
        let pool = Pool::builder().workers(2).lanes(LANES).build().unwrap();
        let (tx, rx) = mpsc::channel();
        let (g1, g2) = (Gate::new(), Gate::new());
        for (lane, gate) in [(INTERACTIVE, g1.clone()), (BATCH, g2.clone())] {
            let tx = tx.clone();
            pool.submit_to(lane, move || {
                tx.send(()).unwrap();
                gate.wait();
            })
            .unwrap();
            rx.recv().unwrap();
        }
        let ran = run_interactive(&pool);
        g1.open();
        g2.open();
        assert!(ran.recv().unwrap().is_some(), "waited for a worker");

        // Turned off: the task waits for the held worker.
        let pool = Pool::builder()
            .workers(1)
            .lanes(LANES)
            .lane_reserve(false)
            .build()
            .unwrap();
        let gate = stall_each_in(&pool, BATCH);
        let ran = run_interactive(&pool);
        assert_eq!(
            ran.recv_timeout(Duration::from_millis(50)),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        gate.open();
        assert_eq!(ran.recv().unwrap(), Some(0));

        // Paused: not started by the reserve either; `resume` wakes the reserve for them, two
        // queued (a backlog, which a submit does not wake it for) while the only worker is
        // still held.
        let pool = Pool::builder().workers(1).lanes(LANES).build().unwrap();
        let gate = stall_each_in(&pool, BATCH);
        pool.pause();
        let ran = [run_interactive(&pool), run_interactive(&pool)];
        assert_eq!(
            ran[0].recv_timeout(Duration::from_millis(50)),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        pool.resume();
        for ran in &ran {
            assert_eq!(ran.recv().unwrap(), None, "run by the reserve");
        }
        gate.open();
        pool.wait().unwrap();

        // Lanes of one weight have no reserve: nothing is heavier than anything.
        let pool = Pool::builder()
            .workers(1)
            .lanes(&[("a", 2), ("b", 2)])
            .build()
            .unwrap();
        let gate = stall_each_in(&pool, 1);
        let ran = run_interactive(&pool);
        assert_eq!(
            ran.recv_timeout(Duration::from_millis(50)),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        gate.open();
        assert_eq!(ran.recv().unwrap(), Some(0));
    });
}

/// A task run on the submitting thread (`Backpressure::CallerRuns`, the queue full) is in its
/// lane like any other: what it submits without naming a lane goes there, and `wait()` from
/// it is refused instead of waiting for itself.
#[test]
fn a_task_its_caller_runs_keeps_its_lane() {
    let _serial = serial();
    watchdog(60, "caller runs: lane", || {
        let (ran, s) = off_the_workers_in_the_batch_lane(flock::Backpressure::CallerRuns);
        // Both on this thread, before the submit returned, the child nested in the parent.
        let me = std::thread::current().id();
        assert_eq!(ran.at_once, [("child", me), ("parent", me)]);
        if cfg!(feature = "stats") {
            assert_eq!(s.caller_runs, 2, "{s}");
        }
    });
}

/// The same for a task run on a helper thread (`Backpressure::SpawnThread`, the queue
/// full): its child runs on a second helper thread (the queue still full; two may run at
/// once).
#[test]
fn a_task_run_on_a_helper_thread_keeps_its_lane() {
    let _serial = serial();
    watchdog(60, "spawn thread: lane", || {
        let (ran, s) = off_the_workers_in_the_batch_lane(flock::Backpressure::SpawnThread);
        let (child, parent) = (ran.thread_of("child"), ran.thread_of("parent"));
        let me = std::thread::current().id();
        assert!(child != parent && child != me && parent != me, "{ran:?}");
        if cfg!(feature = "stats") {
            assert_eq!(s.spawned_thread, 2, "{s}");
        }
    });
}

/// On a one-worker pool of capacity 1 whose worker is held and whose queue is full, submits a
/// task to the batch lane, which `policy` runs off the workers. That task submits a child
/// without naming a lane (the queue is still full, so it runs off the workers too), and is
/// refused `wait()`. Checks that all four tasks (the held one, the one in the queue, the
/// task and its child) counted in the batch lane (with the `stats` feature); returns where
/// the child and the task ran, and the pool's final statistics.
fn off_the_workers_in_the_batch_lane(policy: flock::Backpressure) -> (RanOn, flock::Stats) {
    let pool = Arc::new(
        Pool::builder()
            .workers(1)
            .lanes(LANES)
            .capacity(1)
            .when_full(policy)
            .max_spawned_threads(2)
            .build()
            .unwrap(),
    );
    let gate = stall_each_in(&pool, BATCH);
    // Fills the queue (capacity 1) behind the held worker.
    pool.submit_to(BATCH, || ()).unwrap();
    let p = pool.clone();
    let (tx, rx) = mpsc::channel();
    pool.submit_to(BATCH, move || {
        let child_tx = tx.clone();
        p.submit(move || {
            child_tx
                .send(("child", std::thread::current().id()))
                .unwrap()
        })
        .unwrap();
        assert_eq!(p.wait(), Err(flock::WaitError::WouldDeadlock));
        assert!(!p.wait_timeout(Duration::from_secs(1)));
        tx.send(("parent", std::thread::current().id())).unwrap();
    })
    .unwrap();
    let at_once: Vec<_> = rx.try_iter().collect();
    let later = rx.iter().take(2 - at_once.len()).collect();
    let ran = RanOn { at_once, later };
    gate.open();
    pool.wait().unwrap();
    let s = pool.stats();
    assert_eq!(s.completed, 4, "{s}");
    if cfg!(feature = "stats") {
        let lanes: Vec<_> = s.lanes.iter().map(|l| (l.submitted, l.executed)).collect();
        assert_eq!(lanes, [(0, 0), (4, 4)], "interactive, batch\n{s}");
    }
    (ran, s)
}

/// Which task ran on which thread: the reports there when the submit returned, in the order
/// sent, and those that came after.
#[derive(Debug)]
struct RanOn {
    at_once: Vec<(&'static str, std::thread::ThreadId)>,
    later: Vec<(&'static str, std::thread::ThreadId)>,
}

impl RanOn {
    fn thread_of(&self, who: &str) -> std::thread::ThreadId {
        let mut all = self.at_once.iter().chain(&self.later);
        all.find(|(w, _)| *w == who).expect("a report from each").1
    }
}

/// `Scope::spawn_batch` from a thread running a task of lane 1 off the workers (here the
/// caller, under `CallerRuns`) inherits that lane, as `Scope::spawn` does. The scope is
/// opened in place, so that its body spawns from that thread (`scope` would run the body on
/// the worker, which is stalled until the task returns).
#[cfg(feature = "stats")]
#[test]
fn scope_batch_from_off_worker_task_inherits_its_lane() {
    let _one = serial();
    watchdog(30, "spawn_batch lane from outside", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .capacity(1)
                .when_full(flock::Backpressure::CallerRuns)
                .lanes(&[("a", 1), ("b", 1)])
                .build()
                .unwrap(),
        );
        let gate = stall_all(&pool);
        pool.submit(|| ()).unwrap(); // the queue is full: what follows runs on the caller
        let inner = pool.clone();
        pool.submit_to("b", move || {
            inner.in_place_scope(|s| {
                s.spawn(|_| ());
                s.spawn_batch((0..3).map(|_| |_: &flock::Scope<'_>| ()));
            });
        })
        .unwrap();
        gate.open();
        pool.wait().unwrap();
        let s = pool.stats();
        // Lane a: the stall task and the filler; lane b: the task and its 4 scope tasks.
        assert_eq!((s.lanes[0].submitted, s.lanes[1].submitted), (2, 5), "{s}");
    });
}
