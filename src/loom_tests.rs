//! Loom models of the pool's protocol: the real registry, workers and sleep code, with loom's
//! atomics, locks and threads (`sync.rs`) and loom-visible queues (`deque.rs`). Each model
//! asserts that every task ran exactly once (or, for `shutdown_now`, ran or was dropped) and
//! loom fails any interleaving that deadlocks. Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg flock_loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --lib loom
//! ```
//!
//! With `FLOCK_LOOM_CANARY=NAME` in its environment, the same binary removes one step of the
//! protocol (`sync::Canary`; `recheck`, for one, makes the park path skip its re-check of the
//! queues), and `scripts/loom.sh` checks that the models of that step then fail, so the
//! models are known to bite.

use crate::sync::Arc;
use crate::{Pool, RejectReason};
use loom::sync::atomic::{AtomicUsize, Ordering};

fn builder(workers: usize) -> crate::PoolBuilder {
    Pool::builder()
        .workers(workers)
        .max_workers(workers)
        .spin_limit(0)
        .capacity(4)
}

fn pool(workers: usize) -> Pool {
    builder(workers).build().expect("pool")
}

/// `pool`, with submits from outside through submitter rings (`PoolBuilder::loom_rings`).
fn ring_pool(workers: usize) -> Pool {
    builder(workers).loom_rings().build().expect("pool")
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

/// Runs a model under loom (preemption bound from `LOOM_MAX_PREEMPTIONS`, default 2) and
/// prints how many executions it explored.
fn model(name: &str, f: impl Fn() + Sync + Send + 'static) {
    model_bounded(name, None, f)
}

/// `model` with a preemption bound of its own, whatever `LOOM_MAX_PREEMPTIONS` says: for a
/// model whose bug needs fewer preemptions than its size would let bound 2 explore in time.
fn model_bounded(name: &str, bound: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    use std::sync::atomic::{AtomicUsize as StdAtomic, Ordering as StdOrdering};
    let mut builder = loom::model::Builder::new();
    if bound.is_some() {
        builder.preemption_bound = bound;
    }
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    // loom's default of 1,000 branches (atomic operations and lock steps) per execution is a
    // spin-lock detector, not a bound on exploration: `loom_batch_wakes_enough_workers` went
    // past it once the broadcast mailbox added a load to every look for work, with the same
    // 570,476 executions explored at 20,000. A real spin still fails, at this higher bound.
    if std::env::var_os("LOOM_MAX_BRANCHES").is_none() {
        builder.max_branches = 20_000;
    }
    let executions = std::sync::Arc::new(StdAtomic::new(0));
    let count = executions.clone();
    let started = std::time::Instant::now();
    builder.check(move || {
        count.fetch_add(1, StdOrdering::Relaxed);
        f();
    });
    println!(
        "loom model {name}: {} executions explored (preemption bound {:?}) in {:.1}s",
        executions.load(StdOrdering::Relaxed),
        builder.preemption_bound,
        started.elapsed().as_secs_f64()
    );
}

/// Submits `tasks` tasks from this thread, each bumping one counter, waits for them, checks
/// that each ran once, and shuts the pool down.
fn submit_and_wait(pool: Pool, tasks: usize) {
    let ran = counter();
    for _ in 0..tasks {
        let r = ran.clone();
        pool.submit(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    }
    pool.wait().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), tasks);
    pool.shutdown().unwrap();
}

