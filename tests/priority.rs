//! Strict priority between lanes (`PoolBuilder::strict_priority`): every queued task of a
//! heavier lane starts before any of a lighter one, whether it waits in the lane's shared
//! queue, a worker's own deque or another worker's deque (stolen first); FIFO within a lane;
//! lanes of one weight share their level; `yield_to_lanes` runs every queued heavier task;
//! the lane reserve still runs a heavy task behind busy workers; the counts add up.

mod common;

use common::{all_parked, stall_each_in, watchdog, Gate};
use flock::Pool;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};

const LANES: &[(&str, u32)] = &[("high", 8), ("low", 1)];
const HIGH: usize = 0;
const LOW: usize = 1;

fn strict_pool(workers: usize, lanes: &[(&str, u32)]) -> Pool {
    Pool::builder()
        .workers(workers)
        .lanes(lanes)
        .strict_priority(true)
        .build()
        .unwrap()
}

/// What each task appends when it starts: its lane and its number within the lane.
type Log = Arc<Mutex<Vec<(usize, usize)>>>;

fn logged(log: &Log, lane: usize, id: usize) -> impl FnOnce() + Send + 'static {
    let log = log.clone();
    move || log.lock().unwrap().push((lane, id))
}

/// The lanes of a log as letters: `H` for `HIGH`, `L` for `LOW`.
fn letters(log: &Log) -> String {
    let log = log.lock().unwrap();
    log.iter().map(|&(lane, _)| ["H", "L"][lane]).collect()
}

/// Issue 38's scenario: three low tasks, then three high ones, queued while the only worker
/// cannot start them (the pool paused, or the worker held in a task), run `HHHLLL`. With
/// weights (the default) the low lane gets its share in between (`HLHHLL` was observed).
#[test]
fn three_low_then_three_high_start_high_first() {
    watchdog(60, "HHHLLL", || {
        for held in [false, true] {
            let pool = strict_pool(1, LANES);
            let log: Log = Arc::default();
            let gate = if held {
                // Held in a high task: the lane reserve only serves a lane heavier than
                // the running task's, so nothing starts before the gate opens.
                Some(stall_each_in(&pool, HIGH))
            } else {
                // Parked before and after the pause: a worker still spinning could take the
                // first task as the pool pauses, and keep it to run first after the resume
                // (as documented); one woken after the pause parks again untouched.
                all_parked(&pool);
                pool.pause();
                all_parked(&pool);
                None
            };
            for (lane, id) in [
                (LOW, 0),
                (LOW, 1),
                (LOW, 2),
                (HIGH, 0),
                (HIGH, 1),
                (HIGH, 2),
            ] {
                pool.submit_to(lane, logged(&log, lane, id)).unwrap();
            }
            match gate {
                Some(gate) => gate.open(),
                None => pool.resume(),
            }
            pool.wait().unwrap();
            assert_eq!(letters(&log), "HHHLLL", "held in a task: {held}");
            assert_eq!(
                *log.lock().unwrap(),
                [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
            );
        }
    });
}

/// One worker, four lanes on three levels, a hundred tasks each submitted round-robin (some
/// as batches) while the worker is held: the top lane's all start first, then the two middle
/// lanes' (one weight: they share the level), then the low lane's; each lane in FIFO order.
#[test]
fn levels_start_in_weight_order_fifo_within_each_lane() {
    watchdog(60, "levels and FIFO", || {
        let lanes = [("top", 4), ("mid_a", 2), ("mid_b", 2), ("low", 1)];
        let pool = strict_pool(1, &lanes);
        let log: Log = Arc::default();
        let gate = stall_each_in(&pool, 0);
        for round in 0..10 {
            for lane in [3, 2, 1, 0] {
                let ids = round * 10..round * 10 + 10;
                if round % 3 == 0 {
                    let tasks = ids.map(|id| logged(&log, lane, id));
                    assert_eq!(pool.submit_batch_to(lane, tasks).unwrap(), 10);
                } else {
                    for id in ids {
                        pool.submit_to(lane, logged(&log, lane, id)).unwrap();
                    }
                }
            }
        }
        gate.open();
        pool.wait().unwrap();
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 400);
        let level = |lane: usize| [0, 1, 1, 2][lane];
        let levels: Vec<usize> = log.iter().map(|&(lane, _)| level(lane)).collect();
        assert!(
            levels.windows(2).all(|w| w[0] <= w[1]),
            "a lighter level started before a heavier one: {levels:?}"
        );
        for lane in 0..4 {
            let ids: Vec<usize> = log
                .iter()
                .filter(|(l, _)| *l == lane)
                .map(|&(_, id)| id)
                .collect();
            assert_eq!(ids, (0..100).collect::<Vec<_>>(), "lane {lane}");
        }
        // The middle level is shared: mid_b starts before mid_a is done.
        let first_b = log.iter().position(|&(l, _)| l == 2).unwrap();
        let last_a = log.iter().rposition(|&(l, _)| l == 1).unwrap();
        assert!(
            first_b < last_a,
            "mid_a ran to its end before mid_b started"
        );
    });
}

