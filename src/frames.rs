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
//! # Safety
//!
//! The `unsafe` blocks here turn a thread-local pointer back into a reference. They rely on:
//!
//! - **A linked value outlives its link.** [`enter`] and [`Anchor::enter`] link a value
//!   that lives on this thread's stack, in their own call, and unlink it (putting back what
//!   was linked before) when `f` returns or unwinds, so a non-null pointer always points to
//!   a live value of a call still running below the reader.
//! - **Only this thread reads it.** The pointers sit in thread-locals (an `Anchor` is not
//!   `Sync`), so a reader is on the thread whose stack holds the value, inside that call.
//! - **An `Arc`'s contents do not move.** An [`ArcPart`] keeps a reference into the value
//!   an `Arc` holds, beside a clone of that `Arc`: the value stays where it is, alive, for
//!   as long as the clone does, and `pick`'s signature ties the part to the value (or to
//!   `'static`), so the part lives as long.
//! - **No reference escapes the read.** [`find_map`] and [`anchored`] hand out
//!   references for the length of a closure only (a higher-ranked lifetime), so none
//!   outlives the call that linked its value.

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
            static $static: std::cell::Cell<*const $crate::frames::Frame<$kind>> =
                std::cell::Cell::new(std::ptr::null());
        }
        impl $crate::frames::FrameKind for $kind {
            #[inline]
            fn top<R>(
                f: impl FnOnce(&std::cell::Cell<*const $crate::frames::Frame<Self>>) -> R,
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
    // (module docs, "Safety").
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
        // SAFETY: `part` points into the value `_owner` keeps alive and in place (module
        // docs, "Safety"), and the reference is bounded by `&self`, so by `_owner`.
        unsafe { self.part.as_ref() }
    }
}
