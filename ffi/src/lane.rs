//! `flock_lane_t`: a lane as a configuration names it, `flock_lane_index`, finding one, and
//! `flock_yield_to_lanes`, letting heavier lanes run inside a long task.
//!
//! Lanes come in through `flock_config_t.lanes`, C strings and weights in C memory. They are
//! read here, once, while `flock_pool_new` runs: each name checked (not NULL, UTF-8, short
//! enough to come back whole in `flock_lane_stats_t.name`) and borrowed just long enough for
//! the core's builder to copy it. The core checks the rest (count, weights, duplicates).

use crate::error::flock_status_t;
use crate::panic::ffi_panic_boundary;
use crate::pool::{flock_pool_t, pool_ref};
use std::ffi::{c_char, CStr};

/// The most lanes a pool may have (flock_config_t.lane_count above it is
/// FLOCK_ERR_INVALID_CONFIG).
pub const FLOCK_MAX_LANES: u32 = 16;

/// The size of flock_lane_stats_t.name, NUL included: a lane's name is at most
/// FLOCK_LANE_NAME_MAX - 1 (63) bytes long.
pub const FLOCK_LANE_NAME_MAX: usize = 64;

/// One lane of a pool, as flock_config_t.lanes lists it. The lane's index is its position in
/// that array, from 0; flock_submit (from outside the pool) uses lane 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct flock_lane {
    /// The lane's name: a NUL-terminated UTF-8 string of at most FLOCK_LANE_NAME_MAX - 1 bytes,
    /// different from every other lane's. Not NULL. flock_pool_new copies it.
    pub name: *const c_char,
    /// Its share of the workers' time when several lanes have queued tasks, relative to the
    /// other lanes' weights: 1 or more.
    pub weight: u32,
}

/// See `struct flock_lane`.
pub type flock_lane_t = flock_lane;

/// The `(name, weight)` pairs of the `count` lanes at `lanes`, borrowed from C, or `None`
/// when the list cannot be a pool's: more than [`FLOCK_MAX_LANES`], `lanes` NULL with a count,
/// or a name that is NULL, not UTF-8 or too long. `count` 0 is the empty list (the caller
/// then keeps the default lane).
///
/// # Safety
/// When `count` is 1 to [`FLOCK_MAX_LANES`] and `lanes` is not NULL, `lanes` points to
/// `count` readable `flock_lane`s whose names are NULL or NUL-terminated readable strings,
/// unchanged while the result is in use (`'a`).
pub(crate) unsafe fn read_lanes<'a>(
    lanes: *const flock_lane,
    count: u32,
) -> Option<Vec<(&'a str, u32)>> {
    if count == 0 {
        return Some(Vec::new());
    }
    // Checked before anything is read: a count past the limit is never trusted.
    if count > FLOCK_MAX_LANES || lanes.is_null() {
        return None;
    }
    (0..count as usize)
        .map(|i| {
            // SAFETY: `i < count`, and `lanes` holds `count` readable lanes (this function's
            // contract). A pointer and a u32 have no invalid bit patterns.
            let lane = unsafe { lanes.add(i).read() };
            if lane.name.is_null() {
                return None;
            }
            // SAFETY: not NULL (checked above), so a readable NUL-terminated string that
            // outlives `'a` (this function's contract).
            let name = unsafe { CStr::from_ptr::<'a>(lane.name) }.to_str().ok()?;
            (name.len() < FLOCK_LANE_NAME_MAX).then_some((name, lane.weight))
        })
        .collect()
}

/// Finds the lane called `name` and stores its index (its position in flock_config_t.lanes,
/// from 0) in *out, for flock_submit_lane, flock_submit_batch and flock_lane_stats. A pool
/// built without lanes has one, "default", at index 0.
///
/// Returns FLOCK_OK; FLOCK_ERR_NULL when pool, name or out is NULL; FLOCK_ERR_UNKNOWN_LANE
/// when the pool has no lane of that name (a string that is not UTF-8 names none). *out is
/// written only on FLOCK_OK.
///
/// Ownership: name is only read during the call; the caller owns *out. Thread-safety: any
/// thread, concurrently with every other call on the pool except flock_pool_free; a pool's
/// lanes never change, so the index stays valid as long as the pool.
///
/// # Safety
/// `pool` is NULL or a live pool from flock_pool_new; `name` is NULL or a readable
/// NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn flock_lane_index(
    pool: *const flock_pool_t,
    name: *const c_char,
    out: *mut u32,
) -> flock_status_t {
    ffi_panic_boundary! {
        // SAFETY: per this function's contract.
        let pool = match unsafe { pool_ref(pool) } {
            Ok(pool) => pool,
            Err(status) => return status,
        };
        if name.is_null() || out.is_null() {
            return flock_status_t::FLOCK_ERR_NULL;
        }
        // SAFETY: not NULL (checked above), so a readable NUL-terminated string.
        let name = unsafe { CStr::from_ptr(name) };
        let Some(lane) = name.to_str().ok().and_then(|name| pool.inner.lane(name)) else {
            return flock_status_t::FLOCK_ERR_UNKNOWN_LANE;
        };
        // Below FLOCK_MAX_LANES, so it fits.
        let index = u32::try_from(lane.index()).unwrap_or(u32::MAX);
        // SAFETY: not NULL (checked above) and writable per the contract.
        unsafe { out.write(index) };
        flock_status_t::FLOCK_OK
    }
}

