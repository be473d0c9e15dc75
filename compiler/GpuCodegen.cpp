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
#include "compiler/PtxScan.h"
#include "compiler/TuningRecords.h"
#include "compiler/gpu/AttentionKernel.h"
#include "compiler/gpu/AttentionPlan.h"
#include "compiler/gpu/AttentionTemplate.h"
#include "compiler/gpu/ConvKernel.h"
#include "compiler/gpu/DepthwiseKernel.h"
#include "compiler/gpu/MatmulKernel.h"
#include "compiler/gpu/RegionKernel.h"
#include "compiler/gpu/SimtAttention.h"
#include "compiler/gpu/TemplateUtils.h"
#include "compiler/gpu/TransposeKernel.h"
#include "compiler/gpu/WgmmaAttention.h"
#include "compiler/gpu/WgmmaKernel.h"
#include "ir/TccAttrs.h"
#include "ir/TccOps.h"
#include "passes/ScalarForm.h"
#include "runtime/src/FileIO.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/MemoryBuffer.h"

#include "llvm/IR/Module.h"
#include <nlohmann/json.hpp>

using namespace mlir;

namespace {

/// From bufferized kernels to launches of outlined device functions.
/// On NVIDIA targets, tcc-gpu-occupancy asks ptxas for full residency of
/// the generic kernels (`blocksPerSm` 0), or for that many blocks.
std::string launchPipeline(bool rowFusion, int64_t rowValuesPerThread,
                           int64_t rowClusterThreads, bool rowLastBlock,
                           bool rowPairRounds, bool rowStream, bool nvidia,
                           int64_t blocksPerSm, bool clusters) {
  // A row may span a cluster of 8 blocks (the portable cluster size).
  std::string fusion = "tcc-gpu-row-fusion{values-per-thread=" +
                       std::to_string(rowValuesPerThread) +
                       " max-cluster=" + std::string(clusters ? "8" : "1") +
                       " cluster-threads=" + std::to_string(rowClusterThreads) +
                       " sync-scope=" + (nvidia ? "device" : "agent") +
                       " last-block=" + (rowLastBlock ? "true" : "false") +
                       " pair-rounds=" + (rowPairRounds ? "true" : "false") +
                       " stream-rows=" + (rowStream ? "true" : "false") +
                       "}, tcc-gpu-column-chains, ";
  std::string occupancy =
      nvidia ? ", gpu.module(tcc-gpu-occupancy{blocks-per-sm=" +
                   std::to_string(blocksPerSm) + "})"
             : "";
  return std::string("func.func(") + (rowFusion ? fusion : "") +
         "tcc-gpu-row-reductions, convert-linalg-to-parallel-loops,"
         " canonicalize, tcc-promote-accumulators, tcc-map-to-gpu),"
         "gpu-kernel-outlining, canonicalize, cse" +
         occupancy;
}

/// The device functions to the LLVM dialect, per family.
/// convert-gpu-to-nvvm (and -rocdl) lowers vector ops too, with the data layout's index
/// width; convert-vector-to-llvm alone would use 64 bits and leave casts
/// that nothing removes when indices are 32-bit.
std::string nvvmPipeline(const ::tcc::TargetDesc &target,
                         const std::string &gridDependency) {
  // The L2 policy loads need PTX 7.4 (TargetDesc::l2CacheHints).
  return std::string("gpu.module(expand-strided-metadata, lower-affine, "
                     "convert-nvgpu-to-nvvm, convert-scf-to-cf, "
                     "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
                     " convert-nvvm-to-llvm, convert-vector-to-llvm, "
                     "convert-arith-to-llvm, convert-ub-to-llvm,"
                     " convert-math-to-llvm, reconcile-unrealized-casts,"
                     " tcc-gpu-align-globals") +
         (target.l2CacheHints ? ", tcc-gpu-l2-policy" : "") +
         (target.gridDependency && gridDependency != "off"
              ? ", tcc-gpu-grid-dependency{early-trigger=" +
                    std::string(gridDependency == "early" ? "1" : "0") + "})"
              : ")");
}
/// The chipset tells the ROCDL conversions which instructions exist.
/// convert-gpu-to-rocdl alone lowers some math ops (tanh) to LLVM intrinsics
/// that the AMDGPU back end cannot select ("no libcall available for
/// ftanh"): every math op the lowering makes becomes an ocml call first,
/// leaving the generic patterns only what AMDGPU has instructions for.
std::string rocdlPipeline(const ::tcc::TargetDesc &target) {
  return "convert-math-to-rocdl{chipset=" + target.name +
         "}, gpu.module(expand-strided-metadata, lower-affine, "
         "convert-scf-to-cf,"
         " arith-expand{include-bf16=1},"
         " convert-gpu-to-rocdl{use-bare-ptr-memref-call-conv=1 chipset=" +
         target.name +
         "},"
         " convert-vector-to-llvm, convert-arith-to-llvm, convert-ub-to-llvm,"
         " convert-math-to-llvm, reconcile-unrealized-casts,"
         " tcc-gpu-align-globals)";
}

uint64_t bytesOf(MemRefType t) {
  unsigned bits = t.getElementTypeBitWidth();
  return uint64_t(t.getNumElements()) * (bits < 8 ? 1 : bits / 8);
}

/// Reads the launch sequence of a kernel function after outlining. Its
/// buffers are its arguments, then its allocations (scratch).
LogicalResult collectPlan(func::FuncOp func, ::tcc::KernelPlan &plan) {
  llvm::DenseMap<Value, int> bufferIndex;
  for (BlockArgument arg : func.getArguments())
    bufferIndex[arg] = arg.getArgNumber();
  int next = func.getNumArguments();
  for (Operation &op : func.getBody().front()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (!alloc.getType().hasStaticShape())
        return alloc.emitError("a GPU kernel needs static scratch sizes");
      bufferIndex[alloc] = next++;
      plan.scratchBytes.push_back(
          std::max<uint64_t>(bytesOf(alloc.getType()), 1));
      continue;
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      ::tcc::DeviceLaunch l;
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
      if (launch.hasClusterSize()) {
        gpu::KernelDim3 c = launch.getClusterSizeOperandValues();
        Value cdims[] = {c.x, c.y, c.z};
        for (auto [i, v] : llvm::enumerate(cdims)) {
          std::optional<int64_t> n = getConstantIntValue(v);
          if (!n)
            return launch.emitError("a GPU launch needs static cluster sizes");
          l.cluster[i] = *n;
        }
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

/// 32-bit index arithmetic is cheaper on GPUs (64-bit multiplies are several
/// instructions) and exact while every offset fits: when no buffer a kernel
/// touches has 2^31 elements.
unsigned chooseIndexBits(mlir::gpu::GPUModuleOp gpuModule, unsigned forced) {
  if (forced)
    return forced;
  bool small = true;
  gpuModule.walk([&](Operation *op) {
    auto check = [&](Type t) {
      if (auto m = dyn_cast<MemRefType>(t))
        if (!m.hasStaticShape() || m.getNumElements() >= (int64_t(1) << 31))
          small = false;
    };
    for (Type t : op->getResultTypes())
      check(t);
    for (Region &r : op->getRegions())
      for (Block &block : r)
        for (Type t : block.getArgumentTypes())
          check(t);
  });
  return small ? 32 : 64;
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

/// A kernel function whose matmul a template computes. `direct`: the matmul
/// is the whole kernel and writes its result; otherwise the template writes
/// scratch buffer 0, which the rest of the kernel reads as an extra input
/// (argument `numOperands` of the clone).
/// A convolution (`conv`) is the same with its GEMM view as `problem`: A the
/// input, B the weight, and `biasArg` its bias (-1: none).
struct MatmulUse {
  ::tcc::gpu::MatmulProblem problem;
  unsigned aArg, bArg;
  unsigned numOperands, numResults;
  bool direct;
  std::optional<::tcc::gpu::ConvProblem> conv;
  /// A depthwise convolution (its own template; `problem` unused).
  std::optional<::tcc::gpu::DepthwiseProblem> depthwise;
  /// A region group (region fusion): the chain, and the kernel arguments
  /// of regionKernelArgs but the output (`problem` unused).
  std::optional<::tcc::gpu::RegionProblem> region;
  ::tcc::gpu::RegionSchedule regionSchedule;
  std::vector<int> regionArgs;
  int biasArg = -1;
  int residualArg = -1; ///< the conv epilogue's residual (-1: none)
  /// A direct convolution with a second output (its value before the ReLU,
  /// or a copy of C): that result's index (-1: none); C is the other.
  int secondResult = -1;
  /// A precision of a planned matmul (tcc.tile_matmul): its tile mask and
  /// the arguments of the codes and the scales (-1: none).
  std::optional<::tcc::gpu::WgmmaProblem::TileMask> tileMask;
  int codesArg = -1, rowScaleArg = -1, colScaleArg = -1;
  /// A matmul whose kernel's elementwise code after it the template applies
  /// (absorbEpilogue): the code, and the kernel arguments it reads.
  ::tcc::gpu::GemmEpilogue epilogue;
  std::vector<int> epilogueArgs;
};

/// Marks `f` as computed whole by the template (`direct`), or cuts `op`
/// out of it: the rest of the kernel reads its result from a new argument.
void cutTemplateOp(func::FuncOp f, Operation *op, MatmulUse &use) {
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  use.numOperands = f.getNumArguments();
  use.numResults = f.getNumResults();
  use.direct = f.getNumResults() == 1 &&
               ret.getOperand(0) == op->getResult(0) &&
               &f.getBody().front().front() == op;
  if (use.direct) {
    f->setAttr("tcc.template", UnitAttr::get(f.getContext()));
    return;
  }
  Block &entry = f.getBody().front();
  BlockArgument c = entry.addArgument(op->getResult(0).getType(), op->getLoc());
  op->getResult(0).replaceAllUsesWith(c);
  op->erase();
  SmallVector<Type> inputs(entry.getArgumentTypes());
  f.setFunctionType(
      FunctionType::get(f.getContext(), inputs, f.getResultTypes()));
}

/// A channels-last convolution that is the anchor of kernel function `f`
/// (on tensors): its operands are `f`'s arguments and its shapes static.
struct AnchoredConv {
  mlir::tcc::Conv2dOp conv;
  BlockArgument inArg, wArg, biasArg;
  ::tcc::gpu::ConvProblem p; ///< sizes, window, groups and types
};

std::optional<AnchoredConv> anchoredConv(func::FuncOp f) {
  auto kind = f->getAttrOfType<StringAttr>("tcc.kind");
  if (!kind || kind.getValue() != "conv2d")
    return std::nullopt;
  mlir::tcc::Conv2dOp conv;
  for (Operation &op : f.getBody().front())
    if (auto c = dyn_cast<mlir::tcc::Conv2dOp>(op)) {
      if (conv)
        return std::nullopt;
      conv = c;
    }
  if (!conv || !conv.getNhwc())
    return std::nullopt;
  auto inArg = dyn_cast<BlockArgument>(conv.getInput());
  auto wArg = dyn_cast<BlockArgument>(conv.getWeight());
  BlockArgument biasArg;
  if (conv.getBias() && !(biasArg = dyn_cast<BlockArgument>(conv.getBias())))
    return std::nullopt;
  if (!inArg || !wArg)
    return std::nullopt;
  auto inTy = cast<RankedTensorType>(conv.getInput().getType());
  auto wTy = cast<RankedTensorType>(conv.getWeight().getType());
  auto outTy = cast<RankedTensorType>(conv.getType());
  if (!inTy.hasStaticShape() || !wTy.hasStaticShape() ||
      !outTy.hasStaticShape())
    return std::nullopt;
  ArrayRef<int64_t> strides = conv.getStrides(), pads = conv.getPads(),
                    dilations = conv.getDilations();
  if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2)
    return std::nullopt;
  ::tcc::gpu::ConvProblem p;
  p.n = inTy.getDimSize(0);
  p.h = inTy.getDimSize(1);
  p.w = inTy.getDimSize(2);
  p.c = inTy.getDimSize(3);
  p.o = wTy.getDimSize(0);
  p.kh = wTy.getDimSize(1);
  p.kw = wTy.getDimSize(2);
  p.strideH = strides[0];
  p.strideW = strides[1];
  p.padTop = pads[0];
  p.padLeft = pads[1];
  p.padBottom = pads[2];
  p.padRight = pads[3];
  p.dilationH = dilations[0];
  p.dilationW = dilations[1];
  p.groups = conv.getGroups();
  p.inType = inTy.getElementType();
  p.weightType = wTy.getElementType();
  p.outType = outTy.getElementType();
  if (conv.getBias())
    p.biasType =
        cast<RankedTensorType>(conv.getBias().getType()).getElementType();
  return AnchoredConv{conv, inArg, wArg, biasArg, p};
}

/// Whether all of `f` after its first op, `conv`, is [an add of an argument]
/// [a ReLU], then the result returned pixel-shuffled (a depth to space) or
/// returned twice: what tcc-concat-in-place makes of a convolution storing
/// into a concat (an up-convolution's interleave moved into it, or a
/// result other kernels read too). Sets `p` and `residualArg` if so.
bool wholeConvStores(func::FuncOp f, mlir::tcc::Conv2dOp conv,
                     ::tcc::gpu::ConvProblem &p, BlockArgument &residualArg) {
  Block &body = f.getBody().front();
  if (&body.front() != conv.getOperation())
    return false;
  ::tcc::gpu::ConvProblem q = p;
  BlockArgument arg;
  Value last = conv.getResult();
  Operation *op = conv->getNextNode();
  if (auto add = dyn_cast<mlir::tcc::AddOp>(op)) {
    Value other = add.getLhs() == last ? add.getRhs() : add.getLhs();
    arg = dyn_cast<BlockArgument>(other);
    if (!arg || other == last || !last.hasOneUse() ||
        other.getType() != last.getType())
      return false;
    q.residualType = cast<RankedTensorType>(last.getType()).getElementType();
    last = add.getResult();
    op = op->getNextNode();
  }
  if (auto relu = dyn_cast<mlir::tcc::ReluOp>(op)) {
    if (relu.getOperand() != last || !last.hasOneUse())
      return false;
    q.relu = true;
    last = relu.getResult();
    op = op->getNextNode();
  }
  Operation *ret = body.getTerminator();
  if (f.getNumResults() == 2) {
    if (op != ret || ret->getOperand(0) != last || ret->getOperand(1) != last)
      return false;
    q.copyOut = true;
  } else if (f.getNumResults() == 1) {
    std::optional<mlir::tcc::DepthToSpace> d2s =
        mlir::tcc::matchDepthToSpace(ret->getOperand(0));
    if (!d2s || d2s->input != last || !last.hasOneUse() || d2s->ops[0] != op ||
        op->getNextNode() != d2s->ops[1] ||
        d2s->ops[1]->getNextNode() != d2s->ops[2] ||
        d2s->ops[2]->getNextNode() != ret)
      return false;
    q.shuffleH = d2s->factorH;
    q.shuffleW = d2s->factorW;
  } else {
    return false;
  }
  std::string why;
  if (!::tcc::gpu::convKernelSupports(q, why))
    return false;
  p = q;
  residualArg = arg;
  return true;
}

/// Whether the kernel function `f` (on tensors) is anchored by a
/// channels-last convolution of its arguments that the implicit-GEMM
/// template computes (groups 1, 16-bit or tf32 operands); if so, cuts it out
/// of `f` as MatmulUse says. Everything else keeps the generic kernels.
std::optional<MatmulUse> takeConv(func::FuncOp f,
                                  const ::tcc::GpuOptions &options) {
  std::optional<AnchoredConv> anchored = anchoredConv(f);
  if (!anchored)
    return std::nullopt;
  auto [conv, inArg, wArg, biasArg, p] = *anchored;
  auto outTy = cast<RankedTensorType>(conv.getType());
  auto wTy = cast<RankedTensorType>(conv.getWeight().getType());
  p.allowTf32 = options.allowTf32;
  // tcc-concat-in-place: the result is channels of a concat's buffer.
  if (auto slice = f->getAttrOfType<DenseI64ArrayAttr>("tcc.out_slice");
      slice && slice.size() == 2) {
    p.outOffset = slice[0];
    p.outStride = slice[1];
  }
  // Its result pixel-shuffled into a concat's channels (tcc-concat-in-place
  // moved the interleave here; checked whole by wholeConvStores below): the
  // slice is of the shuffled channels. Elsewhere an interleave stays with
  // the generic kernels, the convolution cut out as usual.
  if (f.getNumResults() == 1 && f->hasAttr("tcc.out_slice"))
    if (std::optional<mlir::tcc::DepthToSpace> d2s =
            mlir::tcc::matchDepthToSpace(
                f.getBody().front().getTerminator()->getOperand(0))) {
      p.shuffleH = d2s->factorH;
      p.shuffleW = d2s->factorW;
    }
  std::string why;
  if (!::tcc::gpu::convKernelSupports(p, why) ||
      outTy.getShape() != ArrayRef<int64_t>{p.n, p.outH(), p.outW(), p.o} ||
      wTy.getDimSize(3) != p.c)
    return std::nullopt;
  // What follows the convolution joins the template's epilogue when it is
  // all the rest of the kernel: an add of a kernel argument of the result's
  // type (a residual connection), then a ReLU, either or both.
  Block &body = f.getBody().front();
  BlockArgument residualArg;
  if (&body.front() == conv.getOperation() && f.getNumResults() == 1) {
    Operation *ret = body.getTerminator();
    Value last = conv.getResult();
    auto single = [&](Value v) -> Operation * {
      return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
    };
    mlir::tcc::AddOp add;
    if (auto a = dyn_cast_or_null<mlir::tcc::AddOp>(single(last))) {
      Value other = a.getLhs() == last ? a.getRhs() : a.getLhs();
      auto arg = dyn_cast<BlockArgument>(other);
      if (arg && other != last && other.getType() == last.getType()) {
        add = a;
        residualArg = arg;
        last = a.getResult();
      }
    }
    mlir::tcc::ReluOp relu = dyn_cast_or_null<mlir::tcc::ReluOp>(single(last));
    if (relu)
      last = relu.getResult();
    if (last.hasOneUse() && *last.getUsers().begin() == ret && (relu || add)) {
      if (relu) {
        p.relu = true;
        relu.getResult().replaceAllUsesWith(relu.getOperand());
        relu.erase();
      }
      if (add) {
        p.residualType = outTy.getElementType();
        add.getResult().replaceAllUsesWith(conv.getResult());
        add.erase();
      }
    } else {
      residualArg = BlockArgument();
    }
  }
  // Or the value before the ReLU is returned too (NASNet's cells read both a
  // convolution's result and its ReLU): the template stores both.
  int rawResult = -1;
  if (&body.front() == conv.getOperation() && f.getNumResults() == 2) {
    Operation *ret = body.getTerminator();
    Value pre = conv.getResult();
    mlir::tcc::AddOp add;
    BlockArgument arg;
    if (pre.hasOneUse())
      if (auto a = dyn_cast<mlir::tcc::AddOp>(*pre.getUsers().begin())) {
        Value other = a.getLhs() == pre ? a.getRhs() : a.getLhs();
        arg = dyn_cast<BlockArgument>(other);
        if (arg && other != pre && other.getType() == pre.getType()) {
          add = a;
          pre = a.getResult();
        }
      }
    mlir::tcc::ReluOp relu;
    for (Operation *user : pre.getUsers())
      if (auto r = dyn_cast<mlir::tcc::ReluOp>(user))
        relu = r;
    Operation *afterConv = add ? add.getOperation() : relu.getOperation();
    if ((!add || arg) && relu && conv->getNextNode() == afterConv &&
        (!add || add->getNextNode() == relu.getOperation()) &&
        relu->getNextNode() == ret && relu.getResult().hasOneUse() &&
        llvm::range_size(pre.getUses()) == 2 &&
        llvm::is_contained(ret->getOperands(), pre) &&
        llvm::is_contained(ret->getOperands(), relu.getResult())) {
      rawResult = ret->getOperand(0) == pre ? 0 : 1;
      p.relu = true;
      p.rawOut = true;
      if (add) {
        p.residualType = outTy.getElementType();
        residualArg = arg;
      }
    }
  }
  // Or it stores its result pixel-shuffled, or twice.
  bool wholeStores = rawResult < 0 && !p.relu && !p.residualType &&
                     wholeConvStores(f, conv, p, residualArg);
  if (p.shuffleH * p.shuffleW > 1 && !wholeStores)
    return std::nullopt; // the generic kernels shuffle
  MatmulUse use;
  use.conv = p;
  use.problem.m = p.n * p.outH() * p.outW();
  use.problem.n = p.o;
  use.problem.k = p.kh * p.kw * p.c;
  use.problem.cType = p.outType;
  use.aArg = inArg.getArgNumber();
  use.bArg = wArg.getArgNumber();
  if (biasArg)
    use.biasArg = biasArg.getArgNumber();
  if (residualArg)
    use.residualArg = residualArg.getArgNumber();
  if (rawResult >= 0 || wholeStores) {
    // The template computes the whole kernel, all its results. A copy (two
    // results) goes to the first, C (a concat's channels) is the second.
    use.numOperands = f.getNumArguments();
    use.numResults = f.getNumResults();
    use.direct = true;
    use.secondResult = rawResult >= 0 ? rawResult : p.copyOut ? 0 : -1;
    f->setAttr("tcc.template", UnitAttr::get(f.getContext()));
    return use;
  }
  cutTemplateOp(f, conv, use);
  return use;
}

/// Whether `f` is anchored by a channels-last depthwise convolution (groups =
/// C = O) of its arguments; if so, cuts it out of `f` with a clamp or ReLU
/// that directly follows it as the rest of the kernel, if any.
std::optional<MatmulUse> takeDepthwise(func::FuncOp f) {
  std::optional<AnchoredConv> anchored = anchoredConv(f);
  if (!anchored)
    return std::nullopt;
  auto [conv, inArg, wArg, biasArg, cp] = *anchored;
  auto outTy = cast<RankedTensorType>(conv.getType());
  auto wTy = cast<RankedTensorType>(conv.getWeight().getType());
  if (cp.groups != cp.c || cp.o != cp.c || wTy.getDimSize(3) != 1)
    return std::nullopt;
  ::tcc::gpu::DepthwiseProblem p;
  static_cast<::tcc::gpu::ConvProblem &>(p) = cp;
  std::string why;
  if (!::tcc::gpu::depthwiseKernelSupports(p, why) ||
      outTy.getShape() != ArrayRef<int64_t>{p.n, p.outH(), p.outW(), p.c})
    return std::nullopt;
  // A clamp (ReLU6) or ReLU that is all the rest of the kernel joins the
  // template.
  Block &body = f.getBody().front();
  if (&body.front() == conv.getOperation() && f.getNumResults() == 1 &&
      conv->hasOneUse()) {
    Operation *next = *conv->getUsers().begin();
    Value last = next->getNumResults() == 1 ? next->getResult(0) : Value();
    bool ends = last && last.hasOneUse() &&
                *last.getUsers().begin() == body.getTerminator();
    if (auto clamp = dyn_cast<mlir::tcc::ClampOp>(next); clamp && ends) {
      if (clamp.getMin())
        p.clampMin = clamp.getMin()->convertToDouble();
      if (clamp.getMax())
        p.clampMax = clamp.getMax()->convertToDouble();
      clamp.getResult().replaceAllUsesWith(conv.getResult());
      clamp.erase();
    } else if (auto relu = dyn_cast<mlir::tcc::ReluOp>(next); relu && ends) {
      p.relu = true;
      relu.getResult().replaceAllUsesWith(conv.getResult());
      relu.erase();
    }
  }
  MatmulUse use;
  use.depthwise = p;
  use.aArg = inArg.getArgNumber();
  use.bArg = wArg.getArgNumber();
  if (biasArg)
    use.biasArg = biasArg.getArgNumber();
  use.problem.m = p.n * p.outH() * p.outW();
  use.problem.n = p.c;
  use.problem.cType = p.outType;
  cutTemplateOp(f, conv, use);
  return use;
}

/// Whether the kernel function `f` (on tensors) is a region group (kind
/// "region": tcc-region-fusion's, formed by tcc-form-groups) that the region
/// template computes whole: a chain of channels-last convolutions (groups 1
/// or depthwise), max and average pools of the previous member's result,
/// each followed by a residual add (of the chain's input or an earlier
/// member's result) and a ReLU or ReLU6, all of one 16-bit type, the last
/// member's result the kernel's only one. Otherwise (`why` says why) the
/// group runs as generic kernels.
std::optional<MatmulUse> takeRegion(func::FuncOp f,
                                    const ::tcc::TargetDesc &target,
                                    std::string &why) {
  auto kind = f->getAttrOfType<StringAttr>("tcc.kind");
  if (!kind || kind.getValue() != "region")
    return std::nullopt;
  auto fail = [&](const std::string &msg) -> std::optional<MatmulUse> {
    why = msg;
    return std::nullopt;
  };
  Block &body = f.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() != 1)
    return fail("a member's result is read outside the group");
  ::tcc::gpu::RegionProblem p;
  MatmulUse use;
  std::vector<int> args;
  BlockArgument input;
  Value cur;            // the chain's value so far
  SmallVector<Value> outputs; // member i's result after its epilogue
  // Whether the last member's epilogue already has its residual, activation.
  bool hasResidual = false, hasActivation = false;
  for (Operation &op : body.without_terminator()) {
    auto t = dyn_cast<RankedTensorType>(op.getResult(0).getType());
    if (op.getNumResults() != 1 || !t || t.getRank() != 4)
      return fail("a member is not a 4-D tensor op");
    if (!p.type)
      p.type = t.getElementType();
    if (t.getElementType() != p.type)
      return fail("members of different element types");
    auto startMember = [&](Value in) -> bool {
      if (p.members.empty()) {
        input = dyn_cast<BlockArgument>(in);
        if (!input)
          return false;
        auto inTy = cast<RankedTensorType>(in.getType());
        if (inTy.getElementType() != p.type)
          return false;
        p.n = inTy.getDimSize(0);
        p.h = inTy.getDimSize(1);
        p.w = inTy.getDimSize(2);
        p.c = inTy.getDimSize(3);
        args.push_back(input.getArgNumber());
      } else if (in != cur) {
        return false;
      }
      hasResidual = hasActivation = false;
      return true;
    };
    ::tcc::gpu::RegionMember m;
    if (auto conv = dyn_cast<mlir::tcc::Conv2dOp>(op)) {
      if (!conv.getNhwc() || !startMember(conv.getInput()))
        return fail("a convolution that is not channels last or does not "
                    "read the chain");
      auto w = dyn_cast<BlockArgument>(conv.getWeight());
      auto wTy = cast<RankedTensorType>(conv.getWeight().getType());
      int64_t cin = cast<RankedTensorType>(conv.getInput().getType())
                        .getDimSize(3);
      if (!w || wTy.getElementType() != p.type)
        return fail("a convolution weight that is not a kernel argument");
      if (conv.getGroups() == 1) {
        m.kind = ::tcc::gpu::RegionMember::Kind::Conv;
      } else if (conv.getGroups() == cin && wTy.getDimSize(0) == cin &&
                 wTy.getDimSize(3) == 1) {
        m.kind = ::tcc::gpu::RegionMember::Kind::Depthwise;
      } else {
        return fail("a grouped convolution");
      }
      m.outChannels = wTy.getDimSize(0);
      m.kh = wTy.getDimSize(1);
      m.kw = wTy.getDimSize(2);
      ArrayRef<int64_t> st = conv.getStrides(), dl = conv.getDilations(),
                        pd = conv.getPads();
      m.strideH = st[0], m.strideW = st[1];
      m.dilationH = dl[0], m.dilationW = dl[1];
      m.padTop = pd[0], m.padLeft = pd[1], m.padBottom = pd[2],
      m.padRight = pd[3];
      args.push_back(w.getArgNumber());
      if (Value bias = conv.getBias()) {
        auto b = dyn_cast<BlockArgument>(bias);
        if (!b || cast<RankedTensorType>(bias.getType()).getElementType() !=
                      p.type)
          return fail("a convolution bias that is not a kernel argument");
        m.bias = true;
        args.push_back(b.getArgNumber());
      }
    } else if (isa<mlir::tcc::MaxPool2dOp, mlir::tcc::AvgPool2dOp>(op)) {
      auto pool = [&](auto q) -> std::optional<MatmulUse> {
        if (!q.getNhwc() || q.getCeilMode() || !startMember(q.getInput()))
          return fail("a pool that is not channels last, rounds up or does "
                      "not read the chain");
        m.kind = isa<mlir::tcc::MaxPool2dOp>(op)
                     ? ::tcc::gpu::RegionMember::Kind::MaxPool
                     : ::tcc::gpu::RegionMember::Kind::AvgPool;
        ArrayRef<int64_t> k = q.getKernel(), st = q.getStrides(),
                          pd = q.getPads();
        m.kh = k[0], m.kw = k[1], m.strideH = st[0], m.strideW = st[1];
        m.padTop = pd[0], m.padLeft = pd[1], m.padBottom = pd[2],
        m.padRight = pd[3];
        if constexpr (std::is_same_v<decltype(q), mlir::tcc::AvgPool2dOp>)
          m.countIncludePad = q.getCountIncludePad();
        return MatmulUse();
      };
      std::optional<MatmulUse> ok =
          isa<mlir::tcc::MaxPool2dOp>(op)
              ? pool(cast<mlir::tcc::MaxPool2dOp>(op))
              : pool(cast<mlir::tcc::AvgPool2dOp>(op));
      if (!ok)
        return std::nullopt;
    } else if (p.members.empty() || op.getOperand(0) != cur &&
                                        !(isa<mlir::tcc::AddOp>(op) &&
                                          op.getOperand(1) == cur)) {
      return fail("'" + op.getName().getStringRef().str() +
                  "' does not follow a member");
    } else if (isa<mlir::tcc::ReluOp>(op) && !hasActivation) {
      p.members.back().activation =
          ::tcc::gpu::RegionMember::Activation::Relu;
      hasActivation = true;
      cur = outputs.back() = op.getResult(0);
      continue;
    } else if (auto clamp = dyn_cast<mlir::tcc::ClampOp>(op);
               clamp && !hasActivation && clamp.getMin() &&
               clamp.getMax() && clamp.getMin()->isZero() &&
               clamp.getMax()->convertToDouble() == 6.0) {
      p.members.back().activation =
          ::tcc::gpu::RegionMember::Activation::Relu6;
      hasActivation = true;
      cur = outputs.back() = op.getResult(0);
      continue;
    } else if (isa<mlir::tcc::AddOp>(op) && !hasResidual && !hasActivation &&
               op.getOperand(0).getType() == op.getOperand(1).getType()) {
      Value other = op.getOperand(0) == cur ? op.getOperand(1)
                                            : op.getOperand(0);
      int64_t from = -1;
      if (other == input)
        from = 0;
      for (auto [i, v] : llvm::enumerate(outputs))
        if (other == v && i + 1 < outputs.size())
          from = int64_t(i) + 1;
      if (from < 0)
        return fail("a residual that is neither the chain's input nor an "
                    "earlier member's result");
      p.members.back().residualFrom = from;
      hasResidual = true;
      cur = outputs.back() = op.getResult(0);
      continue;
    } else {
      return fail("'" + op.getName().getStringRef().str() +
                  "' is no epilogue the region template applies");
    }
    p.members.push_back(m);
    cur = op.getResult(0);
    outputs.push_back(cur);
  }
  if (p.members.empty() || ret.getOperand(0) != cur)
    return fail("the group's result is not its last member's");
  // The tile tcc-region-fusion planned (tcc.region_plan on the group's
  // last member), so that the kernel that runs is the one its cost model
  // priced; the template picks how (weights resident, streamed or
  // prefetched). A group without a plan (formed by hand) gets the
  // template's own tile.
  std::optional<std::array<int64_t, 2>> planned;
  for (Operation &op : body.without_terminator())
    if (auto plan =
            op.getAttrOfType<mlir::tcc::RegionPlanAttr>("tcc.region_plan"))
      planned = std::array<int64_t, 2>{plan.getTileH(), plan.getTileW()};
  std::optional<::tcc::gpu::RegionSchedule> s =
      ::tcc::gpu::chooseRegionSchedule(p, target, planned);
  // The model's shared-memory estimate is not the template's plan: a
  // planned tile the template cannot fit still runs as one kernel, at the
  // template's own tile.
  if (!s && planned)
    s = ::tcc::gpu::chooseRegionSchedule(p, target);
  if (!s) {
    // The template's reason for its default schedule (shapes, taps, pads).
    if (::tcc::gpu::regionKernelSupports(p, ::tcc::gpu::RegionSchedule{},
                                         target, why))
      why = "no region kernel schedule fits";
    return std::nullopt;
  }
  if (!::tcc::gpu::regionKernelSupports(p, *s, target, why))
    return std::nullopt;
  auto outTy = cast<RankedTensorType>(cur.getType());
  std::array<int64_t, 3> o = p.outShape(p.members.size() - 1);
  if (outTy.getShape() != ArrayRef<int64_t>{p.n, o[0], o[1], o[2]})
    return fail("the chain's shapes do not match its ops'");
  use.region = p;
  use.regionSchedule = *s;
  use.regionArgs = std::move(args);
  use.numOperands = f.getNumArguments();
  use.numResults = 1;
  use.direct = true;
  f->setAttr("tcc.template", UnitAttr::get(f.getContext()));
  return use;
}

/// Whether `p`'s operands are ones only the wgmma template takes: f8 (f32
/// accumulation) and i8 (i32 accumulation, an i32 C).
bool wgmmaOnlyTypes(const ::tcc::gpu::MatmulProblem &p) {
  if (!p.aType || p.aType != p.bType)
    return false;
  if (isa<Float8E4M3FNType, Float8E5M2Type>(p.aType))
    return true;
  return p.aType.isInteger(8) && p.cType && p.cType.isInteger(32);
}

/// A matmul as the two templates compute it, for addMatmulLaunch's choice
/// and the tuner's space alike: tf32, f8 and i8 read B stored [N][K]
/// (transposed into scratch first when the model gives [K][N]); wgmma
/// takes 16-bit, tf32, f8 and i8 operands, A row-major and at least 64 rows
/// (fewer would leave most of every 64-row wgmma idle; mma.sync's smaller
/// tiles serve the 16- and 32-bit ones).
struct TemplateProblems {
  ::tcc::gpu::MatmulProblem mma;
  ::tcc::gpu::WgmmaProblem wgmma;
  bool transposeB = false, wgmmaFits = false;
};

TemplateProblems templateProblems(const ::tcc::gpu::MatmulProblem &mp,
                                  const ::tcc::TargetDesc &target) {
  TemplateProblems t;
  bool tf32 = mp.aType.isF32() && mp.allowTf32;
  bool eightBit = wgmmaOnlyTypes(mp);
  t.transposeB = (tf32 || eightBit) && !mp.transB;
  t.mma = mp;
  t.mma.transB = mp.transB || t.transposeB;
  ::tcc::gpu::WgmmaProblem &wp = t.wgmma;
  wp.m = mp.m;
  wp.n = mp.n;
  wp.k = mp.k;
  wp.batch = mp.batch;
  wp.aBatched = mp.aBatched;
  wp.bBatched = mp.bBatched;
  wp.transB = t.mma.transB;
  wp.abType = mp.aType;
  wp.cType = mp.cType;
  t.wgmmaFits = target.wgmma && mp.m >= 64 && !mp.transA &&
                (mp.aType.isBF16() || mp.aType.isF16() || tf32 || eightBit);
  return t;
}

/// Whether the kernel function `f` (on tensors) begins with a matmul of two
/// of its arguments that the tensor-core template computes; if so, cuts the
/// matmul out of `f` as MatmulUse says.
std::optional<MatmulUse> takeTileMatmul(func::FuncOp f);

/// The most buffers an absorbed epilogue reads (kernel parameters stay few).
constexpr size_t kMaxEpilogueBuffers = 8;

/// Absorbs into `use` (the template of `mm`, the GEMM `p`) the rest of
/// kernel `f` when it is elementwise code on mm's result returning one
/// tensor of C's shape: scales per row, column or tensor, a bias, an
/// activation, a cast, reading `f`'s arguments that broadcast to C and
/// splat constants. The template then applies it per element before its
/// store (GemmEpilogue::elementFn) and computes `f` whole: C makes no round
/// trip through memory and no second kernel runs. Each op computes as the
/// generic kernels compute it (buildElementwiseScalar), on the f32 (or i32)
/// accumulator: a 16-bit product is not rounded first. The
/// code is read from a copy of `f` in `holder`, which must outlive the
/// template's building.
bool absorbEpilogue(func::FuncOp f, mlir::tcc::MatmulOp mm,
                    const ::tcc::gpu::MatmulProblem &p, ModuleOp holder,
                    MatmulUse &use) {
  Block &body = f.getBody().front();
  if (f.getNumResults() != 1)
    return false;
  Value acc = mm.getResult(), root = body.getTerminator()->getOperand(0);
  auto cTy = cast<RankedTensorType>(acc.getType());
  auto rootTy = dyn_cast<RankedTensorType>(root.getType());
  if (root == acc || !rootTy || rootTy.getShape() != cTy.getShape())
    return false;
  Type outType = rootTy.getElementType();
  if (!(outType.isF32() || outType.isBF16() || outType.isF16() ||
        outType.isInteger(32)))
    return false;
  ArrayRef<int64_t> shape = cTy.getShape();
  std::vector<int> args;
  for (Operation &op : body.without_terminator()) {
    if (&op == mm.getOperation())
      continue;
    if (op.getNumResults() != 1 || !(isa<mlir::tcc::ConstantOp>(op) ||
                                     mlir::tcc::hasElementwiseScalar(&op)))
      return false;
    auto t = dyn_cast<RankedTensorType>(op.getResult(0).getType());
    if (!t || !mlir::tcc::broadcastsTo(t.getShape(), shape))
      return false;
    if (isa<mlir::tcc::ConstantOp>(op)) {
      if (!mlir::tcc::constantValue(op.getResult(0)))
        return false; // not a splat
      continue;
    }
    for (Value v : op.getOperands()) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg)
        continue;
      auto at = dyn_cast<RankedTensorType>(arg.getType());
      if (!at || !mlir::tcc::broadcastsTo(at.getShape(), shape) ||
          isa<ComplexType>(at.getElementType()))
        return false;
      if (!llvm::is_contained(args, int(arg.getArgNumber())))
        args.push_back(int(arg.getArgNumber()));
    }
  }
  if (args.size() > kMaxEpilogueBuffers)
    return false;
  // The code, read from a copy that outlives `f` (templates are built after
  // the kernels' functions are gone).
  IRMapping map;
  auto copy = cast<func::FuncOp>(f->clone(map));
  holder.getBody()->push_back(copy);
  Value accCopy = map.lookup(acc), rootCopy = map.lookup(root);
  SmallVector<Value> argCopies;
  for (int a : args)
    argCopies.push_back(copy.getArgument(unsigned(a)));
  int64_t m = p.m, n = p.n, rank = int64_t(shape.size());
  SmallVector<int64_t> dims(shape.begin(), shape.end());
  ::tcc::gpu::GemmEpilogue &epi = use.epilogue;
  epi.outType = outType;
  for (int a : args) {
    auto t = cast<RankedTensorType>(f.getArgument(unsigned(a)).getType());
    epi.captured.push_back(MemRefType::get(t.getShape(), t.getElementType()));
  }
  epi.elementFn = [=](OpBuilder &b, Location loc, Value accV, Value batch,
                      Value row, Value col, ValueRange captured) -> Value {
    auto index = [&](Value v) -> Value {
      return v.getType().isIndex()
                 ? v
                 : arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v)
                       .getResult();
    };
    auto cIdx = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    auto minU = [&](Value v, int64_t hi) -> Value {
      return arith::MinUIOp::create(b, loc, v, cIdx(hi));
    };
    // C's indices: the flat row (the leading axes and M) unflattened, then
    // the column; clamped, for tile elements past C's edges.
    Value flat = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, index(batch), cIdx(m)),
        minU(index(row), m - 1));
    SmallVector<Value> idx(rank);
    idx[rank - 1] = minU(index(col), n - 1);
    int64_t stride = 1;
    for (int64_t d = rank - 2; d >= 0; --d) {
      Value q =
          stride == 1
              ? flat
              : arith::DivUIOp::create(b, loc, flat, cIdx(stride)).getResult();
      idx[d] =
          d == 0 ? q
                 : arith::RemUIOp::create(b, loc, q, cIdx(dims[d])).getResult();
      stride *= dims[d];
    }
    Value zero = cIdx(0);
    llvm::DenseMap<Value, Value> values;
    // The accumulator (f32, or i8's i32) goes to the code unrounded where
    // the matmul's dtype is 16-bit: the ops compute in f32 anyway, and LLVM
    // folded the rounding with the next op into bf16 arithmetic (add.rn.bf16)
    // on which ptxas serialised every wgmma (C7514). Ops that move values
    // (select) get it rounded.
    values[accCopy] = accV;
    std::function<Value(Value)> get = [&](Value v) -> Value {
      if (auto it = values.find(v); it != values.end())
        return it->second;
      auto t = cast<RankedTensorType>(v.getType());
      Type elem = t.getElementType();
      Value r;
      if (auto *it = llvm::find(argCopies, v); it != argCopies.end()) {
        // Its element at C's indices, broadcast (NumPy: aligned at the last
        // axis; axes of size 1 read index 0).
        Value buffer = captured[it - argCopies.begin()];
        SmallVector<Value> at;
        if (t.getRank() == rank && rank > 2 &&
            t.getShape().drop_back() == shape.drop_back()) {
          // Every leading axis of C's (a residual, a per-row scale): read
          // at the flat row, its axes collapsed into one. The unflattened
          // indices' divisions and remainders, multiplied back by the
          // loads, kept 64-bit values live that spilled (8 bytes at 96
          // registers on sm_90, a [3, 333, 768] residual).
          SmallVector<ReassociationIndices> groups(2);
          for (int64_t d = 0; d + 1 < rank; ++d)
            groups[0].push_back(d);
          groups[1].push_back(rank - 1);
          buffer = memref::CollapseShapeOp::create(b, loc, buffer, groups);
          at = {flat, t.getShape().back() == 1 ? zero : idx[rank - 1]};
        } else {
          for (auto [j, size] : llvm::enumerate(t.getShape()))
            at.push_back(size == 1 ? zero : idx[j + rank - t.getRank()]);
        }
        r = memref::LoadOp::create(b, loc, buffer, at);
      } else if (auto c = v.getDefiningOp<mlir::tcc::ConstantOp>()) {
        // A splat (absorbEpilogue checked): its element, of `elem`.
        Attribute a = c.getValue();
        if (auto dense = dyn_cast<DenseElementsAttr>(a))
          a = dense.getSplatValue<Attribute>();
        auto typed = dyn_cast<TypedAttr>(a);
        if (!typed || typed.getType() != elem) {
          double x = *mlir::tcc::constantValue(v);
          typed = isa<FloatType>(elem)
                      ? TypedAttr(b.getFloatAttr(elem, x))
                      : TypedAttr(b.getIntegerAttr(elem, int64_t(x)));
        }
        r = arith::ConstantOp::create(b, loc, typed);
      } else {
        Operation *op = v.getDefiningOp();
        SmallVector<Value> in;
        for (Value o : op->getOperands()) {
          Value x = get(o);
          Type want = cast<RankedTensorType>(o.getType()).getElementType();
          if (x.getType() != want && isa<mlir::tcc::SelectOp>(op))
            x = arith::TruncFOp::create(b, loc, want, x);
          in.push_back(x);
        }
        r = mlir::tcc::buildElementwiseScalar(b, loc, op, in);
      }
      values[v] = r;
      return r;
    };
    return get(rootCopy);
  };
  use.epilogueArgs = std::move(args);
  use.numOperands = f.getNumArguments();
  use.numResults = 1;
  use.direct = true;
  f->setAttr("tcc.template", UnitAttr::get(f.getContext()));
  return true;
}

