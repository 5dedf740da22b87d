//! Where a scope's body runs, as rayon's: `Pool::scope` and `scope_fifo` run it inside the
//! pool (on one of its workers, as `install` does), so the free functions called in it
//! (`flock::join`, `flock::spawn`, `flock::scope`, `current_worker_index`) reach that pool;
//! `Pool::in_place_scope` runs it on the calling thread. Called from a worker of the same
//! pool, `scope` runs the body right there; from a worker of another pool, that worker runs
//! its own pool's tasks while it waits. Neither deadlocks a one-worker pool.
//! From outside a paused pool, `scope`'s body waits for `resume`, as `install`'s does.

mod common;

use common::{named, thread_name, watchdog};
use flock::{Pool, Scope};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Where the free functions called in a scope's body ran: the body's thread, the threads of
/// both halves of a `flock::join`, of a `flock::spawn`ed task and of a nested `flock::scope`'s
/// body, and `current_worker_index()` in the body.
#[derive(Debug)]
struct Seen {
    body: String,
    index: Option<usize>,
    join: (String, String),
    spawned: String,
    nested: String,
    task: String,
}

/// Fills a `Seen` from inside a scope's body, and spawns one task into the scope, which
/// notes its own thread.
fn look_around<'scope>(s: &Scope<'scope>, task: &'scope std::sync::Mutex<String>) -> Seen {
    s.spawn(move |_| *task.lock().unwrap() = thread_name());
    Seen {
        body: thread_name(),
        index: flock::current_worker_index(),
        join: flock::join(thread_name, thread_name),
        spawned: flock::spawn(thread_name).join().unwrap(),
        nested: flock::scope(|_| thread_name()),
        task: String::new(),
    }
}

fn assert_all_on(seen: &Seen, pool: &str) {
    let on = |name: &str| name.starts_with(&format!("{pool}-"));
    assert!(on(&seen.body), "the body ran on {seen:?}");
    assert!(matches!(seen.index, Some(0 | 1)), "{seen:?}");
    assert!(
        on(&seen.join.0) && on(&seen.join.1),
        "flock::join: {seen:?}"
    );
    assert!(on(&seen.spawned), "flock::spawn: {seen:?}");
    assert!(on(&seen.nested), "flock::scope: {seen:?}");
    assert!(on(&seen.task), "the scope's task: {seen:?}");
}

#[test]
fn free_functions_in_a_pool_scope_reach_that_pool() {
    watchdog(30, "p2.scope", || {
        let p2 = named("p2", 2);
        let task = std::sync::Mutex::new(String::new());
        let mut seen = p2.scope(|s| look_around(s, &task));
        seen.task = task.into_inner().unwrap();
        assert_all_on(&seen, "p2");
    });
}

#[test]
fn free_functions_in_a_pool_scope_fifo_reach_that_pool() {
    watchdog(30, "p2.scope_fifo", || {
        let p2 = named("p2f", 2);
        let task = std::sync::Mutex::new(String::new());
        let mut seen = p2.scope_fifo(|s| look_around(s, &task));
        seen.task = task.into_inner().unwrap();
        assert_all_on(&seen, "p2f");
    });
}

/// Spawns a task noting its thread into `task`; returns the body's thread and worker index.
fn where_the_body_runs<'scope>(
    s: &Scope<'scope>,
    task: &'scope std::sync::Mutex<String>,
) -> (thread::ThreadId, Option<usize>) {
    s.spawn(move |_| *task.lock().unwrap() = thread_name());
    (thread::current().id(), flock::current_worker_index())
}

/// `in_place_scope` runs its body on the calling thread (outside any pool here, so the free
/// functions in the body reach the global pool) and its tasks on the pool's workers.
#[test]
fn an_in_place_scope_body_runs_on_the_caller() {
    watchdog(30, "p2.in_place_scope", || {
        let p2 = named("ips", 2);
        let here = thread::current().id();
        for fifo in [false, true] {
            let task = std::sync::Mutex::new(String::new());
            let (body_on, index) = if fifo {
                p2.in_place_scope_fifo(|s| where_the_body_runs(s, &task))
            } else {
                p2.in_place_scope(|s| where_the_body_runs(s, &task))
            };
            assert_eq!((body_on, index), (here, None), "fifo: {fifo}");
            let task = task.into_inner().unwrap();
            assert!(task.starts_with("ips-"), "the task ran on {task:?}");
        }
    });
}

