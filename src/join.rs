//! Fork-join: `join(a, b)` runs `a` here and offers `b` to thieves.

use crate::job::{stack, COUNTED};
use crate::latch::{self, LocalOwner, Owner};
use crate::registry::{Admission, Registry};
use crate::sync::Arc;
use crate::unwind::drop_payload;
use crate::worker::WorkerThread;
use std::any::Any;
use std::panic::resume_unwind;
use std::thread::Result as TaskResult;

/// `join` on a worker of the pool: push `b`, run `a`, then take `b` back or wait for its thief.
/// In a pool with one lane `b` goes through the worker's join deque as a two-word `JobRef`
/// (see `JobRef` for why); with lanes, onto the lane's deque as a `Job` (`join_in_lanes`).
#[inline]
pub(crate) fn join_on_worker<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if !worker.joins_by_ref() {
        return join_in_lanes(worker, a, b);
    }
    // Set by a thief of this pool: no `Arc` clone on the set (`Owner::waker`).
    let owner = LocalOwner::of(worker);
    let (ra, rb) = stack::fork_ref(
        b,
        owner,
        |job_b| worker.push_join(job_b),
        a,
        |job_b| loop {
            if let Some(opened) = job_b.opened() {
                break job_b.stolen(opened);
            }
            match worker.pop_join().map(|job| job_b.take_back(job)) {
                // Ours: nobody stole it (what `a` pushed above it, it took back or waited
                // for).
                Some(Ok(ours)) => break job_b.run_here(ours),
                // Ours was stolen and this is an outer join's half, below ours; or a
                // scope task that `a` spawned into an outer scope, above ours. Run it, as
                // a waiting worker would, and look again.
                Some(Err(job)) => worker.run_join_half(job),
                None => {
                    worker.wait_until(job_b.latch());
                    break job_b.result();
                }
            }
        },
    );
    both(ra, rb)
}

/// `join_on_worker` in a pool with lanes: `b` is a `Job` on the running task's lane deque,
/// so a thief runs it in that lane.
fn join_in_lanes<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    // Set by a thief of this pool: no `Arc` clone on the set (`Owner::waker`).
    let owner = LocalOwner::of(worker);
    let (ra, rb) = stack::fork_job(
        b,
        owner,
        0,
        |job_b| worker.push_local(job_b),
        a,
        |job_b| loop {
            if let Some(opened) = job_b.opened() {
                break job_b.stolen(opened);
            }
            match worker.pop_local().map(|job| job_b.take_back_job(job)) {
                Some(Ok(ours)) => break job_b.run_here(ours),
                // Spawned above `b` by `a`; or, while paused, a task from outside, which
                // goes back to its queue unrun.
                Some(Err(job)) => {
                    worker.execute_unless_paused_waiting(job, worker.lane());
                }
                None => {
                    worker.wait_until(job_b.latch());
                    break job_b.result();
                }
            }
        },
    );
    both(ra, rb)
}

/// What a join returns: both values, or the first half's panic re-raised (the second's when
/// only it panicked), as rayon does.
#[inline]
fn both<RA, RB>(ra: TaskResult<RA>, rb: TaskResult<RB>) -> (RA, RB) {
    // When both halves panicked, the second payload is dropped during the unwind of the
    // first: in a `SecondPanic`, so that a panic of its destructor is caught (escaping a drop
    // during an unwind, it would abort the process) rather than a branch here that hands it
    // over before the unwind (5 instructions a join, callgrind).
    let rb = rb.map_err(SecondPanic);
    let ra = ra.unwrap_or_else(|panic| resume_unwind(panic));
    (
        ra,
        rb.unwrap_or_else(|second| resume_unwind(second.into_inner())),
    )
}

/// A join half's panic payload while the other half's panic may be unwinding: dropped, its
/// destructor's panic is caught and disposed of (`drop_payload`), as `scope` and
/// `broadcast` dispose of a second payload.
struct SecondPanic(Box<dyn Any + Send>);

impl SecondPanic {
    fn into_inner(mut self) -> Box<dyn Any + Send> {
        // A zero-sized stand-in (no allocation) for `drop` to dispose of.
        std::mem::replace(&mut self.0, Box::new(()))
    }
}

impl Drop for SecondPanic {
    #[cold]
    fn drop(&mut self) {
        drop_payload(std::mem::replace(&mut self.0, Box::new(())));
    }
}

/// `join` from outside the pool: one job runs the whole join on a worker while we block.
pub(crate) fn join_from_outside<A, B, RA, RB>(registry: &Arc<Registry>, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    run_on_pool(registry, move |worker| match worker {
        Some(w) => join_on_worker(w, a, b),
        // Run off the workers (by the lane reserve), or the pool is shut down: both halves
        // here, in order.
        None => (a(), b()),
    })
}

/// Runs `f` on a worker of `registry`'s pool and returns its result, from a thread that is
/// not one of its workers (`join` from outside, `Pool::install`): one counted job, exempt
/// from capacity, while we wait (a worker of another pool runs its own pool's tasks
/// meanwhile). `f` gets `None` when it runs elsewhere: on the lane reserve, or here on the
/// calling thread because the pool is shut down.
pub(crate) fn run_on_pool<F, R>(registry: &Arc<Registry>, f: F) -> R
where
    F: FnOnce(Option<&WorkerThread>) -> R + Send,
    R: Send,
{
    let shard = registry.shards.external();
    let Ok(route) = registry.admit(shard, Admission::Unbounded) else {
        return f(None);
    };
    let reg: &Registry = registry;
    let f = move || {
        crate::worker::with_current(|w| match w {
            Some(w) if w.is_in(reg) => f(Some(w)),
            _ => f(None),
        })
    };
    let lane = registry.outside_lane(None);
    let (_, result) = stack::fork_job(
        f,
        Owner::current(registry),
        COUNTED,
        |queued| Registry::dispatch(registry, shard, route, queued, lane),
        || (),
        |job| {
            // On a worker of another pool: that pool's tasks run here meanwhile.
            latch::wait(job.latch());
            job.result()
        },
    );
    result.unwrap_or_else(|p| resume_unwind(p))
}