std::optional<MatmulUse> takeMatmul(func::FuncOp f,
                                    const ::tcc::GpuOptions &options,
                                    ModuleOp epilogues) {
  auto kind = f->getAttrOfType<StringAttr>("tcc.kind");
  if (kind && kind.getValue() == "tile_matmul")
    return takeTileMatmul(f);
  if (!kind || kind.getValue() != "matmul")
    return std::nullopt;
  mlir::tcc::MatmulOp mm;
  for (Operation &op : f.getBody().front())
    if (auto m = dyn_cast<mlir::tcc::MatmulOp>(op)) {
      if (mm)
        return std::nullopt;
      mm = m;
    }
  if (!mm)
    return std::nullopt;
  auto aArg = dyn_cast<BlockArgument>(mm.getA());
  auto bArg = dyn_cast<BlockArgument>(mm.getB());
  if (!aArg || !bArg)
    return std::nullopt;
  auto aTy = cast<RankedTensorType>(mm.getA().getType());
  auto bTy = cast<RankedTensorType>(mm.getB().getType());
  auto cTy = cast<RankedTensorType>(mm.getType());
  ::tcc::gpu::MatmulProblem p;
  p.transA = mm.getTransposeA();
  p.transB = mm.getTransposeB();
  int64_t rank = cTy.getRank();
  p.m = cTy.getDimSize(rank - 2);
  p.n = cTy.getDimSize(rank - 1);
  p.k = aTy.getDimSize(aTy.getRank() - (p.transA ? 2 : 1));
  p.batch = ShapedType::getNumElements(cTy.getShape().drop_back(2));
  // Each operand's batch is all of C's or a single matrix.
  auto batchOf = [&](RankedTensorType t, bool &batched) {
    ArrayRef<int64_t> dims = t.getShape().drop_back(2);
    int64_t n = ShapedType::getNumElements(dims);
    batched = n != 1;
    if (!batched)
      return true;
    ArrayRef<int64_t> cDims = cTy.getShape().drop_back(2);
    return dims.size() == cDims.size() && dims == cDims;
  };
  if (!batchOf(aTy, p.aBatched) || !batchOf(bTy, p.bBatched))
    return std::nullopt;
  // A batch of A against one B is one matrix of batch * M rows (A and C are
  // contiguous): a linear layer over [batch, tokens, features] gets one grid
  // over all its rows, and the wgmma template, which takes one matrix.
  if (p.batch > 1 && p.aBatched && !p.bBatched && !p.transA) {
    p.m *= p.batch;
    p.batch = 1;
    p.aBatched = false; // one matrix now (its tuning signature says so)
  }
  p.aType = aTy.getElementType();
  p.bType = bTy.getElementType();
  p.cType = cTy.getElementType();
  p.allowTf32 = options.allowTf32;
  std::string why;
  if (p.m == 0 || p.n == 0 || p.k == 0 || p.batch == 0)
    return std::nullopt;
  // 8-bit operands run on wgmma alone (mma.sync's template takes 16- and
  // 32-bit ones): the template takes them where the wgmma kernel does with
  // its heuristic's schedule, else the generic kernels compute them.
  if (wgmmaOnlyTypes(p)) {
    TemplateProblems tps = templateProblems(p, options.target);
    if (!tps.wgmmaFits ||
        !::tcc::gpu::wgmmaKernelSupports(
            tps.wgmma, ::tcc::gpu::chooseWgmmaSchedule(tps.wgmma),
            options.target, why))
      return std::nullopt;
  } else if (!::tcc::gpu::matmulKernelSupports(p, why)) {
    return std::nullopt;
  }

  MatmulUse use;
  use.problem = p;
  use.aArg = aArg.getArgNumber();
  use.bArg = bArg.getArgNumber();
  if (!(options.matmulEpilogues && absorbEpilogue(f, mm, p, epilogues, use)))
    cutTemplateOp(f, mm, use);
  return use;
}

