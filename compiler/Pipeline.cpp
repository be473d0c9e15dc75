//===- Pipeline.cpp - from an imported model to a bundle ------------------===//
#include "compiler/Pipeline.h"
#include "compiler/BundleBuilder.h"
#include "compiler/PrecisionPlan.h"
#include "compiler/gpu/Passes.h"
#include "passes/Passes.h"
#include "passes/RegionCostModel.h"
#include "runtime/src/FileIO.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace {

/// The "attention" entry of a --schedule file as JSON text, for
/// tcc-gpu-attention-plan; empty when there is none. A file that cannot be
/// read or parsed gives none here: GpuCodegen reads it again and reports why.
std::string attentionSchedule(const std::string &path) {
  if (path.empty())
    return "";
  std::string text, error;
  if (!tcc::io::readRegularFile(path, text, error))
    return "";
  nlohmann::json j =
      nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("attention"))
    return "";
  return j["attention"].dump();
}

/// What --region-fusion asks for.
struct RegionFusionChoice {
  enum Mode { Off, Auto, Alternatives, Force } mode = Off;
  std::string force; ///< FILE or FILE:ID
  int64_t alternatives = 0, seed = 1;
  std::string out;
};

/// Reads --region-fusion: auto, off, `alternatives=N,out=FILE[,seed=S]`
/// (search as auto and write N alternative groupings to FILE), or an
/// alternatives file FILE[:ID] to force (the file must exist; what is in it
/// tcc-region-fusion checks).
mlir::LogicalResult parseRegionFusion(llvm::StringRef value,
                                      RegionFusionChoice &choice) {
  if (value == "off")
    return mlir::success();
  if (value == "auto") {
    choice.mode = RegionFusionChoice::Auto;
    return mlir::success();
  }
  if (value.starts_with("alternatives=")) {
    choice.mode = RegionFusionChoice::Alternatives;
    llvm::SmallVector<llvm::StringRef> fields;
    value.split(fields, ',');
    for (llvm::StringRef field : fields) {
      auto [key, val] = field.split('=');
      if (key == "alternatives" || key == "seed") {
        int64_t &slot = key == "seed" ? choice.seed : choice.alternatives;
        if (val.getAsInteger(10, slot) || slot < 0)
          return mlir::failure();
      } else if (key == "out" && !val.empty()) {
        choice.out = val.str();
      } else {
        return mlir::failure();
      }
    }
    return mlir::success(choice.alternatives > 0 && !choice.out.empty());
  }
  // FILE or FILE:ID.
  llvm::StringRef path = value;
  size_t colon = value.rfind(':');
  if (colon != llvm::StringRef::npos && colon + 1 < value.size() &&
      llvm::all_of(value.drop_front(colon + 1), llvm::isDigit))
    path = value.take_front(colon);
  std::string text, error;
  if (path.empty() || !tcc::io::readRegularFile(path.str(), text, error))
    return mlir::failure();
  choice.mode = RegionFusionChoice::Force;
  choice.force = value.str();
  return mlir::success();
}

} // namespace

using mlir::LogicalResult;
using mlir::ModuleOp;

