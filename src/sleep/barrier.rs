//! The asymmetric barrier between a worker's unfenced local push and a parking worker's
//! re-check (`README.md`, "Local pushes and the asymmetric barrier").
//!
//! The heavy side, `before_recheck`, runs on the rare path (a worker about to park): on
//! Linux it is `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which returns only after
//! every other running thread of the process has executed a full memory barrier. The light
//! side, `after_local_push`, runs on every local push (and every single push of a
//! submitter onto an injector, `Sleep::notify_injected`): with the membarrier it is only a
//! compiler fence. Where the membarrier is unavailable (another OS, an old kernel, a seccomp
//! filter, Miri, loom) the light side becomes a SeqCst fence, the classic symmetric pairing.

use crate::sync::{fence, Ordering};
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU8};

const UNKNOWN: u8 = 0;
const HEAVY: u8 = 1;
const FENCED: u8 = 2;

/// Which pairing this process uses. Decided by `init` before any pool's worker starts
/// (`Registry::new`), so workers read it with a Relaxed load (their thread's start
/// happens-after the store); it only ever moves from `HEAVY` to `FENCED`, never back.
static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether this process ever registered: from then on every park issues the membarrier,
/// also after `MODE` fell back to `FENCED`, since pushes from before the fall-back skipped
/// their fence.
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Registers the process for expedited membarriers, or falls back to fenced pushes. Called
/// by every pool's construction (cheap, idempotent), so a child after `fork` registers its
/// new address space before its first pool starts.
pub(crate) fn init() {
    let heavy = !cfg!(any(flock_loom, miri, flock_canary_push)) && sys::register();
    if heavy {
        REGISTERED.store(true, Ordering::Relaxed);
    }
    let mode = if heavy { HEAVY } else { FENCED };
    // Never back from FENCED: a push that already skipped its fence must stay paired.
    if MODE.load(Ordering::Relaxed) != FENCED {
        MODE.store(mode, Ordering::Relaxed);
    }
}

/// After a push onto a worker's own deque, before it loads the sleep state.
#[inline]
pub(crate) fn after_local_push() {
    if MODE.load(Ordering::Relaxed) == HEAVY {
        // The membarrier of a parking worker stands in for a hardware fence here; only the
        // compiler must keep the push's store before the state's load.
        compiler_fence(Ordering::SeqCst);
    } else if !cfg!(flock_canary_push) {
        // Pairs with F2 of a parking worker (README.md, "Why no wake-up is lost").
        // `--cfg flock_canary_push` removes it so that the loom model of a task that blocks
        // after a local push must fail (scripts/loom.sh).
        fence(Ordering::SeqCst);
    }
}

/// After a parking worker's F2, before its re-check of the queues.
pub(crate) fn before_recheck() {
    if REGISTERED.load(Ordering::Relaxed) && !sys::barrier() {
        // Refused after a successful registration (should not happen): from now on every
        // push fences. Pushes that skipped their fence before this are not ordered with our
        // re-check, so re-register and try once more.
        MODE.store(FENCED, Ordering::Relaxed);
        if sys::register() {
            sys::barrier();
        }
    }
}

#[cfg(all(target_os = "linux", not(any(flock_loom, miri))))]
mod sys {
    const CMD_QUERY: libc::c_long = 0;
    const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    fn membarrier(cmd: libc::c_long) -> libc::c_long {
        // SAFETY: membarrier takes (cmd, flags, cpu_id) and touches no memory of ours.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        }
    }

    /// Whether the kernel offers expedited private membarriers and registered us for them.
    pub(super) fn register() -> bool {
        let supported = membarrier(CMD_QUERY);
        supported >= 0
            && supported & CMD_PRIVATE_EXPEDITED != 0
            && membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
    }

    pub(super) fn barrier() -> bool {
        membarrier(CMD_PRIVATE_EXPEDITED) == 0
    }
}

#[cfg(not(all(target_os = "linux", not(any(flock_loom, miri)))))]
mod sys {
    pub(super) fn register() -> bool {
        false
    }

    pub(super) fn barrier() -> bool {
        false
    }
}
