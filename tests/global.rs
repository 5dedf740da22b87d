//! The global pool: the free functions run tasks, one pool per process, FLOCK_WORKERS and
//! FLOCK_MEMBARRIER.
//!
//! The global pool is per process, so whatever must see it fresh (built under a given
//! FLOCK_WORKERS or FLOCK_MEMBARRIER, raced by its first callers, shut down) runs in a child
//! process: the test
//! re-runs this binary on `child_process_checks` alone with `FLOCK_GLOBAL_CHILD` naming the
//! case, and asserts on the child's exit status and output. Tests in this process only use
//! the pool, never shut it down.

mod common;

use common::watchdog;
use flock::{BuildError, WaitError};
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

/// Set in a child process to the name of the case it checks.
const CHILD_VAR: &str = "FLOCK_GLOBAL_CHILD";
/// The test that runs a child's checks; keep equal to the function's name.
const CHILD_TEST: &str = "child_process_checks";
/// What a child prints once its checks passed, so a parent knows they ran.
const CHILD_OK: &str = "flock-global-child: checks passed:";

#[test]
fn submit_runs_the_task() {
    watchdog(30, "global submit", || {
        let (tx, rx) = mpsc::channel();
        for i in 0..100u32 {
            let tx = tx.clone();
            flock::submit(move || tx.send(i).unwrap()).unwrap();
        }
        drop(tx);
        let mut got: Vec<u32> = rx.iter().collect();
        got.sort_unstable();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
    });
}

#[test]
fn spawn_runs_the_task_and_join_returns_its_value() {
    watchdog(30, "global spawn", || {
        let handles: Vec<_> = (0..100u64).map(|i| flock::spawn(move || i * 2)).collect();
        let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(total, 2 * 4950);
    });
}

