//! `flock_pool_t`: the opaque pool handle, its `_new`/`_free` pair, waiting and shutdown.

use crate::config::{builder_from, flock_config, flock_config_t};
use crate::error::flock_status_t;
use crate::global::{is_global, PoolRef};
use crate::panic::ffi_panic_boundary;
use std::time::Duration;

/// A pool of worker threads. Opaque: create it with flock_pool_new, free it with
/// flock_pool_free; or take the process-wide pool's handle from flock_global.
pub struct flock_pool {
    /// Derefs to the core's pool: this handle's own, or the global one.
    pub(crate) inner: PoolRef,
}

/// See `struct flock_pool`.
pub type flock_pool_t = flock_pool;

/// How flock_shutdown treats tasks that have not started.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum flock_shutdown_mode {
    /// Run every task already accepted (and the tasks they submit), then stop.
    FLOCK_SHUTDOWN_GRACEFUL = 0,
    /// Discard every task that has not started (calling its drop callback), wait for the
    /// running ones, then stop.
    FLOCK_SHUTDOWN_NOW = 1,
}

/// See `enum flock_shutdown_mode`.
pub type flock_shutdown_mode_t = flock_shutdown_mode;

/// A `flock_shutdown_mode_t` as C hands it in: read as an integer and checked (see
/// `StatusArg`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShutdownModeArg(pub(crate) u32);

/// The pool behind a pointer C handed in, or FLOCK_ERR_NULL.
///
/// # Safety
/// `pool` is NULL or points to a live `flock_pool` from `flock_pool_new`, not freed before the
/// returned reference's last use.
pub(crate) unsafe fn pool_ref<'a>(
    pool: *const flock_pool,
) -> Result<&'a flock_pool, flock_status_t> {
    // SAFETY: per this function's contract, a non-NULL pointer is a live pool.
    unsafe { pool.as_ref() }.ok_or(flock_status_t::FLOCK_ERR_NULL)
}

/// Starts a pool configured by *cfg (NULL: every default, see flock_config_init) and stores
/// it in *out. Returns once every worker is running.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when out is NULL; FLOCK_ERR_INVALID_CONFIG when a field
/// is out of range (workers 0, capacity 0, when_full not a flock_when_full_t constant,
/// max_workers below workers, lanes that break a rule of flock_config_t.lanes..., or
/// pin_workers in a build without pinning); FLOCK_ERR_PIN_FAILED when the OS refused to pin a
/// worker to its core; FLOCK_ERR_THREAD_SPAWN when the OS refused a thread. *out is written
/// only on FLOCK_OK.
///
/// Ownership: the caller owns the new pool and must free it with flock_pool_free; *cfg, its
/// lanes array and the lanes' names are only read during the call (the pool keeps copies).
/// Thread-safety: any thread; pools are independent of each other.
///
/// # Safety
/// `cfg` is NULL or points to a readable flock_config_t whose `lanes`, when `lane_count` is 1
/// to FLOCK_MAX_LANES, is NULL or points to `lane_count` readable flock_lane_t with NULL or
/// readable NUL-terminated names; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_pool_new(
    cfg: *const flock_config_t,
    out: *mut *mut flock_pool_t,
) -> flock_status_t {
    ffi_panic_boundary! {
        if out.is_null() {
            return flock_status_t::FLOCK_ERR_NULL;
        }
        let defaults = flock_config::defaults();
        let cfg = if cfg.is_null() { &defaults } else { cfg };
        // SAFETY: `cfg` is our defaults or, per this function's contract, a readable config.
        let Some(configured) = (unsafe { builder_from(cfg) }) else {
            return flock_status_t::FLOCK_ERR_INVALID_CONFIG;
        };
        let (mut builder, hooks) = configured;
        if hooks.has_start() {
            builder = builder.on_worker_start(move |index| hooks.start(index));
        }
        if hooks.has_stop() {
            builder = builder.on_worker_stop(move |index| hooks.stop(index));
        }
        match builder.build() {
            Ok(inner) => {
                let pool = Box::into_raw(Box::new(flock_pool { inner: PoolRef::Owned(inner) }));
                // SAFETY: `out` is not NULL (checked above) and writable per the contract.
                unsafe { out.write(pool) };
                flock_status_t::FLOCK_OK
            }
            Err(e) => (&e).into(),
        }
    }
}

