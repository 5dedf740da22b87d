//! `WorkerStats::{thread_id, os_thread_id, native_handle}`: each names the thread a task on
//! that worker runs on, is there from the start hook on, and is cleared once the thread has
//! left its slot (shutdown, retire); a slot restarted by a resize shows its new thread.

mod common;

use common::{eventually, watchdog};
use flock::{Pool, WorkerState};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

/// What the calling thread is, as `WorkerStats` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Me {
    id: ThreadId,
    os: Option<u64>,
    native: Option<u64>,
}

fn me() -> Me {
    #[cfg(target_os = "linux")]
    // SAFETY: the raw syscall has no preconditions (and is not `libc::gettid`, which the
    // pool itself uses: two routes to the same number).
    let os = Some(unsafe { libc::syscall(libc::SYS_gettid) } as u64);
    #[cfg(not(target_os = "linux"))]
    let os = None;
    #[cfg(unix)]
    // SAFETY: no preconditions.
    let native = Some(unsafe { libc::pthread_self() } as usize as u64);
    #[cfg(not(unix))]
    let native = None;
    Me {
        id: std::thread::current().id(),
        os,
        native,
    }
}

fn shown(pool: &Pool) -> Vec<Option<Me>> {
    pool.stats()
        .per_worker
        .iter()
        .map(|w| {
            w.thread_id.map(|id| Me {
                id,
                os: w.os_thread_id,
                native: w.native_handle,
            })
        })
        .collect()
}

#[test]
fn each_worker_shows_the_thread_its_tasks_run_on() {
    watchdog(60, "thread ids", || {
        let pool = Pool::builder().workers(3).build().unwrap();
        let seen = pool.broadcast(|_| me());
        assert_eq!(
            shown(&pool),
            seen.iter().copied().map(Some).collect::<Vec<_>>()
        );
        // Three different threads, none of them the caller.
        let caller = me();
        let ids: HashSet<_> = seen.iter().map(|m| m.id).chain([caller.id]).collect();
        assert_eq!(ids.len(), 4);
        if cfg!(target_os = "linux") {
            let os: HashSet<_> = seen.iter().map(|m| m.os.unwrap()).collect();
            assert_eq!(os.len(), 3);
            assert!(!os.contains(&caller.os.unwrap()));
            assert!(seen.iter().all(|m| m.native.is_some()));
        }
        // A plain task, on whichever worker runs it, sees its worker's entry.
        let (tx, rx) = std::sync::mpsc::channel();
        pool.submit(move || tx.send((flock::current_worker_index(), me())).unwrap())
            .unwrap();
        let (index, m) = rx.recv().unwrap();
        assert_eq!(shown(&pool)[index.unwrap()], Some(m));
    });
}

#[test]
fn the_start_hook_runs_on_the_thread_shown() {
    watchdog(60, "start hook", || {
        let hooked = Arc::new(Mutex::new(vec![None; 2]));
        let h = hooked.clone();
        let pool = Pool::builder()
            .workers(2)
            .on_worker_start(move |i| h.lock().unwrap()[i] = Some(me()))
            .build()
            .unwrap();
        // `build` does not wait for the hooks: a worker's slot shows its thread as soon as the
        // thread is up, and its hook may still be to come.
        eventually(|| hooked.lock().unwrap().iter().all(Option::is_some));
        let hooked = hooked.lock().unwrap().clone();
        assert_eq!(shown(&pool), hooked);
    });
}

#[test]
fn a_slot_without_a_thread_shows_none() {
    watchdog(60, "cleared ids", || {
        let pool = Pool::builder().workers(2).max_workers(2).build().unwrap();
        let first = pool.broadcast(|_| me());
        // Worker 1 retires: once it has left, its slot is not shown.
        pool.resize(1).unwrap();
        eventually(|| pool.stats().per_worker.len() == 1);
        assert_eq!(shown(&pool), [Some(first[0])]);
        // Restarted, the slot shows its new thread (thread ids are never reused).
        pool.resize(2).unwrap();
        let again = pool.broadcast(|_| me());
        assert_eq!(again[0], first[0]);
        assert_ne!(again[1].id, first[1].id);
        assert_eq!(shown(&pool), [Some(again[0]), Some(again[1])]);
        // Shut down: the slots stay shown, stopped, with no thread.
        pool.shutdown().unwrap();
        let stats = pool.stats();
        assert_eq!(stats.per_worker.len(), 2);
        for w in &stats.per_worker {
            assert_eq!(w.state, WorkerState::Stopped);
            assert_eq!(
                (w.thread_id, w.os_thread_id, w.native_handle),
                (None, None, None)
            );
        }
    });
}
