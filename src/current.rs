//! Free functions that use the *current* pool, as rayon's do: called on a worker, the pool of
//! that worker; anywhere else, the [`global`] pool. So a recursive `flock::join` needs no
//! `&Pool` passed down, and code moved from rayon keeps its shape:
//!
//! ```
//! fn fib(n: u64) -> u64 {
//!     if n < 2 { return n; }
//!     let (a, b) = flock::join(|| fib(n - 1), || fib(n - 2));
//!     a + b
//! }
//! let pool = flock::Pool::builder().workers(2).build().unwrap();
//! assert_eq!(pool.install(|| fib(20)), 6765); // on `pool`'s workers, all the way down
//! assert_eq!(fib(10), 55);                      // from here: the global pool
//! ```

use crate::global::global;
use crate::join::join_on_worker;
use crate::registry::Registry;
use crate::scope::Scope;
use crate::spawn::{spawn_job, JoinHandle};
use crate::sync::Arc;
use crate::worker::with_current;
use crate::SubmitError;

/// The pool of the worker running this thread, if it is one.
pub(crate) fn current_registry() -> Option<Arc<Registry>> {
    with_current(|w| w.map(|w| w.registry_arc().clone()))
}

/// Runs `a` and `b`, potentially in parallel, in the current pool (the calling worker's pool;
/// anywhere else the [`global`] one), and returns both results:
/// [`Pool::join`](crate::Pool::join) without naming a pool. A panic in either is re-raised
/// after both finished. Off the workers it blocks the calling thread until both finished.
///
/// ```
/// let v: Vec<u32> = (1..=100).collect();
/// let (lo, hi) = v.split_at(50);
/// let (a, b) = flock::join(|| lo.iter().sum::<u32>(), || hi.iter().sum::<u32>());
/// assert_eq!(a + b, 5050);
/// ```
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    with_current(|w| match w {
        Some(w) => join_on_worker(w, a, b),
        None => global().join(a, b),
    })
}

/// Runs `op` with a [`Scope`] of the current pool, inside that pool: returns once `op` and
/// every task spawned in the scope have finished, re-raising the first panic.
/// [`Pool::scope`](crate::Pool::scope) without naming a pool. As rayon's `scope`: called on a
/// worker, `op` runs right there, in the worker's pool (and the worker runs other tasks while
/// it waits for the scope's); called anywhere else, it is
/// [`global()`](global)`.scope(op)`: `op` runs on a worker of the global pool while the
/// calling thread blocks. [`in_place_scope`](crate::in_place_scope) runs `op` on the calling
/// thread in both cases.
///
/// ```
/// let mut parts = [0u64; 4];
/// let body_on_a_worker = flock::scope(|s| {
///     for (i, p) in parts.iter_mut().enumerate() {
///         s.spawn(move |_| *p = i as u64 * 10);
///     }
///     flock::current_worker_index().is_some() // called from here: the global pool's
/// });
/// assert!(body_on_a_worker);
/// assert_eq!(parts, [0, 10, 20, 30]);
/// ```
pub fn scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    match current_registry() {
        Some(registry) => Scope::new(registry).run(op),
        None => global().scope(op),
    }
}

/// Like [`scope`], but the scope's `spawn` is [`Scope::spawn_fifo`]: tasks spawned from one
/// worker start oldest first. `op` runs where [`scope`]'s does. As rayon's `scope_fifo`.
///
/// ```
/// use std::sync::Mutex;
/// let pool = flock::Pool::builder().workers(1).build().unwrap();
/// let order = Mutex::new(Vec::new());
/// pool.install(|| {
///     flock::scope_fifo(|s| {
///         for i in 0..3 {
///             let order = &order;
///             s.spawn(move |_| order.lock().unwrap().push(i));
///         }
///     })
/// });
/// assert_eq!(order.into_inner().unwrap(), [0, 1, 2]);
/// ```
pub fn scope_fifo<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    match current_registry() {
        Some(registry) => Scope::new_fifo(registry).run(op),
        None => global().scope_fifo(op),
    }
}

/// Runs `task` in the current pool (the calling worker's pool; anywhere else the [`global`]
/// one) and returns a handle to its result.
/// On a worker the task goes to the worker's own deque (never refused, never blocking), as
/// [`Pool::spawn`](crate::Pool::spawn) does from a task; elsewhere `global().spawn(task)`, which
/// blocks the calling thread while the global pool's queue is full (from async code use
/// [`Pool::run_async`](crate::Pool::run_async) on [`global`]).
///
/// # Panics
/// Off the workers, if the global pool cannot be built (see [`global`]).
///
/// ```
/// let parts: Vec<_> = (0..4u64).map(|i| flock::spawn(move || i * 50)).collect();
/// let total: u64 = parts.into_iter().map(|h| h.join().unwrap()).sum();
/// assert_eq!(total, 300);
/// ```
#[track_caller]
pub fn spawn<F, T>(task: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match with_current(|w| match w {
        Some(w) => {
            let (job, handle) = spawn_job(w.registry_arc(), w.lane(), task);
            w.submit_local(job, None);
            Ok(handle)
        }
        None => Err(task),
    }) {
        Ok(handle) => handle,
        Err(task) => global().spawn(task),
    }
}

