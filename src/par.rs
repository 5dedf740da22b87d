//! Data-parallel helpers over slices: loops, `map_reduce` and sorts, on a [`Pool`] and as
//! free functions on the current pool (the calling worker's, else the [`global`] one, as
//! [`flock::join`](fn@crate::join) chooses).
//!
//! Every helper cuts its slice with one rule, [`auto_chunk`] (what [`Pool::for_each`] uses
//! too): about four pieces per worker, so a worker that falls behind is helped by the
//! others, and each piece is a plain sequential loop. The loops queue their pieces as one
//! batch ([`Scope::spawn_batch`](crate::Scope::spawn_batch)); `map_reduce` folds each piece
//! into its own slot and then the slots in order, so its result depends on the slice's length
//! and the pool's worker count only, never on which worker ran what; the sorts recurse with
//! [`join`](fn@crate::join) down to pieces of that length.
//!
//! ```
//! let v: Vec<u64> = (1..=1000).collect();
//! let sum = flock::map_reduce(&v, || 0, |x| x * 2, |a, b| a + b);
//! assert_eq!(sum, 1000 * 1001);
//! ```

use crate::current::current_registry;
use crate::global::global;
use crate::registry::Registry;
use crate::scope::Scope;
use crate::sync::Arc;
use crate::worker::with_current;
use crate::Pool;
use std::cmp::Ordering;
use std::ops::Range;

/// Pieces below this length are not split further by the sorts: a `join` costs more than
/// sorting them where they are.
const SORT_LEAF_MIN: usize = 4096;

/// How many items (or indices) one task of a data-parallel call gets out of `len` on a pool
/// of `workers`: about four tasks per worker, at least one item each.
pub(crate) fn auto_chunk(len: usize, workers: usize) -> usize {
    len.div_ceil(4 * workers.max(1)).max(1)
}

/// `f` for every item, in parallel, on `registry`'s pool.
fn for_each_in<T: Sync>(registry: &Arc<Registry>, items: &[T], f: &(impl Fn(&T) + Sync)) {
    let chunk = auto_chunk(items.len(), registry.crew.workers());
    Scope::new(registry.clone()).run(|s| {
        s.spawn_batch(
            items
                .chunks(chunk)
                .map(|part| move |_: &Scope<'_>| part.iter().for_each(f)),
        )
    });
}

/// `f` for every item, mutably, in parallel, on `registry`'s pool.
fn for_each_mut_in<T: Send>(
    registry: &Arc<Registry>,
    items: &mut [T],
    f: &(impl Fn(&mut T) + Sync),
) {
    let chunk = auto_chunk(items.len(), registry.crew.workers());
    Scope::new(registry.clone()).run(|s| {
        s.spawn_batch(
            items
                .chunks_mut(chunk)
                .map(|part| move |_: &Scope<'_>| part.iter_mut().for_each(f)),
        )
    });
}

/// `f(index, chunk)` for every `size`-item chunk, in parallel: a task gets several
/// consecutive chunks, as many as `auto_chunk` says for the count of chunks.
fn chunks_mut_in<T: Send>(
    registry: &Arc<Registry>,
    items: &mut [T],
    size: usize,
    f: &(impl Fn(usize, &mut [T]) + Sync),
) {
    assert_ne!(size, 0, "par_chunks_mut: a chunk of 0 items");
    let per_task = auto_chunk(items.len().div_ceil(size), registry.crew.workers());
    let span = size.saturating_mul(per_task);
    Scope::new(registry.clone()).run(|s| {
        s.spawn_batch(items.chunks_mut(span).enumerate().map(|(t, part)| {
            move |_: &Scope<'_>| {
                for (i, chunk) in part.chunks_mut(size).enumerate() {
                    f(t * per_task + i, chunk);
                }
            }
        }))
    });
}

/// `map_reduce` on `registry`'s pool: each piece folded into its slot, the slots folded in
/// order.
fn map_reduce_in<T, R>(
    registry: &Arc<Registry>,
    items: &[T],
    identity: &(impl Fn() -> R + Sync),
    map: &(impl Fn(&T) -> R + Sync),
    reduce: &(impl Fn(R, R) -> R + Sync),
) -> R
where
    T: Sync,
    R: Send,
{
    let chunk = auto_chunk(items.len(), registry.crew.workers());
    let mut slots: Vec<Option<R>> = items.chunks(chunk).map(|_| None).collect();
    Scope::new(registry.clone()).run(|s| {
        s.spawn_batch(
            items
                .chunks(chunk)
                .zip(slots.iter_mut())
                .map(|(part, slot)| {
                    move |_: &Scope<'_>| {
                        *slot = Some(part.iter().fold(identity(), |acc, x| reduce(acc, map(x))));
                    }
                }),
        )
    });
    slots
        .into_iter()
        .map(|slot| slot.expect("flock: every map_reduce piece ran"))
        .fold(identity(), reduce)
}