/// A kernel function beginning with a tcc.tile_matmul of its arguments
/// (tcc-expand-precision-plans made it only where the wgmma template takes
/// it: addMatmulLaunch builds the template with its tile mask).
std::optional<MatmulUse> takeTileMatmul(func::FuncOp f) {
  mlir::tcc::TileMatmulOp tm;
  for (Operation &op : f.getBody().front())
    if (auto t = dyn_cast<mlir::tcc::TileMatmulOp>(op)) {
      if (tm)
        return std::nullopt;
      tm = t;
    }
  if (!tm)
    return std::nullopt;
  auto argOf = [](Value v) {
    auto a = dyn_cast_or_null<BlockArgument>(v);
    return a ? int(a.getArgNumber()) : -1;
  };
  MatmulUse use;
  int aArg = argOf(tm.getA()), bArg = argOf(tm.getB());
  use.codesArg = argOf(tm.getCodes());
  if (aArg < 0 || bArg < 0 || use.codesArg < 0 ||
      (tm.getRowScale() && argOf(tm.getRowScale()) < 0) ||
      (tm.getColScale() && argOf(tm.getColScale()) < 0))
    return std::nullopt;
  use.rowScaleArg = argOf(tm.getRowScale());
  use.colScaleArg = argOf(tm.getColScale());
  auto aTy = cast<RankedTensorType>(tm.getA().getType());
  auto cTy = cast<RankedTensorType>(tm.getType());
  ::tcc::gpu::MatmulProblem &p = use.problem;
  p.aBatched = p.bBatched = false; // one matrix each
  p.transB = tm.getTransposeB();
  p.m = cTy.getDimSize(0);
  p.n = cTy.getDimSize(1);
  p.k = aTy.getDimSize(1);
  p.aType = p.bType = aTy.getElementType();
  p.cType = cTy.getElementType();
  ::tcc::gpu::WgmmaProblem::TileMask mask;
  mask.code = tm.getCode();
  mask.planTileM = tm.getTileM();
  mask.planTileN = tm.getTileN();
  mask.planGridN = (p.n + mask.planTileN - 1) / mask.planTileN;
  mask.rowScale = use.rowScaleArg >= 0;
  mask.colScale = use.colScaleArg >= 0;
  use.tileMask = mask;
  use.aArg = unsigned(aArg);
  use.bArg = unsigned(bArg);
  cutTemplateOp(f, tm, use);
  return use;
}

