//! Where tasks wait: each lane's shared queue (`LaneQueue`), every slot's deques as thieves
//! see them (the stealers), the buffers of emptied bundles kept for reuse, and each slot's
//! mailbox of `Pool::broadcast` calls. The slots' own ends of the deques (`LocalQueues`)
//! are made here too, and held by the crew (`registry/crew.rs`) or by the worker that runs
//! the slot.

use crate::deque::{Stealer, TaskDeque, TaskStealer, Worker as Deque};
use crate::job::{Job, JobRef};
use crate::mailbox::Mailboxes;
use crate::submitq::SharedQueue;
use crate::sync::{AtomicUsize, Mutex, Ordering};

/// The most jobs in one bundle: a worker that takes one up runs them before anything else
/// of its own (`WorkerThread::claim_taken`), so this bounds how long a task spawned from
/// one of them waits behind its siblings on that worker (thieves take either meanwhile).
pub(crate) const MAX_BUNDLE: usize = 128;
/// Bundle buffers kept for reuse (`Queues::recycle_buffer`), 5 KiB each.
const SPARE_BUNDLES: usize = 32;

/// One lane's shared queue and its share.
pub(crate) struct LaneQueue {
    /// The injector and the submitting threads' rings (`submitq.rs`).
    shared: SharedQueue,
    /// Jobs put into this lane's bundles beyond one per bundle (whose queue entry `len()`
    /// counts while it is queued), plus one per bundle entry dropped for good: what
    /// `Stats::queued` adds, less the jobs claimed so far (`LaneStat::Claimed`). A gauge,
    /// not a protocol variable: Relaxed everywhere.
    bundled: AtomicUsize,
    /// Jobs from outside of this lane that workers took as the pool got paused and keep until
    /// it resumes (`WorkerThread::keep_for_resume`): in no queue, but waiting for the resume
    /// as queued jobs do (`wait_quiescent`'s `Paused`; `Stats::queued` counts them).
    kept: AtomicUsize,
    /// Spawned tasks of this lane cancelled while queued whose job is still in a queue, an
    /// empty shell (`JoinHandle::cancel`): no task, so `Stats::queued` subtracts them. Raised
    /// by the cancel, lowered when the shell is taken (its run or discard finds the task
    /// cancelled). A gauge outside the protocol (std's atomic, out of loom's sight): Relaxed.
    shells: std::sync::atomic::AtomicUsize,
    /// Virtual-time charge per nanosecond of run time, in 1/2^16 units: `2^16 / weight`
    /// (at least 1), so a lane's virtual clock advances in inverse proportion to its weight.
    stride: u64,
}

impl LaneQueue {
    fn new(submit_rings: usize, weight: u32) -> LaneQueue {
        LaneQueue {
            shared: SharedQueue::new(submit_rings),
            bundled: AtomicUsize::new(0),
            kept: AtomicUsize::new(0),
            shells: std::sync::atomic::AtomicUsize::new(0),
            stride: ((1u64 << 16) / u64::from(weight)).max(1),
        }
    }

    /// The lane's shared queue: the injector and the submitting threads' rings.
    #[inline]
    pub(crate) fn shared(&self) -> &SharedQueue {
        &self.shared
    }

    /// The lane's virtual-time charge per nanosecond of run time (see `stride`).
    #[inline]
    pub(crate) fn stride(&self) -> u64 {
        self.stride
    }

    /// `n` more jobs counted in `bundled` (see there).
    #[inline]
    pub(crate) fn add_bundled(&self, n: usize) {
        self.bundled.fetch_add(n, Ordering::Relaxed);
    }

    /// The `bundled` gauge.
    pub(crate) fn bundled(&self) -> usize {
        self.bundled.load(Ordering::Relaxed)
    }

    /// A worker keeps a job of this lane until the pool resumes.
    pub(crate) fn keep_one(&self) {
        self.kept.fetch_add(1, Ordering::Relaxed);
    }

    /// A job kept from a pause was handed out again.
    pub(crate) fn unkeep_one(&self) {
        self.kept.fetch_sub(1, Ordering::Relaxed);
    }

    /// Jobs of this lane workers keep from a pause (see `kept`).
    pub(crate) fn kept(&self) -> usize {
        self.kept.load(Ordering::Relaxed)
    }

