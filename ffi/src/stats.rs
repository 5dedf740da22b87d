//! `flock_stats_t`, `flock_worker_stats_t`, `flock_lane_stats_t` and `flock_latency_stats_t`:
//! the core's `Stats` snapshot flattened into plain C structs, with the same field names.

use crate::error::flock_status_t;
use crate::lane::FLOCK_LANE_NAME_MAX;
use crate::panic::ffi_panic_boundary;
use crate::pool::{flock_pool_t, pool_ref};
use flock_core::{LaneStats, LatencyStats, Stats, WorkerState, WorkerStats};
use std::ffi::c_char;
use std::time::Duration;

/// A latency distribution in nanoseconds, from a log-bucketed histogram (each bucket at most
/// 25% wide; percentiles are the upper bound of their bucket). All zero when the pool does not
/// track latency.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct flock_latency_stats {
    /// Samples recorded.
    pub count: u64,
    /// Sum of all samples.
    pub sum_ns: u64,
    /// Mean sample.
    pub mean_ns: u64,
    /// Largest sample.
    pub max_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
}

/// See `struct flock_latency_stats`.
pub type flock_latency_stats_t = flock_latency_stats;

/// A snapshot of a pool's counters, taken by flock_stats. Counters only grow. Taken while
/// tasks run, the fields may disagree a little (each is read at a slightly different instant);
/// once the pool is quiet (after flock_wait) they balance:
/// submitted == completed + panicked + dropped + in_flight, with in_flight == 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct flock_stats {
    /// Tasks accepted (run on a worker, on the submitting thread or on a helper thread).
    pub submitted: u64,
    /// Tasks that ran to their end.
    pub completed: u64,
    /// Tasks that failed (flock_task_fail, a thrown C++ exception in flock.hpp).
    pub panicked: u64,
    /// Tasks refused, all reasons (rejected_full + rejected_timeout + rejected_shutdown, and
    /// submits to a lane the pool lacks, FLOCK_ERR_UNKNOWN_LANE).
    pub rejected: u64,
    /// Tasks discarded unrun by FLOCK_SHUTDOWN_NOW.
    pub dropped: u64,
    /// Tasks accepted and not yet ended (queued or running).
    pub in_flight: u64,
    /// Tasks waiting in a queue (the shared queue plus every worker's own).
    pub queued: u64,
    /// Tasks taken from another worker's queue.
    pub stolen: u64,
    /// Refused with FLOCK_ERR_FULL.
    pub rejected_full: u64,
    /// Refused with FLOCK_ERR_TIMEOUT.
    pub rejected_timeout: u64,
    /// Refused with FLOCK_ERR_SHUTDOWN.
    pub rejected_shutdown: u64,
    /// Accepted tasks run on the submitting thread (FLOCK_WHEN_FULL_CALLER_RUNS, and
    /// FLOCK_WHEN_FULL_SPAWN_THREAD where the OS refused the helper thread).
    pub caller_runs: u64,
    /// Accepted tasks run on a helper thread (FLOCK_WHEN_FULL_SPAWN_THREAD).
    pub spawned_thread: u64,
    /// Tasks of a heavy lane run by the lane reserve (flock_config_t.lane_reserve).
    pub reserve_runs: u64,
    /// Tasks taken from the shared queue.
    pub from_injector: u64,
    /// Tasks submitted by tasks onto their worker's own queue.
    pub local_pushes: u64,
    /// Times a worker went to sleep.
    pub parks: u64,
    /// Times a sleeping worker woke up.
    pub wakeups: u64,
    /// The bound on queued tasks (UINT64_MAX: none).
    pub capacity: u64,
    /// The number of workers wanted: as built, or as last set by flock_resize (workers
    /// beyond it may still be finishing their task before they retire).
    pub workers: u32,
    /// Whether queue_wait and run_time hold figures (the pool was built with track_latency).
    pub track_latency: bool,
    /// Time since the pool was started, in nanoseconds.
    pub uptime_ns: u64,
    /// Submit to start of each task (with track_latency; zeros otherwise).
    pub queue_wait: flock_latency_stats_t,
    /// Start to end of each task (with track_latency; zeros otherwise).
    pub run_time: flock_latency_stats_t,
    /// Whether the pool is paused (flock_pause).
    pub paused: bool,
    /// The most workers flock_resize may ask for (flock_config_t.max_workers, or its default).
    pub max_workers: u32,
    /// The number of lanes, at least 1; flock_lane_stats takes 0 to lane_count - 1.
    pub lane_count: u32,
}

