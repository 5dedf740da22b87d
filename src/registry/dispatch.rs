//! Dispatch, the second stage of a task's path from outside the pool: where an admitted task
//! goes (`Route`): its lane's shared queue, one by one or, for a batch, as bundles; the
//! submitting thread (`CallerRuns`); or a helper thread. Tasks run off the workers are
//! tracked per thread (`OFF_WORKER`). Workers take queued tasks up in `worker/find.rs`.

use super::queues::MAX_BUNDLE;
use super::quiet::Progress;
use super::shards::Shard;
use super::{Admission, Registry, Route};
use crate::job::{Bundle, Job, Outcome, COUNTED, INJECTED, RESERVED};
use crate::metrics::counters::{LaneStat, Stat, StatCounts};
use crate::sync::thread;
use crate::sync::{canary, Arc, Canary, Mutex, Ordering};
use crate::sys::frames;
use crate::RejectReason;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// One task a thread runs for a pool off the workers (the caller under `CallerRuns`, a
/// helper thread, the lane reserve): its pool's registry address and its lane, as a frame
/// (`sys::frames`) on the stack of `run_off_worker` for as long as the task and its panic
/// report run. What a task submits without naming a lane inherits the lane, as on a worker,
/// and waiting for any pool listed would wait for a task of our own. A stack, not one entry:
/// a task run here may submit to another pool that runs that task here too (`CallerRuns` in
/// both), and inside it both pools are ours.
struct OffWorker {
    registry: usize,
    lane: usize,
}

frames::frame_kind!(
    /// This thread's innermost `OffWorker` frame, or null.
    OFF_WORKER: OffWorker
);

impl OffWorker {
    /// The lane of the innermost task this thread runs off the workers for `registry`.
    fn lane_here(registry: usize) -> Option<usize> {
        frames::find_map(|f: &OffWorker| (f.registry == registry).then_some(f.lane))
    }
}

/// The fewest admitted jobs of a batch queued as one bundle; fewer are pushed one by one (a
/// bundle costs a buffer and a shared handle). Two under loom, so the
/// models cover bundles.
const MIN_BUNDLE: usize = if cfg!(flock_loom) { 2 } else { 8 };
impl Registry {
    /// Admits up to `batch.len()` tasks from outside at once: one entry and one capacity
    /// reservation for as many as fit, then the policy task by task for the rest. Each
    /// admitted task is made into a job by `make` and queued on `lane` (or run as its route
    /// says); one wake-up call covers all queued. Returns how many were admitted; on a
    /// refusal, `batch` keeps the refused task and those after it, unrun.
    pub(crate) fn admit_batch<T>(
        this: &Arc<Registry>,
        lane: usize,
        admission: Admission,
        batch: &mut Vec<T>,
        mut make: impl FnMut(T) -> Job,
    ) -> Result<usize, RejectReason> {
        let k = batch.len();
        if k == 0 {
            return Ok(0);
        }
        let shard = this.shards.external();
        if !shard.progress.enter_shared_n(k as u64) {
            return Err(this.refuse_closed(shard, admission, k as u64));
        }
        let policy = admission
            .policy()
            .expect("flock: a batch from outside is bounded");
        let reserved = this.gate.try_reserve_up_to(k);
        // Counted before any is queued, as `dispatch` does: a reader that sees a task end
        // sees its acceptance.
        if reserved > 0 {
            shard.stats.stat_shared(Stat::Submitted, reserved as u64);
            this.count_lane_submitted(shard, lane, reserved as u64);
        }
        let stamp = this.latency.as_ref().map(|_| this.now_ns());
        let mut items = std::mem::take(batch).into_iter();
        // Admitted for the queue, not pushed yet: pushed as one bundle (`queue_jobs`) when
        // `MAX_BUNDLE` are in, before anything can block, and at the end.
        let mut queued = Vec::new();
        let mut admitted = 0;
        let mut refused = None;
        for (i, item) in items.by_ref().enumerate() {
            let route = if i < reserved {
                Route::Queue {
                    reserved: this.gate.is_bounded(),
                }
            } else {
                // Past what fitted: one at a time, as `admit` does (the entry is made).
                let route = if this.gate.try_reserve(Ordering::Relaxed) {
                    Ok(Route::Queue { reserved: true })
                } else {
                    // Whatever is admitted so far may be what frees the room: queue it and
                    // wake for it before blocking.
                    this.queue_jobs(lane, &mut queued);
                    this.when_full(shard, policy)
                };
                match route {
                    Ok(route) => {
                        shard.stats.stat_shared(Stat::Submitted, 1);
                        this.count_lane_submitted(shard, lane, 1);
                        route
                    }
                    Err(reason) => {
                        refused = Some((reason, item));
                        break;
                    }
                }
            };
            let mut job = make(item);
            if let Some(t) = stamp {
                job.stamp(t);
            }
            admitted += 1;
            if let Route::Queue { reserved } = route {
                job.add_flags(if reserved {
                    INJECTED | RESERVED
                } else {
                    INJECTED
                });
                if queued.capacity() == 0 {
                    queued = this.queues.bundle_buffer();
                }
                queued.push(job);
                if queued.len() == MAX_BUNDLE {
                    this.queue_jobs(lane, &mut queued);
                }
            } else {
                this.queue_jobs(lane, &mut queued);
                Registry::dispatch_counted(this, shard, route, job, lane);
            }
        }
        this.queue_jobs(lane, &mut queued);
        // Left with a spare buffer when the last jobs were too few for a bundle.
        this.queues.recycle_buffer(queued);
        match refused {
            None => Ok(admitted),
            Some((reason, item)) => {
                // `when_full` revoked the refused task's own entry; revoke the rest.
                let rest = (k - admitted - 1) as u64;
                if rest > 0 {
                    this.revoke_n(shard, reason, rest);
                }
                batch.push(item);
                batch.extend(items);
                Err(reason)
            }
        }
    }

