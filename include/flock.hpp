// flock.hpp: a header-only C++17 RAII wrapper over flock.h (libflock).
//
//     flock::pool pool(flock::config().workers(4));
//     std::atomic<int> n{0};
//     pool.submit([&n] { n++; });
//     pool.wait();
//     std::printf("%llu done\n", (unsigned long long)pool.stats().completed);
//
// Ownership: flock::pool owns its flock_pool_t; it is move-only, and its destructor shuts the
// pool down gracefully (every accepted task runs) and joins the workers, like flock_pool_free.
// A moved-from pool holds nothing; calling it throws flock::error(FLOCK_ERR_NULL).
//
// Exceptions: calls that fail throw flock::error, carrying the flock_status_t. An exception
// thrown by a task never crosses the C boundary: the trampoline catches it, reports it with
// flock_task_fail, and the pool counts the task in stats().panicked (and its worker's), as it
// counts a panicking Rust task; the exception object itself is discarded. Catch inside the
// task when you need it.
//
// Allocation: a callable that is trivially copyable and no bigger than a pointer (a lambda
// capturing nothing, or one reference or pointer) travels inside the task's argument word:
// no allocation. Any other callable is moved to the heap and deleted after it runs, or by the
// drop callback when FLOCK_SHUTDOWN_NOW discards it, or by submit itself when it is refused.
//
// Thread-safety: as flock.h; every member may be called from any thread concurrently, except
// that destruction and move-assignment must be the last use of a pool.
#ifndef FLOCK_HPP
#define FLOCK_HPP

#include "flock.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace flock {

/// A failed flock call.
class error : public std::runtime_error {
public:
    explicit error(flock_status_t status)
        : std::runtime_error(std::string("flock: ") + flock_status_str(status)), status_(status) {}
    /// What the C call returned.
    flock_status_t status() const noexcept { return status_; }

private:
    flock_status_t status_;
};

namespace detail {
inline void check(flock_status_t status) {
    if (status != FLOCK_OK) throw error(status);
}

// A callable stored in the argument word itself.
template <class F>
constexpr bool fits_in_arg = std::is_trivially_copyable_v<F> && sizeof(F) <= sizeof(void*) &&
                             alignof(F) <= alignof(void*);

template <class F>
void run_inline(void* arg) noexcept {
    try {
        alignas(F) unsigned char buf[sizeof(F)];
        std::memcpy(buf, &arg, sizeof(F));
        (*std::launder(reinterpret_cast<F*>(buf)))();
    } catch (...) {
        flock_task_fail();
    }
}

template <class F>
void run_heap(void* arg) noexcept {
    std::unique_ptr<F> f(static_cast<F*>(arg));
    try {
        (*f)();
    } catch (...) {
        flock_task_fail();
    }
}

template <class F>
void drop_heap(void* arg) noexcept {
    delete static_cast<F*>(arg);
}
}  // namespace detail

/// flock_config_t with its defaults filled in (flock_config_init) and chainable setters.
struct config : flock_config_t {
    config() noexcept : flock_config_t() { flock_config_init(this); }
    config& workers(uint32_t n) noexcept { flock_config_t::workers = n; return *this; }
    config& capacity(uint64_t n) noexcept { flock_config_t::capacity = n; return *this; }
    config& when_full(flock_when_full_t p) noexcept { flock_config_t::when_full = p; return *this; }
    config& block_timeout(std::chrono::nanoseconds t) noexcept {
        block_timeout_ns = static_cast<uint64_t>(t.count());
        return *this;
    }
    config& fifo(bool on = true) noexcept { flock_config_t::fifo = on; return *this; }
    config& spin_limit(uint32_t rounds) noexcept { flock_config_t::spin_limit = rounds; return *this; }
    config& pin_workers(bool on = true) noexcept { flock_config_t::pin_workers = on; return *this; }
    config& track_latency(bool on = true) noexcept { flock_config_t::track_latency = on; return *this; }
};