/// See `struct flock_stats`.
pub type flock_stats_t = flock_stats;

/// What a worker is doing.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum flock_worker_state {
    /// Running a task (from taking one until a look for the next one fails).
    FLOCK_WORKER_RUNNING = 0,
    /// Looking for work: since its thread started, or out of work, spinning before it
    /// sleeps.
    FLOCK_WORKER_SPINNING = 1,
    /// Asleep, costing no CPU.
    FLOCK_WORKER_PARKED = 2,
    /// Exited (the pool shut down).
    FLOCK_WORKER_STOPPED = 3,
}

/// See `enum flock_worker_state`.
pub type flock_worker_state_t = flock_worker_state;

/// One worker's counters, taken by flock_worker_stats.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct flock_worker_stats {
    /// The worker's index, as flock_current_worker reports it.
    pub index: u32,
    /// The CPU it is pinned to, or -1 when the pool does not pin.
    pub pinned_core: i32,
    /// Tasks it ran (completed or failed).
    pub executed: u64,
    /// Tasks it ran that failed.
    pub panicked: u64,
    /// Tasks it took from other workers' queues.
    pub stolen: u64,
    /// Times it went to sleep.
    pub parks: u64,
    /// What it is doing now.
    pub state: flock_worker_state_t,
    /// The operating system's id of the thread running this worker now: on Linux its
    /// gettid() (syscall(SYS_gettid) seen from one of its tasks; the TID that top -H, perf
    /// and /proc/self/task show). 0 while the worker has no thread (before its thread has
    /// started, and once it has left: after its stop hook, as after shutdown), and always 0
    /// off Linux. Recorded by the thread itself when it starts, before the start hook, so a
    /// restarted worker (flock_resize) shows its new thread.
    pub os_thread_id: u64,
    /// The pthread_t of the thread running this worker now (pthread_self() on it), as an
    /// integer: (pthread_t)native_handle gives it back where pthread_t is an integer (Linux),
    /// (pthread_t)(uintptr_t)native_handle where it is a pointer. 0 while the worker has no
    /// thread (as for os_thread_id), and off Unix. Valid only while that thread lives: the
    /// snapshot may be stale by the time it is read, and once the worker has retired or the
    /// pool shut down the value may name a thread that has ended, or a new one; pass it to
    /// pthread calls only while the worker surely runs (from one of its own tasks, or with
    /// the pool neither resizing nor shutting down).
    pub native_handle: u64,
}

/// See `struct flock_worker_stats`.
pub type flock_worker_stats_t = flock_worker_stats;

/// One lane's counters, taken by flock_lane_stats. Once the pool is quiet (after flock_wait),
/// submitted == executed for every lane but tasks discarded by FLOCK_SHUTDOWN_NOW.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct flock_lane_stats {
    /// The lane's name, NUL-terminated: a copy, which stays valid after the pool is freed.
    pub name: [c_char; FLOCK_LANE_NAME_MAX],
    /// Its weight (flock_lane_t.weight; 1 for the default lane).
    pub weight: u32,
    /// Tasks accepted into it (from outside the pool and from tasks).
    pub submitted: u64,
    /// Its tasks that ran (completed or failed).
    pub executed: u64,
    /// Its tasks waiting in its shared queue. Tasks queued in workers' own queues (submitted
    /// by tasks) are counted in flock_stats_t.queued only.
    pub queued: u64,
    /// Whether busy_ns holds a figure: true when the pool has more than one lane (run time is
    /// measured to share the workers between lanes, and only then).
    pub has_busy: bool,
    /// Run time its tasks took, in nanoseconds, as charged for fair sharing; 0 when has_busy
    /// is false.
    pub busy_ns: u64,
}

/// See `struct flock_lane_stats`.
pub type flock_lane_stats_t = flock_lane_stats;

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl From<&LatencyStats> for flock_latency_stats {
    fn from(l: &LatencyStats) -> Self {
        flock_latency_stats {
            count: l.count,
            sum_ns: nanos(l.sum),
            mean_ns: nanos(l.mean),
            max_ns: nanos(l.max),
            p50_ns: nanos(l.p50),
            p90_ns: nanos(l.p90),
            p99_ns: nanos(l.p99),
        }
    }
}