/// Runs `op` on a worker of `registry`'s pool (here if this thread is one), so that the
/// `join`s inside it fork there.
fn on_pool<R: Send>(registry: &Arc<Registry>, op: impl FnOnce() -> R + Send) -> R {
    if with_current(|w| w.is_some_and(|w| w.is_in(registry))) {
        return op();
    }
    crate::join::run_on_pool(registry, move |_| op())
}

/// A stable parallel merge sort: the halves sorted in parallel, then merged by the standard
/// library's stable sort, which finds the two sorted runs and merges them in one pass.
fn merge_sort<T: Send>(v: &mut [T], leaf: usize, cmp: &(impl Fn(&T, &T) -> Ordering + Sync)) {
    if v.len() <= leaf {
        v.sort_by(cmp);
        return;
    }
    let (lo, hi) = v.split_at_mut(v.len() / 2);
    crate::join(|| merge_sort(lo, leaf, cmp), || merge_sort(hi, leaf, cmp));
    if cmp(&v[v.len() / 2 - 1], &v[v.len() / 2]) == Ordering::Greater {
        v.sort_by(cmp);
    }
}

/// An unstable parallel quicksort: the median moved to the middle with everything not
/// greater before it and nothing smaller after it (`select_nth_unstable_by`), then both
/// sides sorted in parallel.
fn quick_sort<T: Send>(v: &mut [T], leaf: usize, cmp: &(impl Fn(&T, &T) -> Ordering + Sync)) {
    if v.len() <= leaf {
        v.sort_unstable_by(cmp);
        return;
    }
    let (lo, _, hi) = v.select_nth_unstable_by(v.len() / 2, cmp);
    crate::join(|| quick_sort(lo, leaf, cmp), || quick_sort(hi, leaf, cmp));
}

/// The leaf length of the sorts for `len` items on `workers` workers.
fn sort_leaf(len: usize, workers: usize) -> usize {
    auto_chunk(len, workers).max(SORT_LEAF_MIN)
}

fn sort_in<T: Send>(
    registry: &Arc<Registry>,
    v: &mut [T],
    stable: bool,
    cmp: &(impl Fn(&T, &T) -> Ordering + Sync),
) {
    let leaf = sort_leaf(v.len(), registry.crew.workers());
    if v.len() <= leaf {
        // One piece: no pool round trip.
        return if stable {
            v.sort_by(cmp)
        } else {
            v.sort_unstable_by(cmp)
        };
    }
    on_pool(registry, || {
        if stable {
            merge_sort(v, leaf, cmp)
        } else {
            quick_sort(v, leaf, cmp)
        }
    })
}

/// The current pool's registry: the calling worker's pool, else the global pool.
fn current() -> Arc<Registry> {
    current_registry().unwrap_or_else(|| global().registry().clone())
}

