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
// A moved-from pool holds nothing; calling it throws flock::error(FLOCK_ERR_NULL) (submitting
// to it destroys the callable once, unrun).
//
// Exceptions: calls that fail throw flock::error, carrying the flock_status_t. An exception
// thrown by a task never crosses the C boundary: the trampoline catches it, reports it with
// flock_task_fail, and the pool counts the task in stats().panicked (and its worker's), as it
// counts a panicking Rust task. A task given to submit() has its exception object discarded;
// to see it, submit with submit_task(), whose std::future rethrows it from get():
//
//     std::future<int> answer = pool.submit_task([] { return 6 * 7; });
//     flock::multi_future<int> parts;
//     for (int i = 0; i < 8; i++) parts.push_back(pool.submit_task([i] { return i * i; }));
//     std::vector<int> squares = parts.get();  // rethrows the first exception, if any
//
// Allocation: a callable that is trivially copyable and no bigger than a pointer (a lambda
// capturing nothing, or one reference or pointer) travels inside the task's argument word:
// no allocation. Any other callable is moved to the heap and deleted after it runs, or by the
// drop callback when FLOCK_SHUTDOWN_NOW discards it, or by submit itself when it is refused.
//
// Task groups and loops: flock::task_group g(pool); g.run(f); g.wait(); waits for exactly
// g's tasks (rethrowing the first exception), and inside a task it runs other tasks while it
// waits, so groups nest; destroying a group waits too. flock::parallel_for(pool, 0, v.size(),
// [&](size_t i) { ... }) splits a range (bounds of any integer types, BS::thread_pool's
// common index type) into blocks (about four per worker unless told) run as a group;
// pool.submit_blocks(0, n, [](int lo, int hi) { return ...; }).get() collects one result per
// block (a flock::multi_future, as BS::thread_pool's); submit_loop and submit_sequence (one
// task per index) likewise; detach_loop, detach_blocks and detach_sequence submit without
// waiting. flock::thread_pool is another name for flock::pool. pool.purge() drops every
// queued task.
//
// Introspection: pool.stats(), pool.running() (workers running a task now),
// flock::this_thread::get_index() (the calling worker's index, or std::nullopt),
// pool.get_thread_ids() (each worker's OS thread id, BS::thread_pool's name) and
// pool.get_native_handles() (each worker's std::thread::native_handle_type).
//
// Worker hooks: flock::config().on_worker_start([](uint32_t w) { ... }).on_worker_stop(...)
// runs init and cleanup code on each worker thread (flock_config_t::on_worker_start/stop).
//
// Lanes: flock::config().lanes({{"interactive", 8}, {"batch", 1}}) builds a pool with two
// lanes; pool.submit_to(pool.lane("batch"), f) puts a task in one (pool.lane looks the index
// up once; keep it). submit() uses lane 0 from outside the pool and the running task's lane
// from inside one.
//
// Algorithms and the process-wide pool: flock_algorithms.hpp, included at the end of this
// file, has oneTBB's parallel_reduce, parallel_invoke, parallel_for over a blocked_range and
// parallel_for_each, with a pool or on flock::global() (flock_global), which a
// default-constructed task_group uses too.
//
// Thread-safety: as flock.h; every member may be called from any thread concurrently, except
// that destruction and move-assignment must be the last use of a pool. A flock::config is a
// value: copy it freely (copies share its lane list, which never changes), but do not change
// one object while another thread uses it.
#ifndef FLOCK_HPP
#define FLOCK_HPP

#include "flock.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

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

// A timeout in whole nanoseconds for the C API (flock_wait_timeout and the group's), rounded
// up: 0 for a negative or zero one, UINT64_MAX (in effect no limit) from about 285 years up,
// where converting to std::chrono::nanoseconds would overflow. The comparison is made in
// floating point, where no duration overflows.
template <class Rep, class Period>
uint64_t saturating_ns(std::chrono::duration<Rep, Period> timeout) {
    if (timeout <= timeout.zero()) return 0;
    if (std::chrono::duration<long double, std::nano>(timeout).count() >= 9e18L) return UINT64_MAX;
    return static_cast<uint64_t>(std::chrono::ceil<std::chrono::nanoseconds>(timeout).count());
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

// A callable and the promise of its result, for pool::submit_task. Dropped unrun (by
// FLOCK_SHUTDOWN_NOW), it is deleted by drop_heap, and the promise's destructor stores
// std::future_error(broken_promise) in the future.
template <class F, class R>
struct promised {
    template <class G>
    explicit promised(G&& g) : f(std::in_place, std::forward<G>(g)) {}

    // Runs f and fulfils the promise; the callable is destroyed first, so that everything it
    // captured is released by the time the future is ready. False when f threw.
    bool run() noexcept {
        std::exception_ptr thrown;
        try {
            if constexpr (std::is_void_v<R>) {
                (*f)();
                f.reset();
                promise.set_value();
            } else {
                R value = (*f)();
                f.reset();
                promise.set_value(std::move(value));
            }
            return true;
        } catch (...) {
            thrown = std::current_exception();
        }
        f.reset();
        try {
            promise.set_exception(thrown);
        } catch (...) {  // already satisfied: R's move threw after set_value took it
        }
        return false;
    }

    std::optional<F> f;
    std::promise<R> promise;
};

template <class P>
void run_promised(void* arg) noexcept {
    std::unique_ptr<P> task(static_cast<P*>(arg));
    if (!task->run()) flock_task_fail();  // counted in stats().panicked too
}
}  // namespace detail

/// The futures of a set of tasks (pool::submit_task's), waited for and collected together, as
/// BS::thread_pool's multi_future: push_back the futures, then wait() or get(). A
/// std::vector<std::future<T>> with more; T may be void.
template <class T>
class multi_future : public std::vector<std::future<T>> {
public:
    using std::vector<std::future<T>>::vector;

    /// Waits for every future.
    void wait() const {
        for (const auto& f : *this) f.wait();
    }

