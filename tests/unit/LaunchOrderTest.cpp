// The order of a CUDA graph's work (runtime/src/LaunchOrder.h): hand-derived
// cases, and random lists checked against a brute force over every pair.
#include "runtime/src/LaunchOrder.h"

#include <catch2/catch.hpp>

#include <random>

using namespace tcc::rt;

namespace {

MemoryRange reads(uintptr_t b, uintptr_t e) { return {b, e, false}; }
MemoryRange writes(uintptr_t b, uintptr_t e) { return {b, e, true}; }
using Deps = std::vector<std::vector<size_t>>;

} // namespace

TEST_CASE("readers of one buffer wait for its writer only", "[launchorder]") {
  // 0 writes A; 1 and 2 read A and write B, C; 3 reads B and C.
  Deps d =
      orderDependencies({{writes(0, 64)},
                         {reads(0, 64), writes(64, 128)},
                         {reads(0, 64), writes(128, 192)},
                         {reads(64, 128), reads(128, 192), writes(192, 256)}});
  CHECK(d == Deps{{}, {0}, {0}, {1, 2}});
}

TEST_CASE("a write waits for earlier readers and writers", "[launchorder]") {
  // 2 overwrites what 1 read (reused memory): it waits for 1, and so for 0
  // through it, without an edge of its own to 0.
  Deps d = orderDependencies(
      {{writes(0, 64)}, {reads(0, 64), writes(64, 128)}, {writes(0, 32)}});
  CHECK(d == Deps{{}, {0}, {1}});
  // Partial overlap counts; touching ends do not; empty ranges touch
  // nothing.
  d = orderDependencies({{writes(0, 64)},
                         {writes(63, 65)},
                         {writes(65, 70)},
                         {writes(10, 10)},
                         {reads(64, 66)}});
  CHECK(d == Deps{{}, {0}, {}, {}, {1, 2}});
}

TEST_CASE("random lists match the brute force", "[launchorder]") {
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 200; ++round) {
    size_t n = 1 + rng() % 40;
    std::vector<std::vector<MemoryRange>> items(n);
    for (auto &item : items) {
      size_t k = rng() % 4;
      for (size_t r = 0; r < k; ++r) {
        uintptr_t b = rng() % 200, len = rng() % 30;
        item.push_back({b, b + len, rng() % 3 == 0});
      }
    }
    Deps d = orderDependencies(items);
    REQUIRE(d.size() == n);
    auto conflict = [&](size_t i, size_t j) {
      for (const MemoryRange &x : items[i])
        for (const MemoryRange &y : items[j])
          if ((x.write || y.write) && x.begin < x.end && y.begin < y.end &&
              x.begin < y.end && y.begin < x.end)
            return true;
      return false;
    };
    // reach[i][j]: j is ordered before i through the edges.
    std::vector<std::vector<bool>> reach(n, std::vector<bool>(n));
    for (size_t i = 0; i < n; ++i)
      for (size_t j : d[i]) {
        REQUIRE(j < i);
        reach[i][j] = true;
        for (size_t k = 0; k < n; ++k)
          if (reach[j][k])
            reach[i][k] = true;
      }
    for (size_t i = 0; i < n; ++i) {
      INFO("round " << round << " item " << i);
      for (size_t j = 0; j < i; ++j)
        if (conflict(i, j))
          CHECK(reach[i][j]); // every conflict is ordered
      for (size_t a = 0; a < d[i].size(); ++a) {
        CHECK(conflict(i, d[i][a])); // every edge is a conflict
        if (a)
          CHECK(d[i][a - 1] < d[i][a]);
        for (size_t b = 0; b < d[i].size(); ++b)
          CHECK_FALSE(reach[d[i][b]][d[i][a]]); // and needed
      }
    }
  }
}