/// A low task records, as it starts, how many high tasks the pool counts as queued: with
/// strict priority, none, on any worker. No timing: every high task was queued before any
/// worker could start anything, so a worker that takes a low task has found every high
/// queue empty, and the queues only shrink from then on.
fn high_queued_at_low_starts(pool: &Arc<Pool>, lows: usize, log: &Arc<Mutex<Vec<u64>>>) {
    for _ in 0..lows {
        let (pool2, log) = (pool.clone(), log.clone());
        pool.submit_to(LOW, move || {
            let queued = pool2.stats().lanes[HIGH].queued;
            log.lock().unwrap().push(queued);
        })
        .unwrap();
    }
}

/// Three workers, 40 low tasks then 40 high tasks submitted from outside while every worker
/// is held in a task (not paused: a worker spinning as the pool pauses may keep a low task to
/// run first after the resume, as documented): no low task starts while a high task is still
/// queued.
#[test]
fn with_several_workers_no_low_task_starts_while_a_high_one_is_queued() {
    watchdog(60, "several workers, outside submits", || {
        let pool = Arc::new(strict_pool(3, LANES));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let high_ran = Arc::new(AtomicUsize::new(0));
        let gate = stall_each_in(&pool, HIGH);
        high_queued_at_low_starts(&pool, 40, &seen);
        for _ in 0..40 {
            let high_ran = high_ran.clone();
            pool.submit_to(HIGH, move || {
                high_ran.fetch_add(1, SeqCst);
            })
            .unwrap();
        }
        gate.open();
        pool.wait().unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!((seen.len(), high_ran.load(SeqCst)), (40, 40));
        assert!(
            seen.iter().all(|&q| q == 0),
            "high tasks still queued as low tasks started: {seen:?}"
        );
        let s = pool.stats();
        assert_eq!((s.submitted, s.completed, s.queued), (83, 83, 0), "{s}");
        if cfg!(feature = "stats") {
            let lanes: Vec<_> = s.lanes.iter().map(|l| (l.submitted, l.executed)).collect();
            assert_eq!(lanes, [(43, 43), (40, 40)], "high, low\n{s}");
        }
    });
}

/// High tasks spawned inside the pool wait in one worker's own deque: the other workers
/// steal them before they take a low task from the shared queue. One worker spawns 30 high
/// tasks and blocks, the other two are held in tasks, then 40 low tasks are queued from
/// outside and everyone is released at once.
#[test]
fn with_several_workers_high_tasks_in_a_deque_are_stolen_before_low_ones_start() {
    watchdog(60, "several workers, local spawns", || {
        let pool = Arc::new(strict_pool(3, LANES));
        let gate = Gate::new();
        let (started, running) = mpsc::channel();
        for _ in 0..2 {
            let (gate, started) = (gate.clone(), started.clone());
            pool.submit_to(HIGH, move || {
                started.send(()).unwrap();
                gate.wait();
            })
            .unwrap();
            running.recv().unwrap();
        }
        let children = Arc::new(AtomicUsize::new(0));
        let (p, g, c) = (pool.clone(), gate.clone(), children.clone());
        pool.submit_to(HIGH, move || {
            for _ in 0..30 {
                let c = c.clone();
                // From inside a worker: onto its own deque of the high lane.
                p.submit_to(HIGH, move || {
                    c.fetch_add(1, SeqCst);
                })
                .unwrap();
            }
            started.send(()).unwrap();
            g.wait();
        })
        .unwrap();
        running.recv().unwrap();
        assert_eq!(pool.stats().lanes[HIGH].queued, 30);
        let seen = Arc::new(Mutex::new(Vec::new()));
        high_queued_at_low_starts(&pool, 40, &seen);
        gate.open();
        pool.wait().unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!((seen.len(), children.load(SeqCst)), (40, 30));
        assert!(
            seen.iter().all(|&q| q == 0),
            "high tasks still queued as low tasks started: {seen:?}"
        );
        let s = pool.stats();
        assert_eq!((s.submitted, s.completed, s.queued), (73, 73, 0), "{s}");
        if cfg!(feature = "stats") {
            let lanes: Vec<_> = s.lanes.iter().map(|l| (l.submitted, l.executed)).collect();
            assert_eq!(lanes, [(33, 33), (40, 40)], "high, low\n{s}");
        }
    });
}