    /// Waits for every future, at most `timeout` in all; true when all are ready. A timeout
    /// past what steady_clock can count to is no limit (it does not wrap to the past).
    template <class Rep, class Period>
    bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
        using clock = std::chrono::steady_clock;
        auto now = clock::now();
        uint64_t ns = detail::saturating_ns(timeout);
        auto room = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::time_point::max() - now).count();
        if (room < 0 || ns >= static_cast<uint64_t>(room)) {
            wait();
            return true;
        }
        auto left = std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(ns));
        return wait_until(now + std::chrono::duration_cast<clock::duration>(left));
    }

    /// Waits for every future until `deadline`; true when all are ready.
    template <class Clock, class Duration>
    bool wait_until(std::chrono::time_point<Clock, Duration> deadline) const {
        for (const auto& f : *this)
            if (f.wait_until(deadline) != std::future_status::ready) return false;
        return true;
    }

    /// How many are ready now.
    size_t ready_count() const {
        size_t n = 0;
        for (const auto& f : *this)
            if (f.wait_for(std::chrono::seconds(0)) == std::future_status::ready) n++;
        return n;
    }

    /// Whether every future has a shared state (none was moved from or collected).
    bool valid() const noexcept {
        for (const auto& f : *this)
            if (!f.valid()) return false;
        return true;
    }

    /// Waits for every task, then collects the results in order (nothing for T void); if
    /// tasks threw, rethrows the first one's exception, in order, once all have finished (so
    /// no task still runs when the caller unwinds). Each future is consumed.
    auto get() {
        wait();
        if constexpr (std::is_void_v<T>) {
            std::exception_ptr first;
            for (auto& f : *this) {
                try {
                    f.get();
                } catch (...) {
                    if (!first) first = std::current_exception();
                }
            }
            if (first) std::rethrow_exception(first);
        } else {
            std::vector<T> results;
            results.reserve(this->size());
            std::exception_ptr first;
            for (auto& f : *this) {
                try {
                    results.push_back(f.get());
                } catch (...) {
                    if (!first) first = std::current_exception();
                }
            }
            if (first) std::rethrow_exception(first);
            return results;
        }
    }
};

class pool;

/// flock_config_t with its defaults filled in (flock_config_init) and chainable setters.
struct config : flock_config_t {
    config() noexcept : flock_config_t() { flock_config_init(this); }
    // Copies share the lane list set by lanes(), which never changes once built, so
    // flock_config_t::lanes stays valid in every copy. Declaring the copies suppresses the
    // moves: a moved-from config keeps its lanes too.
    config(const config&) = default;
    config& operator=(const config&) = default;
    ~config() = default;

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
    /// Keep a lane reserve when the lanes differ in weight (see flock_config_t::lane_reserve).
    config& lane_reserve(bool on = true) noexcept { flock_config_t::lane_reserve = on; return *this; }
    /// Let parking workers use membarrier(2) so that pushes need no fence (the default; see
    /// flock_config_t::membarrier).
    config& membarrier(bool on = true) noexcept { flock_config_t::membarrier = on; return *this; }
    /// The most workers pool::resize may ask for (0: the default, see flock_config_t).
    config& max_workers(uint32_t n) noexcept { flock_config_t::max_workers = n; return *this; }
    /// The pool's lanes, as (name, weight) pairs in index order: lanes({{"ui", 8}, {"batch",
    /// 1}}). The config keeps a copy. An empty list restores the one default lane. Names are C
    /// strings (one holding a NUL ends there). The pool's constructor checks them
    /// (FLOCK_ERR_INVALID_CONFIG: see flock_config_t::lanes). May throw std::bad_alloc.
    config& lanes(std::vector<std::pair<std::string, uint32_t>> list) {
        if (list.empty()) {
            lanes_.reset();
            flock_config_t::lanes = nullptr;
            flock_config_t::lane_count = 0;
            return *this;
        }
        auto owned = std::make_shared<const lane_list>(std::move(list));
        flock_config_t::lanes = owned->views.data();
        // More than FLOCK_MAX_LANES is refused by the pool, whatever the count says.
        flock_config_t::lane_count = static_cast<uint32_t>(std::min<size_t>(owned->views.size(), UINT32_MAX));
        lanes_ = std::move(owned);
        return *this;
    }

    /// Calls f(worker) on each worker thread before it runs any task (see
    /// flock_config_t::on_worker_start): the pool's init callback, e.g. to name the thread or
    /// set up thread-local state. f is copied into the config (copies share it) and kept alive
    /// by the flock::pool built from it. It runs on several workers at once; an exception it
    /// throws is caught, printed to stderr, and the worker goes on. An empty f removes the
    /// hook. May throw std::bad_alloc.
    config& on_worker_start(std::function<void(uint32_t)> f) {
        auto h = std::make_shared<worker_hooks>(hooks_ ? *hooks_ : worker_hooks{});
        h->start = std::move(f);
        return set_hooks(std::move(h));
    }

    /// Calls f(worker) on each worker thread after its last task (see
    /// flock_config_t::on_worker_stop): the cleanup callback. Same rules as on_worker_start.
    config& on_worker_stop(std::function<void(uint32_t)> f) {
        auto h = std::make_shared<worker_hooks>(hooks_ ? *hooks_ : worker_hooks{});
        h->stop = std::move(f);
        return set_hooks(std::move(h));
    }

private:
    friend class pool;

    // The C++ hooks; flock_config_t::worker_hook_arg points at them. Built once, never changed.
    struct worker_hooks {
        std::function<void(uint32_t)> start, stop;
    };

    template <std::function<void(uint32_t)> worker_hooks::*Which>
    static void call_hook(void* arg, uint32_t worker) noexcept {
        try {
            (static_cast<const worker_hooks*>(arg)->*Which)(worker);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "flock: a worker hook threw on worker %u: %s\n", static_cast<unsigned>(worker), e.what());
        } catch (...) {
            std::fprintf(stderr, "flock: a worker hook threw on worker %u\n", static_cast<unsigned>(worker));
        }
    }

    config& set_hooks(std::shared_ptr<const worker_hooks> h) {
        flock_config_t::on_worker_start = h->start ? &call_hook<&worker_hooks::start> : nullptr;
        flock_config_t::on_worker_stop = h->stop ? &call_hook<&worker_hooks::stop> : nullptr;
        flock_config_t::worker_hook_arg = const_cast<worker_hooks*>(h.get());
        hooks_ = std::move(h);
        return *this;
    }

    // The names and the flock_lane_t array pointing into them; built once, never changed.
    struct lane_list {
        explicit lane_list(std::vector<std::pair<std::string, uint32_t>> list) : specs(std::move(list)) {
            views.reserve(specs.size());
            for (const auto& spec : specs) views.push_back(flock_lane_t{spec.first.c_str(), spec.second});
        }
        std::vector<std::pair<std::string, uint32_t>> specs;
        std::vector<flock_lane_t> views;
    };
    std::shared_ptr<const lane_list> lanes_;
    std::shared_ptr<const worker_hooks> hooks_;
};

