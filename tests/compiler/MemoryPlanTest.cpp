//===- MemoryPlanTest.cpp - the arena planner -----------------------------===//
#include "compiler/MemoryPlan.h"

#include <catch2/catch.hpp>

#include <random>

using tcc::Lifetime;
using tcc::planMemory;

static bool overlapsInTime(const Lifetime &a, const Lifetime &b) {
  return !(a.last < b.first || b.last < a.first);
}

TEST_CASE("disjoint lifetimes share bytes", "[memory-plan]") {
  auto plan = planMemory({{1000, 0, 1}, {1000, 2, 3}});
  CHECK(plan.offsets[0] == 0);
  CHECK(plan.offsets[1] == 0);
  CHECK(plan.arenaBytes == 1024);
}

TEST_CASE("a buffer read by the launch that writes another does not share",
          "[memory-plan]") {
  // Buffer 0 is last read by launch 1, which writes buffer 1.
  auto plan = planMemory({{100, 0, 1}, {100, 1, 2}});
  CHECK(plan.offsets[0] != plan.offsets[1]);
  CHECK(plan.offsets[1] % 64 == 0);
}

TEST_CASE("random plans never overlap live buffers", "[memory-plan]") {
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Lifetime> bufs;
    int n = 1 + rng() % 40;
    for (int i = 0; i < n; ++i) {
      int first = rng() % 20;
      bufs.push_back({rng() % 5000, first, first + int(rng() % 6)});
    }
    auto plan = planMemory(bufs);
    uint64_t sumLive = 0;
    for (int i = 0; i < n; ++i) {
      CHECK(plan.offsets[i] % 64 == 0);
      CHECK(plan.offsets[i] + bufs[i].bytes <= plan.arenaBytes);
      sumLive += (bufs[i].bytes + 63) / 64 * 64;
      for (int j = i + 1; j < n; ++j) {
        if (!overlapsInTime(bufs[i], bufs[j]) || !bufs[i].bytes ||
            !bufs[j].bytes)
          continue;
        bool apart = plan.offsets[i] + bufs[i].bytes <= plan.offsets[j] ||
                     plan.offsets[j] + bufs[j].bytes <= plan.offsets[i];
        CHECK(apart);
      }
    }
    // Never worse than giving every buffer its own bytes.
    CHECK(plan.arenaBytes <= sumLive);
  }
}
