//! A worker's `on_worker_stop` hook runs after the worker handed its work over. If, while
//! the hook (or, during a shutdown, a task it submitted, run on that worker before it
//! leaves: `run_what_the_stop_hook_left`) waits or yields, the worker takes a task from
//! outside just as the pool gets paused, the worker keeps that task for the resume
//! (`keep_for_resume`). The worker then left with the task in its keep: the task was dropped
//! unrun and uncounted, so `Stats` showed it in flight and queued for ever and `Pool::wait`
//! never returned (the torture test's hang: in_flight 1, queued 1, the one worker left
//! parked). The leaving worker must hand a kept task over as it hands over the rest of its
//! work.
//!
//! The keep needs the pause to land between the take and the worker's re-read of the
//! pause, so each round gives it one chance: the stop hook yields until it sees the pool
//! paused, while the test submits one task and pauses at once. Worker 0 is held in a
//! broadcast call throughout, so only the retiring worker takes the task.

use flock::Pool;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

#[test]
fn a_task_kept_from_a_pause_by_a_retiring_worker_is_not_lost() {
    let armed = Arc::new(AtomicBool::new(false));
    let handle: Arc<OnceLock<Weak<Pool>>> = Arc::new(OnceLock::new());
    let (t_started, t_started_rx) = mpsc::channel::<()>();
    let (t_done, t_done_rx) = mpsc::channel::<()>();
    let hook_tx = Mutex::new((t_started, t_done));
    let (a, h) = (armed.clone(), handle.clone());
    let pool = Arc::new(
        Pool::builder()
            .workers(1)
            .max_workers(2)
            .on_worker_stop(move |i| {
                if i != 1 || !a.swap(false, SeqCst) {
                    return;
                }
                let Some(pool) = h.get().and_then(Weak::upgrade) else {
                    return;
                };
                let (t_started, t_done) = hook_tx.lock().unwrap().clone();
                // Worker 1's hook yields until it sees the pool paused (the outside task taken
                // by its last yield may be kept).
                t_started.send(()).unwrap();
                let deadline = Instant::now() + Duration::from_secs(10);
                while !pool.is_paused() && Instant::now() < deadline {
                    flock::yield_now();
                }
                t_done.send(()).unwrap();
            })
            .build()
            .unwrap(),
    );
    handle.set(Arc::downgrade(&pool)).unwrap();
    // Worker 0 busy until the end: a broadcast call, on worker 0 alone.
    let (release, hold) = mpsc::channel::<()>();
    let (busy_tx, busy) = mpsc::channel();
    let (hold, busy_tx) = (Mutex::new(hold), Mutex::new(busy_tx));
    let p = pool.clone();
    let holder = std::thread::spawn(move || {
        p.broadcast(|_| {
            busy_tx.lock().unwrap().send(()).unwrap();
            hold.lock().unwrap().recv().unwrap();
        });
    });
    busy.recv_timeout(Duration::from_secs(20)).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    // Each round is one chance for the keep; a task not taken before the pause stays queued
    // and a later round's hook takes it. Only a task lost with its worker never runs.
    let rounds = if cfg!(miri) { 5 } else { 1000 };
    let budget = Instant::now() + Duration::from_secs(15);
    let mut submitted = 0;
    while submitted < rounds && Instant::now() < budget {
        pool.resize(2).unwrap();
        armed.store(true, SeqCst);
        pool.resize(1).unwrap(); // worker 1 retires: its stop hook yields
        t_started_rx.recv_timeout(Duration::from_secs(20)).unwrap();
        let r = ran.clone();
        pool.submit(move || {
            r.fetch_add(1, SeqCst);
        })
        .unwrap();
        submitted += 1;
        pool.pause();
        t_done_rx.recv_timeout(Duration::from_secs(20)).unwrap();
        pool.resume();
    }
    release.send(()).unwrap();
    holder.join().unwrap();
    let waited = pool.wait_for(Duration::from_secs(20));
    let n = ran.load(SeqCst);
    if waited.is_err() || n != submitted {
        let stats = pool.stats();
        // Dropping the pool would wait for the lost task for ever.
        std::mem::forget(pool);
        panic!(
            "wait_for: {waited:?}; {n} of {submitted} tasks ran (in_flight {}, queued {})",
            stats.in_flight, stats.queued
        );
    }
}
