//! Loom models of the pool's protocol: the real registry, workers and sleep code, with loom's
//! atomics, locks and threads (`sync.rs`) and loom-visible queues (`deque.rs`). Each model
//! asserts that every task ran exactly once (or, for `shutdown_now`, ran or was dropped) and
//! loom fails any interleaving that deadlocks. Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg flock_loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --lib loom
//! ```
//!
//! Built with `--cfg flock_canary` as well, the park path skips its re-check of the queues;
//! `scripts/loom.sh` checks that the suite then fails, so the models are known to bite.

use crate::sync::Arc;
use crate::{Pool, RejectReason};
use loom::sync::atomic::{AtomicUsize, Ordering};

fn pool(workers: usize) -> Pool {
    Pool::builder()
        .workers(workers)
        .max_workers(workers)
        .spin_limit(0)
        .capacity(4)
        .build()
        .expect("pool")
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

/// Runs a model under loom (preemption bound from `LOOM_MAX_PREEMPTIONS`, default 2) and
/// prints how many executions it explored.
fn model(name: &str, f: impl Fn() + Sync + Send + 'static) {
    use std::sync::atomic::{AtomicUsize as StdAtomic, Ordering as StdOrdering};
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    let executions = std::sync::Arc::new(StdAtomic::new(0));
    let count = executions.clone();
    builder.check(move || {
        count.fetch_add(1, StdOrdering::Relaxed);
        f();
    });
    println!(
        "loom model {name}: {} executions explored (preemption bound {:?})",
        executions.load(StdOrdering::Relaxed),
        builder.preemption_bound
    );
}

/// One worker falling asleep while one outside thread submits: the task runs, wait returns.
#[test]
fn loom_one_worker_one_submitter() {
    model("loom_one_worker_one_submitter", || {
        let pool = pool(1);
        let ran = counter();
        let r = ran.clone();
        pool.submit(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        pool.shutdown().unwrap();
    });
}

/// Two workers, one submitter on another thread, the main thread waiting.
#[test]
fn loom_two_workers_one_submitter() {
    model("loom_two_workers_one_submitter", || {
        let pool = Arc::new(pool(2));
        let ran = counter();
        let (p, r) = (pool.clone(), ran.clone());
        let submitter = loom::thread::spawn(move || {
            p.submit(move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        });
        submitter.join().unwrap();
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        pool.shutdown().unwrap();
    });
}

/// A submit racing shutdown: the task is either run or handed back, never lost.
#[test]
fn loom_submit_racing_shutdown() {
    model("loom_submit_racing_shutdown", || {
        let pool = Arc::new(pool(1));
        let ran = counter();
        let (p, r) = (pool.clone(), ran.clone());
        let submitter = loom::thread::spawn(move || {
            p.submit(move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .map_err(|e| e.reason())
        });
        pool.shutdown().unwrap();
        let result = submitter.join().unwrap();
        match result {
            Ok(()) => assert_eq!(ran.load(Ordering::SeqCst), 1, "accepted but not run"),
            Err(reason) => {
                assert_eq!(reason, RejectReason::Shutdown);
                assert_eq!(ran.load(Ordering::SeqCst), 0);
            }
        }
    });
}

/// `wait` racing the last completion and a concurrent submit: it never returns while a task
/// submitted before it is unfinished.
#[test]
fn loom_wait_racing_completion_and_submit() {
    model("loom_wait_racing_completion_and_submit", || {
        let pool = Arc::new(pool(1));
        let first = counter();
        let f = first.clone();
        pool.submit(move || {
            f.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        let p = pool.clone();
        let late = loom::thread::spawn(move || {
            p.submit(|| ()).unwrap();
        });
        pool.wait().unwrap();
        assert_eq!(
            first.load(Ordering::SeqCst),
            1,
            "wait returned before the first task ran"
        );
        late.join().unwrap();
        pool.shutdown().unwrap();
    });
}

/// `shutdown_now` racing a running task and a queued one: each ran or was dropped, and the
/// counts add up.
#[test]
fn loom_shutdown_now_racing_a_running_task() {
    model("loom_shutdown_now_racing_a_running_task", || {
        let pool = pool(1);
        let ran = counter();
        for _ in 0..2 {
            let r = ran.clone();
            pool.submit(move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
        let dropped = pool.shutdown_now().unwrap() as usize;
        assert_eq!(ran.load(Ordering::SeqCst) + dropped, 2);
        let stats = pool.stats();
        assert_eq!(stats.submitted, 2);
        assert_eq!(stats.completed + stats.dropped, 2);
    });
}

/// The chain wake-up: two tasks that can only finish together (each waits for the other to
/// have started), two workers asleep. A submit wakes one worker; it must wake the second, or
/// the two tasks wait on each other forever and loom reports the deadlock.
#[test]
fn loom_chain_wake_runs_two_tasks_in_parallel() {
    model("loom_chain_wake_runs_two_tasks_in_parallel", || {
        let pool = pool(2);
        // A rendezvous: each task blocks until both have started.
        let started = Arc::new((loom::sync::Mutex::new(0usize), loom::sync::Condvar::new()));
        for _ in 0..2 {
            let s = started.clone();
            pool.submit(move || {
                let (count, cond) = &*s;
                let mut n = count.lock().unwrap();
                *n += 1;
                cond.notify_all();
                while *n < 2 {
                    n = cond.wait(n).unwrap();
                }
            })
            .unwrap();
        }
        pool.wait().unwrap();
        assert_eq!(*started.0.lock().unwrap(), 2);
        pool.shutdown().unwrap();
    });
}

/// `resume` racing a worker that parks because the pool is paused: the queued task runs and
/// `wait` returns (a worker left asleep with work queued would be a deadlock loom reports).
#[test]
fn loom_resume_wakes_a_paused_worker() {
    model("loom_resume_wakes_a_paused_worker", || {
        let pool = Arc::new(pool(1));
        pool.pause();
        let ran = counter();
        let r = ran.clone();
        pool.submit(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        let p = pool.clone();
        let resumer = loom::thread::spawn(move || p.resume());
        resumer.join().unwrap();
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        pool.shutdown().unwrap();
    });
}

/// A shrink racing the workers over a just-submitted task: the retiring worker (asleep,
/// searching, or running the task) leaves, the task runs exactly once, and `wait` returns.
/// (It found that a retiring worker must tell `wait()`ers, as an idle one does.)
#[test]
fn loom_shrink_racing_a_submit() {
    model("loom_shrink_racing_a_submit", || {
        let pool = pool(2);
        let ran = counter();
        let r = ran.clone();
        pool.submit(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        pool.resize(1).unwrap();
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        pool.shutdown().unwrap();
        assert_eq!(pool.stats().per_worker.len(), 1);
    });
}

/// A batch of two tasks that can only finish together, two workers asleep: the batch's
/// wake-up call must get both workers going (or loom reports the deadlock).
#[test]
fn loom_batch_wakes_enough_workers() {
    model("loom_batch_wakes_enough_workers", || {
        let pool = pool(2);
        let started = Arc::new((loom::sync::Mutex::new(0usize), loom::sync::Condvar::new()));
        let tasks = (0..2).map(|_| {
            let s = started.clone();
            move || {
                let (count, cond) = &*s;
                let mut n = count.lock().unwrap();
                *n += 1;
                cond.notify_all();
                while *n < 2 {
                    n = cond.wait(n).unwrap();
                }
            }
        });
        assert_eq!(pool.submit_batch(tasks).unwrap(), 2);
        pool.wait().unwrap();
        assert_eq!(*started.0.lock().unwrap(), 2);
        pool.shutdown().unwrap();
    });
}

/// The lane reserve: the only worker runs a light-lane task that waits (yielding) until a
/// heavy-lane task submitted from outside right after it has run. Once the worker has taken
/// the light task only the reserve can run the heavy one, so any lost wake-up of the reserve
/// (the submitter reading the worker as between tasks, the worker turning to the light lane
/// as the heavy task arrives, the reserve announcing sleep as it is pushed) spins forever,
/// and loom fails the model.
#[test]
fn loom_reserve_runs_a_heavy_task_behind_a_busy_worker() {
    model(
        "loom_reserve_runs_a_heavy_task_behind_a_busy_worker",
        || {
            let pool = Pool::builder()
                .workers(1)
                .max_workers(1)
                .spin_limit(0)
                .capacity(4)
                .lanes(&[("heavy", 2), ("light", 1)])
                .build()
                .expect("pool");
            let ran = counter();
            let r = ran.clone();
            pool.submit_to("light", move || {
                while r.load(Ordering::SeqCst) == 0 {
                    loom::thread::yield_now();
                }
            })
            .unwrap();
            let r = ran.clone();
            pool.submit_to("heavy", move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
            pool.wait().unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 1);
            pool.shutdown().unwrap();
        },
    );
}
