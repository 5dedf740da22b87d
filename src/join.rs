//! Fork-join: `join(a, b)` runs `a` here and offers `b` to thieves.

use crate::job::{Action, Job, JobRef, Outcome, Payload, COUNTED, STACK};
use crate::latch::{self, Latch, LatchOwner, LocalOwner, Owner};
use crate::registry::{Admission, Registry};
use crate::sync::Arc;
use crate::unwind::drop_payload;
use crate::worker::WorkerThread;
use std::any::Any;
use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr;
use std::thread::Result as TaskResult;

/// A job that lives in its waiter's stack frame. The waiter does not return before the job
/// ran (the latch is open) or it took the job back, so the frame outlives the job.
struct StackJob<F, R, O> {
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<Option<TaskResult<R>>>,
    latch: Latch,
    /// The thread waiting in this frame: the latch's setter wakes it.
    owner: O,
}

impl<F: FnOnce() -> R + Send, R: Send, O: LatchOwner> StackJob<F, R, O> {
    #[inline]
    fn new(f: F, owner: O) -> Self {
        StackJob {
            func: UnsafeCell::new(Some(f)),
            result: UnsafeCell::new(None),
            latch: Latch::new(),
            owner,
        }
    }

    /// # Safety
    /// `self` must stay in place and alive until the job ran or was taken back.
    unsafe fn as_job(&self, flags: u8) -> Job {
        let mut payload = Payload::uninit();
        // SAFETY: a payload has room for one address; `Job::stack_address` reads it back.
        unsafe {
            ptr::write(
                payload.as_mut_ptr().cast::<*const ()>(),
                (self as *const Self).cast::<()>(),
            )
        };
        // SAFETY: `call_stack::<F, R, O>` reads exactly this address, once.
        unsafe { Job::from_raw(call_stack::<F, R, O>, payload, flags | STACK) }
    }

    /// The job as a two-word `JobRef`, for a worker's join deque.
    ///
    /// # Safety
    /// As `as_job`.
    #[inline]
    unsafe fn as_ref(&self) -> JobRef {
        // SAFETY: `run_stack::<F, R, O>` runs the `StackJob<F, R, O>` at this address, once;
        // the caller keeps it alive until then (or takes it back).
        unsafe { JobRef::new(run_stack::<F, R, O>, self.address()) }
    }

    #[inline]
    fn address(&self) -> *const () {
        (self as *const Self).cast()
    }

    /// Runs the function here (the owner took its job back before anyone stole it).
    #[inline]
    fn run_here(&self) -> TaskResult<R> {
        // SAFETY: the job was taken back from the deque, so nobody else can run it.
        let f = unsafe { (*self.func.get()).take() }.expect("flock: a stack job runs once");
        catch_unwind(AssertUnwindSafe(f))
    }

    /// The result left by the thief, once the latch is open.
    fn take_result(&self) -> TaskResult<R> {
        // SAFETY: the latch is open, so the thief wrote `result` and is done with the job.
        unsafe { (*self.result.get()).take() }.expect("flock: a stolen stack job left its result")
    }
}

/// # Safety
/// `payload`'s first word is the address of a live `StackJob<F, R, O>` whose job was not run
/// yet.
unsafe fn call_stack<F: FnOnce() -> R + Send, R: Send, O: LatchOwner>(
    payload: Payload,
    _action: Action,
) -> Outcome {
    // SAFETY: see the function's contract.
    unsafe { execute_stack::<F, R, O>(ptr::read(payload.as_ptr().cast::<*const ()>())) }
}

/// A stack job's `JobRef` function.
///
/// # Safety
/// `data` is the address of a live `StackJob<F, R, O>` whose job was not run yet.
unsafe fn run_stack<F: FnOnce() -> R + Send, R: Send, O: LatchOwner>(data: *const ()) -> Outcome {
    // SAFETY: see the function's contract. (A join half is not counted: nothing reads the
    // outcome.)
    unsafe { execute_stack::<F, R, O>(data) }
}