/// Builds the template kernel of `use` into `gpuModule`; its launch is
/// prepended to `plan` (whose indices it shifts, see MatmulUse).
/// A template's schedule knobs by their names in schedule files and tuning
/// records, each with the field it sets.
using Knobs = SmallVector<std::pair<const char *, int64_t *>, 7>;

Knobs mmaKnobs(::tcc::gpu::MatmulSchedule &s) {
  return {{"tile_m", &s.tileM},   {"tile_n", &s.tileN},   {"tile_k", &s.tileK},
          {"warps_m", &s.warpsM}, {"warps_n", &s.warpsN}, {"stages", &s.stages},
          {"split_k", &s.splitK}};
}

Knobs wgmmaKnobs(::tcc::gpu::WgmmaSchedule &s) {
  return {{"tile_m", &s.tileM},          {"tile_n", &s.tileN},
          {"warpgroups", &s.warpgroups}, {"stages", &s.stages},
          {"split_k", &s.splitK},        {"promote", &s.promote},
          {"producer", &s.producer}};
}

/// Sets `knobs` from the object `o`; the first key that names no knob or
/// holds no integer, or nothing.
std::optional<std::string> setKnobs(const nlohmann::json &o,
                                    const Knobs &knobs) {
  for (const auto &item : o.items()) {
    auto it = llvm::find_if(
        knobs, [&](const auto &k) { return item.key() == k.first; });
    if (it == knobs.end() || !item.value().is_number_integer())
      return item.key();
    *it->second = item.value().get<int64_t>();
  }
  return std::nullopt;
}

