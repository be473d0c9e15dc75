//===- BundleBuilder.h - manifest, memory plan and blobs ----------*- C++
//-*-===//
#ifndef TCC_COMPILER_BUNDLEBUILDER_H
#define TCC_COMPILER_BUNDLEBUILDER_H

#include "compiler/Artifact.h"
#include "frontend/ModelImporter.h"
#include "runtime/src/Bundle.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace tcc {

/// Builds the bundle of a module whose entry function (`tcc.entry`) is a
/// launch sequence of kernel calls (after tcc-outline-groups): buffers and
/// their memory plan, the launches, the params' bytes and the code. The
/// params' blobs are views of `params`, not copies: `params` must outlive
/// `writer`. With `keepRecipes`, params made by a recipe (fill, random) are
/// stored as the recipe, which the runtime computes at load, and the
/// manifest is version 2; otherwise their bytes are computed here if the
/// import deferred them.
mlir::LogicalResult buildBundle(mlir::ModuleOp module,
                                std::vector<ParamData> &params,
                                const CodeArtifact &code,
                                bundle::BundleWriter &writer,
                                bool keepRecipes = false);

} // namespace tcc

#endif // TCC_COMPILER_BUNDLEBUILDER_H