/// The index of the flock worker calling, or -1 outside any pool.
inline int32_t current_worker() noexcept { return flock_current_worker(); }

/// About the calling thread, as BS::thread_pool's BS::this_thread.
namespace this_thread {
/// The index (0 to workers - 1) of the flock worker calling, or std::nullopt on a thread
/// that is not a flock worker (see flock_current_worker: a task run by the submitter under
/// FLOCK_WHEN_FULL_CALLER_RUNS or on a helper thread has none).
inline std::optional<std::size_t> get_index() noexcept {
    int32_t w = flock_current_worker();
    if (w < 0) return std::nullopt;
    return static_cast<std::size_t>(w);
}
}  // namespace this_thread

/// From a long task: runs queued tasks of heavier lanes that are due, here (see
/// flock_yield_to_lanes); returns how many ran.
inline size_t yield_to_lanes() noexcept { return flock_yield_to_lanes(); }

/// An owned flock pool.
class pool {
public:
    /// Starts a pool with every default.
    pool() : pool(config()) {}

    /// Starts a pool of `workers` threads, every other setting the default (0: the default
    /// count, as config()), as BS::thread_pool's constructor.
    explicit pool(uint32_t workers) : pool(workers ? config().workers(workers) : config()) {}

    /// Starts a pool; throws flock::error (FLOCK_ERR_INVALID_CONFIG, FLOCK_ERR_PIN_FAILED,
    /// FLOCK_ERR_THREAD_SPAWN).
    /// Keeps the config's worker hooks alive for as long as the pool's workers run.
    explicit pool(const config& cfg) : hooks_(cfg.hooks_) { detail::check(flock_pool_new(&cfg, &p_)); }

    /// Starts a pool from a plain flock_config_t (its C hooks and worker_hook_arg as they are).
    explicit pool(const flock_config_t& cfg) { detail::check(flock_pool_new(&cfg, &p_)); }

    /// Takes ownership of a C handle (from flock_pool_new, or flock_global's, which the
    /// destructor's flock_pool_free leaves running: how flock::global() holds it).
    explicit pool(flock_pool_t* handle) noexcept : p_(handle) {}

    pool(const pool&) = delete;
    pool& operator=(const pool&) = delete;
    pool(pool&& other) noexcept : p_(std::exchange(other.p_, nullptr)), hooks_(std::move(other.hooks_)) {}
    pool& operator=(pool&& other) noexcept {
        if (this != &other) {
            flock_pool_free(p_);
            p_ = std::exchange(other.p_, nullptr);
            hooks_ = std::move(other.hooks_);
        }
        return *this;
    }
    /// Graceful: every accepted task runs, then the workers are joined (their stop hooks run),
    /// then the hooks are released. Do not destroy a pool from inside one of its own tasks
    /// when it has worker hooks: the workers would outlive it.
    ~pool() { flock_pool_free(p_); }

    /// Runs f() on the pool. Returns FLOCK_OK, or the status of a refusal (FLOCK_ERR_FULL,
    /// FLOCK_ERR_TIMEOUT, FLOCK_ERR_SHUTDOWN), in which case f was destroyed unrun. May throw
    /// std::bad_alloc (only for callables that do not fit in the argument word).
    template <class F>
    flock_status_t try_submit(F&& f) {
        return submit_in(nullptr, std::forward<F>(f));
    }

    /// Runs f() on the pool; throws flock::error when the pool refuses it (f is destroyed).
    template <class F>
    void submit(F&& f) {
        detail::check(try_submit(std::forward<F>(f)));
    }

    /// Runs f() on the pool and returns a std::future of its result (std::future<void> for
    /// a callable returning void): the way to see what a task returns or throws. An exception
    /// f throws is stored in the future (get() rethrows it) and the task is also counted in
    /// stats().panicked. A task that FLOCK_SHUTDOWN_NOW discards unrun is destroyed and its
    /// future holds std::future_error (std::future_errc::broken_promise). When the future is
    /// ready, f (and what it captured) has been destroyed. Throws flock::error when the pool
    /// refuses the task (FLOCK_ERR_FULL, FLOCK_ERR_TIMEOUT, FLOCK_ERR_SHUTDOWN,
    /// FLOCK_ERR_NULL for a moved-from pool; f is destroyed once, unrun), std::bad_alloc.
    /// Always allocates (the callable with its promise, and the future's shared state).
    /// Waiting on the future from inside one of this pool's tasks blocks that worker: on a
    /// pool whose workers all wait so, nothing runs.
    template <class F>
    auto submit_task(F&& f) {
        return submit_task_in(nullptr, std::forward<F>(f));
    }

    /// Like submit_task, into lane number `lane` (see lane()): also FLOCK_ERR_UNKNOWN_LANE.
    template <class F>
    auto submit_task_to(uint32_t lane, F&& f) {
        return submit_task_in(&lane, std::forward<F>(f));
    }

    /// Like try_submit, into lane number `lane` (see lane()): also FLOCK_ERR_UNKNOWN_LANE.
    template <class F>
    flock_status_t try_submit_to(uint32_t lane, F&& f) {
        return submit_in(&lane, std::forward<F>(f));
    }

    /// Runs f() on the pool in lane number `lane` (see lane()); throws flock::error when the
    /// pool refuses it (FLOCK_ERR_UNKNOWN_LANE, ...; f is destroyed).
    template <class F>
    void submit_to(uint32_t lane, F&& f) {
        detail::check(try_submit_to(lane, std::forward<F>(f)));
    }

    /// The index of the lane called `name`; throws flock::error(FLOCK_ERR_UNKNOWN_LANE).
    uint32_t lane(const std::string& name) const {
        uint32_t index = 0;
        detail::check(flock_lane_index(p_, name.c_str(), &index));
        return index;
    }

    /// Blocks until every task accepted so far has finished. Throws flock::error
    /// (FLOCK_ERR_WOULD_DEADLOCK from inside one of this pool's tasks, or from the destructor
    /// of a callable that purge() or a task_group's cancel() drops; FLOCK_ERR_PAUSED while
    /// the pool is paused with tasks queued).
    void wait() { detail::check(flock_wait(p_)); }

