//! Async admission: [`Pool::submit_async`] and [`Pool::spawn_async`] wait for room in a full
//! queue as futures, where `submit` and `spawn` would block the calling thread (or refuse).
//!
//! A waiting future registers its waker in the pool's
//! [`RoomWakers`](crate::wakers::RoomWakers), then tries again; the worker that gives
//! capacity back while the queue was full wakes every registered waker
//! (`Gate::release_pending`), and so does a shutdown. Why no wake is lost is in
//! `docs/protocol.md`, "Backpressure". Wakers are woken outside every lock and through
//! `wakers::wake_guarded`, so one that panics cannot keep the others asleep.

use crate::job::Job;
use crate::pool::{fire_and_forget, Pool};
use crate::registry::{Registry, Route};
use crate::spawn::{spawn_admitted, spawn_job, JoinHandle};
use crate::sync::Arc;
use crate::worker::with_current;
use crate::{LaneId, RejectReason, SubmitError};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future's place among the waiters for room: its id in `RoomWakers` while registered.
struct Waiting<'a> {
    registry: &'a Arc<Registry>,
    id: Option<u64>,
    /// The lane asked for: `Ok(None)` none named, `Err(())` a name the pool does not have.
    lane: Result<Option<usize>, ()>,
}

impl Waiting<'_> {
    /// Admits one task if there is room; else registers `cx`'s waker and tries once more
    /// (the re-check that makes a release between the two tries wake us).
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<Result<Route, RejectReason>> {
        let reg = self.registry;
        let shard = reg.shards.external();
        if let Some(done) = reg.try_admit_async(shard).transpose() {
            self.leave();
            return Poll::Ready(done);
        }
        reg.gate.register_room_waker(&mut self.id, cx.waker());
        match reg.try_admit_async(shard).transpose() {
            Some(done) => {
                self.leave();
                Poll::Ready(done)
            }
            None => Poll::Pending,
        }
    }

    /// The lane asked for. A name the pool does not have is refused, and counted as
    /// `submit_to`'s refusal is (`Stats::rejected_unknown_lane`).
    fn resolved_lane(&self) -> Result<Option<usize>, RejectReason> {
        self.lane.map_err(|()| {
            self.registry.count_refused(RejectReason::UnknownLane, 1);
            RejectReason::UnknownLane
        })
    }

    /// No longer waiting: our waker, if a wake has not taken it, leaves the list (so that
    /// `wake_all` does not wake a future that is done).
    fn leave(&mut self) {
        if let Some(id) = self.id.take() {
            self.registry.gate.unregister_room_waker(id);
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.leave();
    }
}

/// The future of [`Pool::submit_async`]: resolves once the task is queued (or refused, with
/// the task handed back in the error). It never blocks the thread that polls it.
///
/// ```
/// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     struct W(std::thread::Thread);
/// #     impl std::task::Wake for W { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
/// #     let waker = std::task::Waker::from(std::sync::Arc::new(W(std::thread::current())));
/// #     let mut f = std::pin::pin!(f);
/// #     loop {
/// #         match f.as_mut().poll(&mut std::task::Context::from_waker(&waker)) {
/// #             std::task::Poll::Ready(v) => return v,
/// #             std::task::Poll::Pending => std::thread::park(),
/// #         }
/// #     }
/// # }
/// let pool = flock::Pool::builder().capacity(2).build()?;
/// let (tx, rx) = std::sync::mpsc::channel();
/// let queued: flock::SubmitAsync<'_, _> = pool.submit_async(move || tx.send(7).unwrap());
/// block_on(queued)?; // waits for room in the queue, never blocking an executor's thread
/// assert_eq!(rx.recv()?, 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct SubmitAsync<'a, F> {
    waiting: Waiting<'a>,
    task: Option<F>,
}

