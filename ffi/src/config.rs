//! `flock_config_t`: how a pool is built (worker hooks included), and `flock_config_init`, its
//! defaults.

use crate::lane::{flock_lane_t, read_lanes};
use crate::panic::ffi_panic_boundary;
use flock_core::{Backpressure, PoolBuilder, DEFAULT_CAPACITY, DEFAULT_SPIN_LIMIT};
use std::ffi::c_void;
use std::ptr;
use std::time::Duration;

/// What a submit from outside the pool does when the queue holds `capacity` tasks. (Tasks
/// submitted by the pool's own tasks are never refused and never block.)
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum flock_when_full {
    /// Wait for room (at most block_timeout_ns when that is not 0, then FLOCK_ERR_TIMEOUT).
    FLOCK_WHEN_FULL_BLOCK = 0,
    /// Refuse the task at once with FLOCK_ERR_FULL.
    FLOCK_WHEN_FULL_REJECT = 1,
    /// Run the task on the submitting thread, inside flock_submit.
    FLOCK_WHEN_FULL_CALLER_RUNS = 2,
    /// Run the task on a short-lived helper thread (at most max_spawned_threads at once; past
    /// that, wait as FLOCK_WHEN_FULL_BLOCK does). Where the OS refuses the thread, the task
    /// runs on the submitting thread, inside flock_submit.
    FLOCK_WHEN_FULL_SPAWN_THREAD = 3,
}

/// See `enum flock_when_full`.
pub type flock_when_full_t = flock_when_full;

/// The policy a `flock_when_full_t` value names, if it names one.
fn policy(raw: u32) -> Option<Backpressure> {
    Some(match raw {
        0 => Backpressure::Block,
        1 => Backpressure::Reject,
        2 => Backpressure::CallerRuns,
        3 => Backpressure::SpawnThread,
        _ => return None,
    })
}

/// The smallest flock_config_t.stack_size a pool accepts, in bytes (64 KiB); a smaller one,
/// other than 0, is FLOCK_ERR_INVALID_CONFIG. A worker's own frames take up to 32 KiB in an
/// unoptimised build of libflock (under 16 KiB optimised), so this leaves a C task at least
/// 32 KiB in either. Give tasks that use the stack more room.
pub const FLOCK_MIN_STACK_SIZE: u64 = 64 * 1024;

// The Rust builder refuses what this refuses (`flock::MIN_STACK_SIZE`): one minimum. A
// literal above, so that cbindgen writes it into the header as a number.
const _: () = assert!(FLOCK_MIN_STACK_SIZE == flock_core::MIN_STACK_SIZE as u64);