    /// Like wait() with a time limit: false when it ran out first (a paused pool is waited
    /// for like any other). Throws flock::error with FLOCK_ERR_WOULD_DEADLOCK where wait()
    /// does, never a false that would only mean "try again".
    /// A timeout too long for nanoseconds (a thousand years, duration::max()) is no limit.
    template <class Rep, class Period>
    bool wait_for(std::chrono::duration<Rep, Period> timeout) {
        flock_status_t st = flock_wait_timeout(p_, detail::saturating_ns(timeout));
        if (st == FLOCK_ERR_TIMEOUT) return false;
        detail::check(st);
        return true;
    }

    /// Like wait() until a point in time: false when it came first.
    template <class Clock, class Duration>
    bool wait_until(std::chrono::time_point<Clock, Duration> deadline) {
        auto left = deadline - Clock::now();
        return wait_for(left < decltype(left)::zero() ? decltype(left)::zero() : left);
    }

    /// Stops the pool (see flock_shutdown) and returns how many tasks its shutdowns have
    /// discarded in total (not those purge() or a cancel dropped). The pool object stays
    /// usable for stats(); submits then throw FLOCK_ERR_SHUTDOWN.
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

    /// A snapshot of one lane's counters (FLOCK_ERR_UNKNOWN_LANE past the last).
    flock_lane_stats_t lane_stats(uint32_t lane) const {
        flock_lane_stats_t l;
        detail::check(flock_lane_stats(p_, lane, &l));
        return l;
    }

    /// The number of workers wanted (as built or last resized).
    uint32_t workers() const { return stats().workers; }

    /// The operating system's thread id of each worker, element i for worker i (BS::thread_pool's
    /// get_thread_ids(), with the ids the OS uses rather than std::thread::id, which cannot be
    /// built from them): on Linux the gettid() of the thread running the worker, what
    /// syscall(SYS_gettid) returns inside its tasks and what top -H, perf and gdb show
    /// (flock_worker_stats_t::os_thread_id). 0 for a worker with no thread (after shutdown) and
    /// off Linux. One entry per worker flock_worker_stats answers for: after resize() made the
    /// pool smaller, workers still retiring are included. A snapshot, taken one worker at a time.
    std::vector<std::uint64_t> get_thread_ids() const {
        std::vector<std::uint64_t> ids;
        for (const flock_worker_stats_t &w : all_worker_stats()) ids.push_back(w.os_thread_id);
        return ids;
    }

    /// Each worker's native thread handle (on POSIX systems its pthread_t, as
    /// std::thread::native_handle() would give), element i for worker i; a value-initialised
    /// handle (0) for a worker with no thread, and off Unix. As for flock_worker_stats_t's
    /// native_handle, a handle is valid only while its thread lives: use it (say with
    /// pthread_setschedparam) from one of that worker's tasks, or while the pool is neither
    /// resizing nor shutting down.
    std::vector<std::thread::native_handle_type> get_native_handles() const {
        using handle = std::thread::native_handle_type;
        std::vector<handle> handles;
        for (const flock_worker_stats_t &w : all_worker_stats()) {
            if constexpr (std::is_pointer<handle>::value) {
                handles.push_back(reinterpret_cast<handle>(static_cast<std::uintptr_t>(w.native_handle)));
            } else {
                handles.push_back(static_cast<handle>(w.native_handle));
            }
        }
        return handles;
    }

    /// How many workers are running a task now (see flock_running): a gauge, which may be
    /// stale by the time it is read.
    uint32_t running() const {
        uint32_t n = 0;
        detail::check(flock_running(p_, &n));
        return n;
    }

    /// Sets the number of workers (see flock_resize); throws flock::error
    /// (FLOCK_ERR_INVALID_ARGUMENT for 0 or past max_workers, FLOCK_ERR_SHUTDOWN, ...).
    void resize(uint32_t workers) { detail::check(flock_resize(p_, workers)); }

    /// Stops starting tasks submitted from outside the pool until resume() (see flock_pause:
    /// a task waiting on a task_group may still run the tasks it submitted); wait() then throws
    /// flock::error(FLOCK_ERR_PAUSED) while tasks are queued. Throws FLOCK_ERR_SHUTDOWN after
    /// shutdown().
    void pause() { detail::check(flock_pause(p_)); }

    /// Starts tasks again after pause().
    void resume() { detail::check(flock_resume(p_)); }

    /// Whether the pool is paused.
    bool is_paused() const {
        bool paused = false;
        detail::check(flock_is_paused(p_, &paused));
        return paused;
    }

    /// Whether the pool's parking workers use membarrier(2) (see flock_uses_membarrier).
    bool uses_membarrier() const {
        bool uses = false;
        detail::check(flock_uses_membarrier(p_, &uses));
        return uses;
    }

    /// Drops every queued task that has not started (see flock_purge): each callable is
    /// destroyed unrun (a submit_task future then holds broken_promise), and the pool stays
    /// open. Returns how many were dropped.
    size_t purge() {
        size_t n = 0;
        detail::check(flock_purge(p_, &n));
        return n;
    }

    /// Calls f(i) for every i in [first, last), in blocks run as tasks of a task_group, and
    /// returns when all have run (see flock::parallel_for, which this is).
    template <class I1, class I2, class F>
    void parallel_for(I1 first, I2 last, F&& f, size_t blocks = 0);

    /// Calls f(i) for every i in [first, last) in blocks that are plain tasks of the pool,
    /// without waiting (BS::thread_pool's detach_loop); wait for them with wait(). Bounds,
    /// blocks and splitting as flock::parallel_for. An exception f throws stops its block,
    /// is counted in stats().panicked and discarded, as for submit().
    template <class I1, class I2, class F>
    void detach_loop(I1 first, I2 last, F&& f, size_t blocks = 0);

    /// Like detach_loop, calling f(start, end) once per block (BS::thread_pool's
    /// detach_blocks): the blocks are consecutive and cover [first, last).
    template <class I1, class I2, class F>
    void detach_blocks(I1 first, I2 last, F&& f, size_t blocks = 0);

    /// Calls f(i) for every i in [first, last), each index its own plain task, without
    /// waiting (BS::thread_pool's detach_sequence): for a few indices of real work each.
    template <class I1, class I2, class F>
    void detach_sequence(I1 first, I2 last, F&& f);