impl Pool {
    /// Calls `f(i)` for every `i` in `range`, in parallel, `chunk` indices per task (`None`:
    /// the pool chooses, about four tasks per worker), and returns when all calls have
    /// finished. The tasks are queued as one batch (see [`Scope::spawn_batch`]); `f` may
    /// borrow from the caller. A panic in `f` is re-raised here after every task has
    /// finished. It blocks the calling thread until then; called from one of the pool's
    /// tasks, the worker runs other tasks while it waits.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// let pool = flock::Pool::new();
    /// let sum = AtomicU64::new(0);
    /// pool.for_each(0..1_000, None, |i| { sum.fetch_add(i as u64, Ordering::Relaxed); });
    /// pool.for_each(0..1_000, Some(64), |i| { sum.fetch_add(i as u64, Ordering::Relaxed); });
    /// assert_eq!(sum.into_inner(), 2 * 499_500);
    /// ```
    ///
    /// # Panics
    ///
    /// With `Some(0)`, which would make no progress (as `slice::chunks(0)` panics), and when
    /// `f` panics.
    pub fn for_each<F>(&self, range: Range<usize>, chunk: Option<usize>, f: F)
    where
        F: Fn(usize) + Sync,
    {
        assert_ne!(
            chunk,
            Some(0),
            "for_each: a chunk of 0 indices; pass None to let the pool choose"
        );
        let len = range.len();
        if len == 0 {
            return;
        }
        let chunk = chunk.unwrap_or_else(|| auto_chunk(len, self.workers()));
        let f = &f;
        let end = range.end;
        self.in_place_scope(|s| {
            s.spawn_batch(range.step_by(chunk).map(|lo| {
                let hi = lo.saturating_add(chunk).min(end);
                move |_: &Scope<'_>| (lo..hi).for_each(f)
            }))
        });
    }

    /// Calls `f` on every item of `items`, in parallel, and returns when all calls have
    /// finished (blocking the calling thread until then; on one of the pool's workers, the
    /// worker runs other tasks meanwhile). The slice is cut as [`for_each`](Pool::for_each)
    /// cuts a range. A panic in `f` is re-raised here after every piece has finished. As
    /// rayon's `items.par_iter().for_each(f)`.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let words = ["a", "bb", "ccc"];
    /// let letters = AtomicU64::new(0);
    /// pool.par_for_each(&words, |w| { letters.fetch_add(w.len() as u64, Ordering::Relaxed); });
    /// assert_eq!(letters.into_inner(), 6);
    /// ```
    #[doc(alias = "par_iter")]
    pub fn par_for_each<T, F>(&self, items: &[T], f: F)
    where
        T: Sync,
        F: Fn(&T) + Sync,
    {
        for_each_in(self.registry(), items, &f)
    }

    /// Calls `f` on every item of `items`, mutably, in parallel; as
    /// [`par_for_each`](Pool::par_for_each) otherwise (it blocks until every call finished).
    /// As rayon's `items.par_iter_mut().for_each(f)`.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let mut v: Vec<u32> = (0..100).collect();
    /// pool.par_for_each_mut(&mut v, |x| *x *= 2);
    /// assert_eq!(v, (0..100).map(|x| x * 2).collect::<Vec<u32>>());
    /// ```
    #[doc(alias = "par_iter_mut")]
    pub fn par_for_each_mut<T, F>(&self, items: &mut [T], f: F)
    where
        T: Send,
        F: Fn(&mut T) + Sync,
    {
        for_each_mut_in(self.registry(), items, &f)
    }

    /// Calls `f(index, chunk)` for every chunk of `size` items of `items` (the last may be
    /// shorter), in parallel, `index` counting chunks from 0; blocks until every call
    /// finished. As rayon's `items.par_chunks_mut(size).enumerate().for_each(..)`; a task
    /// gets several consecutive chunks.
    ///
    /// # Panics
    /// When `size` is 0 (as `slice::chunks_mut(0)`), and when `f` panics (after every task
    /// finished).
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let mut image = vec![0u8; 4 * 3]; // three rows of four pixels
    /// pool.par_chunks_mut(&mut image, 4, |row, pixels| pixels.fill(row as u8));
    /// assert_eq!(image, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    /// ```
    pub fn par_chunks_mut<T, F>(&self, items: &mut [T], size: usize, f: F)
    where
        T: Send,
        F: Fn(usize, &mut [T]) + Sync,
    {
        chunks_mut_in(self.registry(), items, size, &f)
    }

