//! `flock_status_t`: what every fallible call returns, and how Rust errors map onto it.
//!
//! The values are explicit and stable: a value, once published, keeps its meaning forever and is
//! never reused; new ones are added at the end.

use crate::panic::ffi_panic_boundary;
use flock_core::{BuildError, RejectReason, ResizeError, WaitError};
use std::ffi::c_char;

/// The result of a flock call. FLOCK_OK (0) is success; every other value is an error and
/// means the call changed nothing and wrote no out-parameter, unless its documentation says
/// otherwise. The numeric values are stable across releases and never reused.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum flock_status {
    /// Success.
    FLOCK_OK = 0,
    /// A pointer argument that must not be NULL was NULL.
    FLOCK_ERR_NULL = 1,
    /// flock_pool_new: the configuration is invalid (workers 0 or above 65,536, capacity 0,
    /// stack_size below FLOCK_MIN_STACK_SIZE, pin_workers with no core to pin to...), or a worker
    /// could not be pinned to its core.
    FLOCK_ERR_INVALID_CONFIG = 2,
    /// The queue is full and the pool's policy is FLOCK_WHEN_FULL_REJECT: the task was not
    /// accepted and the caller still owns its argument.
    FLOCK_ERR_FULL = 3,
    /// The pool is shut down (or shutting down): the task was not accepted and the caller still
    /// owns its argument.
    FLOCK_ERR_SHUTDOWN = 4,
    /// A wait ran out of time; or, for a submit under FLOCK_WHEN_FULL_BLOCK with a
    /// block_timeout_ns, the queue stayed full for that long and the task was not accepted (the
    /// caller still owns its argument).
    FLOCK_ERR_TIMEOUT = 5,
    /// Waiting (flock_wait, flock_wait_timeout, flock_shutdown) was asked for from inside one
    /// of the pool's own tasks (on a worker or off the workers), or from a drop callback that
    /// flock_purge or flock_group_cancel called, where it would wait for itself. Nothing was
    /// changed.
    FLOCK_ERR_WOULD_DEADLOCK = 6,
    /// flock_pool_new, flock_resize: the operating system refused to start a worker thread.
    /// (flock_resize keeps the workers it started before the refusal.)
    FLOCK_ERR_THREAD_SPAWN = 7,
    /// A panic (a bug) inside the library was caught at the call's boundary. The process is
    /// fine; the call did not complete and wrote no out-parameter.
    FLOCK_ERR_PANIC = 8,
    /// An argument is out of its range: a worker index not below the pool's worker count, a
    /// worker count flock_resize cannot take (0, or above the pool's max_workers), a value
    /// that is not one of its enumeration's constants, or flock_global's handle given to
    /// flock_shutdown (the process-wide pool is never shut down).
    FLOCK_ERR_INVALID_ARGUMENT = 9,
    /// The lane named (by index or name) does not exist in this pool: a submit's task was not
    /// accepted (the caller still owns its argument); flock_lane_index and flock_lane_stats
    /// wrote nothing.
    FLOCK_ERR_UNKNOWN_LANE = 10,
    /// flock_wait: the pool is paused while tasks wait in a queue; they would not start before
    /// flock_resume; waiting could last forever.
    FLOCK_ERR_PAUSED = 11,
    /// The operating system refused to pin a worker to its core (the pool was built with
    /// pin_workers). From flock_resize: that worker was not added; the ones started before it
    /// keep running. From flock_pool_new: no pool was made (also when the OS reported no core
    /// this process may run on).
    FLOCK_ERR_PIN_FAILED = 12,
    /// flock_group_wait or flock_group_wait_timeout_ns: every task of the group has finished, and
    /// at least one of them failed (called flock_task_fail, threw in C++, or panicked) since
    /// the last wait that reported failures. The group is usable again.
    FLOCK_ERR_TASK_FAILED = 13,
}

/// See `enum flock_status`.
pub type flock_status_t = flock_status;

/// An enumeration value as C passes it in: any `int` may arrive, and a Rust enum must never
/// hold a value outside its variants, so inputs are read as plain integers and checked.
/// (The header shows the enumeration's own type: cbindgen renames this type to it and does not
/// emit it; C passes enumerations as `int`, which has this type's layout.)
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusArg(pub(crate) u32);

impl flock_status {
    /// Every status, in value order (tests and `flock_status_str` use it).
    pub(crate) const ALL: [flock_status; 14] = [
        flock_status::FLOCK_OK,
        flock_status::FLOCK_ERR_NULL,
        flock_status::FLOCK_ERR_INVALID_CONFIG,
        flock_status::FLOCK_ERR_FULL,
        flock_status::FLOCK_ERR_SHUTDOWN,
        flock_status::FLOCK_ERR_TIMEOUT,
        flock_status::FLOCK_ERR_WOULD_DEADLOCK,
        flock_status::FLOCK_ERR_THREAD_SPAWN,
        flock_status::FLOCK_ERR_PANIC,
        flock_status::FLOCK_ERR_INVALID_ARGUMENT,
        flock_status::FLOCK_ERR_UNKNOWN_LANE,
        flock_status::FLOCK_ERR_PAUSED,
        flock_status::FLOCK_ERR_PIN_FAILED,
        flock_status::FLOCK_ERR_TASK_FAILED,
    ];