/// The future of [`Pool::spawn_async`]: resolves to the task's [`JoinHandle`]
/// once the task is queued (a refused task's handle resolves to
/// [`JoinError::Refused`](crate::JoinError::Refused)). The handle is a future too.
///
/// ```
/// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     struct W(std::thread::Thread);
/// #     impl std::task::Wake for W { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
/// #     let waker = std::task::Waker::from(std::sync::Arc::new(W(std::thread::current())));
/// #     let mut f = std::pin::pin!(f);
/// #     loop {
/// #         match f.as_mut().poll(&mut std::task::Context::from_waker(&waker)) {
/// #             std::task::Poll::Ready(v) => return v,
/// #             std::task::Poll::Pending => std::thread::park(),
/// #         }
/// #     }
/// # }
/// let pool = flock::Pool::builder().capacity(2).build()?;
/// let admitted: flock::SpawnAsync<'_, _> = pool.spawn_async(|| 6 * 7);
/// let handle = block_on(admitted); // queued: now await (or join) the result
/// assert_eq!(block_on(handle)?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct SpawnAsync<'a, F> {
    waiting: Waiting<'a>,
    task: Option<F>,
}

// Neither future ever pins its task: it is moved out when admitted.
impl<F> Unpin for SubmitAsync<'_, F> {}
impl<F> Unpin for SpawnAsync<'_, F> {}

impl<F> fmt::Debug for SubmitAsync<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubmitAsync")
            .field("waiting", &self.waiting.id.is_some())
            .finish()
    }
}

impl<F> fmt::Debug for SpawnAsync<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpawnAsync")
            .field("waiting", &self.waiting.id.is_some())
            .finish()
    }
}

/// On a worker of `registry`'s pool, pushes `make(task, lane)` onto its own deque of that
/// lane (never refused, never waiting) and returns what `make` gave back; elsewhere hands the
/// task back.
fn on_own_worker<F, R>(
    registry: &Registry,
    lane: Option<usize>,
    task: F,
    make: impl FnOnce(F, usize) -> (Job, R),
) -> Result<R, F> {
    with_current(|w| match w {
        Some(w) if w.is_in(registry) => {
            let lane = w.local_lane(lane);
            let (job, out) = make(task, lane);
            w.submit_local(job, Some(lane));
            Ok(out)
        }
        _ => Err(task),
    })
}

impl<F> Future for SubmitAsync<'_, F>
where
    F: FnOnce() + Send + 'static,
{
    type Output = Result<(), SubmitError<F>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let reg = this.waiting.registry;
        let task = this
            .task
            .take()
            .expect("flock: SubmitAsync polled after Ready");
        let lane = match this.waiting.resolved_lane() {
            Ok(lane) => lane,
            Err(reason) => return Poll::Ready(Err(SubmitError::new(task, reason))),
        };
        let task = match on_own_worker(reg, lane, task, |task, _| (fire_and_forget(task), ())) {
            Ok(()) => return Poll::Ready(Ok(())),
            Err(task) => task,
        };
        match this.waiting.poll_room(cx) {
            Poll::Pending => {
                this.task = Some(task);
                Poll::Pending
            }
            Poll::Ready(Ok(route)) => {
                let lane = reg.outside_lane(lane);
                let job = fire_and_forget(task);
                Registry::dispatch(reg, reg.shards.external(), route, job, lane);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(reason)) => Poll::Ready(Err(SubmitError::new(task, reason))),
        }
    }
}

impl<F, T> Future for SpawnAsync<'_, F>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    type Output = JoinHandle<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let reg = this.waiting.registry;
        let task = this
            .task
            .take()
            .expect("flock: SpawnAsync polled after Ready");
        let lane = match this.waiting.resolved_lane() {
            Ok(lane) => lane,
            Err(reason) => return Poll::Ready(JoinHandle::refused(reg, reason)),
        };
        let task = match on_own_worker(reg, lane, task, |task, lane| spawn_job(reg, lane, task)) {
            Ok(handle) => return Poll::Ready(handle),
            Err(task) => task,
        };
        match this.waiting.poll_room(cx) {
            Poll::Pending => {
                this.task = Some(task);
                Poll::Pending
            }
            Poll::Ready(Ok(route)) => {
                let lane = reg.outside_lane(lane);
                let (job, handle, route) = spawn_admitted(reg, route, lane, task);
                Registry::dispatch(reg, reg.shards.external(), route, job, lane);
                Poll::Ready(handle)
            }
            Poll::Ready(Err(reason)) => Poll::Ready(JoinHandle::refused(reg, reason)),
        }
    }
}

