//! Changing a running pool: `flock_resize`, `flock_pause`, `flock_resume`; and asking about
//! it: `flock_is_paused`, `flock_uses_membarrier`.

use crate::error::flock_status_t;
use crate::panic::ffi_panic_boundary;
use crate::pool::{flock_pool_t, pool_ref};

/// Sets the pool's number of workers to `workers` while tasks run. Growing starts the new
/// workers (pinned to their cores when the pool pins) and returns once they run. Shrinking
/// returns at once: each worker beyond `workers` retires at its next task boundary, never
/// inside a task, handing the tasks in its own queue to the others, so no accepted task is
/// lost or run twice. flock_stats_t.workers says the number wanted from then on;
/// flock_worker_stats still answers for a retiring worker until it has gone.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool is NULL; FLOCK_ERR_INVALID_ARGUMENT when workers
/// is 0 (use flock_pause to stop starting tasks) or above the pool's max_workers (see
/// flock_config_t.max_workers; flock_stats_t.max_workers tells it); FLOCK_ERR_SHUTDOWN once a
/// shutdown has begun. On these nothing changed. When growing fails part way, the workers
/// started before the failure keep running and the pool settles on that many (read
/// flock_stats_t.workers): FLOCK_ERR_THREAD_SPAWN when the OS refused a thread,
/// FLOCK_ERR_PIN_FAILED when it refused to pin one to its core.
///
/// Thread-safety: any thread, including the pool's own tasks, concurrently with every other
/// call on the pool except flock_pool_free; concurrent resizes apply one after the other.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new.
#[no_mangle]
pub unsafe extern "C" fn flock_resize(pool: *mut flock_pool_t, workers: u32) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        let pool = match unsafe { pool_ref(pool) } {
            Ok(pool) => pool,
            Err(status) => return status,
        };
        let Ok(workers) = usize::try_from(workers) else {
            return flock_status_t::FLOCK_ERR_INVALID_ARGUMENT;
        };
        match pool.inner.resize(workers) {
            Ok(()) => flock_status_t::FLOCK_OK,
            Err(e) => (&e).into(),
        }
    }
}

/// Pauses the pool: no task submitted from outside the pool after this returns starts before
/// flock_resume. Running tasks finish; queued tasks wait; submits still queue, within the
/// pool's capacity and when_full policy. Idle workers sleep. While paused, flock_wait returns
/// FLOCK_ERR_PAUSED instead of waiting for a queue that will not move. Pausing a paused pool
/// changes nothing.
///
/// Tasks that running tasks submitted (into their worker's own queue) may still start during
/// the pause, where a running task waits for them: a task in flock_group_wait runs such tasks
/// of its pool, so a task that fills a group and waits on it finishes its fan-out during
/// the pause (as Rust's join and scope do). Tasks submitted from outside are never started
/// there.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool is NULL; FLOCK_ERR_SHUTDOWN once flock_shutdown
/// has been called (a shutdown drains the pool, and a pause would hold it).
///
/// Thread-safety: any thread, including the pool's own tasks, concurrently with every other
/// call on the pool except flock_pool_free. A pause racing flock_shutdown either comes first,
/// and the shutdown resumes the pool to drain it, or returns FLOCK_ERR_SHUTDOWN.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new.
#[no_mangle]
pub unsafe extern "C" fn flock_pause(pool: *mut flock_pool_t) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        let pool = match unsafe { pool_ref(pool) } {
            Ok(pool) => pool,
            Err(status) => return status,
        };
        // The core ignores a pause once its shutdown began (it would hold the drain), and
        // a shutdown clears a pause that came first; either way the pool drains.
        pool.inner.pause();
        if pool.inner.is_shutdown() {
            return flock_status_t::FLOCK_ERR_SHUTDOWN;
        }
        flock_status_t::FLOCK_OK
    }
}

/// Ends a pause: workers start queued tasks again (every sleeping worker is woken). Resuming a
/// pool that is not paused, or is shut down, changes nothing.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool is NULL.
///
/// Thread-safety: any thread, including the pool's own tasks, concurrently with every other
/// call on the pool except flock_pool_free.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new.
#[no_mangle]
pub unsafe extern "C" fn flock_resume(pool: *mut flock_pool_t) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        match unsafe { pool_ref(pool) } {
            Ok(pool) => {
                pool.inner.resume();
                flock_status_t::FLOCK_OK
            }
            Err(status) => status,
        }
    }
}

/// Stores in *out whether the pool is paused (flock_pause without a flock_resume since; a
/// shutdown ends a pause too).
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool or out is NULL (*out is written only on
/// FLOCK_OK).
///
/// Ownership: the caller owns *out. Thread-safety: any thread, concurrently with every other
/// call on the pool except flock_pool_free; the answer may be stale by the time it is read.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_is_paused(
    pool: *const flock_pool_t,
    out: *mut bool,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        unsafe { answer(pool, out, flock_core::Pool::is_paused) }
    }
}

/// Stores in *out whether the pool's parking workers use membarrier(2), so that its pushes
/// need no fence: asked for (flock_config_t.membarrier, the default) and granted by the
/// kernel. false when the configuration said false, or the system offers no expedited
/// private membarrier (not Linux, a kernel before 4.14, a seccomp filter).
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool or out is NULL (*out is written only on
/// FLOCK_OK).
///
/// Ownership: the caller owns *out. Thread-safety: any thread, concurrently with every other
/// call on the pool except flock_pool_free.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_uses_membarrier(
    pool: *const flock_pool_t,
    out: *mut bool,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        unsafe { answer(pool, out, flock_core::Pool::uses_membarrier) }
    }
}

/// Stores `ask(pool)` in *out: FLOCK_OK, or FLOCK_ERR_NULL (and *out untouched) when pool or
/// out is NULL.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `out` is NULL or writable.
unsafe fn answer(
    pool: *const flock_pool_t,
    out: *mut bool,
    ask: impl FnOnce(&flock_core::Pool) -> bool,
) -> flock_status_t {
    // SAFETY: per this function's contract.
    let pool = match unsafe { pool_ref(pool) } {
        Ok(pool) => pool,
        Err(status) => return status,
    };
    if out.is_null() {
        return flock_status_t::FLOCK_ERR_NULL;
    }
    // SAFETY: not NULL (checked above) and writable per the contract.
    unsafe { out.write(ask(&pool.inner)) };
    flock_status_t::FLOCK_OK
}
