//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod refuse;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// Runs `f` on its own thread and fails the test with `what` if it has not returned within
/// `secs` seconds: a hang becomes a failure with a message, never a stuck CI.
pub fn watchdog<R: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = mpsc::channel();
    let t = std::thread::spawn(move || {
        let r = f();
        let _ = tx.send(());
        r
    });
    // Miri runs code hundreds of times slower: a hang still fails, only later.
    let secs = if cfg!(miri) { secs * 20 } else { secs };
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => t.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => match t.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("watchdog: {what} did not finish within {secs}s (hang)")
        }
    }
}

/// Counts live instances: each task captures one; dropping or running it ends it.
#[derive(Debug)]
pub struct Live(pub Arc<AtomicUsize>);

impl Live {
    pub fn new(counter: &Arc<AtomicUsize>) -> Live {
        counter.fetch_add(1, Ordering::SeqCst);
        Live(counter.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A gate a test opens to release tasks blocked on it.
#[derive(Clone, Default)]
pub struct Gate(Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>);

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }
    pub fn wait(&self) {
        let (m, c) = &*self.0;
        let mut open = m.lock().unwrap();
        while !*open {
            open = c.wait(open).unwrap();
        }
    }
    pub fn open(&self) {
        let (m, c) = &*self.0;
        *m.lock().unwrap() = true;
        c.notify_all();
    }
}

/// Opens `gate` once `pool` reports that its shutdown has begun (a state, not a delay), so a
/// test can hold tasks running across the start of `shutdown_now`. Join the returned thread.
pub fn open_when_shut_down(pool: &Arc<flock::Pool>, gate: &Gate) -> std::thread::JoinHandle<()> {
    let (pool, gate) = (pool.clone(), gate.clone());
    std::thread::spawn(move || {
        while !pool.is_shutdown() {
            std::thread::yield_now();
        }
        gate.open();
    })
}

/// Worker 0 of `pool` held in a broadcast call until the returned gate opens, so that the
/// other workers alone take what is queued meanwhile (nobody steals from them). Returns once
/// it is held, with the thread that broadcasts: open the gate, then join it.
pub fn hold_worker_0(pool: &Arc<flock::Pool>) -> (Gate, std::thread::JoinHandle<()>) {
    let (held, hold) = (Gate::new(), Gate::new());
    let holder = {
        let (pool, held, hold) = (pool.clone(), held.clone(), hold.clone());
        std::thread::spawn(move || {
            pool.broadcast(|i| {
                if i == 0 {
                    held.open();
                    hold.wait();
                }
            });
        })
    };
    held.wait();
    (hold, holder)
}

/// A task submitted to `pool` that runs until the returned gate opens; returns once it has
/// started.
pub fn running_until(pool: &flock::Pool) -> Gate {
    let (started, go) = (Gate::new(), Gate::new());
    {
        let (started, go) = (started.clone(), go.clone());
        pool.submit(move || {
            started.open();
            go.wait();
        })
        .unwrap();
    }
    started.wait();
    go
}

/// Occupies every worker of `pool` with a task blocked on the returned gate, and returns once
/// all of them are running.
pub fn stall_all(pool: &flock::Pool) -> Gate {
    let gate = Gate::new();
    let (tx, rx) = mpsc::channel();
    for _ in 0..pool.workers() {
        let (gate, tx) = (gate.clone(), tx.clone());
        pool.submit(move || {
            tx.send(()).unwrap();
            gate.wait();
        })
        .unwrap();
    }
    for _ in 0..pool.workers() {
        rx.recv_timeout(Duration::from_secs(20))
            .expect("every worker picks up a stall task");
    }
    gate
}

/// Polls `cond` until it holds: yielding at first, then napping a millisecond between tries so
/// the poll does not steal a core from the workers. Call it inside a `watchdog`, so a
/// condition that never comes fails the test instead of hanging it.
pub fn eventually(mut cond: impl FnMut() -> bool) {
    let mut tries = 0u32;
    while !cond() {
        tries += 1;
        if tries < 200 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Waits until every worker of `pool` has parked (it has run out of work and stopped
/// spinning). Call it inside a `watchdog`.
pub fn all_parked(pool: &flock::Pool) {
    eventually(|| {
        pool.stats()
            .per_worker
            .iter()
            .all(|w| w.state == flock::WorkerState::Parked)
    });
}

/// Keeps the CPU busy for `d` of wall-clock time (arithmetic, not sleep).
pub fn spin_for(d: Duration) {
    let start = std::time::Instant::now();
    let mut x = 1u64;
    while start.elapsed() < d {
        for _ in 0..64 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
    std::hint::black_box(x);
}

/// Like `stall_all`, but submits the stall tasks one at a time, each once the one before it
/// runs: the shared queue never holds two, so no worker can take a second stall task into its
/// deque along with the first (with three or more workers `stall_all` can hang that way; see
/// resize.rs, `tasks_submitted_together_all_start_while_workers_are_free`).
pub fn stall_each(pool: &flock::Pool) -> Gate {
    stall_each_in(pool, 0)
}

/// `stall_each` with stall tasks of lane `lane` (0 is the lane `submit` uses from outside).
pub fn stall_each_in(pool: &flock::Pool, lane: usize) -> Gate {
    let gate = Gate::new();
    let (tx, rx) = mpsc::channel();
    for _ in 0..pool.workers() {
        let (gate, tx) = (gate.clone(), tx.clone());
        pool.submit_to(lane, move || {
            tx.send(()).unwrap();
            gate.wait();
        })
        .unwrap();
        rx.recv().expect("a free worker picks up the stall task");
    }
    gate
}

/// A pool of `workers` whose worker threads are named `"{name}-{index}"`.
pub fn named(name: &'static str, workers: usize) -> flock::Pool {
    flock::Pool::builder()
        .workers(workers)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .unwrap()
}

/// The calling thread's name, or "" when it has none.
pub fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_owned()
}

/// This thread's id (`/proc/thread-self` is `/proc/PID/task/TID`).
pub fn this_thread_id() -> u64 {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    link.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

/// Whether thread `tid` of this process is asleep (state `S` in `/proc/self/task/TID/stat`):
/// for a test that must act only once a thread blocked (in a futex wait: its only way to sleep
/// at that point).
pub fn asleep(tid: u64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    // The state follows the command name, which is in parentheses and may hold spaces.
    stat.rsplit_once(") ")
        .map(|(_, rest)| rest.starts_with('S'))
        == Some(true)
}

/// The id of this process's thread called `name` (its `comm`, as `/proc/self/task` lists
/// it), if there is one.
pub fn thread_named(name: &str) -> Option<u64> {
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .filter_map(|task| task.ok())
        .find(|task| {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            comm.trim_end() == name
        })?
        .file_name()
        .to_str()?
        .parse()
        .ok()
}

/// The context switches (voluntary and not) of thread `tid` of this process, from
/// `/proc/self/task/TID/status`. A thread asleep on a futex that nobody wakes, with no timer,
/// adds none: for a test that an idle worker stays asleep, also without the `stats` feature
/// (whose `wakeups` counter reads 0 without it).
pub fn context_switches(tid: u64) -> u64 {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))
        .unwrap()
        .lines()
        .filter(|l| l.contains("ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
        .sum()
}

/// On a one-worker `pool` of capacity `capacity`: submits task 0, waits until the worker has
/// started it, then submits tasks 1 to `capacity`, which fill the queue. Each task sends its
/// number on the returned receiver when it starts, then waits for its go: sending on
/// `gos[i]` lets task `i` end.
pub fn fill_behind_a_held_task(
    pool: &flock::Pool,
    capacity: usize,
) -> (mpsc::Receiver<usize>, Vec<mpsc::Sender<()>>) {
    let (started_tx, started) = mpsc::channel::<usize>();
    let mut gos = Vec::new();
    for i in 0..=capacity {
        let (go_tx, go) = mpsc::channel::<()>();
        gos.push(go_tx);
        let started_tx = started_tx.clone();
        pool.submit(move || {
            started_tx.send(i).unwrap();
            go.recv().unwrap();
        })
        .unwrap();
        if i == 0 {
            assert_eq!(started.recv().unwrap(), 0);
        }
    }
    (started, gos)
}
