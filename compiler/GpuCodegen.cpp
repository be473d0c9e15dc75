//===- GpuCodegen.cpp - kernels for NVIDIA and AMD GPUs -------------------===//
//
// The kernel functions are bufferized as for the host, their loops mapped to
// launches (tcc-map-to-gpu) and outlined into device functions. What is left
// of each kernel function on the host side is a launch sequence over its
// buffers and scratch allocations: that becomes the kernel's plan in the
// bundle. The device functions, gathered into one gpu.module, go through
// MLIR's NVVM or ROCDL lowering and LLVM's NVPTX or AMDGPU back end.
//
//===----------------------------------------------------------------------===//
#include "compiler/GpuCodegen.h"
#include "compiler/KernelPrep.h"
#include "compiler/LLVMUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

using namespace mlir;

bool tcc::isNvidiaTarget(const std::string &target) {
  StringRef t(target);
  if (!t.consume_front("sm_"))
    return false;
  t.consume_back("a");
  unsigned version;
  return !t.getAsInteger(10, version) && version >= 70 && version < 1000;
}

bool tcc::isAmdTarget(const std::string &target) {
  StringRef t(target);
  return t.consume_front("gfx") && t.size() >= 3 && t.size() <= 4 &&
         llvm::all_of(t, llvm::isHexDigit);
}

namespace {

/// From bufferized kernels to launches of outlined device functions.
const char *kLaunchPipeline =
    "func.func(convert-linalg-to-parallel-loops, canonicalize,"
    " tcc-map-to-gpu),"
    "gpu-kernel-outlining, canonicalize, cse";

/// The device functions to the LLVM dialect, per family.
const char *kNvvmPipeline =
    "gpu.module(expand-strided-metadata, lower-affine, convert-nvgpu-to-nvvm,"
    " convert-vector-to-llvm, convert-scf-to-cf,"
    " convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
    " convert-math-to-llvm, reconcile-unrealized-casts)";
const char *kRocdlPipeline =
    "gpu.module(expand-strided-metadata, lower-affine,"
    " convert-vector-to-llvm, convert-scf-to-cf,"
    " arith-expand{include-bf16=1},"
    " convert-gpu-to-rocdl{use-bare-ptr-memref-call-conv=1},"
    " convert-math-to-llvm, reconcile-unrealized-casts)";

uint64_t bytesOf(MemRefType t) {
  unsigned bits = t.getElementTypeBitWidth();
  return uint64_t(t.getNumElements()) * (bits < 8 ? 1 : bits / 8);
}

/// Reads the launch sequence of a kernel function after outlining. Its
/// buffers are its arguments, then its allocations (scratch).
LogicalResult collectPlan(func::FuncOp func, tcc::KernelPlan &plan) {
  llvm::DenseMap<Value, int> bufferIndex;
  for (BlockArgument arg : func.getArguments())
    bufferIndex[arg] = arg.getArgNumber();
  int next = func.getNumArguments();
  for (Operation &op : func.getBody().front()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (!alloc.getType().hasStaticShape())
        return alloc.emitError("a GPU kernel needs static scratch sizes");
      bufferIndex[alloc] = next++;
      plan.scratchBytes.push_back(std::max<uint64_t>(bytesOf(alloc.getType()), 1));
      continue;
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      tcc::DeviceLaunch l;
      l.symbol = launch.getKernelModuleName().str();
      gpu::KernelDim3 grid = launch.getGridSizeOperandValues(),
                      block = launch.getBlockSizeOperandValues();
      Value dims[] = {grid.x, grid.y, grid.z, block.x, block.y, block.z};
      for (auto [i, v] : llvm::enumerate(dims)) {
        std::optional<int64_t> c = getConstantIntValue(v);
        if (!c)
          return launch.emitError("a GPU launch needs static sizes");
        (i < 3 ? l.grid[i] : l.block[i - 3]) = *c;
      }
      if (Value shared = launch.getDynamicSharedMemorySize()) {
        std::optional<int64_t> c = getConstantIntValue(shared);
        if (!c)
          return launch.emitError("a GPU launch needs static shared memory");
        l.sharedBytes = *c;
      }
      for (Value v : launch.getKernelOperands()) {
        auto it = bufferIndex.find(v);
        if (it == bufferIndex.end())
          return launch.emitError("a GPU kernel operand is not a buffer: ")
                 << v;
        l.args.push_back(it->second);
      }
      // A launch with no blocks has nothing to do.
      if (llvm::any_of(l.grid, [](int64_t g) { return g == 0; }))
        continue;
      plan.launches.push_back(std::move(l));
      continue;
    }
    if (isa<func::ReturnOp, memref::DeallocOp>(op) ||
        op.hasTrait<OpTrait::ConstantLike>())
      continue;
    return op.emitError("left on the host side of a GPU kernel: ")
           << op.getName();
  }
  return success();
}