    /// Maps every item with `map` and combines the results with `reduce`, in parallel,
    /// starting each piece from `identity()`; blocks until done. With an associative
    /// `reduce` and an `identity()` that changes nothing, the result is the sequential
    /// `fold`'s; and whatever `reduce` is, it is the same from run to run: the pieces and
    /// the order they are combined in depend on `items.len()` and the pool's worker count
    /// only, not on scheduling (so floating-point sums repeat exactly). As rayon's
    /// `items.par_iter().map(map).reduce(identity, reduce)`. A panic in a closure is
    /// re-raised here once every piece has finished.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let v: Vec<f64> = (0..10_000).map(|i| i as f64 * 0.1).collect();
    /// let a = pool.map_reduce(&v, || 0.0, |x| x * x, |a, b| a + b);
    /// let b = pool.map_reduce(&v, || 0.0, |x| x * x, |a, b| a + b);
    /// assert_eq!(a.to_bits(), b.to_bits()); // the same tree both times
    /// let longest = pool.map_reduce(&["a", "ccc", "bb"], || 0, |s| s.len(), usize::max);
    /// assert_eq!(longest, 3);
    /// ```
    #[doc(alias = "reduce")]
    pub fn map_reduce<T, R, ID, M, RD>(&self, items: &[T], identity: ID, map: M, reduce: RD) -> R
    where
        T: Sync,
        R: Send,
        ID: Fn() -> R + Sync,
        M: Fn(&T) -> R + Sync,
        RD: Fn(R, R) -> R + Sync,
    {
        map_reduce_in(self.registry(), items, &identity, &map, &reduce)
    }

    /// Sorts `v` in parallel, stably: equal items keep their order. A merge sort on the
    /// pool's `join` (halves sorted in parallel, then merged); it allocates as
    /// `slice::sort` does. Blocks until sorted. As rayon's `par_sort`.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let mut v: Vec<u32> = (0..10_000).rev().collect();
    /// pool.par_sort(&mut v);
    /// assert!(v.windows(2).all(|w| w[0] <= w[1]));
    /// ```
    pub fn par_sort<T: Ord + Send>(&self, v: &mut [T]) {
        sort_in(self.registry(), v, true, &T::cmp)
    }

    /// Like [`par_sort`](Pool::par_sort), ordered by `cmp` (stable). As rayon's
    /// `par_sort_by`.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let mut v: Vec<(u8, u32)> = (0..10_000).map(|i| ((i % 3) as u8, i)).collect();
    /// pool.par_sort_by(&mut v, |a, b| a.0.cmp(&b.0));
    /// assert!(v.windows(2).all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1)));
    /// ```
    pub fn par_sort_by<T, F>(&self, v: &mut [T], cmp: F)
    where
        T: Send,
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        sort_in(self.registry(), v, true, &cmp)
    }

    /// Sorts `v` in parallel; equal items may be reordered. A quicksort on the pool's `join`
    /// that splits at the median, so both sides are the same size; it does not allocate.
    /// Blocks until sorted. As rayon's `par_sort_unstable`.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let mut v: Vec<u64> = (0..10_000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
    /// pool.par_sort_unstable(&mut v);
    /// assert!(v.windows(2).all(|w| w[0] <= w[1]));
    /// ```
    pub fn par_sort_unstable<T: Ord + Send>(&self, v: &mut [T]) {
        sort_in(self.registry(), v, false, &T::cmp)
    }

    /// Like [`par_sort_unstable`](Pool::par_sort_unstable), ordered by `cmp`. As rayon's
    /// `par_sort_unstable_by`.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let mut v: Vec<i32> = (0..10_000).collect();
    /// pool.par_sort_unstable_by(&mut v, |a, b| b.cmp(a)); // descending
    /// assert_eq!(v[0], 9_999);
    /// ```
    pub fn par_sort_unstable_by<T, F>(&self, v: &mut [T], cmp: F)
    where
        T: Send,
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        sort_in(self.registry(), v, false, &cmp)
    }
}

/// [`Pool::par_for_each`] on the current pool: the calling worker's, else the [`global`]
/// one.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let seen = AtomicUsize::new(0);
/// flock::par_for_each(&[1, 2, 3], |_| { seen.fetch_add(1, Ordering::Relaxed); });
/// assert_eq!(seen.into_inner(), 3);
/// ```
#[doc(alias = "par_iter")]
pub fn par_for_each<T: Sync, F: Fn(&T) + Sync>(items: &[T], f: F) {
    for_each_in(&current(), items, &f)
}