LogicalResult tcc::compileModel(ImportedModel &model,
                                const CompileOptions &options,
                                CompileOutput &output) {
  ModuleOp module = *model.module;
  const TargetDesc &target = options.target;
  if (options.fusion != "auto" && options.fusion != "off" &&
      options.fusion != "rolling" && options.fusion != "splitk")
    return module.emitError("unknown --fusion '")
           << options.fusion << "' (known: auto, off, rolling, splitk)";
  if (options.convLayout != "auto" && options.convLayout != "nhwc" &&
      options.convLayout != "nchw")
    return module.emitError("unknown --conv-layout '")
           << options.convLayout << "' (known: auto, nchw, nhwc)";
  RegionFusionChoice region;
  if (mlir::failed(parseRegionFusion(options.regionFusion, region)))
    return module.emitError("unknown --region-fusion '")
           << options.regionFusion
           << "' (known: auto, off, alternatives=N,out=FILE[,seed=S], or an "
              "alternatives file FILE[:ID] that exists)";
  // A forced grouping is checked and costed on the file's cost target where
  // the compile's target has none (tcc-region-fusion).
  if (region.mode != RegionFusionChoice::Off && region.force.empty() &&
      !mlir::tcc::region::costTargetNamed(target.name))
    return module.emitError("--region-fusion=")
           << (region.mode == RegionFusionChoice::Auto ? "auto"
                                                       : "alternatives")
           << " has no cost model for target '" << target.name
           << "' (known: " << mlir::tcc::region::knownCostTargets() << ")";
  // The rolling loop's per-thread buffers of an attention chain become
  // stack memory that LLVM's AMDGPU back end cannot select (it aborts).
  if (target.isAmd() && options.fusion == "rolling")
    return module.emitError("--fusion=rolling is not supported for AMD "
                            "targets yet (use splitk or off)");
  if (!options.precisionPlan.empty()) {
    std::string error;
    if (!applyPrecisionPlan(model, options.precisionPlan, error))
      return module.emitError(error);
  }
  mlir::PassManager pm(module.getContext());
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return mlir::failure();
  mlir::TimingScope scope;
  if (options.host.timing) {
    scope = options.host.timing->nest("graph passes");
    pm.enableTiming(scope);
  }
  // Planned matmuls first: every pass after sees the tcc ops they stand for.
  mlir::tcc::TccExpandPrecisionPlansOptions plans;
  plans.tileKernels = options.precisionPlanTiles && target.wgmma;
  pm.addNestedPass<mlir::func::FuncOp>(
      mlir::tcc::createTccExpandPrecisionPlans(plans));
  pm.addNestedPass<mlir::func::FuncOp>(mlir::createCanonicalizerPass());
  pm.addNestedPass<mlir::func::FuncOp>(mlir::createCSEPass());
  // Attention over flattened heads ([B*H, L, S], viewed [B, H, L, S] for a
  // mask) becomes one chain over [B, H]: batch reshapes leave it.
  pm.addNestedPass<mlir::func::FuncOp>(mlir::tcc::createTccBatchReshapes());
  // Inference batch norms become the weight and bias of the convolution
  // before them (computations on params); then convolutions that run on
  // tensor cores go channels last, transposes at the graph's edges.
  pm.addNestedPass<mlir::func::FuncOp>(mlir::tcc::createTccFoldBatchNorm());
  mlir::tcc::TccConvLayoutOptions layout;
  layout.layout = options.convLayout;
  layout.tensorCores = target.isNvidia() && target.mmaSync;
  layout.allowTf32 = options.gpu.allowTf32;
  pm.addNestedPass<mlir::func::FuncOp>(mlir::tcc::createTccConvLayout(layout));
  pm.addNestedPass<mlir::func::FuncOp>(mlir::createCSEPass());
  // Region groups are chosen on the final layouts, before params are
  // hoisted (weights are still the convolutions' operands to count).
  if (region.mode != RegionFusionChoice::Off) {
    mlir::tcc::TccRegionFusionOptions pass;
    pass.mode = "auto";
    pass.target = target.name;
    pass.allowTf32 = options.gpu.allowTf32;
    pass.remarks = true; // printed with --explain
    // A deterministic stop that comes well before the pass's 20 s budget
    // on the seven CNNs on a loaded 2-core machine (DenseNet-121's wide
    // states take ~40 us each): docs/architecture.md.
    pass.maxStates = 150000;
    pass.force = region.force;
    pass.alternatives = region.alternatives;
    pass.seed = region.seed;
    pass.out = region.out;
    pm.addNestedPass<mlir::func::FuncOp>(
        mlir::tcc::createTccRegionFusion(pass));
  }
  // Work on params alone runs once at load (an init launch sequence), not
  // every run; the init function is grouped and compiled like the entry.
  pm.addPass(mlir::tcc::createTccHoistParamComputations());
  // On GPUs a matmul stays a kernel of its own, where the tensor-core
  // template computes it, unless it is part of attention that the fused
  // attention template computes (--gpu-attention; NVIDIA, and AMD with the
  // SIMT template alone): chains are
  // formed with matmuls, those the template does not take are dissolved
  // and formed again without them.
  mlir::tcc::TccFormChainsOptions chains;
  bool gpuAttention = target.hasAttentionTemplates() && options.gpu.attention;
  if (target.isGpu() && !gpuAttention)
    chains.maxMatmulExtent = 0;
  // Single-head attention ([L, D], no batch axis) too: its 2-D matmuls join
  // a chain only as attention's pair, and tcc-gpu-attention-chains dissolves
  // the pairs the templates do not take.
  chains.unbatchedAttention = gpuAttention;
  // Attention whose head size is over the extent stays unfused: say so
  // (--explain), as for the chains the templates refuse.
  chains.remarkUnfusedAttention = gpuAttention;
  pm.addNestedPass<mlir::func::FuncOp>(mlir::tcc::createTccFormChains(chains));
  if (gpuAttention) {
    // Attention is recognised once: the chains the templates take are
    // marked, planned (template and schedule, or a remark and generic
    // loops), and each planned one becomes a tcc.attention op, which the
    // passes after it leave alone and GpuCodegen builds from.
    pm.addNestedPass<mlir::func::FuncOp>(
        mlir::tcc::createTccGpuAttentionChains());
    mlir::tcc::TccGpuAttentionPlanOptions plan;
    plan.target = target.name;
    plan.schedule = attentionSchedule(options.gpu.scheduleFile);
    pm.addNestedPass<mlir::func::FuncOp>(
        mlir::tcc::createTccGpuAttentionPlan(plan));
    pm.addNestedPass<mlir::func::FuncOp>(mlir::tcc::createTccFormAttention());
    mlir::tcc::TccFormChainsOptions withoutMatmuls;
    withoutMatmuls.maxMatmulExtent = 0;
    pm.addNestedPass<mlir::func::FuncOp>(
        mlir::tcc::createTccFormChains(withoutMatmuls));
  }
  // GPU code generation does not take the fused forms yet: auto is off there.
  mlir::tcc::TccChainFusionOptions fusion;
  fusion.mode = options.fusion;
  if (target.isGpu() && options.fusion == "auto")
    fusion.mode = "off";
  // Host threads split rows: a few rows are enough parallel work. Measured
  // on the host, fused softmax and norms lose to the unfused row kernel
  // (which tcc-partition-grid splits over threads, a rolling loop it does
  // not), attention gains: docs/fusion.md.
  if (target.isHost()) {
    fusion.minRows = 4;
    fusion.parallelism = 16;
    fusion.matmulChainsOnly = true;
  }
  pm.addNestedPass<mlir::func::FuncOp>(mlir::tcc::createTccChainFusion(fusion));
  // GPU row kernels compute a chain's per-row gathers, their index checks
  // and a loss's mean in the chain's launch (tcc-gpu-row-fusion); the host
  // splits a chain's rows over threads, which a whole reduction would stop.
  mlir::tcc::TccFormGroupsOptions groups;
  groups.rowMembers = target.isGpu();
  pm.addNestedPass<mlir::func::FuncOp>(mlir::tcc::createTccFormGroups(groups));
  pm.addPass(mlir::tcc::createTccOutlineGroups());
  // Convolutions that only feed a channel concat store into it, where the
  // convolution templates run (GpuCodegen's cp.async and mma.sync ones).
  if (target.isNvidia() && target.cpAsync && target.mmaSync &&
      options.gpu.concatInPlace)
    pm.addPass(mlir::tcc::createTccConcatInPlace());
  // A kernel that only reshapes launches nothing (its result aliases its
  // argument's buffer: BundleBuilder).
  pm.addPass(mlir::tcc::createTccViewKernels());
  // Repeated blocks outline to identical kernels: each is compiled once.
  pm.addPass(mlir::tcc::createTccDedupKernels());
  // The driver prints errors only; a chain fusion refused is a warning the
  // user should see (the chain still compiles, unfused). One line each.
  mlir::ScopedDiagnosticHandler warnings(
      module.getContext(), [&](mlir::Diagnostic &d) {
        if (d.getSeverity() != mlir::DiagnosticSeverity::Warning)
          return mlir::failure();
        std::string where;
        if (auto name = mlir::dyn_cast<mlir::NameLoc>(d.getLocation()))
          where = name.getName().str() + ": ";
        std::string msg = d.str();
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        llvm::errs() << model.name << ": warning: " << where << msg << "\n";
        return mlir::success();
      });
  if (mlir::failed(pm.run(module)))
    return mlir::failure();
  scope.stop();
  llvm::raw_string_ostream os(output.mlir);
  module.print(os);

  CodeArtifact code;
  if (target.isHost()) {
    if (mlir::failed(compileHostKernels(module, options.host, code)))
      return mlir::failure();
  } else {
    GpuOptions gpu = options.gpu;
    gpu.target = target;
    if (mlir::failed(compileGpuKernels(module, gpu, code)))
      return mlir::failure();
  }
  output.llvmIR = std::move(code.llvmIR);
  output.assembly = std::move(code.assembly);
  output.params = std::move(model.params);
  return buildBundle(module, output.params, code, output.bundle,
                     options.keepParamRecipes);
}
