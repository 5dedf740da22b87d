//! The asymmetric barrier between a worker's unfenced local push and a parking worker's
//! re-check (`docs/protocol.md`, "Local pushes and the asymmetric barrier").
//!
//! The heavy side, `issue`, runs on the rare path (a worker about to park): on
//! Linux it is `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which returns only after
//! every other running thread of the process has executed a full memory barrier. The light
//! side, `after_local_push`, runs on every local push (and every single push of a
//! submitter onto an injector, `Sleep::notify_injected`): with the membarrier it is only a
//! compiler fence. Where the membarrier is unavailable (another OS, an old kernel, a seccomp
//! filter, Miri, loom), or the pool was built with `PoolBuilder::membarrier(false)`, the
//! light side is a SeqCst fence, the classic symmetric pairing, and parks interrupt no one.
//!
//! The choice is per pool: the heavy side of pool P only has to pair with the pushes onto
//! P's own queues, which read P's mode.

use crate::sync::{canary, fence, Canary, Ordering};
use crate::sys::membarrier as sys;
#[cfg(all(test, not(flock_loom)))]
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU8};

const HEAVY: u8 = 1;
const FENCED: u8 = 2;

/// One pool's pairing.
pub(crate) struct Barrier {
    /// `HEAVY` or `FENCED`. Set before any worker of the pool starts (`Registry::new`), so
    /// workers read it with a Relaxed load (their thread's start happens-after the store);
    /// it only ever moves from `HEAVY` to `FENCED`, never back.
    mode: AtomicU8,
    /// Whether this pool registered for the membarrier: from then on parks issue it (once
    /// per era, `Sleep::barrier_before_recheck`), also after `mode` fell back to `FENCED`,
    /// since pushes from before the fall-back skipped their fence; until `settle`.
    registered: AtomicBool,
    /// Membarriers issued by this pool's parks, for the test that a pool without them
    /// issues none.
    #[cfg(all(test, not(flock_loom)))]
    issued: AtomicUsize,
    /// Under loom, the model of the membarrier that parks issue (`model::Membarrier`).
    #[cfg(flock_loom)]
    model: Option<crate::sync::Arc<model::Membarrier>>,
}

impl Barrier {
    /// Registers the process for expedited membarriers when `membarrier` asks for them and
    /// the kernel offers them, else the fenced pairing. Registration is cheap and
    /// idempotent, and every pool's construction asks again, so a child after `fork`
    /// registers its new address space before its first pool starts.
    pub(crate) fn new(membarrier: bool) -> Barrier {
        let heavy = membarrier && !cfg!(any(flock_loom, miri)) && sys::register();
        Barrier {
            mode: AtomicU8::new(if heavy { HEAVY } else { FENCED }),
            registered: AtomicBool::new(heavy),
            #[cfg(all(test, not(flock_loom)))]
            issued: AtomicUsize::new(0),
            #[cfg(flock_loom)]
            model: None,
        }
    }

    /// Under loom: the membarrier pairing, with `model` standing in for the system call (the
    /// loom models' tests only).
    #[cfg(all(flock_loom, test))]
    pub(crate) fn modeled(model: crate::sync::Arc<model::Membarrier>) -> Barrier {
        Barrier {
            mode: AtomicU8::new(HEAVY),
            registered: AtomicBool::new(true),
            model: Some(model),
        }
    }

    /// Whether this pool's local pushes skip their fence because its parks issue the
    /// membarrier (`Pool::uses_membarrier`).
    pub(crate) fn heavy(&self) -> bool {
        self.mode.load(Ordering::Relaxed) == HEAVY
    }

    /// After a push onto a worker's own deque, before it loads the sleep state.
    #[inline]
    pub(crate) fn after_local_push(&self) {
        if self.mode.load(Ordering::Relaxed) == HEAVY {
            // The membarrier of a parking worker stands in for a hardware fence here; only
            // the compiler must keep the push's store before the state's load.
            compiler_fence(Ordering::SeqCst);
        } else if !canary(Canary::Push) {
            // Pairs with F2 of a parking worker (docs/protocol.md, "Why no wake-up is lost").
            // The `push` canary removes it so that the loom model of a task that
            // blocks after a local push must fail (scripts/loom.sh).
            fence(Ordering::SeqCst);
        }
    }

