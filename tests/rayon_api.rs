//! The entry points rayon users reach for, checked against the behaviour rayon-core documents
//! (written from its docs, not copied from its suite): free `join` / `scope` / `spawn` in the
//! current pool, `Pool::install`, `yield_now`, per-call FIFO, `current_num_workers`.

use flock::{Pool, Yield};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

mod common;

use common::{named, thread_name};

fn on(pool: &str) -> bool {
    thread_name().starts_with(&format!("{pool}-"))
}

// ----- install ----------------------------------------------------------------------------

#[test]
fn install_runs_on_a_worker_and_returns_the_result() {
    let pool = named("inst", 2);
    let (name, value) = pool.install(|| (thread_name(), 6 * 7));
    assert!(name.starts_with("inst-"), "{name}");
    assert_eq!(value, 42);
}

#[test]
fn install_from_a_worker_of_the_same_pool_runs_inline() {
    let pool = named("inline", 2);
    let (outer, inner) = pool.install(|| {
        let outer = thread_name();
        (outer, pool.install(thread_name))
    });
    assert_eq!(outer, inner);
}

#[test]
fn install_reraises_a_panic() {
    let pool = Pool::new();
    let err = catch_unwind(AssertUnwindSafe(|| pool.install(|| panic!("boom")))).unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"boom"));
    assert_eq!(pool.install(|| 1), 1, "the pool survives");
}

/// rayon's `mutual_install`: two pools of one worker each installing into each other. The
/// waiting worker of each runs its own pool's tasks, so neither starves.
#[test]
fn pools_installing_into_each_other_do_not_deadlock() {
    let a = Arc::new(named("ma", 1));
    let b = Arc::new(named("mb", 1));
    let (a2, b2) = (a.clone(), b.clone());
    let r = a.install(move || {
        let a3 = a2.clone();
        b2.install(move || a3.install(|| (on("ma"), 7)))
    });
    assert_eq!(r, (true, 7));
}

#[test]
fn install_on_a_shut_down_pool_runs_on_the_caller() {
    let pool = Pool::new();
    pool.shutdown().unwrap();
    let caller = std::thread::current().id();
    assert_eq!(pool.install(|| std::thread::current().id()), caller);
}

// ----- join -------------------------------------------------------------------------------

#[test]
fn free_join_inside_install_runs_in_that_pool() {
    let pool = named("join", 2);
    let (a, b) = pool.install(|| flock::join(|| on("join"), || on("join")));
    assert!(a && b);
}

#[test]
fn free_join_outside_any_pool_uses_the_global_pool() {
    let (a, b) = flock::join(flock::current_worker_index, flock::current_worker_index);
    assert!(a.is_some() && b.is_some(), "both ran on global workers");
}

fn quick_sort(v: &mut [u32]) {
    if v.len() <= 32 {
        v.sort_unstable();
        return;
    }
    let mid = v.len() / 2;
    v.select_nth_unstable(mid);
    let (left, right) = v.split_at_mut(mid);
    flock::join(|| quick_sort(left), || quick_sort(&mut right[1..]));
}

/// rayon's `sort`: a recursive join with no pool passed down.
#[test]
fn recursive_free_join_sorts() {
    let pool = Pool::builder().workers(4).build().unwrap();
    let mut v: Vec<u32> = (0..20_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761) % 10_007)
        .collect();
    pool.install(|| quick_sort(&mut v));
    assert!(v.windows(2).all(|w| w[0] <= w[1]));
}

/// rayon's `panic_propagate_a` / `panic_b_still_executes`: a panic in `a` is re-raised after
/// `b` has run.
#[test]
fn a_panic_in_join_is_reraised_after_both_ran() {
    let pool = Pool::new();
    let b_ran = AtomicBool::new(false);
    let err = catch_unwind(AssertUnwindSafe(|| {
        pool.install(|| flock::join(|| panic!("from a"), || b_ran.store(true, Ordering::SeqCst)))
    }))
    .unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"from a"));
    assert!(b_ran.load(Ordering::SeqCst));
    let err = catch_unwind(|| flock::join(|| 1, || -> u32 { panic!("from b") })).unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"from b"));
}

// ----- scope ------------------------------------------------------------------------------

#[test]
fn free_scope_inside_install_spawns_into_that_pool() {
    let pool = named("scope", 2);
    let all_on_pool = AtomicBool::new(true);
    pool.install(|| {
        flock::scope(|s| {
            for _ in 0..20 {
                s.spawn(|_| {
                    if !on("scope") {
                        all_on_pool.store(false, Ordering::SeqCst);
                    }
                });
            }
        })
    });
    assert!(all_on_pool.load(Ordering::SeqCst));
}