    /// The status with this numeric value, if there is one.
    pub(crate) fn from_raw(raw: u32) -> Option<flock_status> {
        Self::ALL.get(usize::try_from(raw).ok()?).copied()
    }

    /// A short, static, NUL-terminated description.
    fn message(self) -> &'static std::ffi::CStr {
        match self {
            flock_status::FLOCK_OK => c"success",
            flock_status::FLOCK_ERR_NULL => c"a required pointer argument was NULL",
            flock_status::FLOCK_ERR_INVALID_CONFIG => c"invalid pool configuration",
            flock_status::FLOCK_ERR_FULL => c"the pool's queue is full; the task was not accepted",
            flock_status::FLOCK_ERR_SHUTDOWN => c"the pool is shut down; the task was not accepted",
            flock_status::FLOCK_ERR_TIMEOUT => c"the time limit passed first",
            flock_status::FLOCK_ERR_WOULD_DEADLOCK => {
                c"called from one of the pool's own tasks, where it would wait for itself"
            }
            flock_status::FLOCK_ERR_THREAD_SPAWN => c"the OS refused to start a worker thread",
            flock_status::FLOCK_ERR_PANIC => {
                c"a panic inside flock was caught; the call did not complete"
            }
            flock_status::FLOCK_ERR_INVALID_ARGUMENT => c"an argument is out of its range",
            flock_status::FLOCK_ERR_UNKNOWN_LANE => c"no lane of that index or name in this pool",
            flock_status::FLOCK_ERR_PAUSED => {
                c"the pool is paused with tasks queued; resume it before waiting"
            }
            flock_status::FLOCK_ERR_PIN_FAILED => {
                c"the OS refused to pin a new worker to its core; that worker was not added"
            }
            flock_status::FLOCK_ERR_TASK_FAILED => {
                c"every task of the group finished, and at least one of them failed"
            }
        }
    }
}

impl From<RejectReason> for flock_status {
    fn from(reason: RejectReason) -> Self {
        match reason {
            RejectReason::Full => flock_status::FLOCK_ERR_FULL,
            RejectReason::Timeout => flock_status::FLOCK_ERR_TIMEOUT,
            RejectReason::Shutdown => flock_status::FLOCK_ERR_SHUTDOWN,
            RejectReason::UnknownLane => flock_status::FLOCK_ERR_UNKNOWN_LANE,
            // RejectReason is non_exhaustive: a reason added later is reported as a bad
            // argument until a status of its own is published for it.
            _ => flock_status::FLOCK_ERR_INVALID_ARGUMENT,
        }
    }
}

impl From<WaitError> for flock_status {
    fn from(e: WaitError) -> Self {
        match e {
            WaitError::WouldDeadlock => flock_status::FLOCK_ERR_WOULD_DEADLOCK,
            WaitError::Timeout => flock_status::FLOCK_ERR_TIMEOUT,
            WaitError::Paused => flock_status::FLOCK_ERR_PAUSED,
            // WaitError is non_exhaustive: as for RejectReason above.
            _ => flock_status::FLOCK_ERR_INVALID_ARGUMENT,
        }
    }
}

impl From<&BuildError> for flock_status {
    fn from(e: &BuildError) -> Self {
        match e {
            BuildError::ThreadSpawn(_) => flock_status::FLOCK_ERR_THREAD_SPAWN,
            // The OS's answers, not the configuration's: a C caller tells them apart by status.
            BuildError::PinFailed { .. } | BuildError::NoCoresToPin => {
                flock_status::FLOCK_ERR_PIN_FAILED
            }
            // Every other variant (including ones added later: BuildError is non_exhaustive)
            // is a configuration that cannot be satisfied.
            _ => flock_status::FLOCK_ERR_INVALID_CONFIG,
        }
    }
}

impl From<&ResizeError> for flock_status {
    fn from(e: &ResizeError) -> Self {
        match e {
            ResizeError::ZeroWorkers | ResizeError::TooManyWorkers { .. } => {
                flock_status::FLOCK_ERR_INVALID_ARGUMENT
            }
            ResizeError::Shutdown => flock_status::FLOCK_ERR_SHUTDOWN,
            ResizeError::ThreadSpawn(_) => flock_status::FLOCK_ERR_THREAD_SPAWN,
            ResizeError::PinFailed { .. } => flock_status::FLOCK_ERR_PIN_FAILED,
            // ResizeError is non_exhaustive: a variant added later is a request this pool
            // cannot satisfy until a status of its own is published for it.
            _ => flock_status::FLOCK_ERR_INVALID_ARGUMENT,
        }
    }
}