impl From<&Stats> for flock_stats {
    fn from(s: &Stats) -> Self {
        let latency = |l: &Option<LatencyStats>| l.as_ref().map(Into::into).unwrap_or_default();
        flock_stats {
            submitted: s.submitted,
            completed: s.completed,
            panicked: s.panicked,
            rejected: s.rejected,
            dropped: s.dropped,
            in_flight: s.in_flight,
            queued: s.queued,
            stolen: s.stolen,
            rejected_full: s.rejected_full,
            rejected_timeout: s.rejected_timeout,
            rejected_shutdown: s.rejected_shutdown,
            caller_runs: s.caller_runs,
            spawned_thread: s.spawned_thread,
            reserve_runs: s.reserve_runs,
            from_injector: s.from_injector,
            local_pushes: s.local_pushes,
            parks: s.parks,
            wakeups: s.wakeups,
            capacity: u64::try_from(s.capacity).unwrap_or(u64::MAX),
            workers: u32::try_from(s.workers).unwrap_or(u32::MAX),
            track_latency: s.run_time.is_some(),
            uptime_ns: nanos(s.uptime),
            queue_wait: latency(&s.queue_wait),
            run_time: latency(&s.run_time),
            paused: s.paused,
            max_workers: u32::try_from(s.max_workers).unwrap_or(u32::MAX),
            lane_count: u32::try_from(s.lanes.len()).unwrap_or(u32::MAX),
        }
    }
}

impl From<WorkerState> for flock_worker_state {
    fn from(s: WorkerState) -> Self {
        match s {
            WorkerState::Running => flock_worker_state::FLOCK_WORKER_RUNNING,
            WorkerState::Spinning => flock_worker_state::FLOCK_WORKER_SPINNING,
            WorkerState::Parked => flock_worker_state::FLOCK_WORKER_PARKED,
            WorkerState::Stopped => flock_worker_state::FLOCK_WORKER_STOPPED,
        }
    }
}

impl From<&WorkerStats> for flock_worker_stats {
    fn from(w: &WorkerStats) -> Self {
        flock_worker_stats {
            index: u32::try_from(w.index).unwrap_or(u32::MAX),
            pinned_core: w.pinned_core.map_or(-1, |c| i32::try_from(c).unwrap_or(-1)),
            executed: w.executed,
            panicked: w.panicked,
            stolen: w.stolen,
            parks: w.parks,
            state: w.state.into(),
            os_thread_id: w.os_thread_id.unwrap_or(0),
            native_handle: w.native_handle.unwrap_or(0),
        }
    }
}

impl From<&LaneStats> for flock_lane_stats {
    fn from(l: &LaneStats) -> Self {
        // Names of pools built through flock_pool_new are shorter than the buffer (checked by
        // flock_pool_new); anything longer would be cut at a character boundary.
        let mut end = l.name.len().min(FLOCK_LANE_NAME_MAX - 1);
        while !l.name.is_char_boundary(end) {
            end -= 1;
        }
        let mut name = [0; FLOCK_LANE_NAME_MAX];
        for (to, from) in name.iter_mut().zip(&l.name.as_bytes()[..end]) {
            *to = *from as c_char;
        }
        flock_lane_stats {
            name,
            weight: l.weight,
            submitted: l.submitted,
            executed: l.executed,
            queued: l.queued,
            has_busy: l.busy.is_some(),
            busy_ns: l.busy.map_or(0, nanos),
        }
    }
}

/// Copies a snapshot of the pool's counters into *out.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool or out is NULL (*out is written only on
/// FLOCK_OK). Works before, during and after shutdown (after it, every worker is
/// FLOCK_WORKER_STOPPED and the counters stop moving).
///
/// Ownership: the caller owns *out. Thread-safety: any thread, concurrently with every other
/// call on the pool except flock_pool_free, including from inside the pool's tasks.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_stats(
    pool: *const flock_pool_t,
    out: *mut flock_stats_t,
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
        let stats = flock_stats::from(&pool.inner.stats());
        // SAFETY: not NULL (checked above) and writable per the contract.
        unsafe { out.write(stats) };
        flock_status_t::FLOCK_OK
    }
}