/// One worker falling asleep while one outside thread submits: the task runs, wait returns.
#[test]
fn loom_one_worker_one_submitter() {
    model("loom_one_worker_one_submitter", || {
        submit_and_wait(pool(1), 1)
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

/// `shutdown_now` racing a running task and a queued one: the closer's own drop of what is
/// queued (`purge::drop_queued_for_shutdown`) races the worker for each job; each ran or was
/// dropped once, and the counts add up.
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

/// A job from outside taken as the pool gets paused: the worker keeps it (in no queue) and
/// parks; the resume, whose `wake_all` may come before the worker announces itself, must
/// still get it run (the park's re-check looks at the kept job), and `wait` returns.
#[test]
fn loom_a_job_taken_as_the_pool_pauses_runs_after_resume() {
    model(
        "loom_a_job_taken_as_the_pool_pauses_runs_after_resume",
        || {
            let pool = pool(1);
            let ran = counter();
            let r = ran.clone();
            pool.submit(move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
            pool.pause();
            pool.resume();
            pool.wait().unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 1);
            pool.shutdown().unwrap();
        },
    );
}

/// A shrink racing the workers over a just-submitted task: the retiring worker (asleep,
/// searching, or running the task) leaves, the task runs exactly once, and `wait` returns.
/// (It found that a retiring worker must tell `wait()`ers, as an idle one does; under the
/// `idle` canary it deadlocks, which `scripts/loom.sh` requires.) Preemption bound 1: that
/// bug needs one preemption, and bound 1 explores 10,224 executions where bound 2 took
/// 1.75 M (674 s of CI's 2-vCPU guest); bound 2 of a retire racing a shutdown stays in
/// `loom_a_stop_hook_task_stolen_by_a_retiring_worker`.
#[test]
fn loom_shrink_racing_a_submit() {
    model_bounded("loom_shrink_racing_a_submit", Some(1), || {
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

/// A shrink, then a graceful shutdown with the task perhaps still running on the retiring
/// worker: the worker that stays may wake for the shutdown, see the task outstanding and
/// park again, so the retiring worker, which leaves without parking, must wake it when it
/// ends the last task. Without that (`WorkerThread::retire`, after `hand_over_work`) `shutdown`
/// never returns; tests/threadpool_suite.rs found it. Under the `exit` canary this model
/// deadlocks, which `scripts/loom.sh` requires. Preemption bound 1, as
/// `loom_shrink_racing_a_submit`: 27,028 executions where bound 2 took 2.5 M (815 s).
#[test]
fn loom_retiring_worker_ends_the_last_task_of_a_shutdown() {
    model_bounded(
        "loom_retiring_worker_ends_the_last_task_of_a_shutdown",
        Some(1),
        || {
            let pool = pool(2);
            let ran = counter();
            let r = ran.clone();
            pool.submit(move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
            pool.resize(1).unwrap();
            pool.shutdown().unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 1);
        },
    );
}

/// Two workers; worker 0's `on_worker_stop` hook submits `task(ran)` (from the worker, so
/// onto its own deque).
fn pool_whose_stop_hook_submits(ran: &Arc<AtomicUsize>, task: fn(Arc<AtomicUsize>)) -> Pool {
    let r = ran.clone();
    builder(2)
        .on_worker_stop(move |index| {
            if index == 0 {
                let r = r.clone();
                crate::submit(move || task(r)).unwrap();
            }
        })
        .build()
        .expect("pool")
}

fn bump(ran: Arc<AtomicUsize>) {
    ran.fetch_add(1, Ordering::SeqCst);
}

/// Worker 0's `on_worker_stop` hook submits a task as the pool shuts down: the task goes
/// onto its own deque, which nobody else takes up once the other worker has left, so the
/// exiting worker runs it itself; a worker that parked while it was outstanding is woken
/// when it ends. Without `run_what_the_stop_hook_left` the task never runs (the count below
/// fails), and without its wake the shutdown deadlocks.
#[test]
fn loom_a_stop_hook_submits_during_shutdown() {
    model("loom_a_stop_hook_submits_during_shutdown", || {
        let ran = counter();
        let pool = pool_whose_stop_hook_submits(&ran, bump);
        pool.shutdown().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    });
}

/// As above, with a shrink racing the shutdown: worker 1 is beyond the number wanted when it
/// steals the hook's task, which spawns another onto worker 1's deque. A worker that retired
/// then would hand that one to the shared queue after worker 0 had left, where nobody runs
/// it (the shutdown's sweep then drops it: the count fails). During a shutdown no worker
/// retires; it runs until nothing is outstanding, as every other worker does.
#[test]
fn loom_a_stop_hook_task_stolen_by_a_retiring_worker() {
    model("loom_a_stop_hook_task_stolen_by_a_retiring_worker", || {
        let ran = counter();
        let pool = pool_whose_stop_hook_submits(&ran, |ran| {
            bump(ran.clone());
            crate::submit(move || bump(ran)).unwrap();
        });
        pool.resize(1).unwrap();
        pool.shutdown().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 2);
    });
}

/// Worker 1's `on_worker_stop` hook submits a task as a shrink retires it and a shutdown
/// races the retire. Seeing no shutdown (read under `slots`), worker 1 hands the task over to
/// worker 0, which must not leave before running it (it counts the task outstanding); seeing
/// one, worker 1 runs it itself, since worker 0 may have left already (under the `hook`
/// canary it hands the task to nobody: the count fails, or the shutdown never ends); and a
/// worker 1 that saw the shutdown before the shrink exits with the others, running it.
#[test]
fn loom_a_retiring_workers_stop_hook_task_races_a_shutdown() {
    model(
        "loom_a_retiring_workers_stop_hook_task_races_a_shutdown",
        || {
            let ran = counter();
            let r = ran.clone();
            let pool = builder(2)
                .on_worker_stop(move |index| {
                    if index == 1 {
                        let r = r.clone();
                        crate::submit(move || bump(r)).unwrap();
                    }
                })
                .build()
                .expect("pool");
            pool.resize(1).unwrap();
            pool.shutdown().unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 1);
        },
    );
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

/// A one-worker pool with lanes "heavy" (weight 2) and "light" (1), so with a lane reserve,
/// and a light task submitted to it that spins until `until` is not 0 (the worker may take
/// a heavy task submitted after it first).
fn reserve_pool_with_a_light_task_until(until: &Arc<AtomicUsize>) -> Pool {
    let pool = builder(1)
        .lanes(&[("heavy", 2), ("light", 1)])
        .build()
        .expect("pool");
    let until = until.clone();
    pool.submit_to("light", move || {
        while until.load(Ordering::SeqCst) == 0 {
            loom::thread::yield_now();
        }
    })
    .unwrap();
    pool
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
            let ran = counter();
            let pool = reserve_pool_with_a_light_task_until(&ran);
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

/// The lane reserve takes a heavy task just as the pool is paused: it gives the task back
/// unrun, to the front of its lane's shared queue (`Registry::put_back_paused`), so whichever
/// thread runs both heavy tasks starts it before the one submitted after it ("FIFO within a
/// lane"; on two threads their starts race, as on two workers). The light task holds the
/// only worker until the pool is resumed. Under the `front` canary the task goes to the back
/// of the lane's injector, behind the later one, and this model fails (at bound 2; bound 1
/// does not reach the pause landing between the reserve's look at the pause and its take).
#[test]
fn loom_the_reserve_gives_back_a_task_taken_as_the_pool_pauses_in_front() {
    model(
        "loom_the_reserve_gives_back_a_task_taken_as_the_pool_pauses_in_front",
        || {
            let resumed = counter();
            let pool = reserve_pool_with_a_light_task_until(&resumed);
            // (which heavy task, whether a worker ran it) as each starts.
            let order = Arc::new(loom::sync::Mutex::new(Vec::new()));
            for i in 0..2 {
                let order = order.clone();
                pool.submit_to("heavy", move || {
                    let on_worker = crate::current_worker_index().is_some();
                    order.lock().unwrap().push((i, on_worker));
                })
                .unwrap();
            }
            pool.pause();
            pool.resume();
            resumed.store(1, Ordering::SeqCst);
            pool.wait().unwrap();
            let order = order.lock().unwrap().clone();
            assert_eq!(order.len(), 2);
            if order[0].1 == order[1].1 {
                assert_eq!(
                    order[0].0, 0,
                    "the later heavy task started first: {order:?}"
                );
            }
            pool.shutdown().unwrap();
        },
    );
}

/// A rendezvous flag for models: `signal` once, `wait` blocks (so a lost wake-up is a
/// deadlock loom reports, not a spin).
#[derive(Clone)]
struct Signal(Arc<(loom::sync::Mutex<bool>, loom::sync::Condvar)>);

impl Signal {
    fn new() -> Signal {
        Signal(Arc::new((
            loom::sync::Mutex::new(false),
            loom::sync::Condvar::new(),
        )))
    }
    fn signal(&self) {
        let (flag, cond) = &*self.0;
        *flag.lock().unwrap() = true;
        cond.notify_all();
    }
    fn wait(&self) {
        let (flag, cond) = &*self.0;
        let mut set = flag.lock().unwrap();
        while !*set {
            set = cond.wait(set).unwrap();
        }
    }
}

/// A task pushes B onto its own deque, then blocks until B has run: only the other worker,
/// asleep or falling asleep, can run it. The push's light barrier against the parking
/// worker's F2 is what makes its re-check see B; under the `push` canary (no
/// fence after the local push, and no membarrier under loom) this model must fail
/// (scripts/loom.sh).
#[test]
fn loom_push_locally_then_block() {
    model("loom_push_locally_then_block", || {
        let pool = Arc::new(pool(2));
        let p = pool.clone();
        pool.submit(pushes_then_blocks(p)).unwrap();
        pool.wait().unwrap();
        pool.shutdown().unwrap();
    });
}

/// A task for `pool` (`p`) that submits a task from inside it, onto its worker's deque, then
/// blocks until that task has run.
fn pushes_then_blocks(p: Arc<Pool>) -> impl FnOnce() + Send + 'static {
    move || {
        let done = Signal::new();
        let d = done.clone();
        p.submit(move || d.signal()).unwrap();
        done.wait();
    }
}

/// `loom_push_locally_then_block` in a pool of two lanes (of one weight, so no lane reserve):
/// the task runs in the second lane, so its submit goes onto the worker's deque of that lane,
/// and the other worker must find it there through the lanes' paths (`find_work_in_lanes`,
/// the re-check over every lane's deques). Under the `push` canary it must fail too.
/// Preemption bound 1: bound 2 had not finished after 20 minutes here (the lanes' paths
/// make every look longer), and the canary's deadlock needs one preemption (caught in 1 s;
/// the model explores 27,828 executions in 8 s).
#[test]
fn loom_push_locally_then_block_in_a_second_lane() {
    model_bounded(
        "loom_push_locally_then_block_in_a_second_lane",
        Some(1),
        || {
            let pool = Arc::new(
                builder(2)
                    .lanes(&[("a", 1), ("b", 1)])
                    .build()
                    .expect("pool"),
            );
            let p = pool.clone();
            pool.submit_to("b", pushes_then_blocks(p)).unwrap();
            pool.wait().unwrap();
            pool.shutdown().unwrap();
        },
    );
}

/// The sleep protocol alone, for the models that need the membarrier pairing loom cannot run
/// in a pool (`Barrier::modeled`): two workers' sleep state and one job a pusher queues.
struct SleepModel {
    sleep: crate::sleep::Sleep,
    /// The pushed job: 0 not yet, 1 queued, 2 taken.
    job: AtomicUsize,
    exit: loom::sync::atomic::AtomicBool,
    ran: Signal,
}

impl SleepModel {
    fn new(barrier: crate::sleep::barrier::Barrier) -> SleepModel {
        SleepModel {
            sleep: crate::sleep::Sleep::with_barrier(2, barrier),
            job: AtomicUsize::new(0),
            exit: loom::sync::atomic::AtomicBool::new(false),
            ran: Signal::new(),
        }
    }

    /// The pushing thread: queues the job with the light side (no fence), passing the
    /// model membarrier's barrier at each point where the real one may land.
    fn pusher(
        shared: &Arc<SleepModel>,
        membarrier: Arc<crate::sleep::barrier::model::Membarrier>,
    ) -> loom::thread::JoinHandle<()> {
        let shared = shared.clone();
        loom::thread::spawn(move || {
            membarrier.point();
            shared.job.store(1, Ordering::Release);
            membarrier.point();
            shared.sleep.notify_local_work(&std::cell::Cell::new(0));
            membarrier.point();
            membarrier.leave();
        })
    }

    /// A searcher's look for the job: whether it took it (and then left the Searching state).
    fn take(&self) -> bool {
        let took = (self.job)
            .compare_exchange(1, 2, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if took {
            self.sleep.transition_from_searching();
            self.ran.signal();
        }
        took
    }

    /// `Worker::park`'s steps (announced as a searcher or not), the re-check, then a search
    /// when woken, until it took the job or the model ends.
    fn park_and_search(&self, index: usize, mut searching: bool) {
        loop {
            assert!(self.sleep.announce_parked(index, searching));
            // The re-check: the queue and the exit.
            let exit = self.exit.load(Ordering::SeqCst);
            if exit || self.job.load(Ordering::Acquire) == 1 {
                if !self.sleep.cancel_park(index) {
                    self.sleep.park(index);
                }
            } else {
                self.sleep.park(index);
            }
            searching = true;
            if self.take() || self.exit.load(Ordering::SeqCst) {
                return;
            }
        }
    }
}

/// One membarrier per era (docs/protocol.md): the sleep protocol alone, with the membarrier
/// pairing that loom cannot run in a pool (`Barrier::modeled`). A thread pushes one job with
/// the light side (no fence). Meanwhile worker 0 parks (on the main thread, before the
/// workers' threads start), issuing the era's membarrier, and is woken, which ends the era;
/// then both workers search and park. A worker that announces itself in the new era must
/// issue a membarrier of its own: the push may have loaded `sleeping == 0` after that wake
/// and skipped its fence. With the `era` canary any earlier membarrier counts as cover, and
/// the push is lost (both workers asleep, the job queued).
#[test]
fn loom_a_membarrier_covers_only_its_era() {
    use crate::sleep::barrier::{model::Membarrier, Barrier};

    model("loom_a_membarrier_covers_only_its_era", || {
        let membarrier = Arc::new(Membarrier::new());
        let shared = Arc::new(SleepModel::new(Barrier::modeled(membarrier.clone())));
        let pusher = SleepModel::pusher(&shared, membarrier);
        // Worker 0's first park: the era's membarrier (the pusher passes it at one of its
        // points), a re-check whose result does not matter, then a wake that ends the era
        // (ours, or the pusher's if its fenced path saw worker 0 asleep).
        assert!(shared.sleep.announce_parked(0, false));
        shared.sleep.wake_one();
        let workers: Vec<_> = (0..2)
            .map(|index| {
                let shared = shared.clone();
                loom::thread::spawn(move || {
                    let woken = index == 0;
                    if woken {
                        shared.sleep.park(index);
                        if shared.take() {
                            return;
                        }
                    }
                    shared.park_and_search(index, woken);
                })
            })
            .collect();
        shared.ran.wait();
        shared.exit.store(true, Ordering::SeqCst);
        shared.sleep.wake_all();
        pusher.join().unwrap();
        for w in workers {
            w.join().unwrap();
        }
    });
}

/// Pushes that rely on a searcher's membarrier (docs/protocol.md): with `UNFENCED` set and a
/// worker searching, a local push that finds a sleeper skips F1, and the state change that
/// leaves no searcher issues the membarrier before its re-check, whatever covers its era.
/// Worker 1 sleeps in an era a membarrier covered before the push began; worker 0 searches
/// and either finds another job first (`finds_other`: it leaves as the last searcher, and
/// its chain check must see the push and wake worker 1) or finds nothing and parks (its
/// announcement leaves no searcher, and its re-check must see the push). Under the
/// `unfenced` canary that searcher issues no membarrier, and loom finds the lost wake-up
/// (the job queued, both workers asleep or gone).
fn unfenced_push_model(name: &str, finds_other: bool) {
    use crate::sleep::barrier::{model::Membarrier, Barrier};

    model(name, move || {
        let membarrier = Arc::new(Membarrier::new());
        let shared = Arc::new(SleepModel::new(Barrier::modeled(membarrier.clone())));
        shared.sleep.model_unfenced_state(1, 1);
        let pusher = SleepModel::pusher(&shared, membarrier);
        let searcher = {
            let shared = shared.clone();
            loom::thread::spawn(move || {
                if finds_other {
                    // Another job found (not modeled): leave the Searching state, last.
                    if shared.sleep.transition_from_searching()
                        && shared.job.load(Ordering::Acquire) == 1
                    {
                        shared.sleep.wake_for_found_work(2);
                    }
                } else if !shared.take() {
                    shared.park_and_search(0, true);
                }
            })
        };
        let sleeper = {
            let shared = shared.clone();
            loom::thread::spawn(move || {
                shared.sleep.park(1);
                if !shared.take() && !shared.exit.load(Ordering::SeqCst) {
                    shared.park_and_search(1, true);
                }
            })
        };
        shared.ran.wait();
        shared.exit.store(true, Ordering::SeqCst);
        shared.sleep.wake_all();
        pusher.join().unwrap();
        searcher.join().unwrap();
        sleeper.join().unwrap();
    });
}

#[test]
fn loom_an_unfenced_push_seen_by_the_last_searcher_that_finds_work() {
    unfenced_push_model(
        "loom_an_unfenced_push_seen_by_the_last_searcher_that_finds_work",
        true,
    );
}

#[test]
fn loom_an_unfenced_push_seen_by_the_last_searcher_that_parks() {
    unfenced_push_model(
        "loom_an_unfenced_push_seen_by_the_last_searcher_that_parks",
        false,
    );
}

/// `loom_push_locally_then_block` through a batch: the batch's iterator, the task's own
/// code, blocks after yielding B until B has run (before it ends, so a batch of one: the
/// smallest model of the bug; more jobs multiply the executions, 1.4 M for two). The push must be announced before the
/// iterator runs again; with one wake-up call after the iterator ends (as before) the other
/// worker slept through B and this model deadlocks (checked by hand).
#[test]
fn loom_batch_iterator_blocks_on_a_task_it_yielded() {
    model("loom_batch_iterator_blocks_on_a_task_it_yielded", || {
        let pool = Arc::new(pool(2));
        let p = pool.clone();
        pool.submit(move || {
            let done = Signal::new();
            let mut b = Some(done.clone());
            // Yields B, then blocks until B has run before it ends.
            let tasks = std::iter::from_fn(move || match b.take() {
                Some(d) => Some(move || d.signal()),
                None => {
                    done.wait();
                    None
                }
            });
            assert_eq!(p.submit_batch(tasks).unwrap(), 1);
        })
        .unwrap();
        pool.wait().unwrap();
        pool.shutdown().unwrap();
    });
}

/// `loom_push_locally_then_block` through the join deque: `join`'s first half blocks until
/// the second has run, so only the other worker, stealing it from the join deque, can run it.
/// Its re-check must read the join deques, and the push's light barrier must order the push
/// before the `sleeping` load; under the `push` canary this model must fail too
/// (scripts/loom.sh).
#[test]
fn loom_join_half_stolen_while_the_first_blocks() {
    model("loom_join_half_stolen_while_the_first_blocks", || {
        let pool = Arc::new(pool(2));
        let p = pool.clone();
        pool.submit(move || {
            let done = Signal::new();
            let d = done.clone();
            p.join(move || done.wait(), move || d.signal());
        })
        .unwrap();
        pool.wait().unwrap();
        pool.shutdown().unwrap();
    });
}

/// A scope whose tasks end on workers that keep their units of its count (`Credit` in
/// `latch.rs`): the owner, outside the pool (an in-place scope), waits while two workers run
/// its tasks (the second spawned on a worker, onto its join deque, and perhaps stolen). It
/// returns only if each worker gives its kept units back once it runs out of work. Under the
/// `credit` canary (units never given back) it deadlocks, which `scripts/loom.sh`
/// requires.
#[test]
fn loom_scope_units_kept_by_workers_are_given_back() {
    model("loom_scope_units_kept_by_workers_are_given_back", || {
        let pool = pool(2);
        let ran = counter();
        pool.in_place_scope(|s| {
            let ran = &ran;
            s.spawn(move |s| {
                s.spawn(move |_| {
                    ran.fetch_add(1, Ordering::Relaxed);
                });
            });
        });
        assert_eq!(ran.load(Ordering::Relaxed), 1);
        pool.shutdown().unwrap();
    });
}

/// A latch set racing its waiter's park: a worker of pool A waits for a task of pool B (one
/// worker each), and the main thread (not a worker) waits for A's task. Both waiters park
/// through the latch's SLEEPY/SLEEPING states; a set that misses a sleeper deadlocks.
#[test]
fn loom_latch_set_racing_its_waiters_park() {
    model("loom_latch_set_racing_its_waiters_park", || {
        let a = pool(1);
        let b = Arc::new(pool(1));
        let b2 = b.clone();
        let r = a.spawn(move || b2.spawn(|| 7).join().unwrap()).join();
        assert_eq!(r.unwrap(), 7);
        a.shutdown().unwrap();
        b.shutdown().unwrap();
    });
}

/// A worker waiting on a latch while new work arrives: A's only worker waits for B's task,
/// which blocks until a task submitted to A from outside has run. Only the waiting worker
/// can run that task, so the submit must reach it while it waits (before, it blocked on the
/// latch's condvar, outside the sleepers' list).
#[test]
fn loom_waiting_worker_runs_new_work() {
    model("loom_waiting_worker_runs_new_work", || {
        let a = Arc::new(pool(1));
        let b = Arc::new(pool(1));
        let x_ran = Signal::new();
        let (b2, x) = (b.clone(), x_ran.clone());
        let waiter = a.spawn(move || b2.spawn(move || x.wait()).join().unwrap());
        let x = x_ran.clone();
        a.submit(move || x.signal()).unwrap();
        waiter.join().unwrap();
        a.shutdown().unwrap();
        b.shutdown().unwrap();
    });
}

/// `resume` while the only worker waits: its task A waits for B, queued from outside behind
/// it while the pool is paused. The waiting worker must not run B while paused, and must be
/// reached by `resume`.
#[test]
fn loom_resume_while_the_only_worker_waits() {
    model("loom_resume_while_the_only_worker_waits", || {
        let pool = Arc::new(pool(1));
        let (started, go) = (Signal::new(), Signal::new());
        let slot = Arc::new(loom::sync::Mutex::new(None::<crate::JoinHandle<u32>>));
        let (s, g, h) = (started.clone(), go.clone(), slot.clone());
        let a = pool.spawn(move || {
            s.signal();
            g.wait();
            let b = h.lock().unwrap().take().expect("B's handle");
            b.join().unwrap()
        });
        started.wait();
        *slot.lock().unwrap() = Some(pool.spawn(|| 5));
        pool.pause();
        go.signal();
        pool.resume();
        assert_eq!(a.join().unwrap(), 5);
        pool.shutdown().unwrap();
    });
}

/// Two pools waiting on each other (rayon-core's `mutual_install`), one worker each: a task
/// of A joins in B, whose job joins in A. Each waiting worker runs its own pool's jobs, so
/// the other pool's request is served.
#[test]
fn loom_two_pools_waiting_on_each_other() {
    model("loom_two_pools_waiting_on_each_other", || {
        let a = Arc::new(pool(1));
        let b = Arc::new(pool(1));
        let (a2, b2) = (a.clone(), b.clone());
        let r = a
            .spawn(move || b2.join(|| a2.join(|| 1, || 2), || 3))
            .join()
            .unwrap();
        assert_eq!(r, ((1, 2), 3));
        a.shutdown().unwrap();
        b.shutdown().unwrap();
    });
}

/// A waker for models: `wake` sets a flag and unparks the thread that made it; `wait` parks
/// until the flag is set (so a lost wake is a deadlock loom reports).
struct FlagWaker {
    woken: loom::sync::atomic::AtomicBool,
    thread: loom::thread::Thread,
}

impl FlagWaker {
    fn new() -> std::sync::Arc<FlagWaker> {
        std::sync::Arc::new(FlagWaker {
            woken: loom::sync::atomic::AtomicBool::new(false),
            thread: loom::thread::current(),
        })
    }
    fn wait(&self) {
        while !self.woken.load(Ordering::SeqCst) {
            loom::thread::park();
        }
    }
}

impl std::task::Wake for FlagWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// A `JoinHandle` polled as a future while its task ends on the pool's only worker, with a
/// different waker on the second poll (an executor moving the task): every interleaving of
/// the polls' registrations with the task's set ends with a poll that is Ready, and when the
/// second poll is Pending its waker (not only the first) is woken. A lost wake parks the
/// main thread forever.
#[test]
fn loom_poll_racing_the_task_end() {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};
    model("loom_poll_racing_the_task_end", || {
        let pool = pool(1);
        let mut handle = pool.spawn(|| 7);
        let mut poll = |flag: &std::sync::Arc<FlagWaker>| {
            let waker = Waker::from(flag.clone());
            Pin::new(&mut handle).poll(&mut Context::from_waker(&waker))
        };
        let (first, second) = (FlagWaker::new(), FlagWaker::new());
        let result = match poll(&first) {
            Poll::Ready(r) => r,
            Poll::Pending => match poll(&second) {
                Poll::Ready(r) => r,
                Poll::Pending => {
                    second.wait();
                    match poll(&second) {
                        Poll::Ready(r) => r,
                        Poll::Pending => panic!("woken, yet the task has not ended"),
                    }
                }
            },
        };
        assert_eq!(result.unwrap(), 7);
        pool.shutdown().unwrap();
    });
}

/// `submit_async` waiting for room: capacity 1, the only worker held by task A, task B
/// filling the queue; C's future is polled (try, register its waker, re-check) while A ends
/// and the worker takes B (releasing B's unit of capacity). A Pending poll must be followed by a wake,
/// after which C gets in. A lost wake parks the main thread forever.
#[test]
fn loom_submit_async_racing_the_release_of_room() {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};
    model("loom_submit_async_racing_the_release_of_room", || {
        let pool = Pool::builder()
            .workers(1)
            .max_workers(1)
            .spin_limit(0)
            .capacity(1)
            .when_full(crate::Backpressure::Reject)
            .build()
            .expect("pool");
        let (started, go) = (Signal::new(), Signal::new());
        let (s, g) = (started.clone(), go.clone());
        pool.submit(move || {
            s.signal();
            g.wait();
        })
        .unwrap();
        started.wait();
        pool.submit(|| ()).unwrap();
        let ran = counter();
        let r = ran.clone();
        let mut fut = pool.submit_async(move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        let flag = FlagWaker::new();
        let waker = Waker::from(flag.clone());
        let mut poll = || Pin::new(&mut fut).poll(&mut Context::from_waker(&waker));
        // Released first, so the worker's release of room races the poll's register and
        // re-check.
        go.signal();
        if poll().is_pending() {
            flag.wait();
            assert!(matches!(poll(), Poll::Ready(Ok(()))), "woken without room");
        }
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        pool.shutdown().unwrap();
    });
}

/// A submit blocked on a full queue (`Backpressure::Block`): capacity 2, so under loom the
/// low-water mark is 1 (`gate::room_mark`) and the submitter is woken only when a start
/// takes `pending` from 1 to 0, not at the first room. Three submits from outside race the
/// only worker: the third may find both units taken, block, and rely on the worker's release
/// that crosses the mark (its RMW on `pending` against the submitter's `blocked` increment and
/// re-check). A missed crossing leaves the submitter asleep with the worker parked, which loom
/// reports as a deadlock (the canary `room` moves the mark by one and must).
#[test]
fn loom_block_wakes_at_the_low_water_mark() {
    model("loom_block_wakes_at_the_low_water_mark", || {
        submit_and_wait(builder(1).capacity(2).build().expect("pool"), 3);
    });
}

/// The undo of a failed reservation that takes `pending` below the low-water mark, made by
/// another submitter than the blocked one: capacity 2 (mark 1), one worker. The main thread
/// submits three tasks and may block on the third; another outside thread opens a scope (in
/// place) and spawns one task into it, whose admission runs its caller's policy,
/// `CallerRuns`. If that spawn's add finds the queue full and the worker's releases take
/// `pending` from 3 to 1 before its undo, the undo is the decrement that crosses the mark,
/// and no release will: the spawn must wake the blocked submitter in their stead
/// (`Reserved::Crossed`), then run its task through the queue or on its caller. Missing that
/// wake leaves the main thread asleep with `pending` at 0 and the worker parked, which loom
/// reports as a deadlock (the canary `undo` drops the wake and must).
#[test]
fn loom_undo_that_crosses_the_mark_wakes_a_blocked_submitter() {
    model(
        "loom_undo_that_crosses_the_mark_wakes_a_blocked_submitter",
        || {
            let pool = Arc::new(builder(1).capacity(2).build().expect("pool"));
            let ran = counter();
            let (p, r) = (pool.clone(), ran.clone());
            let scoper = loom::thread::spawn(move || {
                p.in_place_scope(|s| {
                    s.spawn(move |_| {
                        r.fetch_add(1, Ordering::SeqCst);
                    });
                });
            });
            for _ in 0..3 {
                let r = ran.clone();
                pool.submit(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
            }
            scoper.join().unwrap();
            pool.wait().unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 4);
            pool.shutdown().unwrap();
        },
    );
}

/// A room waiter's waker that submits into the same pool from inside `wake` (as an executor
/// that polls the woken task at once would): capacity 2 (mark 1), one worker, `Block`. The
/// main thread fills the queue, polls an async submit (registering the waker) and submits a
/// third task, which may block. Its re-check's undo can be the decrement that crosses the
/// mark (`Reserved::Crossed` in `block_for_room`, with the worker's two starts between its add
/// and its undo), and then it wakes the async waiters. The waker's three submits fill the queue
/// and block in turn, on `room_lock`: woken under that lock, the waker deadlocked on the lock
/// its own thread held.
#[test]
fn loom_a_waker_that_submits_is_not_woken_under_room_lock() {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Wake, Waker};

    /// Submits three tasks on its first wake, each bumping `ran`.
    struct Submits {
        pool: Arc<Pool>,
        ran: Arc<AtomicUsize>,
        woken: loom::sync::atomic::AtomicBool,
    }

    impl Wake for Submits {
        fn wake(self: std::sync::Arc<Self>) {
            if self.woken.swap(true, Ordering::SeqCst) {
                return;
            }
            for _ in 0..3 {
                let r = self.ran.clone();
                self.pool
                    .submit(move || {
                        r.fetch_add(1, Ordering::SeqCst);
                    })
                    .unwrap();
            }
        }
    }

    model(
        "loom_a_waker_that_submits_is_not_woken_under_room_lock",
        || {
            let pool = Arc::new(builder(1).capacity(2).build().expect("pool"));
            let ran = counter();
            let bump = |ran: &Arc<AtomicUsize>| {
                let r = ran.clone();
                move || {
                    r.fetch_add(1, Ordering::SeqCst);
                }
            };
            pool.submit(bump(&ran)).unwrap();
            pool.submit(bump(&ran)).unwrap();
            let submits = std::sync::Arc::new(Submits {
                pool: pool.clone(),
                ran: ran.clone(),
                woken: loom::sync::atomic::AtomicBool::new(false),
            });
            let waker = Waker::from(submits.clone());
            let mut fut = pool.submit_async(|| ());
            // Pending or not, the waiter's task is not counted: it is dropped below if it waits.
            let _ = Pin::new(&mut fut).poll(&mut Context::from_waker(&waker));
            drop(waker);
            pool.submit(bump(&ran)).unwrap();
            // Unregisters the waker if no wake took it (the waker holds the pool).
            drop(fut);
            pool.wait().unwrap();
            let woken = submits.woken.load(Ordering::SeqCst);
            assert_eq!(ran.load(Ordering::SeqCst), if woken { 6 } else { 3 });
            drop(submits);
            pool.shutdown().unwrap();
        },
    );
}

/// `Pool::broadcast` to a worker that is falling asleep: the job sits in its mailbox, never
/// stolen, so only that worker can run it; a worker that parks without seeing it, and is
/// not woken by `wake_specific`, deadlocks the caller. (With two workers the model did not
/// finish in minutes; one worker is the race that matters: put + wake against announce +
/// re-check.)
#[test]
fn loom_broadcast_reaches_a_parking_worker() {
    model("loom_broadcast_reaches_a_parking_worker", || {
        let pool = pool(1);
        assert_eq!(pool.broadcast(|i| i), [0]);
        pool.shutdown().unwrap();
    });
}

/// `purge` racing a task that paused the pool and waits in a scope for the task it spawned
/// (one worker, latency tracking on, so scope tasks go to the lane deque that purge drains):
/// purge may take that task out of the deque and put it back, spawned work, where the
/// waiting worker must still find it while the pool is paused. Before spawned jobs had
/// their own part of the lane's queue, the waiter parked until a `resume` that never came
/// (tests/pause.rs found it).
#[test]
fn loom_purge_puts_back_what_a_paused_scope_waits_for() {
    model("loom_purge_puts_back_what_a_paused_scope_waits_for", || {
        let pool = Arc::new(builder(1).track_latency(true).build().expect("pool"));
        let p = pool.clone();
        let purger = loom::thread::spawn(move || {
            p.purge();
        });
        let ran = counter();
        let r = ran.clone();
        pool.install(|| {
            pool.scope(|s| {
                s.spawn(move |_| {
                    r.fetch_add(1, Ordering::SeqCst);
                });
                pool.pause();
            });
            pool.resume();
        });
        purger.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        pool.shutdown().unwrap();
    });
}

/// The payload of the name callback's panic in `loom_broadcast_racing_a_grow_that_fails`.
const NO_THREAD: &str = "flock loom: no thread for worker 1";

/// Leaves out of the panic output the expected panics whose payload is `quiet` (one per
/// execution of a model would flood the log); every other panic is reported as before.
fn quiet_panic(quiet: &'static str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&quiet) {
                report(info);
            }
        }));
    });
}