/// Runs the stack job at `data`, leaves its result and opens its latch.
///
/// # Safety
/// `data` is the address of a live `StackJob<F, R, O>` whose job was not run yet.
#[inline]
unsafe fn execute_stack<F: FnOnce() -> R + Send, R: Send, O: LatchOwner>(
    data: *const (),
) -> Outcome {
    // SAFETY: see the function's contract.
    let job = unsafe { &*data.cast::<StackJob<F, R, O>>() };
    // Both actions run the function: a stack job's owner is blocked on it, so it must never
    // be dropped unrun (and it is not `DISCARDABLE`, so `shutdown_now` never asks).
    // SAFETY: the job is run once; its owner does not touch `func` once the job is out of
    // its deque.
    let f = unsafe { (*job.func.get()).take() }.expect("flock: a stack job runs once");
    let result = catch_unwind(AssertUnwindSafe(f));
    let outcome = if result.is_ok() {
        Outcome::Done
    } else {
        Outcome::Panicked
    };
    // SAFETY: the owner reads `result` only after the latch opens, below.
    unsafe { *job.result.get() = Some(result) };
    // SAFETY: the job is alive until its latch opens; after this we touch nothing of it.
    unsafe { latch::set_and_wake(&job.latch, &job.owner) };
    outcome
}

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
    let job_b = StackJob::new(b, LocalOwner::of(worker));
    // SAFETY: this frame does not return before `job_b` ran here or its latch opened.
    worker.push_join(unsafe { job_b.as_ref() });
    let ra = catch_unwind(AssertUnwindSafe(a));
    let rb = loop {
        if job_b.latch.probe() {
            break job_b.take_result();
        }
        match worker.pop_join() {
            // Ours: nobody stole it (what `a` pushed above it, it took back or waited for).
            Some(job) if job.data() == job_b.address() => break job_b.run_here(),
            // Ours was stolen and this is an outer join's half, below ours; or a scope task
            // that `a` spawned into an outer scope, above ours. Run it, as a waiting worker
            // would, and look again.
            Some(job) => worker.run_join_half(job),
            None => {
                worker.wait_until(&job_b.latch);
                break job_b.take_result();
            }
        }
    };
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
    let job_b = StackJob::new(b, LocalOwner::of(worker));
    // SAFETY: this frame does not return before `job_b` ran here or its latch opened.
    worker.push_local(unsafe { job_b.as_job(0) });
    let ra = catch_unwind(AssertUnwindSafe(a));
    let rb = loop {
        if job_b.latch.probe() {
            break job_b.take_result();
        }
        match worker.pop_local() {
            Some(job) if job.stack_address() == Some(job_b.address()) => {
                std::mem::forget(job); // just our own address; `run_here` does the work
                break job_b.run_here();
            }
            // Spawned above `b` by `a`; or, while paused, a task from outside, which goes
            // back to its queue unrun.
            Some(job) => {
                worker.execute_unless_paused_waiting(job, worker.lane());
            }
            None => {
                worker.wait_until(&job_b.latch);
                break job_b.take_result();
            }
        }
    };
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
    let rb = rb.map_err(|panic| SecondPanic(ManuallyDrop::new(panic)));
    let ra = ra.unwrap_or_else(|panic| resume_unwind(panic));
    (
        ra,
        rb.unwrap_or_else(|second| resume_unwind(second.into_inner())),
    )
}

/// A join half's panic payload while the other half's panic may be unwinding: dropped, its
/// destructor's panic is caught and disposed of (`drop_payload`), as `scope` and
/// `broadcast` dispose of a second payload.
struct SecondPanic(ManuallyDrop<Box<dyn Any + Send>>);

impl SecondPanic {
    fn into_inner(self) -> Box<dyn Any + Send> {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is not dropped, so the payload is taken out once.
        unsafe { ManuallyDrop::take(&mut this.0) }
    }
}

impl Drop for SecondPanic {
    #[cold]
    fn drop(&mut self) {
        // SAFETY: `drop` runs once, and `into_inner` (the payload's other way out) does not
        // drop.
        drop_payload(unsafe { ManuallyDrop::take(&mut self.0) });
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
    let job = StackJob::new(
        move || {
            crate::worker::with_current(|w| match w {
                Some(w) if w.is_in(reg) => f(Some(w)),
                _ => f(None),
            })
        },
        Owner::current(registry),
    );
    // SAFETY: we wait for the latch below before `job` can go out of scope.
    let queued = unsafe { job.as_job(COUNTED) };
    let lane = registry.outside_lane(None);
    Registry::dispatch(registry, shard, route, queued, lane);
    // On a worker of another pool: that pool's tasks run here meanwhile.
    latch::wait(&job.latch);
    job.take_result().unwrap_or_else(|p| resume_unwind(p))
}
