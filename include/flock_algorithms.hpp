// flock_algorithms.hpp: the process-wide pool and oneTBB's loop algorithms, for flock.hpp.
//
// Included at the end of flock.hpp (include that one). Everything here is built on
// flock::task_group, whose wait runs other tasks of the pool while it waits when called from
// a worker: so these calls nest (a parallel_for inside a parallel_reduce's body completes on
// a pool of one worker), and the first exception a body throws is rethrown by the call, once
// every task it started has finished.
//
//     double sum = flock::parallel_reduce(flock::blocked_range<size_t>(0, v.size()), 0.0,
//         [&](const flock::blocked_range<size_t>& r, double acc) {
//             for (size_t i = r.begin(); i != r.end(); ++i) acc += v[i];
//             return acc;
//         },
//         std::plus<double>());
//     flock::parallel_invoke([&] { left(); }, [&] { right(); });
//     flock::parallel_for_each(names.begin(), names.end(), [](std::string& s) { trim(s); });
//
// The process-wide pool: flock::global() (flock_global in C) is the pool the calls without a
// pool argument use, as oneTBB's run on the implicit arena; a default-constructed
// flock::task_group is on it too. Every algorithm also takes a pool first:
// flock::parallel_for(pool, range, body).
//
// The split tree: a range is halved (its splitting constructor) while it is_divisible(),
// at most max_split_depth (8) times along any path, so into at most 256 pieces. The tree
// depends on the range alone (its size and grain), never on the pool or on which thread
// runs what: parallel_reduce combines the pieces' results in that tree's order, so an
// associative reduction gives the same result every run, bit for bit for floating point (as
// oneTBB's parallel_deterministic_reduce), on any pool.
#ifndef FLOCK_ALGORITHMS_HPP
#define FLOCK_ALGORITHMS_HPP

#include "flock.hpp"

#include <cstddef>
#include <exception>
#include <iterator>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace flock {

// ---- the process-wide pool --------------------------------------------------------------

/// The process-wide pool (flock_global): started on first use with flock_config_init's
/// defaults, except that FLOCK_WORKERS and FLOCK_MEMBARRIER, read then, set the worker count
/// and membarrier (see flock_global). The same pool as Rust's flock::global in this process.
/// Throws flock::error when it cannot start (FLOCK_ERR_INVALID_CONFIG for a bad variable;
/// the next call tries again). Never shut down: shutdown() on it throws
/// flock::error(FLOCK_ERR_INVALID_ARGUMENT), and the object's destructor (at exit) leaves the
/// pool running, so wait() on it before main returns when queued tasks must run.
inline pool& global() {
    static pool shared([] {
        flock_pool_t* handle = nullptr;
        detail::check(flock_global(&handle));
        return handle;
    }());
    return shared;
}

// ---- ranges ------------------------------------------------------------------------------

/// The tag of a range's (or a reduce body's) splitting constructor, as oneTBB's tbb::split.
struct split {};

namespace detail {
// The number of elements in [first, last) for an integer or a random-access iterator; 0
// when last is not after first. Integers are subtracted in their unsigned type of the same
// width, which never overflows (INT_MIN to INT_MAX is UINT_MAX elements).
template <class V>
size_t range_size(V first, V last) {
    if (!(first < last)) return 0;
    if constexpr (std::is_integral_v<V>) {
        static_assert(sizeof(V) <= sizeof(size_t), "flock: integer ranges wider than size_t are not supported");
        using U = std::make_unsigned_t<V>;
        return static_cast<size_t>(static_cast<U>(static_cast<U>(last) - static_cast<U>(first)));
    } else {
        return static_cast<size_t>(last - first);
    }
}

// first advanced by n (n at most range_size(first, last), so the result lies in the range).
template <class V>
V range_advance(V first, size_t n) {
    if constexpr (std::is_integral_v<V>) {
        using U = std::make_unsigned_t<V>;
        return static_cast<V>(static_cast<U>(static_cast<U>(first) + static_cast<U>(n)));
    } else {
        return first + static_cast<typename std::iterator_traits<V>::difference_type>(n);
    }
}
}  // namespace detail