/// `Pool::broadcast` racing a grow whose new thread never starts (its name callback panics,
/// as when the OS refuses a thread): the broadcast must not address that slot, or it waits
/// for a call nobody runs, and so does the shutdown, which waits for the counted call. It
/// returns the one call of worker 0, and the pool shuts down.
#[test]
fn loom_broadcast_racing_a_grow_that_fails() {
    quiet_panic(NO_THREAD);
    model("loom_broadcast_racing_a_grow_that_fails", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .max_workers(2)
                .spin_limit(0)
                .thread_name(|index| {
                    if index != 0 {
                        std::panic::panic_any(NO_THREAD);
                    }
                    "w0".to_owned()
                })
                .build()
                .expect("pool"),
        );
        let p = pool.clone();
        let broadcaster = loom::thread::spawn(move || p.broadcast(|index| index));
        assert!(matches!(
            pool.resize(2),
            Err(crate::ResizeError::ThreadNamePanicked { worker: 1, .. })
        ));
        assert_eq!(broadcaster.join().unwrap(), [0]);
        pool.shutdown().unwrap();
    });
}

/// `Pool::broadcast` racing a shrink (issue 37, case 6): worker 1 retires while a broadcast
/// picks the slots to call. A call must run on the worker whose index it carries, as that
/// worker (`current_worker_index`), or not be made: the slot is picked only while its
/// thread runs it, and a retiring thread runs its mailbox before it lets go of its index.
/// It must also run while its slot is not yet marked retiring (a grow waits for retiring
/// slots, so a call there that blocks on the grow's thread hangs it: `tests/resize.rs`): a
/// worker retires only with an empty mailbox. The canary `mail` lets it retire with a call
/// put there after it last looked: nobody runs the call (a retiring worker's hand-over runs
/// none), and loom finds the broadcast waiting for ever.
///
/// Preemption bound 1: four threads (the caller, the broadcaster, two workers) ran past
/// 7 minutes at bound 2, beyond what CI's loom step can give one model.
#[test]
fn loom_broadcast_racing_a_retire_runs_each_call_as_its_worker() {
    model_bounded(
        "loom_broadcast_racing_a_retire_runs_each_call_as_its_worker",
        Some(1),
        || {
            let pool = Arc::new(builder(2).build().expect("pool"));
            let p = pool.clone();
            let broadcaster = loom::thread::spawn(move || {
                p.broadcast(|index| {
                    assert_eq!(crate::current_worker_index(), Some(index));
                    assert!(
                        !p.registry().crew.slot_retiring(index),
                        "worker {index}'s call ran after its slot was marked retiring"
                    );
                    index
                })
            });
            pool.resize(1).unwrap();
            let called = broadcaster.join().unwrap();
            assert!(called == [0] || called == [0, 1], "{called:?}");
            pool.shutdown().unwrap();
        },
    );
}

