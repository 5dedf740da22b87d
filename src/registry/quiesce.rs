//! The end of a task as the registry sees it, and waiting for quiet: a panic that escaped
//! a task reported, `wait()`ers told when the outstanding count may have reached zero, and
//! the wait itself. `Quiet` (`registry/quiet.rs`) owns the waiters; the steps here cross
//! owners (the shards' counts, the shutdown flag, the sleepers, the queues a paused wait
//! looks at; docs/protocol.md, "`wait()` and shutdown").

use super::quiet::{QuietOutcome, QuietWaiter};
use super::{Registry, RUNNING};
use crate::sync::{fence, Ordering};
use crate::unwind::{call_guarded, drop_payload, TaskPanic};
use std::task::{Context, Poll};
use std::time::Instant;

impl Registry {
    pub(crate) fn report_panic(
        &self,
        worker: Option<usize>,
        payload: Box<dyn std::any::Any + Send>,
    ) {
        match &self.cfg.panic_handler {
            Some(handler) => call_guarded("panic handler", worker, || {
                handler(TaskPanic::new(worker, payload))
            }),
            None => drop_payload(payload),
        }
    }

    /// The index of the calling thread if it is one of our workers, for `report_panic`.
    pub(crate) fn worker_here(&self) -> Option<usize> {
        crate::worker::with_current(|w| w.is_some_and(|w| w.is_in(self)))
            .then(crate::worker::current_worker_index)
            .flatten()
    }

    /// After something other than a worker changed the outstanding count: tell waiters, and
    /// during shutdown wake parked workers so they re-check whether they may exit.
    pub(crate) fn after_finish_off_worker(&self) {
        // Pairs with the waiter's SeqCst registration in `Quiet::wait` and with F2 of a
        // parking worker (docs/protocol.md, "Other events that wake workers").
        fence(Ordering::SeqCst);
        if self.quiet.has_waiters() {
            self.notify_waiters();
        }
        if self.shutdown.load(Ordering::Relaxed) != RUNNING {
            self.sleep.wake_all();
        }
    }

    /// Wakes the waiters to re-check (`Quiet::notify`).
    #[cold]
    pub(crate) fn notify_waiters(&self) {
        self.quiet.notify(|| self.shards.outstanding());
    }

    /// Blocks until the pool has been seen with no task outstanding since the call, or
    /// `deadline` passes, or (with `stop_if_paused`) the pool is paused while tasks wait in a
    /// queue (`Quiet::wait`).
    pub(crate) fn wait_quiescent(
        &self,
        deadline: Option<Instant>,
        stop_if_paused: bool,
    ) -> QuietOutcome {
        self.quiet.wait(
            deadline,
            || self.shards.outstanding(),
            || stop_if_paused && self.crew.is_paused() && self.anything_queued(),
        )
    }

    /// `wait_quiescent` as a future's poll (`Pool::wait_async`, `Quiet::poll`).
    pub(crate) fn poll_quiet(&self, waiter: &mut QuietWaiter, cx: &mut Context<'_>) -> Poll<()> {
        self.quiet.poll(waiter, cx, || self.shards.outstanding())
    }

    /// Whether any shared queue or worker deque holds a job, or a worker keeps one from the
    /// pause (`kept`).
    fn anything_queued(&self) -> bool {
        self.queues
            .lanes()
            .iter()
            .any(|l| l.kept() > 0 || !l.shared().is_empty())
            || self.queues.deques_hold_work()
    }
}
