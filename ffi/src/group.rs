//! `flock_group_t`: task groups (the core's `TaskGroup`) for C, and `flock_purge`.
//!
//! A group's tasks are the same three-word C tasks as `flock_submit_ex`'s (`task::CTask`), so
//! ownership of their arguments follows the same rules: a refused task is disarmed and the
//! caller keeps `arg`; an accepted one runs once, or has its drop callback called once when it
//! is dropped unrun (flock_group_cancel, flock_purge, FLOCK_SHUTDOWN_NOW).

use crate::error::flock_status_t;
use crate::panic::ffi_panic_boundary;
use crate::pool::{flock_pool_t, pool_ref};
use crate::task::{into_closure, lane_index, CTask, Submitting, TaskFn};
use flock_core::{GroupError, TaskGroup};
use std::ffi::c_void;
use std::time::Duration;

/// A set of tasks on one pool that a caller waits for as a whole (oneTBB's `task_group`).
/// Opaque: create it with flock_group_new, free it with flock_group_free.
pub struct flock_group {
    inner: TaskGroup,
}

/// See `struct flock_group`.
pub type flock_group_t = flock_group;

/// The group behind a pointer C handed in, or FLOCK_ERR_NULL.
///
/// # Safety
/// `group` is NULL or a live group from `flock_group_new`.
unsafe fn group_ref<'a>(group: *const flock_group) -> Result<&'a flock_group, flock_status_t> {
    // SAFETY: per this function's contract, a non-NULL pointer is a live group.
    unsafe { group.as_ref() }.ok_or(flock_status_t::FLOCK_ERR_NULL)
}

fn wait_status(result: Result<(), GroupError>) -> flock_status_t {
    match result {
        Ok(()) => flock_status_t::FLOCK_OK,
        Err(GroupError::Panicked(_)) => flock_status_t::FLOCK_ERR_TASK_FAILED,
        Err(GroupError::Timeout) => flock_status_t::FLOCK_ERR_TIMEOUT,
        Err(GroupError::WouldDeadlock) => flock_status_t::FLOCK_ERR_WOULD_DEADLOCK,
        // GroupError is non_exhaustive: a way to fail added later reads as a failed task
        // until a status of its own is published for it.
        Err(_) => flock_status_t::FLOCK_ERR_TASK_FAILED,
    }
}

/// Creates an empty task group on `pool` and stores it in *out.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool or out is NULL; FLOCK_ERR_PANIC. *out is written
/// only on FLOCK_OK.
///
/// Ownership: the caller owns the new group and must free it with flock_group_free. The group
/// keeps the pool's shared state alive, not the pool: it may outlive a flock_pool_free of its
/// pool, and its submits then return FLOCK_ERR_SHUTDOWN.
/// Thread-safety: any thread, also one of the pool's own tasks; concurrently with any call on
/// the pool except flock_pool_free.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_group_new(
    pool: *mut flock_pool_t,
    out: *mut *mut flock_group_t,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        let pool = match unsafe { pool_ref(pool) } {
            Ok(pool) => pool,
            Err(status) => return status,
        };
        if out.is_null() {
            return flock_status_t::FLOCK_ERR_NULL;
        }
        let group = Box::new(flock_group { inner: TaskGroup::new(&pool.inner) });
        // SAFETY: not NULL (checked above), writable per the contract.
        unsafe { out.write(Box::into_raw(group)) };
        flock_status_t::FLOCK_OK
    }
}

/// Submits one C task into the group; refused tasks are disarmed (the caller keeps `arg`).
///
/// # Safety
/// `group` is NULL or live; `run` and `drop` may be called with `arg` from any thread.
unsafe fn submit(
    group: *mut flock_group_t,
    lane: Option<u32>,
    run: Option<TaskFn>,
    arg: *mut c_void,
    drop: Option<TaskFn>,
) -> flock_status_t {
    // SAFETY: per this function's contract.
    let group = match unsafe { group_ref(group) } {
        Ok(group) => group,
        Err(status) => return status,
    };
    let Some(run) = run else {
        return flock_status_t::FLOCK_ERR_NULL;
    };
    let _submitting = Submitting::enter();
    let task = into_closure(CTask { run, arg, drop });
    let result = match lane {
        None => group.inner.submit(task),
        Some(lane) => group.inner.submit_to(lane_index(lane), task),
    };
    match result {
        Ok(()) => flock_status_t::FLOCK_OK,
        Err(refused) => {
            let status = refused.reason().into();
            // Disarmed as in flock_submit_ex: forgotten unrun, `drop(arg)` is not called.
            std::mem::forget(refused.into_inner());
            status
        }
    }
}