    /// Queues admitted jobs on `lane`'s shared queue and wakes workers for them. From
    /// `MIN_BUNDLE` jobs on they go as one bundle (one push instead of one per job, the
    /// submitter's main cost in a batch); the worker that takes it up claims the jobs one by
    /// one and leaves the bundle on the front of the lane's shared queue meanwhile, where the
    /// others claim from it too, before anything queued after it (`WorkerThread::take_up`). Leaves `jobs` empty (its buffer gone
    /// with the bundle).
    fn queue_jobs(&self, lane: usize, jobs: &mut Vec<Job>) {
        let n = jobs.len();
        if n == 0 {
            return;
        }
        let queue = &self.queues.lane(lane);
        if n < MIN_BUNDLE {
            for job in jobs.drain(..) {
                queue.shared().push_submitted(job, None);
            }
        } else {
            queue.add_bundled(n - 1);
            queue
                .shared()
                .push_submitted(Job::bundle(std::mem::take(jobs)), None);
        }
        // Wake for all `n`, not for the one bundle: the workers woken besides the one that
        // takes it up search (spin), find it on the front of the shared queue and claim
        // from it.
        self.sleep.notify_new_work_n(n);
        if let Some(reserve) = &self.lane_reserve {
            reserve.notify(self, lane);
        }
    }

    /// Puts jobs taken out of the workers' deques back on their lanes' shared queues (a
    /// retiring worker's, `purge`'s kept ones; `SharedQueue::push` keeps the spawned ones
    /// apart) and wakes workers for them. A spawned job among them wakes every sleeper: a task
    /// may wait for it in `join` or `scope`, also while the pool is paused, when only a
    /// waiting worker takes it, and the one `notify_new_work_n` chose could be an idle worker,
    /// which parks again without passing the wake on (docs/protocol.md, "Spawned jobs handed
    /// back").
    pub(crate) fn hand_back(&self, jobs: impl IntoIterator<Item = (Job, usize)>) {
        let mut n = 0;
        let mut spawned = false;
        for (job, lane) in jobs {
            spawned |= self.queues.lane(lane).shared().push(job);
            n += 1;
        }
        if spawned {
            // No F1 needed: `wake_all` takes the `sleepers` lock after the pushes, and a
            // parking worker announces itself under it before its re-check. Either it is
            // listed and woken, or the pushes happen before its re-check.
            self.sleep.wake_all();
        } else if n > 0 {
            // F1 and the state test, as for any push to a shared queue.
            self.sleep.notify_new_work_n(n);
        }
    }

