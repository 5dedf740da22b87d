//! flock: a multi-threaded work-stealing task pool, with backpressure, priority lanes, live
//! resizing, panics caught per task, cheap always-on statistics and a C ABI.
//!
//! The package is `flock-pool`; the library is `flock`. Until the package is on crates.io,
//! depend on the repository (or a clone of it, with `path = ".."`); once published, on the
//! registry:
//!
//! ```toml
//! [dependencies]
//! flock-pool = { git = "https://github.com/flock-pool/flock" } # today
//! # flock-pool = "0.1"                                         # once on crates.io
//! ```
//!
//! ```
//! use flock::{Backpressure, Pool};
//!
//! let pool = Pool::builder()
//!     .workers(4)                     // default: the CPUs this process may use
//!     .capacity(10_000)               // bound on queued tasks (default 65,536)
//!     .when_full(Backpressure::Block) // or Reject, CallerRuns, SpawnThread
//!     .build()?;
//! pool.submit(|| println!("fire and forget"))?; // a refused task comes back in the error
//! let answer = pool.spawn(|| 6 * 7);            // a result through a JoinHandle
//! let (a, b) = pool.join(|| 1 + 1, || 2 + 2);   // fork-join
//! assert_eq!((answer.join()?, a, b), (42, 2, 4));
//! pool.wait()?;                                 // everything accepted so far has finished
//! pool.shutdown()?;                             // run what is queued, join every thread
//! # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
//! ```
//!
//! # When to use flock, and when not
//!
//! * **Against [rayon](https://docs.rs/rayon)**: rayon is the tool for data parallelism
//!   through iterator adaptors (`par_iter().filter().map()...`), and is faster than flock at
//!   `join` itself; flock has the common slice helpers as plain functions ([Data
//!   parallelism](#data-parallelism)). flock is a *service* pool: tasks arrive from many threads over the life
//!   of a program, and it gives you what a long-running service needs around them: a bound on
//!   queued work with a policy for when it is reached ([`Backpressure`]), tasks handed back
//!   when refused ([`SubmitError::into_inner`]), graceful and immediate shutdown, weighted
//!   [priority lanes](#lanes), [`Pool::resize`], [`Pool::pause`], and statistics you can
//!   export ([`Stats`]). It has [`Pool::join`], [`Pool::scope`] and [`Pool::for_each`] too,
//!   for the parallel parts of such tasks.
//! * **Against [threadpool](https://docs.rs/threadpool)** and pools built on one channel:
//!   those share one queue between all workers; flock gives each worker a Chase-Lev deque
//!   (tasks spawned by a task stay on its worker, with no lock), lets idle workers steal, and
//!   parks them on a futex with no timer, so an idle pool costs no CPU. Its
//!   [benchmarks](https://github.com/flock-pool/flock/blob/main/docs/bench.md) compare all
//!   of these on the same workloads.
//! * **Against tokio's `spawn_blocking`**: that pool exists to keep blocking calls off an
//!   async runtime's workers, and grows to hundreds of threads; it is the right place for
//!   blocking I/O. flock keeps the number of workers you chose for CPU-bound work (until you
//!   [`resize`](Pool::resize) it), so a burst queues, up to its capacity, instead of
//!   starting threads. From async code, `.await` a flock task's [`JoinHandle`] (see
//!   [Async](#async) below).
//!
//! # Async
//!
//! From async code (any executor; flock depends on no runtime): `.await` a [`JoinHandle`]
//! instead of calling `join`; [`Pool::run_async`] is one `.await` for room in the queue and
//! then the result; [`Pool::submit_async`] / [`Pool::spawn_async`] wait for room in a full
//! queue instead of blocking the executor's thread; [`Pool::wait_async`] and
//! [`TaskGroup::wait_async`] are the awaitable waits. [`JoinHandle::cancel_on_drop`] makes a
//! timeout remove work still queued.
//!
//! The blocking calls (`submit` and `spawn` on a full queue under [`Backpressure::Block`],
//! `JoinHandle::join`, `wait`, `join`, `scope`, `install`, the data-parallel helpers) block the
//! calling thread, and say so in their docs. flock cannot warn when one is made inside an
//! async task: that is the executor's knowledge (tokio's `block_on` panic reads tokio's own
//! thread-local), and flock depends on no runtime.
//!
//! # Coming from rayon
//!
//! Replace `rayon::` with `flock::`; these keep their names and meaning. The free functions
//! use the current pool: the calling worker's, else the [`global()`] one ([where each
//! closure runs](#where-closures-run)).
//!
//! | rayon | flock |
//! |---|---|
//! | `ThreadPoolBuilder::new().num_threads(n)` (0: the default) | [`Pool::builder()`]`.`[`workers(n)`](PoolBuilder::workers) (0: the default) |
//! | `start_handler`, `exit_handler`, `panic_handler`, `thread_name`, `stack_size` | [`on_worker_start`](PoolBuilder::on_worker_start), [`on_worker_stop`](PoolBuilder::on_worker_stop), [`panic_handler`](PoolBuilder::panic_handler), [`thread_name`](PoolBuilder::thread_name), [`stack_size`](PoolBuilder::stack_size) |
//! | `build()`, `build_global()` | [`build`](PoolBuilder::build), [`build_global`](PoolBuilder::build_global) |
//! | `ThreadPool::install`, `join`, `scope`, `scope_fifo`, `spawn`, `spawn_fifo`, `in_place_scope(_fifo)` | [`Pool::install`], [`Pool::join`], [`Pool::scope`], [`Pool::scope_fifo`], [`Pool::spawn`], [`Pool::spawn_fifo`], [`Pool::in_place_scope`] / [`Pool::in_place_scope_fifo`] |
//! | `ThreadPool::broadcast(\|ctx\| ..)`, `current_num_threads()` | [`Pool::broadcast`]`(\|index\| ..)`, [`Pool::workers`] |
//! | `join`, `join_context`, `scope`, `scope_fifo`, `in_place_scope(_fifo)`, `spawn`, `spawn_fifo`, `broadcast`, `yield_now` | [`join()`], [`join_context`], [`scope()`], [`scope_fifo`], [`in_place_scope`], [`in_place_scope_fifo`], [`spawn()`], [`spawn_fifo`], [`broadcast()`], [`yield_now`] |
//! | `current_thread_index`, `current_num_threads`, `max_num_threads`, `current_thread_has_pending_tasks` | the same names ([`current_thread_index`], [`current_num_threads`], [`max_num_threads`], [`current_thread_has_pending_tasks`]); also [`current_worker_index`], [`current_num_workers`] |
//! | `v.par_iter().for_each(f)`, `v.par_iter_mut().for_each(f)` | [`par_for_each`]`(&v, f)`, [`par_for_each_mut`]`(&mut v, f)` |
//! | `v.par_chunks_mut(n).enumerate().for_each(\|(i, c)\| ..)` | [`par_chunks_mut`]`(&mut v, n, \|i, c\| ..)` |
//! | `v.par_iter().map(m).reduce(id, r)` | [`map_reduce`]`(&v, id, m, r)` |
//! | `v.par_sort()`, `par_sort_by`, `par_sort_unstable`, `par_sort_unstable_by` | [`par_sort`]`(&mut v)`, [`par_sort_by`], [`par_sort_unstable`], [`par_sort_unstable_by`] |
//! | `(0..n).into_par_iter().for_each(f)` | [`Pool::for_each`]`(0..n, None, f)` |
//! | `breadth_first()` (deprecated) | [`PoolBuilder::fifo`]: each worker runs every task it spawned oldest first, a scope's spawns included |
//!
//! Deliberate differences:
//!
//! * **`spawn` returns a [`JoinHandle`]** (rayon's returns `()`), and from outside the pool it
//!   is subject to the pool's capacity: it blocks on a full queue under
//!   [`Backpressure::Block`] (rayon's queue is unbounded).
//! * **A panicking task does not abort the process**: it is caught, counted, handed to the
//!   [`panic_handler`](PoolBuilder::panic_handler) and to the task's handle (rayon aborts on a
//!   panic in `spawn` without a handler).
//! * **A [`thread_name`](PoolBuilder::thread_name) callback that panics** makes
//!   [`build`](PoolBuilder::build) return [`BuildError::ThreadNamePanicked`] (and
//!   [`Pool::resize`] its error) instead of letting the panic propagate, as rayon's builder
//!   does: a pool that grows at run time cannot unwind through its caller half-resized, and
//!   `build` reports it the same way.
//! * **Dropping a [`Pool`] shuts it down and joins its threads**, after the queued tasks ran
//!   (rayon's drop returns at once and lets the threads finish later).
//! * **No parallel iterator adaptors** (`filter().map().collect()` chains): the slice helpers
//!   above are plain functions; [`map_reduce`]'s pieces depend on the length and the worker
//!   count only, so its result repeats exactly (rayon splits adaptively). The closure of
//!   [`par_chunks_mut`] gets the chunk's index.
//! * [`Pool::broadcast`]'s closure gets the worker index; the free [`broadcast()`]'s gets a
//!   [`BroadcastContext`], as rayon's.
//! * **The global pool** is configured by [`PoolBuilder::build_global`] or `FLOCK_WORKERS`
//!   (not `RAYON_NUM_THREADS`), and cannot be shut down.
//!
//! # Coming from tokio
//!
//! flock is a pool for CPU-bound closures, the role of tokio's blocking pool; its handles are
//! futures, so async code awaits them on any executor.
//!
//! | tokio | flock |
//! |---|---|
//! | `spawn_blocking(f).await` | [`Pool::run_async`]`(f).await` (or `flock::global().run_async(f)`) |
//! | `JoinHandle` (a future), `abort`, `is_finished` | [`JoinHandle`] (a future; [`join`](JoinHandle::join) to block), [`cancel`](JoinHandle::cancel), [`is_finished`](JoinHandle::is_finished) |
//! | `JoinError::is_cancelled`, `is_panic`, `into_panic`, `try_into_panic` | [`JoinError::is_cancelled`], [`is_panic`](JoinError::is_panic), [`into_panic`](JoinError::into_panic) (an `Option`), [`try_into_panic`](JoinError::try_into_panic) |
//! | `AbortOnDropHandle` | [`JoinHandle::cancel_on_drop`] ([`CancelOnDrop`]) |
//! | `JoinSet` (wait for all) | [`TaskGroup`] with [`wait_async`](TaskGroup::wait_async) |
//! | `JoinSet` dropped (aborts its tasks) | [`TaskGroup::cancel`], then drop (which waits for the running ones) |
//! | `runtime::Builder::worker_threads(n)` | [`PoolBuilder::workers`] |
//! | `Runtime::shutdown_timeout` | [`Pool::shutdown_timeout`] |
//!
//! Deliberate differences:
//!
//! * **A task is a closure, not a future**: it runs to its end on a worker thread and may
//!   block there; there are no `.await` points inside it.
//! * **Cancelling** ([`JoinHandle::cancel`]) removes a task that has not started; a running
//!   task runs to its end (tokio's `abort` does not stop a `spawn_blocking` task either).
//! * **The worker count is fixed** (until [`Pool::resize`]), and the queue is bounded with a
//!   [`Backpressure`] policy: a burst queues rather than starting up to 512 threads.
//! * **The blocking calls block** (see [Async](#async)); flock cannot detect that it is called
//!   from an async task, so it neither warns nor panics as tokio's `block_on` does there.
//! * [`TaskGroup`] waits for its tasks and counts their panics; it does not collect results
//!   one by one as `JoinSet::join_next` does (await each [`JoinHandle`] for that).
//! * **Dropping a [`TaskGroup`] waits for its tasks** (as C's and C++'s task groups do;
//!   see [its docs](TaskGroup#dropping-waits)), where dropping a `JoinSet` aborts them. To
//!   do as `JoinSet` does, [`cancel`](TaskGroup::cancel) first: the queued tasks are
//!   dropped, and the drop waits for the running ones only. In async code, await
//!   [`wait_async`](TaskGroup::wait_async) before the drop, which then does not block.
//! * [`Pool::wait_async`] waits for a paused pool to be resumed and drained (the blocking
//!   [`Pool::wait`] answers [`WaitError::Paused`] instead).
//!
//! # Data parallelism
//!
//! Over slices, on a [`Pool`] or on the current pool (the free forms): [`par_for_each`],
//! [`par_for_each_mut`], [`par_chunks_mut`], [`map_reduce`] (repeatable: the pieces and the
//! order they are combined in depend on the length and the worker count only), and the sorts
//! [`par_sort`] / [`par_sort_by`] (stable, a merge sort) and [`par_sort_unstable`] /
//! [`par_sort_unstable_by`] (a quicksort splitting at the median). Each blocks its caller
//! until done, re-raises a panic of its closure, and cuts the slice as [`Pool::for_each`]
//! cuts a range: about four pieces per worker.
//!
//! ```
//! let pool = flock::Pool::builder().workers(2).build()?;
//! let mut v: Vec<u64> = (0..100_000).rev().collect();
//! pool.par_sort_unstable(&mut v);
//! let sum = pool.map_reduce(&v, || 0, |x| x * 2, |a, b| a + b);
//! assert_eq!(sum, 99_999 * 100_000);
//! # Ok::<(), flock::BuildError>(())
//! ```
//!
//! # Tasks, results and borrowing
//!
//! [`Pool::submit`] runs a closure and forgets it; [`Pool::spawn`] returns a [`JoinHandle`]
//! whose [`join`](JoinHandle::join) gives the value (or a [`JoinError`] saying why there is
//! none: a panic, a cancel, a refusal). [`Pool::scope`] runs tasks that borrow from the
//! caller's stack ([`Scope::spawn`]); [`Pool::join`] runs two closures in parallel; and
//! [`Pool::for_each`] is a parallel `for` over a range. [`Pool::submit_batch`] queues many
//! tasks for the cost of a few. A panicking task is caught and counted, and passed to the
//! [`panic_handler`](PoolBuilder::panic_handler) if there is one; it never takes a worker
//! down.
//!
//! # Where closures run
//!
//! The *current pool* of a thread is the pool of the worker it is, and for any other thread
//! the [`global()`] one. The free functions ([`join()`], [`scope()`], [`spawn()`],
//! [`broadcast()`], [`par_for_each`], ...) use the current pool of the thread that calls
//! them; so each entry point decides, by where it runs a closure, which pool the free
//! functions called inside that closure reach. As in rayon:
//!
//! | entry point | where the closure runs | the free functions inside it reach |
//! |---|---|---|
//! | [`Pool::install`]`(op)` | `op` on one of the pool's workers: right there when called on one of them; otherwise the caller blocks meanwhile | this pool |
//! | [`Pool::scope`]`(op)`, [`Pool::scope_fifo`] | `op` as `install`'s; the scope's tasks on the pool's workers | this pool, in `op` and in the tasks |
//! | [`Pool::in_place_scope`]`(op)`, [`Pool::in_place_scope_fifo`] | `op` on the calling thread; the tasks on the pool's workers | in `op`: the caller's current pool; in the tasks: this pool |
//! | [`Pool::join`]`(a, b)` | called on one of the pool's workers: `a` right there, `b` there or on a thief; otherwise both on the pool's workers while the caller blocks | this pool |
//! | [`Pool::submit`], [`Pool::spawn`], [`Pool::spawn_fifo`], [`Pool::broadcast`], [`Pool::for_each`], [`Pool::par_for_each`] and the other slice helpers | on the pool's workers (`broadcast`: once on each) | this pool |
//! | [`join()`], [`join_context`] | as the current pool's [`Pool::join`] | the current pool |
//! | [`scope()`], [`scope_fifo`] | called on a worker: `op` right there; otherwise as [`global()`]`.scope(op)`, on a worker of the global pool; the tasks in the current pool | the current pool (the global one from outside), in `op` and in the tasks |
//! | [`in_place_scope`], [`in_place_scope_fifo`] | `op` on the calling thread; the tasks in the current pool | the current pool |
//! | [`spawn()`], [`spawn_fifo`], [`submit`], [`broadcast()`], [`par_for_each`] and the other slice helpers | on the current pool's workers (`broadcast`: once on each) | the current pool |
//!
//! A task that runs off the workers is on no worker, so the free functions there reach the
//! global pool (or, on a worker of another pool, that pool): a task run by its submitter
//! under [`Backpressure::CallerRuns`] or on a helper thread under
//! [`Backpressure::SpawnThread`], one run by the [lane reserve](PoolBuilder::lane_reserve),
//! and, once the pool is shut down, what `install`, `scope` and `join` run on the caller.
//!
//! ```
//! let pool = flock::Pool::builder().workers(2).thread_name(|i| format!("p-{i}")).build()?;
//! let name = || std::thread::current().name().unwrap_or("").to_owned();
//! let (body, half) = pool.scope(|_| (name(), flock::join(name, name).1));
//! assert!(body.starts_with("p-") && half.starts_with("p-")); // in `pool`
//! let body = pool.in_place_scope(|_| name());
//! assert!(!body.starts_with("p-")); // on this thread
//! # Ok::<(), flock::BuildError>(())
//! ```
//!
//! # The global pool
//!
//! Small programs need no `Pool` of their own: [`flock::submit`](submit),
//! [`flock::spawn`](fn@spawn) and [`global()`] use one process-wide pool, built on first use with
//! the defaults (`FLOCK_WORKERS` sets its size, `FLOCK_MEMBARRIER` its
//! [`PoolBuilder::membarrier`]), or before that by [`PoolBuilder::build_global`] with a
//! configuration of yours; it is never dropped, and cannot be shut down (its shutdown calls
//! answer [`WaitError::GlobalPool`]).
//!
//! ```
//! flock::submit(|| println!("on the process-wide pool"))?;
//! assert_eq!(flock::spawn(|| 2 + 2).join()?, 4);
//! # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
//! ```
//!
//! # Lanes
//!
//! A pool may have several named lanes with weights: when more than one has work, each
//! worker shares its time between them by weight (fair queueing on run time), first in,
//! first out within a lane, and an idle lane costs nothing. A long task can call
//! [`yield_to_lanes`] between slices of its work to let heavier lanes' due tasks run there.
//!
//! ```
//! let pool = flock::Pool::builder()
//!     .lanes(&[("interactive", 8), ("batch", 1)]) // 8:1 when both are busy
//!     .build()?;
//! pool.submit_to("batch", || { /* a nightly report */ })?;
//! pool.submit_to("interactive", || { /* a user's click: served at the next task boundary */ })?;
//! pool.wait()?;
//! assert_eq!(pool.stats().lanes[1].executed, 1);
//! # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
//! ```
//!
//! # Errors
//!
//! Every error is `Send + Sync + 'static` and implements [`std::error::Error`], so `?` turns
//! it into `Box<dyn Error + Send + Sync>` or an `anyhow::Error`, whatever the refused task
//! captures; a refused task comes back inside its error. The error enums are
//! `#[non_exhaustive]`.
//!
//! ```
//! use std::error::Error;
//! fn run(pool: &flock::Pool) -> Result<u32, Box<dyn Error + Send + Sync>> {
//!     let (tx, rx) = std::sync::mpsc::channel();
//!     pool.submit(move || tx.send(20).unwrap())?;    // SubmitError
//!     let doubled = pool.spawn(move || rx.recv().unwrap() * 2); // rx is not Sync: fine
//!     Ok(doubled.join()? + 2)                         // JoinError
//! }
//! assert_eq!(run(&flock::Pool::new()).unwrap(), 42);
//! ```
//!
//! # Statistics and Prometheus
//!
//! [`Pool::stats`] takes a [`Stats`] snapshot at any time: tasks submitted, completed,
//! panicked, refused by reason, queue depths, per-worker and per-lane counts, and latency
//! histograms when the pool is built with [`track_latency`](PoolBuilder::track_latency). It
//! prints as a table, and [`Stats::to_prometheus`] / [`prometheus_text`] write the
//! Prometheus text format, the pool's name in a `pool` label, so several pools share one
//! `/metrics` endpoint:
//!
//! ```
//! let (db, io) = (flock::Pool::new(), flock::Pool::new());
//! let text = flock::prometheus_text([("db", &db.stats()), ("io", &io.stats())]);
//! assert!(text.contains("flock_workers{pool=\"io\"}"));
//! ```
//!
//! # Cargo features
//!
//! * `stats` (default): the statistics counters of [`Stats`] (refusals by reason, caller
//!   runs, helper threads, lane reserve runs, steals, injector takes, local pushes, parks,
//!   wake-ups, per-lane counts). Without it they compile to nothing, read 0 and are left out
//!   of the Prometheus text ([`prometheus_text`]); the counts `wait()` and shutdown rely on
//!   (submitted, completed, panicked, dropped, in flight), queue depths, worker states and
//!   the latency histograms stay.
//! * `pin` (default): pinning workers to cores ([`PoolBuilder::pin_workers`],
//!   [`PoolBuilder::pin_to`]) through the `core_affinity` crate. Without it that dependency
//!   is not built, and a builder that asks for pinning fails with
//!   [`BuildError::PinningUnavailable`].
//!
//! # How it works
//!
//! Each worker owns a Chase-Lev deque (`crossbeam-deque`); tasks submitted from outside the
//! pool go to a FIFO ring of the submitting thread's own (a shared injector once sixteen
//! threads hold one), tasks submitted by tasks go to their worker's own deque, and idle
//! workers steal. Idle workers spin briefly, then park on a futex with no timer. The
//! protocol that makes that safe (no lost wake-up, no thundering herd) is written down in
//! [`docs/protocol.md`](https://github.com/flock-pool/flock/blob/main/docs/protocol.md),
//! and checked with loom, Miri and ThreadSanitizer. A submit racing `shutdown` is either run
//! or handed back, never lost.
//!
//! # From C and C++
//!
//! The repository's [`ffi/`](https://github.com/flock-pool/flock/tree/main/ffi) crate builds
//! `libflock.so` and `libflock.a` with the header `include/flock.h` and a header-only C++
//! wrapper; it is not part of this package.
#![deny(missing_docs, unsafe_op_in_unsafe_fn, unreachable_pub)]
#![warn(rust_2018_idioms)]