    /// Calls f(start, end) for consecutive blocks covering [first, last), as tasks of a
    /// task_group, and returns a flock::block_results<R> (a multi_future<R>, R what f
    /// returns) with one future per block, in order (BS::thread_pool's submit_blocks).
    /// Bounds, blocks and splitting as flock::parallel_for. Throws flock::error when the pool
    /// refuses a block (the blocks accepted before it are waited for before the exception
    /// leaves).
    template <class I1, class I2, class F>
    auto submit_blocks(I1 first, I2 last, F&& f, size_t blocks = 0);

    /// Like submit_blocks, calling f(i) for every index of each block; the futures are void
    /// (BS::thread_pool's submit_loop).
    template <class I1, class I2, class F>
    auto submit_loop(I1 first, I2 last, F&& f, size_t blocks = 0);

    /// Calls f(i) for every i in [first, last), each index its own task of a task_group, and
    /// returns a flock::block_results<R> with one future per index, in order
    /// (BS::thread_pool's submit_sequence).
    template <class I1, class I2, class F>
    auto submit_sequence(I1 first, I2 last, F&& f);

    /// The C handle, still owned by this object (for calls the wrapper lacks).
    flock_pool_t* native_handle() const noexcept { return p_; }

private:
    // Every worker flock_worker_stats answers for, in index order (it answers
    // FLOCK_ERR_INVALID_ARGUMENT past the last; other errors throw).
    std::vector<flock_worker_stats_t> all_worker_stats() const {
        std::vector<flock_worker_stats_t> all;
        for (uint32_t i = 0;; i++) {
            flock_worker_stats_t w;
            flock_status_t st = flock_worker_stats(p_, i, &w);
            if (st == FLOCK_ERR_INVALID_ARGUMENT) return all;
            detail::check(st);
            all.push_back(w);
        }
    }

    // Submits f to `lane`, or to the default lane when it is null (flock_submit_ex's choice).
    template <class F>
    flock_status_t submit_in(const uint32_t* lane, F&& f) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<Fn&>, "flock::pool::submit takes a callable with no arguments");
        // A moved-from pool: refuse before anything is allocated (f is destroyed by the caller).
        if (p_ == nullptr) return FLOCK_ERR_NULL;
        auto send = [this, lane](void (*run)(void*), void* arg, void (*drop)(void*)) {
            return send_in(lane, run, arg, drop);
        };
        if constexpr (detail::fits_in_arg<Fn>) {
            Fn copy(std::forward<F>(f));
            void* arg = nullptr;
            std::memcpy(&arg, &copy, sizeof(Fn));
            return send(&detail::run_inline<Fn>, arg, nullptr);
        } else {
            auto owned = std::make_unique<Fn>(std::forward<F>(f));
            flock_status_t st = send(&detail::run_heap<Fn>, owned.get(), &detail::drop_heap<Fn>);
            // On FLOCK_OK the pool owns it now; on any error flock.h leaves it with us (the drop
            // callback is never called), so `owned` deletes it, once.
            if (st == FLOCK_OK) owned.release();
            return st;
        }
    }

    flock_status_t send_in(const uint32_t* lane, void (*run)(void*), void* arg, void (*drop)(void*)) {
        return lane ? flock_submit_lane_ex(p_, *lane, run, arg, drop) : flock_submit_ex(p_, run, arg, drop);
    }

    template <class F>
    auto submit_task_in(const uint32_t* lane, F&& f) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<Fn&>, "flock::pool::submit_task takes a callable with no arguments");
        using R = std::invoke_result_t<Fn&>;
        using Task = detail::promised<Fn, R>;
        if (p_ == nullptr) throw error(FLOCK_ERR_NULL);  // before anything is allocated
        auto task = std::make_unique<Task>(std::forward<F>(f));
        std::future<R> future = task->promise.get_future();
        // On an error flock.h leaves the task with us (the drop callback is never called):
        // `task` deletes it, once, as check() throws.
        detail::check(send_in(lane, &detail::run_promised<Task>, task.get(), &detail::drop_heap<Task>));
        task.release();  // the pool owns it now
        return future;
    }

    flock_pool_t* p_ = nullptr;
    std::shared_ptr<const config::worker_hooks> hooks_;  // after p_: released once it is freed
};

/// What task_group::wait returns (oneTBB's task_group_status): every task of the group has
/// finished, and cancel() was called since the previous wait (canceled) or not (complete).
/// not_complete is never returned by flock; it is there for code written for oneTBB.
enum class task_group_status { not_complete, complete, canceled };

/// A set of tasks on a pool that is waited for as a whole (oneTBB's task_group, over
/// flock_group_t): run() adds a task, wait() returns once exactly the group's tasks have
/// finished. Waiting from inside a task of any flock pool runs that pool's tasks meanwhile,
/// so groups nest: a task may open a group, run tasks in it and wait, even on one worker.
///
/// Exceptions: the first exception a task of the group throws is kept and rethrown by the
/// next wait() (after every task has finished); the task also counts in stats().panicked.
/// A later exception before that wait is counted and discarded.
///
/// Ownership: the destructor waits for the group's tasks (flock_group_free), so tasks may
/// capture references to objects declared before the group; exceptions not yet reported are
/// then discarded. This is the drop rule of every flock task group, one rule in Rust, C and
/// C++: dropping a Rust TaskGroup, flock_group_free and this destructor wait for the group's
/// tasks, queued ones included (cancel() first to drop those instead); nothing a group's
/// tasks use may go before the group does. Move-only. A wait() on a group from one of its
/// own tasks (or from the destructor of one that cancel() drops) would wait for that task
/// itself: it throws flock::error(FLOCK_ERR_WOULD_DEADLOCK). Never destroy a group there:
/// flock_group_free aborts the process rather than hang (a Rust TaskGroup, whose tasks own
/// what they use, returns from its drop without waiting there instead).
///
/// Thread-safety: run(), wait() and cancel() may be called from any threads at once.
class task_group {
public:
    /// An empty group on `p`; throws flock::error (FLOCK_ERR_NULL for a moved-from pool).
    explicit task_group(pool& p) : task_group(p.native_handle()) {}

    /// An empty group on a C pool handle.
    explicit task_group(flock_pool_t* p) : errors_(std::make_unique<errors>()) {
        detail::check(flock_group_new(p, &g_));
    }