/// rayon's `scope_result` and `scope_two`: the body's value comes back, after the tasks.
#[test]
fn free_scope_returns_the_body_value_after_every_task() {
    let counter = AtomicUsize::new(0);
    let r = flock::scope(|s| {
        s.spawn(|_| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        s.spawn(|_| {
            counter.fetch_add(10, Ordering::SeqCst);
        });
        22
    });
    assert_eq!((r, counter.load(Ordering::SeqCst)), (22, 11));
}

/// rayon's `scope_divide_and_conquer`: nested spawns through the scope reference.
#[test]
fn free_scope_divides_and_conquers() {
    fn split<'s>(s: &flock::Scope<'s>, counter: &'s AtomicUsize, n: usize) {
        if n <= 1 {
            counter.fetch_add(1, Ordering::SeqCst);
            return;
        }
        s.spawn(move |s| split(s, counter, n / 2));
        s.spawn(move |s| split(s, counter, n - n / 2));
    }
    let counter = AtomicUsize::new(0);
    let pool = Pool::builder().workers(3).build().unwrap();
    pool.install(|| flock::scope(|s| split(s, &counter, 1024)));
    assert_eq!(counter.load(Ordering::SeqCst), 1024);
}

/// rayon's `panic_propagate_scope`: a task's panic comes out of the scope, after the rest ran.
#[test]
fn a_panic_in_a_free_scope_task_is_reraised_after_the_rest() {
    let ran = AtomicUsize::new(0);
    let err = catch_unwind(AssertUnwindSafe(|| {
        flock::scope(|s| {
            s.spawn(|_| panic!("task"));
            for _ in 0..10 {
                s.spawn(|_| {
                    ran.fetch_add(1, Ordering::SeqCst);
                });
            }
        })
    }))
    .unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"task"));
    assert_eq!(ran.load(Ordering::SeqCst), 10);
}

// ----- spawn ------------------------------------------------------------------------------

/// rayon's `spawn_then_join_in_worker`: a spawn from a worker goes to that worker's pool.
#[test]
fn free_spawn_from_a_worker_stays_in_its_pool() {
    let pool = named("spawn", 2);
    let handle = pool.install(|| flock::spawn(|| on("spawn")));
    assert!(handle.join().unwrap());
    let (tx, rx) = mpsc::channel();
    pool.install(|| flock::submit(move || tx.send(on("spawn")).unwrap()).unwrap());
    assert!(rx.recv().unwrap());
}

#[test]
fn free_spawn_outside_any_pool_uses_the_global_pool() {
    let handle = flock::spawn(flock::current_worker_index);
    assert!(handle.join().unwrap().is_some());
}

/// rayon's `panic_fwd`-style check: a spawned task's panic reaches its handle, not the pool.
#[test]
fn a_free_spawned_panic_reaches_the_handle() {
    let pool = Pool::new();
    let handle = pool.install(|| flock::spawn(|| -> u32 { panic!("spawned") }));
    assert!(handle.join().unwrap_err().is_panic());
    assert_eq!(pool.install(|| 3), 3);
}

// ----- yield_now --------------------------------------------------------------------------

#[test]
fn yield_now_outside_a_pool_is_none() {
    assert_eq!(flock::yield_now(), None);
}

/// rayon's `yield_now_to_spawn`: on a one-worker pool, a task spawned then yielded to runs
/// inside the yield; with nothing queued the yield is idle.
#[test]
fn yield_now_runs_a_pending_task_here() {
    let pool = Pool::builder().workers(1).build().unwrap();
    let (first, ran, second) = pool.install(|| {
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        flock::submit(move || r.store(true, Ordering::SeqCst)).unwrap();
        let first = flock::yield_now();
        (first, ran.load(Ordering::SeqCst), flock::yield_now())
    });
    assert_eq!(
        (first, ran, second),
        (Some(Yield::Executed), true, Some(Yield::Idle))
    );
}

/// A task from outside waits in the shared queue while the only worker is busy: the busy
/// task's yield runs it.
#[test]
fn yield_now_runs_a_task_from_outside() {
    let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
    let (queued_tx, queued) = mpsc::channel::<()>();
    let p = pool.clone();
    let busy = pool.spawn(move || {
        queued.recv().unwrap();
        flock::yield_now()
    });
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    p.submit(move || r.store(true, Ordering::SeqCst)).unwrap();
    queued_tx.send(()).unwrap();
    assert_eq!(busy.join().unwrap(), Some(Yield::Executed));
    assert!(ran.load(Ordering::SeqCst));
}

