//! The workload bodies. Each returns the measured time (or samples) of one run and asserts
//! that every task ran exactly once.

use super::peers::Runner;
use super::{cpu_ns_between, cpu_work, thread_cpu_ns, CountDown};
use crossbeam_utils::CachePadded;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Sizes of the workloads (the names of the criterion groups say the same).
pub const ONE_SUBMITTER_TASKS: usize = 1_000_000;
pub const SUBMITTER_THREADS: usize = 100;
pub const TASKS_PER_SUBMITTER: usize = 10_000;
pub const CPU_TASKS: usize = 200_000;
pub const CPU_TASK_US: u64 = 1;
pub const TREE_LEAVES: usize = 1_000_000;
pub const FIB_N: u32 = 30;
pub const BURST_TASKS: usize = 100;
pub const BURST_TASK_US: u64 = 2;
pub const BURST_IDLE: Duration = Duration::from_millis(1);
pub const WAKE_IDLE: Duration = Duration::from_millis(5);
pub const IDLE_WARM_TASKS: usize = 100_000;
pub const IDLE_WINDOW: Duration = Duration::from_secs(1);
pub const BULK_TASKS: usize = 1_000_000;

/// What a run's tasks share: the hit counter every task body bumps, and the CountDown of
/// pools that cannot wait for all.
pub struct Shared {
    pub hits: AtomicUsize,
    done: CountDown,
}

impl Shared {
    pub fn new(tasks: usize) -> Arc<Shared> {
        Arc::new(Shared {
            hits: AtomicUsize::new(0),
            done: CountDown::new(tasks),
        })
    }

    /// The end of every task: the hit, plus the CountDown where the pool has no wait.
    #[inline]
    fn hit<R: Runner>(&self) {
        self.hits.fetch_add(1, Relaxed);
        if !R::WAITS {
            self.done.count_down();
        }
    }

    /// Waits for every task: the pool's own wait, or the CountDown.
    fn wait<R: Runner>(&self, pool: &R) {
        if R::WAITS {
            pool.wait_all();
        } else {
            self.done.wait();
        }
    }

    fn assert_hits(&self, expected: usize) {
        assert_eq!(
            self.hits.load(Relaxed),
            expected,
            "every task ran exactly once"
        );
    }
}

/// `1u-1Mt`: one thread submits `tasks` near-empty tasks, then waits for all.
pub fn one_submitter<R: Runner>(pool: &R, tasks: usize) -> Duration {
    let shared = Shared::new(tasks);
    let start = Instant::now();
    for _ in 0..tasks {
        let s = shared.clone();
        pool.execute(move || s.hit::<R>());
    }
    shared.wait(pool);
    let took = start.elapsed();
    shared.assert_hits(tasks);
    took
}

/// `1u-1Mt`'s body with no pool. The outside thread clones the shared `Arc` per task and
/// publishes it in slot `i` of an array touched before the clock starts;
/// `runners` plain threads take the slots `i ≡ r (mod runners)` (no shared head, no count of
/// pending work, 8 slots a cache line) and do the task's hit and the `Arc`'s drop, spinning
/// (then yielding) on a slot not yet filled. What is left is what the body costs on the
/// machine when tasks are handed over one at a time: its reference count's line moving
/// between the submitter and the runners, which every pool pays too. A reference, not a
/// bound: nothing shows a pool cannot beat it (runners that lag 16 to 256 slots behind did
/// not, `drain_probe`-style runs of 2026-11-26).
/// Timed from the first publication to the last runner's exit.
pub fn one_submitter_no_pool(runners: usize, tasks: usize) -> Duration {
    use std::sync::atomic::AtomicPtr;
    let shared = Shared::new(tasks);
    // Collected, so every page is touched (and zeroed) before the clock starts.
    let slots: Arc<Vec<AtomicPtr<Shared>>> = Arc::new(
        (0..tasks)
            .map(|_| AtomicPtr::new(std::ptr::null_mut()))
            .collect(),
    );
    let go = Arc::new(std::sync::Barrier::new(runners + 1));
    let threads: Vec<_> = (0..runners)
        .map(|r| {
            let (slots, go) = (slots.clone(), go.clone());
            thread::spawn(move || {
                go.wait();
                for i in (r..tasks).step_by(runners) {
                    let mut spins = 0u32;
                    let p = loop {
                        // Acquire: pairs with the Release store that published the `Arc`.
                        let p = slots[i].load(std::sync::atomic::Ordering::Acquire);
                        if !p.is_null() {
                            break p;
                        }
                        spins += 1;
                        if spins > 64 {
                            thread::yield_now();
                        } else {
                            std::hint::spin_loop();
                        }
                    };
                    // SAFETY: `p` came from `Arc::into_raw` below, and slot `i` is read by
                    // this runner alone, once.
                    let s = unsafe { Arc::from_raw(p.cast_const()) };
                    s.hits.fetch_add(1, Relaxed);
                }
            })
        })
        .collect();
    go.wait();
    let start = Instant::now();
    for slot in slots.iter() {
        let p = Arc::into_raw(shared.clone()).cast_mut();
        slot.store(p, std::sync::atomic::Ordering::Release);
    }
    for t in threads {
        t.join().expect("no-pool runner");
    }
    let took = start.elapsed();
    shared.assert_hits(tasks);
    took
}

