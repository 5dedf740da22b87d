//! A worker's lane clock: the lane of the task it runs, the per-lane virtual clocks of
//! start-time fair queueing (`find_work_in_lanes`, `yield_to_lanes`), and the times a task's
//! run is measured from (`run_tracked`, `run_timed`).

use std::cell::Cell;

/// The lane and times of the task a worker runs, and its virtual clock per lane.
pub(super) struct LaneClock {
    /// The lane of the task running now: what it submits inherits it.
    lane: Cell<usize>,
    /// Per lane, this worker's virtual clock (lanes > 1): run time charged to the lane,
    /// scaled by its stride. The lane furthest behind is served next.
    vtime: Box<[Cell<u64>]>,
    /// Run time of tasks nested inside the running one (`join`, `scope` waits), so the outer
    /// task is charged only its own.
    nested_ns: Cell<u64>,
    /// When the running task started (`Registry::now_ns`; lanes > 1 only), for
    /// `yield_to_lanes`.
    task_start: Cell<u64>,
    /// In a one-lane pool with latency tracking, when the last task run here ended
    /// (`Registry::now_ns`), while this worker has done nothing since but take the next one;
    /// 0 otherwise. `run_timed` starts the next task's clock there instead of reading it
    /// again.
    last_end: Cell<u64>,
}

/// What `LaneClock::enter` replaced: the outer task's, put back by `leave`.
pub(super) struct Outer {
    lane: usize,
    pub(super) nested_ns: u64,
    task_start: u64,
}

impl LaneClock {
    pub(super) fn new(lanes: usize) -> LaneClock {
        LaneClock {
            lane: Cell::new(0),
            vtime: (0..lanes).map(|_| Cell::new(0)).collect(),
            nested_ns: Cell::new(0),
            task_start: Cell::new(0),
            last_end: Cell::new(0),
        }
    }

    /// The lane of the task running now.
    #[inline]
    pub(super) fn lane(&self) -> usize {
        self.lane.get()
    }

    /// A task of `lane` starts at `start` (0: not timed), nested inside the running one if
    /// any: its lane and start replace the outer task's, its nested time starts at 0.
    #[inline]
    pub(super) fn enter(&self, lane: usize, start: u64) -> Outer {
        Outer {
            lane: self.lane.replace(lane),
            nested_ns: self.nested_ns.replace(0),
            task_start: self.task_start.replace(start),
        }
    }

    /// The task `enter` started ended: the outer task's lane and start are back. Returns the
    /// run time of the tasks nested inside the one that ended; its nested time is set by
    /// `set_nested_ns` after.
    #[inline]
    pub(super) fn leave(&self, outer: &Outer) -> u64 {
        self.lane.set(outer.lane);
        self.task_start.set(outer.task_start);
        self.nested_ns.get()
    }

    /// Sets the running task's run time of nested tasks.
    #[inline]
    pub(super) fn set_nested_ns(&self, ns: u64) {
        self.nested_ns.set(ns);
    }

    /// The running task's own run time at `now`: since it started, less its nested tasks'.
    pub(super) fn own_ns(&self, now: u64) -> u64 {
        now.saturating_sub(self.task_start.get())
            .saturating_sub(self.nested_ns.get())
    }

    /// The virtual clocks, one per lane.
    #[inline]
    pub(super) fn vtime(&self) -> &[Cell<u64>] {
        &self.vtime
    }

    /// Charges `ns` of run time to `lane`'s virtual clock, scaled by the lane's `stride`.
    pub(super) fn charge(&self, lane: usize, ns: u64, stride: u64) {
        // Capped at 2^40 ns (18 minutes) so the product fits: the stride is at most 2^16.
        let cost = ns.clamp(1, 1 << 40) * stride;
        let clock = &self.vtime[lane];
        clock.set(clock.get().wrapping_add(cost));
    }

    /// When the last task run here ended, taken (left 0): a task that runs nested inside
    /// the next one (a join's wait) must not start there.
    #[inline]
    pub(super) fn take_last_end(&self) -> u64 {
        self.last_end.replace(0)
    }

    /// A timed task ended at `now`: the next one may start its clock there.
    #[inline]
    pub(super) fn set_last_end(&self, now: u64) {
        self.last_end.set(now.max(1));
    }

    /// Something other than taking the next task happened: it starts its own clock.
    #[inline]
    pub(super) fn clear_last_end(&self) {
        self.last_end.set(0);
    }
}
