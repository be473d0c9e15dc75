//===- LaunchOrder.h - which queued work must wait for which ----*- C++ -*-===//
//
// A CUDA graph need not be a chain: a launch has to wait only for the earlier
// work whose memory it shares, where one of the two writes. The runtime
// records a run's graph with exactly those edges, so that the launches of
// independent branches (an Inception block's, a NASNet cell's) run side by
// side instead of one small grid at a time. The edges come from the bound
// addresses, not from buffer ids: two buffers of the arena may share memory
// (the memory plan reuses it), and a caller may bind overlapping inputs and
// outputs.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_LAUNCHORDER_H
#define TCC_RUNTIME_LAUNCHORDER_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tcc::rt {

/// Bytes [begin, end) that a piece of work reads, or writes when `write`.
struct MemoryRange {
  uintptr_t begin = 0, end = 0;
  bool write = false;
};

/// For each item (the ranges it touches, in queue order), the earlier items
/// it must follow: those touching a range that overlaps one of its own where
/// either side writes. The list is transitively reduced (an item reached
/// through another of the list is left out) and ascending. Empty ranges
/// touch nothing.
std::vector<std::vector<size_t>>
orderDependencies(const std::vector<std::vector<MemoryRange>> &items);

} // namespace tcc::rt

#endif // TCC_RUNTIME_LAUNCHORDER_H
