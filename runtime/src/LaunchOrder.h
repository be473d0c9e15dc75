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
/// With `stride`, only [begin + k·stride + offset, ... + bytes) of each
/// period k (offset + bytes <= stride): the channels of a concat's buffer
/// one of its producers writes in place.
struct MemoryRange {
  uintptr_t begin = 0, end = 0;
  bool write = false;
  uintptr_t stride = 0, offset = 0, bytes = 0;
};

/// Whether two ranges may share a byte: strided ranges of the same span and
/// period compare their slices, anything else its whole span.
bool rangesOverlap(const MemoryRange &x, const MemoryRange &y);

/// For each item (the ranges it touches, in queue order), the earlier items
/// it must follow: those touching a range that overlaps one of its own
/// (rangesOverlap) where either side writes. The list is transitively
/// reduced (an item reached through another of the list is left out) and
/// ascending. Empty ranges touch nothing.
std::vector<std::vector<size_t>>
orderDependencies(const std::vector<std::vector<MemoryRange>> &items);

} // namespace tcc::rt

#endif // TCC_RUNTIME_LAUNCHORDER_H