/// [`Pool::par_for_each_mut`] on the current pool: the calling worker's, else the
/// [`global`] one.
///
/// ```
/// let mut v = vec![1, 2, 3];
/// flock::par_for_each_mut(&mut v, |x| *x += 1);
/// assert_eq!(v, [2, 3, 4]);
/// ```
#[doc(alias = "par_iter_mut")]
pub fn par_for_each_mut<T: Send, F: Fn(&mut T) + Sync>(items: &mut [T], f: F) {
    for_each_mut_in(&current(), items, &f)
}

/// [`Pool::par_chunks_mut`] on the current pool: the calling worker's, else the [`global`]
/// one.
///
/// ```
/// let mut v = vec![0usize; 10];
/// flock::par_chunks_mut(&mut v, 3, |i, chunk| chunk.fill(i));
/// assert_eq!(v, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]);
/// ```
pub fn par_chunks_mut<T: Send, F: Fn(usize, &mut [T]) + Sync>(items: &mut [T], size: usize, f: F) {
    chunks_mut_in(&current(), items, size, &f)
}

/// [`Pool::map_reduce`] on the current pool: the calling worker's, else the [`global`] one.
///
/// ```
/// let total = flock::map_reduce(&[1u64, 2, 3], || 0, |x| x * 10, |a, b| a + b);
/// assert_eq!(total, 60);
/// ```
#[doc(alias = "reduce")]
pub fn map_reduce<T, R, ID, M, RD>(items: &[T], identity: ID, map: M, reduce: RD) -> R
where
    T: Sync,
    R: Send,
    ID: Fn() -> R + Sync,
    M: Fn(&T) -> R + Sync,
    RD: Fn(R, R) -> R + Sync,
{
    map_reduce_in(&current(), items, &identity, &map, &reduce)
}

/// [`Pool::par_sort`] (stable) on the current pool: the calling worker's, else the
/// [`global`] one.
///
/// ```
/// let mut v = vec![3, 1, 2];
/// flock::par_sort(&mut v);
/// assert_eq!(v, [1, 2, 3]);
/// ```
pub fn par_sort<T: Ord + Send>(v: &mut [T]) {
    sort_in(&current(), v, true, &T::cmp)
}

/// [`Pool::par_sort_by`] (stable) on the current pool: the calling worker's, else the
/// [`global`] one.
///
/// ```
/// let mut v = vec![(1, 'b'), (0, 'x'), (1, 'a')];
/// flock::par_sort_by(&mut v, |a, b| a.0.cmp(&b.0));
/// assert_eq!(v, [(0, 'x'), (1, 'b'), (1, 'a')]);
/// ```
pub fn par_sort_by<T: Send, F: Fn(&T, &T) -> Ordering + Sync>(v: &mut [T], cmp: F) {
    sort_in(&current(), v, true, &cmp)
}

/// [`Pool::par_sort_unstable`] on the current pool: the calling worker's, else the
/// [`global`] one.
///
/// ```
/// let mut v = vec![3, 1, 2];
/// flock::par_sort_unstable(&mut v);
/// assert_eq!(v, [1, 2, 3]);
/// ```
pub fn par_sort_unstable<T: Ord + Send>(v: &mut [T]) {
    sort_in(&current(), v, false, &T::cmp)
}

/// [`Pool::par_sort_unstable_by`] on the current pool: the calling worker's, else the
/// [`global`] one.
///
/// ```
/// let mut v = vec![1, 3, 2];
/// flock::par_sort_unstable_by(&mut v, |a, b| b.cmp(a));
/// assert_eq!(v, [3, 2, 1]);
/// ```
pub fn par_sort_unstable_by<T: Send, F: Fn(&T, &T) -> Ordering + Sync>(v: &mut [T], cmp: F) {
    sort_in(&current(), v, false, &cmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_chunk_gives_about_four_pieces_per_worker() {
        assert_eq!(auto_chunk(1000, 2), 125);
        assert_eq!(auto_chunk(3, 4), 1);
        assert_eq!(auto_chunk(0, 4), 1);
        assert_eq!(auto_chunk(10, 0), 3);
    }
}
