//! `spawn-tree`: tasks that spawn tasks from inside the pool. A binary tree over 1,000,000
//! leaves: every node is a task; an inner node spawns its two halves, a leaf bumps a counter
//! (1,999,999 tasks, all but the root spawned from inside). Throughput in tasks/s.
//!
//! flock twice: `flock` through `Pool::scope` (`Scope::spawn`, the tree borrows the counter)
//! and `flock-submit`, a task calling `Pool::submit` through a clone of an `Arc` that owns
//! the pool, waited on with `Pool::wait`. Against: `rayon-scope` (`ThreadPool::scope`, the
//! same shape as flock's scope: the target compares these two), and, submitting through an
//! `Arc` like `flock-submit`, rayon (`ThreadPool::spawn` from inside), threadpool, tokio
//! (`spawn` from inside the runtime) and a plain crossbeam-channel pool; those have no
//! wait-for-all (threadpool's `join` is used) so each node counts down a shared latch.
mod common;

use common::peers::{retire, Kind};
use common::workloads::{spawn_tree_flock_scope, spawn_tree_rayon_scope, tree_tasks, TREE_LEAVES};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;

fn spawn_tree(c: &mut Criterion) {
    let mut g = common::group(c, "spawn-tree", Duration::from_secs(8));
    g.throughput(Throughput::Elements(tree_tasks(TREE_LEAVES) as u64));
    {
        let flock = common::peers::Flock::new();
        g.bench_function("flock", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| spawn_tree_flock_scope(&flock.pool, TREE_LEAVES))
                    .sum()
            })
        });
    }
    {
        let rayon = common::peers::Rayon::new();
        g.bench_function("rayon-scope", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| spawn_tree_rayon_scope(&rayon.0, TREE_LEAVES))
                    .sum()
            })
        });
    }
    for kind in Kind::POOLS {
        let pool = kind.make();
        let name = if kind == Kind::Flock {
            "flock-submit"
        } else {
            pool.name()
        };
        g.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| pool.spawn_tree(TREE_LEAVES)).sum())
        });
        retire(pool);
    }
    g.finish();
}

criterion_group!(benches, spawn_tree);
criterion_main!(benches);
