//===- CpuFeatures.h - x86 features a host bundle needs ------*- C++ -*-===//
//
// A host code object compiled for a newer CPU (tcc compile --cpu) executes
// instructions an older CPU lacks: SIGILL in the middle of a run. The
// compiler records the features its code may use (LLVM's names, those this
// table knows), the runtime checks them with cpuid before loading. No LLVM
// here: the runtime builds without it.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPUFEATURES_H
#define TCC_RUNTIME_CPUFEATURES_H

#include <string>
#include <vector>

namespace tcc::cpu {

/// The x86 feature names (as LLVM spells them: "avx2", "avx512bw",
/// "sse4.2") whose presence the runtime can check, sorted.
const std::vector<std::string> &checkableFeatures();

/// The features of `required` the running CPU (and OS: AVX and AVX-512
/// register state) lacks, in order. A name the table does not know counts as
/// lacking: a bundle from a newer compiler is refused rather than run.
std::vector<std::string>
missingFeatures(const std::vector<std::string> &required);

} // namespace tcc::cpu

#endif // TCC_RUNTIME_CPUFEATURES_H