/// [begin, end) of integers or random-access iterators, to be split into pieces of at least
/// `grainsize` elements (oneTBB's blocked_range): a piece is divisible while it holds more
/// than grainsize elements. Any integer range is fine, INT_MIN to INT_MAX included (sizes are
/// computed without overflow); end not after begin is an empty range.
template <class Value>
class blocked_range {
public:
    using value_type = Value;
    using const_iterator = Value;
    using size_type = size_t;

    /// [begin, end), split down to pieces of grainsize (0 counts as 1).
    blocked_range(Value begin, Value end, size_type grainsize = 1)
        : begin_(begin), end_(end), grainsize_(grainsize ? grainsize : 1) {}

    /// The splitting constructor: takes the upper half of r, leaving r the lower half.
    blocked_range(blocked_range& r, split)
        : begin_(detail::range_advance(r.begin_, r.size() / 2)), end_(r.end_), grainsize_(r.grainsize_) {
        r.end_ = begin_;
    }

    Value begin() const { return begin_; }
    Value end() const { return end_; }
    /// How many elements: 0 when end is not after begin.
    size_type size() const { return detail::range_size(begin_, end_); }
    size_type grainsize() const { return grainsize_; }
    bool empty() const { return !(begin_ < end_); }
    /// Whether it holds more than grainsize elements (and so may be split).
    bool is_divisible() const { return grainsize_ < size(); }

private:
    Value begin_, end_;
    size_type grainsize_;
};

namespace detail {
/// How many times at most the split tree halves a range along one path (256 pieces).
inline constexpr int max_split_depth = 8;

// The split tree of a range, built on the calling thread: its leaves in order, and for every
// node the nodes or leaf below it. Node 0 is the root.
template <class Range>
struct split_tree {
    struct node {
        size_t left = 0, right = 0;  // child nodes, for an inner node
        size_t leaf = npos;          // the leaf's index, for a leaf
    };
    static constexpr size_t npos = static_cast<size_t>(-1);

    explicit split_tree(const Range& whole) {
        nodes.reserve(2 << max_split_depth);
        leaves.reserve(1 << max_split_depth);
        build(Range(whole), 0);
    }

    // Reduces the tree bottom-up, left before right: value_of(leaf) at the leaves, join(a, b)
    // at inner nodes. The order is the tree's, whatever order the leaves ran in.
    template <class Leaf, class Join>
    auto fold(size_t at, Leaf&& value_of, Join&& join) const {
        const node& n = nodes[at];
        if (n.leaf != npos) return value_of(n.leaf);
        auto left = fold(n.left, value_of, join);
        auto right = fold(n.right, value_of, join);
        return join(std::move(left), std::move(right));
    }

    std::vector<node> nodes;
    std::vector<Range> leaves;

private:
    size_t build(Range r, int depth) {
        size_t at = nodes.size();
        nodes.emplace_back();
        if (depth < max_split_depth && r.is_divisible()) {
            Range upper(r, split());
            size_t left = build(std::move(r), depth + 1);
            size_t right = build(std::move(upper), depth + 1);
            nodes[at].left = left;
            nodes[at].right = right;
        } else {
            nodes[at].leaf = leaves.size();
            leaves.push_back(std::move(r));
        }
        return at;
    }
};

// Runs run_leaf(i) for every leaf i of `tree` as tasks of one group on p, the last one on
// the calling thread, and waits; rethrows the first exception a task threw, else the calling
// thread's. The group is declared
// after everything the tasks use, so an exception leaving here waits for them first.
template <class Range, class RunLeaf>
void run_leaves(pool& p, const split_tree<Range>& tree, RunLeaf& run_leaf) {
    size_t n = tree.leaves.size();
    task_group group(p);
    for (size_t i = 0; i + 1 < n; ++i) group.run([&run_leaf, i] { run_leaf(i); });
    std::exception_ptr mine;
    try {
        run_leaf(n - 1);
    } catch (...) {
        mine = std::current_exception();
    }
    group.wait();
    if (mine) std::rethrow_exception(mine);
}

template <class T>
constexpr bool is_pool_v = std::is_same_v<std::decay_t<T>, pool>;

template <class It>
constexpr bool is_random_access_v =
    std::is_base_of_v<std::random_access_iterator_tag, typename std::iterator_traits<It>::iterator_category>;

template <class T, class = void>
struct is_iterator : std::false_type {};
template <class T>
struct is_iterator<T, std::void_t<typename std::iterator_traits<T>::iterator_category>> : std::true_type {};
}  // namespace detail

