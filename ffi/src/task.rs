//! C tasks (also the tasks of `flock_group_t`, see `group.rs`): `flock_submit`, `flock_submit_ex`, their lane forms `flock_submit_lane` and
//! `flock_submit_lane_ex`, `flock_submit_batch` and `flock_submit_batch_ex`, and
//! `flock_task_fail`.
//!
//! A C task is three words, (function, argument, drop callback), held by [`CTask`]. The closure
//! handed to the core captures only that struct, so it is three words as well, and the core
//! stores closures of up to three words inside the job itself: submitting a C task allocates
//! nothing. `CTask`'s destructor calls the drop callback; running the task disarms it, and so
//! does a refusal (the caller keeps ownership of the argument and learns so from the status).
//! The only path left where the destructor fires is a task discarded unrun by
//! `FLOCK_SHUTDOWN_NOW`, which is exactly when the drop callback is documented to run. A
//! batch is the same closures, one per argument, handed to the core's `submit_batch_to`; the
//! refused ones come back from it in order and are disarmed the same way.
//!
//! Every error leaves the argument with the caller, so no `CTask` exists before the call's
//! arguments are checked (a NULL pool returns before one is built), and a `CTask` dropped
//! while a panic unwinds out of the core's submit on the submitting thread ([`Submitting`])
//! does not call the drop callback: that call returns `FLOCK_ERR_PANIC`, and the caller still
//! owns `arg`.

use crate::error::flock_status_t;
use crate::panic::ffi_panic_boundary;
use crate::pool::{flock_pool_t, pool_ref};
use std::cell::Cell;
use std::ffi::c_void;
use std::mem::ManuallyDrop;

/// A C callback taking the task's argument. (Spelled out in the exported signatures rather
/// than used there, so that cbindgen writes them as plain C function pointers.)
pub(crate) type TaskFn = unsafe extern "C" fn(arg: *mut c_void);

/// A C task. Dropping it unrun calls `drop(arg)`.
pub(crate) struct CTask {
    pub(crate) run: TaskFn,
    pub(crate) arg: *mut c_void,
    pub(crate) drop: Option<TaskFn>,
}

// SAFETY: the header requires of every submitted task that `fn(arg)` and `drop(arg)` may be
// called from any thread (a worker, a helper thread, a thread calling flock_shutdown), which is
// what moving a CTask to another thread amounts to.
unsafe impl Send for CTask {}

std::thread_local! {
    /// How many submit calls of this library are under way on this thread (tasks can nest:
    /// caller-runs may run a task inside a submit, and it may submit in turn). See
    /// [`Submitting`].
    static SUBMITTING: Cell<usize> = const { Cell::new(0) };

    /// The state of the C task running on this thread, for `flock_task_fail`: `None` outside a
    /// C task, `Some(failed)` inside one. Tasks can nest on one thread (a task that submits
    /// under FLOCK_WHEN_FULL_CALLER_RUNS runs the inner task inline), so `run` saves and
    /// restores it.
    static RUNNING: Cell<Option<bool>> = const { Cell::new(None) };
}

/// The panic payload that marks a C task as failed (see [`CTask::run`]).
struct TaskFailed;

impl CTask {
    /// Runs the task, consuming it without calling its drop callback: `fn` owns `arg` now.
    fn run(self) {
        let this = ManuallyDrop::new(self);
        let outer = RUNNING.with(|r| r.replace(Some(false)));
        // SAFETY: `run` and `arg` are what the submitter passed, with the header's promise that
        // `run(arg)` may be called once, from any thread. A C function does not unwind.
        unsafe { (this.run)(this.arg) };
        let failed = RUNNING.with(|r| r.replace(outer)) == Some(true);
        if failed {
            // The C frame has returned, so this unwinds through Rust frames only: from here to
            // the core's per-task catch_unwind, which counts the task as panicked (in
            // flock_stats_t.panicked and the worker's panicked). resume_unwind skips the panic
            // hook, so nothing is printed for a failure the task reported on purpose.
            std::panic::resume_unwind(Box::new(TaskFailed));
        }
    }
}

