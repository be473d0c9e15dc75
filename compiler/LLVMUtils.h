//===- LLVMUtils.h - LLVM back-end steps shared by targets --------*- C++
//-*-===//
#ifndef TCC_COMPILER_LLVMUTILS_H
#define TCC_COMPILER_LLVMUTILS_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/IR/Module.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc {

/// Optimises `module` for the x86-64 CPU `cpu`, then produces a shared
/// object linked by ld.lld and, where asked for (non-null), the optimised
/// LLVM IR text and the assembly text (each another pass over the code: the
/// assembly is a second run of the code generator).
mlir::LogicalResult
compileAndLinkHostModule(llvm::Module &module, const std::string &cpu,
                         unsigned optLevel, std::vector<uint8_t> &sharedObject,
                         std::string *llvmIR, std::string *assembly,
                         std::string &error);

/// Compiles `module` (no optimisation) to an x86-64 ELF relocatable object.
mlir::LogicalResult emitHostObject(llvm::Module &module,
                                   std::vector<uint8_t> &object,
                                   std::string &error);

/// Links libdevice (from the CUDA toolkit at `cudaPath`, searched for when
/// empty) if the module calls it, optimises the module for `chip` (sm_NN)
/// and produces PTX text and the optimised LLVM IR.
mlir::LogicalResult compileNvptxModule(llvm::Module &module,
                                       const std::string &chip,
                                       unsigned optLevel,
                                       const std::string &cudaPath,
                                       std::string &ptx, std::string &llvmIR,
                                       std::string &error);

/// Links the ROCm device libraries (from `deviceLibDir`, searched for when
/// empty) if the module calls them, optimises it for `chip` (gfxNNN) and
/// produces an HSA code object linked by ld.lld, with the IR and assembly.
mlir::LogicalResult compileAmdgpuModule(llvm::Module &module,
                                        const std::string &chip,
                                        unsigned optLevel,
                                        const std::string &deviceLibDir,
                                        std::vector<uint8_t> &hsaco,
                                        std::string &llvmIR,
                                        std::string &assembly,
                                        std::string &error);

/// Runs `program` with `args`, returning its exit status, or -1 when it could
/// not be started; its stderr goes to `errorOutput`.
int runProgram(const std::string &program, const std::vector<std::string> &args,
               std::string &errorOutput);

/// Finds a tool of LLVM 22 (ld.lld, ...) beside the LLVM we link, or on PATH.
std::string findLLVMTool(const std::string &name);

} // namespace tcc

#endif // TCC_COMPILER_LLVMUTILS_H