    /// An empty group on the process-wide pool (flock::global(), flock_global), as oneTBB's
    /// task_group is on the implicit arena; throws flock::error when that pool cannot start.
    task_group() : errors_(std::make_unique<errors>()) {
        flock_pool_t* global = nullptr;
        detail::check(flock_global(&global));
        detail::check(flock_group_new(global, &g_));
    }

    task_group(const task_group&) = delete;
    task_group& operator=(const task_group&) = delete;
    task_group(task_group&& other) noexcept
        : g_(std::exchange(other.g_, nullptr)), errors_(std::move(other.errors_)) {}
    task_group& operator=(task_group&& other) noexcept {
        if (this != &other) {
            flock_group_free(g_);
            g_ = std::exchange(other.g_, nullptr);
            errors_ = std::move(other.errors_);
        }
        return *this;
    }

    /// Waits for the group's tasks (running and queued), then frees it.
    ~task_group() { flock_group_free(g_); }

    /// Runs f() as a task of the group. Throws flock::error when the pool refuses it
    /// (FLOCK_ERR_FULL, FLOCK_ERR_TIMEOUT, FLOCK_ERR_SHUTDOWN; f is destroyed unrun), or
    /// FLOCK_ERR_NULL for a moved-from group; std::bad_alloc. Allocates one heap block.
    template <class F>
    void run(F&& f) {
        detail::check(try_run_in(nullptr, std::forward<F>(f)));
    }

    /// Like run(), into lane number `lane` of the pool (also FLOCK_ERR_UNKNOWN_LANE).
    template <class F>
    void run_to(uint32_t lane, F&& f) {
        detail::check(try_run_in(&lane, std::forward<F>(f)));
    }

    /// Like run(), returning the status of a refusal instead of throwing.
    template <class F>
    flock_status_t try_run(F&& f) {
        return try_run_in(nullptr, std::forward<F>(f));
    }

    /// Waits for every task of the group (helping on a worker), then rethrows the first
    /// exception a task threw since the last wait, if any (flock::error(FLOCK_ERR_TASK_FAILED)
    /// for a failure reported without one, e.g. a C task's flock_task_fail). Returns
    /// task_group_status::canceled when cancel() was called since the last wait (some tasks
    /// may have been dropped unrun), task_group_status::complete otherwise, as oneTBB's
    /// task_group::wait; either way no task of the group is left, and is_canceling() is false
    /// again (of several threads waiting at once after a cancel, one reports canceled).
    /// Reusable after.
    task_group_status wait() {
        flock_status_t st = flock_group_wait(g_);
        bool canceled = errors_ && errors_->canceling.exchange(false);
        report(st);
        return canceled ? task_group_status::canceled : task_group_status::complete;
    }

    /// Runs f() on the calling thread, then wait()s (oneTBB's run_and_wait): f may run more
    /// tasks in the group, which the wait covers. If f throws, the group is still waited for
    /// (its own exceptions then discarded) and f's exception comes out.
    template <class F>
    task_group_status run_and_wait(F&& f) {
        try {
            std::forward<F>(f)();
        } catch (...) {
            try {
                wait();
            } catch (...) {  // f's exception is the one reported
            }
            throw;
        }
        return wait();
    }

    /// Like wait() for at most `timeout`: false when tasks are still unfinished then (then
    /// is_canceling() stays as it was). Blocks without running tasks (see
    /// flock_group_wait_timeout_ns). A timeout too long for nanoseconds is no limit.
    template <class Rep, class Period>
    bool wait_for(std::chrono::duration<Rep, Period> timeout) {
        flock_status_t st = flock_group_wait_timeout_ns(g_, detail::saturating_ns(timeout));
        if (st == FLOCK_ERR_TIMEOUT) return false;
        if (errors_) errors_->canceling = false;
        report(st);
        return true;
    }

    /// Drops the group's tasks that have not started (their callables are destroyed here) and
    /// returns how many; running ones go on (wait() for them). Until the next wait() returns,
    /// is_canceling() is true.
    size_t cancel() {
        size_t n = 0;
        detail::check(flock_group_cancel(g_, &n));
        errors_->canceling = true;
        return n;
    }

    /// Whether cancel() was called since the last wait() returned (oneTBB's
    /// task_group::is_canceling): a task of the group may read it to stop early. false for a
    /// moved-from group.
    bool is_canceling() const noexcept { return errors_ && errors_->canceling.load(); }

    /// The C handle, still owned by this object.
    flock_group_t* native_handle() const noexcept { return g_; }

private:
    struct errors {
        std::mutex lock;
        std::exception_ptr first;
        std::atomic<bool> canceling{false};
    };

    template <class F>
    struct guarded {
        F f;
        errors* errs;
        void operator()() {
            try {
                f();
            } catch (...) {
                {
                    std::lock_guard<std::mutex> hold(errs->lock);
                    if (!errs->first) errs->first = std::current_exception();
                }
                throw;  // the trampoline reports it: FLOCK_ERR_TASK_FAILED, stats().panicked
            }
        }
    };

    template <class F>
    flock_status_t try_run_in(const uint32_t* lane, F&& f) {
        using Fn = std::decay_t<F>;
        static_assert(std::is_invocable_v<Fn&>, "flock::task_group::run takes a callable with no arguments");
        if (g_ == nullptr) return FLOCK_ERR_NULL;
        using G = guarded<Fn>;
        auto owned = std::make_unique<G>(G{Fn(std::forward<F>(f)), errors_.get()});
        flock_status_t st = lane ? flock_group_submit_lane_ex(g_, *lane, &detail::run_heap<G>, owned.get(), &detail::drop_heap<G>)
                                 : flock_group_submit_ex(g_, &detail::run_heap<G>, owned.get(), &detail::drop_heap<G>);
        // As pool::submit: on an error the callable is still ours, deleted once by `owned`.
        if (st == FLOCK_OK) owned.release();
        return st;
    }

    void report(flock_status_t st) {
        if (st == FLOCK_ERR_TASK_FAILED) {
            std::exception_ptr first;
            {
                std::lock_guard<std::mutex> hold(errors_->lock);
                first = std::exchange(errors_->first, nullptr);
            }
            if (first) std::rethrow_exception(first);
        }
        detail::check(st);
    }

