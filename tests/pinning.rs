//! Pinning workers to cores (the `pin` feature, on by default).
#![cfg(feature = "pin")]

mod common;

use flock::{BuildError, Pool, ResizeError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The CPUs the calling thread may run on, as the kernel reports them.
fn allowed_cpus() -> String {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

fn cores() -> Vec<usize> {
    core_ids()
}

fn core_ids() -> Vec<usize> {
    // The same list flock pins from: cores this process may run on.
    let list = allowed_cpus();
    let mut out = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

#[test]
#[cfg(target_os = "linux")]
fn pin_workers_pins_worker_i_to_the_ith_allowed_cpu() {
    let available = cores();
    let n = available.len() + 1; // one more than cores, to see the wrap-around
    let pool = Pool::builder()
        .workers(n)
        .pin_workers(true)
        .build()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    // One task per worker is not guaranteed by stealing, so ask every worker through its
    // start hook instead: rebuild with a hook that records the mask.
    drop(pool);
    let pool = Pool::builder()
        .workers(n)
        .pin_workers(true)
        .on_worker_start(move |i| tx.send((i, allowed_cpus())).unwrap())
        .build()
        .unwrap();
    let mut seen: Vec<(usize, String)> = (0..n).map(|_| rx.recv().unwrap()).collect();
    seen.sort();
    for (i, mask) in seen {
        assert_eq!(
            mask,
            available[i % available.len()].to_string(),
            "worker {i}"
        );
    }
    pool.shutdown().unwrap();
}

#[test]
#[cfg(target_os = "linux")]
fn pin_to_an_explicit_list() {
    let first = cores()[0];
    let (tx, rx) = std::sync::mpsc::channel();
    let pool = Pool::builder()
        .workers(2)
        .pin_to([first])
        .on_worker_start(move |_| tx.send(allowed_cpus()).unwrap())
        .build()
        .unwrap();
    for _ in 0..2 {
        assert_eq!(rx.recv().unwrap(), first.to_string());
    }
    pool.shutdown().unwrap();
}

#[test]
fn a_core_that_does_not_exist_is_a_build_error() {
    let err = Pool::builder()
        .workers(1)
        .pin_to([usize::MAX / 2])
        .build()
        .unwrap_err();
    match &err {
        BuildError::UnknownCore { core, available } => {
            assert_eq!(*core, usize::MAX / 2);
            assert!(!available.is_empty());
        }
        other => panic!("expected UnknownCore, got {other:?}"),
    }
    assert!(err.to_string().contains("available cores"));
}

#[test]
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn the_refusing_thread_cannot_pin() {
    let core = cores()[0];
    let id = core_affinity::CoreId { id: core };
    assert!(!common::refuse::pinning(move || {
        core_affinity::set_for_current(id)
    }));
    assert!(
        std::thread::spawn(move || core_affinity::set_for_current(id))
            .join()
            .unwrap()
    );
}

/// The ids of this process's threads whose names start with `prefix`.
#[cfg(target_os = "linux")]
fn threads_named(prefix: &str) -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| {
            let t = t.ok()?;
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            comm.starts_with(prefix)
                .then(|| t.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

#[test]
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn a_refused_pin_fails_the_build_and_leaves_no_thread() {
    common::watchdog(60, "a build whose pinning is refused", || {
        let (started, stopped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (s, t) = (started.clone(), stopped.clone());
        let err = common::refuse::pinning(move || {
            Pool::builder()
                .workers(2)
                .pin_workers(true)
                .thread_name(|i| format!("pinrefused-{i}"))
                .on_worker_start(move |_| {
                    s.fetch_add(1, Ordering::SeqCst);
                })
                .on_worker_stop(move |_| {
                    t.fetch_add(1, Ordering::SeqCst);
                })
                .build()
                .unwrap_err()
        });
        let core = cores()[0];
        assert!(
            matches!(err, BuildError::PinFailed { worker: 0, core: c } if c == core),
            "{err:?}"
        );
        assert!(err.to_string().contains("pin"), "{err}");
        // The build stopped what it started: every thread is gone, and each one that ran its
        // start hook ran its stop hook.
        assert!(
            threads_named("pinrefused-").is_empty(),
            "{:?}",
            threads_named("pinrefused-")
        );
        assert_eq!(
            started.load(Ordering::SeqCst),
            stopped.load(Ordering::SeqCst)
        );
    });
}

#[test]
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn a_grow_whose_pin_is_refused_adds_no_worker_and_the_pool_goes_on() {
    common::watchdog(60, "a grow whose pinning is refused", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .max_workers(3)
                .pin_workers(true)
                .build()
                .unwrap(),
        );
        let p = pool.clone();
        let err = common::refuse::pinning(move || p.resize(3).unwrap_err());
        assert!(
            matches!(err, ResizeError::PinFailed { worker: 1, .. }),
            "{err:?}"
        );
        common::refuse::one_worker_left_then_grow(&pool);
        Arc::try_unwrap(pool).ok().unwrap().shutdown().unwrap();
    });
}

/// A thread whose pinning failed is never one of the pool's workers, not even for the moment
/// before it leaves: a grow that comes then starts a thread of its own for that slot. Here the
/// refused thread is held in its start hook, if it runs one, while the pool grows again from
/// a thread that may pin.
#[test]
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn a_grow_right_after_a_refused_one_starts_its_own_worker() {
    common::watchdog(60, "a grow right after a refused one", || {
        let gate = Arc::new(common::Gate::new());
        let held = gate.clone();
        let first = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .max_workers(2)
                .pin_workers(true)
                .thread_name(|i| format!("pinagain-{i}"))
                .on_worker_start(move |i| {
                    if i == 1 && first.swap(false, Ordering::SeqCst) {
                        held.wait();
                    }
                })
                .build()
                .unwrap(),
        );
        let p = pool.clone();
        let (err, refused_threads) = common::refuse::pinning(move || {
            let err = p.resize(2).unwrap_err();
            (err, threads_named("pinagain-1"))
        });
        assert!(
            matches!(err, ResizeError::PinFailed { worker: 1, .. }),
            "{err:?}"
        );
        let p = pool.clone();
        let grow = std::thread::spawn(move || p.resize(2));
        // A grow that waits for the refused thread to leave needs the gate open first.
        std::thread::sleep(std::time::Duration::from_millis(50));
        gate.open();
        grow.join().unwrap().unwrap();
        assert_eq!(pool.workers(), 2);
        // Once the refused thread is gone, slot 1 still has a worker: the grow's own.
        common::eventually(|| {
            let now = threads_named("pinagain-1");
            refused_threads.iter().all(|t| !now.contains(t))
        });
        assert_eq!(threads_named("pinagain-1").len(), 1);
        assert_eq!(pool.broadcast(|i| i), [0, 1]);
        Arc::try_unwrap(pool).ok().unwrap().shutdown().unwrap();
    });
}

/// Broadcasts racing grows that fail to pin call worker 0 alone: a slot whose thread could
/// not pin is never `Running`, so no call waits in a mailbox that nobody will read (the
/// broadcast would hang), and a grow never counts such a thread as a worker (it would then
/// fail at worker 2, or not at all).
#[test]
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn broadcasts_racing_refused_grows_call_only_the_workers() {
    common::watchdog(120, "broadcasts racing refused grows", || {
        let pool = Arc::new(
            Pool::builder()
                .workers(1)
                .max_workers(4)
                .pin_workers(true)
                .build()
                .unwrap(),
        );
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (p, d) = (pool.clone(), done.clone());
        let grower = std::thread::spawn(move || {
            common::refuse::pinning(move || {
                let mut failed = 0;
                while !d.load(Ordering::Relaxed) {
                    match p.resize(4) {
                        Err(ResizeError::PinFailed { worker: 1, .. }) => failed += 1,
                        other => panic!("{other:?}"),
                    }
                }
                failed
            })
        });
        for _ in 0..2000 {
            let ran = AtomicUsize::new(0);
            let indices = pool.broadcast(|i| {
                assert_eq!(flock::current_worker_index(), Some(i));
                ran.fetch_add(1, Ordering::Relaxed);
                i
            });
            assert_eq!(indices, [0]);
            assert_eq!(ran.into_inner(), 1);
        }
        done.store(true, Ordering::Relaxed);
        let failed = grower.join().unwrap();
        assert!(failed > 0);
        assert_eq!(pool.workers(), 1);
        Arc::try_unwrap(pool).ok().unwrap().shutdown().unwrap();
    });
}
