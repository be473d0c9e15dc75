//===- AttentionGen.h - what the attention generators share -----*- C++ -*-===//
//
// tcc-flash-gen (mma.sync) and tcc-flash3-gen (wgmma) build the same
// attention cases for two templates: the same flags, the same hooks built
// the way the compiler hands them over, the same JSON line for
// tests/gpu/flash/check_flash.py. This is that part.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_GPU_ATTENTIONGEN_H
#define TCC_TESTS_GPU_ATTENTIONGEN_H

#include "compiler/gpu/AttentionKernel.h"
#include "tests/gpu/TemplateGen.h"

#include "mlir/IR/MLIRContext.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::gen {

/// One attention case from the command line.
struct AttentionCase {
  tcc::gpu::AttentionProblem p;
  GenFlags flags;
  bool causal = false, alibi = false, callbacks = false;
  int64_t window = 0;
  double softcap = 0;
};

/// Parses argv (the flags of tcc-flash-gen, see tests/gpu/flash/FlashGen.cpp)
/// into a case whose problem carries the hooks; `defaultChip` unless
/// --chip. Dies on bad input.
AttentionCase parseAttentionCase(int argc, char **argv, mlir::MLIRContext &ctx,
                                 const std::string &defaultChip);

/// Prints the case and its kernel as one JSON line (check_flash.py's input);
/// with `decode`, `launch` is its partial kernel's and the line describes the
/// combine and the scratch too.
void printAttentionCase(const AttentionCase &c,
                        const std::vector<int64_t> &schedule,
                        const tcc::gpu::KernelLaunch &launch,
                        const tcc::gpu::DecodeKernels *decode = nullptr);

} // namespace tcc::gen

#endif // TCC_TESTS_GPU_ATTENTIONGEN_H
