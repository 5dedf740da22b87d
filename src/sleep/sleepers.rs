//! The list of parked workers, and what it tells a parking worker about the membarrier
//! (docs/protocol.md, "One membarrier per era"). Everything here lives under `Sleep`'s
//! `sleepers` lock; the counts in the state word follow the list's length.

use crate::sync::{canary, Canary};

/// The workers listed as asleep, in the order they announced themselves.
///
/// An *era* is a stretch of time in which the list never becomes empty: it ends each time a
/// removal empties the list. Within one era `sleeping ≥ 1` holds from the era's first
/// announcement on, so a push whose light side loads the state word after a membarrier
/// that started in the era reads `sleeping ≥ 1` and takes the fenced path. `covered` records
/// the era in which such a membarrier started and returned with the list never empty in
/// between: a worker that announces itself in that era needs no membarrier of its own.
pub(crate) struct Sleepers {
    list: Vec<usize>,
    /// Eras ended so far (each time a removal emptied `list`).
    era: u64,
    /// The era a completed membarrier covers, if any.
    covered: Option<u64>,
}

impl Sleepers {
    pub(crate) fn with_capacity(workers: usize) -> Sleepers {
        Sleepers {
            list: Vec::with_capacity(workers),
            era: 0,
            covered: None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Lists `index` as asleep. Returns the era it joined.
    pub(crate) fn push(&mut self, index: usize) -> u64 {
        self.list.push(index);
        self.era
    }

    /// Takes `index` off the list if it is listed; whether it was.
    pub(crate) fn remove(&mut self, index: usize) -> bool {
        let Some(pos) = self.list.iter().position(|&i| i == index) else {
            return false;
        };
        self.list.swap_remove(pos);
        self.end_era_if_empty();
        true
    }

    /// Takes the last listed worker off the list.
    pub(crate) fn pop(&mut self) -> Option<usize> {
        let index = self.list.pop()?;
        self.end_era_if_empty();
        Some(index)
    }

    /// Takes the last `take` listed workers off the list (at most all of them).
    pub(crate) fn take_last(&mut self, take: usize) -> Vec<usize> {
        let at = self.list.len() - take.min(self.list.len());
        let woken = self.list.drain(at..).collect();
        self.end_era_if_empty();
        woken
    }

    fn end_era_if_empty(&mut self) {
        if self.list.is_empty() {
            self.era = self.era.wrapping_add(1);
        }
    }

    /// Whether a worker that announced itself in `era` may re-check the queues without a
    /// membarrier of its own: a completed membarrier covers the era, or the era ended, which
    /// takes that worker off the list first (a waker chose it; it consumes the token and
    /// searches, whatever its re-check reads). The `era` canary forgets the first condition's
    /// era: any completed membarrier would do, which loses a wake-up
    /// (`loom_a_membarrier_covers_only_its_era`).
    pub(crate) fn barrier_covers(&self, era: u64) -> bool {
        if self.era != era {
            return true;
        }
        if canary(Canary::Era) {
            return self.covered.is_some();
        }
        self.covered == Some(era)
    }

    /// A membarrier issued by a worker that announced itself in `era` returned: if the era
    /// has not ended meanwhile, the list was never empty from that announcement to now, so
    /// the membarrier covers the era.
    pub(crate) fn cover(&mut self, era: u64) {
        if self.era == era {
            self.covered = Some(era);
        }
    }

    /// Whether a completed membarrier covers the current era.
    #[cfg(all(test, not(flock_loom)))]
    pub(crate) fn era_covered(&self) -> bool {
        self.covered == Some(self.era)
    }
}