/// A pool's configuration. Always start from flock_config_init, then change the fields you
/// care about: later versions may add fields at the end, which flock_config_init fills in.
/// The pool copies what it needs (lane names included); the struct, and the lanes array it
/// points to, may be freed or reused as soon as flock_pool_new returns.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct flock_config {
    /// Worker threads, 1 to 65,536 (0 is FLOCK_ERR_INVALID_CONFIG). Default: the number of
    /// CPUs this process may run on.
    pub workers: u32,
    /// The most tasks submitted from outside that may wait in the queue, at least 1.
    /// UINT64_MAX means no bound. Default: 65,536.
    pub capacity: u64,
    /// What a submit does when the queue is full. Default: FLOCK_WHEN_FULL_BLOCK.
    pub when_full: flock_when_full_t,
    /// With FLOCK_WHEN_FULL_BLOCK: the longest a submit waits for room before it gives up with
    /// FLOCK_ERR_TIMEOUT. 0 (the default) waits as long as it takes.
    pub block_timeout_ns: u64,
    /// Each worker runs its own tasks oldest first (true) instead of newest first (false, the
    /// default, which is kinder to caches). Stealing always takes the oldest.
    pub fifo: bool,
    /// Rounds an idle worker spins looking for work before it sleeps; 0 sleeps at once.
    /// Default: 20. From the 8th round on a round yields the CPU (sched_yield). On Linux
    /// since late 2025 a yield made while another thread waits for that CPU also delays the
    /// worker's next wake-up: a task submitted to an idle pool by a thread that keeps running
    /// can wait for that thread's time slice (milliseconds). 7 or fewer never yields
    /// (docs/bench.md, "A submitter that keeps running").
    pub spin_limit: u32,
    /// Pin worker i to the i-th CPU this process may run on (wrapping around). Default: false.
    pub pin_workers: bool,
    /// Record each task's queue wait and run time for flock_stats (two clock reads per task).
    /// Default: false.
    pub track_latency: bool,
    /// With FLOCK_WHEN_FULL_SPAWN_THREAD: the most helper threads alive at once. 0 (the
    /// default) means as many as there are workers.
    pub max_spawned_threads: u32,
    /// Stack size of each worker thread in bytes, at least FLOCK_MIN_STACK_SIZE (64 KiB; a
    /// smaller value is FLOCK_ERR_INVALID_CONFIG); the system may round it up to its page size
    /// or its own minimum. 0 (the default) keeps the platform's (8 MiB on most Linux systems).
    pub stack_size: u64,
    /// The most workers flock_resize may grow the pool to, at least workers and at most
    /// 65,536 (else FLOCK_ERR_INVALID_CONFIG). 0 (the default) means the larger of workers and
    /// the number of CPUs this process may run on.
    pub max_workers: u32,
    /// The pool's lanes, lane_count of them (at most FLOCK_MAX_LANES), in index order: each
    /// with a name (not NULL, UTF-8, at most FLOCK_LANE_NAME_MAX - 1 bytes, no two alike) and a
    /// weight of 1 or more; anything else is FLOCK_ERR_INVALID_CONFIG. When several lanes have
    /// queued tasks, each worker shares its time between them in proportion to their weights,
    /// first in first out within a lane. NULL with lane_count 0 (the default): one lane,
    /// "default", weight 1. Only read during flock_pool_new.
    pub lanes: *const flock_lane_t,
    /// The number of entries in lanes. 0 (the default): one lane, "default" (lanes is then
    /// not read).
    pub lane_count: u32,
    /// Keep a lane reserve when the lanes differ in weight (default: true): one extra thread,
    /// asleep unless a task submitted to a lane heavier than the lightest would wait because
    /// every worker runs a task of a lighter lane; it then runs that task at once. Its runs
    /// are counted in flock_stats_t.reserve_runs. See the Rust PoolBuilder::lane_reserve.
    pub lane_reserve: bool,
    /// Called on each worker thread as on_worker_start(worker_hook_arg, worker), with the
    /// worker's index (0 to max_workers - 1), once, before the worker runs any task: when the
    /// pool starts and for each worker flock_resize adds (an index that retired and came back
    /// is started again). flock_pool_new (or flock_resize) may return before a new worker's
    /// call has finished, but that worker runs no task before it has. Suits naming the
    /// thread, setting its priority, or thread-local state that tasks then use. NULL (the
    /// default): nothing is called.
    ///
    /// Both hooks run on worker threads, several at once (one per worker), so they must be
    /// thread-safe; they must not unwind (no C++ exception or longjmp out: catch inside), and
    /// must not wait for the pool (flock_wait, flock_shutdown, flock_pool_free) or block on
    /// its tasks.
    pub on_worker_start: Option<unsafe extern "C" fn(arg: *mut c_void, worker: u32)>,
    /// Called on each worker thread as on_worker_stop(worker_hook_arg, worker) after its last
    /// task, when it leaves: at shutdown (flock_shutdown, flock_pool_free) or when flock_resize
    /// retires it. Every worker whose on_worker_start was called gets one on_worker_stop
    /// call, and flock_shutdown (or flock_pool_free from outside the pool) returns only after
    /// all of them. Same rules as on_worker_start. NULL (the default): nothing is called.
    pub on_worker_stop: Option<unsafe extern "C" fn(arg: *mut c_void, worker: u32)>,
    /// Passed untouched to on_worker_start and on_worker_stop; the caller owns what it points
    /// to and must keep it valid until the pool's last worker has stopped (flock_shutdown or
    /// flock_pool_free, called from outside the pool, has returned). Default: NULL.
    pub worker_hook_arg: *mut c_void,
    /// Let idle workers use membarrier(2) when they park (default: true), so that the pool's
    /// pushes (a task's own submits, outside submits) need no memory fence. A park that
    /// starts an era (the first after every worker was awake; with one worker, every park)
    /// then interrupts every CPU running a thread of this process, the application's own
    /// threads included (7-9 us of a busy thread's time each on a 2-vCPU KVM guest); parks
    /// while another worker stays asleep issue none. false: every
    /// push pays a fence instead (fork-join spent about half as much CPU again per join) and
    /// parks interrupt no one; suits a pool that goes idle thousands of times a second beside
    /// latency-sensitive threads. Either way no wake-up is lost. Where the kernel refuses the
    /// membarrier the pool fences whatever this says; flock_uses_membarrier tells which a
    /// pool got. See the Rust PoolBuilder::membarrier.
    pub membarrier: bool,
}