/// Runs task(arg) on the group's pool as a task of the group. Same as flock_group_submit_ex
/// with a NULL drop.
///
/// # Safety
/// As for flock_group_submit_ex.
#[no_mangle]
pub unsafe extern "C" fn flock_group_submit(
    group: *mut flock_group_t,
    task: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    arg: *mut c_void,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        unsafe { submit(group, None, task, arg, None) }
    }
}

/// Runs task(arg) on the group's pool as a task of the group: flock_group_wait waits for it.
/// Everything flock_submit_ex says holds (queueing, capacity and when_full from outside the
/// pool; the worker's own queue, never refused, from inside one of its tasks; statuses), and:
///
/// Returns FLOCK_OK when the task was accepted: it runs exactly once, or, if it is dropped
/// before it starts (flock_group_cancel, flock_purge, flock_shutdown with
/// FLOCK_SHUTDOWN_NOW), drop(arg) is called exactly once instead (when drop is not NULL); the
/// group counts it finished either way. FLOCK_ERR_FULL, FLOCK_ERR_TIMEOUT or
/// FLOCK_ERR_SHUTDOWN when the pool refused it: it is not part of the group. FLOCK_ERR_NULL
/// when group or task is NULL; FLOCK_ERR_PANIC. On every error neither task nor drop is
/// called, and the caller still owns arg.
///
/// A task reports failure with flock_task_fail; the group's wait then returns
/// FLOCK_ERR_TASK_FAILED.
///
/// Thread-safety: any number of threads, and the pool's tasks (this group's own included:
/// a task may submit more tasks into its group), may submit to one group at once,
/// concurrently with waits and flock_group_cancel on it, but not with or after
/// flock_group_free. task and drop may be called on any thread and must not unwind.
///
/// # Safety
/// `group` is NULL or a live group from flock_group_new; `task` and `drop` are NULL or
/// functions that may be called with `arg` from any thread.
#[no_mangle]
pub unsafe extern "C" fn flock_group_submit_ex(
    group: *mut flock_group_t,
    task: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    arg: *mut c_void,
    drop: Option<unsafe extern "C" fn(arg: *mut c_void)>,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        unsafe { submit(group, None, task, arg, drop) }
    }
}

/// Runs task(arg) as a task of the group in lane number `lane`. Same as
/// flock_group_submit_lane_ex with a NULL drop.
///
/// # Safety
/// As for flock_group_submit_ex.
#[no_mangle]
pub unsafe extern "C" fn flock_group_submit_lane(
    group: *mut flock_group_t,
    lane: u32,
    task: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    arg: *mut c_void,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        unsafe { submit(group, Some(lane), task, arg, None) }
    }
}

/// flock_group_submit_ex into lane number `lane` of the group's pool (see
/// flock_submit_lane_ex): everything flock_group_submit_ex says holds, and an index the pool
/// lacks is FLOCK_ERR_UNKNOWN_LANE (the task is not accepted, the caller keeps arg).
///
/// Thread-safety: as flock_group_submit_ex.
///
/// # Safety
/// As for flock_group_submit_ex.
#[no_mangle]
pub unsafe extern "C" fn flock_group_submit_lane_ex(
    group: *mut flock_group_t,
    lane: u32,
    task: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    arg: *mut c_void,
    drop: Option<unsafe extern "C" fn(arg: *mut c_void)>,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        unsafe { submit(group, Some(lane), task, arg, drop) }
    }
}

