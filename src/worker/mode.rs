//! How a worker runs a task, fixed when it starts: the pool's lanes and latency tracking
//! decide which of `execute`'s paths a task takes, and whether `join` and `scope` push
//! their two-word entries (`JobRef`) onto the worker's join deque.

/// The path `execute` runs a task on (`worker/execute.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum RunMode {
    /// One lane and no latency tracking: run the task and count its end (`run_plain`).
    /// `spawns_by_ref` in a pool not built with `fifo()`: scope tasks spawned here take the
    /// two-word path through our join deque (`WorkerThread::spawns_by_ref`).
    Plain { spawns_by_ref: bool },
    /// One lane with latency tracking: time the task and nothing else (`run_timed`).
    Timed,
    /// Several lanes: the task's lane, start and run time are kept for fair queueing,
    /// `yield_to_lanes`, the lane reserve and the histograms (`run_tracked`).
    Lanes,
}

impl RunMode {
    /// The mode of a worker in a pool with `lanes` lanes, latency tracking if `timed`, built
    /// with `fifo()` if `fifo`.
    pub(super) fn of(lanes: usize, timed: bool, fifo: bool) -> RunMode {
        match (lanes, timed) {
            (1, false) => RunMode::Plain {
                spawns_by_ref: !fifo,
            },
            (1, true) => RunMode::Timed,
            _ => RunMode::Lanes,
        }
    }

    /// Whether scope tasks spawned here go onto the join deque as `JobRef`s.
    #[inline]
    pub(super) fn spawns_by_ref(self) -> bool {
        matches!(
            self,
            RunMode::Plain {
                spawns_by_ref: true
            }
        )
    }

    /// Whether `join`'s second half goes onto the join deque as a `JobRef`: in a pool with
    /// one lane. With lanes it goes onto the lane's deque as a `Job`, so that whoever runs
    /// it runs it in its lane.
    #[inline]
    pub(super) fn joins_by_ref(self) -> bool {
        !matches!(self, RunMode::Lanes)
    }

    /// Whether `execute` runs a counted task on the short path (`run_plain`), as
    /// `execute_ref` does every counted entry.
    #[inline]
    pub(super) fn is_plain(self) -> bool {
        matches!(self, RunMode::Plain { .. })
    }
}