/// `bulk-1Mt`'s task: the 1u-1Mt body (a relaxed hit on a counter held through an `Arc`),
/// made the same way for both ways of submitting it.
fn bulk_task(shared: &Arc<Shared>) -> impl FnOnce() + Send + 'static {
    let s = shared.clone();
    move || s.hit::<super::peers::Flock>()
}

/// `bulk-1Mt`, one at a time: one outside thread submits `tasks` near-empty tasks with
/// `Pool::submit`, then waits for all with `Pool::wait` (flock's 1u-1Mt, on a given pool).
pub fn bulk_submit_each(pool: &flock::Pool, tasks: usize) -> Duration {
    let shared = Shared::new(tasks);
    let start = Instant::now();
    for _ in 0..tasks {
        if pool.submit(bulk_task(&shared)).is_err() {
            panic!("flock refused a task");
        }
    }
    pool.wait().expect("flock wait");
    let took = start.elapsed();
    shared.assert_hits(tasks);
    took
}

/// `bulk-1Mt`, as one batch: the same `tasks` tasks, made lazily by an iterator handed to
/// `Pool::submit_batch` in one call, then `Pool::wait`.
pub fn bulk_submit_batch(pool: &flock::Pool, tasks: usize) -> Duration {
    let shared = Shared::new(tasks);
    let start = Instant::now();
    let accepted = pool.submit_batch((0..tasks).map(|_| bulk_task(&shared)));
    assert_eq!(
        accepted.ok(),
        Some(tasks),
        "flock refused part of the batch"
    );
    pool.wait().expect("flock wait");
    let took = start.elapsed();
    shared.assert_hits(tasks);
    took
}

/// Per-worker hit counters of `bulk-1Mt-own`'s tasks, each on its own cache line (index 255:
/// a task run off the pool's workers, which does not happen with `Backpressure::Block`).
static OWN_HITS: [CachePadded<AtomicUsize>; 256] =
    [const { CachePadded::new(AtomicUsize::new(0)) }; 256];

fn own_hits() -> usize {
    OWN_HITS.iter().map(|c| c.load(Relaxed)).sum()
}

/// `bulk-1Mt-own`'s task, a diagnostic beside `bulk-1Mt`: the same size of closure (one
/// word, its index, where `bulk_task` holds an `Arc`), but its hit goes to a counter of the
/// worker that runs it. No cache line is shared between tasks, or with the submitter, so
/// what is left to measure is the pool's own cost of taking tasks in and handing them out.
fn own_task(i: usize) -> impl FnOnce() + Send + 'static {
    move || {
        black_box(i);
        let w = flock::current_worker_index().map_or(255, |w| w.min(254));
        OWN_HITS[w].fetch_add(1, Relaxed);
    }
}