/// Moves the device functions of every gpu.module into one, named after
/// their modules (unique), and erases everything else.
gpu::GPUModuleOp mergeDeviceCode(ModuleOp module) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto merged = gpu::GPUModuleOp::create(b, module.getLoc(), "tcc_kernels");
  SmallVector<Operation *> erase;
  for (Operation &op : module.getBody()->getOperations()) {
    if (&op == merged.getOperation())
      continue;
    erase.push_back(&op);
    auto gm = dyn_cast<gpu::GPUModuleOp>(op);
    if (!gm)
      continue;
    for (auto fn : llvm::make_early_inc_range(gm.getOps<gpu::GPUFuncOp>())) {
      fn->moveBefore(merged.getBody(), merged.getBody()->end());
      SymbolTable::setSymbolName(fn, gm.getSymName());
    }
  }
  for (Operation *op : erase)
    op->erase();
  module->removeAttr("gpu.container_module");
  return merged;
}

} // namespace

LogicalResult tcc::compileGpuKernels(ModuleOp module,
                                     const GpuOptions &options,
                                     CodeArtifact &artifact) {
  bool nvidia = isNvidiaTarget(options.chip);
  if (!nvidia && !isAmdTarget(options.chip))
    return module.emitError("unknown GPU target '") << options.chip << "'";
  std::vector<std::string> names;
  OwningOpRef<ModuleOp> device = cloneKernelsAsBuffers(module, names);
  if (failed(bufferizeKernels(*device, options.timing)) ||
      failed(runPipeline(*device, kLaunchPipeline, "mapping to GPU launches",
                         options.timing)))
    return failure();

  for (const std::string &name : names) {
    auto func = device->lookupSymbol<func::FuncOp>(name);
    if (!func)
      return module.emitError("lowered kernel ") << name << " is missing";
    KernelPlan plan;
    plan.name = name;
    if (failed(collectPlan(func, plan)))
      return failure();
    artifact.kernels.push_back(std::move(plan));
  }
  gpu::GPUModuleOp gpuModule = mergeDeviceCode(*device);
  WalkResult allocs = gpuModule.walk([](memref::AllocOp alloc) {
    alloc.emitError("a GPU kernel allocates memory inside a loop");
    return WalkResult::interrupt();
  });
  if (allocs.wasInterrupted())
    return failure();
  if (failed(runPipeline(*device, nvidia ? kNvvmPipeline : kRocdlPipeline,
                         "GPU code generation", options.timing)))
    return failure();

  TimingScope llvmScope;
  if (options.timing)
    llvmScope = options.timing->nest(nvidia ? "LLVM: NVPTX back end"
                                            : "LLVM: AMDGPU back end, ld.lld");
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(gpuModule, llvmContext, "tcc_kernels");
  if (!llvmModule)
    return module.emitError("translation of GPU kernels to LLVM IR failed");
  std::string error;
  artifact.target = options.chip;
  if (nvidia) {
    artifact.format = "ptx";
    if (failed(compileNvptxModule(*llvmModule, options.chip, options.optLevel,
                                  options.cudaPath, artifact.assembly,
                                  artifact.llvmIR, error)))
      return module.emitError(error);
    artifact.code.assign(artifact.assembly.begin(), artifact.assembly.end());
  } else {
    artifact.format = "hsaco";
    if (failed(compileAmdgpuModule(*llvmModule, options.chip, options.optLevel,
                                   options.rocmDeviceLibs, artifact.code,
                                   artifact.llvmIR, artifact.assembly, error)))
      return module.emitError(error);
  }
  return success();
}
