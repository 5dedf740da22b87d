//! The process-wide pool: built on first use, never dropped.
//!
//! [`global`] and [`try_global`] return one [`Pool`] per process, built the first time either
//! is called with [`Pool::builder`] defaults, except that the environment variable
//! `FLOCK_WORKERS`, when set and non-empty, gives the number of workers (a whole number, 1 or
//! more; surrounding whitespace is ignored), and `FLOCK_MEMBARRIER`, when set and non-empty,
//! is `0` or `1` for [`PoolBuilder::membarrier`](crate::PoolBuilder::membarrier) (`0`: the
//! workers' parks interrupt no other thread of the process, and every push fences instead;
//! surrounding whitespace is ignored). The free functions [`submit`](crate::submit),
//! [`spawn`](fn@crate::spawn), [`join`](fn@crate::join), [`scope`](fn@crate::scope)... use it when
//! called from a thread that is not a worker (on a worker they use that worker's pool, as
//! rayon's do).
//!
//! - **Lifetime.** The pool lives in a `static` and is never dropped, so its workers are not
//!   joined when the process exits (as with rayon's global pool): `main` returning ends them
//!   wherever they are, and tasks still queued then do not run. Call `global().wait()` before
//!   returning when they must.
//! - **Shutdown.** None: every part of the process shares the pool, so no part may close it
//!   for the others. `global().shutdown()`, `shutdown_timeout` and `shutdown_now` change
//!   nothing and answer [`WaitError::GlobalPool`](crate::WaitError::GlobalPool);
//!   `global().wait()` waits for what was accepted. (Pausing and resizing it are allowed.)
//! - **Configuration.** [`PoolBuilder::build_global`](crate::PoolBuilder::build_global)
//!   builds it from a builder of yours, once, before its first use (as rayon's
//!   `ThreadPoolBuilder::build_global`); the environment variables are then not read.
//!   Otherwise the first use builds it with the defaults and `FLOCK_WORKERS` and
//!   `FLOCK_MEMBARRIER`.
//! - **`fork()`.** A child process has none of its parent's threads, so the parent's global
//!   pool has no workers there. On Unix the child forgets it (a `pthread_atfork` handler,
//!   registered when the pool is first built, empties the slot; the parent's copy is leaked,
//!   not dropped) and builds a fresh global pool on first use, with both variables read
//!   again (a `build_global` configuration of the parent is not carried over: call it again
//!   in the child). Workers sleep on futexes of their own (not in `parking_lot`'s process-wide
//!   table, whose stale entries a child inherits), so forking while they sleep is fine. Fork
//!   from a thread that is not one of the pool's workers, and while no other thread is inside
//!   a flock call (a `wait()`, a blocked submit, a lock taken for a moment): as in any
//!   multi-threaded process, what another thread held at the fork stays held in the child.
//!   Pools you built yourself are not rebuilt: see [`Pool`].
//!
//! ```
//! use flock::WaitError;
//!
//! flock::submit(|| println!("on the global pool"))?;
//! assert_eq!(flock::global().shutdown(), Err(WaitError::GlobalPool));
//! flock::submit(|| println!("still open"))?;
//! flock::global().wait()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Building exactly once: the fast path is one atomic load of the slot. The first callers
//! take the builder's turn (`BuildTurn`), and whoever holds it checks the slot again, builds,
//! and fills it, so concurrent first calls build one pool between them. A failed build is
//! reported and not cached: a later call reads the variables again and tries again. The
//! turn is an atomic flag rather than a mutex so that the fork handler can clear it: a child
//! forked while another thread was building must not wait for a thread it does not have. A
//! `OnceLock` cannot be emptied in the child either, hence the slot is an `AtomicPtr` to a
//! leaked pool.

use crate::sys::Leaked;
use crate::{BuildError, Pool, PoolBuilder};
use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, Ordering};

