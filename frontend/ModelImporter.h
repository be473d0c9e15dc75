//===- ModelImporter.h - model JSON + safetensors to the tcc dialect -*- C++
//-*-===//
//
// The frontend: reads a model description (docs/model-format.md), checks every
// rule of the format, and builds
//
//   module attributes {tcc.model = "<name>"} {
//     func.func @main(inputs..., params...) -> (outputs..., statuses...)
//         attributes {tcc.entry}
//   }
//
// with the parameters' bytes beside it. Problems come back as one line each,
// "FILE: /json/pointer: message", never as an exception or an abort.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTEND_MODELIMPORTER_H
#define TCC_FRONTEND_MODELIMPORTER_H

#include "frontend/ParamBytes.h"
#include "runtime/src/DType.h"
#include "runtime/src/ParamRecipe.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tcc {

/// One parameter's initial value, in the order of the `tcc.kind = "param"`
/// arguments of @main.
struct ParamData {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  /// Row-major, encoded in `dtype` (little-endian, as runtime/src/DType.h);
  /// weights from a safetensors file are a view of the mapped file. Empty
  /// for a recipe the import deferred (ImportLimits::deferRecipes).
  ParamBytes bytes;
  /// How `fill` and `random` initialisers compute the bytes. A bundle may
  /// store the recipe instead of the bytes (--param-recipes=keep). Code that
  /// reads a param's values calls materialise() first; code that changes
  /// them resets `recipe`, which then no longer describes them.
  std::optional<ParamRecipe> recipe;

  /// Computes deferred bytes from the recipe.
  void materialise() {
    uint64_t numel = 1;
    for (int64_t d : shape)
      numel *= (uint64_t)d;
    if (!recipe || bytes.size() == numel * dtypeSize(dtype))
      return;
    bytes.resize(numel * dtypeSize(dtype));
    materialiseRecipe(*recipe, dtype, 0, numel, bytes.mutableData());
  }
};

struct ImportedModel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<ParamData> params;
  std::string name;
};

/// Resource limits of one import; the defaults are the documented ones.
struct ImportLimits {
  /// Bytes of all materialised parameters together.
  uint64_t maxParamBytes = uint64_t(4) << 30;
  /// Error lines reported before the import gives up.
  size_t maxErrors = 50;
  /// Leave the bytes of `fill` and `random` params empty, keeping only
  /// their recipe (for bundles that store recipes): a large random model
  /// then costs neither the time nor the memory of its weights. They still
  /// count towards maxParamBytes, which bounds what loading allocates.
  bool deferRecipes = false;
};

/// Internal errors (IR an importer built that its own checks refuse, or an
/// exception) reported by the JSON and ONNX importers in this process. The
/// fuzzers' oracle: an error's text cannot tell, since it may quote user
/// text ("internal" in a node name or a malformed recipe hint).
uint64_t internalImportErrorCount();

/// Reads and imports the model file at `path`; safetensors files are found
/// relative to its folder. Errors: one line each, "FILE: /json/pointer:
/// message" (RFC 6901 pointer of the offending value; "FILE: message" when
/// the problem concerns the whole file).
std::optional<ImportedModel> importModelFile(const std::string &path,
                                             mlir::MLIRContext &ctx,
                                             std::vector<std::string> &errors,
                                             const ImportLimits &limits = {});

/// Imports model JSON text; `displayName` names it in errors and `baseDir`
/// is where relative safetensors paths start.
std::optional<ImportedModel> importModelText(std::string_view json,
                                             const std::string &displayName,
                                             const std::string &baseDir,
                                             mlir::MLIRContext &ctx,
                                             std::vector<std::string> &errors,
                                             const ImportLimits &limits = {});

} // namespace tcc

#endif // TCC_FRONTEND_MODELIMPORTER_H
