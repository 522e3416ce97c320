#pragma once
// Worker threads for the sweep and the planner. A thread that cannot start (std::system_error: a
// process or container thread limit, RLIMIT_NPROC, an exhausted address space for its stack) only
// means fewer workers: the work is taken from a shared counter, so whoever runs finishes it all,
// the calling thread at least (issue #27: sweep aborted with exit 134 when it could not start one).
#include <algorithm>
#include <cstddef>
#include <functional>
#include <system_error>
#include <thread>
#include <vector>

namespace peakcast::sim::detail {

// Threads for `items` pieces of work: `requested` (0: every hardware thread), never more than the
// pieces, at least one.
inline unsigned worker_count(unsigned requested, std::size_t items) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::min<std::size_t>(requested ? requested : hw, std::max<std::size_t>(items, 1)));
}

// How a worker is started; std::thread's constructor unless a test stands in for a thread limit.
using ThreadStarter = std::function<std::thread(const std::function<void()>&)>;

inline std::thread start_std_thread(const std::function<void()>& work) { return std::thread(work); }

// Up to `count` threads running `work`; fewer when starting one fails (the rest are not tried).
inline std::vector<std::thread> start_workers(unsigned count, const std::function<void()>& work,
                                              const ThreadStarter& start = start_std_thread) {
  std::vector<std::thread> pool;
  pool.reserve(count);
  for (unsigned t = 0; t < count; ++t) {
    try {
      pool.push_back(start(work));
    } catch (const std::system_error&) {
      break;
    }
  }
  return pool;
}

// `work` on `threads` threads in all, the calling thread one of them; returns when every one is done.
inline void run_on_workers(unsigned threads, const std::function<void()>& work, const ThreadStarter& start = start_std_thread) {
  std::vector<std::thread> pool = start_workers(threads > 1 ? threads - 1 : 0, work, start);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace peakcast::sim::detail