impl Drop for CTask {
    fn drop(&mut self) {
        if Submitting::unwinding_here() {
            // The core panicked while it held this task, before accepting it: the call returns
            // FLOCK_ERR_PANIC and the caller keeps `arg`, so `drop(arg)` must not run.
            return;
        }
        if let Some(drop) = self.drop {
            // SAFETY: the task will never run (it is dropped unrun), and the header promises
            // `drop(arg)` may then be called once, from any thread.
            unsafe { drop(self.arg) }
        }
    }
}

/// Marks a submit call under way on this thread for as long as it lives, so that a `CTask`
/// dropped by a panic unwinding out of that call leaves its argument to the caller.
pub(crate) struct Submitting;

impl Submitting {
    pub(crate) fn enter() -> Submitting {
        SUBMITTING.with(|n| n.set(n.get() + 1));
        Submitting
    }

    /// Whether a panic is unwinding through a submit call on this thread. (A task discarded by
    /// FLOCK_SHUTDOWN_NOW is dropped by a shutdown that returns normally, never while
    /// unwinding.)
    #[cold]
    fn unwinding_here() -> bool {
        std::thread::panicking() && SUBMITTING.with(Cell::get) > 0
    }
}

impl Drop for Submitting {
    fn drop(&mut self) {
        SUBMITTING.with(|n| n.set(n.get() - 1));
    }
}

/// The closure the core runs for a C task. Its own function so that a test can check its size.
pub(crate) fn into_closure(task: CTask) -> impl FnOnce() + Send + 'static {
    move || task.run()
}

/// A lane index from C as the core takes it (an index the pool lacks is refused there).
pub(crate) fn lane_index(lane: u32) -> usize {
    usize::try_from(lane).unwrap_or(usize::MAX)
}

/// Submits `run(arg)` to the pool, into `lane` when given (otherwise lane 0 from outside the
/// pool, the running task's lane from inside); refused tasks are disarmed and reported by
/// their status. The `CTask` is built only once the pool is known to exist: an error before
/// that has nothing to drop, and the caller keeps `arg`.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `run` and `drop` may be called with `arg`
/// from any thread (flock_submit_ex's contract).
unsafe fn submit(
    pool: *mut flock_pool_t,
    lane: Option<u32>,
    run: TaskFn,
    arg: *mut c_void,
    drop: Option<TaskFn>,
) -> flock_status_t {
    // SAFETY: per this function's contract.
    let pool = match unsafe { pool_ref(pool) } {
        Ok(pool) => pool,
        Err(status) => return status,
    };
    let _submitting = Submitting::enter();
    let task = into_closure(CTask { run, arg, drop });
    let result = match lane {
        None => pool.inner.submit(task),
        Some(lane) => pool.inner.submit_to(lane_index(lane), task),
    };
    match result {
        Ok(()) => flock_status_t::FLOCK_OK,
        Err(refused) => {
            let status = refused.reason().into();
            // Disarm: the closure comes back unrun, and forgetting it forgets the CTask inside
            // (its only field) without calling `drop(arg)`: the caller still owns `arg`. The
            // task holds no Rust resources, so nothing leaks.
            std::mem::forget(refused.into_inner());
            status
        }
    }
}

/// Runs task(arg) on the pool, fire and forget. Same as flock_submit_ex with a NULL drop: see
/// there for ownership, thread-safety and what happens after shutdown. Allocates nothing.
///
/// # Safety
/// As for flock_submit_ex.
#[no_mangle]
pub unsafe extern "C" fn flock_submit(
    pool: *mut flock_pool_t,
    task: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    arg: *mut c_void,
) -> flock_status_t {
    ffi_panic_boundary! {
        let Some(run) = task else {
            return flock_status_t::FLOCK_ERR_NULL;
        };
        // SAFETY: per this function's contract.
        unsafe { submit(pool, None, run, arg, None) }
    }
}

