//! `Gate`, the owner of capacity and backpressure: the units of capacity taken (`pending`),
//! the submitters blocked waiting for room, sync (`room_lock`, `room_cond`) and async
//! (`room_wakers`, `src/admit.rs`), the low-water mark that wakes them, and the helper
//! threads `Backpressure::SpawnThread` may have running. Why no wake-up for room is lost is
//! docs/protocol.md, "Backpressure".
//!
//! What crosses owners (entering a task on a shard, the shutdown check, counting a refusal)
//! stays on `Registry` (`registry/admission.rs`), which passes in what a step needs.

use crate::config::Config;
use crate::sync::{canary, AtomicUsize, Canary, Condvar, Mutex, Ordering};
use crate::wakers::RoomWakers;
use crate::RejectReason;
use crossbeam_utils::CachePadded;
use std::task::Waker;
use std::time::{Duration, Instant};

pub(crate) struct Gate {
    /// Tasks accepted from outside and not yet started (may overstate; see docs/protocol.md).
    pending: CachePadded<AtomicUsize>,
    /// Submitters blocked waiting for room.
    blocked: CachePadded<AtomicUsize>,
    room_lock: Mutex<()>,
    room_cond: Condvar,
    /// Async submitters waiting for room (`src/admit.rs`).
    room_wakers: RoomWakers,
    /// The most units `pending` may hold; `usize::MAX` when capacity does not apply.
    capacity: usize,
    /// The low-water mark: blocked submitters are woken when a decrement of `pending` (a
    /// release, or a failed reservation's undo) takes it from at or above it to below it.
    room_mark: usize,
    /// Started tasks a worker may hold back before giving their `pending` units back.
    flush_threshold: usize,
    /// How long a blocked submitter waits for room (`PoolBuilder::block_timeout`).
    block_timeout: Option<Duration>,
    /// Helper threads (`Backpressure::SpawnThread`) running now, and the most there may be.
    /// A helper slot is a unit of capacity of its own, taken by admission and given back by
    /// the helper as it leaves (`registry/dispatch.rs`).
    helpers_live: AtomicUsize,
    max_helpers: usize,
}

impl Gate {
    pub(crate) fn new(cfg: &Config) -> Gate {
        // From `max_workers`, not the starting count: held-back units may overstate the queue
        // by `flush_threshold × workers`, which must stay small at any size (`resize`).
        let per_worker = cfg.capacity / (32 * cfg.max_workers);
        Gate {
            pending: CachePadded::new(AtomicUsize::new(0)),
            blocked: CachePadded::new(AtomicUsize::new(0)),
            room_lock: Mutex::new(()),
            room_cond: Condvar::new(),
            room_wakers: RoomWakers::new(),
            capacity: cfg.capacity,
            room_mark: room_mark(cfg.capacity),
            flush_threshold: per_worker.clamp(1, 64),
            block_timeout: cfg.block_timeout,
            helpers_live: AtomicUsize::new(0),
            max_helpers: cfg.max_spawned_threads,
        }
    }

    /// Whether capacity applies at all (a pool built without `capacity` has none).
    #[inline]
    pub(crate) fn is_bounded(&self) -> bool {
        self.capacity != usize::MAX
    }

    /// Started tasks a worker may hold back before giving their units back
    /// (`release_pending` in one call for all of them).
    #[inline]
    pub(crate) fn flush_threshold(&self) -> usize {
        self.flush_threshold
    }

    /// One unit of `pending`, if below capacity. Relaxed on the fast path: a failed attempt
    /// is re-made behind the `blocked` handshake (`block_for_room`) before anyone sleeps.
    ///
    /// Inline, with everything past a full queue out of line (`undo_reservation`,
    /// `retry_after_crossing`): it is on every outside submit's path, and as one function
    /// with its loop and wake it was no longer inlined.
    #[inline]
    pub(crate) fn try_reserve(&self, order: Ordering) -> bool {
        match self.reserve_or_undo(order) {
            Reserved::Yes => true,
            Reserved::Full => false,
            Reserved::Crossed => self.retry_after_crossing(order),
        }
    }