/// Stores in *out how many of the pool's workers are running a task now (their state is
/// FLOCK_WORKER_RUNNING), without building a whole flock_stats_t. A worker waiting inside a
/// task (flock_group_wait) counts while it runs other tasks there, and not while it sleeps
/// with nothing to run. Tasks run off the workers (FLOCK_WHEN_FULL_CALLER_RUNS, helper
/// threads) are not counted; flock_stats_t.in_flight - flock_stats_t.queued counts them too.
/// A gauge: it may be stale by the time it is read. With nothing outstanding (from the
/// moment flock_wait returns FLOCK_OK until the next submit) it reads 0, though a worker that
/// ran the last task may still show FLOCK_WORKER_RUNNING in flock_stats until it has looked
/// in its own queue for the next one (a few steps that never block or wait).
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool or out is NULL (*out is written only on
/// FLOCK_OK). After shutdown: 0.
///
/// Ownership: the caller owns *out. Thread-safety: any thread, concurrently with every other
/// call on the pool except flock_pool_free, including from inside the pool's tasks.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_running(pool: *const flock_pool_t, out: *mut u32) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        let pool = match unsafe { pool_ref(pool) } {
            Ok(pool) => pool,
            Err(status) => return status,
        };
        if out.is_null() {
            return flock_status_t::FLOCK_ERR_NULL;
        }
        let running = u32::try_from(pool.inner.running()).unwrap_or(u32::MAX);
        // SAFETY: not NULL (checked above) and writable per the contract.
        unsafe { out.write(running) };
        flock_status_t::FLOCK_OK
    }
}

/// Copies a snapshot of worker number `worker` (0 to workers - 1) into *out.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool or out is NULL; FLOCK_ERR_INVALID_ARGUMENT when
/// worker is not below the pool's worker count (after flock_resize made it smaller, a worker
/// above it still answers until it has retired). *out is written only on FLOCK_OK.
/// Ownership, thread-safety and behaviour after shutdown as for flock_stats.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_worker_stats(
    pool: *const flock_pool_t,
    worker: u32,
    out: *mut flock_worker_stats_t,
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
        let Ok(index) = usize::try_from(worker) else {
            return flock_status_t::FLOCK_ERR_INVALID_ARGUMENT;
        };
        let stats = pool.inner.stats();
        let Some(w) = stats.per_worker.get(index) else {
            return flock_status_t::FLOCK_ERR_INVALID_ARGUMENT;
        };
        // SAFETY: not NULL (checked above) and writable per the contract.
        unsafe { out.write(w.into()) };
        flock_status_t::FLOCK_OK
    }
}

/// Copies a snapshot of lane number `lane` (0 to flock_stats_t.lane_count - 1; see
/// flock_lane_index) into *out.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool or out is NULL; FLOCK_ERR_UNKNOWN_LANE when the
/// pool has no lane number `lane`. *out is written only on FLOCK_OK. Ownership, thread-safety
/// and behaviour after shutdown as for flock_stats.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_lane_stats(
    pool: *const flock_pool_t,
    lane: u32,
    out: *mut flock_lane_stats_t,
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
        let stats = pool.inner.stats();
        let Some(l) = usize::try_from(lane).ok().and_then(|i| stats.lanes.get(i)) else {
            return flock_status_t::FLOCK_ERR_UNKNOWN_LANE;
        };
        // SAFETY: not NULL (checked above) and writable per the contract.
        unsafe { out.write(l.into()) };
        flock_status_t::FLOCK_OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn lane(name: &str) -> LaneStats {
        let pool = flock_core::Pool::builder()
            .workers(1)
            .lanes(&[(name, 3), ("other", 1)])
            .build()
            .unwrap();
        pool.stats().lanes.swap_remove(0)
    }

    fn name_of(l: &flock_lane_stats) -> &str {
        // SAFETY: the array is NUL-terminated (its last byte is never written).
        let name = unsafe { CStr::from_ptr(l.name.as_ptr()) };
        name.to_str().unwrap()
    }

    #[test]
    fn a_lane_name_is_copied_whole_and_terminated() {
        let l = flock_lane_stats::from(&lane("interactive"));
        assert_eq!(name_of(&l), "interactive");
        assert_eq!(l.weight, 3);
        assert!(l.has_busy);
        assert!(l.name[11..].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_name_too_long_is_cut_at_a_character_boundary() {
        // 62 ASCII bytes and a two-byte character: 64 bytes, one past the buffer's room.
        let long = format!("{}é", "x".repeat(FLOCK_LANE_NAME_MAX - 2));
        let l = flock_lane_stats::from(&lane(&long));
        assert_eq!(name_of(&l), "x".repeat(FLOCK_LANE_NAME_MAX - 2));
        assert_eq!(l.name[FLOCK_LANE_NAME_MAX - 1], 0);
    }
}