/// Like [`spawn`], but tasks spawned from one worker start oldest first (see
/// [`Pool::spawn_fifo`](crate::Pool::spawn_fifo)). As rayon's `spawn_fifo`.
///
/// ```
/// let handle = flock::spawn_fifo(|| 7);
/// assert_eq!(handle.join().unwrap(), 7);
/// ```
#[track_caller]
pub fn spawn_fifo<F, T>(task: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match with_current(|w| match w {
        Some(w) => {
            let (job, handle) = spawn_job(w.registry_arc(), w.lane(), task);
            crate::fifo::push_fifo(w, job);
            Ok(handle)
        }
        None => Err(task),
    }) {
        Ok(handle) => handle,
        Err(task) => global().spawn_fifo(task),
    }
}

/// Runs `task` in the current pool (the calling worker's pool; anywhere else the [`global`]
/// one), fire and forget. On a worker it
/// goes to the worker's own deque; elsewhere admission is as for
/// [`Pool::submit`](crate::Pool::submit) on the global pool (it blocks the calling thread
/// while the queue is full), and a refused task comes back in the error.
///
/// # Panics
/// Off the workers, if the global pool cannot be built (see [`global`]).
///
/// ```
/// let (tx, rx) = std::sync::mpsc::channel();
/// flock::submit(move || tx.send("done").unwrap())?;
/// assert_eq!(rx.recv().unwrap(), "done");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[track_caller]
pub fn submit<F>(task: F) -> Result<(), SubmitError<F>>
where
    F: FnOnce() + Send + 'static,
{
    match with_current(|w| match w {
        Some(w) => {
            w.submit_local(crate::pool::fire_and_forget(task), None);
            Ok(())
        }
        None => Err(task),
    }) {
        Ok(()) => Ok(()),
        Err(task) => global().submit(task),
    }
}

/// What [`yield_now`] did.
///
/// ```
/// let pool = flock::Pool::builder().workers(1).build().unwrap();
/// let did = pool.spawn(|| {
///     flock::spawn(|| ()); // queued on this worker, behind us
///     flock::yield_now()    // runs it here
/// });
/// assert_eq!(did.join().unwrap(), Some(flock::Yield::Executed));
/// assert_eq!(flock::yield_now(), None); // not on a worker
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Yield {
    /// It ran a pending task.
    Executed,
    /// There was no pending task to run, or none this worker could take: a task submitted
    /// from outside that another worker took first is not waited for.
    Idle,
}

/// Called from a task: runs one pending task of the current worker's pool, if there is one,
/// here and now, and says whether it did; `None` when the calling thread is not a worker of
/// any pool. As rayon's `yield_now`. The task is found as a worker waiting in `join` finds
/// one (its own deque first, then the shared queues, then other workers'); while the pool is
/// paused only tasks spawned by running tasks qualify. Unlike
/// [`yield_to_lanes`](crate::yield_to_lanes) it runs a task of any lane, also in a pool with
/// one lane.
///
/// ```
/// use flock::Yield;
/// let pool = flock::Pool::builder().workers(1).build().unwrap();
/// let outcome = pool.install(|| {
///     let child = flock::spawn(|| 5); // onto this worker's deque
///     let first = flock::yield_now(); // runs it here
///     (first, child.join().unwrap(), flock::yield_now())
/// });
/// assert_eq!(outcome, (Some(Yield::Executed), 5, Some(Yield::Idle)));
/// assert_eq!(flock::yield_now(), None); // not on a worker
/// ```
pub fn yield_now() -> Option<Yield> {
    with_current(|w| {
        w.map(|w| {
            if w.run_one_task() {
                Yield::Executed
            } else {
                Yield::Idle
            }
        })
    })
}

/// The number of workers of the current pool: of the calling worker's pool, else of the
/// [`global`] pool (built on first use). As rayon's `current_num_threads`.
///
/// ```
/// let pool = flock::Pool::builder().workers(3).build().unwrap();
/// assert_eq!(pool.install(flock::current_num_workers), 3);
/// assert_eq!(flock::current_num_workers(), flock::global().workers());
/// ```
#[doc(alias = "current_num_threads")]
pub fn current_num_workers() -> usize {
    with_current(|w| w.map(|w| w.registry_arc().crew.workers()))
        .unwrap_or_else(|| global().workers())
}