/// A task group's last task racing its waiter's park, one worker: the main thread (not a
/// worker) and the worker itself (inside a task, waiting on an inner group, so it must run
/// the inner task it waits for) both wait. The count's zero reaching the waiter through the
/// `waiters` lock or the latch is what is checked: a lost wake-up deadlocks.
#[test]
fn loom_group_task_racing_the_waits_park() {
    model("loom_group_task_racing_the_waits_park", || {
        let pool = Arc::new(pool(1));
        let ran = counter();
        let group = crate::TaskGroup::new(&pool);
        let (p, r) = (pool.clone(), ran.clone());
        group.spawn(move || {
            let inner = crate::TaskGroup::new(&p);
            let r2 = r.clone();
            inner.spawn(move || {
                r2.fetch_add(1, Ordering::SeqCst);
            });
            inner.wait().unwrap();
            r.fetch_add(1, Ordering::SeqCst);
        });
        group.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 2);
        pool.shutdown().unwrap();
    });
}

/// A task group's wait that begins after the count went to zero and rose again: the worker
/// finishes the first task (its count's zero) while the main thread spawns a second and
/// waits. The finisher of the first zero wakes only waits that began before it; a wake from
/// it to the later wait returns that wait before the second task ran.
#[test]
fn loom_a_group_wait_after_a_zero_waits_for_the_next_task() {
    model(
        "loom_a_group_wait_after_a_zero_waits_for_the_next_task",
        || {
            let pool = pool(1);
            let group = crate::TaskGroup::new(&pool);
            group.spawn(|| ());
            let ran = counter();
            let r = ran.clone();
            group.spawn(move || {
                r.fetch_add(1, Ordering::SeqCst);
            });
            group.wait().unwrap();
            assert_eq!(
                ran.load(Ordering::SeqCst),
                1,
                "the wait returned before its task ran"
            );
            pool.shutdown().unwrap();
        },
    );
}

