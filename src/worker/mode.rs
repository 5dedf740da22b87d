//! How a worker runs a task, fixed when it starts: the pool's lanes and latency tracking
//! decide which of `execute`'s paths a task takes, and whether `join` pushes its two-word
//! entries (`JobRef`) onto the worker's join deque. (Whether scope tasks go there too is
//! the scope cache's `spawns_by_ref`, true only in `Plain` mode.)

/// The path `execute` runs a task on (`worker/execute.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum RunMode {
    /// One lane and no latency tracking: run the task and count its end (`run_plain`).
    Plain,
    /// One lane with latency tracking: time the task and nothing else (`run_timed`).
    Timed,
    /// Several lanes: the task's lane, start and run time are kept for fair queueing,
    /// `yield_to_lanes`, the lane reserve and the histograms (`run_tracked`).
    Lanes,
}

impl RunMode {
    /// The mode of a worker in a pool with `lanes` lanes, latency tracking if `timed`.
    pub(super) fn of(lanes: usize, timed: bool) -> RunMode {
        match (lanes, timed) {
            (1, false) => RunMode::Plain,
            (1, true) => RunMode::Timed,
            _ => RunMode::Lanes,
        }
    }

    /// Whether a task needs nothing but its run and the count of its end (`run_plain`):
    /// then a counted task can go through the join deque as a `JobRef`, which
    /// `execute_ref` runs that way (scope tasks, `ScopeCache`'s `spawns_by_ref`).
    #[inline]
    pub(super) fn is_plain(self) -> bool {
        matches!(self, RunMode::Plain)
    }

    /// Whether `join`'s second half goes onto the join deque as a `JobRef`: in a pool with
    /// one lane. With lanes it goes onto the lane's deque as a `Job`, so that whoever runs
    /// it runs it in its lane.
    #[inline]
    pub(super) fn joins_by_ref(self) -> bool {
        !matches!(self, RunMode::Lanes)
    }
}
