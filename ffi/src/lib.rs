//! libflock: the C ABI of the flock work-stealing pool.
//!
//! This crate builds `libflock.so` and `libflock.a`; `include/flock.h` declares what they
//! export (generated from this crate by a pinned cbindgen, see `ffi/README.md`) and
//! `include/flock.hpp` wraps it for C++. It owns every `extern "C"` function and every raw
//! pointer C hands in; the core crate (package `flock-pool`, library `flock`, imported here as
//! `flock_core`) has no C in it.
//!
//! One module per C type: `error` (`flock_status_t`), `config` (`flock_config_t`), `lane`
//! (`flock_lane_t`, finding a lane by name), `pool` (`flock_pool_t`, waiting and shutdown),
//! `global` (`flock_global`, the process-wide pool), `control` (resizing, pausing and
//! resuming a running pool), `task` (submitting C
//! callbacks, one at a time or in batches), `group` (`flock_group_t`, task groups, and
//! `flock_purge`), `stats` (`flock_stats_t`, `flock_worker_stats_t`,
//! `flock_lane_stats_t`), and `panic` (the boundary every export sits behind). Conventions, all checked by `ffi/tests`: every pointer argument is checked for
//! NULL (`FLOCK_ERR_NULL`), out-parameters are written only on success, enumerations coming
//! in from C are read as integers and range-checked, and no panic unwinds into C.
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
#![warn(rust_2018_idioms)]
// The exported names are C's, not Rust's.
#![allow(non_camel_case_types)]

mod config;
mod control;
mod error;
mod global;
mod group;
mod lane;
mod panic;
mod pool;
mod stats;
mod task;

pub use config::{
    flock_config, flock_config_init, flock_config_t, flock_when_full, flock_when_full_t,
    FLOCK_MIN_STACK_SIZE,
};
pub use control::{
    flock_is_paused, flock_pause, flock_resize, flock_resume, flock_uses_membarrier,
};
pub use error::{flock_status, flock_status_str, flock_status_t, StatusArg};
pub use global::flock_global;
#[allow(deprecated)] // flock_group_wait_timeout: kept for C programs, re-exported as it was
pub use group::{
    flock_group, flock_group_cancel, flock_group_free, flock_group_new, flock_group_submit,
    flock_group_submit_ex, flock_group_submit_lane, flock_group_submit_lane_ex, flock_group_t,
    flock_group_wait, flock_group_wait_timeout, flock_group_wait_timeout_ns, flock_purge,
};
pub use lane::{
    flock_lane, flock_lane_index, flock_lane_t, flock_yield_to_lanes, FLOCK_LANE_NAME_MAX,
    FLOCK_MAX_LANES,
};
#[cfg(feature = "test-hooks")]
pub use panic::flock_test_panic_next_call;
pub use pool::{
    flock_current_worker, flock_pool, flock_pool_free, flock_pool_new, flock_pool_t,
    flock_shutdown, flock_shutdown_mode, flock_shutdown_mode_t, flock_wait, flock_wait_timeout,
    ShutdownModeArg,
};
pub use stats::{
    flock_lane_stats, flock_lane_stats_t, flock_latency_stats, flock_latency_stats_t,
    flock_running, flock_stats, flock_stats_t, flock_worker_state, flock_worker_state_t,
    flock_worker_stats, flock_worker_stats_t,
};
pub use task::{
    flock_submit, flock_submit_batch, flock_submit_batch_ex, flock_submit_ex, flock_submit_lane,
    flock_submit_lane_ex, flock_task_fail,
};

use panic::ffi_panic_boundary;
use std::ffi::c_char;

/// The library's version, "MAJOR.MINOR.PATCH": a static NUL-terminated string, never NULL,
/// that the caller must not free. Compare it with FLOCK_VERSION from the header to catch a
/// program running against a different library than it was compiled with.
///
/// Thread-safety: any thread, any time.
#[no_mangle]
pub extern "C" fn flock_version() -> *const c_char {
    ffi_panic_boundary! {
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    #[test]
    fn the_header_version_is_the_library_version() {
        // SAFETY: flock_version returns a static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(super::flock_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        // FLOCK_VERSION comes from ffi/cbindgen.toml (cbindgen cannot copy a Rust string).
        let header = include_str!("../../include/flock.h");
        let define = format!("#define FLOCK_VERSION \"{}\"", env!("CARGO_PKG_VERSION"));
        assert!(header.contains(&define), "include/flock.h lacks `{define}`");
    }
}
