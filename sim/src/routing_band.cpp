#include "routing_band.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "worker_pool.hpp"

namespace peakcast::sim::detail {

namespace {

// splitmix64 (Steele, Lea, Flood 2014): a well-mixed 64-bit hash of a counter.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform in (0, 1) from the top 53 bits.
double unit(std::uint64_t x) { return (static_cast<double>(x >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

}  // namespace

std::uint64_t routing_instance(int iteration, int chunk, int microbatch, std::size_t module, std::size_t part) {
  std::uint64_t k = mix(static_cast<std::uint64_t>(iteration));
  k = mix(k ^ static_cast<std::uint64_t>(chunk));
  k = mix(k ^ static_cast<std::uint64_t>(microbatch));
  k = mix(k ^ static_cast<std::uint64_t>(module));
  return mix(k ^ static_cast<std::uint64_t>(part));
}

double expert_load(std::uint64_t sample, std::uint64_t instance, int expert, double sigma) {
  // The two constants are arbitrary salts: they keep the expert's and the second uniform's keys apart from the
  // others; any fixed odd values give the same distribution (tested: mean 1, spread sigma).
  const std::uint64_t k = mix(mix(sample) ^ instance ^ mix(static_cast<std::uint64_t>(expert) + 0x5bd1e995ULL));
  // Box-Muller from two uniforms of the one key.
  const double pi = 3.14159265358979323846;
  const double z = std::sqrt(-2.0 * std::log(unit(mix(k)))) * std::cos(2.0 * pi * unit(mix(k ^ 0xa5a5a5a5a5a5a5a5ULL)));
  return std::max(0.0, 1.0 + sigma * z);
}

std::int64_t routed_bytes(const RoutedRequest& r, std::uint64_t sample, double sigma) {
  if (r.bytes <= 0 || r.row_group < 0 || r.row_groups <= 0) return r.bytes;
  double load = 0;
  if (r.row_group < r.row_groups) {
    load = expert_load(sample, r.instance, r.row_group, sigma);
  } else {
    for (int e = 0; e < r.row_groups; ++e) load += expert_load(sample, r.instance, e, sigma);
    load /= r.row_groups;
  }
  return static_cast<std::int64_t>(std::llround(static_cast<double>(r.bytes) * load));
}

std::vector<Bytes> routing_band_peaks(const std::vector<RoutedRequest>& stream, const model::AllocatorSettings& settings,
                                      double sigma, int samples) {
  std::int32_t ids = 0;
  for (const RoutedRequest& r : stream) ids = std::max(ids, r.id + 1);
  const auto replay = [&](int s) {
    model::CachingAllocatorModel alloc(settings);
    std::vector<int> live(static_cast<std::size_t>(ids), -1);  // id -> handle, -1: not allocated
    for (const RoutedRequest& r : stream) {
      if (r.id < 0) continue;
      int& h = live[static_cast<std::size_t>(r.id)];
      if (r.bytes <= 0) {
        if (h >= 0) alloc.release(h);  // else never allocated (no rows) or already freed
        h = -1;
        continue;
      }
      const std::int64_t bytes = routed_bytes(r, static_cast<std::uint64_t>(s), sigma);
      if (bytes <= 0) continue;
      h = alloc.allocate(Bytes{bytes});
      if (h == model::CachingAllocatorModel::kFailed) {
        alloc.set_capacity(0);
        h = alloc.allocate(Bytes{bytes});
      }
    }
    return alloc.peak_reserved();
  };
  // The draws are independent: one per worker thread at a time (worker_pool.hpp).
  std::vector<Bytes> peaks(static_cast<std::size_t>(std::max(0, samples)));
  std::atomic<int> next{0};
  run_on_workers(worker_count(0, peaks.size()), [&] {
    for (int i = next++; i < samples; i = next++) peaks[static_cast<std::size_t>(i)] = replay(i + 1);
  });
  return peaks;
}

}  // namespace peakcast::sim::detail