/// Waits until every task of the group has finished: ran, or was dropped (flock_group_cancel,
/// flock_purge, FLOCK_SHUTDOWN_NOW). Only the group's tasks (and those they submit into it)
/// are waited for, not the pool's others. Called from inside a task of any flock pool, the
/// calling worker runs its own pool's queued tasks while it waits instead of blocking, so a
/// task may open a group, submit to it and wait, even on a pool of one worker. The group is
/// reusable afterwards.
///
/// Returns FLOCK_OK; FLOCK_ERR_TASK_FAILED when all have finished and at least one failed
/// (flock_task_fail, a C++ exception, a panic) since the last wait that reported failures
/// (each failure is reported to one wait); FLOCK_ERR_WOULD_DEADLOCK, at once, when called
/// from one of the group's own tasks or from the drop callback of one being dropped (it would
/// wait for that task itself); FLOCK_ERR_NULL; FLOCK_ERR_PANIC.
///
/// While the pool is paused (flock_pause), tasks of the group submitted from outside the pool
/// do not start, so a wait for them lasts until flock_resume; tasks of the group that running
/// tasks submitted may still be run by a worker waiting here (see flock_pause).
///
/// Thread-safety: any number of threads may wait on one group at once; each returns once
/// the group had no unfinished task at some moment during its call (tasks submitted
/// concurrently may or may not be waited for). Concurrent with submits and cancels, not with
/// flock_group_free.
///
/// # Safety
/// `group` is NULL or a live group from flock_group_new.
#[no_mangle]
pub unsafe extern "C" fn flock_group_wait(group: *mut flock_group_t) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        match unsafe { group_ref(group) } {
            Ok(group) => wait_status(group.inner.wait()),
            Err(status) => status,
        }
    }
}

/// Like flock_group_wait, for at most timeout_ns nanoseconds (the unit of flock_wait_timeout):
/// FLOCK_ERR_TIMEOUT when tasks of the group are still unfinished then (they go on; wait
/// again later). UINT64_MAX (about 584 years) is in effect no limit.
/// Unlike flock_group_wait this one blocks the calling thread and runs no tasks meanwhile,
/// also on a worker: a task that waits so for tasks only its own worker could run times out.
///
/// Returns FLOCK_OK, FLOCK_ERR_TASK_FAILED (as flock_group_wait), FLOCK_ERR_TIMEOUT,
/// FLOCK_ERR_WOULD_DEADLOCK (as flock_group_wait), FLOCK_ERR_NULL or FLOCK_ERR_PANIC.
///
/// Thread-safety: as flock_group_wait.
///
/// # Safety
/// `group` is NULL or a live group from flock_group_new.
#[no_mangle]
pub unsafe extern "C" fn flock_group_wait_timeout_ns(
    group: *mut flock_group_t,
    timeout_ns: u64,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        unsafe { wait_timeout(group, Duration::from_nanos(timeout_ns)) }
    }
}

/// Deprecated: use flock_group_wait_timeout_ns, which takes nanoseconds as flock_wait_timeout
/// does. This one takes milliseconds and otherwise behaves exactly as
/// flock_group_wait_timeout_ns given the same time (also past UINT64_MAX nanoseconds). It
/// stays for programs written against flock 0.1.0; the header marks it deprecated, so
/// compilers that know the attribute warn where it is called.
///
/// Thread-safety: as flock_group_wait.
///
/// # Safety
/// `group` is NULL or a live group from flock_group_new.
#[deprecated(note = "takes milliseconds; use flock_group_wait_timeout_ns")]
#[no_mangle]
pub unsafe extern "C" fn flock_group_wait_timeout(
    group: *mut flock_group_t,
    timeout_ms: u64,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        unsafe { wait_timeout(group, Duration::from_millis(timeout_ms)) }
    }
}

/// The timed wait of both flock_group_wait_timeout forms.
///
/// # Safety
/// `group` is NULL or a live group from flock_group_new.
unsafe fn wait_timeout(group: *mut flock_group_t, timeout: Duration) -> flock_status_t {
    // SAFETY: per this function's contract.
    match unsafe { group_ref(group) } {
        Ok(group) => wait_status(group.inner.wait_timeout(timeout)),
        Err(status) => status,
    }
}

