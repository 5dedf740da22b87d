//! flock: a multi-threaded work-stealing task pool.
//!
//! Each worker owns a Chase-Lev deque (`crossbeam-deque`); tasks submitted from outside the
//! pool go to a shared injector, tasks submitted by tasks go to their worker's own deque, and
//! idle workers steal. Idle workers spin briefly, then park on a futex with no timer; the
//! protocol that makes that safe (no lost wake-up, no thundering herd) is written down in
//! `src/sleep/README.md`.
//!
//! ```
//! use flock::{Backpressure, Pool};
//!
//! let pool = Pool::builder().capacity(10_000).when_full(Backpressure::Block).build()?;
//! pool.submit(|| println!("fire and forget"))?;
//! let answer = pool.spawn(|| 6 * 7);
//! let (a, b) = pool.join(|| 1 + 1, || 2 + 2);
//! assert_eq!((answer.join()?, a, b), (42, 2, 4));
//! pool.wait()?;
//! pool.shutdown()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **From async code** (any executor; flock depends on no runtime): `.await` a
//! [`JoinHandle`] instead of calling `join`, and submit with [`Pool::spawn_async`] /
//! [`Pool::submit_async`], which wait for room in a full queue instead of blocking the
//! executor's thread. [`JoinHandle::cancel_on_drop`] makes a timeout remove work still queued.
//!
//! **Coming from rayon**: [`join`], [`scope`], [`spawn`], [`yield_now`] and
//! [`current_num_workers`] use the current pool (the calling worker's, else the [`global`]
//! one); [`Pool::install`] runs a closure on a pool's worker, [`Pool::broadcast`] on every
//! worker; [`spawn_fifo`] and [`scope_fifo`] give per-call FIFO order.
#![deny(missing_docs, unsafe_op_in_unsafe_fn, unreachable_pub)]
#![warn(rust_2018_idioms)]

mod admit;
mod broadcast;
mod builder;
mod current;
mod deque;
mod error;
mod fifo;
mod global;
mod install;
mod job;
mod join;
mod lane;
mod latch;
mod metrics;
mod pool;
mod registry;
mod reserve;
mod scope;
mod sleep;
mod spawn;
mod sync;
mod unwind;
mod worker;

#[cfg(all(test, flock_loom))]
mod loom_tests;

pub use admit::{SpawnAsync, SubmitAsync};
pub use builder::{Backpressure, PoolBuilder, DEFAULT_CAPACITY, DEFAULT_SPIN_LIMIT};
pub use current::{
    current_num_workers, join, scope, scope_fifo, spawn, spawn_fifo, submit, yield_now, Yield,
};
pub use error::{
    BatchError, BuildError, JoinError, RejectReason, ResizeError, SubmitError, WaitError,
};
pub use global::{global, try_global};
pub use lane::{Lane, LaneId, MAX_LANES};
pub use metrics::{LaneStats, LatencyStats, Stats, WorkerState, WorkerStats};
pub use pool::Pool;
pub use scope::Scope;
pub use spawn::{CancelOnDrop, JoinHandle};
pub use unwind::TaskPanic;
pub use worker::{current_worker_index, yield_to_lanes};

/// The README's examples, compiled and run as doctests so the front door never lies.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn public_handles_are_send_and_sync() {
        assert_send_sync::<Pool>();
        assert_send_sync::<Scope<'static>>();
        fn assert_send<T: Send>() {}
        assert_send::<JoinHandle<u32>>();
    }
}
