//===- PtxScan.h - facts read back from emitted PTX -------------*- C++ -*-===//
//
// Properties the runtime relies on are checked on the PTX the back end
// wrote, not assumed from the IR that went in.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_PTXSCAN_H
#define TCC_COMPILER_PTXSCAN_H

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace tcc {

/// The kernels (`.entry` names) of `ptx` that execute `griddepcontrol.wait`
/// before anything else that may touch global memory or leave the kernel:
/// in their first block, with no load or store outside parameter, shared
/// and local space, no asynchronous copy, atomic, prefetch, texture access,
/// call, branch, label or return before it. Only these may be launched
/// while the kernel before them still runs (tcc-gpu-grid-dependency).
std::vector<std::string> kernelsWaitingFirst(llvm::StringRef ptx);

} // namespace tcc

#endif // TCC_COMPILER_PTXSCAN_H