/// The environment variable that sets the global pool's worker count.
const WORKERS_VAR: &str = "FLOCK_WORKERS";
/// The environment variable that sets whether the global pool's parks use `membarrier(2)`.
const MEMBARRIER_VAR: &str = "FLOCK_MEMBARRIER";

/// The pool, once built: a leaked `Box`, so it lives for the rest of the process. Filled
/// only by the holder of the builder's turn; emptied only in a forked child
/// (`forget_in_child`), which leaks the parent's copy.
static GLOBAL: Leaked<Pool> = Leaked::new();

/// Set while one caller builds the pool (`BuildTurn`).
static BUILDING: AtomicBool = AtomicBool::new(false);

/// The pool in the slot, if any.
fn built() -> Option<&'static Pool> {
    // Acquire inside: pairs with the Release of `fill`, so the pool is seen whole.
    GLOBAL.get()
}

/// The right to build the global pool, held by one caller at a time; given back on drop.
struct BuildTurn;

impl BuildTurn {
    /// Waits for the turn. Only first calls racing one build ever wait, for as long as it
    /// takes to start the workers, so yielding is enough.
    fn take() -> BuildTurn {
        // Acquire: pairs with the Release in `drop`, so we see the slot the last holder filled.
        while BUILDING
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
        BuildTurn
    }
}

impl Drop for BuildTurn {
    fn drop(&mut self) {
        BUILDING.store(false, Ordering::Release);
    }
}

/// The global pool, built on first use; the error says why it could not be built.
///
/// The first call reads `FLOCK_WORKERS` and `FLOCK_MEMBARRIER` and builds the pool (see
/// [`global`] for what the pool is and how long it lives); later calls return the same pool.
/// A failed build is not remembered: the next call reads the variables again and tries again.
///
/// # Errors
/// - [`BuildError::InvalidEnv`] when `FLOCK_WORKERS` is set, non-empty, and not a whole
///   number of 1 or more, or `FLOCK_MEMBARRIER` is set, non-empty, and not `0` or `1`.
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
    match built() {
        Some(pool) => Ok(pool),
        None => init_global(),
    }
}

/// The global pool, built on first use.
///
/// One [`Pool`] per process, built with [`Pool::builder`] defaults except that
/// `FLOCK_WORKERS`, when set and non-empty, gives the number of workers, and
/// `FLOCK_MEMBARRIER` (`0` or `1`) [`PoolBuilder::membarrier`](crate::PoolBuilder::membarrier).
/// It is never dropped,
/// so its workers are not joined at exit (as with rayon's global pool): wait for it before
/// `main` returns if queued tasks must run. It cannot be shut down: its shutdown calls
/// answer [`WaitError::GlobalPool`](crate::WaitError::GlobalPool) and change nothing. For
/// any other configuration, call [`PoolBuilder::build_global`](crate::PoolBuilder::build_global)
/// before its first use, or build your own `Pool`.
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

/// The slow path of [`try_global`]: build the pool in the builder's turn, unless the caller
/// that held the turn before us already did.
#[cold]
fn init_global() -> Result<&'static Pool, BuildError> {
    let _turn = BuildTurn::take();
    if let Some(pool) = built() {
        return Ok(pool);
    }
    let mut builder = Pool::builder();
    if let Some(workers) = workers_from_env()? {
        builder = builder.workers(workers);
    }
    if let Some(membarrier) = membarrier_from_env()? {
        builder = builder.membarrier(membarrier);
    }
    fill(builder.build()?)
}

/// Puts `pool` in the slot, for the rest of the process. Called by the builder's turn holder
/// only, with the slot empty.
fn fill(pool: Pool) -> Result<&'static Pool, BuildError> {
    forget_on_fork();
    // Release inside: pairs with the Acquire load in `built`. Only the turn's holder fills
    // the slot.
    Ok(GLOBAL.fill(Box::new(pool.into_global())))
}

