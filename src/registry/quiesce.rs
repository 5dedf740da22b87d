//! The end of a task as the registry sees it, and waiting for quiet: a panic that escaped
//! a task reported, `wait()`ers told when the outstanding count may have reached zero, and
//! the wait itself (`wait_quiescent`; sleep/README.md, "`wait()` and shutdown").

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
        // Pairs with the waiter's SeqCst registration in `wait_quiescent` and with F2 of a
        // parking worker (sleep/README.md, "Other events that wake workers").
        fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::Relaxed) > 0 {
            self.notify_waiters();
        }
        if self.shutdown.load(Ordering::Relaxed) != RUNNING {
            self.sleep.wake_all();
        }
    }

    pub(crate) fn has_waiters(&self) -> bool {
        self.waiters.load(Ordering::Relaxed) > 0
    }

    /// Threads blocked in `wait_quiescent` and pending `poll_quiet` futures now (`Stats::waiters`).
    pub(crate) fn waiters(&self) -> usize {
        self.waiters.load(Ordering::Relaxed)
    }

    /// Wakes the waiters to re-check, first starting a new quiet generation if the pool is
    /// quiet now: then every one of them returns, also if one that returns first submits
    /// more work before the others run again.
    #[cold]
    pub(crate) fn notify_waiters(&self) {
        {
            let mut generation = self.wait_lock.lock();
            if self.counters.outstanding() == 0 {
                *generation += 1;
            }
            self.wait_cond.notify_all();
        }
        // After the generation moved, outside the lock: a future that registered its waker
        // before our lock is woken here; one that checks under the lock after us sees the
        // new generation (`poll_quiet`).
        self.quiet_wakers.wake_all();
    }

    /// Blocks until the pool has been seen with no task outstanding since the call (by this
    /// thread, another waiter or a worker: see `notify_waiters`), or `deadline` passes, or
    /// (with `stop_if_paused`) the pool is paused while tasks wait in a queue.
    pub(crate) fn wait_quiescent(&self, deadline: Option<Instant>, stop_if_paused: bool) -> Quiet {
        if self.counters.outstanding() == 0 {
            // Quiet now: if others wait, they may return for it too.
            if self.has_waiters() {
                self.notify_waiters();
            }
            return Quiet::Done;
        }
        let mut guard = self.wait_lock.lock();
        // SeqCst: pairs with the fence in `Worker::go_idle` / `after_finish_off_worker`.
        self.waiters.fetch_add(1, Ordering::SeqCst);
        // Read under `wait_lock`, as it is only changed under it: a later generation means a
        // thread saw the pool quiet after we registered.
        let registered = *guard;
        let mut timed_out = false;
        let done = loop {
            if *guard != registered {
                break Quiet::Done;
            }
            if self.counters.outstanding() == 0 {
                // Quiet: a new generation for the other waiters (see `notify_waiters`).
                *guard += 1;
                self.wait_cond.notify_all();
                self.quiet_wakers.wake_all();
                break Quiet::Done;
            }
            // Paused with tasks waiting in a queue: they would not start before a resume.
            // (Only running tasks left: they finish, and the worker that finishes the last
            // one notifies us from `go_idle`, as does any worker that parks because of the
            // pause, including one woken by a submit.) Read under `wait_lock`: `pause` sets
            // the bit before it takes the lock to notify.
            if stop_if_paused && self.crew.is_paused() && self.anything_queued() {
                break Quiet::Paused;
            }
            if timed_out {
                break Quiet::TimedOut;
            }
            timed_out = !self.wait_cond.wait_until(&mut guard, deadline);
        };
        self.waiters.fetch_sub(1, Ordering::Relaxed);
        done
    }

    /// `wait_quiescent` as a future's poll (`Pool::wait_async`): ready once the pool has
    /// been seen with nothing outstanding since the first poll; else `cx`'s waker is stored
    /// and woken by `notify_waiters`. The first poll that does not return at once counts the
    /// future among `waiters`, so finishing workers notify; `leave_quiet` (called by the
    /// future when ready and on drop) takes it out again.
    pub(crate) fn poll_quiet(&self, waiter: &mut QuietWaiter, cx: &mut Context<'_>) -> Poll<()> {
        if waiter.generation.is_none() && self.counters.outstanding() == 0 {
            if self.has_waiters() {
                self.notify_waiters();
            }
            return Poll::Ready(());
        }
        // The waker first, then the check under `wait_lock`: a notifier that moves the
        // generation after our check wakes the waker stored before it.
        self.quiet_wakers.register(&mut waiter.id, cx.waker());
        let mut guard = self.wait_lock.lock();
        let registered = match waiter.generation {
            Some(generation) => generation,
            None => {
                // SeqCst, before the check below: as the blocked waiters' registration, it
                // pairs with the fence in `Worker::go_idle` / `after_finish_off_worker`.
                self.waiters.fetch_add(1, Ordering::SeqCst);
                *waiter.generation.insert(*guard)
            }
        };
        if *guard != registered {
            drop(guard);
            self.leave_quiet(waiter);
            return Poll::Ready(());
        }
        if self.counters.outstanding() == 0 {
            *guard += 1;
            self.wait_cond.notify_all();
            drop(guard);
            self.leave_quiet(waiter);
            self.quiet_wakers.wake_all();
            return Poll::Ready(());
        }
        Poll::Pending
    }

    /// Takes a `poll_quiet` future out of the waiters (ready, or dropped before).
    pub(crate) fn leave_quiet(&self, waiter: &mut QuietWaiter) {
        if let Some(id) = waiter.id.take() {
            self.quiet_wakers.unregister(id);
        }
        if waiter.generation.take().is_some() {
            // Relaxed, as a blocked waiter's leaving: a notifier that still counts us only
            // wakes a waiter list that no longer holds us.
            self.waiters.fetch_sub(1, Ordering::Relaxed);
        }
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

/// A `Pool::wait_async` future's registration: its waker's id in `quiet_wakers`, and the
/// quiet generation it waits past (set while it counts among `waiters`).
#[derive(Debug, Default)]
pub(crate) struct QuietWaiter {
    id: Option<u64>,
    generation: Option<u64>,
}

/// How `wait_quiescent` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Quiet {
    Done,
    TimedOut,
    Paused,
}
