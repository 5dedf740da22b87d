//! One `.await` from async code: [`Pool::run_async`] (room in the queue, then the result),
//! [`Pool::wait_async`] and [`TaskGroup::wait_async`]. None of them blocks the thread that
//! polls it; each stores the task's waker where the event it waits for is announced (the
//! pool's room wakers, its quiet wakers in `registry/quiet.rs`, the group's in
//! `group.rs`).
//!
//! Why flock does not warn when a *blocking* call is made from async code: it cannot tell.
//! Being inside an async task is a fact of the executor's, and flock depends on no runtime
//! (tokio's `block_on` panic inside a runtime reads tokio's own thread-local). So the
//! blocking calls say "blocks the calling thread" in their docs and name the async form, and
//! the crate docs' "Coming from tokio" lists them.

use crate::admit::SpawnAsync;
use crate::registry::QuietWaiter;
use crate::spawn::JoinHandle;
use crate::{GroupError, JoinError, Pool, TaskGroup, WaitError};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The future of [`Pool::run_async`]: waits for room in the queue, then for the task's
/// result.
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
/// let pool = flock::Pool::new();
/// let run: flock::RunAsync<'_, _, u32> = pool.run_async(|| 6 * 7);
/// assert_eq!(block_on(run)?, 42);
/// # Ok::<(), flock::JoinError>(())
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct RunAsync<'a, F, T> {
    state: RunState<'a, F, T>,
}

enum RunState<'a, F, T> {
    /// Waiting for room in the queue.
    Admitting(SpawnAsync<'a, F>),
    /// Queued: waiting for the result.
    Running(JoinHandle<T>),
}

impl<F, T> fmt::Debug for RunAsync<'_, F, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            RunState::Admitting(_) => "admitting",
            RunState::Running(_) => "running",
        };
        f.debug_struct("RunAsync").field("state", &state).finish()
    }
}

impl<F, T> Future for RunAsync<'_, F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                RunState::Admitting(admit) => match Pin::new(admit).poll(cx) {
                    Poll::Ready(handle) => this.state = RunState::Running(handle),
                    Poll::Pending => return Poll::Pending,
                },
                RunState::Running(handle) => return Pin::new(handle).poll(cx),
            }
        }
    }
}

/// The future of [`Pool::wait_async`].
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
/// let pool = flock::Pool::new();
/// let waiting: flock::WaitAsync<'_> = pool.wait_async();
/// assert_eq!(block_on(waiting), Ok(()));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct WaitAsync<'a> {
    pool: &'a Pool,
    waiter: QuietWaiter,
}

impl fmt::Debug for WaitAsync<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitAsync").finish_non_exhaustive()
    }
}

impl Future for WaitAsync<'_> {
    type Output = Result<(), WaitError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.pool.inside() {
            return Poll::Ready(Err(WaitError::WouldDeadlock));
        }
        this.pool
            .registry()
            .poll_quiet(&mut this.waiter, cx)
            .map(Ok)
    }
}

impl Drop for WaitAsync<'_> {
    fn drop(&mut self) {
        self.pool.registry().quiet.leave(&mut self.waiter);
    }
}

/// The future of [`TaskGroup::wait_async`].
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
/// let pool = flock::Pool::new();
/// let group = flock::TaskGroup::new(&pool);
/// group.spawn(|| ());
/// let waiting: flock::GroupWaitAsync<'_> = group.wait_async();
/// assert_eq!(block_on(waiting), Ok(()));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct GroupWaitAsync<'a> {
    group: &'a TaskGroup,
    id: Option<u64>,
    /// The group's epoch when a poll first found tasks unfinished (`TaskGroup::poll_idle`).
    epoch: Option<u64>,
}

impl fmt::Debug for GroupWaitAsync<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupWaitAsync").finish_non_exhaustive()
    }
}