    flock_group_t* g_ = nullptr;
    std::unique_ptr<errors> errors_;  // stable across moves: tasks point to it
};

namespace detail {
template <size_t Bytes>
struct signed_of_size;
template <>
struct signed_of_size<2> { using type = int16_t; };
template <>
struct signed_of_size<4> { using type = int32_t; };
template <>
struct signed_of_size<8> { using type = int64_t; };

template <class A, class B, bool Same = std::is_signed_v<A> == std::is_signed_v<B>>
struct common_index {  // same signedness: the wider
    using type = std::conditional_t<(sizeof(A) >= sizeof(B)), A, B>;
};
template <class A, class B>
struct common_index<A, B, false> {  // one signed, one unsigned
    using S = std::conditional_t<std::is_signed_v<A>, A, B>;
    using U = std::conditional_t<std::is_signed_v<A>, B, A>;
    using type = std::conditional_t<
        (sizeof(U) >= 8), U,  // no signed type holds both: the unsigned one (BS's rule)
        std::conditional_t<(sizeof(S) > sizeof(U)), S, typename signed_of_size<(sizeof(U) >= 8 ? 8 : 2 * sizeof(U))>::type>>;
};

template <class I>
constexpr bool is_index = std::is_integral_v<I> && !std::is_same_v<std::remove_cv_t<I>, bool>;
}  // namespace detail

/// The type a loop over [first, last) with `first` of type A and `last` of type B counts in
/// (BS::thread_pool's common_index_type): for two signed or two unsigned types, the wider;
/// for a signed and an unsigned one, a signed type that holds both, except that with a
/// 64-bit unsigned type (size_t) it is that type, so a negative `first` there must be cast
/// by the caller. parallel_for(pool, 0, v.size(), f) counts in size_t.
template <class A, class B>
using common_index_t = typename detail::common_index<std::remove_cv_t<A>, std::remove_cv_t<B>>::type;

namespace detail {
// [first, last) cut into consecutive blocks whose sizes differ by at most one, the larger
// first (BS::thread_pool's split): as many blocks as asked (`want`), or as there are indices
// when fewer. Lengths and offsets are counted in the unsigned type of T's width, where
// last - first of any two T values fits: no signed overflow, no wrap, for every width.
template <class T>
class block_split {
    using U = std::make_unsigned_t<T>;

public:
    block_split(T first, T last, size_t want) : first_(first) {
        if (!(first < last)) return;
        // Exact: last > first, so the difference modulo 2^width is the true length.
        U n = static_cast<U>(static_cast<U>(last) - static_cast<U>(first));
        count_ = static_cast<uintmax_t>(n) < want ? static_cast<size_t>(n) : want;
        base_ = static_cast<U>(n / static_cast<U>(count_));
        extra_ = static_cast<U>(n % static_cast<U>(count_));
    }

    size_t count() const noexcept { return count_; }
    T start(size_t b) const noexcept { return at(b); }
    T end(size_t b) const noexcept { return at(b + 1); }

private:
    // first + b * base + min(b, extra): at most the length, so it fits U; the conversion
    // back to T is the value first + offset, which lies in [first, last].
    T at(size_t b) const noexcept {
        U ub = static_cast<U>(b);
        U offset = static_cast<U>(ub * base_ + std::min(ub, extra_));
        return static_cast<T>(static_cast<U>(static_cast<U>(first_) + offset));
    }

    T first_;
    size_t count_ = 0;
    U base_ = 0, extra_ = 0;
};

// The number of blocks for a loop on a pool of `workers`: `blocks` when not 0, otherwise
// about four per worker, so that thieves have something to take when blocks run unevenly.
inline size_t want_blocks(uint32_t workers, size_t blocks) {
    return blocks ? blocks : size_t(4) * (workers ? workers : 1);
}

// Runs call() into `promise`: its value, or the exception it threw (then the task is also
// reported failed, so stats().panicked counts it, as for submit_task).
template <class R, class Call>
void fulfil(std::promise<R>& promise, Call& call) noexcept {
    try {
        if constexpr (std::is_void_v<R>) {
            call();
            promise.set_value();
        } else {
            promise.set_value(call());
        }
        return;
    } catch (...) {
        try {
            promise.set_exception(std::current_exception());
        } catch (...) {  // already satisfied: R's move threw after set_value took it
        }
    }
    flock_task_fail();
}
}  // namespace detail

/// Calls f(i) for every i in [first, last) on `p`, in blocks run as tasks of a task_group,
/// and returns when all have run, rethrowing the first exception one threw. The bounds may be
/// of different integer types (0 and v.size()): i is of their common_index_t. `blocks` 0
/// picks the block count itself (about four per worker); blocks differ in size by at most
/// one index. Any range of any integer type splits without overflow. Nestable: called from
/// inside a task (a parallel_for inside a parallel_for), the waiting worker runs blocks too.
/// f is shared by all blocks (by reference): it must be callable from several threads at
/// once. A block that throws stops there; the others run to their end.
template <class I1, class I2, class F>
void parallel_for(pool& p, I1 first, I2 last, F&& f, size_t blocks = 0) {
    static_assert(detail::is_index<I1> && detail::is_index<I2>, "flock::parallel_for takes an integer range");
    using T = common_index_t<I1, I2>;
    detail::block_split<T> split(static_cast<T>(first), static_cast<T>(last), detail::want_blocks(p.workers(), blocks));
    if (split.count() == 0) return;
    task_group group(p);
    auto& fn = f;
    for (size_t b = 0; b < split.count(); b++) {
        group.run([&fn, start = split.start(b), end = split.end(b)] {
            for (T i = start; i < end; ++i) fn(i);
        });
    }
    group.wait();
}

/// The results of pool::submit_blocks, submit_loop and submit_sequence: a
/// multi_future<R> (one future per block or index, in order) whose tasks form a task_group.
/// Use it as a multi_future (iterate, get() one future, ready_count()...) or move it into one:
/// `flock::multi_future<R> m = pool.submit_blocks(...)` (that waits for the blocks first, as
/// the destructor below). Its own wait() and get() wait through the group, so on a worker
/// they run tasks meanwhile (a nested submit_blocks(...).get() completes on one worker,
/// where waiting on a std::future would block the worker); get() returns the results in
/// order (nothing for void), rethrowing the first exception in order, once every block has
/// finished. A block that throws counts in stats().panicked.
///
/// Move-only. Destroying it waits for the blocks that were accepted (also when it is never
/// read, when an exception unwinds past it, and when submitting failed part-way), so the
/// callable may capture references to objects declared before it. A block dropped unrun
/// (purge, a shutdown that discards) leaves std::future_error(broken_promise) in its future.
template <class R>
class block_results : public multi_future<R> {
public:
    /// Waits for every block (helping on a worker). Exceptions stay in the futures.
    void wait() {
        flock_status_t st = flock_group_wait(group_.native_handle());
        if (st != FLOCK_ERR_TASK_FAILED) detail::check(st);  // failures are in the futures
    }

