//! The steps on worker slots that cross owners: `resize` takes slots from the crew
//! (`registry/crew.rs`), starts their threads and wakes the sleepers so that those beyond
//! the number wanted retire; a worker leaving its slot has its mailbox checked
//! (`Queues`); the lane reserve's thread is started here too.

use super::{LocalQueues, Registry};
use crate::lane_reserve::LaneReserve;
use crate::sync::thread;
use crate::sync::{Arc, Condvar, Mutex};
use crate::unwind::{drop_payload, payload_message};
use crate::ResizeError;
use std::panic::{catch_unwind, AssertUnwindSafe};

impl Registry {
    /// Sets the number of workers: starts threads for idle slots below `n` (waiting for
    /// slots still retiring), and lets workers at `n` and above retire at their next task
    /// boundary. Returns once the new workers are running (and pinned, when asked).
    pub(crate) fn resize(this: &Arc<Registry>, n: usize) -> Result<(), ResizeError> {
        if n == 0 {
            return Err(ResizeError::ZeroWorkers);
        }
        if n > this.cfg.max_workers {
            return Err(ResizeError::TooManyWorkers {
                requested: n,
                max: this.cfg.max_workers,
            });
        }
        if this.retiring_here() {
            return Err(ResizeError::WouldDeadlock);
        }
        let _one_at_a_time = this.crew.one_resize_at_a_time();
        let Some(start) = this.crew.claim_slots(n, || this.is_shutdown()) else {
            return Err(ResizeError::Shutdown);
        };
        // Workers above `n` may be parked: let them see they are to retire.
        this.sleep.wake_all();
        let startup = Arc::new(Startup::new());
        let mut failure = None;
        let mut spawned = 0;
        for &i in &start {
            let core = this.cfg.cores.as_ref().map(|c| c[i]);
            let (reg, report) = (this.clone(), startup.clone());
            let thread = this.thread_name(i).and_then(|name| {
                thread::spawn(name, this.cfg.stack_size, move || {
                    crate::worker::run(reg, i, core, move |pinned| report.report(i, pinned))
                })
                .map_err(ResizeError::ThreadSpawn)
            });
            match thread {
                Ok(handle) => {
                    spawned += 1;
                    this.crew.add_thread(handle);
                }
                Err(e) => {
                    // This slot and the later ones never got a thread.
                    this.crew.unclaim_slots(&start[spawned..]);
                    // Not the last worker out of a closed pool to sweep (see `leave_slot`):
                    // this `resize` borrows the `Pool`, so only a concurrent `shutdown` can
                    // have closed it, and that call sweeps once `live` is 0.
                    this.crew.workers_gone(start.len() - spawned);
                    failure = Some((i, e));
                    break;
                }
            }
        }
        if let Some(worker) = startup.wait_for(spawned) {
            let core = this.cfg.cores.as_ref().map_or(0, |c| c[worker]);
            if failure.as_ref().is_none_or(|(at, _)| worker < *at) {
                failure = Some((worker, ResizeError::PinFailed { worker, core }));
            }
        }
        match failure {
            None => Ok(()),
            Some((at, err)) => {
                // Keep the workers below the failed one; those above it retire.
                this.crew.keep_below(at);
                this.sleep.wake_all();
                Err(err)
            }
        }
    }

    /// Whether the calling thread is one of our workers, retiring: it is in its
    /// `on_worker_stop` hook, the only user code a retiring worker runs. A resize waits for
    /// retiring workers to leave (and for a resize that may be doing so), so from there it
    /// would wait for itself.
    fn retiring_here(&self) -> bool {
        self.worker_here()
            .is_some_and(|i| self.crew.slot_retiring(i))
    }

    /// Worker `index`'s thread name, from the user's callback, guarded: its panic must not
    /// unwind through `resize` with slots marked `Starting` and counted in `live`.
    fn thread_name(&self, index: usize) -> Result<String, ResizeError> {
        catch_unwind(AssertUnwindSafe(|| (self.cfg.thread_name)(index))).map_err(|payload| {
            let message = payload_message(&*payload)
                .unwrap_or("<non-string payload>")
                .to_owned();
            drop_payload(payload);
            ResizeError::ThreadNamePanicked {
                worker: index,
                message,
            }
        })
    }

    /// Starts the lane reserve's thread, if the pool has one (once, at build). Its handle
    /// joins the helpers', which `join_threads` joins after the workers have left.
    pub(crate) fn start_lane_reserve(this: &Arc<Registry>) -> Result<(), ResizeError> {
        if this.lane_reserve.is_none() {
            return Ok(());
        }
        let reg = this.clone();
        let name = "flock-lane-reserve".to_owned();
        let handle = thread::spawn(name, this.cfg.stack_size, move || LaneReserve::run(&reg))
            .map_err(ResizeError::ThreadSpawn)?;
        this.crew.add_helper(handle);
        Ok(())
    }

    /// A worker thread leaves: its deques go back to its slot (`Crew::leave_slot`). Returns
    /// whether it was the last worker to leave (`live` fell to 0 here): in a pool that shut
    /// down, the one to sweep the queues (`purge::sweep`, called by the worker in
    /// `worker::run`).
    pub(crate) fn leave_slot(&self, index: usize, deques: LocalQueues, retired: bool) -> bool {
        self.crew.leave_slot(index, deques, retired, || {
            // Under `slots`, before the slot is free to start again: what a broadcast puts in
            // the mailbox from then on is for the slot's next thread.
            debug_assert!(
                !self.queues.mailboxes().has(index),
                "flock: a worker left a broadcast call behind"
            );
        })
    }
}

/// New workers report in here once pinned (or not), before they run anything.
struct Startup {
    /// (workers reported, first worker whose pinning failed)
    state: Mutex<(usize, Option<usize>)>,
    cond: Condvar,
}

impl Startup {
    fn new() -> Startup {
        Startup {
            state: Mutex::new((0, None)),
            cond: Condvar::new(),
        }
    }

    fn report(&self, index: usize, pinned: bool) {
        let mut state = self.state.lock();
        state.0 += 1;
        if !pinned && state.1.is_none_or(|first| index < first) {
            state.1 = Some(index);
        }
        self.cond.notify_all();
    }

    /// Waits for `n` reports; returns the lowest worker that could not be pinned.
    fn wait_for(&self, n: usize) -> Option<usize> {
        let mut state = self.state.lock();
        while state.0 < n {
            self.cond.wait(&mut state);
        }
        state.1
    }
}
