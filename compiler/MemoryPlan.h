//===- MemoryPlan.h - one arena for a model's intermediates -------*- C++
//-*-===//
#ifndef TCC_COMPILER_MEMORYPLAN_H
#define TCC_COMPILER_MEMORYPLAN_H

#include <cstdint>
#include <vector>

namespace tcc {

/// A buffer that lives from the launch that writes it to the last launch
/// that reads it (both inclusive).
struct Lifetime {
  uint64_t bytes = 0;
  int first = 0;
  int last = 0;
};

struct MemoryPlan {
  std::vector<uint64_t> offsets; // one per lifetime, in input order
  uint64_t arenaBytes = 0;
};

/// Places buffers in one arena so that two buffers share bytes only when
/// their lifetimes are disjoint. Greedy by size, largest first, each at the
/// lowest aligned offset that fits between the live buffers already placed.
MemoryPlan planMemory(const std::vector<Lifetime> &buffers,
                      uint64_t alignment = 64);

} // namespace tcc

#endif // TCC_COMPILER_MEMORYPLAN_H
