// The sweep's and the planner's worker threads when some cannot start (issue #27: sweep aborted with
// exit 134). A starter that fails after k threads stands in for a process or container thread limit.
#include <catch2/catch.hpp>

#include <atomic>
#include <system_error>
#include <vector>

#include "worker_pool.hpp"

using namespace peakcast::sim::detail;

namespace {

// Fails with EAGAIN, what std::thread's constructor throws at RLIMIT_NPROC, after `allowed` starts.
ThreadStarter failing_after(unsigned allowed, unsigned& started) {
  return [allowed, &started](const std::function<void()>& work) {
    if (started == allowed) throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
    ++started;
    return std::thread(work);
  };
}

}  // namespace

TEST_CASE("worker pool: every item is done whether 0, some or all of the threads start") {
  constexpr std::size_t kItems = 1000;
  constexpr unsigned kThreads = 8;
  for (const unsigned allowed : {0u, 1u, 3u, kThreads - 1, kThreads + 4}) {
    INFO(allowed << " threads may start");
    std::vector<std::atomic<int>> done(kItems);
    std::atomic<std::size_t> next{0};
    const auto work = [&] {
      for (std::size_t i = next++; i < kItems; i = next++) ++done[i];
    };
    unsigned started = 0;
    run_on_workers(kThreads, work, failing_after(allowed, started));
    CHECK(started == std::min(allowed, kThreads - 1));                      // the caller is the last worker; no retry after a failure
    for (std::size_t i = 0; i < kItems; ++i) REQUIRE(done[i].load() == 1);  // each item once
  }
}

TEST_CASE("worker pool: start_workers returns the threads that started, stopping at the first failure") {
  unsigned started = 0;
  std::atomic<int> runs{0};
  auto pool = start_workers(
      5, [&] { ++runs; }, failing_after(2, started));
  CHECK(pool.size() == 2);
  for (auto& t : pool) t.join();
  CHECK(runs.load() == 2);
  CHECK(start_workers(0, [] {}).empty());
}