/// A task group's `cancel` racing a wait that prunes the group's handles, on a paused pool (so
/// the task spawned is still queued when `cancel` comes): a second thread waits on the group
/// (and prunes as its wait returns) while the main thread spawns one task into it and
/// cancels it. The cancel must find the task's handle and drop the task; a wait whose pruning takes the handles out of the list for a moment hides
/// it (`cancel` returns 0, and the wait, or the pool's, never returns).
#[test]
fn loom_group_cancel_racing_the_waits_pruning() {
    model("loom_group_cancel_racing_the_waits_pruning", || {
        let pool = pool(1);
        pool.pause();
        let group = Arc::new(crate::TaskGroup::new(&pool));
        let g = group.clone();
        let waiter = loom::thread::spawn(move || g.wait().unwrap());
        let ran = counter();
        let r = ran.clone();
        group.spawn(move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(group.cancel(), 1);
        waiter.join().unwrap();
        pool.resume();
        pool.shutdown().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    });
}

/// `JoinHandle::cancel` racing the worker that starts the task, which holds a unit of capacity
/// (spawned from outside): whoever moves the task out of `PENDING` gives the unit back, once. A
/// cancel that wins has given it back when it returns (it stayed taken until the worker took
/// the shell); after the shutdown no unit is left taken, nor given back twice (a shell's pop
/// giving it back again would wrap `pending` below zero).
#[test]
fn loom_cancel_racing_the_start_gives_the_unit_back_once() {
    model(
        "loom_cancel_racing_the_start_gives_the_unit_back_once",
        || {
            let pool = pool(1);
            let ran = counter();
            let r = ran.clone();
            let handle = pool.spawn(move || {
                r.fetch_add(1, Ordering::SeqCst);
            });
            let cancelled = handle.cancel();
            if cancelled {
                assert_eq!(pool.registry().gate.pending_units(), 0);
            }
            pool.shutdown().unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), usize::from(!cancelled));
            assert_eq!(pool.registry().gate.pending_units(), 0);
        },
    );
}