#[test]
fn global_returns_the_same_pool_every_time() {
    let first = flock::global();
    assert!(std::ptr::eq(first, flock::global()));
    assert!(std::ptr::eq(first, flock::try_global().unwrap()));
    let from_a_thread = std::thread::spawn(|| flock::global() as *const flock::Pool as usize);
    assert_eq!(
        from_a_thread.join().unwrap(),
        first as *const flock::Pool as usize
    );
    // A task on the global pool sees the same pool too.
    let from_a_task = flock::spawn(|| flock::global() as *const flock::Pool as usize);
    assert_eq!(
        from_a_task.join().unwrap(),
        first as *const flock::Pool as usize
    );
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn concurrent_first_calls_get_one_pool() {
    expect_child_ok("race", None);
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn flock_workers_sets_the_worker_count() {
    expect_child_ok("workers_3", Some("3"));
    expect_child_ok("workers_3", Some(" 3\n"));
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn empty_flock_workers_means_the_default() {
    expect_child_ok("default_workers", Some(""));
    expect_child_ok("default_workers", None);
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn invalid_flock_workers_is_an_invalid_env_error_and_not_cached() {
    expect_child_ok("invalid", Some("0"));
    expect_child_ok("invalid", Some("abc"));
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn too_many_workers_is_the_builders_error() {
    expect_child_ok("too_many", Some("999999999"));
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn global_panics_naming_flock_workers() {
    for value in ["0", "abc"] {
        let out = run_child("panic", Some(value));
        assert!(
            !out.success,
            "FLOCK_WORKERS={value:?}: the child should panic\n{out}"
        );
        assert!(
            out.stderr
                .contains("flock: could not start the global pool: FLOCK_WORKERS=")
                && out.stderr.contains(&format!("{value:?} is not valid")),
            "FLOCK_WORKERS={value:?}: the panic names the variable and its value\n{out}"
        );
    }
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn flock_membarrier_0_turns_the_membarrier_off() {
    expect_child_ok_with("membarrier_off", None, Some("0"));
    expect_child_ok_with("membarrier_off", None, Some(" 0\n"));
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn flock_membarrier_1_empty_or_unset_is_the_default() {
    for value in [Some("1"), Some(""), None] {
        expect_child_ok_with("membarrier_default", None, value);
    }
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn invalid_flock_membarrier_is_an_invalid_env_error_and_not_cached() {
    expect_child_ok_with("invalid_membarrier", None, Some("yes"));
    expect_child_ok_with("invalid_membarrier", Some("2"), Some("2"));
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn the_global_pool_cannot_be_shut_down() {
    expect_child_ok("shutdown", None);
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn build_global_configures_the_pool_before_its_first_use() {
    // FLOCK_WORKERS=5 is not read: the builder's configuration is the pool's.
    expect_child_ok("build_global", Some("5"));
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn build_global_after_the_first_use_is_a_typed_error() {
    expect_child_ok("build_global_late", Some("2"));
}

#[test]
#[cfg_attr(miri, ignore = "spawns a child process")]
fn a_failed_build_global_leaves_the_pool_to_build_later() {
    expect_child_ok("build_global_invalid", Some("2"));
}

/// The child's side: does the checks of the case named by `FLOCK_GLOBAL_CHILD`, and nothing
/// when it is not set (the ordinary run of this binary).
#[test]
fn child_process_checks() {
    let Ok(case) = std::env::var(CHILD_VAR) else {
        return;
    };
    let workers = std::env::var("FLOCK_WORKERS").unwrap_or_default();
    match case.as_str() {
        "race" => child_race(),
        "workers_3" => assert_eq!(flock::global().workers(), 3),
        "default_workers" => {
            let cpus = std::thread::available_parallelism().map_or(1, usize::from);
            assert_eq!(flock::global().workers(), cpus);
        }
        "invalid" => child_invalid(&workers),
        "too_many" => {
            let err = flock::try_global().unwrap_err();
            assert!(
                matches!(
                    err,
                    BuildError::TooManyWorkers {
                        requested: 999_999_999,
                        ..
                    }
                ),
                "{err:?}"
            );
        }
        "panic" => {
            flock::global();
            unreachable!("global() returned under FLOCK_WORKERS={workers:?}");
        }
        "shutdown" => child_shutdown(),
        "build_global" => {
            flock::Pool::builder()
                .workers(3)
                .capacity(7)
                .build_global()
                .unwrap();
            assert_eq!(flock::global().workers(), 3);
            assert_eq!(flock::global().capacity(), 7);
            assert_eq!(flock::current_num_workers(), 3);
            let again = flock::Pool::builder().workers(1).build_global();
            assert!(
                matches!(again, Err(BuildError::GlobalAlreadyBuilt)),
                "{again:?}"
            );
            assert_eq!(flock::global().workers(), 3);
        }
        "build_global_late" => {
            assert_eq!(flock::spawn(|| 4).join().unwrap(), 4);
            let late = flock::Pool::builder().workers(3).build_global();
            assert!(
                matches!(late, Err(BuildError::GlobalAlreadyBuilt)),
                "{late:?}"
            );
            assert_eq!(flock::global().workers(), 2);
        }
        "build_global_invalid" => {
            let err = flock::Pool::builder().capacity(0).build_global();
            assert!(matches!(err, Err(BuildError::ZeroCapacity)), "{err:?}");
            assert_eq!(flock::global().workers(), 2); // built on first use, from the env
        }
        "membarrier_off" => {
            let pool = flock::global();
            assert!(!pool.uses_membarrier());
            // The fenced pairing still runs a join whose halves wait for each other.
            assert_eq!(pool.join(|| 1, || 2), (1, 2));
        }
        "membarrier_default" => {
            // The default is what the kernel grants a pool that asks (true on Linux 4.14+).
            let asked = flock::Pool::builder().workers(1).build().unwrap();
            assert_eq!(flock::global().uses_membarrier(), asked.uses_membarrier());
        }
        "invalid_membarrier" => child_invalid_membarrier(),
        other => panic!("unknown {CHILD_VAR} case {other:?}"),
    }
    println!("{CHILD_OK} {case}");
}

/// Eight threads make the process's first calls at once; all get the same pool.
fn child_race() {
    let barrier = Arc::new(Barrier::new(8));
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                flock::global() as *const flock::Pool as usize
            })
        })
        .collect();
    let pools: Vec<usize> = callers.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(pools.iter().all(|&p| p == pools[0]), "{pools:x?}");
    assert_eq!(pools[0], flock::global() as *const flock::Pool as usize);
}

/// An invalid FLOCK_WORKERS is `InvalidEnv` holding its value, every time it is tried; once
/// fixed, the next call builds the pool.
fn child_invalid(workers: &str) {
    for _ in 0..2 {
        match flock::try_global() {
            Err(BuildError::InvalidEnv { var, value }) => {
                assert_eq!((var, value.as_str()), ("FLOCK_WORKERS", workers));
            }
            other => panic!("FLOCK_WORKERS={workers:?} gave {other:?}"),
        }
    }
    let panic = std::panic::catch_unwind(flock::global).unwrap_err();
    let message = panic.downcast_ref::<String>().expect("a formatted message");
    assert!(message.contains("FLOCK_WORKERS"), "{message}");
    // Only this test runs in the child, so nothing else reads the environment meanwhile.
    std::env::set_var("FLOCK_WORKERS", "2");
    assert_eq!(flock::try_global().unwrap().workers(), 2);
}

/// An invalid FLOCK_MEMBARRIER is `InvalidEnv` naming it, whose message says what it takes;
/// once fixed, the next call builds the pool with it.
fn child_invalid_membarrier() {
    let set = std::env::var("FLOCK_MEMBARRIER").unwrap();
    for _ in 0..2 {
        match flock::try_global() {
            Err(err) if matches!(err, BuildError::InvalidEnv { .. }) => {
                let BuildError::InvalidEnv { var, value } = &err else {
                    unreachable!()
                };
                assert_eq!((*var, value.as_str()), ("FLOCK_MEMBARRIER", set.as_str()));
                let message = err.to_string();
                assert!(
                    message.contains(&format!("FLOCK_MEMBARRIER={set:?} is not valid"))
                        && message.contains("set it to 0"),
                    "{message}"
                );
            }
            other => panic!("FLOCK_MEMBARRIER={set:?} gave {other:?}"),
        }
    }
    // Only this test runs in the child, so nothing else reads the environment meanwhile.
    std::env::set_var("FLOCK_MEMBARRIER", "0");
    assert!(!flock::try_global().unwrap().uses_membarrier());
}

/// `global().shutdown()` (and its two siblings) change nothing and say why; the free
/// functions' tasks still run.
fn child_shutdown() {
    let (tx, rx) = mpsc::channel();
    flock::submit(move || tx.send(1).unwrap()).unwrap();
    assert_eq!(flock::global().shutdown(), Err(WaitError::GlobalPool));
    assert_eq!(
        flock::global().shutdown_timeout(Duration::from_secs(1)),
        Err(WaitError::GlobalPool)
    );
    assert_eq!(flock::global().shutdown_now(), Err(WaitError::GlobalPool));
    assert!(!flock::global().is_shutdown());
    assert_eq!(rx.recv().unwrap(), 1);
    let (tx, rx) = mpsc::channel();
    flock::submit(move || tx.send(2).unwrap()).unwrap();
    assert_eq!(rx.recv().unwrap(), 2);
    match flock::spawn(|| 3).join() {
        Ok(3) => {}
        other => panic!("{other:?}"),
    }
    flock::global().wait().unwrap();
    // From inside a task too.
    let inside = flock::spawn(|| flock::global().shutdown()).join().unwrap();
    assert_eq!(inside, Err(WaitError::GlobalPool));
}

/// How a child process ended.
struct ChildOutput {
    success: bool,
    status: String,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for ChildOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "child {}\n--- stdout\n{}\n--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// Runs `child_process_checks` in a fresh process for `case`, with FLOCK_WORKERS set to
/// `workers` or unset and FLOCK_MEMBARRIER unset.
fn run_child(case: &str, workers: Option<&str>) -> ChildOutput {
    run_child_with(case, workers, None)
}

/// Runs `child_process_checks` in a fresh process for `case`, with FLOCK_WORKERS and
/// FLOCK_MEMBARRIER set to `workers` and `membarrier` or unset. A child still running after
/// 60 s is killed and fails the test (a hang guard, not a timing check).
fn run_child_with(case: &str, workers: Option<&str>, membarrier: Option<&str>) -> ChildOutput {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, case)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match workers {
        Some(value) => cmd.env("FLOCK_WORKERS", value),
        None => cmd.env_remove("FLOCK_WORKERS"),
    };
    match membarrier {
        Some(value) => cmd.env("FLOCK_MEMBARRIER", value),
        None => cmd.env_remove("FLOCK_MEMBARRIER"),
    };
    let mut child = cmd.spawn().expect("start the child");
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("watchdog: child {case:?} did not finish within 60s (hang)");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    ChildOutput {
        success: status.success(),
        status: status.to_string(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Reads a pipe to its end on a thread of its own, so a chatty child never blocks on it.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

/// Runs the child for `case` and asserts it passed its checks.
fn expect_child_ok(case: &str, workers: Option<&str>) {
    expect_child_ok_with(case, workers, None);
}

/// Runs the child for `case` with both variables as given and asserts it passed its checks.
fn expect_child_ok_with(case: &str, workers: Option<&str>, membarrier: Option<&str>) {
    let out = run_child_with(case, workers, membarrier);
    assert!(
        out.success && out.stdout.contains(&format!("{CHILD_OK} {case}")),
        "case {case:?} with FLOCK_WORKERS={workers:?}, FLOCK_MEMBARRIER={membarrier:?}\n{out}"
    );
}