// ----- FIFO -------------------------------------------------------------------------------

/// Spawns 0..10 from a task of a one-worker pool with `how`, waits, returns the run order.
fn order_of(how: fn(Arc<Mutex<Vec<u32>>>, u32)) -> Vec<u32> {
    let pool = Pool::builder().workers(1).build().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let o = order.clone();
    pool.install(move || {
        for i in 0..10 {
            how(o.clone(), i);
        }
    });
    pool.wait().unwrap();
    let v = order.lock().unwrap().clone();
    v
}

/// rayon's `lifo_order` / `fifo_order` for spawn vs spawn_fifo on one worker.
#[test]
fn spawn_is_lifo_and_spawn_fifo_is_fifo_on_one_worker() {
    let lifo = order_of(|o, i| drop(flock::spawn(move || o.lock().unwrap().push(i))));
    assert_eq!(lifo, (0..10).rev().collect::<Vec<_>>());
    let fifo = order_of(|o, i| drop(flock::spawn_fifo(move || o.lock().unwrap().push(i))));
    assert_eq!(fifo, (0..10).collect::<Vec<_>>());
}

fn spawn_ten<'s>(s: &flock::Scope<'s>, order: &'s Mutex<Vec<u32>>) {
    for i in 0..10 {
        s.spawn(move |_| order.lock().unwrap().push(i));
    }
}

/// rayon's `scope_fifo_order` and `scope_lifo_order`.
#[test]
fn scope_fifo_spawns_in_order_and_scope_in_reverse() {
    let pool = Pool::builder().workers(1).build().unwrap();
    let run = |fifo: bool| {
        let order = Mutex::new(Vec::new());
        pool.install(|| {
            if fifo {
                flock::scope_fifo(|s| spawn_ten(s, &order))
            } else {
                flock::scope(|s| spawn_ten(s, &order))
            }
        });
        order.into_inner().unwrap()
    };
    assert_eq!(run(true), (0..10).collect::<Vec<_>>());
    assert_eq!(run(false), (0..10).rev().collect::<Vec<_>>());
}

/// rayon's `mixed_fifo_order`-style check: FIFO spawns keep their order among themselves
/// while LIFO spawns interleave, and every task runs once.
#[test]
fn mixed_fifo_and_lifo_spawns_each_keep_their_order() {
    let pool = Pool::builder().workers(1).build().unwrap();
    let order = Mutex::new(Vec::new());
    pool.install(|| {
        flock::scope(|s| {
            for i in 0..10u32 {
                let order = &order;
                if i % 2 == 0 {
                    s.spawn_fifo(move |_| order.lock().unwrap().push(i));
                } else {
                    s.spawn(move |_| order.lock().unwrap().push(i));
                }
            }
        })
    });
    let order = order.into_inner().unwrap();
    let evens: Vec<_> = order.iter().copied().filter(|i| i % 2 == 0).collect();
    let odds: Vec<_> = order.iter().copied().filter(|i| i % 2 == 1).collect();
    assert_eq!(evens, [0, 2, 4, 6, 8]);
    assert_eq!(odds, [9, 7, 5, 3, 1]);
}