/// Runs task(arg) on the pool, fire and forget; allocates nothing.
///
/// From outside the pool the task joins the shared queue of lane 0 (the first of
/// flock_config_t.lanes; flock_submit_lane_ex picks another), subject to the pool's capacity
/// and when_full policy: under FLOCK_WHEN_FULL_BLOCK this call may block; under
/// FLOCK_WHEN_FULL_CALLER_RUNS it may run task(arg) itself before returning. From inside one
/// of the pool's tasks the task goes to that worker's own queue, in the running task's lane:
/// never refused, never blocking.
///
/// Returns FLOCK_OK when the task was accepted: it will run exactly once, or, if
/// flock_shutdown with FLOCK_SHUTDOWN_NOW or flock_purge discards it before it starts,
/// drop(arg) is called exactly once instead (when drop is not NULL). It is not called after
/// task(arg) has run: task owns arg from then on. A task can report that it failed with
/// flock_task_fail.
/// Returns FLOCK_ERR_FULL, FLOCK_ERR_TIMEOUT or FLOCK_ERR_SHUTDOWN when the task was refused;
/// FLOCK_ERR_NULL when pool or task is NULL (arg may be NULL: it is passed through
/// untouched); FLOCK_ERR_PANIC when a panic inside the library was caught. On every error,
/// neither task nor drop is called, and the caller still owns arg (free it yourself).
///
/// After shutdown (or while it is under way): FLOCK_ERR_SHUTDOWN.
///
/// Thread-safety: any number of threads, and the pool's own tasks, may submit to one pool at
/// once, concurrently with flock_wait, flock_stats and flock_shutdown, but not with or after
/// flock_pool_free of that pool. task and drop are called on any thread (a worker, a helper
/// thread, the submitting thread, or a thread calling flock_shutdown or flock_purge), so arg
/// must be usable from any thread. Neither callback may unwind (a C++ exception or a longjmp
/// out of it is undefined behaviour: catch inside, and report with flock_task_fail). drop may
/// call into the pool, but its task counts as outstanding until drop returns: from drop,
/// flock_wait, flock_wait_timeout and flock_shutdown of this pool return
/// FLOCK_ERR_WOULD_DEADLOCK (on a worker, and when flock_purge or flock_group_cancel called
/// it), as from one of its tasks, and so do the waits of the task's own group.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `task` and `drop` are NULL or functions
/// that may be called with `arg` as described above.
#[no_mangle]
pub unsafe extern "C" fn flock_submit_ex(
    pool: *mut flock_pool_t,
    task: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    arg: *mut c_void,
    drop: Option<unsafe extern "C" fn(arg: *mut c_void)>,
) -> flock_status_t {
    ffi_panic_boundary! {
        let Some(run) = task else {
            return flock_status_t::FLOCK_ERR_NULL;
        };
        // SAFETY: per this function's contract.
        unsafe { submit(pool, None, run, arg, drop) }
    }
}

/// Runs task(arg) on the pool in lane number `lane` (see flock_config_t.lanes and
/// flock_lane_index), fire and forget. Same as flock_submit_lane_ex with a NULL drop.
/// Allocates nothing.
///
/// # Safety
/// As for flock_submit_ex.
#[no_mangle]
pub unsafe extern "C" fn flock_submit_lane(
    pool: *mut flock_pool_t,
    lane: u32,
    task: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    arg: *mut c_void,
) -> flock_status_t {
    ffi_panic_boundary! {
        let Some(run) = task else {
            return flock_status_t::FLOCK_ERR_NULL;
        };
        // SAFETY: per this function's contract.
        unsafe { submit(pool, Some(lane), run, arg, None) }
    }
}

/// Runs task(arg) on the pool in lane number `lane` (its index in flock_config_t.lanes; see
/// flock_lane_index), fire and forget; allocates nothing. Everything flock_submit_ex says
/// holds, except that the task goes to `lane` rather than to the default one (lane 0 from
/// outside the pool, the running task's lane from inside). The tasks it submits with
/// flock_submit or flock_submit_ex go to `lane` too.
///
/// Returns FLOCK_OK when the task was accepted (see flock_submit_ex for what follows);
/// FLOCK_ERR_UNKNOWN_LANE when the pool has no lane number `lane`, FLOCK_ERR_FULL,
/// FLOCK_ERR_TIMEOUT or FLOCK_ERR_SHUTDOWN when the task was refused (every refusal, an
/// unknown lane's too, is counted in flock_stats_t.rejected); FLOCK_ERR_NULL when pool or task
/// is NULL; FLOCK_ERR_PANIC. On every error, as with flock_submit_ex, neither task nor drop is
/// called and the caller still owns arg.
///
/// Thread-safety: as flock_submit_ex.
///
/// # Safety
/// As for flock_submit_ex.
#[no_mangle]
pub unsafe extern "C" fn flock_submit_lane_ex(
    pool: *mut flock_pool_t,
    lane: u32,
    task: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    arg: *mut c_void,
    drop: Option<unsafe extern "C" fn(arg: *mut c_void)>,
) -> flock_status_t {
    ffi_panic_boundary! {
        let Some(run) = task else {
            return flock_status_t::FLOCK_ERR_NULL;
        };
        // SAFETY: per this function's contract.
        unsafe { submit(pool, Some(lane), run, arg, drop) }
    }
}

