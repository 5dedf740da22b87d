//! `flock_stats_t`, `flock_worker_stats_t` and `flock_latency_stats_t`: the core's `Stats`
//! snapshot flattened into plain C structs, with the same field names.

use crate::error::flock_status_t;
use crate::panic::ffi_panic_boundary;
use crate::pool::{flock_pool_t, pool_ref};
use flock_core::{LatencyStats, Stats, WorkerState, WorkerStats};
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
    /// Tasks refused, all reasons (rejected_full + rejected_timeout + rejected_shutdown).
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
    /// Accepted tasks run on the submitting thread (FLOCK_WHEN_FULL_CALLER_RUNS).
    pub caller_runs: u64,
    /// Accepted tasks run on a helper thread (FLOCK_WHEN_FULL_SPAWN_THREAD).
    pub spawned_thread: u64,
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
    /// The number of workers.
    pub workers: u32,
    /// Whether queue_wait and run_time hold figures (the pool was built with track_latency).
    pub track_latency: bool,
    /// Time since the pool was started, in nanoseconds.
    pub uptime_ns: u64,
    /// Submit to start of each task (with track_latency; zeros otherwise).
    pub queue_wait: flock_latency_stats_t,
    /// Start to end of each task (with track_latency; zeros otherwise).
    pub run_time: flock_latency_stats_t,
}

/// See `struct flock_stats`.
pub type flock_stats_t = flock_stats;

/// What a worker is doing.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum flock_worker_state {
    /// Running tasks.
    FLOCK_WORKER_RUNNING = 0,
    /// Out of work, spinning before it sleeps.
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
}

/// See `struct flock_worker_stats`.
pub type flock_worker_stats_t = flock_worker_stats;

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

/// Copies a snapshot of worker number `worker` (0 to workers - 1) into *out.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool or out is NULL; FLOCK_ERR_INVALID_ARGUMENT when
/// worker is not below the pool's worker count. *out is written only on FLOCK_OK. Ownership,
/// thread-safety and behaviour after shutdown as for flock_stats.
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