    /// Puts jobs from outside that were taken from `lane`'s shared queue as the pool got
    /// paused, and that their taker will not run (the lane reserve, which does not wait for
    /// the resume; a worker that leaves with them kept), back where they were taken from as
    /// nearly as a queue allows: on the front of that queue, as one bundle, in the order they
    /// were taken, ahead of the bundles there (`SharedQueue::put_back_front`). Every take
    /// from the lane looks at the front first, so each starts before the later tasks of its
    /// submitter still queued ("FIFO within a lane"); on the injector, a worker took those
    /// from their ring first. Then F1 and wakes for them, as after any push to a shared
    /// queue: a worker that looked while we held them may be asleep.
    pub(crate) fn put_back_paused(&self, lane: usize, jobs: Vec<Job>) {
        let n = jobs.len();
        if n == 0 {
            return;
        }
        debug_assert!(
            jobs.iter().all(|j| j.flags() & INJECTED != 0),
            "flock: only jobs from outside are kept from a pause"
        );
        let queue = self.queues.lane(lane);
        // The `front` canary puts them on the back of the lane's injector, behind what was
        // queued since, to prove that `loom_the_reserve_gives_back_a_task_taken_as_the_pool_pauses_in_front`
        // catches it.
        if canary(Canary::Front) {
            jobs.into_iter().for_each(|job| {
                queue.shared().push(job);
            });
            self.sleep.notify_new_work_n(n);
            return;
        }
        // The bundle's jobs beyond its entry, as `queue_jobs` counts a batch's, so that
        // `Stats::queued` counts each once (each claim counts `LaneStat::Claimed`).
        queue.add_bundled(n - 1);
        queue
            .shared()
            .put_back_front(Job::bundle(jobs).into_bundle());
        self.sleep.notify_new_work_n(n);
    }

    /// Lets go of a handle on a bundle; the last one keeps the bundle's buffer for the next
    /// batch. Reusing them keeps a batch off the allocator, whose lock the submitter
    /// (allocating) and the workers (freeing) otherwise contend for.
    pub(crate) fn release_bundle(&self, bundle: Arc<Bundle>) {
        #[cfg(not(flock_loom))]
        if let Some(bundle) = Arc::into_inner(bundle) {
            self.queues.recycle_buffer(bundle.into_buffer());
        }
        #[cfg(flock_loom)]
        drop(bundle);
    }

    /// A bundle's queue entry taken from a queue and not put back: the bundle is empty, or
    /// its last job was just claimed (see `LaneQueue::bundled`).
    pub(crate) fn bundle_entry_dropped(&self, lane: usize, bundle: Arc<Bundle>) {
        self.queues.lane(lane).add_bundled(1);
        self.release_bundle(bundle);
    }

    fn count_lane_submitted(&self, shard: &Shard, lane: usize, n: u64) {
        if self.queues.lane_count() > 1 {
            shard.stats.lane_shared(LaneStat::Submitted, lane, n);
        }
    }

    /// Sends an admitted job where its route says, on `lane`.
    #[inline]
    pub(crate) fn dispatch(
        this: &Arc<Registry>,
        shard: &Shard,
        route: Route,
        job: Job,
        lane: usize,
    ) {
        Registry::dispatch_with(this, shard, route, lane, || job);
    }

    /// `dispatch` of the job `make` makes. `Pool::submit` makes its job here, so that on the
    /// usual route it is made in its ring slot (`SharedQueue::push_submitted_with`).
    #[inline(always)]
    pub(crate) fn dispatch_with(
        this: &Arc<Registry>,
        shard: &Shard,
        route: Route,
        lane: usize,
        make: impl FnOnce() -> Job,
    ) {
        this.count_lane_submitted(shard, lane, 1);
        let stamp = this.latency.as_ref().map(|_| this.now_ns());
        if let Route::Queue { reserved } = route {
            // Counted `Submitted` where it lands: on the submitter's ring (a plain store) or
            // on `shard`.
            return this.enqueue(lane, reserved, stamp, Some(&shard.stats), make);
        }
        shard.stats.stat_shared(Stat::Submitted, 1);
        Registry::dispatch_counted(this, shard, route, make().tag(0, stamp), lane);
    }

    /// Queues an admitted job, the one `make` makes (queued at `stamp`), on `lane`'s shared
    /// queue and wakes for it; with `count`, it is counted `Submitted` too (see
    /// `SharedQueue::push_submitted`).
    #[inline(always)]
    fn enqueue(
        &self,
        lane: usize,
        reserved: bool,
        stamp: Option<u64>,
        count: Option<&StatCounts>,
        make: impl FnOnce() -> Job,
    ) {
        let flags = if reserved {
            INJECTED | RESERVED
        } else {
            INJECTED
        };
        self.queues
            .lane(lane)
            .shared()
            .push_submitted_with(count, flags, stamp, make);
        if let Some(reserve) = &self.lane_reserve {
            // The reserve's wake-up test relies on F1 (docs/protocol.md, "The lane
            // reserve"), so a pool with one pays it on every push.
            self.sleep.notify_new_work();
            reserve.notify(self, lane);
        } else {
            let shared = &self.queues.lane(lane).shared();
            self.sleep.notify_injected(|| shared.len());
        }
    }

