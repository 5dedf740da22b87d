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

use std::cell::Cell;

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