/// # Async admission
///
/// From async code, use these instead of [`submit`](Pool::submit) and [`spawn`](Pool::spawn):
/// those block the calling thread when the queue is full under
/// [`Backpressure::Block`](crate::Backpressure::Block) (stalling every task of an executor
/// thread) or run the task there under `CallerRuns`. These never block and never run the task
/// on the caller: whatever the pool's [`Backpressure`](crate::Backpressure), a full queue is
/// waited for (`Reject` included: the future is the way to wait for room). Awaiting the
/// handle is the other half: [`JoinHandle`] is a future too.
impl Pool {
    /// Runs `task` on the pool, fire and forget, once there is room in the queue: the future
    /// resolves when the task is queued (at once while there is room), with the task handed
    /// back if the pool shut down. It never blocks the thread that polls it; dropping it
    /// before it resolves gives up, and the task is dropped unrun.
    ///
    /// The pool's `block_timeout` does not apply: bound the wait with your runtime's timer.
    /// Waiters are woken together when room appears and race for it, so the order in which
    /// they get in is not their order of arrival. From one of the pool's own tasks it
    /// resolves at once, as [`submit`](Pool::submit) does there.
    ///
    /// A waker whose `wake` panics (woken by the worker that frees room, or by a shutdown) is
    /// caught and reported as a panicking [hook](crate::PoolBuilder::on_worker_start) is:
    /// printed to stderr, and the pool goes on. The other waiters are still woken, and a
    /// shutdown still joins its workers.
    ///
    /// ```
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     struct W(std::thread::Thread);
    /// #     impl std::task::Wake for W { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
    /// #     let waker = std::task::Waker::from(std::sync::Arc::new(W(std::thread::current())));
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop {
    /// #         match f.as_mut().poll(&mut std::task::Context::from_waker(&waker)) {
    /// #             std::task::Poll::Ready(v) => return v,
    /// #             std::task::Poll::Pending => std::thread::park(),
    /// #         }
    /// #     }
    /// # }
    /// use flock::{Backpressure, Pool};
    /// let pool = Pool::builder().workers(1).capacity(2).when_full(Backpressure::Reject).build()?;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// block_on(async {
    ///     for i in 0..100 {
    ///         let tx = tx.clone();
    ///         // Waits for room instead of being refused.
    ///         pool.submit_async(move || tx.send(i).unwrap()).await.unwrap();
    ///     }
    /// });
    /// pool.wait()?;
    /// assert_eq!(rx.try_iter().count(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn submit_async<F>(&self, task: F) -> SubmitAsync<'_, F>
    where
        F: FnOnce() + Send + 'static,
    {
        SubmitAsync {
            waiting: self.waiting(Ok(None)),
            task: Some(task),
        }
    }

    /// Runs `task` on the pool once there is room in the queue, as
    /// [`submit_async`](Pool::submit_async) does, and resolves to its [`JoinHandle`]: await
    /// that for the value. A task refused (the pool shut down) gives a handle that resolves
    /// to [`JoinError::Refused`](crate::JoinError::Refused). A waker that panics while it
    /// waits for room is caught and reported, as for `submit_async`.
    ///
    /// ```
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     struct W(std::thread::Thread);
    /// #     impl std::task::Wake for W { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
    /// #     let waker = std::task::Waker::from(std::sync::Arc::new(W(std::thread::current())));
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop {
    /// #         match f.as_mut().poll(&mut std::task::Context::from_waker(&waker)) {
    /// #             std::task::Poll::Ready(v) => return v,
    /// #             std::task::Poll::Pending => std::thread::park(),
    /// #         }
    /// #     }
    /// # }
    /// let pool = flock::Pool::builder().capacity(4).build()?;
    /// let total = block_on(async {
    ///     let mut handles = Vec::new();
    ///     for i in 0..50u64 {
    ///         handles.push(pool.spawn_async(move || i * i).await);
    ///     }
    ///     let mut total = 0;
    ///     for h in handles {
    ///         total += h.await?;
    ///     }
    ///     Ok::<_, flock::JoinError>(total)
    /// })?;
    /// assert_eq!(total, 40_425);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_async<F, T>(&self, task: F) -> SpawnAsync<'_, F>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        SpawnAsync {
            waiting: self.waiting(Ok(None)),
            task: Some(task),
        }
    }