/// Drops the group's tasks that have not started: each one's drop callback (when not NULL)
/// is called once, on this thread, before this returns; each counts as dropped in
/// flock_stats_t.dropped, and the group no longer waits for it. Tasks already running are not
/// stopped (wait for them with flock_group_wait). Stores how many were dropped in *cancelled
/// when cancelled is not NULL.
///
/// A task counts as finished only once its drop callback has returned: from the callback,
/// flock_wait, flock_wait_timeout and flock_shutdown of the group's pool return
/// FLOCK_ERR_WOULD_DEADLOCK (they would wait for that task), as do flock_group_wait and
/// flock_group_wait_timeout_ns of this group; flock_group_free of this group aborts there.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when group is NULL; FLOCK_ERR_PANIC.
///
/// Thread-safety: any thread, also a task of the group, concurrently with submits and waits
/// on the group (tasks submitted concurrently may or may not be dropped), not with
/// flock_group_free.
///
/// # Safety
/// `group` is NULL or a live group from flock_group_new; `cancelled` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_group_cancel(
    group: *mut flock_group_t,
    cancelled: *mut usize,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        let group = match unsafe { group_ref(group) } {
            Ok(group) => group,
            Err(status) => return status,
        };
        let n = group.inner.cancel();
        if !cancelled.is_null() {
            // SAFETY: not NULL, writable per the contract.
            unsafe { cancelled.write(n) };
        }
        flock_status_t::FLOCK_OK
    }
}

/// Waits for the group's unfinished tasks (as flock_group_wait: on a worker it runs tasks
/// meanwhile; failures are not reported), then frees the group. So when it returns no task
/// of the group runs any more, and their arguments may be freed. To drop the queued ones
/// instead of running them, call flock_group_cancel first. NULL is a no-op. This is the drop
/// rule of task groups in Rust and C++ too (dropping a Rust TaskGroup, destroying a
/// flock::task_group).
///
/// Never call it from one of the group's own tasks or their drop callbacks: it would wait
/// for that task itself. Such a call prints a message to stderr and aborts the process
/// instead of hanging (it returns nothing that could report the error, and returning
/// without waiting would break the promise above).
///
/// Thread-safety: the last call on the group: no other call on it may run concurrently or
/// follow. The pool is unaffected.
///
/// # Safety
/// `group` is NULL or a live group from flock_group_new, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn flock_group_free(group: *mut flock_group_t) {
    ffi_panic_boundary! {
        if group.is_null() {
            return;
        }
        // SAFETY: a non-NULL `group` came from Box::into_raw in flock_group_new and is given up
        // by the caller (this function's contract).
        let group = unsafe { Box::from_raw(group) };
        if group.inner.wait() == Err(GroupError::WouldDeadlock) {
            eprintln!(
                "flock: flock_group_free called from one of the group's own tasks, \
                 which it would wait for forever; aborting"
            );
            std::process::abort();
        }
        // Dropping the group here waits for its tasks too (`TaskGroup`'s drop), but the wait
        // above left none unfinished and no call may follow or race this one: it returns at
        // once. The explicit wait stays for the abort: the drop returns without waiting
        // where the wait is refused, which C, whose task arguments are freed next, cannot allow.
    }
}

/// Drops every task queued on the pool and not yet started, and keeps the pool open: each
/// one's drop callback (when not NULL) is called once, on this thread, before this returns;
/// each counts in flock_stats_t.dropped (not in flock_shutdown's dropped_out); flock_wait and
/// the groups' waits no longer wait for them. Tasks already running go on. A task that a
/// worker had already taken as the pool got paused (flock_pause) is kept by that worker, to
/// start first after flock_resume, and is not dropped here (it still counts as queued). Stores
/// how many were dropped in *purged when purged is not NULL.
///
/// A task counts as finished only once its drop callback has returned: from the callback,
/// flock_wait, flock_wait_timeout and flock_shutdown of this pool return
/// FLOCK_ERR_WOULD_DEADLOCK (they would wait for that task), as do flock_group_wait and
/// flock_group_wait_timeout_ns of the task's own group (flock_group_free of it aborts there).
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool is NULL; FLOCK_ERR_PANIC.
///
/// Thread-safety: any thread, also one of the pool's tasks, concurrently with any call on the
/// pool except flock_pool_free; tasks submitted concurrently may or may not be dropped.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `purged` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_purge(
    pool: *mut flock_pool_t,
    purged: *mut usize,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        let pool = match unsafe { pool_ref(pool) } {
            Ok(pool) => pool,
            Err(status) => return status,
        };
        let n = pool.inner.purge();
        if !purged.is_null() {
            // SAFETY: not NULL, writable per the contract.
            unsafe { purged.write(n) };
        }
        flock_status_t::FLOCK_OK
    }
}
