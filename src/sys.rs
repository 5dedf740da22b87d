//! The OS and CPU boundary: every call into libc and every CPU intrinsic of the crate, each
//! behind a safe function, with the fallback used where the call is unavailable (another
//! system, Miri, loom).
//!
//! # Safety
//!
//! The `unsafe` blocks here call foreign functions or intrinsics. They rely on:
//!
//! - **No memory of ours is touched.** `rdtsc` reads a register; `membarrier`, `gettid` and
//!   `pthread_self` take integers (or nothing) and return an integer.
//! - **No preconditions.** `rdtsc` exists on every x86-64 CPU; `gettid` and `pthread_self`
//!   cannot fail; `membarrier` with an unknown or refused command returns -1, which the
//!   callers treat as "unavailable".
//! - **Handlers are async-signal-safe.** A `pthread_atfork` child handler runs in a forked
//!   child of a threaded process, where only async-signal-safe work is sound: the handler
//!   [`on_fork_child`] takes must only store to atomics, which its signature cannot check,
//!   so the callers promise it (they are in this crate, and say so at the call).
//! - **Leaked values are never freed.** [`Leaked`] hands out `&'static T` to a value it
//!   leaked from a `Box`; nothing frees it (emptying the slot leaks it again), and it is
//!   shared only where `T: Sync`.

use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The CPU's time-stamp counter (`rdtsc`), on x86-64 Linux outside Miri and loom.
#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(any(miri, flock_loom))
))]
#[inline]
pub(crate) fn rdtsc() -> u64 {
    // SAFETY: `rdtsc` exists on every x86-64 CPU and has no preconditions; it reads a
    // register and touches no memory.
    unsafe { std::arch::x86_64::_rdtsc() }
}

/// `membarrier(2)`: the commands `sleep/barrier.rs` uses, on Linux outside Miri and loom.
#[cfg(all(target_os = "linux", not(any(flock_loom, miri))))]
pub(crate) mod membarrier {
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
    pub(crate) fn register() -> bool {
        let supported = membarrier(CMD_QUERY);
        supported >= 0
            && supported & CMD_PRIVATE_EXPEDITED != 0
            && membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
    }

    /// Issues one expedited private membarrier: whether the kernel did.
    pub(crate) fn barrier() -> bool {
        membarrier(CMD_PRIVATE_EXPEDITED) == 0
    }
}

/// `membarrier(2)` where it is unavailable: never registered, never issued.
#[cfg(not(all(target_os = "linux", not(any(flock_loom, miri)))))]
pub(crate) mod membarrier {
    /// Never: there is no membarrier here.
    pub(crate) fn register() -> bool {
        false
    }

    /// Never issued.
    pub(crate) fn barrier() -> bool {
        false
    }
}

/// The calling thread's kernel thread id. Not under Miri, which need not model `gettid`:
/// `None` there, as on other systems.
#[cfg(all(target_os = "linux", not(miri)))]
pub(crate) fn os_thread_id() -> Option<u64> {
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::gettid() };
    u64::try_from(tid).ok()
}

/// The calling thread's kernel thread id: none on this system.
#[cfg(any(not(target_os = "linux"), miri))]
pub(crate) fn os_thread_id() -> Option<u64> {
    None
}

/// The calling thread's `pthread_t`, as an integer.
#[cfg(unix)]
#[allow(clippy::unnecessary_cast)] // `pthread_t` is `c_ulong` (already `usize`) on Linux.
pub(crate) fn native_handle() -> Option<u64> {
    // SAFETY: pthread_self has no preconditions and cannot fail. `pthread_t` is an integer
    // on some systems and a pointer on others: `as usize` takes either.
    let me = unsafe { libc::pthread_self() };
    Some(me as usize as u64)
}

/// The calling thread's native handle: none on this system.
#[cfg(not(unix))]
pub(crate) fn native_handle() -> Option<u64> {
    None
}

/// Registers `child` to run in the child of every later `fork`, with `pthread_atfork`:
/// whether the registration took (it fails only with ENOMEM).
///
/// `child` runs in a forked child of a threaded process, so it must be async-signal-safe:
/// the crate's one handler (`global.rs`'s `forget_in_child`) only stores to atomics.
#[cfg(unix)]
pub(crate) fn on_fork_child(child: extern "C" fn()) -> bool {
    // SAFETY: registering a handler is sound at any time; `child` is async-signal-safe (the
    // function's contract, kept by its one caller).
    unsafe { libc::pthread_atfork(None, None, Some(child)) == 0 }
}

/// A process-global `&'static T`: empty, or a leaked `Box<T>` that is never freed. Emptying
/// it leaks the value rather than dropping it, so every reference handed out stays valid
/// for the rest of the process; emptying is a plain atomic store, so a `fork` child
/// handler may do it.
///
/// Shared between threads only as `&'static T`, so it is `Sync` exactly when `T` is
/// (`PhantomData<&'static T>`).
pub(crate) struct Leaked<T: 'static> {
    ptr: AtomicPtr<T>,
    _shares: PhantomData<&'static T>,
}

impl<T> Leaked<T> {
    /// An empty slot.
    pub(crate) const fn new() -> Leaked<T> {
        Leaked {
            ptr: AtomicPtr::new(ptr::null_mut()),
            _shares: PhantomData,
        }
    }

    /// The value in the slot, if any.
    #[inline]
    pub(crate) fn get(&self) -> Option<&'static T> {
        // Acquire: pairs with the Release store in `fill`, so the value is seen whole.
        let value = self.ptr.load(Ordering::Acquire);
        // SAFETY: a non-null pointer in the slot comes from `Box::leak` in `fill` and is
        // never freed (`forget` leaks it).
        unsafe { value.as_ref() }
    }

    /// Leaks `value` into the slot, for the rest of the process, and returns it. The
    /// callers' own protocol decides who fills the slot; a value it held before is leaked.
    pub(crate) fn fill(&self, value: Box<T>) -> &'static T {
        let value: &'static T = Box::leak(value);
        // Release: pairs with the Acquire load in `get`.
        self.ptr
            .store(ptr::from_ref(value).cast_mut(), Ordering::Release);
        value
    }

    /// Empties the slot, leaking its value. Async-signal-safe: one Relaxed store (a forked
    /// child has one thread, so there is nobody to order it with).
    pub(crate) fn forget(&self) {
        self.ptr.store(ptr::null_mut(), Ordering::Relaxed);
    }
}