/// The submitter's ring growing while a worker takes from it: the main thread submits three
/// tasks, the third into a second ring (a ring has two slots under loom), while the one
/// worker takes them and moves the queue's front on. Every task runs once; a worker that
/// parks without seeing one (in either ring) deadlocks `wait`.
#[test]
fn loom_ring_grows_under_a_racing_worker() {
    model("loom_ring_grows_under_a_racing_worker", || {
        let pool = ring_pool(1);
        let ran = counter();
        for _ in 0..3 {
            let r = ran.clone();
            pool.submit(move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 3);
        pool.shutdown().unwrap();
    });
}

/// Two workers race for the head of one submitter ring whose first task blocks until the
/// second has run: the winner blocks, so only the loser can run the second. A loser gives up
/// its look (`OnLost::GiveUp`) instead of trying the next position; this model checks that it
/// still finds the second task, through its search or its park re-check, and does not sleep
/// beside it (a deadlock of `wait`). Preemption bound 1, which reaches the lost race (one
/// preemption between the loser's look and its CAS): at bound 2 the model ran past 15
/// minutes.
#[test]
fn loom_ring_race_loser_runs_the_next_job() {
    model_bounded("loom_ring_race_loser_runs_the_next_job", Some(1), || {
        let pool = ring_pool(2);
        let done = Signal::new();
        let d = done.clone();
        pool.submit(move || done.wait()).unwrap();
        pool.submit(move || d.signal()).unwrap();
        pool.wait().unwrap();
        pool.shutdown().unwrap();
    });
}

/// Two jobs claimed from a ring at once (`WorkerThread::took_two`): a worker that took a
/// first task from a ring claims the next two with one CAS when both are published, runs the
/// first and pushes the second onto its own deque (outside loom into the deque's slot; the
/// pool's models leave the slot out, `TaskDeque::for_pool`, and
/// `loom_a_deque_slot_between_its_owner_and_a_thief` checks it apart). Here the first of
/// those blocks until the second has run, so the other worker must take the second from
/// that deque: it must see it there, or be woken for it if it went to sleep when the ring
/// looked empty. Preemption bound 1, as `loom_ring_race_loser_runs_the_next_job`. With the
/// push's announcement removed (the `claim` canary) loom finds the other worker asleep
/// beside it.
#[test]
fn loom_a_claimed_second_job_is_taken_by_another_worker() {
    model_bounded(
        "loom_a_claimed_second_job_is_taken_by_another_worker",
        Some(1),
        || {
            let pool = ring_pool(2);
            // Under loom a ring has two slots, and the two jobs claimed at once must be at
            // the head of one ring, with the claimer holding it (its last job came from
            // there): the first task runs until the third is submitted, into the slot the
            // first left (the ring's next lap).
            let (started, go, done) = (Signal::new(), Signal::new(), Signal::new());
            let (s, g, d) = (started.clone(), go.clone(), done.clone());
            pool.submit(move || {
                s.signal();
                g.wait();
            })
            .unwrap();
            pool.submit(move || done.wait()).unwrap();
            started.wait();
            pool.submit(move || d.signal()).unwrap();
            go.signal();
            pool.wait().unwrap();
            pool.shutdown().unwrap();
        },
    );
}

/// A worker that a shrink retires with the second of two jobs it claimed from a ring still
/// on its deque, under a job the first one pushed (`WorkerThread::take_claimed`): it takes
/// the claimed job out from under that one, puts that one back and runs the claimed job,
/// which blocks (on worker 1) until the pushed job has run. So the other worker must take
/// it, and it may have looked while the job was off the deque and gone to sleep: the
/// put-back is announced as any push. With the announcement removed (the `reclaim` canary)
/// loom finds the other worker asleep beside it. The ring as in
/// `loom_a_claimed_second_job_is_taken_by_another_worker`; a round where worker 0 claimed
/// the two retires worker 1 with nothing of theirs, and passes.
#[test]
fn loom_a_retiring_worker_runs_its_claimed_job_from_under_a_pushed_one() {
    model_bounded(
        "loom_a_retiring_worker_runs_its_claimed_job_from_under_a_pushed_one",
        Some(1),
        || {
            let pool = Arc::new(ring_pool(2));
            let (started, go, pushed_ran) = (Signal::new(), Signal::new(), Signal::new());
            let (s, g) = (started.clone(), go.clone());
            pool.submit(move || {
                s.signal();
                g.wait();
            })
            .unwrap();
            // The first of the two: pushes a job onto its worker's deque, then retires that
            // worker (if it is worker 1) at its next task boundary.
            let (p, r) = (pool.clone(), pushed_ran.clone());
            pool.submit(move || {
                let r = r.clone();
                p.submit(move || r.signal()).unwrap();
                p.resize(1).unwrap();
            })
            .unwrap();
            started.wait();
            // Blocks on worker 1 only: on worker 0 it could wait for the pushed job after
            // worker 1 handed that over and left, with nobody to run it.
            pool.submit(move || {
                if crate::current_worker_index() == Some(1) {
                    pushed_ran.wait();
                }
            })
            .unwrap();
            go.signal();
            pool.wait().unwrap();
            pool.shutdown().unwrap();
        },
    );
}

/// A task deque's slot by itself (`deque::TaskDeque`): the owner puts a job in the slot,
/// pops (the slot's job, unless the thief took it), puts a second below everything (in the
/// slot again, after the thief's take if it took the first, or onto the deque while the
/// thief is still moving the first out) and pushes a third above it, while one thief steals
/// twice and another once (two takers racing for the slot); the owner then pops what is
/// left. Each job is taken exactly once, and loom's
/// `UnsafeCell` on the slot reports any unsynchronised access to a job: with the slot's
/// publishing store made Relaxed (the `slot` canary) the thief's read of the job races the
/// owner's write.
#[test]
fn loom_a_deque_slot_between_its_owner_and_a_thief() {
    use crate::deque::{Steal, TaskDeque};
    model("loom_a_deque_slot_between_its_owner_and_a_thief", || {
        let owner = TaskDeque::new_lifo();
        owner.push_oldest(Box::new(1u32));
        let thieves: Vec<_> = [2, 1]
            .into_iter()
            .map(|steals| {
                let end = owner.stealer();
                loom::thread::spawn(move || {
                    let mut took = Vec::new();
                    for _ in 0..steals {
                        if let Steal::Success(n) = end.steal() {
                            took.push(*n);
                        }
                    }
                    took
                })
            })
            .collect();
        let mut all: Vec<u32> = owner.pop().map(|b| *b).into_iter().collect();
        owner.push_oldest(Box::new(2u32));
        owner.push(Box::new(3u32));
        for thief in thieves {
            all.extend(thief.join().unwrap());
        }
        all.extend(std::iter::from_fn(|| owner.pop()).map(|b| *b));
        all.sort_unstable();
        assert_eq!(all, [1, 2, 3]);
    });
}

/// A ring by itself (`SharedQueue`): one producer pushes three jobs (the third grows the
/// ring) while two consumers take what they find, one as `purge` does (`steal`: a lost race
/// for the head is retried), one as a worker (`steal_noting`: it gives up); the rest is
/// drained after. Each job runs exactly once, each consumer takes its jobs oldest first, and
/// loom's `UnsafeCell` on the slots reports any unsynchronised access to a job.
#[test]
fn loom_ring_two_takers_across_growth() {
    use crate::job::{Job, Outcome};
    use crate::submitq::SharedQueue;
    model("loom_ring_two_takers_across_growth", || {
        let queue = Arc::new(SharedQueue::new(crate::submitq::RINGS));
        let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..3).map(|_| AtomicUsize::new(0)).collect());
        let take = |queue: Arc<SharedQueue>, start: usize, worker: bool| {
            loom::thread::spawn(move || {
                let mut took = Vec::new();
                for k in 0..2 {
                    let job = if worker {
                        queue.steal_noting(start + k).map(|(job, _)| job)
                    } else {
                        queue.steal(start + k)
                    };
                    if let Some(job) = job {
                        took.push(job.queued_at_ns());
                        job.run();
                    }
                }
                took
            })
        };
        let a = take(queue.clone(), 0, false);
        let b = take(queue.clone(), 1, true);
        for i in 0..3 {
            let runs = runs.clone();
            let mut job = Job::new(
                move || {
                    runs[i].fetch_add(1, Ordering::SeqCst);
                    Outcome::Done
                },
                0,
            );
            job.stamp(i as u64);
            queue.push_submitted(job, None);
        }
        for took in [a.join().unwrap(), b.join().unwrap()] {
            assert!(
                took.windows(2).all(|w| w[0] < w[1]),
                "out of order: {took:?}"
            );
        }
        while let Some(job) = queue.steal(0) {
            job.run();
        }
        assert!(queue.is_empty());
        assert!(runs.iter().all(|r| r.load(Ordering::SeqCst) == 1));
    });
}