    /// A task of this lane was cancelled while queued: its job is a shell now.
    pub(crate) fn shell_left(&self) {
        self.shells
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The shell of a cancelled task of this lane was taken from its queue.
    pub(crate) fn shell_taken(&self) {
        // Release: the take of the shell's entry from its queue comes before; a reader of
        // `shells` that sees this decrement (Acquire) then sees that entry gone
        // (`Registry::lane_queued`).
        self.shells
            .fetch_sub(1, std::sync::atomic::Ordering::Release);
    }

    /// Shells of cancelled tasks still queued (see `shells`).
    pub(crate) fn shells(&self) -> usize {
        // Acquire: pairs with `shell_taken`.
        self.shells.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// A slot's own queues, held by the worker thread that runs in the slot.
pub(crate) struct LocalQueues {
    /// One deque of tasks per lane (`Queues::stealer`).
    pub(crate) lanes: Box<[TaskDeque<Job>]>,
    /// `join`'s second halves, LIFO in every pool (`Queues::join_stealer`; only pools
    /// with one lane use it, see `join.rs`).
    pub(crate) joins: Deque<JobRef>,
}

/// Every queue tasks wait in, as all threads see them.
pub(crate) struct Queues {
    /// One shared queue per lane.
    lanes: Box<[LaneQueue]>,
    /// Every slot's deques: slot `i`'s deque of lane `l` is at `i * lanes.len() + l`.
    stealers: Box<[TaskStealer<Job>]>,
    /// Every slot's join deque (`LocalQueues::joins`), by slot.
    join_stealers: Box<[Stealer<JobRef>]>,
    /// Empty bundle buffers for reuse (`Queues::bundle_buffer`).
    spare_bundles: Mutex<Vec<Vec<Job>>>,
    /// Per worker slot, `Pool::broadcast` jobs for that worker only (`src/mailbox.rs`).
    mailboxes: Mailboxes,
}

impl Queues {
    /// The queues of `slots` slots over `lanes` (name, weight), and each slot's own ends
    /// of its deques (FIFO task deques when `fifo`; join deques are LIFO).
    pub(crate) fn new(
        slots: usize,
        lanes: &[(String, u32)],
        fifo: bool,
        submit_rings: usize,
    ) -> (Queues, Vec<LocalQueues>) {
        let deques: Vec<Box<[TaskDeque<Job>]>> = (0..slots)
            .map(|_| lanes.iter().map(|_| TaskDeque::for_pool(fifo)).collect())
            .collect();
        let stealers = deques
            .iter()
            .flat_map(|d| d.iter().map(TaskDeque::stealer))
            .collect();
        let joins: Vec<Deque<JobRef>> = (0..slots).map(|_| Deque::new_lifo()).collect();
        let join_stealers = joins.iter().map(Deque::stealer).collect();
        let queues = Queues {
            lanes: lanes
                .iter()
                .map(|&(_, weight)| LaneQueue::new(submit_rings, weight))
                .collect(),
            stealers,
            join_stealers,
            spare_bundles: Mutex::new(Vec::new()),
            mailboxes: Mailboxes::new(slots),
        };
        let locals = deques
            .into_iter()
            .zip(joins)
            .map(|(lanes, joins)| LocalQueues { lanes, joins })
            .collect();
        (queues, locals)
    }

    /// Lane `lane`'s shared queue and its share.
    #[inline]
    pub(crate) fn lane(&self, lane: usize) -> &LaneQueue {
        &self.lanes[lane]
    }

    /// The number of lanes.
    #[inline]
    pub(crate) fn lane_count(&self) -> usize {
        self.lanes.len()
    }

    /// Every lane's shared queue, by lane.
    #[inline]
    pub(crate) fn lanes(&self) -> &[LaneQueue] {
        &self.lanes
    }

    /// The thieves' end of slot `slot`'s deque of lane `lane`.
    #[inline]
    pub(crate) fn stealer(&self, slot: usize, lane: usize) -> &TaskStealer<Job> {
        &self.stealers[slot * self.lanes.len() + lane]
    }

    /// The thieves' end of slot `slot`'s join deque.
    #[inline]
    pub(crate) fn join_stealer(&self, slot: usize) -> &Stealer<JobRef> {
        &self.join_stealers[slot]
    }

    /// Every slot's task deques, each with its lane.
    pub(crate) fn lane_stealers(&self) -> impl Iterator<Item = (usize, &TaskStealer<Job>)> {
        let lanes = self.lanes.len();
        self.stealers
            .iter()
            .enumerate()
            .map(move |(i, s)| (i % lanes, s))
    }

    /// Whether any slot's deque, of tasks or of join halves, holds a job.
    pub(crate) fn deques_hold_work(&self) -> bool {
        self.stealers.iter().any(|s| !s.is_empty())
            || self.join_stealers.iter().any(|s| !s.is_empty())
    }

    /// Jobs in every slot's deque of lane `lane`.
    pub(crate) fn deque_len(&self, lane: usize) -> usize {
        let lanes = self.lanes.len();
        (0..self.stealers.len() / lanes)
            .map(|w| self.stealers[w * lanes + lane].len())
            .sum()
    }

    /// Jobs in every slot's join deque.
    pub(crate) fn joins_len(&self) -> usize {
        self.join_stealers.iter().map(|s| s.len()).sum()
    }

    /// Each slot's mailbox of `Pool::broadcast` calls.
    #[inline]
    pub(crate) fn mailboxes(&self) -> &Mailboxes {
        &self.mailboxes
    }

    /// An empty buffer for a bundle, with room for `MAX_BUNDLE` jobs: one a worker gave
    /// back after a bundle was emptied, or a new one.
    pub(crate) fn bundle_buffer(&self) -> Vec<Job> {
        if !cfg!(flock_loom) {
            if let Some(buffer) = self.spare_bundles.lock().pop() {
                return buffer;
            }
        }
        Vec::with_capacity(MAX_BUNDLE)
    }

    /// Keeps an emptied bundle buffer for the next batch.
    pub(crate) fn recycle_buffer(&self, buffer: Vec<Job>) {
        debug_assert!(buffer.is_empty());
        if cfg!(flock_loom) || buffer.capacity() != MAX_BUNDLE {
            return;
        }
        let mut spare = self.spare_bundles.lock();
        if spare.len() < SPARE_BUNDLES {
            spare.push(buffer);
        }
    }
}