mod admit;
mod awaits;
mod broadcast;
mod builder;
mod clock;
mod config;
mod context;
mod current;
mod deque;
mod error;
mod fifo;
mod global;
mod group;
mod install;
mod job;
mod join;
mod lane;
mod lane_reserve;
mod latch;
mod mailbox;
mod metrics;
mod par;
mod pin;
mod pool;
mod purge;
mod registry;
mod scope;
mod slab;
mod sleep;
mod spawn;
mod submitq;
mod sync;
mod sys;
mod unwind;
mod wakers;
mod worker;

#[cfg(all(test, flock_loom))]
mod loom_tests;

pub use admit::{SpawnAsync, SubmitAsync};
pub use awaits::{GroupWaitAsync, RunAsync, WaitAsync};
pub use builder::{PoolBuilder, DEFAULT_CAPACITY, DEFAULT_SPIN_LIMIT, MIN_STACK_SIZE};
pub use config::Backpressure;
pub use context::{
    broadcast, current_num_threads, current_thread_has_pending_tasks, current_thread_index,
    in_place_scope, in_place_scope_fifo, join_context, max_num_threads, BroadcastContext,
    FnContext,
};
pub use current::{
    current_num_workers, join, scope, scope_fifo, spawn, spawn_fifo, submit, yield_now, Yield,
};
pub use error::{
    BatchError, BuildError, JoinError, RejectReason, ResizeError, SubmitError, WaitError,
};
pub use global::{global, try_global};
pub use group::{GroupError, TaskGroup};
pub use lane::{Lane, LaneId, MAX_LANES};
pub use metrics::{prometheus_text, LaneStats, LatencyStats, Stats, WorkerState, WorkerStats};
pub use par::{
    map_reduce, par_chunks_mut, par_for_each, par_for_each_mut, par_sort, par_sort_by,
    par_sort_unstable, par_sort_unstable_by,
};
pub use pool::Pool;
pub use scope::Scope;
pub use spawn::{CancelOnDrop, JoinHandle};
pub use unwind::{PanicPayload, TaskPanic};
pub use worker::{current_worker_index, yield_to_lanes};