/// The free `flock::scope`, called outside any pool, runs its body on a worker of the global
/// pool (rayon's `scope` does too); `flock::in_place_scope` keeps it on the caller.
#[test]
fn the_free_scope_from_outside_runs_its_body_in_the_global_pool() {
    watchdog(30, "flock::scope from outside", || {
        let here = thread::current().id();
        let (on, index) = flock::scope(|_| (thread::current().id(), flock::current_worker_index()));
        assert_ne!(on, here, "the body ran on the caller");
        assert!(index.is_some(), "the body ran off the workers");
        let on = flock::scope_fifo(|_| thread::current().id());
        assert_ne!(on, here, "the fifo body ran on the caller");
        let (on, index) =
            flock::in_place_scope(|_| (thread::current().id(), flock::current_worker_index()));
        assert_eq!((on, index), (here, None));
    });
}

/// From one of the pool's own tasks, on a one-worker pool: the body runs right there, on
/// the worker, and the scope's tasks, a nested scope's too, run while it waits for them.
#[test]
fn a_scope_from_a_worker_of_the_same_one_worker_pool_runs_in_place() {
    watchdog(30, "scope from its own pool's worker", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let p = pool.clone();
        let (task_thread, body_thread, ran) = pool
            .spawn(move || {
                let ran = AtomicUsize::new(0);
                let body_thread = p.scope(|s| {
                    let (p, ran) = (&p, &ran);
                    for _ in 0..10 {
                        s.spawn(move |_| {
                            p.scope(|inner| {
                                inner.spawn(move |_| {
                                    ran.fetch_add(1, SeqCst);
                                });
                            });
                        });
                    }
                    thread::current().id()
                });
                (thread::current().id(), body_thread, ran.into_inner())
            })
            .join()
            .unwrap();
        assert_eq!(body_thread, task_thread, "the body left the task's worker");
        assert_eq!(ran, 10);
    });
}

/// From outside, on a one-worker pool: the body takes the only worker, which then runs the
/// scope's tasks itself while it waits at the scope's end.
#[test]
fn a_scope_body_on_the_only_worker_runs_its_tasks_while_it_waits() {
    watchdog(30, "scope on a one-worker pool", || {
        let pool = named("one", 1);
        let ran = AtomicUsize::new(0);
        let on: Vec<String> = pool.scope(|s| {
            let ran = &ran;
            for _ in 0..100 {
                s.spawn(move |s| {
                    s.spawn(move |_| {
                        ran.fetch_add(1, SeqCst);
                    });
                });
            }
            vec![thread_name()]
        });
        assert_eq!(on, ["one-0"]);
        assert_eq!(ran.into_inner(), 100);
    });
}

/// From a task of pool A (one worker) into pool B (one worker): B's worker runs the body;
/// A's worker, blocked in the call, runs A's tasks meanwhile, so a body that waits for a task
/// of A completes; and scopes nested back into A from B's tasks complete too.
#[test]
fn a_scope_from_a_worker_of_another_pool_runs_in_that_pool() {
    watchdog(30, "scope from another pool's worker", || {
        let a = Arc::new(named("a", 1));
        let b = Arc::new(named("b", 1));
        let (a2, b2) = (a.clone(), b.clone());
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let (caller, body, from_a) = a
            .spawn(move || {
                let caller = thread_name();
                let (body, from_a) = b2.scope(|s| {
                    for _ in 0..3 {
                        let (a2, h) = (&a2, &h);
                        s.spawn(move |_| {
                            a2.scope(|inner| {
                                inner.spawn(move |_| {
                                    h.fetch_add(1, SeqCst);
                                });
                            });
                        });
                    }
                    // Only A's worker can run this, and it is blocked in `b2.scope`.
                    let from_a = a2.spawn(thread_name).join().unwrap();
                    (thread_name(), from_a)
                });
                (caller, body, from_a)
            })
            .join()
            .unwrap();
        assert_eq!((caller.as_str(), body.as_str()), ("a-0", "b-0"));
        assert_eq!(from_a, "a-0");
        assert_eq!(hits.load(SeqCst), 3);
    });
}

/// From outside a paused pool, `scope`'s body is a job from outside like `install`'s: it
/// starts after `resume`. `in_place_scope`'s body runs at once, on the caller.
#[test]
fn a_scope_from_outside_a_paused_pool_starts_its_body_after_resume() {
    watchdog(30, "scope from outside a paused pool", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        pool.pause();
        let started = Arc::new(AtomicBool::new(false));
        let (p, st) = (pool.clone(), started.clone());
        let caller = thread::spawn(move || p.scope(|_| st.store(true, SeqCst)));
        thread::sleep(Duration::from_millis(50));
        assert!(!started.load(SeqCst), "the body started while paused");
        assert!(
            pool.in_place_scope(|_| true),
            "the in-place body waits for nothing"
        );
        pool.resume();
        caller.join().unwrap();
        assert!(started.load(SeqCst));
    });
}