/// Shuts the pool down gracefully (as flock_shutdown with FLOCK_SHUTDOWN_GRACEFUL: every
/// accepted task runs), joins its threads, and frees it. NULL is a no-op. Calling it after
/// flock_shutdown is fine and is the only way to release the handle's memory.
///
/// Called from inside one of this pool's own tasks, it cannot join the thread it runs on: it
/// closes the pool, frees the handle and returns at once; the workers still run every task
/// already accepted, then exit on their own, and nothing joins them (they may outlive the call
/// by as long as those tasks take).
///
/// Ownership: takes the pool; the handle is invalid as soon as the call starts. Thread-safety:
/// no other call on this pool (from any thread or task) may run concurrently with it or
/// start after it; tasks still queued must not use the handle either.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn flock_pool_free(pool: *mut flock_pool_t) {
    ffi_panic_boundary! {
        if pool.is_null() || is_global(pool) {
            return;
        }
        // SAFETY: a non-NULL `pool` other than the global handle came from Box::into_raw in flock_pool_new and is given up
        // by the caller (this function's contract). Dropping the core Pool shuts down and joins.
        drop(unsafe { Box::from_raw(pool) });
    }
}

/// Blocks until every task accepted so far has finished (or was discarded); the pool stays
/// open. Tasks submitted while it waits may or may not be waited for.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL; FLOCK_ERR_WOULD_DEADLOCK, at once, when called from
/// inside one of this pool's own tasks (on a worker, or run off the workers: by the submitter
/// under FLOCK_WHEN_FULL_CALLER_RUNS, on a helper thread, on the lane reserve) or from a drop
/// callback that flock_purge or flock_group_cancel calls (its task counts as outstanding until
/// the callback returns); FLOCK_ERR_PAUSED when the pool is paused (see flock_pause) with
/// tasks outstanding, at once or as soon as a pause happens while it waits: queued tasks would
/// not start before flock_resume. After shutdown: FLOCK_OK at once.
///
/// Thread-safety: any number of threads may wait at once, concurrently with submits, stats,
/// pause, resume, resize and shutdown, but not with flock_pool_free of the pool.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new.
#[no_mangle]
pub unsafe extern "C" fn flock_wait(pool: *mut flock_pool_t) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        match unsafe { pool_ref(pool) } {
            Ok(pool) => match pool.inner.wait() {
                Ok(()) => flock_status_t::FLOCK_OK,
                Err(e) => e.into(),
            },
            Err(status) => status,
        }
    }
}

/// Like flock_wait, waiting at most timeout_ns nanoseconds: FLOCK_OK when everything finished
/// in time, FLOCK_ERR_TIMEOUT otherwise (the tasks go on running). Same errors, ownership and
/// thread-safety as flock_wait, except that a paused pool is waited for like any other: it
/// gives FLOCK_ERR_TIMEOUT unless someone calls flock_resume in time.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new.
#[no_mangle]
pub unsafe extern "C" fn flock_wait_timeout(
    pool: *mut flock_pool_t,
    timeout_ns: u64,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        let pool = match unsafe { pool_ref(pool) } {
            Ok(pool) => pool,
            Err(status) => return status,
        };
        match pool.inner.wait_for(Duration::from_nanos(timeout_ns)) {
            Ok(()) => flock_status_t::FLOCK_OK,
            Err(e) => e.into(),
        }
    }
}

/// Stops the pool: from now on every submit returns FLOCK_ERR_SHUTDOWN (and flock_pause and
/// flock_resize too). With FLOCK_SHUTDOWN_GRACEFUL every task already accepted runs (and
/// those they submit), a paused pool is resumed for that; with FLOCK_SHUTDOWN_NOW tasks that
/// have not started are discarded, each one's drop callback called exactly once (those
/// queued when the call begins on this thread, before it waits; those that running tasks
/// submit later on a worker), and running tasks finish. Either way the call returns once every
/// worker thread has exited and been joined. The handle stays valid: flock_stats still
/// works, and flock_pool_free must still be called.
///
/// When dropped_out is not NULL, it receives, on FLOCK_OK, the number of tasks shutdowns of
/// this pool have discarded in total (0 unless FLOCK_SHUTDOWN_NOW was used; the same total
/// for every later or concurrent flock_shutdown, graceful ones included). Tasks dropped by
/// flock_purge or flock_group_cancel are not in it (flock_stats_t.dropped counts both).
///
/// Returns FLOCK_OK (also for a pool already shut down: shutting down twice is fine);
/// FLOCK_ERR_NULL when pool is NULL; FLOCK_ERR_INVALID_ARGUMENT when mode is not a
/// flock_shutdown_mode_t constant, or when pool is flock_global's handle (the process shares
/// that pool: nothing changes); FLOCK_ERR_WOULD_DEADLOCK when called from inside one of
/// this pool's own tasks, or from a drop callback that flock_purge or flock_group_cancel calls
/// (as for flock_wait; nothing changes: use flock_pool_free from a task, or return and shut
/// down from outside).
///
/// Thread-safety: may run concurrently with submits (each either gets its task in, and it is
/// run or discarded as above, or gets FLOCK_ERR_SHUTDOWN), waits, stats, pauses (each either
/// comes first and is undone by the shutdown, or gets FLOCK_ERR_SHUTDOWN), resumes, resizes
/// and other shutdowns, but not with flock_pool_free.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `dropped_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_shutdown(
    pool: *mut flock_pool_t,
    mode: ShutdownModeArg,
    dropped_out: *mut u64,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        let pool = match unsafe { pool_ref(pool) } {
            Ok(pool) => pool,
            Err(status) => return status,
        };
        if is_global(pool) {
            return flock_status_t::FLOCK_ERR_INVALID_ARGUMENT;
        }
        let now = match mode.0 {
            0 => false,
            1 => true,
            _ => return flock_status_t::FLOCK_ERR_INVALID_ARGUMENT,
        };
        let result = if now {
            pool.inner.shutdown_now().map(drop)
        } else {
            pool.inner.shutdown()
        };
        if let Err(e) = result {
            return e.into();
        }
        if !dropped_out.is_null() {
            // Final: every worker has exited, so no shutdown discards anything after this.
            let dropped = pool.inner.dropped_by_shutdown();
            // SAFETY: not NULL (checked above) and writable per the contract.
            unsafe { dropped_out.write(dropped) };
        }
        flock_status_t::FLOCK_OK
    }
}

