//! The process-wide pool: built on first use, never dropped.
//!
//! [`global`] and [`try_global`] return one [`Pool`] per process, built the first time either
//! is called with [`Pool::builder`] defaults, except that the environment variable
//! `FLOCK_WORKERS`, when set and non-empty, gives the number of workers (a whole number, 1 or
//! more; surrounding whitespace is ignored). The free functions [`submit`](crate::submit),
//! [`spawn`](crate::spawn), [`join`](crate::join), [`scope`](crate::scope)... use it when
//! called from a thread that is not a worker (on a worker they use that worker's pool, as
//! rayon's do).
//!
//! - **Lifetime.** The pool lives in a `static` and is never dropped, so its workers are not
//!   joined when the process exits (as with rayon's global pool): `main` returning ends them
//!   wherever they are, and tasks still queued then do not run. Call `global().wait()` before
//!   returning when they must.
//! - **Shutdown.** `global().shutdown()` is allowed: it runs what was accepted and joins the
//!   workers, and from then on every submit to the global pool is refused with
//!   [`RejectReason::Shutdown`](crate::RejectReason::Shutdown). The pool is not rebuilt.
//! - **Configuration.** `FLOCK_WORKERS` is the only knob. For anything else (capacity,
//!   backpressure, pinning, hooks), build your own [`Pool`] and share it.
//!
//! ```
//! use flock::RejectReason;
//!
//! flock::submit(|| println!("on the global pool"))?;
//! flock::global().shutdown()?;
//! let refused = flock::submit(|| ()).unwrap_err();
//! assert_eq!(refused.reason(), RejectReason::Shutdown);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Building exactly once: the fast path is a `OnceLock` read. The first callers take an init
//! lock, and whoever holds it checks the cell again, builds, and fills it, so concurrent first
//! calls build one pool between them. `OnceLock::get_or_init` alone cannot do this, because a
//! failed build must be reported and not cached (`get_or_try_init` is unstable): a later call
//! reads `FLOCK_WORKERS` again and tries again.

use crate::{BuildError, Pool};
use std::ffi::OsStr;
use std::sync::{Mutex, OnceLock, PoisonError};

/// The environment variable that sets the global pool's worker count.
const WORKERS_VAR: &str = "FLOCK_WORKERS";

/// The pool, once built. Filled only while `INIT` is held.
static GLOBAL: OnceLock<Pool> = OnceLock::new();

/// Held by the one caller that is building the pool.
static INIT: Mutex<()> = Mutex::new(());

/// The global pool, built on first use; the error says why it could not be built.
///
/// The first call reads `FLOCK_WORKERS` and builds the pool (see [`global`] for what the
/// pool is and how long it lives); later calls return the same pool. A failed build is not
/// remembered: the next call reads `FLOCK_WORKERS` again and tries again.
///
/// # Errors
/// - [`BuildError::InvalidEnv`] when `FLOCK_WORKERS` is set, non-empty, and not a whole
///   number of 1 or more.
/// - The builder's own error otherwise, such as [`BuildError::TooManyWorkers`] for a count
///   above what flock supports or [`BuildError::ThreadSpawn`] when the OS refuses a thread.
///
/// ```
/// let pool = flock::try_global()?;
/// assert!(pool.workers() >= 1);
/// assert!(std::ptr::eq(pool, flock::try_global()?)); // one pool per process
/// # Ok::<(), flock::BuildError>(())
/// ```
pub fn try_global() -> Result<&'static Pool, BuildError> {
    match GLOBAL.get() {
        Some(pool) => Ok(pool),
        None => init_global(),
    }
}

/// The global pool, built on first use.
///
/// One [`Pool`] per process, built with [`Pool::builder`] defaults except that
/// `FLOCK_WORKERS`, when set and non-empty, gives the number of workers. It is never dropped,
/// so its workers are not joined at exit (as with rayon's global pool): wait for it before
/// `main` returns if queued tasks must run. `global().shutdown()` is allowed, after which
/// submits are refused with [`RejectReason::Shutdown`](crate::RejectReason::Shutdown). For
/// any other configuration, build your own `Pool`.
///
/// # Panics
/// If the pool cannot be built, with a message that includes the [`BuildError`], such as a
/// `FLOCK_WORKERS` that is not a whole number of 1 or more. Use [`try_global`] to get the
/// error instead.
///
/// ```
/// let (tx, rx) = std::sync::mpsc::channel();
/// flock::global().submit(move || tx.send(6 * 7).unwrap()).unwrap();
/// assert_eq!(rx.recv().unwrap(), 42);
/// assert!(std::ptr::eq(flock::global(), flock::global()));
/// flock::global().wait().unwrap();
/// ```
#[track_caller]
pub fn global() -> &'static Pool {
    match try_global() {
        Ok(pool) => pool,
        Err(e) => panic!("flock: could not start the global pool: {e}"),
    }
}

/// The slow path of [`try_global`]: build the pool under the init lock, unless the caller
/// that held the lock before us already did.
#[cold]
fn init_global() -> Result<&'static Pool, BuildError> {
    // The lock guards no data, only "who builds"; a panic while it was held left nothing
    // half-done, so a poisoned lock is as good as a clean one.
    let _building = INIT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(pool) = GLOBAL.get() {
        return Ok(pool);
    }
    let mut builder = Pool::builder();
    if let Some(workers) = workers_from_env()? {
        builder = builder.workers(workers);
    }
    let pool = builder.build()?;
    // Only the holder of `INIT` fills the cell and we checked it empty, so this stores `pool`.
    Ok(GLOBAL.get_or_init(|| pool))
}

/// `FLOCK_WORKERS`: `None` when unset or empty, else a whole number of 1 or more.
fn workers_from_env() -> Result<Option<usize>, BuildError> {
    match std::env::var_os(WORKERS_VAR) {
        Some(raw) if !raw.is_empty() => parse_workers(&raw).map(Some),
        _ => Ok(None),
    }
}

/// A worker count as `FLOCK_WORKERS` spells it: surrounding whitespace is ignored, the rest
/// must be a whole number of 1 or more.
fn parse_workers(raw: &OsStr) -> Result<usize, BuildError> {
    match raw.to_str().map(|text| text.trim().parse::<usize>()) {
        Some(Ok(n)) if n >= 1 => Ok(n),
        _ => Err(BuildError::InvalidEnv {
            var: WORKERS_VAR,
            value: raw.to_string_lossy().into_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<usize, BuildError> {
        parse_workers(OsStr::new(text))
    }

    #[test]
    fn whole_numbers_of_one_or_more_parse_with_whitespace_ignored() {
        assert_eq!(parse("1").unwrap(), 1);
        assert_eq!(parse(" 12\n").unwrap(), 12);
    }

    #[test]
    fn anything_else_is_invalid_env_holding_the_value() {
        for text in [
            "0",
            "abc",
            "-1",
            "2.5",
            "4 workers",
            " ",
            "99999999999999999999999",
        ] {
            match parse(text) {
                Err(BuildError::InvalidEnv { var, value }) => {
                    assert_eq!((var, value.as_str()), (WORKERS_VAR, text));
                }
                other => panic!("{text:?} gave {other:?}"),
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn non_unicode_is_invalid_env() {
        use std::os::unix::ffi::OsStrExt;
        let err = parse_workers(OsStr::from_bytes(b"4\xff")).unwrap_err();
        assert!(
            matches!(
                err,
                BuildError::InvalidEnv {
                    var: WORKERS_VAR,
                    ..
                }
            ),
            "{err:?}"
        );
    }
}