/// The worker's own deque does not come first: a low task that spawned low tasks onto it
/// is followed by the high task queued meanwhile in the shared queue, then its children.
#[test]
fn a_high_task_from_outside_starts_before_the_low_tasks_in_the_workers_own_deque() {
    watchdog(60, "own deque after higher lanes", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .lanes(LANES)
                .strict_priority(true)
                .lane_reserve(false)
                .build()
                .unwrap(),
        );
        let log: Log = Arc::default();
        let (spawned, children_queued) = mpsc::channel();
        let (go_on, high_queued) = mpsc::channel::<()>();
        let (p, l) = (pool.clone(), log.clone());
        pool.submit_to(LOW, move || {
            l.lock().unwrap().push((LOW, 0));
            for id in 1..4 {
                p.submit_to(LOW, logged(&l, LOW, id)).unwrap();
            }
            spawned.send(()).unwrap();
            high_queued.recv().unwrap();
        })
        .unwrap();
        children_queued.recv().unwrap();
        pool.submit_to(HIGH, logged(&log, HIGH, 0)).unwrap();
        go_on.send(()).unwrap();
        pool.wait().unwrap();
        assert_eq!(letters(&log), "LHLLL");
    });
}

/// `yield_to_lanes` from a low task runs every queued task of the heavier lanes there,
/// heaviest first, whatever their shares would be (weighted, the same tasks ran as `high, mid,
/// mid, high`).
#[test]
fn yield_to_lanes_runs_every_queued_heavier_task() {
    watchdog(60, "yield_to_lanes, strict", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .lanes(&[("high", 8), ("mid", 4), ("low", 1)])
                .strict_priority(true)
                .lane_reserve(false)
                .build()
                .unwrap(),
        );
        let ran = Arc::new(Mutex::new(Vec::new()));
        let (p, r) = (pool.clone(), ran.clone());
        let low = pool.spawn_to("low", move || {
            for lane in ["low", "mid", "high", "mid", "high"] {
                let r = r.clone();
                p.submit_to(lane, move || r.lock().unwrap().push(lane))
                    .unwrap();
            }
            let yielded = flock::yield_to_lanes();
            (yielded, r.lock().unwrap().clone())
        });
        let (yielded, during) = low.join().unwrap();
        assert_eq!(yielded, 4);
        assert_eq!(during, ["high", "high", "mid", "mid"]);
        pool.wait().unwrap();
        assert_eq!(ran.lock().unwrap().len(), 5);
    });
}

/// The lane reserve works as in a weighted pool: with the only worker held in a low task, a
/// high task runs at once on the reserve.
#[test]
fn the_lane_reserve_still_runs_a_high_task_behind_a_busy_worker() {
    watchdog(60, "lane reserve, strict", || {
        let pool = strict_pool(1, LANES);
        let gate = stall_each_in(&pool, LOW);
        let answer = pool.spawn_to(HIGH, flock::current_worker_index);
        assert_eq!(answer.join().unwrap(), None, "ran on the reserve");
        gate.open();
        pool.wait().unwrap();
        if cfg!(feature = "stats") {
            assert_eq!(pool.stats().reserve_runs, 1);
        }
    });
}