/// `bulk-1Mt-own`, one at a time (`Pool::submit`), then `Pool::wait`.
pub fn bulk_own_each(pool: &flock::Pool, tasks: usize) -> Duration {
    let before = own_hits();
    let start = Instant::now();
    for i in 0..tasks {
        if pool.submit(own_task(i)).is_err() {
            panic!("flock refused a task");
        }
    }
    pool.wait().expect("flock wait");
    let took = start.elapsed();
    assert_eq!(own_hits() - before, tasks, "every task ran exactly once");
    took
}

/// `bulk-1Mt-own`, as one `Pool::submit_batch`, then `Pool::wait`.
pub fn bulk_own_batch(pool: &flock::Pool, tasks: usize) -> Duration {
    let before = own_hits();
    let start = Instant::now();
    let accepted = pool.submit_batch((0..tasks).map(own_task));
    assert_eq!(
        accepted.ok(),
        Some(tasks),
        "flock refused part of the batch"
    );
    pool.wait().expect("flock wait");
    let took = start.elapsed();
    assert_eq!(own_hits() - before, tasks, "every task ran exactly once");
    took
}

/// `100u-10Kt`: `threads` threads each submit `per_thread` near-empty tasks at once, then
/// the measuring thread waits for all (after the submitters are joined). Timed from the
/// first submitter past the start barrier to the end of the wait.
pub fn many_submitters<R: Runner>(pool: &R, threads: usize, per_thread: usize) -> Duration {
    let shared = Shared::new(threads * per_thread);
    let go = std::sync::Barrier::new(threads + 1);
    // The clock starts when the first submitter is past the barrier (not when the measuring
    // thread is: with 100 runnable threads on a few cores it may be descheduled for long).
    let first = std::sync::OnceLock::new();
    thread::scope(|scope| {
        for _ in 0..threads {
            let (shared, go, first) = (&shared, &go, &first);
            scope.spawn(move || {
                go.wait();
                first.get_or_init(Instant::now);
                for _ in 0..per_thread {
                    let s = shared.clone();
                    pool.execute(move || s.hit::<R>());
                }
            });
        }
        go.wait();
    });
    let start = *first.get().expect("submitters ran");
    shared.wait(pool);
    let took = start.elapsed();
    shared.assert_hits(threads * per_thread);
    took
}

/// `cpu-1us`: one thread submits `tasks` tasks of about `us` µs of CPU each, then waits.
pub fn cpu_tasks<R: Runner>(pool: &R, tasks: usize, us: u64) -> Duration {
    super::spins_per_us(); // calibrated before the clock starts
    let shared = Shared::new(tasks);
    let start = Instant::now();
    for _ in 0..tasks {
        let s = shared.clone();
        pool.execute(move || {
            cpu_work(us);
            s.hit::<R>();
        });
    }
    shared.wait(pool);
    let took = start.elapsed();
    shared.assert_hits(tasks);
    took
}

/// The same `tasks` bodies run one after another on the calling thread: the sequential time
/// the ideal parallel time is derived from.
pub fn cpu_tasks_sequential(tasks: usize, us: u64) -> Duration {
    super::spins_per_us();
    let start = Instant::now();
    for _ in 0..tasks {
        cpu_work(us);
    }
    start.elapsed()
}

/// Tasks in a binary spawn tree over `leaves` leaves: every node is a task.
pub fn tree_tasks(leaves: usize) -> usize {
    2 * leaves - 1
}

/// `spawn-tree` for fire-and-forget pools: the root is submitted from outside; every inner
/// node submits its two halves from inside the pool (through a clone of the pool's `Arc`);
/// leaves bump the counter.
pub fn spawn_tree<R: Runner>(pool: &Arc<R>, leaves: usize) -> Duration {
    // Owns its clones and drops the pool's before counting down, so the measuring thread
    // never sees the end while a task still holds the pool (the last owner would then drop
    // it on a worker thread).
    fn node<R: Runner>(pool: Arc<R>, shared: Arc<Shared>, len: usize) {
        if len > 1 {
            let half = len / 2;
            for part in [half, len - half] {
                let (p, s) = (pool.clone(), shared.clone());
                pool.execute(move || node(p, s, part));
            }
            drop(pool);
            if !R::WAITS {
                shared.done.count_down();
            }
        } else {
            drop(pool);
            shared.hit::<R>();
        }
    }
    let shared = Shared::new(tree_tasks(leaves));
    let start = Instant::now();
    let (p, s) = (pool.clone(), shared.clone());
    pool.execute(move || node(p, s, leaves));
    shared.wait(&**pool);
    let took = start.elapsed();
    shared.assert_hits(leaves);
    took
}