/// Runs task(args[i]) on the pool for every i from 0 to n - 1, in lane number `lane`, as one
/// batch: from outside the pool the tasks are admitted in groups of a few hundred, each with
/// one capacity reservation, one count and one wake-up call, instead of one per task. The
/// pool's capacity and when_full policy apply to each task that does not fit (under
/// FLOCK_WHEN_FULL_BLOCK the call may block, under FLOCK_WHEN_FULL_CALLER_RUNS it may run
/// some tasks itself). From inside one of the pool's tasks every task goes to that worker's
/// own queue and none is refused. args is only read during the call; each args[i] is passed
/// through untouched (NULL is fine). There is no drop callback: a task that FLOCK_SHUTDOWN_NOW
/// discards is simply not run, as with flock_submit (flock_submit_batch_ex has one).
///
/// Returns FLOCK_OK when every task was accepted, and stores n in *accepted. When the pool
/// refuses a task (FLOCK_ERR_UNKNOWN_LANE, FLOCK_ERR_FULL, FLOCK_ERR_TIMEOUT or
/// FLOCK_ERR_SHUTDOWN), it stores in *accepted how many tasks from the start of args were
/// accepted before it (0 for FLOCK_ERR_UNKNOWN_LANE): those run as flock_submit's do, and
/// that one and every later one were not accepted and will not run (the caller still owns
/// their arguments; each is counted in flock_stats_t.rejected, an unknown lane's too).
/// Unlike other calls, these errors write *accepted. FLOCK_ERR_NULL when pool, task or
/// accepted is NULL, or args is NULL while n is not 0 (*accepted untouched, no task
/// accepted). n 0 is FLOCK_OK with *accepted 0.
///
/// Thread-safety: as flock_submit_ex; the batch is not atomic: other submits may interleave
/// with it, and its tasks may start before the call returns.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `task` is NULL or a function that may
/// be called with each args[i] from any thread; `args` is NULL or points to n readable
/// pointers; `accepted` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_submit_batch(
    pool: *mut flock_pool_t,
    lane: u32,
    task: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    args: *const *mut c_void,
    n: usize,
    accepted: *mut usize,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        unsafe { submit_batch(pool, lane, task, args, n, None, accepted) }
    }
}

/// flock_submit_batch with a drop callback: runs task(args[i]) on the pool for every i from
/// 0 to n - 1, in lane number `lane`, as one batch, exactly as flock_submit_batch does (same
/// groups, same policy, same statuses and the same *accepted), and each accepted task that
/// flock_shutdown with FLOCK_SHUTDOWN_NOW discards before it starts has drop(args[i]) called
/// exactly once instead (when drop is not NULL), on this thread or a worker, as with
/// flock_submit_ex: so heap arguments of discarded tasks can be freed. drop is never called
/// for a task that ran, nor for one that was not accepted (from *accepted on, when the pool
/// refused part of the batch): the caller still owns those arguments. On FLOCK_ERR_NULL no
/// task was accepted, no drop is called and *accepted is not written; FLOCK_ERR_PANIC (a bug
/// in flock, caught) does not write *accepted and calls no drop during the call.
///
/// Thread-safety: as flock_submit_batch; drop, like task, may be called on any thread.
///
/// # Safety
/// As flock_submit_batch; `drop` is NULL or a function that may be called with each args[i]
/// from any thread.
#[no_mangle]
pub unsafe extern "C" fn flock_submit_batch_ex(
    pool: *mut flock_pool_t,
    lane: u32,
    task: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    args: *const *mut c_void,
    n: usize,
    drop: Option<unsafe extern "C" fn(arg: *mut c_void)>,
    accepted: *mut usize,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        unsafe { submit_batch(pool, lane, task, args, n, drop, accepted) }
    }
}

