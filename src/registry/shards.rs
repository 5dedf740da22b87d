//! Sharded counts: one cache-padded shard per worker, written only by that worker with plain
//! (load + store) updates, and a few shards for threads outside the pool, picked by a
//! thread-local index so two submitters rarely share one. Readers sum the shards.
//!
//! A shard holds two owners' counts side by side, so that a worker's writes stay on its
//! own lines: the protocol's progress counts (`Counts`, `registry/quiet.rs`) and the
//! statistics (`StatCounts`, `metrics/counters.rs`).

use super::quiet::{self, Counts, Progress};
use crate::metrics::counters::{LaneStat, Stat, StatCounts};
use crate::sync::facade_thread_local;
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One thread's (or several outside threads') counts.
pub(crate) struct Shard {
    /// Entered, revoked and finished tasks (`Quiet`'s protocol).
    pub(crate) progress: Counts,
    /// Statistics only.
    pub(crate) stats: StatCounts,
}

impl Shard {
    fn new() -> Self {
        Shard {
            progress: Counts::new(),
            stats: StatCounts::new(),
        }
    }
}

/// Shards for threads outside the pool. A power of two, so the index is a mask. Two under
/// loom (fewer objects in each execution) and under Miri, where each `outstanding` sum
/// retags every shard with all its counters: with 16, twenty submit-and-`wait` rounds took
/// 12.0 s under Miri against 7.3 s with two. Outside threads then share shards more often
/// (the same `enter_shared` path).
const EXTERNAL_SHARDS: usize = if cfg!(any(flock_loom, miri)) { 2 } else { 16 };

pub(crate) struct Shards {
    workers: Box<[CachePadded<Shard>]>,
    external: Box<[CachePadded<Shard>]>,
}

impl Shards {
    pub(crate) fn new(workers: usize) -> Self {
        Shards {
            workers: (0..workers)
                .map(|_| CachePadded::new(Shard::new()))
                .collect(),
            external: (0..EXTERNAL_SHARDS)
                .map(|_| CachePadded::new(Shard::new()))
                .collect(),
        }
    }

    #[inline]
    pub(crate) fn worker(&self, index: usize) -> &Shard {
        &self.workers[index]
    }

    /// The calling thread's external shard.
    #[inline]
    pub(crate) fn external(&self) -> &Shard {
        &self.external[external_index() & (EXTERNAL_SHARDS - 1)]
    }

    fn all(&self) -> impl Iterator<Item = &Shard> {
        self.workers
            .iter()
            .chain(self.external.iter())
            .map(|s| &**s)
    }

    pub(crate) fn sum_progress(&self, c: Progress) -> u64 {
        self.all().map(|s| s.progress.get(c)).sum()
    }

    pub(crate) fn sum_stat(&self, s: Stat) -> u64 {
        self.all().map(|sh| sh.stats.stat(s)).sum()
    }

    pub(crate) fn sum_lane(&self, s: LaneStat, lane: usize) -> u64 {
        self.all().map(|sh| sh.stats.lane_stat(s, lane)).sum()
    }

    /// Tasks entered and neither finished nor revoked (`quiet::outstanding`).
    pub(crate) fn outstanding(&self) -> u64 {
        quiet::outstanding(|c| self.sum_progress(c))
    }

    /// Closes every external shard to new entries (the first step of shutdown; see
    /// `Counts::enter_shared`).
    pub(crate) fn close_external(&self) {
        for shard in self.external.iter() {
            shard.progress.close();
        }
    }

    pub(crate) fn worker_shards(&self) -> &[CachePadded<Shard>] {
        &self.workers
    }
}

static NEXT_EXTERNAL: AtomicUsize = AtomicUsize::new(0);

facade_thread_local! {
    static EXTERNAL_INDEX: Cell<usize> = Cell::new(usize::MAX);
}

/// A per-thread index, handed out round-robin the first time a thread asks (one RMW per
/// thread's life, never per submit).
fn external_index() -> usize {
    if cfg!(flock_loom) {
        // The global counter outlives loom's executions, which must replay identically.
        return 0;
    }
    EXTERNAL_INDEX.with(|i| {
        let mut v = i.get();
        if v == usize::MAX {
            v = NEXT_EXTERNAL.fetch_add(1, Ordering::Relaxed);
            i.set(v);
        }
        v
    })
}