/// A short English description of a status: a static NUL-terminated string, never NULL, that
/// the caller must not free or modify. A value that is not a flock_status_t constant gives
/// "unknown flock status".
///
/// Thread-safety: may be called from any thread at any time, with or without a pool.
#[no_mangle]
pub extern "C" fn flock_status_str(status: StatusArg) -> *const c_char {
    ffi_panic_boundary! {
        match flock_status::from_raw(status.0) {
            Some(s) => s.message().as_ptr(),
            None => c"unknown flock status".as_ptr(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn unknown_lane_message_does_not_speak_of_a_task() {
        // flock_lane_index and flock_lane_stats answer it too, where no task was offered.
        let text = flock_status::FLOCK_ERR_UNKNOWN_LANE
            .message()
            .to_str()
            .unwrap();
        assert!(!text.contains("task"), "{text}");
    }

    #[test]
    fn values_are_explicit_and_stable() {
        for (i, s) in flock_status::ALL.iter().enumerate() {
            assert_eq!(*s as u32, i as u32);
            assert_eq!(flock_status::from_raw(i as u32), Some(*s));
        }
        assert_eq!(flock_status::FLOCK_ERR_PANIC as u32, 8);
        assert_eq!(flock_status::FLOCK_ERR_UNKNOWN_LANE as u32, 10);
        assert_eq!(flock_status::FLOCK_ERR_PAUSED as u32, 11);
        assert_eq!(flock_status::FLOCK_ERR_PIN_FAILED as u32, 12);
        assert_eq!(flock_status::FLOCK_ERR_TASK_FAILED as u32, 13);
        assert_eq!(flock_status::from_raw(14), None);
        assert_eq!(flock_status::from_raw(u32::MAX), None);
    }

    #[test]
    fn rust_errors_map_to_their_statuses() {
        use flock_status::*;
        assert_eq!(flock_status::from(RejectReason::Full), FLOCK_ERR_FULL);
        assert_eq!(flock_status::from(RejectReason::Timeout), FLOCK_ERR_TIMEOUT);
        assert_eq!(
            flock_status::from(RejectReason::Shutdown),
            FLOCK_ERR_SHUTDOWN
        );
        assert_eq!(
            flock_status::from(WaitError::WouldDeadlock),
            FLOCK_ERR_WOULD_DEADLOCK
        );
        assert_eq!(flock_status::from(WaitError::Timeout), FLOCK_ERR_TIMEOUT);
        assert_eq!(flock_status::from(WaitError::Paused), FLOCK_ERR_PAUSED);
        assert_eq!(
            flock_status::from(RejectReason::UnknownLane),
            FLOCK_ERR_UNKNOWN_LANE
        );
        assert_eq!(
            flock_status::from(&BuildError::DuplicateLane { lane: "a".into() }),
            FLOCK_ERR_INVALID_CONFIG
        );
        assert_eq!(
            flock_status::from(&ResizeError::ZeroWorkers),
            FLOCK_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            flock_status::from(&ResizeError::TooManyWorkers {
                requested: 9,
                max: 8
            }),
            FLOCK_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            flock_status::from(&ResizeError::Shutdown),
            FLOCK_ERR_SHUTDOWN
        );
        assert_eq!(
            flock_status::from(&ResizeError::ThreadSpawn(std::io::Error::other("no"))),
            FLOCK_ERR_THREAD_SPAWN
        );
        assert_eq!(
            flock_status::from(&ResizeError::PinFailed { worker: 3, core: 1 }),
            FLOCK_ERR_PIN_FAILED
        );
        assert_eq!(
            flock_status::from(&BuildError::ZeroWorkers),
            FLOCK_ERR_INVALID_CONFIG
        );
        assert_eq!(
            flock_status::from(&BuildError::ZeroCapacity),
            FLOCK_ERR_INVALID_CONFIG
        );
        assert_eq!(
            flock_status::from(&BuildError::PinFailed { worker: 1, core: 0 }),
            FLOCK_ERR_PIN_FAILED
        );
        assert_eq!(
            flock_status::from(&BuildError::NoCoresToPin),
            FLOCK_ERR_PIN_FAILED
        );
        assert_eq!(
            flock_status::from(&BuildError::PinningUnavailable),
            FLOCK_ERR_INVALID_CONFIG
        );
        let io = std::io::Error::other("no threads");
        assert_eq!(
            flock_status::from(&BuildError::ThreadSpawn(io)),
            FLOCK_ERR_THREAD_SPAWN
        );
    }

    #[test]
    fn every_status_has_a_distinct_string() {
        let mut seen = std::collections::HashSet::new();
        for s in flock_status::ALL {
            // SAFETY: flock_status_str returns static NUL-terminated strings.
            let text = unsafe { CStr::from_ptr(flock_status_str(StatusArg(s as u32))) };
            assert!(!text.to_bytes().is_empty());
            assert!(seen.insert(text.to_owned()), "{s:?} repeats a string");
        }
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(flock_status_str(StatusArg(77))) };
        assert_eq!(unknown, c"unknown flock status");
    }
}
