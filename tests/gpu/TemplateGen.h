//===- TemplateGen.h - what the kernel template generators share -*- C++
//-*-===//
//
// tcc-matmul-gen and tcc-flash-gen (tests/gpu/matmul, tests/gpu/flash) each
// build one kernel of a compiler/gpu template and lower it to PTX the way the
// compiler does; this is the part they share: the context, flag parsing,
// the kernel module, the lowering and the PTX file.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_GPU_TEMPLATEGEN_H
#define TCC_TESTS_GPU_TEMPLATEGEN_H

#include "compiler/Target.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tcc::gen {

/// Registers every dialect, translation and target that building and
/// lowering a kernel needs and returns the context. `tool` prefixes die()'s
/// messages.
std::unique_ptr<mlir::MLIRContext> initGenerator(const std::string &tool);

/// Prints "TOOL: msg" to stderr and exits with status 1.
[[noreturn]] void die(const std::string &msg);

/// The integer value `v` of `flag` (non-negative unless allowNegative, at
/// most 2^40 in magnitude); dies otherwise.
int64_t parseInt(const std::string &flag, const std::string &v,
                 bool allowNegative = false);

/// `n` comma-separated integers (as parseInt); dies otherwise.
std::vector<int64_t> parseIntList(const std::string &flag, const std::string &v,
                                  size_t n, bool allowNegative = false);

/// The element type named by `v` of `flag`: bf16, f16 or f32; dies
/// otherwise.
mlir::Type parseFloatType(mlir::MLIRContext &ctx, const std::string &flag,
                          const std::string &v);

/// The flags every generator takes.
struct GenFlags {
  std::string chip = "sm_90", name, outDir = ".", schedule;
  bool emitMlir = false;
};

/// Takes the value of the flag being parsed (dies when there is none).
using FlagValue = llvm::function_ref<std::string()>;

/// Parses argv: the common flags (--chip, --name, --out-dir, --schedule,
/// --emit-mlir) into `flags`, every other through `own`, which returns false
/// for a flag it does not know. Dies on an unknown flag.
void parseFlags(int argc, char **argv, GenFlags &flags,
                llvm::function_ref<bool(const std::string &, FlagValue)> own);

/// Dies unless `chip` is one the templates target (sm_90, sm_90a or sm_80).
void checkChip(const std::string &chip);

/// The compiler's description of `chip` (dies when it has none).
tcc::TargetDesc targetOf(const std::string &chip);

/// A module (a GPU container) holding an empty `gpu.module @kernels`.
struct KernelModule {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::gpu::GPUModuleOp kernels;
};
KernelModule createKernelModule(mlir::OpBuilder &b);

/// Verifies the built module (dies if it does not verify); with `emitMlir`
/// prints it to stdout and returns true: the caller is done.
bool verifyOrPrint(mlir::ModuleOp module, bool emitMlir);

/// Lowers `module` with the NVVM pipeline the compiler uses for its GPU
/// kernels and returns the PTX; dies when that fails.
std::string lowerToPtx(mlir::ModuleOp module, const std::string &chip);

/// Writes `ptx` to DIR/NAME.ptx; dies when that fails.
void writePtx(const std::string &outDir, const std::string &name,
              const std::string &ptx);

} // namespace tcc::gen

#endif // TCC_TESTS_GPU_TEMPLATEGEN_H
