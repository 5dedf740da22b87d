//! A worker's cache of fixed-size blocks, for scope tasks on the two-word path
//! (`Scope::make_ref`): a `JobRef` points at its task, so the task needs a home off the
//! deque, and the global allocator's `malloc` and `free` were 31% of a one-worker spawn
//! tree's time (`perf record`, against 23% for the deques and the scope's count together).
//!
//! A block is taken by the worker that spawns and given back by the one that runs the task,
//! to its own cache: blocks move between workers, but each cache is touched by its owner
//! only, so there is nothing to synchronise. A cache keeps at most `KEEP` blocks and gives
//! the rest to the allocator; a thread that is not a worker frees its block there too.
//! Every block has the one layout `BLOCK`, so any block may go to any cache.
//!
//! # Safety
//!
//! The `unsafe` blocks here rely on:
//!
//! - **One layout.** Every block is allocated and freed with `BLOCK`, and only types that
//!   `fits` are written to one.
//! - **One owner per block.** A block is the spawner's until it queues the task, the
//!   runner's once it moved the task out, and a cache's once given back; each is given back
//!   (or freed) once.
//! - **One thread per cache.** A `Blocks` is a worker's own (`Cell`s, not `Sync`): its list
//!   is read and written by that worker only.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::Cell;
use std::mem::{align_of, size_of};
use std::ptr;

/// The layout of every block: a cache line, which holds a scope task whose closure
/// captures up to six words.
const BLOCK: Layout = match Layout::from_size_align(64, 16) {
    Ok(layout) => layout,
    Err(_) => panic!("a valid layout"),
};

/// Blocks a cache keeps; beyond that they go back to the allocator. A spawn tree's depth
/// of blocks is live at a time per worker, so a few hundred never miss.
const KEEP: usize = 256;

/// Whether a `T` fits a block.
pub(crate) const fn fits<T>() -> bool {
    size_of::<T>() <= BLOCK.size() && align_of::<T>() <= BLOCK.align()
}

/// What a free block holds: the next free block.
struct Link {
    next: *mut Link,
}

/// One worker's free blocks, as a list threaded through them.
pub(crate) struct Blocks {
    head: Cell<*mut Link>,
    len: Cell<usize>,
}

impl Blocks {
    pub(crate) fn new() -> Blocks {
        Blocks {
            head: Cell::new(ptr::null_mut()),
            len: Cell::new(0),
        }
    }

    /// A block for a `T` (`fits::<T>()`), uninitialised: from the cache, or else the
    /// allocator's.
    #[inline]
    pub(crate) fn take<T>(&self) -> *mut T {
        debug_assert!(fits::<T>());
        let head = self.head.get();
        if head.is_null() {
            return alloc_block().cast();
        }
        // SAFETY: a block on the list holds the `Link` that `give` wrote, and only this
        // cache's owner reads the list.
        self.head.set(unsafe { (*head).next });
        self.len.set(self.len.get() - 1);
        head.cast()
    }

    /// Takes back a block whose contents were moved out.
    ///
    /// # Safety
    /// `block` came from `take` (of any worker's cache), and nothing uses it afterwards.
    #[inline]
    pub(crate) unsafe fn give<T>(&self, block: *mut T) {
        let n = self.len.get();
        if n >= KEEP {
            // SAFETY: every block is allocated with `BLOCK` (the function's contract).
            unsafe { free_block(block) };
            return;
        }
        let link = block.cast::<Link>();
        // SAFETY: the block is ours now and large and aligned enough for a `Link`.
        unsafe {
            link.write(Link {
                next: self.head.get(),
            })
        };
        self.head.set(link);
        self.len.set(n + 1);
    }
}

impl Drop for Blocks {
    fn drop(&mut self) {
        let mut next = self.head.get();
        while !next.is_null() {
            // SAFETY: as in `take`; each block is freed once, after its link is read.
            unsafe {
                let block = next;
                next = (*block).next;
                free_block(block);
            }
        }
    }
}

fn alloc_block() -> *mut u8 {
    // SAFETY: `BLOCK` has a non-zero size.
    let block = unsafe { alloc(BLOCK) };
    if block.is_null() {
        handle_alloc_error(BLOCK);
    }
    block
}

/// Gives a block to the allocator.
///
/// # Safety
/// `block` came from a cache's `take`, and nothing uses it afterwards.
pub(crate) unsafe fn free_block<T>(block: *mut T) {
    // SAFETY: every block is allocated with `BLOCK`.
    unsafe { dealloc(block.cast(), BLOCK) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_reused_and_the_cache_is_bounded() {
        let cache = Blocks::new();
        let a = cache.take::<[u64; 8]>();
        // SAFETY: a fresh block of 64 bytes, then given back once.
        unsafe {
            a.write([7; 8]);
            cache.give(a);
        }
        assert_eq!(
            cache.take::<[u64; 8]>(),
            a,
            "the block given back is taken next"
        );
        let many: Vec<*mut u64> = (0..KEEP + 10).map(|_| cache.take::<u64>()).collect();
        for &b in &many {
            // SAFETY: each block is given back once.
            unsafe { cache.give(b) };
        }
        assert_eq!(cache.len.get(), KEEP);
        // SAFETY: `a` is ours again (taken above), given back once.
        unsafe { cache.give(a) };
        #[repr(align(32))]
        struct Wide(#[allow(dead_code)] u8);
        assert!(fits::<[u64; 8]>() && !fits::<[u64; 9]>() && !fits::<Wide>());
    }
}