/// `spawn-tree` through `flock::Pool::scope`: every inner node spawns its halves in the scope.
pub fn spawn_tree_flock_scope(pool: &flock::Pool, leaves: usize) -> Duration {
    fn node<'s>(scope: &flock::Scope<'s>, hits: &'s AtomicUsize, len: usize) {
        if len > 1 {
            let half = len / 2;
            scope.spawn(move |s| node(s, hits, half));
            scope.spawn(move |s| node(s, hits, len - half));
        } else {
            hits.fetch_add(1, Relaxed);
        }
    }
    let hits = AtomicUsize::new(0);
    let start = Instant::now();
    pool.scope(|s| s.spawn(|s| node(s, &hits, leaves)));
    let took = start.elapsed();
    assert_eq!(hits.load(Relaxed), leaves);
    took
}

/// `spawn-tree` through `rayon::ThreadPool::scope`, the same shape.
pub fn spawn_tree_rayon_scope(pool: &rayon::ThreadPool, leaves: usize) -> Duration {
    fn node<'s>(scope: &rayon::Scope<'s>, hits: &'s AtomicUsize, len: usize) {
        if len > 1 {
            let half = len / 2;
            scope.spawn(move |s| node(s, hits, half));
            scope.spawn(move |s| node(s, hits, len - half));
        } else {
            hits.fetch_add(1, Relaxed);
        }
    }
    let hits = AtomicUsize::new(0);
    let start = Instant::now();
    pool.scope(|s| s.spawn(|s| node(s, &hits, leaves)));
    let took = start.elapsed();
    assert_eq!(hits.load(Relaxed), leaves);
    took
}

/// fib(n) with every call above the leaves a `flock::Pool::join`.
pub fn fib_flock(pool: &flock::Pool, n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let (a, b) = pool.join(|| fib_flock(pool, n - 1), || fib_flock(pool, n - 2));
    a + b
}

/// fib(n) with every call above the leaves a `rayon::join` (call inside `install`).
pub fn fib_rayon(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1), || fib_rayon(n - 2));
    a + b
}

/// fib(n), plain recursion, the same shape with no join.
pub fn fib_seq(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    black_box(fib_seq(n - 1)) + black_box(fib_seq(n - 2))
}

/// Joins (inner calls) in the fib(n) recursion: fib(n + 1) − 1.
pub fn fib_joins(n: u32) -> usize {
    let (mut a, mut b) = (0usize, 1usize);
    for _ in 0..=n {
        (a, b) = (b, a + b);
    }
    a - 1
}

/// Times one `fib(n)` through `flock::Pool::join`, checking the result.
pub fn time_fib_flock(pool: &flock::Pool, n: u32) -> Duration {
    fib_spent(FibRun::Flock(pool), n).wall
}

/// Times one `fib(n)` through `rayon::join` inside `pool.install`, checking the result.
pub fn time_fib_rayon(pool: &rayon::ThreadPool, n: u32) -> Duration {
    fib_spent(FibRun::Rayon(pool), n).wall
}

/// One `fib(n)` run's wall time and the CPU time the whole process used over it (every
/// thread: the workers, the caller, anything else of ours awake), the result's check
/// outside both.
#[derive(Clone, Copy)]
pub struct FibSpent {
    pub wall: Duration,
    pub cpu: Duration,
}

/// Runs `fib(n)` on `run` (sequentially, or through a pool's joins), measuring [`FibSpent`].
pub fn fib_spent(run: FibRun<'_>, n: u32) -> FibSpent {
    let cpu0 = super::process_cpu_ns();
    let start = Instant::now();
    let v = match run {
        FibRun::Seq => fib_seq(black_box(n)),
        FibRun::Flock(pool) => fib_flock(pool, black_box(n)),
        FibRun::Rayon(pool) => pool.install(|| fib_rayon(black_box(n))),
    };
    let wall = start.elapsed();
    let cpu = Duration::from_nanos(super::process_cpu_ns().saturating_sub(cpu0));
    assert_eq!(v, fib_seq(n));
    FibSpent { wall, cpu }
}