/// The knobs' values as a JSON object's text (`tcc inspect`).
std::string knobsText(const Knobs &knobs) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto &[name, field] : knobs)
    j[name] = *field;
  return j.dump();
}

/// Schedules from --schedule: {"matmul": {...}, "conv": {...}, "kernels":
/// {"NAME": {...}}}, each {...} holding some of tile_m, tile_n, tile_k,
/// warps_m, warps_n, stages; a kernel's entry wins over "matmul" (for the
/// matmul kernels) or "conv" (for the convolutions' implicit GEMM), which win
/// over the heuristic. {"rows": {"values_per_thread": N}} sets how many row
/// values a thread of a fused row kernel holds, {"rows": {"blocks_per_sm": N}}
/// the residency the generic kernels ask for (0: full, -1: none).
struct ScheduleOverrides {
  nlohmann::json all = nlohmann::json::object();
  nlohmann::json conv = nlohmann::json::object();
  nlohmann::json perKernel = nlohmann::json::object();
  int64_t rowValuesPerThread = 0; ///< 0: the pass's default
  int64_t rowClusterThreads = 256; ///< a long row's cluster's blocks
  int64_t blocksPerSm = 0;        ///< tcc-gpu-occupancy's option
  bool rowLastBlock = true;       ///< tcc-gpu-row-fusion's last-block
  bool rowPairRounds = true;      ///< tcc-gpu-row-fusion's pair-rounds
  bool rowStream = true;          ///< tcc-gpu-row-fusion's stream-rows

  LogicalResult load(const std::string &path, std::string &error) {
    if (path.empty())
      return success();
    // A regular file only: /dev/zero or a FIFO would never end.
    std::string text;
    if (!::tcc::io::readRegularFile(path, text, error))
      return failure();
    nlohmann::json j =
        nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      error = path + ": a schedule file is a JSON object";
      return failure();
    }
    for (auto &[key, value] : j.items()) {
      if (key == "matmul")
        all = value;
      else if (key == "conv")
        conv = value;
      else if (key == "kernels")
        perKernel = value;
      else if (key == "rows") {
        if (!value.is_object()) {
          error = path + ": \"rows\" holds an object";
          return failure();
        }
        for (auto &[k, v] : value.items()) {
          if (k == "values_per_thread" && v.is_number_integer() &&
              v.get<int64_t>() >= 1 && v.get<int64_t>() <= 64) {
            rowValuesPerThread = v.get<int64_t>();
          } else if (k == "blocks_per_sm" && v.is_number_integer() &&
                     v.get<int64_t>() >= -1 && v.get<int64_t>() <= 32) {
            blocksPerSm = v.get<int64_t>();
          } else if (k == "cluster_threads" && v.is_number_integer() &&
                     (v.get<int64_t>() == 256 || v.get<int64_t>() == 512 ||
                      v.get<int64_t>() == 1024)) {
            rowClusterThreads = v.get<int64_t>();
          } else if (k == "last_block" && v.is_boolean()) {
            rowLastBlock = v.get<bool>();
          } else if (k == "pair_rounds" && v.is_boolean()) {
            rowPairRounds = v.get<bool>();
          } else if (k == "stream" && v.is_boolean()) {
            rowStream = v.get<bool>();
          } else {
            error = path + ": \"rows\" holds values_per_thread (an integer "
                           "from 1 to 64), blocks_per_sm (-1 to 32), "
                           "cluster_threads (256, 512 or 1024), "
                           "last_block, pair_rounds and stream (true or "
                           "false)";
            return failure();
          }
        }
      } else if (key == "attention") {
        // Applied by tcc-gpu-attention-plan (the pipeline hands it over).
        if (!value.is_object()) {
          error = path + ": \"attention\" holds an object";
          return failure();
        }
      } else {
        error = path + ": unknown key '" + key +
                "' (known: matmul, conv, kernels, rows, attention)";
        return failure();
      }
    }
    if (!all.is_object() || !conv.is_object() || !perKernel.is_object()) {
      error = path + ": \"matmul\", \"conv\" and \"kernels\" hold objects";
      return failure();
    }
    return success();
  }

  /// Applies the overrides for kernel `name` (a convolution if `isConv`)
  /// to `s`.
  LogicalResult apply(const std::string &name, ::tcc::gpu::MatmulSchedule &s,
                      std::string &error, bool isConv = false) const {
    for (const nlohmann::json *o :
         {isConv ? &conv : &all,
          perKernel.contains(name) ? &perKernel[name] : nullptr}) {
      if (!o)
        continue;
      if (!o->is_object()) {
        error = "schedule for " + name + " is not an object";
        return failure();
      }
      if (std::optional<std::string> bad = setKnobs(*o, mmaKnobs(s))) {
        error = "schedule for " + name + ": '" + *bad +
                "' is not one of tile_m, tile_n, tile_k, warps_m, "
                "warps_n, stages, split_k with an integer value";
        return failure();
      }
    }
    return success();
  }
};

/// Every buffer number a launch holds: its arguments and its tensor maps'
/// buffers (renumbered together).
std::vector<int *> launchBufferRefs(::tcc::DeviceLaunch &l) {
  std::vector<int *> refs;
  for (int &a : l.args)
    refs.push_back(&a);
  for (::tcc::DeviceLaunch::TensorMap &t : l.tensorMaps)
    refs.push_back(&t.arg);
  return refs;
}

/// The manifest launch of a template kernel built as `symbol`. With `args`
/// empty (placeLaunch sets them), a tensor map's `arg` is still the
/// kernel's argument number, which placeLaunch resolves.
::tcc::DeviceLaunch deviceLaunch(const std::string &symbol,
                                 const ::tcc::gpu::KernelLaunch &k,
                                 std::vector<int> args) {
  ::tcc::DeviceLaunch l;
  l.symbol = symbol;
  l.grid = k.grid;
  l.block = k.block;
  l.sharedBytes = k.sharedBytes;
  l.cluster = k.cluster;
  for (const ::tcc::gpu::TensorMapSpec &m : k.tensorMaps)
    l.tensorMaps.push_back({args.empty() ? int(m.operand) : args[m.operand],
                            m.dtype, m.dims, m.strides, m.box, m.swizzle,
                            m.im2col, m.channels, m.pixels, m.lower, m.upper,
                            m.elementStrides, m.offset});
  l.args = std::move(args);
  return l;
}

/// A kernel function that is one attention chain, computed whole by the
/// attention templates: its launches, with the kernel's buffers as
/// arguments (one for the prefill form; the decode form's partial and
/// combine kernels, through two scratch buffers).
struct AttentionUse {
  std::vector<::tcc::DeviceLaunch> launches;
  std::vector<uint64_t> scratchBytes;
};

/// The kernel argument an attention operand reads: itself, or the argument
/// it reshapes (a view of the same buffer).
Value attentionArg(Value v) {
  if (auto r = v.getDefiningOp<mlir::tcc::ReshapeOp>())
    return r.getInput();
  return v;
}

/// The tcc.attention op of kernel `f` (on tensors), or null when it has
/// none; an error when the op is not the whole kernel, over its arguments
/// or views of them (tcc-form-groups gives each one a kernel of its own).
FailureOr<mlir::tcc::AttentionOp> attentionOf(func::FuncOp f) {
  mlir::tcc::AttentionOp op;
  f.walk([&](mlir::tcc::AttentionOp a) {
    op = a;
    return WalkResult::interrupt();
  });
  if (!op)
    return op;
  Block &entry = f.getBody().front();
  // Operands are arguments, or reshapes of arguments (views of their
  // buffers, which the kernel reads through the op's strides: FormGroups'
  // input views); nothing else is in the kernel.
  auto operandsAreArgs = llvm::all_of(op->getOperands(), [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(attentionArg(v));
    return arg && arg.getOwner() == &entry;
  });
  bool onlyViews = llvm::all_of(entry.without_terminator(), [&](Operation &o) {
    return &o == op.getOperation() || isa<mlir::tcc::ReshapeOp>(o);
  });
  auto ret = dyn_cast<func::ReturnOp>(entry.getTerminator());
  if (op->getBlock() != &entry || !onlyViews || !operandsAreArgs || !ret ||
      ret.getNumOperands() != 1 || ret.getOperand(0) != op.getResult())
    return op.emitError("kernel ")
           << f.getSymName()
           << ": tcc.attention must be the whole kernel, reading its "
              "arguments";
  return op;
}

/// Builds the planned template kernels of `op`, the tcc.attention op of
/// kernel `f` (attentionOf), into `gpuModule`. The plan was checked by
/// tcc-gpu-attention-plan; a kernel that cannot be built is an error (a
/// tcc.attention has no generic lowering to fall back to).
FailureOr<AttentionUse> takeAttention(func::FuncOp f, mlir::tcc::AttentionOp op,
                                      const ::tcc::TargetDesc &target,
                                      gpu::GPUModuleOp gpuModule) {
  auto refuse = [&](const std::string &reason) -> FailureOr<AttentionUse> {
    return op.emitError("kernel ") << f.getSymName() << ": " << reason;
  };
  Attribute plan = op->getAttr(::tcc::gpu::kAttentionPlanAttrName);
  if (!plan)
    return refuse("tcc.attention has no plan (tcc-gpu-attention-plan)");
  auto q = cast<BlockArgument>(attentionArg(op.getQ())),
       k = cast<BlockArgument>(attentionArg(op.getK())),
       v = cast<BlockArgument>(attentionArg(op.getV()));
  // The captured tensors (bias, mask, slopes) are kernel arguments too.
  std::vector<int> capturedArgs;
  for (Value c : op.getCaptured())
    capturedArgs.push_back(cast<BlockArgument>(attentionArg(c)).getArgNumber());
  std::string why;
  ::tcc::gpu::AttentionProblem p = ::tcc::gpu::attentionProblemOf(op, target);
  if (!::tcc::gpu::attentionPlanValid(p, plan, target, why))
    return refuse(why);
  OpBuilder b(gpuModule.getContext());
  b.setInsertionPointToEnd(gpuModule.getBody());
  AttentionUse use;
  int out = f.getNumArguments();
  // The template the plan names builds its kernels (AttentionTemplate.h).
  FailureOr<::tcc::gpu::AttentionKernels> built =
      ::tcc::gpu::attentionTemplateOf(plan)->build(b, gpuModule, f.getSymName(),
                                                   p, plan, target, why);
  if (failed(built))
    return refuse(why);
  std::vector<int> args{int(q.getArgNumber()), int(k.getArgNumber()),
                        int(v.getArgNumber()), out};
  if (built->combine.empty()) {
    // One kernel: Q, K, V, O, the captured tensors.
    llvm::append_range(args, capturedArgs);
    use.launches = {deviceLaunch(built->kernel, built->launch, args)};
  } else {
    // The decode forms' pair: the partial kernel reads the operands and
    // writes scratch (out + 1, + 2), the combine writes the result.
    args.back() = out + 1;
    args.push_back(out + 2);
    llvm::append_range(args, capturedArgs);
    use.launches = {deviceLaunch(built->kernel, built->launch, args),
                    deviceLaunch(built->combine, built->combineLaunch,
                                 {out + 1, out + 2, out})};
    use.scratchBytes = {built->partialOBytes, built->statsBytes};
  }
  f->setAttr("tcc.template", UnitAttr::get(f.getContext()));
  return FailureOr<AttentionUse>(use);
}

