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

TEST_CASE("slices of one buffer written side by side", "[launchorder]") {
  // A concat's buffer of 4 pixels x 64 bytes; three producers write their
  // channels in place, a consumer reads it whole.
  auto slice = [](uintptr_t offset, uintptr_t bytes) {
    MemoryRange r{1024, 1024 + 256, true};
    r.stride = 64;
    r.offset = offset;
    r.bytes = bytes;
    return r;
  };
  Deps d = orderDependencies({{slice(0, 16)},
                              {slice(16, 32)},
                              {slice(48, 16)},
                              {reads(1024, 1280)},
                              {slice(40, 16)}});
  // The last slice overlaps the second's and the third's channels, and
  // overwrites what the reader read.
  CHECK(d == Deps{{}, {}, {}, {0, 1, 2}, {3}});
  // Another period or span: compared as whole spans.
  MemoryRange other = slice(48, 16);
  other.stride = 128;
  CHECK(rangesOverlap(slice(0, 16), other));
  CHECK_FALSE(rangesOverlap(slice(0, 16), slice(16, 16)));
  CHECK(rangesOverlap(slice(0, 17), slice(16, 16)));
}

TEST_CASE("random lists match the brute force", "[launchorder]") {
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 200; ++round) {
    size_t n = 1 + rng() % 40;
    std::vector<std::vector<MemoryRange>> items(n);
    for (auto &item : items) {
      size_t k = rng() % 4;
      for (size_t r = 0; r < k; ++r) {
        if (rng() % 3 == 0) {
          // A slice of one of two strided buffers: [100, 196) or
          // [200, 296), periods of 24 or 32 bytes.
          uintptr_t stride = rng() % 2 ? 24 : 32;
          uintptr_t b = rng() % 2 ? 100 : 200;
          MemoryRange s{b, b + 96, true};
          s.stride = stride;
          s.offset = rng() % stride;
          s.bytes = rng() % (stride - s.offset + 1);
          item.push_back(s);
          continue;
        }
        uintptr_t b = rng() % 300, len = rng() % 30;
        item.push_back({b, b + len, rng() % 3 == 0});
      }
    }
    Deps d = orderDependencies(items);
    REQUIRE(d.size() == n);
    // The bytes a range touches, one by one.
    auto bytes = [](const MemoryRange &x) {
      std::vector<bool> on(400);
      for (uintptr_t a = x.begin; a < x.end; ++a)
        on[a] = !x.stride || ((a - x.begin) % x.stride >= x.offset &&
                              (a - x.begin) % x.stride < x.offset + x.bytes);
      return on;
    };
    // Soundness is byte-exact; an edge may be conservative (whole spans).
    auto touchesSame = [&](size_t i, size_t j, bool exact) {
      for (const MemoryRange &x : items[i])
        for (const MemoryRange &y : items[j]) {
          if (!x.write && !y.write)
            continue;
          if (!exact) {
            if (x.begin < x.end && y.begin < y.end && x.begin < y.end &&
                y.begin < x.end)
              return true;
            continue;
          }
          std::vector<bool> bx = bytes(x), by = bytes(y);
          for (size_t a = 0; a < bx.size(); ++a)
            if (bx[a] && by[a])
              return true;
        }
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
        if (touchesSame(i, j, true))
          CHECK(reach[i][j]); // every conflict is ordered
      for (size_t a = 0; a < d[i].size(); ++a) {
        CHECK(touchesSame(i, d[i][a], false)); // every edge may conflict
        if (a)
          CHECK(d[i][a - 1] < d[i][a]);
        for (size_t b = 0; b < d[i].size(); ++b)
          CHECK_FALSE(reach[d[i][b]][d[i][a]]); // and needed
      }
    }
  }
}