    fn dispatch_counted(this: &Arc<Registry>, shard: &Shard, route: Route, job: Job, lane: usize) {
        match route {
            Route::Queue { reserved } => this.enqueue(lane, reserved, None, None, || job),
            Route::Caller => {
                shard.stats.stat_shared(Stat::CallerRuns, 1);
                this.run_off_worker(shard, job, lane);
            }
            Route::Helper => Registry::run_on_helper(this, shard, job, lane),
        }
    }

    /// The lane of a task submitted from a thread that is not one of our workers, when the
    /// caller named `lane` (or not): the lane of the innermost task this thread runs for us
    /// off the workers, if any, else the first.
    #[inline]
    pub(crate) fn outside_lane(&self, lane: Option<usize>) -> usize {
        if self.queues.lane_count() == 1 {
            return 0; // one lane: no thread-local lookup (28 instructions a submit, callgrind)
        }
        lane.unwrap_or_else(|| OffWorker::lane_here(ptr_id(self)).unwrap_or(0))
    }

    /// Runs a counted job on a thread that is not a worker, counting and reporting its end.
    pub(crate) fn run_off_worker(&self, shard: &Shard, job: Job, lane: usize) {
        let timing = self
            .latency
            .as_ref()
            .map(|l| (l, job.queued_at_ns(), self.now_ns()));
        let counted = job.flags() & COUNTED != 0;
        // The panic report runs inside the frame too: a panic handler that waits for the
        // pool would wait for this task, which is outstanding until counted below.
        let frame = OffWorker {
            registry: ptr_id(self),
            lane,
        };
        let end = frames::enter(frame, || {
            match catch_unwind(AssertUnwindSafe(|| job.run())) {
                Ok(Outcome::Done) => Some(Progress::Completed),
                Ok(Outcome::Panicked) => Some(Progress::Panicked),
                Ok(Outcome::Skipped) => None,
                Err(payload) => {
                    self.report_panic(None, payload);
                    Some(Progress::Panicked)
                }
            }
        });
        let Some(end) = end else {
            return;
        };
        // Every job admitted from outside is counted; the lane reserve may also take up an
        // uncounted one a worker's queue handed back (as a worker counts only `COUNTED`).
        if counted {
            if let Some((latency, queued, start)) = timing {
                let shard = latency.external();
                shard.wait.record_shared(start.saturating_sub(queued));
                shard.run.record_shared(self.now_ns().saturating_sub(start));
            }
            if self.queues.lane_count() > 1 {
                shard.stats.lane_shared(LaneStat::Executed, lane, 1);
            }
            shard.progress.add_shared(end, 1);
        }
        self.after_finish_off_worker();
    }

    #[cold]
    fn run_on_helper(this: &Arc<Registry>, shard: &Shard, job: Job, lane: usize) {
        let slot = std::sync::Arc::new(Mutex::new(Some(job)));
        let theirs = slot.clone();
        let registry = this.clone();
        let spawned = thread::spawn("flock-helper".into(), None, move || {
            if let Some(job) = theirs.lock().take() {
                // Counted here, on its thread (a thread the OS refused counts it as run by
                // its caller, below), and before it runs: a `wait()` that returns after it
                // reads the count with it.
                let shard = registry.shards.external();
                shard.stats.stat_shared(Stat::SpawnedThread, 1);
                registry.run_off_worker(shard, job, lane);
            }
            registry.gate.give_back_helper_slot();
        });
        match spawned {
            Ok(handle) => {
                this.crew.add_helper(handle);
            }
            Err(_) => {
                // The OS refused a thread: run the task here rather than lose it, counted as
                // what it is, a task run on its submitting thread.
                shard.stats.stat_shared(Stat::CallerRuns, 1);
                this.gate.give_back_helper_slot();
                if let Some(job) = slot.lock().take() {
                    this.run_off_worker(shard, job, lane);
                }
            }
        }
    }

    /// Whether the calling thread, not a worker, is running one of our tasks now (the
    /// caller under `CallerRuns`, a helper thread, the lane reserve): waiting for the pool
    /// from there would wait for that task itself.
    pub(crate) fn runs_task_off_worker_here(&self) -> bool {
        OffWorker::lane_here(ptr_id(self)).is_some()
    }
}

/// A registry's address, as `OFF_WORKER` keeps it.
fn ptr_id(registry: &Registry) -> usize {
    std::ptr::from_ref(registry) as usize
}