/// Every public error enum is `#[non_exhaustive]`: a `match` without a `_` arm does not
/// compile outside the crate (one doctest per enum; each compiles with the `_` arm).
///
/// ```compile_fail
/// fn f(e: flock::RejectReason) -> u8 { use flock::RejectReason::*; match e { Full => 0, Timeout => 1, Shutdown => 2, UnknownLane => 3 } }
/// ```
/// ```compile_fail
/// fn f(e: flock::WaitError) -> u8 { use flock::WaitError::*; match e { WouldDeadlock => 0, Timeout => 1, Paused => 2 } }
/// ```
/// ```compile_fail
/// fn f(e: flock::JoinError) -> u8 { use flock::JoinError::*; match e { Panicked(_) => 0, Cancelled => 1, Dropped => 2, Refused(_) => 3 } }
/// ```
/// ```
/// fn r(e: flock::RejectReason) -> u8 { use flock::RejectReason::*; match e { Full => 0, Timeout => 1, Shutdown => 2, UnknownLane => 3, _ => 4 } }
/// fn w(e: flock::WaitError) -> u8 { use flock::WaitError::*; match e { WouldDeadlock => 0, Timeout => 1, Paused => 2, _ => 3 } }
/// fn j(e: flock::JoinError) -> u8 { use flock::JoinError::*; match e { Panicked(_) => 0, Cancelled => 1, Dropped => 2, Refused(_) => 3, _ => 4 } }
/// ```
#[cfg(doctest)]
pub struct NonExhaustiveErrors;

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn public_handles_are_send_and_sync() {
        assert_send_sync::<Pool>();
        assert_send_sync::<Scope<'static>>();
        assert_send_sync::<JoinError>();
        assert_send_sync::<TaskPanic>();
        assert_send_sync::<SubmitError<std::sync::mpsc::Receiver<()>>>();
        fn assert_send<T: Send>() {}
        assert_send::<JoinHandle<u32>>();
    }
}