// ---- parallel_for ------------------------------------------------------------------------

/// Calls body(piece) for the pieces of `range` (a blocked_range or any oneTBB-style Range:
/// copyable, is_divisible(), a splitting constructor Range(Range&, flock::split)), as tasks
/// of a task_group on p, and returns when all have run, rethrowing the first exception a
/// piece threw. body is shared by the pieces (called concurrently, as const).
template <class Range, class Body>
void parallel_for(pool& p, const Range& range, const Body& body) {
    if constexpr (std::is_invocable_v<const Body&, const Range&>) {
        detail::split_tree<Range> tree(range);
        auto run_leaf = [&](size_t i) { body(tree.leaves[i]); };
        detail::run_leaves(p, tree, run_leaf);
    } else {
        static_assert(std::is_invocable_v<const Body&, const Range&>,
                      "flock::parallel_for(pool, range, body): body(range) must be callable on a const body");
    }
}

/// parallel_for(pool, range, body) on flock::global().
template <class Range, class Body, std::enable_if_t<!detail::is_pool_v<Range>, int> = 0>
void parallel_for(const Range& range, const Body& body) {
    parallel_for(global(), range, body);
}

/// Calls f(i) for every i in [first, last) on flock::global(): integers of any types (their
/// common type; any values, INT_MIN to INT_MAX included) or random-access iterators (f gets
/// the iterator). Nestable; rethrows the first exception. On another pool:
/// flock::parallel_for(pool, first, last, f) (integers) or, for iterators,
/// parallel_for(pool, blocked_range<It>(first, last), body) and parallel_for_each.
template <class I1, class I2, class F,
          std::enable_if_t<!detail::is_pool_v<I1> &&
                               ((std::is_integral_v<I1> && std::is_integral_v<I2>) ||
                                (std::is_same_v<I1, I2> && detail::is_iterator<I1>::value)),
                           int> = 0>
void parallel_for(I1 first, I2 last, const F& f) {
    using I = std::common_type_t<I1, I2>;
    if constexpr (!std::is_integral_v<I>) {
        static_assert(detail::is_random_access_v<I>, "flock::parallel_for needs random-access iterators");
    }
    parallel_for(global(), blocked_range<I>(static_cast<I>(first), static_cast<I>(last)),
                 [&f](const blocked_range<I>& r) {
                     for (I i = r.begin(); i != r.end(); ++i) f(i);
                 });
}

// ---- parallel_for_each -------------------------------------------------------------------

/// Calls f(*it) for every it in [first, last) on p, in pieces run as tasks of a task_group;
/// rethrows the first exception. Random-access iterators are split in place; others (a
/// std::list's, a std::set's) are first walked once on the calling thread to collect them.
template <class It, class F>
void parallel_for_each(pool& p, It first, It last, const F& f) {
    if constexpr (detail::is_random_access_v<It>) {
        parallel_for(p, blocked_range<It>(first, last), [&f](const blocked_range<It>& r) {
            for (It it = r.begin(); it != r.end(); ++it) f(*it);
        });
    } else {
        std::vector<It> each;
        for (It it = first; it != last; ++it) each.push_back(it);
        parallel_for(p, blocked_range<size_t>(0, each.size()), [&](const blocked_range<size_t>& r) {
            for (size_t i = r.begin(); i != r.end(); ++i) f(*each[i]);
        });
    }
}

/// parallel_for_each(pool, first, last, f) on flock::global().
template <class It, class F, std::enable_if_t<!detail::is_pool_v<It>, int> = 0>
void parallel_for_each(It first, It last, const F& f) {
    parallel_for_each(global(), first, last, f);
}

/// Calls f(x) for every element of c (anything with begin() and end()) on p.
template <class Container, class F>
void parallel_for_each(pool& p, Container& c, const F& f) {
    parallel_for_each(p, std::begin(c), std::end(c), f);
}

/// parallel_for_each(pool, c, f) on flock::global().
template <class Container, class F, std::enable_if_t<!detail::is_pool_v<Container>, int> = 0>
void parallel_for_each(Container& c, const F& f) {
    parallel_for_each(global(), std::begin(c), std::end(c), f);
}

