//! `JoinHandle::cancel`: a cancelled task is dropped and counted once, also when its
//! closure's destructor panics (that panic reaches `cancel`'s caller, after the books are
//! balanced).

mod common;

use common::{stall_all, watchdog};
use flock::{JoinError, Pool};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Panics when dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("closure destructor");
    }
}

#[test]
fn cancel_whose_closure_destructor_panics_balances_the_books() {
    watchdog(30, "cancel with a panicking closure destructor", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        let bomb = PanicsOnDrop;
        let queued = pool.spawn(move || {
            let _keep = &bomb;
            1
        });
        let raised = catch_unwind(AssertUnwindSafe(|| queued.cancel()));
        let payload = raised.expect_err("the destructor's panic reaches cancel's caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"closure destructor"));
        assert!(queued.is_finished());
        assert!(matches!(queued.join(), Err(JoinError::Cancelled)));
        gate.open();
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!(
            (s.submitted, s.completed, s.dropped, s.panicked, s.in_flight),
            (2, 1, 1, 0, 0)
        );
        pool.shutdown().unwrap();
    });
}

#[test]
fn cancel_of_a_plain_task_counts_it_dropped() {
    watchdog(30, "cancel", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        let queued = pool.spawn(|| 1);
        assert!(queued.cancel());
        assert!(!queued.cancel(), "a second cancel finds it ended");
        gate.open();
        assert!(matches!(queued.join(), Err(JoinError::Cancelled)));
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!(
            (s.submitted, s.completed, s.dropped, s.in_flight),
            (2, 1, 1, 0)
        );
        pool.shutdown().unwrap();
    });
}
