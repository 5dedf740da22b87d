//! The OS and CPU boundary: every call into libc and every CPU intrinsic of the crate, each
//! behind a safe function, with the fallback used where the call is unavailable (another
//! system, Miri, loom).
//!
//! It also holds the references whose lifetime the compiler cannot see, each behind a safe
//! type: values leaked for the rest of the process ([`Leaked`]), values on this thread's
//! stack reached through a thread-local ([`frames`]), and parts of a value an `Arc` holds
//! ([`frames::ArcPart`]).
//!
//! # Safety
//!
//! The `unsafe` blocks here call foreign functions or intrinsics, or turn a pointer back
//! into a reference. They rely on:
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
//! - **A linked value outlives its link.** [`frames::enter`] and [`frames::Anchor::enter`]
//!   link a value that lives on this thread's stack, in their own call, and unlink it
//!   (putting back what was linked before) when `f` returns or unwinds, so a non-null
//!   pointer always points to a live value of a call still running below the reader.
//! - **Only this thread reads it.** The pointers sit in thread-locals (an `Anchor` is not
//!   `Sync`), so a reader is on the thread whose stack holds the value, inside that call.
//! - **An `Arc`'s contents do not move.** A [`frames::ArcPart`] keeps a reference into the
//!   value an `Arc` holds, beside a clone of that `Arc`: the value stays where it is, alive,
//!   for as long as the clone does, and `pick`'s signature ties the part to the value (or
//!   to `'static`), so the part lives as long.
//! - **No reference escapes the read.** [`frames::find_map`] and [`frames::anchored`] hand
//!   out references for the length of a closure only (a higher-ranked lifetime), so none
//!   outlives the call that linked its value.

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

pub(crate) mod frames {
    //! Per-thread stacks of frames: "this thread is inside X now", for the checks that refuse a
    //! wait that would wait for the calling thread itself.
    //!
    //! Three kinds of frame use it: a task a thread runs for a pool off the workers
    //! (`registry/dispatch.rs`), the destructors of tasks a thread drops for a pool
    //! (`purge.rs`), and a task of a task group (`group.rs`). Each kind has its own
    //! thread-local holding the innermost frame, or null; a frame lives on the stack of the call
    //! it describes ([`enter`]) and links to the frame it runs inside, so calls may nest (a task
    //! run off the workers submits to another pool that runs that task here too; a destructor
    //! purges another pool; a group task's wait runs another group's task).
    //!
    //! The thread-local is a plain pointer with no destructor, so it can be read at any time in
    //! a thread's life: a thread-local's destructor may submit, wait or drop a pool after the
    //! thread's other thread-locals are gone (a `RefCell<Vec<_>>` there made those calls abort
    //! the process).
    //!
    //! An [`Anchor`] is the one-frame case for a value that is reached by reference, not by
    //! copy: the worker running on this thread (`worker.rs`'s `CURRENT`), set for the whole
    //! of its loop and read on every `join`.
    //!
    //! An [`ArcPart`] is a part of a value held by an `Arc`, reached in one load: a worker's
    //! own counter shard inside its registry.
    //!
    //! The `unsafe` blocks here turn a thread-local pointer back into a reference; the
    //! `sys` module's "Safety" section lists what they rely on (its last four points).

    use crate::sync::Arc;
    use std::cell::Cell;
    use std::ops::Deref;
    use std::ptr::{self, NonNull};

    /// One frame: what the call is about, and the frame it runs inside.
    pub(crate) struct Frame<T> {
        value: T,
        outer: *const Frame<T>,
    }

