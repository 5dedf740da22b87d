//! Code written for rayon or tokio finds the same names with the same meaning (issue 38,
//! item 6): `in_place_scope(_fifo)`, `join_context`, the thread queries, a free `broadcast`
//! with its context, `workers(0)`, `JoinError`'s tokio-shaped queries, `wait_for` on pools
//! and groups; and `Pool::running` agrees with a `wait` that just returned.

mod common;

use common::{named, stall_all, thread_name, watchdog};
use flock::{GroupError, JoinError, Pool, TaskGroup, WaitError};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

#[test]
fn in_place_scope_runs_its_body_here_and_its_tasks_in_the_current_pool() {
    let pool = named("ips", 2);
    let here = thread::current().id();
    let names = Mutex::new(Vec::new());
    // Pool::in_place_scope: this pool's workers run the tasks.
    let body_here = pool.in_place_scope(|s| {
        for _ in 0..8 {
            s.spawn(|_| names.lock().unwrap().push(thread_name()));
        }
        thread::current().id() == here
    });
    assert!(body_here);
    let fifo_here = pool.in_place_scope_fifo(|s| {
        s.spawn(|_| names.lock().unwrap().push(thread_name()));
        thread::current().id() == here
    });
    assert!(fifo_here);
    // The free form on a worker of `pool`: its tasks stay in `pool`.
    let (worker, body_on_worker) = pool.install(|| {
        let worker = thread::current().id();
        let body = flock::in_place_scope(|s| {
            s.spawn(|_| names.lock().unwrap().push(thread_name()));
            thread::current().id()
        });
        flock::in_place_scope_fifo(|s| s.spawn(|_| names.lock().unwrap().push(thread_name())));
        (worker, body)
    });
    assert_eq!(worker, body_on_worker);
    let names = names.into_inner().unwrap();
    assert_eq!(names.len(), 11);
    assert!(names.iter().all(|n| n.starts_with("ips-")), "{names:?}");
    // From a plain thread: the global pool's workers.
    let index = Mutex::new(None);
    let outside_here = flock::in_place_scope(|s| {
        s.spawn(|_| *index.lock().unwrap() = Some(flock::current_thread_index()));
        thread::current().id() == here
    });
    assert!(outside_here);
    assert!(matches!(index.into_inner().unwrap(), Some(Some(_))));
}

#[test]
fn join_context_says_whether_each_half_moved() {
    // From outside any pool both halves run on the global pool.
    let caller = thread::current().id();
    let (a, b) = flock::join_context(
        |ctx| (ctx.migrated(), thread::current().id()),
        |ctx| (ctx.migrated(), thread::current().id()),
    );
    assert_eq!(a, (true, a.1));
    assert_eq!(b, (true, b.1));
    assert_ne!(a.1, caller);
    // On a worker: the first half runs right here; the second says whether it was stolen.
    let pool = named("jc", 2);
    for _ in 0..50 {
        let (a, b) = pool.install(|| {
            let here = thread::current().id();
            let (a, b) = flock::join_context(
                |ctx| ctx.migrated(),
                |ctx| (ctx.migrated(), thread::current().id()),
            );
            (a, (b.0, b.1 != here))
        });
        assert!(!a);
        assert_eq!(
            b.0, b.1,
            "migrated() is true exactly when it ran on another thread"
        );
    }
}

#[test]
fn thread_queries_under_rayons_names() {
    let pool = named("tq", 3);
    assert_eq!(flock::current_thread_index(), None);
    assert_eq!(pool.install(flock::current_num_threads), 3);
    let index = pool.install(flock::current_thread_index);
    assert!(matches!(index, Some(0..=2)));
    assert!(flock::max_num_threads() >= 3);
    assert!(matches!(
        Pool::builder()
            .workers(flock::max_num_threads() + 1)
            .build(),
        Err(flock::BuildError::TooManyWorkers { .. })
    ));
    assert_eq!(flock::current_thread_has_pending_tasks(), None);
    let pool1 = named("tq1", 1);
    let seen = pool1.install(|| {
        let before = flock::current_thread_has_pending_tasks();
        let child = flock::spawn(|| ());
        let after = flock::current_thread_has_pending_tasks();
        child.join().unwrap(); // runs it here (one worker)
        let done = flock::current_thread_has_pending_tasks();
        (before, after, done)
    });
    assert_eq!(seen, (Some(false), Some(true), Some(false)));
}

#[test]
fn free_broadcast_runs_on_every_worker_of_the_current_pool_with_a_context() {
    let pool = named("bc", 3);
    let seen =
        pool.install(|| flock::broadcast(|ctx| (ctx.index(), ctx.num_threads(), thread_name())));
    assert_eq!(seen.len(), 3);
    for (i, (index, count, name)) in seen.into_iter().enumerate() {
        assert_eq!((index, count), (i, 3));
        assert_eq!(name, format!("bc-{i}"));
    }
    let global = flock::broadcast(|ctx: flock::BroadcastContext<'_>| ctx.num_threads());
    assert_eq!(global.len(), flock::global().workers());
    assert!(global.iter().all(|&n| n == global.len()));
}

#[test]
fn workers_zero_means_the_default() {
    let cpus = thread::available_parallelism().map_or(1, usize::from);
    let pool = Pool::builder().workers(0).build().unwrap();
    assert_eq!(pool.workers(), cpus);
    assert_eq!(pool.spawn(|| 5).join().unwrap(), 5);
}

#[test]
fn running_is_zero_once_wait_returned() {
    watchdog(60, "running after wait", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        for round in 0..200 {
            for _ in 0..4 {
                pool.submit(|| {
                    std::hint::black_box((0..200u64).sum::<u64>());
                })
                .unwrap();
            }
            pool.wait().unwrap();
            assert_eq!(pool.running(), 0, "round {round}");
        }
    });
}

#[test]
fn join_error_has_tokios_queries() {
    let pool = Pool::builder().workers(1).build().unwrap();
    let panicked = pool.spawn(|| -> u8 { panic!("p") }).join().unwrap_err();
    assert!(panicked.is_panic() && !panicked.is_cancelled());
    let payload = panicked.try_into_panic().unwrap();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"p"));

    let gate = stall_all(&pool);
    let queued = pool.spawn(|| 1);
    assert!(queued.cancel());
    let cancelled = queued.join().unwrap_err();
    assert!(cancelled.is_cancelled() && !cancelled.is_panic());
    assert!(matches!(
        cancelled.try_into_panic(),
        Err(JoinError::Cancelled)
    ));
    let purged = pool.spawn(|| 2);
    assert_eq!(pool.purge(), 1);
    assert!(purged.join().unwrap_err().is_cancelled());
    gate.open();

    pool.shutdown().unwrap();
    let refused = pool.spawn(|| 3).join().unwrap_err();
    assert!(!refused.is_cancelled() && !refused.is_panic());
}

#[test]
fn wait_for_answers_a_result_on_pools_and_groups() {
    let pool = Pool::builder().workers(1).build().unwrap();
    let group = TaskGroup::new(&pool);
    let gate = stall_all(&pool);
    group.spawn(|| ());
    let short = Duration::from_millis(5);
    let pool_answer: Result<(), WaitError> = pool.wait_for(short);
    let group_answer: Result<(), GroupError> = group.wait_for(short);
    assert_eq!(pool_answer, Err(WaitError::Timeout));
    assert_eq!(group_answer, Err(GroupError::Timeout));
    gate.open();
    assert_eq!(group.wait_for(Duration::from_secs(60)), Ok(()));
    assert_eq!(pool.wait_for(Duration::from_secs(60)), Ok(()));
}
