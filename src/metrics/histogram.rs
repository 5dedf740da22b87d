//! Log-bucketed latency histograms, sharded like the counters: no lock, no shared RMW on a
//! worker's path.
//!
//! A value `v` (nanoseconds) falls in one of four sub-buckets of its power of two, so a bucket
//! is at most 25% wide and a percentile read from it is off by at most that much.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};

/// Number of buckets: values 0..4 exactly, then four per power of two up to 2^64.
pub(crate) const BUCKETS: usize = 252;

pub(crate) fn bucket_of(v: u64) -> usize {
    if v < 4 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros() as usize;
    let sub = ((v >> (msb - 2)) & 3) as usize;
    (msb - 1) * 4 + sub
}

/// The largest value that falls in bucket `i`.
pub(crate) fn bucket_upper(i: usize) -> u64 {
    if i < 4 {
        return i as u64;
    }
    let msb = i / 4 + 1;
    let sub = (i % 4) as u64;
    let width = 1u64 << (msb - 2);
    ((4 + sub) << (msb - 2)).saturating_add(width - 1)
}

pub(crate) struct Histogram {
    buckets: [AtomicU64; BUCKETS],
    sum: AtomicU64,
    max: AtomicU64,
}

impl Histogram {
    fn new() -> Self {
        Histogram {
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }

    /// Records `v` into a histogram only the calling thread writes: plain loads and stores.
    pub(crate) fn record_owned(&self, v: u64) {
        let b = &self.buckets[bucket_of(v)];
        b.store(b.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        self.sum.store(
            self.sum.load(Ordering::Relaxed).wrapping_add(v),
            Ordering::Relaxed,
        );
        if v > self.max.load(Ordering::Relaxed) {
            self.max.store(v, Ordering::Relaxed);
        }
    }

    /// Records `v` into a histogram several threads may write.
    pub(crate) fn record_shared(&self, v: u64) {
        self.buckets[bucket_of(v)].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(v, Ordering::Relaxed);
        self.max.fetch_max(v, Ordering::Relaxed);
    }

    fn add_to(&self, snap: &mut HistogramSnapshot) {
        for (acc, b) in snap.buckets.iter_mut().zip(self.buckets.iter()) {
            *acc += b.load(Ordering::Relaxed);
        }
        snap.sum = snap.sum.wrapping_add(self.sum.load(Ordering::Relaxed));
        snap.max = snap.max.max(self.max.load(Ordering::Relaxed));
    }
}

/// Queue-wait and run-time histograms of one thread (or group of outside threads).
pub(crate) struct LatencyShard {
    pub(crate) wait: Histogram,
    pub(crate) run: Histogram,
}

pub(crate) struct Latency {
    workers: Box<[CachePadded<LatencyShard>]>,
    external: CachePadded<LatencyShard>,
}

impl Latency {
    pub(crate) fn new(workers: usize) -> Self {
        let shard = || {
            CachePadded::new(LatencyShard {
                wait: Histogram::new(),
                run: Histogram::new(),
            })
        };
        Latency {
            workers: (0..workers).map(|_| shard()).collect(),
            external: shard(),
        }
    }

    pub(crate) fn worker(&self, index: usize) -> &LatencyShard {
        &self.workers[index]
    }

    /// Tasks run off the workers (`CallerRuns`, helper threads) share one shard: they are
    /// the slow path already.
    pub(crate) fn external(&self) -> &LatencyShard {
        &self.external
    }

    pub(crate) fn snapshot(&self) -> (HistogramSnapshot, HistogramSnapshot) {
        let mut wait = HistogramSnapshot::default();
        let mut run = HistogramSnapshot::default();
        for s in self
            .workers
            .iter()
            .map(|s| &**s)
            .chain(std::iter::once(&*self.external))
        {
            s.wait.add_to(&mut wait);
            s.run.add_to(&mut run);
        }
        (wait, run)
    }
}

/// Summed buckets of one histogram.
#[derive(Clone)]
pub(crate) struct HistogramSnapshot {
    pub(crate) buckets: [u64; BUCKETS],
    pub(crate) sum: u64,
    pub(crate) max: u64,
}

impl Default for HistogramSnapshot {
    fn default() -> Self {
        HistogramSnapshot {
            buckets: [0; BUCKETS],
            sum: 0,
            max: 0,
        }
    }
}

impl HistogramSnapshot {
    pub(crate) fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The value below which a fraction `q` of samples fall (the bucket's upper bound, capped
    /// at the largest value seen).
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        let count = self.count();
        if count == 0 {
            return 0;
        }
        let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bucket_upper(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_at_most_a_quarter_wide() {
        for v in (0..5000u64).chain([1 << 20, (1 << 40) + 12345, u64::MAX]) {
            let b = bucket_of(v);
            assert!(b < BUCKETS);
            assert!(v <= bucket_upper(b), "{v} above its bucket");
            if b > 0 {
                assert!(v > bucket_upper(b - 1), "{v} below its bucket");
            }
            if v >= 4 {
                assert!((bucket_upper(b) - v) as f64 <= 0.25 * v as f64 + 1.0);
            }
        }
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let h = Histogram::new();
        for v in 1..=1000u64 {
            h.record_owned(v * 1000);
        }
        let mut s = HistogramSnapshot::default();
        h.add_to(&mut s);
        assert_eq!(s.count(), 1000);
        assert_eq!(s.max, 1_000_000);
        assert_eq!(s.sum, 1000 * 500_500);
        let p50 = s.quantile(0.5) as f64;
        assert!((500_000.0..=625_000.0).contains(&p50), "p50 {p50}");
        let p99 = s.quantile(0.99) as f64;
        assert!((990_000.0..=1_000_000.0).contains(&p99), "p99 {p99}");
    }
}