    /// Our undo stood for the release that crossed the mark: wake as it would have, then
    /// try again (there is room).
    #[cold]
    fn retry_after_crossing(&self, order: Ordering) -> bool {
        loop {
            self.wake_for_room();
            match self.reserve_or_undo(order) {
                Reserved::Yes => return true,
                Reserved::Full => return false,
                Reserved::Crossed => {}
            }
        }
    }

    /// Adds a unit to `pending`, kept if it was below capacity, else taken back. The taking
    /// back is a decrement like a release's: if releases ran between our add and it, it can
    /// be the one that takes `pending` below the low-water mark (`room_mark`), and then it
    /// must wake blocked submitters in their stead (`Reserved::Crossed`; docs/protocol.md,
    /// "Backpressure").
    #[inline]
    fn reserve_or_undo(&self, order: Ordering) -> Reserved {
        if self.pending.fetch_add(1, order) < self.capacity {
            return Reserved::Yes;
        }
        self.undo_reservation()
    }

    /// `reserve_or_undo`'s add found the queue full: take it back.
    #[cold]
    fn undo_reservation(&self) -> Reserved {
        // SeqCst, as a release's RMW: this may be the crossing decrement, which must see the
        // `blocked` increment of a submitter whose re-check it follows in `pending`'s order.
        // The `undo` canary never wakes for the crossing, so that the loom model of
        // it must hang (scripts/loom.sh).
        if self.pending.fetch_sub(1, Ordering::SeqCst) == self.mark() && !canary(Canary::Undo) {
            Reserved::Crossed
        } else {
            Reserved::Full
        }
    }

    /// The low-water mark (`room_mark`); one lower under the `room` canary of scripts/loom.sh,
    /// which must then hang `loom_block_wakes_at_the_low_water_mark`.
    #[inline]
    fn mark(&self) -> usize {
        self.room_mark - usize::from(canary(Canary::Room))
    }

    /// What a decrement of `pending` that crossed the low-water mark owes the blocked
    /// submitters: under `room_lock`, wake the blocked threads; and wake the async waiters.
    fn wake_for_room(&self) {
        // SeqCst: after the caller's SeqCst RMW on `pending` (see `release_pending`).
        if self.blocked.load(Ordering::SeqCst) > 0 {
            let _guard = self.room_lock.lock();
            self.room_cond.notify_all();
        }
        self.room_wakers.wake_all();
    }

