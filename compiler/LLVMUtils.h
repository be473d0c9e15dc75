//===- LLVMUtils.h - LLVM back-end steps shared by targets --------*- C++
//-*-===//
#ifndef TCC_COMPILER_LLVMUTILS_H
#define TCC_COMPILER_LLVMUTILS_H

#include "compiler/Target.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/IR/Module.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc {

/// Resolves --cpu into an LLVM CPU name and feature string: "native" is this
/// machine's CPU and features (llvm::sys::getHostCPUName and
/// getHostCPUFeatures); a name LLVM's x86 back end does not know fails with
/// a one-line `error`.
mlir::LogicalResult resolveHostCpu(const std::string &cpu, std::string &name,
                                   std::string &features, std::string &error);

/// Optimises `module` for the x86-64 CPU `cpu` with `features`, then
/// produces a shared object linked by ld.lld and, where asked for
/// (non-null), the optimised LLVM IR text and the assembly text (each
/// another pass over the code: the assembly is a second run of the code
/// generator). `requiredFeatures` gets the x86 features the code may use
/// that the runtime checks before loading it.
mlir::LogicalResult compileAndLinkHostModule(
    llvm::Module &module, const std::string &cpu, const std::string &features,
    unsigned optLevel, std::vector<uint8_t> &sharedObject, std::string *llvmIR,
    std::string *assembly, std::vector<std::string> &requiredFeatures,
    std::string &error);

/// Compiles `module` (no optimisation) to an x86-64 ELF relocatable object.
mlir::LogicalResult emitHostObject(llvm::Module &module,
                                   std::vector<uint8_t> &object,
                                   std::string &error);

/// Links libdevice (from the CUDA toolkit at `cudaPath`, searched for when
/// empty) if the module calls it, optimises the module for the NVIDIA
/// `target` and produces PTX text and the optimised LLVM IR.
mlir::LogicalResult compileNvptxModule(llvm::Module &module,
                                       const TargetDesc &target,
                                       unsigned optLevel,
                                       const std::string &cudaPath,
                                       std::string &ptx, std::string &llvmIR,
                                       std::string &error);

/// Links the ROCm device libraries (from `deviceLibDir`, searched for when
/// empty) if the module calls them, optimises it for the AMD `target` and
/// produces an HSA code object linked by ld.lld, with the IR and assembly.
mlir::LogicalResult compileAmdgpuModule(llvm::Module &module,
                                        const TargetDesc &target,
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