/// The body of flock_submit_batch and flock_submit_batch_ex. Checks every pointer before it
/// builds a `CTask`, so an error before the core sees the batch owns nothing.
///
/// # Safety
/// flock_submit_batch_ex's contract.
unsafe fn submit_batch(
    pool: *mut flock_pool_t,
    lane: u32,
    task: Option<TaskFn>,
    args: *const *mut c_void,
    n: usize,
    drop: Option<TaskFn>,
    accepted: *mut usize,
) -> flock_status_t {
    // SAFETY: per this function's contract.
    let pool = match unsafe { pool_ref(pool) } {
        Ok(pool) => pool,
        Err(status) => return status,
    };
    let Some(run) = task else {
        return flock_status_t::FLOCK_ERR_NULL;
    };
    if accepted.is_null() || (args.is_null() && n != 0) {
        return flock_status_t::FLOCK_ERR_NULL;
    }
    let args: &[*mut c_void] = if n == 0 {
        &[]
    } else {
        // SAFETY: not NULL (checked above): n readable pointers (this function's contract).
        unsafe { std::slice::from_raw_parts(args, n) }
    };
    let _submitting = Submitting::enter();
    let tasks = args
        .iter()
        .map(|&arg| into_closure(CTask { run, arg, drop }));
    let (count, status) = match pool.inner.submit_batch_to(lane_index(lane), tasks) {
        Ok(count) => (count, flock_status_t::FLOCK_OK),
        Err(refused) => {
            let count = refused.accepted();
            let status = refused.reason().into();
            // Disarmed as in `submit`: each refused closure is forgotten, unrun, and the
            // caller keeps its argument.
            refused
                .into_rejected()
                .into_iter()
                .for_each(std::mem::forget);
            (count, status)
        }
    };
    // SAFETY: not NULL (checked above) and writable per the contract.
    unsafe { accepted.write(count) };
    status
}

/// Marks the flock task running on the calling thread as failed. When its function returns,
/// the pool counts it in flock_stats_t.panicked (and its worker's panicked) instead of
/// completed, exactly as a panicking Rust task; nothing is printed. The C++ wrapper
/// (flock.hpp) calls this when a task throws. Calling it more than once in one task counts
/// once.
///
/// Returns FLOCK_OK, or FLOCK_ERR_INVALID_ARGUMENT (and does nothing) when the calling thread
/// is not running a flock task function right now.
///
/// Thread-safety: affects only the task on the calling thread.
#[no_mangle]
pub extern "C" fn flock_task_fail() -> flock_status_t {
    ffi_panic_boundary! {
        RUNNING.with(|r| match r.get() {
            Some(_) => {
                r.set(Some(true));
                flock_status_t::FLOCK_OK
            }
            None => flock_status_t::FLOCK_ERR_INVALID_ARGUMENT,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of_val;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static RAN: AtomicUsize = AtomicUsize::new(0);
    static DROPPED: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn count_run(_: *mut c_void) {
        RAN.fetch_add(1, Ordering::SeqCst);
    }

    unsafe extern "C" fn count_drop(_: *mut c_void) {
        DROPPED.fetch_add(1, Ordering::SeqCst);
    }

    fn task() -> CTask {
        CTask {
            run: count_run,
            arg: std::ptr::null_mut(),
            drop: Some(count_drop),
        }
    }

    #[test]
    fn the_closure_fits_inline_in_a_job() {
        // The core stores closures of up to three words inside the job (no allocation).
        let closure = into_closure(task());
        assert!(size_of_val(&closure) <= 3 * size_of::<usize>());
        assert_eq!(size_of_val(&closure), 24);
        assert!(std::mem::align_of_val(&closure) <= std::mem::align_of::<usize>());
        std::mem::forget(closure);
    }

    #[test]
    fn running_skips_drop_and_dropping_unrun_calls_it_once() {
        let (r0, d0) = (RAN.load(Ordering::SeqCst), DROPPED.load(Ordering::SeqCst));
        into_closure(task())();
        std::mem::forget(into_closure(task())); // what a refusal does
        drop(into_closure(task()));
        assert_eq!(RAN.load(Ordering::SeqCst) - r0, 1);
        assert_eq!(DROPPED.load(Ordering::SeqCst) - d0, 1);
    }

    #[test]
    fn task_fail_outside_a_task_is_refused() {
        assert_eq!(
            flock_task_fail(),
            flock_status_t::FLOCK_ERR_INVALID_ARGUMENT
        );
    }
}
