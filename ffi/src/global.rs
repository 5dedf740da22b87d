//! `flock_global`: the process-wide pool of the core (`flock::global`) for C and C++.
//!
//! A `flock_pool_t` either owns a pool (`flock_pool_new`) or stands for the core's global
//! pool. The global handle is one `static`, so it is the same pointer every time and lives
//! for the whole process; it stores no pool, and every use asks the core for its global pool
//! (one atomic load once built). That is what keeps the handle right after `fork()`: the
//! core's `pthread_atfork` handler makes a child build a fresh global pool on first use, and
//! the same handle then reaches that one.
//!
//! The global pool is shared with every other user of the core in the process, so the C
//! handle cannot end it: `flock_pool_free` of it does nothing and `flock_shutdown` of it
//! returns `FLOCK_ERR_INVALID_ARGUMENT` (see `pool.rs`). Everything else (submits, groups,
//! waits, statistics, pause, resize) works on it as on any pool.

use crate::error::flock_status_t;
use crate::panic::ffi_panic_boundary;
use crate::pool::{flock_pool, flock_pool_t};
use std::ops::Deref;

/// What a `flock_pool_t` stands for.
pub(crate) enum PoolRef {
    /// A pool of its own, from `flock_pool_new`; dropping the handle shuts it down and joins it.
    Owned(flock_core::Pool),
    /// The core's global pool, looked up on each use (see the module's doc).
    Global,
}

impl Deref for PoolRef {
    type Target = flock_core::Pool;

    fn deref(&self) -> &flock_core::Pool {
        match self {
            PoolRef::Owned(pool) => pool,
            // Built already (flock_global handed the handle out only once it was), except in a
            // forked child, where it is built again here; a failure there panics, and the
            // calling export's boundary returns FLOCK_ERR_PANIC.
            PoolRef::Global => flock_core::global(),
        }
    }
}

/// The one handle that stands for the global pool.
static GLOBAL_HANDLE: flock_pool = flock_pool {
    inner: PoolRef::Global,
};

/// Whether `pool` is the global pool's handle.
pub(crate) fn is_global(pool: *const flock_pool_t) -> bool {
    std::ptr::eq(pool, &GLOBAL_HANDLE)
}

/// Stores in *out the handle of the process-wide pool, starting it on first use: the same
/// pool as the Rust global pool (flock::global) of the flock library linked into libflock.
/// It is built the first time anyone asks for it, with the defaults of flock_config_init
/// (one worker per CPU this process may run on, capacity 65,536, FLOCK_WHEN_FULL_BLOCK)
/// except for two environment variables, read then: FLOCK_WORKERS, when set and not empty,
/// is the number of workers (a whole number, 1 or more; surrounding whitespace ignored), and
/// FLOCK_MEMBARRIER, when set and not empty, is 0 or 1 (flock_config_t.membarrier). Later
/// calls return the same handle without reading them again.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when out is NULL; FLOCK_ERR_INVALID_CONFIG when a
/// variable is set to something else or asks for more workers than flock supports;
/// FLOCK_ERR_THREAD_SPAWN when the OS refused a thread. A failed start is not remembered: the
/// next call reads the variables again and tries again. *out is written only on FLOCK_OK.
///
/// Ownership: nobody owns the global pool and it is never shut down. The handle is valid
/// until the process exits, from every thread; flock_pool_free of it does nothing, and
/// flock_shutdown of it returns FLOCK_ERR_INVALID_ARGUMENT (other users of the process share
/// the pool). Its workers are not joined at exit: call flock_wait on it before returning from
/// main when queued tasks must run. Every other call takes it like any pool, pause, resume
/// and resize included (they change the pool for everyone).
///
/// fork(): a child process does not inherit the parent's workers; there the same handle
/// reaches a fresh global pool, built on its first use with the variables read again. Fork
/// from a thread that is not one of the pool's workers, while no other thread is inside a
/// flock call.
///
/// Thread-safety: any thread, any time; concurrent first calls start one pool between them.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_global(out: *mut *mut flock_pool_t) -> flock_status_t {
    ffi_panic_boundary! {
        if out.is_null() {
            return flock_status_t::FLOCK_ERR_NULL;
        }
        if let Err(e) = flock_core::try_global() {
            return (&e).into();
        }
        // The C API takes `flock_pool_t *`; no call writes through it (flock_pool_free, the
        // only one that would take the allocation back, does nothing for this handle).
        let handle = std::ptr::from_ref(&GLOBAL_HANDLE).cast_mut();
        // SAFETY: not NULL (checked above) and writable per the contract.
        unsafe { out.write(handle) };
        flock_status_t::FLOCK_OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::{flock_pool_free, flock_shutdown, flock_wait, ShutdownModeArg};

    #[test]
    fn one_handle_that_cannot_be_freed_or_shut_down() {
        let (mut a, mut b) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: both out-pointers are writable.
        unsafe {
            assert_eq!(flock_global(&mut a), flock_status_t::FLOCK_OK);
            assert_eq!(flock_global(&mut b), flock_status_t::FLOCK_OK);
        }
        assert_eq!(a, b);
        assert!(is_global(a));
        // SAFETY: the global handle is valid for the whole process.
        unsafe {
            assert_eq!(
                flock_shutdown(a, ShutdownModeArg(0), std::ptr::null_mut()),
                flock_status_t::FLOCK_ERR_INVALID_ARGUMENT
            );
            flock_pool_free(a);
            assert_eq!(flock_wait(a), flock_status_t::FLOCK_OK);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        flock_core::global()
            .submit(move || tx.send(7).unwrap())
            .unwrap();
        assert_eq!(rx.recv().unwrap(), 7);
        // SAFETY: NULL out is checked.
        assert_eq!(
            unsafe { flock_global(std::ptr::null_mut()) },
            flock_status_t::FLOCK_ERR_NULL
        );
    }
}