/// A cooperative preemption point for long tasks in a pool with lanes: runs, on the calling
/// thread, queued tasks of lanes weighted above the running task's lane, for as long as the
/// weights say they are due, and returns how many ran.
///
/// flock does not preempt a running task: a task submitted to a heavy lane while every worker
/// runs a long task of a light one waits for one of them to end. A long task that calls
/// flock_yield_to_lanes every few microseconds bounds that wait by the time between its calls.
/// The heavier lanes get their share of the calling task's own time and no more (a lane of
/// weight 8 against the caller's weight 1 gets up to 8 ns per ns the caller has run); tasks
/// run here are counted in their own lanes. Only strictly heavier lanes run, so a task run
/// here that yields in turn nests at most one level per distinct weight.
///
/// Returns 0 at once outside a pool's worker thread, in a pool with one lane, from a task of
/// the heaviest lane, with nothing queued in a heavier lane, or while the pool is paused.
///
/// Thread-safety: any thread, any time; it acts only on the calling worker's own pool.
#[no_mangle]
pub extern "C" fn flock_yield_to_lanes() -> usize {
    ffi_panic_boundary! {
        flock_core::yield_to_lanes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr;

    #[test]
    fn the_limits_are_the_cores() {
        assert_eq!(FLOCK_MAX_LANES as usize, flock_core::MAX_LANES);
    }

    #[test]
    fn lanes_are_read_and_checked() {
        let lane = |name: &CStr, weight| flock_lane {
            name: name.as_ptr(),
            weight,
        };
        let two = [lane(c"hi", 4), lane(c"lo", 1)];
        // SAFETY: `two` holds two lanes with static names.
        let read = unsafe { read_lanes(two.as_ptr(), 2) };
        assert_eq!(read, Some(vec![("hi", 4), ("lo", 1)]));
        // SAFETY: a count of 0 reads nothing.
        assert_eq!(unsafe { read_lanes(ptr::null(), 0) }, Some(vec![]));
        // SAFETY: NULL with a count, and a count past the limit, are refused before reading.
        assert_eq!(unsafe { read_lanes(ptr::null(), 1) }, None);
        // SAFETY: as above.
        assert_eq!(
            unsafe { read_lanes(two.as_ptr(), FLOCK_MAX_LANES + 1) },
            None
        );
        let long = std::ffi::CString::new(vec![b'x'; FLOCK_LANE_NAME_MAX]).unwrap();
        let bad = [
            flock_lane {
                name: ptr::null(),
                weight: 1,
            },
            lane(c"\xff\xfe", 1),
            lane(&long, 1),
        ];
        for one in &bad {
            // SAFETY: one lane, with a NULL or readable name.
            assert_eq!(unsafe { read_lanes(one, 1) }, None);
        }
        let longest = std::ffi::CString::new(vec![b'y'; FLOCK_LANE_NAME_MAX - 1]).unwrap();
        // SAFETY: one lane with a readable name.
        assert!(unsafe { read_lanes(&lane(&longest, 1), 1) }.is_some());
    }
}
