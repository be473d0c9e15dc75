//===- Pipeline.h - from an imported model to a bundle ------------*- C++
//-*-===//
#ifndef TCC_COMPILER_PIPELINE_H
#define TCC_COMPILER_PIPELINE_H

#include "compiler/GpuCodegen.h"
#include "compiler/HostCodegen.h"
#include "frontend/ModelImporter.h"
#include "runtime/src/Bundle.h"

#include <string>
#include <vector>

namespace tcc {

struct CompileOptions {
  /// Parsed once from --target (parseTarget); the host by default.
  TargetDesc target;
  HostOptions host;
  GpuOptions gpu; ///< for GPU targets; gpu.target is set from `target`
  /// Reduction-chain fusion (docs/fusion.md): auto (the cost model on the
  /// host, off on GPUs until their code generation takes the forms), off,
  /// rolling or splitk (forced, on any target).
  std::string fusion = "auto";
  /// Convolution layout (tcc-conv-layout): auto (NHWC where a convolution
  /// runs on tensor cores, convUsesTensorCores), nhwc or nchw (every one).
  std::string convLayout = "auto";
  /// Region fusion (tcc-region-fusion, AFusion): off; auto (the cost model
  /// and search mark region groups; NVIDIA sm_80 and sm_90 only; GPU code
  /// generation builds a kernel per group); alternatives=N,out=FILE[,seed=S]
  /// (auto, and N alternative groupings written to FILE); or FILE[:ID], an
  /// alternatives file's grouping forced instead of the search's.
  std::string regionFusion = "off";
  /// Store params made by a recipe (fill, random) as the recipe, computed
  /// by the runtime at load, instead of their bytes (--param-recipes=keep).
  bool keepParamRecipes = false;
  /// A --precision-plan file (docs/precision.md): its matmuls' output tiles
  /// compute in the precisions it names. Empty: none.
  std::string precisionPlan;
  /// Experimental (not yet run on a GPU): on sm_90a, a plan's precisions
  /// the wgmma template takes compute only their tiles (tcc.tile_matmul)
  /// instead of a whole GEMM each (--precision-plan-tiles).
  bool precisionPlanTiles = false;
};

struct CompileOutput {
  /// The bundle, to stream to a file or serialize: its params' blobs are
  /// views of `params` (weights are not copied).
  bundle::BundleWriter bundle;
  std::vector<ParamData> params;
  std::string mlir;     // the module after kernel outlining
  std::string llvmIR;   // optimised LLVM IR of the kernels
  std::string assembly; // their assembly (PTX for NVIDIA targets)
};

/// Groups, outlines, generates code for the target and packs the bundle.
/// Diagnostics go to the context's handlers.
mlir::LogicalResult compileModel(ImportedModel &model,
                                 const CompileOptions &options,
                                 CompileOutput &output);

} // namespace tcc

#endif // TCC_COMPILER_PIPELINE_H
