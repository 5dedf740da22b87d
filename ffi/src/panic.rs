//! The panic boundary: no panic ever unwinds into C.
//!
//! Every exported function puts its whole body inside [`ffi_panic_boundary!`]. A panic inside
//! is caught there and turned into the function's documented "panicked" value
//! ([`PanicDefault`]): `FLOCK_ERR_PANIC` for functions returning a status, `-1` for
//! `flock_current_worker`, a fixed string for the string functions, nothing for `void` ones.
//! (Rust ≥ 1.81 also aborts rather than unwind out of an `extern "C"` function; the boundary is
//! what turns that abort into an error the caller can handle.)
//!
//! Panics in C tasks are not this module's concern: a C callback cannot unwind, and the core
//! catches panics of every Rust closure it runs, including the wrapper around a C task.

use crate::error::flock_status_t;
use std::any::Any;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs the body of an exported function, catching any panic and returning the return type's
/// [`PanicDefault`] instead. The body is a closure's body: `return` leaves the function.
macro_rules! ffi_panic_boundary {
    ( $($body:tt)* ) => {
        match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| {
            $crate::panic::test_hook();
            $($body)*
        })) {
            Ok(value) => value,
            Err(payload) => $crate::panic::caught(payload),
        }
    };
}
pub(crate) use ffi_panic_boundary;

/// What an exported function returns when its body panicked.
pub(crate) trait PanicDefault {
    fn on_panic() -> Self;
}

impl PanicDefault for flock_status_t {
    fn on_panic() -> Self {
        flock_status_t::FLOCK_ERR_PANIC
    }
}

impl PanicDefault for () {
    fn on_panic() -> Self {}
}

/// `flock_current_worker`: "not a worker".
impl PanicDefault for i32 {
    fn on_panic() -> Self {
        -1
    }
}

/// `flock_yield_to_lanes`: nothing ran.
impl PanicDefault for usize {
    fn on_panic() -> Self {
        0
    }
}

/// `flock_status_str`, `flock_version`: a static string, never NULL.
impl PanicDefault for *const c_char {
    fn on_panic() -> Self {
        c"flock: internal panic".as_ptr()
    }
}

/// Disposes of a caught panic and returns the panicked value. The payload is dropped inside
/// its own `catch_unwind`, since a payload's destructor may itself panic; such a payload is
/// leaked rather than let through.
#[cold]
pub(crate) fn caught<T: PanicDefault>(payload: Box<dyn Any + Send>) -> T {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
    T::on_panic()
}

#[cfg(feature = "test-hooks")]
std::thread_local! {
    static PANIC_NEXT_CALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// With the `test-hooks` feature: panics if `flock_test_panic_next_call` armed this thread.
#[inline]
pub(crate) fn test_hook() {
    #[cfg(feature = "test-hooks")]
    if PANIC_NEXT_CALL.with(|armed| armed.replace(false)) {
        panic!("flock: panic forced by flock_test_panic_next_call (test hook)");
    }
}

/// Makes the next exported flock call on the calling thread panic inside the library, right
/// after entering its panic boundary, so a test can check that the call returns its documented
/// panicked value (FLOCK_ERR_PANIC for functions returning a status, -1 from
/// flock_current_worker, a fixed non-NULL string from the string functions) and that the
/// process carries on. The forced panic happens before the call does anything: nothing is
/// allocated, freed or written. The calls that disarm the hook are the exported functions
/// themselves; this function does not count as one.
///
/// Only in libraries built with the `test-hooks` cargo feature (the C test suite's build);
/// declared only when FLOCK_TEST_HOOKS is defined. Thread-safety: per thread.
#[cfg(feature = "test-hooks")]
#[no_mangle]
pub extern "C" fn flock_test_panic_next_call() {
    PANIC_NEXT_CALL.with(|armed| armed.set(true));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_body(fail: bool) -> flock_status_t {
        ffi_panic_boundary! {
            if fail {
                panic!("boom");
            }
            flock_status_t::FLOCK_OK
        }
    }

    #[test]
    fn the_boundary_turns_a_panic_into_the_default() {
        assert_eq!(status_body(false), flock_status_t::FLOCK_OK);
        assert_eq!(status_body(true), flock_status_t::FLOCK_ERR_PANIC);
        let n: i32 = ffi_panic_boundary! { panic!("boom") };
        assert_eq!(n, -1);
    }

    #[test]
    fn a_payload_that_panics_when_dropped_is_contained() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("payload destructor");
            }
        }
        let s: flock_status_t = ffi_panic_boundary! { std::panic::panic_any(Bomb) };
        assert_eq!(s, flock_status_t::FLOCK_ERR_PANIC);
    }
}