/// A matmul's signature in tuning records: its problem, as a record's
/// "signature" object holds it.
std::string typeName(Type t) {
  std::string s;
  if (!t)
    return s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

nlohmann::json matmulSignature(const ::tcc::gpu::MatmulProblem &p) {
  auto name = typeName;
  return {{"a", name(p.aType)},
          {"b", name(p.bType)},
          {"c", name(p.cType)},
          {"m", p.m},
          {"n", p.n},
          {"k", p.k},
          {"batch", p.batch},
          {"a_batched", p.aBatched},
          {"b_batched", p.bBatched},
          {"trans_a", p.transA},
          {"trans_b", p.transB},
          // Only f32 operands round to tf32: a 16-bit matmul's record holds
          // with or without --allow-tf32.
          {"allow_tf32", p.allowTf32 && p.aType && p.aType.isF32()}};
}

/// A convolution's signature in tuning records: its problem, with the
/// epilogue it computes ("" for a type it lacks).
nlohmann::json convSignature(const ::tcc::gpu::ConvProblem &p) {
  return {{"input", typeName(p.inType)},
          {"weight", typeName(p.weightType)},
          {"output", typeName(p.outType)},
          {"bias", typeName(p.biasType)},
          {"residual", typeName(p.residualType)},
          {"relu", p.relu},
          {"n", p.n},
          {"h", p.h},
          {"w", p.w},
          {"c", p.c},
          {"o", p.o},
          {"kh", p.kh},
          {"kw", p.kw},
          {"strides", {p.strideH, p.strideW}},
          {"dilations", {p.dilationH, p.dilationW}},
          {"pads", {p.padTop, p.padLeft, p.padBottom, p.padRight}},
          {"groups", p.groups},
          {"allow_tf32", p.allowTf32 && p.inType && p.inType.isF32()},
          {"out_stride", p.outStride},
          {"out_offset", p.outOffset},
          {"raw_out", p.rawOut},
          {"copy_out", p.copyOut},
          {"shuffle", {p.shuffleH, p.shuffleW}}};
}

/// The wgmma template's knobs of a convolution: the matmul's and `tma`.
std::string wgmmaConvKnobsText(::tcc::gpu::WgmmaSchedule s) {
  nlohmann::json j = nlohmann::json::parse(knobsText(wgmmaKnobs(s)));
  j["tma"] = s.tma;
  return j.dump();
}

/// Sets `s` from a record's wgmma schedule of a convolution (`tma` a
/// boolean); the first key that is no knob or of the wrong type, or
/// nothing.
std::optional<std::string> setWgmmaConvKnobs(nlohmann::json o,
                                             ::tcc::gpu::WgmmaSchedule &s) {
  if (o.contains("tma")) {
    if (!o["tma"].is_boolean())
      return std::string("tma");
    s.tma = o["tma"].get<bool>();
    o.erase("tma");
  }
  return setKnobs(o, wgmmaKnobs(s));
}

LogicalResult addMatmulLaunch(const MatmulUse &use, const std::string &name,
                              const ::tcc::TargetDesc &target,
                              const ScheduleOverrides &overrides,
                              const ::tcc::TuningRecords &records, bool convTma,
                              gpu::GPUModuleOp gpuModule,
                              ::tcc::KernelPlan &plan) {
  OpBuilder b(gpuModule.getContext());
  b.setInsertionPointToEnd(gpuModule.getBody());
  const ::tcc::gpu::MatmulProblem &mp = use.problem;
  std::string error, symbol;
  FailureOr<::tcc::gpu::KernelLaunch> launch = failure();
  int numBuffers = use.numOperands + use.numResults;
  // The template's buffers: its operands, then C (the kernel's result or
  // scratch buffer 0), then (`raw`) the result before the ReLU.
  int cIndex = use.numOperands + (use.secondResult == 0 ? 1 : 0);
  auto placeLaunch = [&](::tcc::DeviceLaunch l, std::vector<int> operands,
                         bool raw = false) {
    if (!use.direct) {
      // The epilogue function's buffers are [operands, C, results,
      // scratch...]: renumber to [operands, results, C scratch, scratch...].
      for (::tcc::DeviceLaunch &other : plan.launches)
        for (int *a : launchBufferRefs(other)) {
          if (*a < int(use.numOperands))
            continue;
          if (*a == int(use.numOperands))
            *a = numBuffers;
          else if (*a <= numBuffers)
            *a -= 1;
        }
      plan.scratchBytes.insert(plan.scratchBytes.begin(),
                               uint64_t(mp.batch * mp.m * mp.n) *
                                   (mp.cType.getIntOrFloatBitWidth() / 8));
    }
    operands.push_back(use.direct ? cIndex : numBuffers);
    if (raw && use.secondResult >= 0)
      operands.push_back(use.numOperands + use.secondResult);
    l.args = std::move(operands);
    for (::tcc::DeviceLaunch::TensorMap &t : l.tensorMaps)
      t.arg = l.args[t.arg];
    plan.launches.insert(plan.launches.begin(), l);
  };
  // Split-K: the GEMM (the first launch) writes f32 partials to a new
  // scratch buffer, and a reduction launched right after it sums them,
  // applies the epilogue (its buffers `epiArgs`) and writes C. (A cluster
  // split-K sums them itself.)
  auto addSplitK = [&](const ::tcc::gpu::MatmulSchedule &sch,
                       const ::tcc::gpu::GemmEpilogue &epi,
                       std::vector<int> epiArgs) {
    if (sch.splitK <= 1 || sch.clusterSplitK)
      return;
    for (::tcc::DeviceLaunch &other : plan.launches)
      for (int *a : launchBufferRefs(other))
        if (*a >= numBuffers)
          ++*a;
    plan.scratchBytes.insert(
        plan.scratchBytes.begin(),
        uint64_t(::tcc::gpu::splitKWorkspaceBytes(mp, sch)));
    ::tcc::DeviceLaunch &gemm = plan.launches.front();
    int c = gemm.args.back();
    gemm.args.back() = numBuffers;
    std::string rsym = symbol + "_splitk";
    ::tcc::gpu::KernelLaunch r = ::tcc::gpu::buildSplitKReduceKernel(
        b, gpuModule, rsym, mp, sch.splitK, epi);
    std::vector<int> args = {numBuffers};
    args.insert(args.end(), epiArgs.begin(), epiArgs.end());
    args.push_back(c);
    if (use.secondResult >= 0)
      args.push_back(use.numOperands + use.secondResult);
    plan.launches.insert(plan.launches.begin() + 1,
                         deviceLaunch(rsym, r, std::move(args)));
  };
  // B [K][N] transposed into scratch first (tf32 and 8-bit operands: wgmma
  // reads them K-major only), its launch in front; the template's reads the
  // copy, the first scratch buffer.
  auto prependTransposeB = [&] {
    for (::tcc::DeviceLaunch &other : plan.launches)
      for (int *a : launchBufferRefs(other))
        if (*a >= numBuffers)
          ++*a;
    int64_t bb = mp.bBatched ? mp.batch : 1;
    plan.scratchBytes.insert(plan.scratchBytes.begin(),
                             uint64_t(bb * mp.k * mp.n) *
                                 (mp.bType.getIntOrFloatBitWidth() / 8));
    ::tcc::DeviceLaunch &gemm = plan.launches.front();
    gemm.args[1] = numBuffers;
    // The wgmma template's tensor maps are A's, then B's: B's reads the
    // transposed copy too (A may be the same buffer as B).
    if (gemm.tensorMaps.size() == 2)
      gemm.tensorMaps[1].arg = numBuffers;
    std::string tsym = name + "_transpose_b";
    ::tcc::gpu::KernelLaunch t = ::tcc::gpu::buildTransposeKernel(
        b, gpuModule, tsym, bb, mp.k, mp.n, mp.bType);
    plan.launches.insert(plan.launches.begin(),
                         deviceLaunch(tsym, t, {int(use.bArg), numBuffers}));
  };
  if (use.region) {
    symbol = name + "_region";
    launch = ::tcc::gpu::buildRegionKernel(b, gpuModule, symbol, *use.region,
                                           use.regionSchedule);
    if (failed(launch))
      return failure();
    placeLaunch(deviceLaunch(symbol, *launch, {}), use.regionArgs);
    return success();
  }
  if (use.tileMask) {
    // One precision of a planned matmul: the wgmma template with its tile
    // mask, a kernel tile dividing the plan's (8-bit B transposed first).
    // (i8 as its i32 product, for the template's checks; C is f32.)
    ::tcc::gpu::MatmulProblem tp = mp;
    tp.cType = mp.aType.isInteger(8) ? Type(b.getI32Type()) : b.getF32Type();
    TemplateProblems tps = templateProblems(tp, target);
    ::tcc::gpu::WgmmaProblem wp = tps.wgmma;
    wp.cType = b.getF32Type();
    wp.mask = use.tileMask;
    ::tcc::gpu::WgmmaSchedule ws = ::tcc::gpu::chooseWgmmaSchedule(wp);
    if (use.tileMask->planTileM % ws.tileM != 0) {
      ws.tileM = 64;
      ws.warpgroups = 1;
    }
    while (ws.tileN > 64 && use.tileMask->planTileN % ws.tileN != 0)
      ws.tileN /= 2;
    if (!tps.wgmmaFits ||
        !::tcc::gpu::wgmmaKernelSupports(wp, ws, target, error))
      return gpuModule.emitError("kernel ")
             << name << ": a planned precision's tiles: "
             << (tps.wgmmaFits ? error : "not a problem wgmma takes");
    symbol = name + "_wgmma";
    launch = ::tcc::gpu::buildWgmmaKernel(b, gpuModule, symbol, wp, ws);
    if (failed(launch))
      return failure();
    ::tcc::DeviceLaunch l = deviceLaunch(symbol, *launch, {});
    l.templateName = "wgmma";
    l.scheduleJson = knobsText(wgmmaKnobs(ws));
    std::vector<int> operands = {int(use.aArg), int(use.bArg), use.codesArg};
    if (use.rowScaleArg >= 0)
      operands.push_back(use.rowScaleArg);
    if (use.colScaleArg >= 0)
      operands.push_back(use.colScaleArg);
    placeLaunch(l, operands);
    if (tps.transposeB)
      prependTransposeB();
    return success();
  }
  if (use.depthwise) {
    symbol = name + "_depthwise";
    ::tcc::gpu::KernelLaunch k = ::tcc::gpu::buildDepthwiseKernel(
        b, gpuModule, symbol, *use.depthwise);
    std::vector<int> operands = {int(use.aArg), int(use.bArg)};
    if (use.biasArg >= 0)
      operands.push_back(use.biasArg);
    placeLaunch(deviceLaunch(symbol, k, {}), operands);
    return success();
  }
  if (use.conv) {
    // The implicit GEMM: on wgmma (sm_90a) where chooseWgmmaConvSchedule
    // takes it, else on mma.sync. A "conv" or per-kernel schedule in
    // --schedule keeps mma.sync, as a "matmul" one does for matmuls; a
    // tuning record for its signature (unless --schedule names it) gives
    // its template and schedule where the template takes them.
    const ::tcc::gpu::ConvProblem &cp = *use.conv;
    std::vector<int> epiArgs;
    if (use.biasArg >= 0)
      epiArgs.push_back(use.biasArg);
    if (use.residualArg >= 0)
      epiArgs.push_back(use.residualArg);
    bool explicitSchedule =
        !overrides.conv.empty() || overrides.perKernel.contains(name);
    std::optional<::tcc::gpu::WgmmaSchedule> ws;
    if (!explicitSchedule)
      ws = ::tcc::gpu::chooseWgmmaConvSchedule(cp, target, convTma);
    std::optional<::tcc::gpu::ConvSchedule> tunedMma;
    bool tuned = false;
    if (!explicitSchedule && !records.empty()) {
      std::vector<std::string> warnings;
      const ::tcc::TuningRecord *record =
          records.find("conv", convSignature(cp), target.name, warnings);
      for (const std::string &w : warnings)
        gpuModule.emitWarning("kernel ") << name << ": " << w;
      std::string why;
      if (record && record->templ == "wgmma") {
        ::tcc::gpu::WgmmaSchedule rs = ws.value_or(::tcc::gpu::WgmmaSchedule());
        if (std::optional<std::string> bad =
                setWgmmaConvKnobs(record->schedule, rs))
          why = "'" + *bad +
                "' is not a knob of the template with a value of "
                "its type";
        else if (rs.tma && !convTma)
          why = "it copies by TMA, which --gpu-conv-tma=false turns off";
        else if (::tcc::gpu::wgmmaConvScheduleValid(cp, rs, target, why)) {
          ws = rs;
          tuned = true;
        }
      } else if (record && record->templ == "mma") {
        ::tcc::gpu::ConvSchedule rs =
            ::tcc::gpu::chooseConvSchedule(cp, target);
        if (std::optional<std::string> bad =
                setKnobs(record->schedule, mmaKnobs(rs))) {
          why = "'" + *bad +
                "' is not a knob of the template with an integer value";
        } else {
          ::tcc::gpu::chooseSplitKReduction(rs, target);
          if (::tcc::gpu::convScheduleValid(cp, rs, target, why)) {
            ws.reset();
            tunedMma = rs;
            tuned = true;
          }
        }
      } else if (record) {
        why = "no convolution template is named '" + record->templ + "'";
      }
      if (record && !tuned)
        gpuModule.emitWarning("kernel ")
            << name << ": its tuning record is not applied: " << why;
    }
    ::tcc::gpu::GemmEpilogue epi = ::tcc::gpu::convEpilogue(cp);
    if (ws) {
      symbol = name + "_conv_wgmma";
      launch = ::tcc::gpu::buildWgmmaConvKernel(b, gpuModule, symbol, cp, *ws);
      if (failed(launch))
        return failure();
      std::vector<int> operands = {int(use.aArg), int(use.bArg)};
      // With split-K the epilogue's buffers go to the reduction.
      if (ws->splitK <= 1)
        operands.insert(operands.end(), epiArgs.begin(), epiArgs.end());
      ::tcc::DeviceLaunch l = deviceLaunch(symbol, *launch, {});
      l.templateName = "wgmma";
      l.scheduleJson = wgmmaConvKnobsText(*ws);
      l.signatureJson = convSignature(cp).dump();
      l.tuningKernel = "conv";
      l.tuned = tuned;
      placeLaunch(l, operands, ws->splitK <= 1);
      ::tcc::gpu::MatmulSchedule split;
      split.splitK = ws->splitK;
      addSplitK(split, epi, epiArgs);
      return success();
    }
    ::tcc::gpu::ConvSchedule schedule;
    if (tunedMma) {
      schedule = *tunedMma;
    } else {
      schedule = ::tcc::gpu::chooseConvSchedule(cp, target);
      if (failed(overrides.apply(name, schedule, error, /*isConv=*/true)))
        return gpuModule.emitError("kernel ") << name << ": " << error;
      ::tcc::gpu::chooseSplitKReduction(schedule, target);
      if (!::tcc::gpu::convScheduleValid(cp, schedule, target, error))
        return gpuModule.emitError("kernel ") << name << ": " << error;
    }
    symbol = name + "_conv_mma";
    launch = ::tcc::gpu::buildConvKernel(b, gpuModule, symbol, cp, schedule);
    if (failed(launch))
      return failure();
    std::vector<int> operands = {int(use.aArg), int(use.bArg)};
    // With split-K the epilogue's buffers go to the reduction (but stay
    // with a cluster split-K, which reduces in the kernel).
    if (schedule.splitK <= 1 || schedule.clusterSplitK)
      operands.insert(operands.end(), epiArgs.begin(), epiArgs.end());
    ::tcc::DeviceLaunch l = deviceLaunch(symbol, *launch, {});
    l.templateName = "mma";
    l.scheduleJson = knobsText(mmaKnobs(schedule));
    l.signatureJson = convSignature(cp).dump();
    l.tuningKernel = "conv";
    l.tuned = tuned;
    placeLaunch(l, operands, schedule.splitK <= 1 || schedule.clusterSplitK);
    addSplitK(schedule, epi, epiArgs);
    return success();
  }
  // With wgmma (sm_90a), Hopper's warpgroup MMA takes what it supports
  // (bf16/f16/tf32, one matrix, A row-major, sizes multiples of its tiles):
  // 0.80-0.89x cuBLAS where mma.sync reaches about 0.6 (docs/performance.md). A
  // matmul schedule in --schedule keeps the mma.sync template. tf32 wants B
  // stored [N][K]: wgmma reads 32-bit operands K-major only, and mma.sync reads
  // B through ldmatrix only so (32-bit elements have no transposing ldmatrix:
  // 0.62x cuBLAS against 0.47x). B [K][N] is transposed into scratch first, for
  // a few percent of the GEMM's time (docs/performance.md).
  TemplateProblems tps = templateProblems(mp, target);
  bool transposeB = tps.transposeB, wgmmaFits = tps.wgmmaFits;
  const ::tcc::gpu::WgmmaProblem &wp = tps.wgmma;
  const ::tcc::gpu::MatmulProblem &tp = tps.mma;
  ::tcc::gpu::WgmmaSchedule ws = ::tcc::gpu::chooseWgmmaSchedule(wp);
  ::tcc::gpu::MatmulSchedule schedule; // the mma.sync path's (split-K)
  bool explicitSchedule =
      !overrides.all.empty() || overrides.perKernel.contains(name);
  // A tuning record for this matmul on this GPU (a --schedule wins): its
  // template and schedule where the template takes them, else a warning
  // and the heuristic's choice.
  const ::tcc::TuningRecord *record = nullptr;
  if (!explicitSchedule && !records.empty()) {
    std::vector<std::string> warnings;
    record = records.find("matmul", matmulSignature(mp), target.name, warnings);
    for (const std::string &w : warnings)
      gpuModule.emitWarning("kernel ") << name << ": " << w;
  }
  bool tuned = false;
  if (record) {
    std::string why;
    if (record->templ == "wgmma") {
      ::tcc::gpu::WgmmaSchedule rs = ws;
      if (!wgmmaFits)
        why = "the wgmma template does not take this matmul on " + target.name;
      else if (std::optional<std::string> bad =
                   setKnobs(record->schedule, wgmmaKnobs(rs)))
        why = "'" + *bad +
              "' is not a knob of the template with an integer value";
      else if (::tcc::gpu::wgmmaKernelSupports(wp, rs, target, why)) {
        ws = rs;
        tuned = true;
      }
    } else if (record->templ == "mma") {
      ::tcc::gpu::MatmulSchedule rs =
          ::tcc::gpu::chooseMatmulSchedule(tp, target);
      if (std::optional<std::string> bad =
              setKnobs(record->schedule, mmaKnobs(rs))) {
        why = "'" + *bad +
              "' is not a knob of the template with an integer value";
      } else {
        ::tcc::gpu::chooseSplitKReduction(rs, target);
        if (::tcc::gpu::matmulScheduleValid(tp, rs, target, why)) {
          schedule = rs;
          tuned = true;
        }
      }
    } else {
      why = "no matmul template is named '" + record->templ + "'";
    }
    if (!tuned)
      gpuModule.emitWarning("kernel ")
          << name << ": its tuning record is not applied: " << why;
  }
  bool eightBit = wgmmaOnlyTypes(mp);
  bool useWgmma =
      tuned ? record->templ == "wgmma"
            : wgmmaFits && !explicitSchedule &&
                  ::tcc::gpu::wgmmaKernelSupports(wp, ws, target, error);
  if (eightBit && !useWgmma) {
    // Only wgmma takes 8-bit operands (takeMatmul checked its heuristic's
    // schedule): the kernel's own --schedule entry sets its knobs (the
    // "matmul" entry holds mma.sync's, for the other matmuls).
    if (!tuned && overrides.perKernel.contains(name))
      for (const nlohmann::json *o : {&overrides.perKernel[name]}) {
        if (!o->is_object())
          return gpuModule.emitError("kernel ")
                 << name << ": a matmul schedule is a JSON object";
        if (std::optional<std::string> bad = setKnobs(*o, wgmmaKnobs(ws)))
          return gpuModule.emitError("kernel ")
                 << name << ": '" << *bad
                 << "' is not one of tile_m, tile_n, warpgroups, stages, "
                    "split_k, promote, producer (8-bit operands "
                    "run on the wgmma "
                    "template alone) with an integer value";
      }
    if (!::tcc::gpu::wgmmaKernelSupports(wp, ws, target, error))
      return gpuModule.emitError("kernel ") << name << ": " << error;
    useWgmma = true;
  }
  const ::tcc::gpu::GemmEpilogue &epi = use.epilogue;
  if (useWgmma) {
    symbol = name + "_wgmma";
    launch = ::tcc::gpu::buildWgmmaKernel(b, gpuModule, symbol, wp, ws, nullptr,
                                          epi);
  } else {
    if (!tuned) {
      schedule = ::tcc::gpu::chooseMatmulSchedule(tp, target);
      if (failed(overrides.apply(name, schedule, error)))
        return gpuModule.emitError("kernel ") << name << ": " << error;
      ::tcc::gpu::chooseSplitKReduction(schedule, target);
      if (!::tcc::gpu::matmulScheduleValid(tp, schedule, target, error))
        return gpuModule.emitError("kernel ") << name << ": " << error;
    }
    symbol = name + "_mma";
    launch =
        ::tcc::gpu::buildMatmulKernel(b, gpuModule, symbol, tp, schedule, epi);
  }
  if (failed(launch))
    return failure();
  ::tcc::DeviceLaunch l = deviceLaunch(symbol, *launch, {});
  l.templateName = useWgmma ? "wgmma" : "mma";
  l.scheduleJson =
      useWgmma ? knobsText(wgmmaKnobs(ws)) : knobsText(mmaKnobs(schedule));
  l.tuned = tuned;
  l.signatureJson = matmulSignature(mp).dump();
  l.tuningKernel = "matmul";
  // A wgmma split-K (a tuning record's or a --schedule's) writes f32
  // partials too, which the same reduction kernel sums into C.
  ::tcc::gpu::MatmulSchedule split = schedule;
  if (useWgmma) {
    split = ::tcc::gpu::MatmulSchedule();
    split.splitK = ws.splitK;
  }
  // The absorbed epilogue's buffers go to the kernel that applies it: the
  // GEMM, or the reduction of its split-K partials.
  bool reduced = split.splitK > 1 && !split.clusterSplitK;
  std::vector<int> operands = {int(use.aArg), int(use.bArg)};
  if (!reduced)
    operands.insert(operands.end(), use.epilogueArgs.begin(),
                    use.epilogueArgs.end());
  placeLaunch(l, operands);
  addSplitK(split, epi, use.epilogueArgs);
  if (transposeB)
    prependTransposeB();
  return success();
}

} // namespace