/// See `struct flock_config`.
pub type flock_config_t = flock_config;

impl flock_config {
    pub(crate) fn defaults() -> flock_config {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        flock_config {
            workers: u32::try_from(cpus).unwrap_or(u32::MAX),
            capacity: DEFAULT_CAPACITY as u64,
            when_full: flock_when_full::FLOCK_WHEN_FULL_BLOCK,
            block_timeout_ns: 0,
            fifo: false,
            spin_limit: DEFAULT_SPIN_LIMIT,
            pin_workers: false,
            track_latency: false,
            max_spawned_threads: 0,
            stack_size: 0,
            max_workers: 0,
            lanes: ptr::null(),
            lane_count: 0,
            lane_reserve: true,
            on_worker_start: None,
            on_worker_stop: None,
            worker_hook_arg: ptr::null_mut(),
            membarrier: true,
        }
    }
}

/// A C worker hook (see flock_config_t.on_worker_start).
type HookFn = unsafe extern "C" fn(arg: *mut c_void, worker: u32);

/// The C worker hooks of a configuration, called by the closures `flock_pool_new` gives the
/// core's `on_worker_start` / `on_worker_stop`.
#[derive(Clone, Copy)]
pub(crate) struct WorkerHooks {
    start: Option<HookFn>,
    stop: Option<HookFn>,
    arg: *mut c_void,
}

// SAFETY: the header requires the hooks to be callable with `arg` from every worker thread,
// concurrently, for the pool's whole life, which is what sharing WorkerHooks between the
// workers amounts to.
unsafe impl Send for WorkerHooks {}
// SAFETY: as for Send.
unsafe impl Sync for WorkerHooks {}

impl WorkerHooks {
    /// Whether there is a start hook (the core then needs a closure for it).
    pub(crate) fn has_start(&self) -> bool {
        self.start.is_some()
    }

    /// Whether there is a stop hook (the core then needs a closure for it).
    pub(crate) fn has_stop(&self) -> bool {
        self.stop.is_some()
    }

    /// Calls the start hook, if any, for worker `index`.
    pub(crate) fn start(&self, index: usize) {
        Self::call(self.start, self.arg, index);
    }

    /// Calls the stop hook, if any, for worker `index`.
    pub(crate) fn stop(&self, index: usize) {
        Self::call(self.stop, self.arg, index);
    }

    fn call(hook: Option<HookFn>, arg: *mut c_void, index: usize) {
        if let Some(hook) = hook {
            // Indices are below max_workers, at most 65,536.
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            // SAFETY: the header's contract for the hooks (see the Send impl); a C function
            // does not unwind.
            unsafe { hook(arg, index) }
        }
    }
}

/// The builder the configuration at `cfg` describes and its C worker hooks (which the caller
/// gives the builder, together with its own), or `None` when a field is outside what any pool
/// accepts (the builder checks the rest).
///
/// C may hand in any bit pattern, and a Rust `enum` or `bool` must never hold one outside its
/// values, so the struct is never copied as a whole: each field is read as the integer it is
/// in memory and checked.
///
/// # Safety
/// `cfg` points to a readable, initialized `flock_config`, whose `lanes`, when `lane_count`
/// is 1 to `FLOCK_MAX_LANES`, is NULL or points to `lane_count` readable lanes with NULL or
/// readable NUL-terminated names.
pub(crate) unsafe fn builder_from(cfg: *const flock_config) -> Option<(PoolBuilder, WorkerHooks)> {
    macro_rules! field {
        ($name:ident as $int:ty) => {
            // SAFETY: `cfg` is readable (this function's contract); the field is read as an
            // integer of its own size, for which every bit pattern is valid.
            unsafe { ptr::addr_of!((*cfg).$name).cast::<$int>().read() }
        };
    }
    let workers = usize::try_from(field!(workers as u32)).ok()?;
    // 0 stays an invalid configuration in C (the Rust builder reads `workers(0)` as the
    // default, as rayon's `num_threads(0)`; C callers get the default from flock_config_default).
    if workers == 0 {
        return None;
    }
    // A bound past the address space is no bound.
    let capacity = usize::try_from(field!(capacity as u64)).unwrap_or(usize::MAX);
    let mut b = flock_core::Pool::builder()
        .workers(workers)
        .capacity(capacity)
        .when_full(policy(field!(when_full as u32))?)
        .spin_limit(field!(spin_limit as u32))
        .pin_workers(field!(pin_workers as u8) != 0)
        .track_latency(field!(track_latency as u8) != 0)
        .lane_reserve(field!(lane_reserve as u8) != 0)
        .membarrier(field!(membarrier as u8) != 0);
    let block_timeout_ns = field!(block_timeout_ns as u64);
    if block_timeout_ns != 0 {
        b = b.block_timeout(Duration::from_nanos(block_timeout_ns));
    }
    if field!(fifo as u8) != 0 {
        b = b.fifo();
    }
    let max_spawned_threads = field!(max_spawned_threads as u32);
    if max_spawned_threads != 0 {
        b = b.max_spawned_threads(usize::try_from(max_spawned_threads).ok()?);
    }
    let stack_size = field!(stack_size as u64);
    if stack_size != 0 {
        if stack_size < FLOCK_MIN_STACK_SIZE {
            return None;
        }
        b = b.stack_size(usize::try_from(stack_size).ok()?);
    }
    let max_workers = field!(max_workers as u32);
    if max_workers != 0 {
        b = b.max_workers(usize::try_from(max_workers).ok()?);
    }
    let (lanes, lane_count) = (
        field!(lanes as *const flock_lane_t),
        field!(lane_count as u32),
    );
    // SAFETY: per this function's contract; the names are copied by `lanes` below, before
    // this function returns.
    let lanes = unsafe { read_lanes(lanes, lane_count) }?;
    if !lanes.is_empty() {
        b = b.lanes(&lanes);
    }
    // A NULL function pointer reads as None; any other value is the caller's function.
    let hooks = WorkerHooks {
        start: field!(on_worker_start as Option<HookFn>),
        stop: field!(on_worker_stop as Option<HookFn>),
        arg: field!(worker_hook_arg as *mut c_void),
    };
    Some((b, hooks))
}