    /// Waits for every block, at most `timeout` (not helping: see task_group::wait_for);
    /// true when all have finished.
    template <class Rep, class Period>
    bool wait_for(std::chrono::duration<Rep, Period> timeout) {
        flock_status_t st = flock_group_wait_timeout_ns(group_.native_handle(), detail::saturating_ns(timeout));
        if (st == FLOCK_ERR_TIMEOUT) return false;
        if (st != FLOCK_ERR_TASK_FAILED) detail::check(st);
        return true;
    }

    /// Waits for every block and returns the results in order (void: nothing); rethrows the
    /// first exception in block order. Each future is consumed.
    auto get() {
        wait();
        return multi_future<R>::get();
    }

private:
    friend class pool;
    explicit block_results(pool& p) : group_(p) {}

    // Runs call() as a task of the group, its result into the next future.
    template <class Call>
    void add(Call&& call) {
        std::promise<R> promise;
        this->push_back(promise.get_future());  // reserved: does not throw
        group_.run([promise = std::move(promise), call = std::forward<Call>(call)]() mutable noexcept {
            detail::fulfil(promise, call);
        });
    }

    // A member, so destroyed (waiting for the blocks) before the futures of the base class.
    task_group group_;
};

template <class I1, class I2, class F>
void pool::parallel_for(I1 first, I2 last, F&& f, size_t blocks) {
    flock::parallel_for(*this, first, last, std::forward<F>(f), blocks);
}

template <class I1, class I2, class F>
void pool::detach_loop(I1 first, I2 last, F&& f, size_t blocks) {
    static_assert(detail::is_index<I1> && detail::is_index<I2>, "flock::pool::detach_loop takes an integer range");
    using T = common_index_t<I1, I2>;
    detach_blocks(first, last, [loop = std::forward<F>(f)](T start, T end) mutable {
        for (T i = start; i < end; ++i) loop(i);
    }, blocks);
}

template <class I1, class I2, class F>
void pool::detach_blocks(I1 first, I2 last, F&& f, size_t blocks) {
    static_assert(detail::is_index<I1> && detail::is_index<I2>, "flock::pool::detach_blocks takes an integer range");
    using T = common_index_t<I1, I2>;
    detail::block_split<T> split(static_cast<T>(first), static_cast<T>(last), detail::want_blocks(workers(), blocks));
    if (split.count() == 0) return;
    // Shared by the blocks, which may outlive this call: one copy, owned by all of them.
    auto fn = std::make_shared<std::decay_t<F>>(std::forward<F>(f));
    for (size_t b = 0; b < split.count(); b++)
        submit([fn, start = split.start(b), end = split.end(b)] { (*fn)(start, end); });
}

template <class I1, class I2, class F>
void pool::detach_sequence(I1 first, I2 last, F&& f) {
    static_assert(detail::is_index<I1> && detail::is_index<I2>, "flock::pool::detach_sequence takes an integer range");
    using T = common_index_t<I1, I2>;
    auto fn = std::make_shared<std::decay_t<F>>(std::forward<F>(f));
    for (T i = static_cast<T>(first), end = static_cast<T>(last); i < end; ++i) submit([fn, i] { (*fn)(i); });
}

template <class I1, class I2, class F>
auto pool::submit_blocks(I1 first, I2 last, F&& f, size_t blocks) {
    static_assert(detail::is_index<I1> && detail::is_index<I2>, "flock::pool::submit_blocks takes an integer range");
    using T = common_index_t<I1, I2>;
    using Fn = std::decay_t<F>;
    using R = std::invoke_result_t<Fn&, T, T>;
    block_results<R> results(*this);
    detail::block_split<T> split(static_cast<T>(first), static_cast<T>(last), detail::want_blocks(workers(), blocks));
    if (split.count() == 0) return results;
    auto fn = std::make_shared<Fn>(std::forward<F>(f));
    results.reserve(split.count());
    for (size_t b = 0; b < split.count(); b++)
        results.add([fn, start = split.start(b), end = split.end(b)]() -> R { return (*fn)(start, end); });
    return results;
}

template <class I1, class I2, class F>
auto pool::submit_loop(I1 first, I2 last, F&& f, size_t blocks) {
    static_assert(detail::is_index<I1> && detail::is_index<I2>, "flock::pool::submit_loop takes an integer range");
    using T = common_index_t<I1, I2>;
    return submit_blocks(first, last, [loop = std::forward<F>(f)](T start, T end) mutable {
        for (T i = start; i < end; ++i) loop(i);
    }, blocks);
}

template <class I1, class I2, class F>
auto pool::submit_sequence(I1 first, I2 last, F&& f) {
    static_assert(detail::is_index<I1> && detail::is_index<I2>, "flock::pool::submit_sequence takes an integer range");
    using T = common_index_t<I1, I2>;
    using Fn = std::decay_t<F>;
    using R = std::invoke_result_t<Fn&, T>;
    block_results<R> results(*this);
    T start = static_cast<T>(first), end = static_cast<T>(last);
    if (!(start < end)) return results;
    auto fn = std::make_shared<Fn>(std::forward<F>(f));
    results.reserve(static_cast<size_t>(static_cast<std::make_unsigned_t<T>>(end) - static_cast<std::make_unsigned_t<T>>(start)));
    for (T i = start; i < end; ++i) results.add([fn, i]() -> R { return (*fn)(i); });
    return results;
}

/// BS::thread_pool's name for flock::pool, so code written for it reads the same.
using thread_pool = pool;

}  // namespace flock

// The process-wide pool (flock::global) and oneTBB's algorithms: parallel_reduce,
// parallel_invoke, parallel_for over ranges, parallel_for_each.
#include "flock_algorithms.hpp"

#endif  // FLOCK_HPP