/// The index of the flock worker calling, or -1 outside any pool.
inline int32_t current_worker() noexcept { return flock_current_worker(); }

/// An owned flock pool.
class pool {
public:
    /// Starts a pool; throws flock::error (FLOCK_ERR_INVALID_CONFIG, FLOCK_ERR_THREAD_SPAWN).
    explicit pool(const flock_config_t& cfg = config()) { detail::check(flock_pool_new(&cfg, &p_)); }

    pool(const pool&) = delete;
    pool& operator=(const pool&) = delete;
    pool(pool&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
    pool& operator=(pool&& other) noexcept {
        if (this != &other) {
            flock_pool_free(p_);
            p_ = std::exchange(other.p_, nullptr);
        }
        return *this;
    }
    /// Graceful: every accepted task runs, then the workers are joined.
    ~pool() { flock_pool_free(p_); }

    /// Runs f() on the pool. Returns FLOCK_OK, or the status of a refusal (FLOCK_ERR_FULL,
    /// FLOCK_ERR_TIMEOUT, FLOCK_ERR_SHUTDOWN), in which case f was destroyed unrun. May throw
    /// std::bad_alloc (only for callables that do not fit in the argument word).
    template <class F>
    flock_status_t try_submit(F&& f) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<Fn&>, "flock::pool::submit takes a callable with no arguments");
        if constexpr (detail::fits_in_arg<Fn>) {
            Fn copy(std::forward<F>(f));
            void* arg = nullptr;
            std::memcpy(&arg, &copy, sizeof(Fn));
            return flock_submit(p_, &detail::run_inline<Fn>, arg);
        } else {
            auto owned = std::make_unique<Fn>(std::forward<F>(f));
            flock_status_t st = flock_submit_ex(p_, &detail::run_heap<Fn>, owned.get(), &detail::drop_heap<Fn>);
            if (st == FLOCK_OK) owned.release();  // the pool owns it now
            return st;
        }
    }

    /// Runs f() on the pool; throws flock::error when the pool refuses it (f is destroyed).
    template <class F>
    void submit(F&& f) {
        detail::check(try_submit(std::forward<F>(f)));
    }

    /// Blocks until every task accepted so far has finished. Throws flock::error
    /// (FLOCK_ERR_WOULD_DEADLOCK from inside one of this pool's tasks).
    void wait() { detail::check(flock_wait(p_)); }

    /// Like wait() with a time limit: false when it ran out first.
    template <class Rep, class Period>
    bool wait_for(std::chrono::duration<Rep, Period> timeout) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
        flock_status_t st = flock_wait_timeout(p_, ns < 0 ? 0 : static_cast<uint64_t>(ns));
        if (st == FLOCK_ERR_TIMEOUT) return false;
        detail::check(st);
        return true;
    }

    /// Stops the pool (see flock_shutdown) and returns how many tasks were discarded. The pool
    /// object stays usable for stats(); submits then throw FLOCK_ERR_SHUTDOWN.
    uint64_t shutdown(flock_shutdown_mode_t mode = FLOCK_SHUTDOWN_GRACEFUL) {
        uint64_t dropped = 0;
        detail::check(flock_shutdown(p_, mode, &dropped));
        return dropped;
    }

    /// A snapshot of the counters.
    flock_stats_t stats() const {
        flock_stats_t s;
        detail::check(flock_stats(p_, &s));
        return s;
    }

    /// A snapshot of one worker's counters (FLOCK_ERR_INVALID_ARGUMENT past the last).
    flock_worker_stats_t worker_stats(uint32_t worker) const {
        flock_worker_stats_t w;
        detail::check(flock_worker_stats(p_, worker, &w));
        return w;
    }

    /// The number of workers.
    uint32_t workers() const { return stats().workers; }

    /// The C handle, still owned by this object (for calls the wrapper lacks).
    flock_pool_t* native_handle() const noexcept { return p_; }

private:
    flock_pool_t* p_ = nullptr;
};

}  // namespace flock

#endif  // FLOCK_HPP
