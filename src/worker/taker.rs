//! What a worker takes from queues it shares with others: where its next look at a lane's
//! shared queue starts, the submitter's ring it holds, the bundle it claims from per lane,
//! and the random start of its steals. `worker/find.rs` decides where to look; this keeps
//! what those looks leave behind for the next one.

use crate::job::{Bundle, Job};
use crate::submitq::INJECTOR;
use crate::sync::Arc;
use std::cell::{Cell, RefCell};

/// The most jobs a worker takes in a row from the ring it holds (`take_held_ring`) before
/// it looks at every source of the lane again.
const HOLD_TAKES: u32 = 32;

/// A bundle a worker claims jobs from (`Taker::claim`). Only a handle: the bundle's entry
/// stays in a queue for as long as it has jobs, so dropping this loses nothing.
pub(super) struct TakenBundle {
    bundle: Arc<Bundle>,
}

/// Where a worker takes from next, outside its own deques.
pub(super) struct Taker {
    rng: Cell<u64>,
    /// Where the next look at a lane's shared queue starts among its sources (the rings of
    /// the submitting threads and the injector, `SharedQueue::steal`): moved on every look,
    /// so that a source that is always refilled cannot keep the others waiting.
    probe: Cell<usize>,
    /// The submitter's ring (one-lane pools) our last job from the shared queue came from,
    /// and how many more jobs we take from it before looking at every source again
    /// (`take_held_ring`); `submitq::INJECTOR` when none.
    held_ring: Cell<usize>,
    held_left: Cell<u32>,
    /// Per lane, the bundle we took up last, to claim its jobs from without a trip through
    /// our deque (`claim_taken`).
    taken: Box<[RefCell<Option<TakenBundle>>]>,
    /// Bit `lane` set while `taken[lane]` holds a bundle: one load and test on every take
    /// instead of a `RefCell` borrow.
    holding: Cell<u32>,
}

impl Taker {
    pub(super) fn new(index: usize, lanes: usize) -> Taker {
        Taker {
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ ((index as u64 + 1) << 17)),
            probe: Cell::new(index),
            held_ring: Cell::new(INJECTOR),
            held_left: Cell::new(0),
            taken: (0..lanes).map(|_| RefCell::new(None)).collect(),
            holding: Cell::new(0),
        }
    }

    /// Where this look at a shared queue starts; the next one starts one further.
    #[inline]
    pub(super) fn next_probe(&self) -> usize {
        let start = self.probe.get();
        self.probe.set(start.wrapping_add(1));
        start
    }

    /// The ring we hold, `INJECTOR` if none.
    #[inline]
    pub(super) fn held_ring(&self) -> usize {
        self.held_ring.get()
    }

    /// How many more takes we hold the ring for.
    #[inline]
    pub(super) fn held_left(&self) -> u32 {
        self.held_left.get()
    }

    /// Holds `source`, the ring our last job came from, for `HOLD_TAKES` takes
    /// (`INJECTOR` holds nothing).
    #[inline]
    pub(super) fn hold_ring(&self, source: usize) {
        self.held_ring.set(source);
        self.held_left.set(HOLD_TAKES);
    }

    /// One take from the held ring done, `left` were left before it.
    #[inline]
    pub(super) fn took_from_ring(&self, left: u32) {
        self.held_left.set(left - 1);
    }

    /// Holds no ring: the next take looks at every source of the lane.
    #[inline]
    pub(super) fn let_go_of_ring(&self) {
        self.held_ring.set(INJECTOR);
    }

    /// Whether we hold a bundle in `lane`.
    #[inline]
    pub(super) fn holds(&self, lane: usize) -> bool {
        self.holding.get() & (1 << lane) != 0
    }

    /// The next job of the bundle we hold in `lane`, if it has one left.
    pub(super) fn claim(&self, lane: usize) -> Option<Job> {
        self.taken[lane].borrow().as_ref()?.bundle.claim()
    }

    /// Whether the bundle we hold in `lane`, if any, has jobs left.
    pub(super) fn has_left(&self, lane: usize) -> bool {
        (self.taken[lane].borrow().as_ref()).is_some_and(|t| t.bundle.remaining() > 0)
    }

    /// Holds `bundle` in `lane`; returns the one held there before, for the caller to
    /// release (`Registry::release_bundle`).
    pub(super) fn hold(&self, lane: usize, bundle: Arc<Bundle>) -> Option<Arc<Bundle>> {
        let previous = self.taken[lane].replace(Some(TakenBundle { bundle }));
        self.holding.set(self.holding.get() | 1 << lane);
        previous.map(|p| p.bundle)
    }

    /// Lets go of the bundle held in `lane`, returned for the caller to release.
    pub(super) fn let_go(&self, lane: usize) -> Option<Arc<Bundle>> {
        let taken = self.taken[lane].borrow_mut().take();
        self.holding.set(self.holding.get() & !(1 << lane));
        taken.map(|t| t.bundle)
    }

    /// The next victim seed for stealing: xorshift64, cheap, per worker, good enough to
    /// spread victims.
    pub(super) fn next_random(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }
}
