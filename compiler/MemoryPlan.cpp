//===- MemoryPlan.cpp - one arena for a model's intermediates -------------===//
#include "compiler/MemoryPlan.h"

#include <algorithm>
#include <numeric>

namespace tcc {

MemoryPlan planMemory(const std::vector<Lifetime> &buffers,
                      uint64_t alignment) {
  auto alignUp = [&](uint64_t x) {
    return (x + alignment - 1) / alignment * alignment;
  };
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].bytes > buffers[b].bytes;
  });
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> placed;
  for (size_t i : order) {
    const Lifetime &buf = buffers[i];
    // Busy ranges of already-placed buffers whose lifetime overlaps.
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (size_t j : placed) {
      const Lifetime &other = buffers[j];
      if (other.last < buf.first || buf.last < other.first)
        continue;
      busy.push_back({plan.offsets[j], plan.offsets[j] + other.bytes});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + buf.bytes <= begin)
        break;
      offset = std::max(offset, alignUp(end));
    }
    plan.offsets[i] = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, alignUp(offset + buf.bytes));
    placed.push_back(i);
  }
  return plan;
}

} // namespace tcc