    /// [`submit_async`](Pool::submit_async) into `lane` (see [`Pool::submit_to`]). A lane the
    /// pool does not have resolves at once to [`RejectReason::UnknownLane`].
    ///
    /// ```
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     struct W(std::thread::Thread);
    /// #     impl std::task::Wake for W { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
    /// #     let waker = std::task::Waker::from(std::sync::Arc::new(W(std::thread::current())));
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop {
    /// #         match f.as_mut().poll(&mut std::task::Context::from_waker(&waker)) {
    /// #             std::task::Poll::Ready(v) => return v,
    /// #             std::task::Poll::Pending => std::thread::park(),
    /// #         }
    /// #     }
    /// # }
    /// let pool = flock::Pool::builder().lanes(&[("interactive", 8), ("batch", 1)]).build()?;
    /// block_on(pool.submit_async_to("batch", || { /* a long report */ }))?;
    /// let err = block_on(pool.submit_async_to("nope", || ())).unwrap_err();
    /// assert_eq!(err.reason(), flock::RejectReason::UnknownLane);
    /// pool.wait()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn submit_async_to<L, F>(&self, lane: L, task: F) -> SubmitAsync<'_, F>
    where
        L: LaneId,
        F: FnOnce() + Send + 'static,
    {
        SubmitAsync {
            waiting: self.waiting(self.lane_of(lane)),
            task: Some(task),
        }
    }

    /// [`spawn_async`](Pool::spawn_async) into `lane` (see [`Pool::submit_to`]). A lane the
    /// pool does not have gives a handle that resolves to
    /// [`JoinError::Refused`](crate::JoinError::Refused)`(UnknownLane)`.
    ///
    /// ```
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     struct W(std::thread::Thread);
    /// #     impl std::task::Wake for W { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
    /// #     let waker = std::task::Waker::from(std::sync::Arc::new(W(std::thread::current())));
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop {
    /// #         match f.as_mut().poll(&mut std::task::Context::from_waker(&waker)) {
    /// #             std::task::Poll::Ready(v) => return v,
    /// #             std::task::Poll::Pending => std::thread::park(),
    /// #         }
    /// #     }
    /// # }
    /// let pool = flock::Pool::builder().lanes(&[("interactive", 8), ("batch", 1)]).build()?;
    /// let answer = block_on(async { pool.spawn_async_to("interactive", || 2 + 2).await.await })?;
    /// assert_eq!(answer, 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_async_to<L, F, T>(&self, lane: L, task: F) -> SpawnAsync<'_, F>
    where
        L: LaneId,
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        SpawnAsync {
            waiting: self.waiting(self.lane_of(lane)),
            task: Some(task),
        }
    }

    fn waiting(&self, lane: Result<Option<usize>, ()>) -> Waiting<'_> {
        Waiting {
            registry: self.registry(),
            id: None,
            lane,
        }
    }

    fn lane_of<L: LaneId>(&self, lane: L) -> Result<Option<usize>, ()> {
        lane.resolve(&self.registry().cfg.lanes).map(Some).ok_or(())
    }
}