/// The index (0 to workers - 1) of the flock worker thread calling, or -1 when the caller is
/// not a worker of any flock pool (a helper thread of FLOCK_WHEN_FULL_SPAWN_THREAD and a
/// submitter running a task under FLOCK_WHEN_FULL_CALLER_RUNS are not workers).
///
/// Thread-safety: any thread, any time.
#[no_mangle]
pub extern "C" fn flock_current_worker() -> i32 {
    ffi_panic_boundary! {
        flock_core::current_worker_index().map_or(-1, |i| i32::try_from(i).unwrap_or(-1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_arg_has_the_enumerations_layout() {
        assert_eq!(
            std::mem::size_of::<ShutdownModeArg>(),
            std::mem::size_of::<flock_shutdown_mode>()
        );
        assert_eq!(flock_shutdown_mode::FLOCK_SHUTDOWN_NOW as u32, 1);
    }

    static SMALL_STACK_RAN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    unsafe extern "C" fn count_small_stack_run(_: *mut std::ffi::c_void) {
        SMALL_STACK_RAN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The smallest stack a config accepts runs tasks, parks, wakes, purges and shuts down
    /// (the last worker out sweeps the queues, crossbeam-epoch's collection included). The
    /// test profile is unoptimised, where a worker's own frames are deepest: with 16 KiB
    /// this test overflowed the worker's stack and aborted.
    #[test]
    fn a_pool_on_the_smallest_stack_runs_tasks_and_shuts_down() {
        let mut cfg = flock_config::defaults();
        cfg.workers = 2;
        cfg.stack_size = crate::config::FLOCK_MIN_STACK_SIZE;
        for _ in 0..10 {
            let before = SMALL_STACK_RAN.load(std::sync::atomic::Ordering::Relaxed);
            let mut pool = std::ptr::null_mut();
            // SAFETY: a live config; `pool` is writable.
            assert_eq!(
                unsafe { flock_pool_new(&cfg, &mut pool) },
                flock_status_t::FLOCK_OK
            );
            for _ in 0..1_000 {
                // SAFETY: `pool` is live; the task takes no argument.
                let st = unsafe {
                    crate::task::flock_submit(
                        pool,
                        Some(count_small_stack_run),
                        std::ptr::null_mut(),
                    )
                };
                assert_eq!(st, flock_status_t::FLOCK_OK);
            }
            // SAFETY: `pool` is live.
            assert_eq!(unsafe { flock_wait(pool) }, flock_status_t::FLOCK_OK);
            assert_eq!(
                SMALL_STACK_RAN.load(std::sync::atomic::Ordering::Relaxed) - before,
                1_000
            );
            // SAFETY: `pool` came from flock_pool_new and is not used again.
            unsafe { flock_pool_free(pool) };
        }
    }

    #[test]
    fn wait_timeout_from_a_worker_would_deadlock() {
        let mut pool = std::ptr::null_mut();
        // SAFETY: NULL config means defaults; `pool` is writable.
        assert_eq!(
            unsafe { flock_pool_new(std::ptr::null(), &mut pool) },
            flock_status_t::FLOCK_OK
        );
        let addr = pool as usize;
        let (tx, rx) = std::sync::mpsc::channel();
        // SAFETY: `pool` is live until flock_pool_free below, which waits for this task.
        let handle = unsafe { &*pool };
        handle
            .inner
            .submit(move || {
                // SAFETY: the pool outlives its tasks (freed after they ran).
                let s = unsafe { flock_wait_timeout(addr as *mut flock_pool_t, 1_000_000_000) };
                tx.send(s).unwrap();
            })
            .unwrap();
        assert_eq!(rx.recv().unwrap(), flock_status_t::FLOCK_ERR_WOULD_DEADLOCK);
        // SAFETY: `pool` came from flock_pool_new and is not used again.
        unsafe { flock_pool_free(pool) };
    }
}
