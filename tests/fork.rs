//! The global pool after `fork()`: the child has none of the parent's worker threads, so it
//! builds a fresh global pool on first use and its tasks run. In a binary of its own: the
//! child must not inherit other tests' pools mid-flight.
#![cfg(unix)]

mod common;

use common::watchdog;
use std::time::{Duration, Instant};

/// The child's part: a fresh global pool that runs tasks. Exit status 0 when all holds.
fn in_child(parent_pool: usize) -> i32 {
    let fresh = std::ptr::from_ref(flock::global()) as usize != parent_pool;
    let answer = flock::spawn(|| 6 * 7).join().ok();
    let (tx, rx) = std::sync::mpsc::channel();
    flock::submit(move || tx.send(()).unwrap()).unwrap();
    let submitted_ran = rx.recv_timeout(Duration::from_secs(10)).is_ok();
    let waited = flock::global().wait().is_ok();
    match (fresh, answer, submitted_ran, waited) {
        (true, Some(42), true, true) => 0,
        (false, ..) => 3,
        _ => 4,
    }
}

/// Waits for `pid` up to `limit`, killing it if it runs longer; its exit status, or `None`.
fn wait_for_child(pid: libc::pid_t, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    let mut status = 0;
    loop {
        // SAFETY: `pid` is our child; `status` is a valid out-pointer.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(done >= 0, "waitpid failed");
        if done == pid {
            return libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        }
        if Instant::now() > deadline {
            // SAFETY: killing and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_global_pool_is_rebuilt_in_a_forked_child() {
    // The parent uses the global pool first: its workers exist in the parent only.
    assert_eq!(flock::spawn(|| 1).join().unwrap(), 1);
    let parent_pool = std::ptr::from_ref(flock::global()) as usize;
    // Fork while the pool is idle (see the module docs of flock::global): every worker has
    // parked, then a little more, so that none is inside a lock on its way there. (With the
    // workers asleep in parking_lot's table, 2 forks in 8 hung the child; they sleep on
    // their own futexes now: 0 in 60.)
    watchdog(20, "the global pool's workers parking", || {
        common::all_parked(flock::global())
    });
    std::thread::sleep(Duration::from_millis(20));
    // SAFETY: the child only uses flock (which is built for it) and leaves with `_exit`,
    // running no destructor and no test-harness code.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = std::panic::catch_unwind(|| in_child(parent_pool)).unwrap_or(2);
        // SAFETY: ends the child at once, as a forked child of a threaded process should.
        unsafe { libc::_exit(code) };
    }
    let status = watchdog(60, "the forked child", move || {
        wait_for_child(pid, Duration::from_secs(30))
    });
    assert_eq!(
        status,
        Some(0),
        "the child's global pool ran its tasks (None: it hung)"
    );
    // The parent's pool is untouched.
    assert_eq!(flock::spawn(|| 2).join().unwrap(), 2);
}
