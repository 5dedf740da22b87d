//! Per-call FIFO: [`spawn_fifo`](crate::spawn_fifo), [`Pool::spawn_fifo`],
//! [`Scope::spawn_fifo`](crate::Scope::spawn_fifo) and `scope_fifo`.
//!
//! A worker runs its own deque newest first (unless the pool is built with `fifo()`). A FIFO
//! spawn on a worker puts its job into a [`Fifo`] queue of that worker thread (oldest first)
//! and pushes a *trigger* onto the deque in its place. Whoever runs a trigger (the worker, or
//! a thief) runs the oldest job of that queue, so FIFO spawns of one kind from one worker
//! start in the order they were made, while the deque stays LIFO for everything else
//! (rayon's `JobFifo`).
//!
//! **Which queue a trigger belongs to.** A worker thread keeps one queue per *kind* of FIFO
//! spawn: per lane the trigger is pushed to, and per set of job flags (a scope's task, which
//! must run because its scope waits for it, is `COUNTED`; a `spawn_fifo` task, which
//! `purge` and `shutdown_now` may drop, is `COUNTED | DISCARDABLE`). A trigger carries the
//! flags of the job it was pushed for, and `purge`, `shutdown_now` and the counters decide by
//! them; so it may only ever run or discard a job with the same flags, of the same lane:
//! the oldest of its own queue. The FIFO spawns of one kind keep their order whatever their
//! scope; those of different kinds are not ordered with each other (rayon likewise keeps
//! `spawn_fifo`'s queue apart from each `scope_fifo`'s). There is one trigger per queued
//! job, so no job is left behind; a trigger dropped unrun (by `purge` or `shutdown_now`)
//! drops one job with it, and counts as that job (`Job::deferred`). From outside the pool a
//! task goes to the shared queue, which is FIFO already.

use crate::deque::{Injector, Steal};
use crate::job::{Job, JobSource};
use crate::pool::Pool;
use crate::spawn::{spawn_job, JoinHandle};
use crate::sync::{facade_thread_local, Arc};
use crate::worker::{with_current, WorkerThread};
use std::cell::RefCell;

facade_thread_local! {
    /// This worker thread's FIFO queues, one per kind (see the module docs), each made on
    /// the first FIFO spawn of its kind. A handful at most: few lanes, two sets of flags.
    static FIFOS: RefCell<Vec<(Kind, Arc<Fifo>)>> = RefCell::new(Vec::new());
}

/// What a trigger's queue is for: the lane of the deque the trigger goes to, and the flags
/// of the jobs it holds.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Kind {
    lane: usize,
    flags: u8,
}

/// The FIFO-spawned jobs of one kind of one worker thread, oldest first.
pub(crate) struct Fifo {
    jobs: Injector<Job>,
}

impl Fifo {
    fn pop(&self) -> Option<Job> {
        loop {
            match self.jobs.steal() {
                Steal::Success(job) => return Some(job),
                Steal::Empty => return None,
                Steal::Retry => std::hint::spin_loop(),
            }
        }
    }
}

impl JobSource for Fifo {
    fn take_job(&self) -> Job {
        self.pop().expect("flock: one FIFO job per trigger")
    }
}

/// Queues `job` in FIFO order on `worker`, in the queue of its kind (see the module docs);
/// the trigger carries the job's flags, which every job of that queue has, so it is counted
/// and dropped exactly as the job it runs or discards would be.
pub(crate) fn push_fifo(worker: &WorkerThread, job: Job) {
    let kind = Kind {
        lane: worker.lane(),
        flags: job.flags(),
    };
    let fifo = FIFOS.with(|fifos| {
        let mut fifos = fifos.borrow_mut();
        match fifos.iter().find(|(k, _)| *k == kind) {
            Some((_, fifo)) => fifo.clone(),
            None => {
                let fifo = Arc::new(Fifo {
                    jobs: Injector::new(),
                });
                fifos.push((kind, fifo.clone()));
                fifo
            }
        }
    });
    fifo.jobs.push(job);
    // The trigger, onto our deque of `kind.lane` (the running task's lane): run or
    // discarded, it runs or discards the oldest job of `fifo`, one with its flags.
    worker.submit_local(Job::deferred(fifo, kind.flags), None);
}

impl Pool {
    /// Like [`spawn`](Pool::spawn), but called from one of the pool's tasks the new tasks
    /// start in the order they were spawned (oldest first), where `spawn` from a task starts
    /// the newest first (a worker runs its own deque LIFO). From outside the pool the two
    /// are the same: the shared queue is FIFO. As rayon's `spawn_fifo`.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// let pool = Arc::new(flock::Pool::builder().workers(1).build().unwrap());
    /// let order = Arc::new(Mutex::new(Vec::new()));
    /// let (p, o) = (pool.clone(), order.clone());
    /// pool.spawn(move || {
    ///     for i in 0..4 {
    ///         let o = o.clone();
    ///         p.spawn_fifo(move || o.lock().unwrap().push(i));
    ///     }
    /// }).join().unwrap();
    /// pool.wait().unwrap();
    /// assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
    /// ```
    pub fn spawn_fifo<F, T>(&self, task: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let reg = self.registry();
        match with_current(|w| match w {
            Some(w) if w.is_in(reg) => {
                let (job, handle) = spawn_job(reg, w.lane(), task);
                push_fifo(w, job);
                Ok(handle)
            }
            _ => Err(task),
        }) {
            Ok(handle) => handle,
            Err(task) => self.spawn(task),
        }
    }
}