/// Who runs [`fib_spent`]'s `fib`.
#[derive(Clone, Copy)]
pub enum FibRun<'a> {
    Seq,
    Flock(&'a flock::Pool),
    Rayon(&'a rayon::ThreadPool),
}

/// Times one sequential `fib(n)`.
pub fn time_fib_seq(n: u32) -> Duration {
    fib_spent(FibRun::Seq, n).wall
}

/// `burst`: `bursts` times, sleep [`BURST_IDLE`] (the workers go idle), then submit `tasks`
/// tasks of about `us` µs and wait. Returns each burst's time from its first submit to the
/// return of its wait; the idle sleep is not in it.
pub fn bursts<R: Runner>(pool: &R, bursts: usize, tasks: usize, us: u64) -> Vec<Duration> {
    super::spins_per_us();
    (0..bursts)
        .map(|_| {
            thread::sleep(BURST_IDLE);
            let shared = Shared::new(tasks);
            let start = Instant::now();
            for _ in 0..tasks {
                let s = shared.clone();
                pool.execute(move || {
                    cpu_work(us);
                    s.hit::<R>();
                });
            }
            shared.wait(pool);
            let took = start.elapsed();
            shared.assert_hits(tasks);
            took
        })
        .collect()
}

/// `wake-latency`: `samples` times, sleep [`WAKE_IDLE`] so the workers park, then submit one
/// task that reads the clock first thing. A sample is submit call → that reading.
pub fn wake_latency<R: Runner>(pool: &R, samples: usize) -> Vec<Duration> {
    (0..samples)
        .map(|_| {
            let shared = Shared::new(1);
            let ran_at = Arc::new(Mutex::new(None::<Instant>));
            let (s, slot) = (shared.clone(), ran_at.clone());
            thread::sleep(WAKE_IDLE);
            let submitted = Instant::now();
            pool.execute(move || {
                let now = Instant::now();
                *slot.lock().unwrap() = Some(now);
                s.hit::<R>();
            });
            shared.wait(pool);
            let ran = ran_at.lock().unwrap().expect("the task ran");
            ran.saturating_duration_since(submitted)
        })
        .collect()
}

/// The baseline of `wake-latency`: a bare futex wake. A thread blocked in
/// `std::thread::park` (a futex on Linux) is unparked after [`WAKE_IDLE`]; a sample is the
/// `unpark` call → the woken thread's first clock reading.
pub fn futex_wake_latency(samples: usize) -> Vec<Duration> {
    use std::sync::atomic::AtomicBool;
    let go = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel::<Instant>();
    let g = go.clone();
    let sleeper = thread::spawn(move || {
        for _ in 0..samples {
            while !g.swap(false, std::sync::atomic::Ordering::Acquire) {
                thread::park();
            }
            let now = Instant::now();
            tx.send(now).expect("measurer alive");
        }
    });
    let out = (0..samples)
        .map(|_| {
            thread::sleep(WAKE_IDLE);
            let woken = Instant::now();
            go.store(true, std::sync::atomic::Ordering::Release);
            sleeper.thread().unpark();
            rx.recv()
                .expect("sleeper alive")
                .saturating_duration_since(woken)
        })
        .collect();
    sleeper.join().expect("sleeper");
    out
}

/// `idle-cpu`: runs `warm_tasks` near-empty tasks, then measures the CPU time all threads
/// but the calling one use while the caller sleeps for `window`. Returns ms of CPU per second.
pub fn idle_cpu_ms_per_s<R: Runner>(pool: &R, warm_tasks: usize, window: Duration) -> f64 {
    one_submitter(pool, warm_tasks);
    let before = thread_cpu_ns();
    let start = Instant::now();
    thread::sleep(window);
    let after = thread_cpu_ns();
    let elapsed = start.elapsed();
    cpu_ns_between(&before, &after) as f64 / 1e6 / elapsed.as_secs_f64()
}

/// `qsort`: elements sorted per run (4 Mi pseudo-random `u64`).
pub const QSORT_LEN: usize = 4 << 20;
/// `qsort`: slices at most this long are sorted in place with no more forks.
pub const QSORT_CUTOFF: usize = 2048;

/// `qsort`'s input: `len` pseudo-random `u64` (xorshift64, a fixed seed: every run and every
/// pool sorts the same data).
pub fn qsort_input(len: usize) -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

/// Hoare partition around the median of the first, middle and last elements; returns the
/// pivot's final index (everything before it is ≤ it, everything after ≥).
fn partition(v: &mut [u64]) -> usize {
    let (last, mid) = (v.len() - 1, v.len() / 2);
    if v[mid] < v[0] {
        v.swap(mid, 0);
    }
    if v[last] < v[0] {
        v.swap(last, 0);
    }
    if v[last] < v[mid] {
        v.swap(last, mid);
    }
    v.swap(mid, last);
    let pivot = v[last];
    let mut store = 0;
    for i in 0..last {
        if v[i] < pivot {
            v.swap(i, store);
            store += 1;
        }
    }
    v.swap(store, last);
    store
}

/// Quicksort with both halves of every partition through `flock::Pool::join`.
pub fn qsort_flock(pool: &flock::Pool, v: &mut [u64]) {
    if v.len() <= QSORT_CUTOFF {
        v.sort_unstable();
        return;
    }
    let p = partition(v);
    let (lo, hi) = v.split_at_mut(p);
    pool.join(|| qsort_flock(pool, lo), || qsort_flock(pool, &mut hi[1..]));
}

/// The same quicksort through `rayon::join` (call inside `install`).
pub fn qsort_rayon(v: &mut [u64]) {
    if v.len() <= QSORT_CUTOFF {
        v.sort_unstable();
        return;
    }
    let p = partition(v);
    let (lo, hi) = v.split_at_mut(p);
    rayon::join(|| qsort_rayon(lo), || qsort_rayon(&mut hi[1..]));
}

/// The same quicksort with no forks: `qsort`'s sequential reference.
fn qsort_sequential(v: &mut [u64]) {
    if v.len() <= QSORT_CUTOFF {
        v.sort_unstable();
        return;
    }
    let p = partition(v);
    let (lo, hi) = v.split_at_mut(p);
    qsort_sequential(lo);
    qsort_sequential(&mut hi[1..]);
}

/// Times `qsort`'s recursion with no forks on a copy of `input`: how long its first
/// partition took, and the whole sort. No schedule on `w` workers can beat `first + (whole -
/// first) / w`: nothing else can run before the first partition ends, and the rest is at
/// best split evenly.
pub fn time_qsort_sequential(input: &[u64]) -> (Duration, Duration) {
    let mut v = input.to_vec();
    let start = Instant::now();
    let p = partition(black_box(&mut v));
    let first = start.elapsed();
    let (lo, hi) = v.split_at_mut(p);
    qsort_sequential(lo);
    qsort_sequential(&mut hi[1..]);
    let whole = start.elapsed();
    assert_sorted(&v);
    (first, whole)
}

fn assert_sorted(v: &[u64]) {
    assert!(
        v.windows(2).all(|w| w[0] <= w[1]),
        "qsort left the data unsorted"
    );
}

/// Times one `qsort` of a copy of `input` through flock (called from outside the pool: the
/// first join goes in as one job, the rest forks on the workers), checking the result.
pub fn time_qsort_flock(pool: &flock::Pool, input: &[u64]) -> Duration {
    let mut v = input.to_vec();
    let start = Instant::now();
    qsort_flock(pool, black_box(&mut v));
    let took = start.elapsed();
    assert_sorted(&v);
    took
}

/// Times one `qsort` of a copy of `input` through rayon (inside `install`), checking it.
pub fn time_qsort_rayon(pool: &rayon::ThreadPool, input: &[u64]) -> Duration {
    let mut v = input.to_vec();
    let start = Instant::now();
    pool.install(|| qsort_rayon(black_box(&mut v)));
    let took = start.elapsed();
    assert_sorted(&v);
    took
}