impl PoolBuilder {
    /// Builds the process's [`global`](fn@crate::global) pool with this configuration,
    /// instead of the defaults and environment variables its first use would read; the free
    /// functions ([`flock::spawn`](fn@crate::spawn), [`flock::join`](fn@crate::join), ...) off
    /// the workers then use it. As rayon's `ThreadPoolBuilder::build_global`. Call it early
    /// in `main`: once the global pool exists it cannot be replaced. The pool lives for the
    /// rest of the process and cannot be shut down (see [`global`](fn@crate::global)).
    ///
    /// # Errors
    /// [`BuildError::GlobalAlreadyBuilt`] when the global pool was built already (by an
    /// earlier call, or by a first use); nothing is started then. Any error of
    /// [`build`](PoolBuilder::build) otherwise, and the global pool stays unbuilt.
    ///
    /// ```
    /// flock::Pool::builder().workers(2).capacity(1_000).build_global()?;
    /// assert_eq!(flock::global().workers(), 2);
    /// assert_eq!(flock::global().capacity(), 1_000);
    /// let again = flock::Pool::builder().build_global().unwrap_err();
    /// assert!(matches!(again, flock::BuildError::GlobalAlreadyBuilt));
    /// # Ok::<(), flock::BuildError>(())
    /// ```
    pub fn build_global(self) -> Result<(), BuildError> {
        build_global(self)
    }
}

/// `PoolBuilder::build_global`: builds the global pool from `builder`, unless it is built
/// already (then `GlobalAlreadyBuilt`, and nothing is started).
fn build_global(builder: PoolBuilder) -> Result<(), BuildError> {
    let _turn = BuildTurn::take();
    if built().is_some() {
        return Err(BuildError::GlobalAlreadyBuilt);
    }
    fill(builder.build()?).map(drop)
}

/// Registers `forget_in_child` with `pthread_atfork`, once per process (a forked child
/// inherits the registration, and the flag saying it is done).
#[cfg(unix)]
fn forget_on_fork() {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    // Relaxed: only the builder's turn holder gets here, and the turn orders them.
    if REGISTERED.swap(true, Ordering::Relaxed) {
        return;
    }
    // `forget_in_child` only stores to atomics, which is async-signal-safe, as a handler
    // running in a forked child of a threaded process must be. If the registration fails
    // (ENOMEM) the child keeps the parent's pool, without workers.
    let _ = crate::sys::on_fork_child(forget_in_child);
}

#[cfg(not(unix))]
fn forget_on_fork() {}

/// In a forked child: the parent's pool has no workers here. Leak it and let the first use
/// build a fresh one; nobody builds in the child yet, whatever the parent was doing.
#[cfg(unix)]
extern "C" fn forget_in_child() {
    GLOBAL.forget();
    BUILDING.store(false, Ordering::Relaxed);
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

/// `FLOCK_MEMBARRIER`: `None` when unset or empty, else `0` or `1`.
fn membarrier_from_env() -> Result<Option<bool>, BuildError> {
    match std::env::var_os(MEMBARRIER_VAR) {
        Some(raw) if !raw.is_empty() => parse_membarrier(&raw).map(Some),
        _ => Ok(None),
    }
}

/// `FLOCK_MEMBARRIER` as spelled: `0` or `1`, surrounding whitespace ignored.
fn parse_membarrier(raw: &OsStr) -> Result<bool, BuildError> {
    match raw.to_str().map(str::trim) {
        Some("0") => Ok(false),
        Some("1") => Ok(true),
        _ => Err(BuildError::InvalidEnv {
            var: MEMBARRIER_VAR,
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

    #[test]
    fn membarrier_is_zero_or_one() {
        let parse = |text: &str| parse_membarrier(OsStr::new(text));
        assert!(!parse("0").unwrap());
        assert!(parse(" 1\n").unwrap());
        for text in ["2", "true", "no", "01", " ", "0 1"] {
            match parse(text) {
                Err(BuildError::InvalidEnv { var, value }) => {
                    assert_eq!((var, value.as_str()), (MEMBARRIER_VAR, text));
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
