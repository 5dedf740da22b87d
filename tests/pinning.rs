//! Pinning workers to cores (the `pin` feature, on by default).
#![cfg(feature = "pin")]

use flock::{BuildError, Pool};

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
