//! The OS refusing what flock asks of it, as a container's seccomp profile, a cpuset changed
//! under the process or a limit on threads makes it: a seccomp filter installed on a thread
//! of our own that fails one kind of system call. A filter binds its thread and the threads
//! that thread starts, so the rest of the test binary is not touched. Linux on x86-64 and
//! AArch64.
//!
//! - [`pinning`]: `sched_setaffinity` fails with `EPERM`; worker threads started from the
//!   thread, by a build or a grow, cannot pin.
//! - [`threads`]: `clone` and `clone3` fail with `EAGAIN` (as at a thread limit); the thread
//!   cannot start threads.
//! - [`membarrier`]: `membarrier` fails with `EPERM`; workers started from the thread cannot
//!   issue the one their parks need.
#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]

use std::ffi::{c_int, c_ulong};

#[repr(C)]
struct SockFilter {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

extern "C" {
    fn prctl(option: c_int, ...) -> c_int;
}

const PR_SET_NO_NEW_PRIVS: c_int = 38;
const PR_SET_SECCOMP: c_int = 22;
const SECCOMP_MODE_FILTER: c_ulong = 2;
#[cfg(target_arch = "x86_64")]
const NR_SCHED_SETAFFINITY: u32 = 203;
#[cfg(target_arch = "aarch64")]
const NR_SCHED_SETAFFINITY: u32 = 122;
#[cfg(target_arch = "x86_64")]
const NR_CLONE: u32 = 56;
#[cfg(target_arch = "aarch64")]
const NR_CLONE: u32 = 220;
const NR_CLONE3: u32 = 435;
#[cfg(target_arch = "x86_64")]
const NR_MEMBARRIER: u32 = 324;
#[cfg(target_arch = "aarch64")]
const NR_MEMBARRIER: u32 = 283;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const EPERM: u32 = 1;
const EAGAIN: u32 = 11;

/// Runs `f` on a new thread on which `sched_setaffinity` fails with `EPERM`, and returns
/// what it returns (its panic, re-raised).
pub fn pinning<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    run_refusing(&[NR_SCHED_SETAFFINITY], EPERM, f)
}

/// Runs `f` on a new thread that cannot start threads (`clone` and `clone3` fail with
/// `EAGAIN`), and returns what it returns (its panic, re-raised).
pub fn threads<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    run_refusing(&[NR_CLONE, NR_CLONE3], EAGAIN, f)
}

/// Runs `f` on a new thread on which `membarrier` fails with `EPERM`, and returns what it
/// returns (its panic, re-raised).
pub fn membarrier<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    run_refusing(&[NR_MEMBARRIER], EPERM, f)
}

fn run_refusing<R: Send + 'static>(
    calls: &'static [u32],
    errno: u32,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    std::thread::spawn(move || {
        // Load the syscall number (`seccomp_data.nr`, offset 0); `errno` for each of
        // `calls`; allow the rest.
        let mut filter = vec![SockFilter {
            code: 0x20,
            jt: 0,
            jf: 0,
            k: 0,
        }];
        for (i, &nr) in calls.iter().enumerate() {
            // Equal: jump over the other tests to the refusal; else the next test.
            let to_refusal = (calls.len() - i) as u8;
            filter.push(SockFilter {
                code: 0x15,
                jt: to_refusal,
                jf: 0,
                k: nr,
            });
        }
        filter.push(SockFilter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ALLOW,
        });
        filter.push(SockFilter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ERRNO | errno,
        });
        let prog = SockFprog {
            len: filter.len() as u16,
            filter: filter.as_ptr(),
        };
        let zero: c_ulong = 0;
        // SAFETY: two prctl calls with the arguments the kernel documents; the filter
        // outlives the call, which copies it.
        unsafe {
            assert_eq!(
                prctl(PR_SET_NO_NEW_PRIVS, 1 as c_ulong, zero, zero, zero),
                0
            );
            assert_eq!(
                prctl(
                    PR_SET_SECCOMP,
                    SECCOMP_MODE_FILTER,
                    &prog as *const SockFprog
                ),
                0,
                "seccomp filter refused"
            );
        }
        f()
    })
    .join()
    .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// After a grow of `pool` (one worker, `max_workers(3)`) failed for a refusal: the pool still
/// has its one worker (the refused threads' slots leave `per_worker` once they have left;
/// call it inside a watchdog), runs tasks on it, and a grow from a thread the OS refuses nothing
/// fills the slots the failed one took.
pub fn one_worker_left_then_grow(pool: &flock::Pool) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    assert_eq!(pool.workers(), 1);
    assert_eq!(pool.broadcast(|i| i), [0]);
    // `per_worker` shows the slots still retiring too (`Stats::per_worker`): a thread whose
    // pinning failed reported before `resize` returned, and leaves its slot after.
    super::eventually(|| pool.stats().per_worker.len() == 1);
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..1000 {
        let ran = ran.clone();
        pool.submit(move || {
            ran.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
    }
    pool.wait().unwrap();
    assert_eq!(ran.load(Ordering::Relaxed), 1000);
    pool.resize(3).unwrap();
    assert_eq!(pool.workers(), 3);
    assert_eq!(pool.broadcast(|i| i), [0, 1, 2]);
}

/// `rounds` tasks submitted one at a time, each pushing a task and then blocking until that
/// one has run (on another worker: the pattern the parking side's membarrier or fence pairs
/// with). One at a time: two at once could hold two workers, each waiting for its own push.
pub fn block_on_what_they_push(pool: &flock::Pool, rounds: usize) {
    for _ in 0..rounds {
        let (tx, rx) = std::sync::mpsc::channel();
        pool.submit(move || {
            flock::spawn(move || tx.send(()).unwrap());
            rx.recv().unwrap();
        })
        .unwrap();
        pool.wait().unwrap();
    }
}