// ---- parallel_reduce ---------------------------------------------------------------------

/// The functional form (oneTBB's): the pieces of `range` (see parallel_for) each give
/// func(piece, identity), as tasks of a task_group on p, and the results are combined with
/// reduction(left, right) in the split tree's order on the calling thread. For an
/// associative reduction the result equals the sequential one (exactly for integers), and it
/// is the same every run, bit for bit for floating point: the tree depends on the range
/// alone. Rethrows the first exception a piece threw (nothing is combined then).
template <class Range, class Value, class Func, class Reduction>
Value parallel_reduce(pool& p, const Range& range, const Value& identity, const Func& func,
                      const Reduction& reduction) {
    detail::split_tree<Range> tree(range);
    std::vector<std::optional<Value>> results(tree.leaves.size());
    auto run_leaf = [&](size_t i) { results[i].emplace(func(tree.leaves[i], identity)); };
    detail::run_leaves(p, tree, run_leaf);
    return tree.fold(
        0, [&](size_t leaf) -> Value { return std::move(*results[leaf]); },
        [&](Value a, Value b) -> Value { return reduction(std::move(a), std::move(b)); });
}

/// parallel_reduce(pool, range, identity, func, reduction) on flock::global().
template <class Range, class Value, class Func, class Reduction, std::enable_if_t<!detail::is_pool_v<Range>, int> = 0>
Value parallel_reduce(const Range& range, const Value& identity, const Func& func, const Reduction& reduction) {
    return parallel_reduce(global(), range, identity, func, reduction);
}

/// The imperative form (oneTBB's): body(piece) accumulates into a body; every piece but the
/// first gets a body made by body's splitting constructor Body(Body&, flock::split) (made on
/// the calling thread before the pieces run), and the bodies are joined (left.join(right))
/// in the split tree's order, into `body`. Deterministic as the functional form.
template <class Range, class Body>
void parallel_reduce(pool& p, const Range& range, Body& body) {
    detail::split_tree<Range> tree(range);
    size_t n = tree.leaves.size();
    std::vector<std::optional<Body>> split_bodies(n);  // [0] stays empty: that piece is `body`'s
    for (size_t i = 1; i < n; ++i) split_bodies[i].emplace(body, split());
    auto body_of = [&](size_t i) -> Body& { return i == 0 ? body : *split_bodies[i]; };
    auto run_leaf = [&](size_t i) { body_of(i)(tree.leaves[i]); };
    detail::run_leaves(p, tree, run_leaf);
    // Fold to the leftmost leaf of each subtree, which absorbs its right sibling's.
    tree.fold(
        0, [](size_t leaf) { return leaf; },
        [&](size_t left, size_t right) {
            body_of(left).join(body_of(right));
            return left;
        });
}

/// parallel_reduce(pool, range, body) on flock::global().
template <class Range, class Body, std::enable_if_t<!detail::is_pool_v<Range>, int> = 0>
void parallel_reduce(const Range& range, Body& body) {
    parallel_reduce(global(), range, body);
}

// ---- parallel_invoke ---------------------------------------------------------------------

/// Calls every f() (two or more callables), possibly in parallel, on p: all but the last as
/// tasks of a task_group, the last on the calling thread; returns when all have returned,
/// rethrowing the first exception a task threw, else the one the last callable threw.
template <class... F>
void parallel_invoke(pool& p, F&&... f) {
    static_assert(sizeof...(F) >= 1, "flock::parallel_invoke takes callables");
    task_group group(p);
    std::exception_ptr mine;
    size_t left = sizeof...(F);
    auto start = [&](auto& g) {
        if (--left > 0) {
            group.run([&g] { g(); });
            return;
        }
        try {
            g();
        } catch (...) {
            mine = std::current_exception();
        }
    };
    (start(f), ...);
    group.wait();
    if (mine) std::rethrow_exception(mine);
}

/// parallel_invoke(pool, f...) on flock::global().
template <class F0, class... F, std::enable_if_t<!detail::is_pool_v<F0>, int> = 0>
void parallel_invoke(F0&& f0, F&&... f) {
    parallel_invoke(global(), std::forward<F0>(f0), std::forward<F>(f)...);
}

}  // namespace flock

#endif  // FLOCK_ALGORITHMS_HPP