/// Fills *cfg with the defaults listed on each field of flock_config_t. NULL is a no-op.
///
/// Ownership: the caller owns *cfg. Thread-safety: any thread; concurrent calls must not share
/// one *cfg.
///
/// # Safety
/// `cfg` is NULL or points to writable memory for a flock_config_t.
#[no_mangle]
pub unsafe extern "C" fn flock_config_init(cfg: *mut flock_config_t) {
    ffi_panic_boundary! {
        if cfg.is_null() {
            return;
        }
        // SAFETY: not NULL (checked above) and writable per this function's contract; `write`
        // does not read the (possibly uninitialized) old value.
        unsafe { cfg.write(flock_config::defaults()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn when_full_values_match_the_enumeration() {
        use flock_when_full::*;
        for (v, p) in [
            (FLOCK_WHEN_FULL_BLOCK, Backpressure::Block),
            (FLOCK_WHEN_FULL_REJECT, Backpressure::Reject),
            (FLOCK_WHEN_FULL_CALLER_RUNS, Backpressure::CallerRuns),
            (FLOCK_WHEN_FULL_SPAWN_THREAD, Backpressure::SpawnThread),
        ] {
            assert_eq!(policy(v as u32), Some(p));
        }
        assert_eq!(policy(4), None);
        assert_eq!(policy(u32::MAX), None);
        assert_eq!(std::mem::size_of::<flock_when_full>(), 4);
    }

    #[test]
    fn defaults_build_and_bad_enumerations_do_not() {
        let cfg = flock_config::defaults();
        assert!(cfg.workers >= 1);
        assert_eq!(cfg.capacity, DEFAULT_CAPACITY as u64);
        // SAFETY: a live, initialized config.
        assert!(unsafe { builder_from(&cfg) }.is_some());
        let mut bad = std::mem::MaybeUninit::new(cfg);
        // SAFETY: overwrites the enumeration's 4 bytes with a value it has no variant for, as
        // C may; the struct is then only read through `builder_from`, field by field.
        unsafe {
            std::ptr::addr_of_mut!((*bad.as_mut_ptr()).when_full)
                .cast::<u32>()
                .write(9)
        };
        // SAFETY: as above.
        assert!(unsafe { builder_from(bad.as_ptr()) }.is_none());
    }

    #[test]
    fn a_stack_below_the_minimum_is_refused() {
        let mut cfg = flock_config::defaults();
        for (size, ok) in [
            (0, true),
            (1, false),
            (FLOCK_MIN_STACK_SIZE - 1, false),
            (FLOCK_MIN_STACK_SIZE, true),
            (8 << 20, true),
        ] {
            cfg.stack_size = size;
            // SAFETY: a live, initialized config.
            let built = unsafe { builder_from(&cfg) };
            assert_eq!(built.is_some(), ok, "stack_size {size}");
        }
    }
}