namespace tcc {
LogicalResult compileGpuKernels(ModuleOp module, const GpuOptions &options,
                                CodeArtifact &artifact) {
  const TargetDesc &target = options.target;
  bool nvidia = target.isNvidia();
  if (!target.isGpu())
    return module.emitError("not a GPU target: ") << target.name;
  ScheduleOverrides overrides;
  std::string scheduleError;
  if (failed(overrides.load(options.scheduleFile, scheduleError)))
    return module.emitError(scheduleError);
  ::tcc::TuningRecords records;
  if (!records.load(options.tuningRecords, scheduleError))
    return module.emitError(scheduleError);
  std::vector<std::string> names;
  llvm::StringMap<MatmulUse> matmuls;
  llvm::StringMap<AttentionUse> attentions;
  // Template kernels of tcc.attention ops (formed and planned in the pass
  // pipeline) are built here, from the op on tensors, and join the other
  // device functions after outlining.
  OwningOpRef<ModuleOp> templates = ModuleOp::create(module.getLoc());
  // Copies of kernels whose elementwise code a GEMM template absorbs
  // (absorbEpilogue): read when the template is built.
  OwningOpRef<ModuleOp> epilogues = ModuleOp::create(module.getLoc());
  OpBuilder tb = OpBuilder::atBlockEnd(templates->getBody());
  auto attentionModule =
      mlir::gpu::GPUModuleOp::create(tb, module.getLoc(), "tcc_attention");
  bool attentionFailed = false;
  OwningOpRef<ModuleOp> device =
      cloneKernelsAsBuffers(module, names, [&](func::FuncOp f) {
        if (attentionFailed || f->hasAttr("tcc.concat_in_place") ||
            f->hasAttr("tcc.view"))
          return;
        FailureOr<mlir::tcc::AttentionOp> op = attentionOf(f);
        if (failed(op)) {
          attentionFailed = true;
          return;
        }
        if (*op) {
          // The attention templates: NVIDIA's from sm_80, AMD's SIMT one.
          FailureOr<AttentionUse> use =
              target.hasAttentionTemplates()
                  ? takeAttention(f, *op, target, attentionModule)
                  : FailureOr<AttentionUse>(op->emitError(
                        "tcc.attention on a target without attention "
                        "templates"));
          if (failed(use))
            attentionFailed = true;
          else
            attentions[f.getSymName()] = *use;
          return;
        }
        // The matmul templates are written with cp.async and mma.sync.
        if (!target.cpAsync || !target.mmaSync)
          return;
        std::string why;
        if (std::optional<MatmulUse> use = takeRegion(f, target, why))
          matmuls[f.getSymName()] = *use;
        else if (!why.empty())
          f.emitWarning("region group runs unfused: ") << why;
        else if (std::optional<MatmulUse> use =
                     takeMatmul(f, options, *epilogues))
          matmuls[f.getSymName()] = *use;
        else if (std::optional<MatmulUse> use = takeConv(f, options))
          matmuls[f.getSymName()] = *use;
        else if (std::optional<MatmulUse> use = takeDepthwise(f))
          matmuls[f.getSymName()] = *use;
      });
  if (attentionFailed)
    return failure();
  // A convolution storing into a concat's buffer must be a template's whole
  // kernel (tcc-concat-in-place checks what takeConv takes): generic code
  // would write a buffer of its own.
  for (auto f : device->getOps<func::FuncOp>()) {
    if (!f->hasAttr("tcc.out_slice"))
      continue;
    auto use = matmuls.find(f.getSymName());
    if (use == matmuls.end() || !use->second.conv || !use->second.direct)
      return f.emitError("internal: kernel ")
             << f.getSymName()
             << " stores into a concat, but no convolution template computes "
                "it whole";
  }
  // Kernels a template computes whole need no generic code, and concats
  // their inputs were stored into (tcc-concat-in-place) and reshapes
  // (tcc-view-kernels) none at all.
  for (auto f : llvm::make_early_inc_range(device->getOps<func::FuncOp>()))
    if (f->hasAttr("tcc.template") || f->hasAttr("tcc.concat_in_place") ||
        f->hasAttr("tcc.view"))
      f.erase();
  if (failed(bufferizeKernels(*device, options.timing)) ||
      failed(runPipeline(
          *device,
          launchPipeline(options.rowFusion, overrides.rowValuesPerThread,
                         overrides.rowClusterThreads, overrides.rowLastBlock,
                         overrides.rowPairRounds, overrides.rowStream, nvidia,
                         overrides.blocksPerSm, target.clusters),
          "mapping to GPU launches", options.timing)))
    return failure();

  for (const std::string &name : names) {
    KernelPlan plan;
    plan.name = name;
    if (auto attention = attentions.find(name);
        attention != attentions.end()) {
      plan.launches = attention->second.launches;
      plan.scratchBytes = attention->second.scratchBytes;
      artifact.kernels.push_back(std::move(plan));
      continue;
    }
    auto use = matmuls.find(name);
    if (auto f = module.lookupSymbol<func::FuncOp>(name);
        f && (f->hasAttr("tcc.concat_in_place") || f->hasAttr("tcc.view"))) {
      artifact.kernels.push_back(std::move(plan)); // no launches
      continue;
    }
    if (use == matmuls.end() || !use->second.direct) {
      auto func = device->lookupSymbol<func::FuncOp>(name);
      if (!func)
        return module.emitError("lowered kernel ") << name << " is missing";
      if (failed(collectPlan(func, plan)))
        return failure();
    }
    artifact.kernels.push_back(std::move(plan));
  }
  mlir::gpu::GPUModuleOp gpuModule = mergeDeviceCode(*device);
  for (auto fn :
       llvm::make_early_inc_range(attentionModule.getOps<mlir::gpu::GPUFuncOp>()))
    fn->moveBefore(gpuModule.getBody(), gpuModule.getBody()->end());
  for (auto [i, name] : llvm::enumerate(names)) {
    auto use = matmuls.find(name);
    if (use != matmuls.end() &&
        failed(addMatmulLaunch(use->second, name, target, overrides, records,
                               options.convTma, gpuModule,
                               artifact.kernels[i])))
      return failure();
  }
  // A per-kernel schedule must name a kernel it can change: a typo would
  // otherwise leave the heuristic's schedule in place without a word.
  for (auto &[name, value] : overrides.perKernel.items()) {
    if (matmuls.count(name))
      continue;
    std::string known;
    for (const std::string &n : names)
      if (matmuls.count(n))
        known += (known.empty() ? "" : ", ") + n;
    return module.emitError("--schedule: '")
           << name << "' is not a matmul kernel of this model ("
           << (known.empty() ? "it has none"
                             : "its matmul and conv kernels: " + known)
           << "; `tcc inspect` lists kernels)";
  }
  WalkResult allocs = gpuModule.walk([](memref::AllocOp alloc) {
    alloc.emitError("a GPU kernel allocates memory inside a loop");
    return WalkResult::interrupt();
  });
  if (allocs.wasInterrupted())
    return failure();
  // The LLVM conversions take the index width from the data layout.
  MLIRContext *ctx = module.getContext();
  unsigned indexBits = chooseIndexBits(gpuModule, options.indexBits);
  // 32 bits asked for where they do not hold: a buffer of 2^31 elements or
  // more, or a template kernel (its dynamic shared memory and addressing
  // are 64-bit; LLVM's translation fails on them).
  if (indexBits == 32 && chooseIndexBits(gpuModule, 0) == 64)
    return module.emitError(
        "--gpu-index-bits 32 does not fit this model: its kernels need 64-bit "
        "indices (a buffer of 2^31 elements or more, or a template kernel: "
        "matmul, attention); use 0 (automatic) or 64");
  gpuModule->setAttr(
      DLTIDialect::kDataLayoutAttrName,
      DataLayoutSpecAttr::get(
          ctx, {DataLayoutEntryAttr::get(
                   IndexType::get(ctx),
                   IntegerAttr::get(IntegerType::get(ctx, 64), indexBits))}));
  // The chip on the module, from the one description: NVVM ops check the
  // architecture they need against it (wgmma on sm_90a only) with an error
  // rather than an abort in LLVM's instruction selection.
  Attribute targetAttr =
      nvidia ? Attribute(NVVM::NVVMTargetAttr::get(
                   ctx, options.optLevel, "nvptx64-nvidia-cuda", target.name))
             : Attribute(ROCDL::ROCDLTargetAttr::get(
                   ctx, options.optLevel, "amdgcn-amd-amdhsa", target.name,
                   /*features=*/"", /*abiVersion=*/"500"));
  gpuModule.setTargetsAttr(ArrayAttr::get(ctx, {targetAttr}));
  if (failed(runPipeline(*device,
                         nvidia ? nvvmPipeline(target, options.gridDependency)
                                : rocdlPipeline(target),
                         "GPU code generation", options.timing)))
    return failure();
  // TMA descriptor arguments passed by value (tcc-gpu-tensor-map-args; the
  // GPU passes are not registered by name in every tool that gets here).
  if (nvidia && failed(::tcc::gpu::passTensorMapsByValue(gpuModule)))
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
  artifact.target = target.name;
  if (nvidia) {
    artifact.format = "ptx";
    if (failed(compileNvptxModule(*llvmModule, target, options.optLevel,
                                  options.cudaPath, artifact.assembly,
                                  artifact.llvmIR, error)))
      return module.emitError(error);
    artifact.code.assign(artifact.assembly.begin(), artifact.assembly.end());
    // Read back from the PTX, not assumed: a kernel launched early must
    // wait before its first memory access.
    if (target.gridDependency)
      for (std::string &name : kernelsWaitingFirst(artifact.assembly))
        artifact.waitingKernels.insert(std::move(name));
  } else {
    artifact.format = "hsaco";
    if (failed(compileAmdgpuModule(*llvmModule, target, options.optLevel,
                                   options.rocmDeviceLibs, artifact.code,
                                   artifact.llvmIR, artifact.assembly, error)))
      return module.emitError(error);
  }
  return success();
}

/// A signature's type name, as typeName prints it ("bf16", "f16", "f32",
/// "f8E4M3FN", "f8E5M2", "i8", "i32"; anything else: null).
static Type typeNamed(mlir::MLIRContext &context, const std::string &t) {
  mlir::Builder b(&context);
  return t == "bf16"       ? Type(b.getBF16Type())
         : t == "f16"      ? Type(b.getF16Type())
         : t == "f32"      ? Type(b.getF32Type())
         : t == "f8E4M3FN" ? Type(b.getType<Float8E4M3FNType>())
         : t == "f8E5M2"   ? Type(b.getType<Float8E5M2Type>())
         : t == "i8"       ? Type(b.getI8Type())
         : t == "i32"      ? Type(b.getI32Type())
                           : Type();
}

static std::vector<MatmulCandidate> matmulSpace(const nlohmann::json &signature,
                                                const TargetDesc &target,
                                                mlir::MLIRContext &context,
                                                std::string &error) {
  auto typeOf = [&](const char *key) {
    return typeNamed(context, signature.value(key, ""));
  };
  ::tcc::gpu::MatmulProblem mp;
  try {
    mp.aType = typeOf("a");
    mp.bType = typeOf("b");
    mp.cType = typeOf("c");
    mp.m = signature.at("m").get<int64_t>();
    mp.n = signature.at("n").get<int64_t>();
    mp.k = signature.at("k").get<int64_t>();
    mp.batch = signature.at("batch").get<int64_t>();
    mp.aBatched = signature.at("a_batched").get<bool>();
    mp.bBatched = signature.at("b_batched").get<bool>();
    mp.transA = signature.at("trans_a").get<bool>();
    mp.transB = signature.at("trans_b").get<bool>();
    mp.allowTf32 = signature.at("allow_tf32").get<bool>();
  } catch (const nlohmann::json::exception &) {
    error = "a matmul signature needs m, n, k, batch, a_batched, b_batched, "
            "trans_a, trans_b and allow_tf32";
    return {};
  }
  if (!mp.aType || !mp.bType || !mp.cType) {
    error = "a matmul signature's a, b and c must be bf16, f16, f32, "
            "f8E4M3FN, f8E5M2, i8 or i32";
    return {};
  }
  std::vector<MatmulCandidate> out;
  TemplateProblems tps = templateProblems(mp, target);
  if (tps.wgmmaFits) {
    for (::tcc::gpu::WgmmaSchedule s :
         ::tcc::gpu::wgmmaScheduleSpace(tps.wgmma, target))
      out.push_back({"wgmma", nlohmann::json::parse(knobsText(wgmmaKnobs(s)))});
  }
  for (::tcc::gpu::MatmulSchedule s :
       ::tcc::gpu::matmulScheduleSpace(tps.mma, target))
    out.push_back({"mma", nlohmann::json::parse(knobsText(mmaKnobs(s)))});
  if (out.empty())
    error = "no matmul template takes this signature on " + target.name;
  return out;
}

/// The convolution of a tuning signature (convSignature) and its spaces.
static std::vector<MatmulCandidate> convSpace(const nlohmann::json &sig,
                                              const TargetDesc &target,
                                              mlir::MLIRContext &context,
                                              std::string &error) {
  auto typeOf = [&](const char *key) {
    return typeNamed(context, sig.value(key, ""));
  };
  ::tcc::gpu::ConvProblem p;
  try {
    p.inType = typeOf("input");
    p.weightType = typeOf("weight");
    p.outType = typeOf("output");
    p.biasType = typeOf("bias");
    p.residualType = typeOf("residual");
    p.relu = sig.at("relu").get<bool>();
    p.n = sig.at("n").get<int64_t>();
    p.h = sig.at("h").get<int64_t>();
    p.w = sig.at("w").get<int64_t>();
    p.c = sig.at("c").get<int64_t>();
    p.o = sig.at("o").get<int64_t>();
    p.kh = sig.at("kh").get<int64_t>();
    p.kw = sig.at("kw").get<int64_t>();
    auto pair = [&](const char *k, int64_t &x, int64_t &y) {
      x = sig.at(k).at(0).get<int64_t>();
      y = sig.at(k).at(1).get<int64_t>();
    };
    pair("strides", p.strideH, p.strideW);
    pair("dilations", p.dilationH, p.dilationW);
    pair("shuffle", p.shuffleH, p.shuffleW);
    p.padTop = sig.at("pads").at(0).get<int64_t>();
    p.padLeft = sig.at("pads").at(1).get<int64_t>();
    p.padBottom = sig.at("pads").at(2).get<int64_t>();
    p.padRight = sig.at("pads").at(3).get<int64_t>();
    p.groups = sig.at("groups").get<int64_t>();
    p.allowTf32 = sig.at("allow_tf32").get<bool>();
    p.outStride = sig.at("out_stride").get<int64_t>();
    p.outOffset = sig.at("out_offset").get<int64_t>();
    p.rawOut = sig.at("raw_out").get<bool>();
    p.copyOut = sig.at("copy_out").get<bool>();
  } catch (const nlohmann::json::exception &) {
    error = "a convolution signature needs the fields tcc inspect shows";
    return {};
  }
  if (!p.inType || !p.weightType || !p.outType) {
    error = "a convolution signature's types must be bf16, f16 or f32 (the "
            "convolution templates' types)";
    return {};
  }
  // Sizes first: the spaces divide by the strides.
  if (!::tcc::gpu::convKernelSupports(p, error))
    return {};
  std::vector<MatmulCandidate> out;
  for (const ::tcc::gpu::WgmmaSchedule &s :
       ::tcc::gpu::wgmmaConvScheduleSpace(p, target))
    out.push_back({"wgmma", nlohmann::json::parse(wgmmaConvKnobsText(s))});
  for (::tcc::gpu::ConvSchedule s : ::tcc::gpu::convScheduleSpace(p, target))
    out.push_back({"mma", nlohmann::json::parse(knobsText(mmaKnobs(s)))});
  if (out.empty())
    error = "no convolution template takes this signature on " + target.name;
  return out;
}

std::vector<MatmulCandidate> tuningSpace(const std::string &kernel,
                                         const nlohmann::json &signature,
                                         const TargetDesc &target,
                                         mlir::MLIRContext &context,
                                         std::string &error) {
  if (kernel == "matmul")
    return matmulSpace(signature, target, context, error);
  if (kernel == "conv")
    return convSpace(signature, target, context, error);
  error = "no template family is named '" + kernel + "'";
  return {};
}

} // namespace tcc