#[test]
fn spawn_fifo_tasks_are_dropped_by_shutdown_now_with_their_handles_told() {
    let pool = Pool::builder().workers(1).build().unwrap();
    let (started_tx, started) = mpsc::channel();
    let (go_tx, go) = mpsc::channel::<()>();
    let handles = pool.install(move || {
        let handles: Vec<_> = (0..3).map(|i| flock::spawn_fifo(move || i)).collect();
        flock::submit(move || {
            started_tx.send(()).unwrap();
            go.recv().unwrap();
        })
        .unwrap();
        handles
    });
    started.recv().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            while !pool.is_shutdown() {
                std::thread::yield_now();
            }
            go_tx.send(()).unwrap();
        });
        pool.shutdown_now().unwrap();
    });
    for h in handles {
        // Each either ran before the blocker took the worker, or was dropped: never lost.
        match h.join() {
            Ok(_) | Err(flock::JoinError::Dropped) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
}

// ----- current_num_workers ----------------------------------------------------------------

#[test]
fn current_num_workers_follows_the_current_pool() {
    let pool = Pool::builder().workers(3).build().unwrap();
    assert_eq!(pool.install(flock::current_num_workers), 3);
    assert_eq!(flock::current_num_workers(), flock::global().workers());
}

// ----- queued / running -------------------------------------------------------------------

#[test]
fn queued_and_running_follow_the_pool_without_a_snapshot() {
    let pool = Pool::builder().workers(2).build().unwrap();
    let (started_tx, started) = mpsc::channel();
    let (go_tx, go) = mpsc::channel::<()>();
    let go = Arc::new(Mutex::new(go));
    for _ in 0..2 {
        let (s, g) = (started_tx.clone(), go.clone());
        pool.submit(move || {
            s.send(()).unwrap();
            g.lock().unwrap().recv().unwrap();
        })
        .unwrap();
    }
    started.recv().unwrap();
    started.recv().unwrap();
    // Both workers busy: what follows waits in the queues, in bundles too.
    for _ in 0..3 {
        pool.submit(|| ()).unwrap();
    }
    assert_eq!(pool.submit_batch((0..20).map(|_| || ())).unwrap(), 20);
    assert_eq!(pool.queued(), 23);
    assert_eq!(pool.queued(), pool.stats().queued);
    assert_eq!(pool.running(), 2);
    go_tx.send(()).unwrap();
    go_tx.send(()).unwrap();
    pool.wait().unwrap();
    assert_eq!(pool.queued(), 0);
}

/// A worker counts in `running` only once it takes a task: one whose thread has started but
/// is still in its start hook runs none (a worker used to start as `Running`).
#[test]
fn a_worker_still_in_its_start_hook_is_not_running() {
    common::watchdog(30, "a start hook that blocks", || {
        let (hook, in_hook) = (common::Gate::new(), mpsc::channel());
        let (h, tell) = (hook.clone(), Mutex::new(in_hook.0));
        let pool = Pool::builder()
            .workers(2)
            .on_worker_start(move |i| {
                if i == 1 {
                    tell.lock().unwrap().send(()).unwrap();
                    h.wait();
                }
            })
            .build()
            .unwrap();
        in_hook.1.recv().unwrap();
        let (task, started) = (common::Gate::new(), mpsc::channel());
        let (t, s) = (task.clone(), started.0);
        pool.submit(move || {
            s.send(()).unwrap();
            t.wait();
        })
        .unwrap();
        started.1.recv().unwrap(); // on worker 0: worker 1 is still in its hook
        assert_eq!(pool.running(), 1);
        assert_eq!(
            pool.stats().per_worker[1].state,
            flock::WorkerState::Spinning
        );
        hook.open();
        task.open();
        pool.wait().unwrap();
        assert_eq!(pool.running(), 0);
    });
}

// ----- broadcast --------------------------------------------------------------------------

/// rayon's `broadcast_pool`: one call per worker, on that worker, values in index order.
#[test]
fn broadcast_runs_once_on_every_worker_in_index_order() {
    let pool = named("bc", 4);
    let calls = AtomicUsize::new(0);
    let seen = pool.broadcast(|i| {
        calls.fetch_add(1, Ordering::SeqCst);
        (i, flock::current_worker_index(), thread_name())
    });
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    for (pos, (i, index, name)) in seen.into_iter().enumerate() {
        assert_eq!((i, index), (pos, Some(pos)));
        assert_eq!(name, format!("bc-{pos}"));
    }
}

/// rayon's `broadcast_self`: from one of the pool's own tasks, its worker takes part.
#[test]
fn broadcast_from_a_task_of_the_pool_includes_its_worker() {
    let pool = Pool::builder().workers(3).build().unwrap();
    let (me, seen) = pool.install(|| (flock::current_worker_index(), pool.broadcast(|i| i)));
    assert_eq!(seen, [0, 1, 2]);
    assert!(me.is_some());
}

/// rayon's `broadcast_mutual`-style check: a task of pool A broadcasts on pool B; A's worker
/// keeps running A's tasks while it waits.
#[test]
fn broadcast_on_another_pool_from_a_task() {
    let a = Pool::builder().workers(1).build().unwrap();
    let b = Arc::new(named("bcb", 2));
    let b2 = b.clone();
    let seen = a.install(move || b2.broadcast(|_| on("bcb")));
    assert_eq!(seen, [true, true]);
}

/// rayon's `broadcast_sleep_race`: broadcasts to workers that are falling asleep.
#[test]
fn repeated_broadcasts_reach_sleeping_workers() {
    let pool = Pool::builder().workers(3).spin_limit(1).build().unwrap();
    for round in 0..200 {
        let seen = pool.broadcast(|i| i + round);
        assert_eq!(seen, [round, round + 1, round + 2]);
        if round % 50 == 0 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

/// rayon's `broadcast_panic_one` / `broadcast_panic_many`: the first panic comes out after
/// every call has run.
#[test]
fn a_panic_in_broadcast_is_reraised_after_every_call() {
    let pool = Pool::builder().workers(3).build().unwrap();
    let calls = AtomicUsize::new(0);
    let err = catch_unwind(AssertUnwindSafe(|| {
        pool.broadcast(|i| {
            calls.fetch_add(1, Ordering::SeqCst);
            if i != 1 {
                panic!("call {i}");
            }
        })
    }))
    .unwrap_err();
    assert!(err.downcast_ref::<String>().unwrap().starts_with("call "));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(pool.broadcast(|i| i), [0, 1, 2], "the pool survives");
}

/// A worker busy with a task runs its call once the task ends.
#[test]
fn broadcast_waits_for_a_busy_worker() {
    let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
    let (started_tx, started) = mpsc::channel();
    let (go_tx, go) = mpsc::channel::<()>();
    pool.submit(move || {
        started_tx.send(()).unwrap();
        go.recv().unwrap();
    })
    .unwrap();
    started.recv().unwrap();
    let p = pool.clone();
    let caller = std::thread::spawn(move || p.broadcast(|i| i));
    std::thread::sleep(std::time::Duration::from_millis(30));
    assert!(!caller.is_finished(), "one worker is still busy");
    go_tx.send(()).unwrap();
    assert_eq!(caller.join().unwrap(), [0, 1]);
}

#[test]
fn broadcast_waits_for_resume_and_is_empty_after_shutdown() {
    let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
    pool.pause();
    let p = pool.clone();
    let caller = std::thread::spawn(move || p.broadcast(|i| i * 10));
    std::thread::sleep(std::time::Duration::from_millis(30));
    assert!(!caller.is_finished(), "paused: nothing starts");
    pool.resume();
    assert_eq!(caller.join().unwrap(), [0, 10]);
    pool.shutdown().unwrap();
    assert!(pool.broadcast(|i| i).is_empty());
}

/// Resize racing broadcasts: every call lands on a live worker, at most once per worker,
/// and none hangs (a worker that retires runs its call before it leaves).
#[test]
fn broadcast_racing_resize() {
    let pool = Arc::new(Pool::builder().workers(4).max_workers(4).build().unwrap());
    let p = pool.clone();
    let resizer = std::thread::spawn(move || {
        for n in [1, 4, 2, 3, 1, 4] {
            p.resize(n).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    });
    for _ in 0..100 {
        let seen = pool.broadcast(|i| (i, flock::current_worker_index()));
        assert!(!seen.is_empty());
        assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "{seen:?}");
        assert!(seen.iter().all(|(i, at)| *at == Some(*i)));
    }
    resizer.join().unwrap();
    assert_eq!(pool.broadcast(|i| i), [0, 1, 2, 3]);
}

/// A FIFO-spawned task cancelled while queued, then the pool shut down with `shutdown_now`:
/// the task is counted dropped once (by the cancel), not again when its trigger is
/// discarded (which would make the outstanding count underflow).
#[test]
fn a_cancelled_fifo_task_is_counted_once_under_shutdown_now() {
    let pool = Pool::builder().workers(1).build().unwrap();
    let (started_tx, started) = mpsc::channel();
    let (go_tx, go) = mpsc::channel::<()>();
    let queued = pool.install(move || {
        let queued = flock::spawn_fifo(|| 1);
        // Pushed after the FIFO trigger, so popped first: it holds the only worker.
        flock::submit(move || {
            started_tx.send(()).unwrap();
            go.recv().unwrap();
        })
        .unwrap();
        queued
    });
    started.recv().unwrap();
    assert!(queued.cancel());
    std::thread::scope(|s| {
        s.spawn(|| {
            while !pool.is_shutdown() {
                std::thread::yield_now();
            }
            go_tx.send(()).unwrap();
        });
        assert_eq!(
            pool.shutdown_now().unwrap(),
            0,
            "the cancel already took it"
        );
    });
    assert!(matches!(queued.join(), Err(flock::JoinError::Cancelled)));
    let stats = pool.stats();
    assert_eq!(stats.dropped, 1);
    assert_eq!(stats.completed, 2, "install's job and the blocker");
}
