//===- LaunchOrder.cpp - which queued work must wait for which ------------===//

#include "runtime/src/LaunchOrder.h"

#include <algorithm>

namespace tcc::rt {

bool rangesOverlap(const MemoryRange &x, const MemoryRange &y) {
  if (x.begin >= x.end || y.begin >= y.end || x.end <= y.begin ||
      y.end <= x.begin)
    return false;
  if (x.stride && x.stride == y.stride && x.begin == y.begin && x.end == y.end)
    return x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
  return true;
}

namespace {

bool conflicts(const std::vector<MemoryRange> &a,
               const std::vector<MemoryRange> &b) {
  for (const MemoryRange &x : a)
    for (const MemoryRange &y : b)
      if ((x.write || y.write) && rangesOverlap(x, y))
        return true;
  return false;
}

} // namespace

std::vector<std::vector<size_t>>
orderDependencies(const std::vector<std::vector<MemoryRange>> &items) {
  size_t n = items.size(), words = (n + 63) / 64;
  // ancestors[i]: every item that item i waits for, directly or not.
  std::vector<std::vector<uint64_t>> ancestors(n, std::vector<uint64_t>(words));
  std::vector<std::vector<size_t>> deps(n);
  std::vector<uint64_t> covered(words);
  for (size_t i = 0; i < n; ++i) {
    std::fill(covered.begin(), covered.end(), 0);
    std::vector<uint64_t> &mine = ancestors[i];
    // Latest first: an earlier conflict already reached through a later one
    // needs no edge of its own.
    for (size_t j = i; j-- > 0;) {
      if (covered[j / 64] >> (j % 64) & 1)
        continue;
      if (!conflicts(items[i], items[j]))
        continue;
      deps[i].push_back(j);
      const std::vector<uint64_t> &theirs = ancestors[j];
      for (size_t w = 0; w < words; ++w)
        covered[w] |= theirs[w];
      covered[j / 64] |= uint64_t(1) << (j % 64);
    }
    mine = covered;
    std::reverse(deps[i].begin(), deps[i].end());
  }
  return deps;
}

} // namespace tcc::rt
