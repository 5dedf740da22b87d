//! What the pool does when the OS refuses it a thread: a grow keeps the workers it had, a
//! build fails cleanly, and `Backpressure::SpawnThread` runs the task on its caller rather
//! than lose it. The refusals come from a seccomp filter on one thread (`common::refuse`).
#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]

mod common;

use common::{stall_all, watchdog};
use flock::{Backpressure, BuildError, Pool, ResizeError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

#[test]
fn the_refusing_thread_cannot_start_threads() {
    let err = common::refuse::threads(|| std::thread::Builder::new().spawn(|| ()).unwrap_err());
    assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock, "{err}");
    std::thread::spawn(|| ()).join().unwrap();
}

#[test]
fn a_build_refused_its_threads_fails_and_runs_no_hook() {
    watchdog(60, "a build refused its threads", || {
        let hooks = Arc::new(AtomicUsize::new(0));
        let (a, b) = (hooks.clone(), hooks.clone());
        let err = common::refuse::threads(move || {
            Pool::builder()
                .workers(2)
                .on_worker_start(move |_| {
                    a.fetch_add(1, Ordering::SeqCst);
                })
                .on_worker_stop(move |_| {
                    b.fetch_add(1, Ordering::SeqCst);
                })
                .build()
                .unwrap_err()
        });
        assert!(matches!(err, BuildError::ThreadSpawn(_)), "{err:?}");
        assert_eq!(hooks.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn a_grow_refused_its_threads_keeps_the_workers_it_had() {
    watchdog(60, "a grow refused its threads", || {
        let pool = Arc::new(Pool::builder().workers(1).max_workers(3).build().unwrap());
        let p = pool.clone();
        let err = common::refuse::threads(move || p.resize(3).unwrap_err());
        assert!(matches!(&err, ResizeError::ThreadSpawn(_)), "{err:?}");
        common::refuse::one_worker_left_then_grow(&pool);
        Arc::try_unwrap(pool).ok().unwrap().shutdown().unwrap();
    });
}

/// `SpawnThread` with the pool full: the OS refuses the helper, so the task runs inside the
/// submit, on the submitting thread, and is counted as run by its caller; the helper slot
/// it held is given back, so the next full submit gets a helper once threads may start.
#[test]
fn spawn_thread_runs_the_task_on_its_caller_when_the_os_refuses_the_thread() {
    watchdog(60, "spawn thread refused", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .capacity(1)
                .when_full(Backpressure::SpawnThread)
                .max_spawned_threads(1)
                .build()
                .unwrap(),
        );
        let gate = stall_all(&pool);
        pool.submit(|| ()).unwrap(); // the queue is full from here
        let p = pool.clone();
        let (on, caller) = common::refuse::threads(move || {
            let (tx, rx) = mpsc::channel();
            p.submit(move || tx.send(std::thread::current().id()).unwrap())
                .unwrap();
            // It ran before the submit returned.
            (rx.try_recv().unwrap(), std::thread::current().id())
        });
        assert_eq!(on, caller);
        let s = pool.stats();
        let counted_then = (s.caller_runs, s.spawned_thread);
        // The helper slot was given back: with threads allowed, the next one gets a helper.
        let (tx, rx) = mpsc::channel();
        pool.submit(move || {
            tx.send(std::thread::current().name().map(str::to_owned))
                .unwrap()
        })
        .unwrap();
        assert_eq!(rx.recv().unwrap().as_deref(), Some("flock-helper"));
        gate.open();
        pool.wait().unwrap();
        let s = pool.stats();
        // The counters (the `stats` feature; the counts `wait` needs are kept without it).
        if cfg!(feature = "stats") {
            assert_eq!(counted_then, (1, 0));
            assert_eq!((s.caller_runs, s.spawned_thread), (1, 1));
        }
        assert_eq!(s.submitted, s.completed);
        Arc::try_unwrap(pool).ok().unwrap().shutdown().unwrap();
    });
}

/// A pool built where the membarrier works, grown from a thread where it is refused: the new
/// worker's first park has it refused, so the pool falls back to fences, and that worker's
/// parks last at most a grace period until one has lasted it; from then on it parks as any
/// other, with no membarrier. The pool keeps running tasks that block after a local push
/// (the pattern the membarrier pairs with), and once idle it stays asleep: no worker wakes
/// by itself.
#[test]
fn a_worker_whose_membarrier_is_refused_falls_back_to_fences() {
    watchdog(120, "a refused membarrier", || {
        // Named apart: the other tests of this file run beside it, with `flock-worker-1`s
        // of their own, and the check below finds worker 1's thread by its name.
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .max_workers(2)
                .thread_name(|i| format!("refused-mb-{i}"))
                .build()
                .unwrap(),
        );
        if !pool.uses_membarrier() {
            eprintln!("no membarrier on this kernel: nothing to refuse");
            return;
        }
        let p = pool.clone();
        common::refuse::membarrier(move || p.resize(2)).unwrap();
        // Worker 1 parks while worker 0 is held awake: the first to park in its era, it must
        // issue the membarrier itself, and has it refused.
        let (hold, holder) = common::hold_worker_0(&pool);
        common::eventually(|| !pool.uses_membarrier());
        hold.open();
        holder.join().unwrap();
        common::refuse::block_on_what_they_push(&pool, 2000);
        // Worker 1 parks alone again (worker 0 held awake), so its era needs a membarrier of
        // its own: a park whose membarrier was refused may end once, by itself, after its
        // grace; then the refusal is settled and the idle worker stays asleep.
        let (hold, holder) = common::hold_worker_0(&pool);
        let parked = || pool.stats().per_worker[1].state == flock::WorkerState::Parked;
        common::eventually(parked);
        std::thread::sleep(std::time::Duration::from_millis(50));
        common::eventually(parked);
        // Now asleep with no timer. `wakeups` is a counter of the `stats` feature (0 without
        // it); the thread's context switches, from /proc, count without it: a park that
        // ended by itself (after its grace, or on a timer) and parked again adds some.
        let tid = common::thread_named("refused-mb-1").expect("worker 1's thread");
        common::eventually(|| common::asleep(tid));
        let (woke, switched) = (pool.stats().wakeups, common::context_switches(tid));
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(pool.stats().wakeups, woke, "an idle worker woke by itself");
        assert_eq!(
            common::context_switches(tid),
            switched,
            "an idle worker's thread ran"
        );
        hold.open();
        holder.join().unwrap();
        Arc::try_unwrap(pool).ok().unwrap().shutdown().unwrap();
    });
}

/// A pool built where the membarrier is refused uses fences from the start (docs/protocol.md,
/// "Local pushes and the asymmetric barrier") and runs tasks that block on what they pushed.
#[test]
fn a_pool_built_where_the_membarrier_is_refused_uses_fences() {
    watchdog(60, "a pool built without membarrier", || {
        let pool = common::refuse::membarrier(|| Pool::builder().workers(2).build().unwrap());
        assert!(!pool.uses_membarrier());
        common::refuse::block_on_what_they_push(&pool, 500);
        pool.shutdown().unwrap();
    });
}