impl Future for GroupWaitAsync<'_> {
    type Output = Result<(), GroupError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.group.poll_idle(&mut this.id, &mut this.epoch, cx)
    }
}

impl Drop for GroupWaitAsync<'_> {
    fn drop(&mut self) {
        self.group.forget_waker(&mut self.id);
    }
}

impl Pool {
    /// Runs `task` on the pool and resolves to its result: one `.await` for
    /// `spawn_async(task).await.await`. It waits for room in a full queue and then for the
    /// task without blocking the thread that polls it, whatever the pool's
    /// [`Backpressure`](crate::Backpressure) (as [`spawn_async`](Pool::spawn_async)); a task
    /// refused (the pool shut down) resolves to
    /// [`JoinError::Refused`], a panic to
    /// [`JoinError::Panicked`]. As tokio's
    /// `spawn_blocking(task).await`, for CPU-bound work.
    ///
    /// Dropping the future before the task is queued drops the task unrun; after, the task
    /// runs on and its value is dropped (as a dropped [`JoinHandle`]). To cancel a queued
    /// task on drop (under a timeout), await `spawn_async(task).await.cancel_on_drop()`.
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
    /// let pool = flock::Pool::builder().workers(2).capacity(2).build()?;
    /// let total = block_on(async {
    ///     let mut total = 0u64;
    ///     for i in 0..20u64 {
    ///         total += pool.run_async(move || i * i).await?;
    ///     }
    ///     Ok::<_, flock::JoinError>(total)
    /// })?;
    /// assert_eq!(total, 2470);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[doc(alias = "spawn_blocking")]
    pub fn run_async<F, T>(&self, task: F) -> RunAsync<'_, F, T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        RunAsync {
            state: RunState::Admitting(self.spawn_async(task)),
        }
    }

    /// [`wait`](Pool::wait) as a future: resolves once every task accepted before the first
    /// poll has finished (the same quiet moment as `wait`'s), never blocking the thread that
    /// polls it. Unlike `wait`, a paused pool is waited for (it resolves after
    /// [`resume`](Pool::resume) and the tasks finished): bound the wait with your runtime's
    /// timer. Dropping it gives up.
    ///
    /// # Errors
    /// [`WaitError::WouldDeadlock`] when polled from one of the pool's own tasks (see
    /// [`wait`](Pool::wait)).
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
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// let pool = flock::Pool::builder().workers(2).build()?;
    /// let done = Arc::new(AtomicU32::new(0));
    /// for _ in 0..100 {
    ///     let done = done.clone();
    ///     pool.submit(move || { done.fetch_add(1, Ordering::Relaxed); })?;
    /// }
    /// block_on(pool.wait_async())?;
    /// assert_eq!(done.load(Ordering::Relaxed), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_async(&self) -> WaitAsync<'_> {
        WaitAsync {
            pool: self,
            waiter: QuietWaiter::default(),
        }
    }
}

impl TaskGroup {
    /// [`wait`](TaskGroup::wait) as a future: resolves once every task of the group has
    /// finished, with the same result, never blocking the thread that polls it. Dropping it
    /// gives up.
    ///
    /// # Errors
    /// As [`wait`](TaskGroup::wait)'s: [`GroupError::Panicked`] with the panics since the
    /// last report, [`GroupError::WouldDeadlock`] when polled from one of the group's tasks.
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
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let group = flock::TaskGroup::new(&pool);
    /// group.spawn(|| std::thread::sleep(std::time::Duration::from_millis(5)));
    /// group.spawn(|| panic!("one bad task"));
    /// assert_eq!(block_on(group.wait_async()), Err(flock::GroupError::Panicked(1)));
    /// assert_eq!(block_on(group.wait_async()), Ok(())); // each panic is reported once
    /// ```
    pub fn wait_async(&self) -> GroupWaitAsync<'_> {
        GroupWaitAsync {
            group: self,
            id: None,
            epoch: None,
        }
    }
}