    /// A kind of frame: the thread-local that holds this thread's innermost frame of the kind.
    pub(crate) trait FrameKind: Sized + 'static {
        /// Runs `f` with this thread's innermost-frame cell.
        fn top<R>(f: impl FnOnce(&Cell<*const Frame<Self>>) -> R) -> R;
    }

    /// Defines a [`FrameKind`] for `$kind` over a new thread-local (std's, or loom's under
    /// `cfg(flock_loom)`).
    macro_rules! frame_kind {
        ($(#[$m:meta])* $static:ident: $kind:ty) => {
            $crate::sync::facade_thread_local! {
                $(#[$m])*
                static $static: std::cell::Cell<*const $crate::sys::frames::Frame<$kind>> =
                    std::cell::Cell::new(std::ptr::null());
            }
            impl $crate::sys::frames::FrameKind for $kind {
                #[inline]
                fn top<R>(
                    f: impl FnOnce(&std::cell::Cell<*const $crate::sys::frames::Frame<Self>>) -> R,
                ) -> R {
                    $static.with(f)
                }
            }
        };
    }
    pub(crate) use frame_kind;

    /// Runs `f` with a frame holding `value` linked in as this thread's innermost of its kind;
    /// it is unlinked when `f` returns or unwinds.
    #[inline]
    pub(crate) fn enter<T: FrameKind, R>(value: T, f: impl FnOnce() -> R) -> R {
        /// Puts the outer frame back as the innermost, also if `f` unwinds.
        struct Unlink<T: FrameKind>(*const Frame<T>);
        impl<T: FrameKind> Drop for Unlink<T> {
            fn drop(&mut self) {
                T::top(|top| top.set(self.0));
            }
        }
        let outer = T::top(Cell::get);
        let frame = Frame { value, outer };
        T::top(|top| top.set(&frame));
        let _unlink = Unlink::<T>(outer);
        f()
    }

    /// The first `Some` that `f` gives for this thread's frames of kind `T`, innermost first.
    #[inline]
    pub(crate) fn find_map<T: FrameKind, U>(mut f: impl FnMut(&T) -> Option<U>) -> Option<U> {
        let mut at = T::top(Cell::get);
        while !at.is_null() {
            // SAFETY: a linked frame lives on this thread's stack, in an `enter` call still
            // running below us, which unlinks it before it returns or unwinds; frames are
            // linked innermost-first, each pointing to one further out, so `outer` is live too.
            let frame = unsafe { &*at };
            if let Some(found) = f(&frame.value) {
                return Some(found);
            }
            at = frame.outer;
        }
        None
    }

    /// Whether any of this thread's frames of kind `T` satisfies `f`.
    #[inline]
    pub(crate) fn any<T: FrameKind>(mut f: impl FnMut(&T) -> bool) -> bool {
        find_map::<T, ()>(|v| f(v).then_some(())).is_some()
    }

    /// A thread-local reference to one value on this thread's stack: set for the length of a
    /// call ([`Anchor::enter`]), read by reference ([`anchored`]). Not `Sync` (a `Cell`):
    /// it lives in a thread-local, and only its thread reads it.
    pub(crate) struct Anchor<T>(Cell<*const T>);

    impl<T> Anchor<T> {
        /// Nothing anchored.
        pub(crate) const fn new() -> Anchor<T> {
            Anchor(Cell::new(ptr::null()))
        }

        /// Runs `f` with `value` anchored; what was anchored before is put back when `f`
        /// returns or unwinds.
        pub(crate) fn enter<R>(&self, value: &T, f: impl FnOnce() -> R) -> R {
            /// Puts the outer value back, also if `f` unwinds.
            struct Restore<'a, T>(&'a Cell<*const T>, *const T);
            impl<T> Drop for Restore<'_, T> {
                fn drop(&mut self) {
                    self.0.set(self.1);
                }
            }
            let _restore = Restore(&self.0, self.0.replace(value));
            f()
        }
    }

    /// A type with an [`Anchor`] in a thread-local of its own (`worker.rs`'s `CURRENT` for
    /// `WorkerThread`).
    pub(crate) trait Anchored: Sized + 'static {
        /// Runs `f` with this thread's anchor for the type.
        fn anchor<R>(f: impl FnOnce(&Anchor<Self>) -> R) -> R;
    }

    /// Runs `f` with this thread's anchored `T`, if any. The thread-local is read in a call of
    /// its own and `f` runs after it, so that `f` is not inlined into the thread-local's access
    /// (which then stays out of line on every caller's path).
    #[inline]
    pub(crate) fn anchored<T: Anchored, R>(f: impl FnOnce(Option<&T>) -> R) -> R {
        let at = T::anchor(|anchor| anchor.0.get());
        // SAFETY: an anchor is reached on its own thread only (it is not `Sync`), and its
        // pointer is non-null only inside an `Anchor::enter` on this thread, which is still
        // running below us and keeps the value alive; the reference does not outlive `f`
        // (`sys` module docs, "Safety").
        f(unsafe { at.as_ref() })
    }

    /// A part of the value an `Arc` holds, kept beside a clone of that `Arc`, so that reaching
    /// it is one load rather than a walk from the owner. Neither `Send` nor `Sync` (a
    /// `NonNull`): it serves the thread that made it.
    pub(crate) struct ArcPart<O, T> {
        part: NonNull<T>,
        /// Keeps the value `part` points into alive and in place.
        _owner: Arc<O>,
    }

    impl<O, T> ArcPart<O, T> {
        /// The part of `owner`'s value that `pick` picks.
        pub(crate) fn new(owner: Arc<O>, pick: impl for<'a> FnOnce(&'a O) -> &'a T) -> Self {
            let part = NonNull::from(pick(&owner));
            ArcPart {
                part,
                _owner: owner,
            }
        }
    }

    impl<O, T> Deref for ArcPart<O, T> {
        type Target = T;

        #[inline]
        fn deref(&self) -> &T {
            // SAFETY: `part` points into the value `_owner` keeps alive and in place (`sys`
            // module docs, "Safety"), and the reference is bounded by `&self`, so by `_owner`.
            unsafe { self.part.as_ref() }
        }
    }
}
