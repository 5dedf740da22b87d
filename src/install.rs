//! Running closures on a pool's workers from anywhere: [`Pool::install`].

use crate::pool::Pool;
use crate::worker::with_current;

impl Pool {
    /// Runs `op` on one of this pool's workers and returns its result (a panic in `op` is
    /// re-raised here). Inside `op`, the free functions ([`flock::join`](fn@crate::join),
    /// [`flock::scope`](fn@crate::scope), [`flock::spawn`](fn@crate::spawn), ...) use this pool. As
    /// rayon's `ThreadPool::install`.
    ///
    /// Called from one of this pool's workers, `op` runs right here. From a worker of another
    /// pool, that worker runs its own pool's tasks while it waits (so two pools installing
    /// into each other cannot deadlock); from any other thread the caller blocks. `op` is not
    /// subject to the pool's capacity. If the pool is shut down, `op` runs on the calling
    /// thread, as `join` does then; so does it, in a pool with lanes, if the lane reserve
    /// takes it up (both cases: the free functions then use the global pool).
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let (index, sum) = pool.install(|| {
    ///     let (a, b) = flock::join(|| 1 + 1, || 2 + 2); // in `pool`
    ///     (flock::current_worker_index(), a + b)
    /// });
    /// assert!(matches!(index, Some(0 | 1)));
    /// assert_eq!(sum, 6);
    /// ```
    pub fn install<OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        let reg = self.registry();
        if with_current(|w| w.is_some_and(|w| w.is_in(reg))) {
            return op();
        }
        crate::join::run_on_pool(reg, move |_| op())
    }
}