    /// Whether this pool's parks issue the membarrier (it registered for it, and no refusal
    /// has settled since).
    pub(crate) fn registered(&self) -> bool {
        self.registered.load(Ordering::Relaxed)
    }

    /// After a refusal (`issue` returned false): the grace `Sleep::park_announced` waited
    /// has passed since `mode` fell back to `FENCED`, so every push that skipped its fence is
    /// visible by now, and every later push fences. Parks issue no membarrier from here on.
    /// Relaxed: a worker that still reads `true` issues one more, which is harmless.
    #[cfg(not(flock_loom))]
    pub(crate) fn settle(&self) {
        self.registered.store(false, Ordering::Relaxed);
    }

    /// The heavy side: one membarrier, after a parking worker's F2 and before its re-check of
    /// the queues (`Sleep::barrier_before_recheck`, which skips it where an earlier one of
    /// the same era covers the worker). True when it was issued (every thread of the process
    /// passed a full barrier during the call) or none is needed (not registered, or a
    /// refusal settled). False when it was refused (the kernel stopped offering it, or a
    /// seccomp filter on this thread that the pool's building thread did not have): the
    /// pool falls back to `FENCED` at once, and the caller cannot count on the pushes from
    /// before the fall-back (docs/protocol.md, "A membarrier refused").
    pub(crate) fn issue(&self) -> bool {
        if !self.registered() {
            return true;
        }
        #[cfg(all(test, not(flock_loom)))]
        self.issued.fetch_add(1, Ordering::Relaxed);
        #[cfg(flock_loom)]
        if let Some(model) = &self.model {
            model.issue();
            return true;
        }
        if sys::barrier() {
            return true;
        }
        // Refused after a successful registration: from now on every push fences. Pushes
        // that skipped their fence before this are not ordered with our re-check, so
        // re-register and try once more.
        self.mode.store(FENCED, Ordering::Relaxed);
        sys::register() && sys::barrier()
    }

    /// Membarriers this pool's parks issued.
    #[cfg(all(test, not(flock_loom)))]
    pub(crate) fn issued(&self) -> usize {
        self.issued.load(Ordering::Relaxed)
    }
}

/// Under loom, a model of `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` as seen by one
/// thread that pushes with the light side: the kernel makes that thread execute a full
/// barrier at some point while the call runs (an IPI if it runs, its context switch if not).
/// The pushing thread calls [`point`](Membarrier::point) wherever that barrier may land
/// (before its push, between the push and its load of the sleep state, after the load), and
/// [`leave`](Membarrier::leave) when it is done; `issue` returns once the thread passed one.
/// That covers every place the real barrier can fall relative to the push and the load, the
/// only memory operations of the light side.
#[cfg(flock_loom)]
pub(crate) mod model {
    #[cfg(test)]
    use crate::sync::fence;
    use crate::sync::{AtomicUsize, Ordering};

    pub(crate) struct Membarrier {
        /// Membarriers issued so far.
        requested: AtomicUsize,
        /// The last one the pushing thread passed a barrier for (`usize::MAX` once it left).
        passed: AtomicUsize,
    }

    impl Membarrier {
        #[cfg(test)]
        pub(crate) fn new() -> Membarrier {
            Membarrier {
                requested: AtomicUsize::new(0),
                passed: AtomicUsize::new(0),
            }
        }

        /// The issuing thread: asks, then waits until the pushing thread passed a barrier.
        pub(crate) fn issue(&self) {
            let mine = self.requested.fetch_add(1, Ordering::SeqCst) + 1;
            while self.passed.load(Ordering::SeqCst) < mine {
                loom::thread::yield_now();
            }
        }

        /// The pushing thread, at a point where the barrier may land.
        #[cfg(test)]
        pub(crate) fn point(&self) {
            let asked = self.requested.load(Ordering::SeqCst);
            if self.passed.load(Ordering::Relaxed) < asked {
                fence(Ordering::SeqCst);
                self.passed.store(asked, Ordering::SeqCst);
            }
        }

        /// The pushing thread is done: it passes every later barrier at once.
        #[cfg(test)]
        pub(crate) fn leave(&self) {
            fence(Ordering::SeqCst);
            self.passed.store(usize::MAX, Ordering::SeqCst);
        }
    }
}