    /// Takes a helper slot (`Backpressure::SpawnThread`), if fewer than the most are taken.
    pub(crate) fn try_take_helper_slot(&self) -> bool {
        let mut n = self.helpers_live.load(Ordering::Relaxed);
        while n < self.max_helpers {
            match self.helpers_live.compare_exchange_weak(
                n,
                n + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    /// Gives back a helper slot: its helper thread is leaving, or could not be started.
    pub(crate) fn give_back_helper_slot(&self) {
        self.helpers_live.fetch_sub(1, Ordering::AcqRel);
    }

    /// Parks the submitter until a unit of capacity frees up (`Ok`: the unit is ours), the
    /// pool shuts down (`closed` says so), or the block timeout passes.
    #[cold]
    pub(crate) fn block_for_room(&self, closed: impl Fn() -> bool) -> Result<(), RejectReason> {
        let deadline = self.block_timeout.map(|d| Instant::now() + d);
        // SeqCst: pairs with the SeqCst `pending` RMW + `blocked` load in `release_pending`.
        self.blocked.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.room_lock.lock();
        let mut timed_out = false;
        let result = loop {
            // Read under `room_lock`: shutdown raises its flag before it takes `room_lock`
            // to notify (`wake_blocked_for_shutdown`), so we either see it here or are
            // waiting when it notifies.
            if closed() {
                break Err(RejectReason::Shutdown);
            }
            match self.reserve_or_undo(Ordering::SeqCst) {
                Reserved::Yes => break Ok(()),
                Reserved::Full => {}
                Reserved::Crossed => {
                    // As `wake_for_room`: notify under `room_lock`, held already; wake the
                    // async waiters outside it (a waker is a user's code, and may submit);
                    // then look again under the lock.
                    self.room_cond.notify_all();
                    drop(guard);
                    self.room_wakers.wake_all();
                    guard = self.room_lock.lock();
                    continue;
                }
            }
            if timed_out {
                break Err(RejectReason::Timeout);
            }
            timed_out = !self.room_cond.wait_until(&mut guard, deadline);
        };
        drop(guard);
        self.blocked.fetch_sub(1, Ordering::Relaxed);
        result
    }

    /// Wakes every blocked submitter, sync and async, to see the shutdown flag its caller
    /// raised before (see `block_for_room`).
    pub(crate) fn wake_blocked_for_shutdown(&self) {
        {
            let _guard = self.room_lock.lock();
            self.room_cond.notify_all();
        }
        self.room_wakers.wake_all();
    }

    /// Registers an async submitter's waker for room (`src/admit.rs`), under `id`.
    pub(crate) fn register_room_waker(&self, id: &mut Option<u64>, waker: &Waker) {
        self.room_wakers.register(id, waker);
    }

    /// Takes an async submitter's waker out of the waiters for room.
    pub(crate) fn unregister_room_waker(&self, id: u64) {
        self.room_wakers.unregister(id);
    }

    /// Up to `k` units of `pending`, as many as fit below capacity.
    pub(crate) fn try_reserve_up_to(&self, k: usize) -> usize {
        if !self.is_bounded() {
            return k;
        }
        let mut now = self.pending.load(Ordering::Relaxed);
        loop {
            let take = k.min(self.capacity.saturating_sub(now));
            if take == 0 {
                return 0;
            }
            match self.pending.compare_exchange_weak(
                now,
                now + take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return take,
                Err(seen) => now = seen,
            }
        }
    }

    /// Gives back `n` units of `pending`, and wakes blocked submitters if this took it from
    /// at or above the low-water mark (`room_mark`) to below it.
    ///
    /// Only that crossing can matter: a blocked submitter saw `pending >= capacity` (at or
    /// above the mark) in its re-check, and `pending` only falls below the mark through a
    /// decrement whose previous value was at or above it: this release, or the undo of a
    /// failed reservation, which then wakes in its stead (`reserve_or_undo`). Waking on
    /// every release instead would make many blocked submitters thrash on `room_lock` once
    /// per task; waking at the first room, one submitter that keeps the queue full would
    /// sleep and wake once per worker flush.
    pub(crate) fn release_pending(&self, n: usize) {
        // SeqCst RMW then SeqCst load: pairs with `block_for_room`'s `blocked` increment and
        // its re-check of `pending` (RMWs on `pending` are totally ordered; the one that reads
        // the other's value synchronises with it).
        let prev = self.pending.fetch_sub(n, Ordering::SeqCst);
        let mark = self.mark();
        if prev >= mark && prev - n < mark {
            self.wake_for_room();
        }
    }

    /// Units of `pending` taken now, for the loom models' checks.
    #[cfg(all(test, flock_loom))]
    pub(crate) fn pending_units(&self) -> usize {
        // SeqCst: a model's check after the threads it looks at have joined, or of its own
        // thread's effects; it orders nothing else.
        self.pending.load(Ordering::SeqCst)
    }
}

/// What `reserve_or_undo` did.
enum Reserved {
    /// A unit is ours.
    Yes,
    /// The queue was full, and our undo left `pending` where the next release will wake.
    Full,
    /// The queue was full, but releases ran meanwhile and our undo took `pending` below the
    /// low-water mark: no release will wake the blocked submitters for that crossing, we must.
    Crossed,
}

/// A blocked submitter sleeps until `pending` falls below `capacity - capacity / ROOM_SLACK`
/// (`room_mark`). Two under loom, so that the models' capacities of 2 to 4 have a mark below
/// capacity and go through it.
const ROOM_SLACK: usize = if cfg!(flock_loom) { 2 } else { 32 };

/// Where `release_pending` wakes blocked submitters (docs/protocol.md, "Backpressure"):
/// `capacity - capacity / 32`, so below 32 at the first room. A submitter that keeps the
/// queue full then sleeps and wakes once per `capacity / 32` tasks started, not once per
/// flush of a worker (`flush_threshold`, at most 64).
fn room_mark(capacity: usize) -> usize {
    capacity - capacity / ROOM_SLACK
}
