//===- OnnxImporter.h - ONNX models to the tcc dialect -----------*- C++
//-*-===//
//
// Reads an ONNX ModelProto (opsets 13 to 18) through the protobuf classes of
// Debian's libonnx-dev and builds the same module and params as the JSON
// importer (docs/onnx.md): every ONNX node becomes the ops the model format
// already has, built by the format's own op builders. Problems come back as
// one line, "FILE: node I "NAME" (OP): reason", never an exception or abort.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTEND_ONNXIMPORTER_H
#define TCC_FRONTEND_ONNXIMPORTER_H

#include "frontend/ModelImporter.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tcc {

/// Shapes fixed at compile time for graph inputs (--input-shape).
using InputShapes = std::map<std::string, std::vector<int64_t>>;

/// True when `path` names an ONNX model (the ".onnx" extension, any case).
bool isOnnxPath(const std::string &path);

/// Reads one "NAME=D0xD1x..." spec into `out`; returns "" or the problem.
/// The name is everything before the last '='.
std::string parseInputShape(const std::string &spec, InputShapes &out);

/// True when this tcc was built with ONNX support.
bool haveOnnxSupport();

/// Imports the serialized ModelProto `bytes`; `displayName` names it in
/// errors and `baseDir` is where external data paths start. With
/// `limits.deferRecipes` (--param-recipes=keep), initializers whose
/// doc_string holds a `tcc.recipe:` hint are checked against it and become
/// params kept as that recipe (docs/onnx.md, "Recipe hints").
std::optional<ImportedModel> importOnnxBytes(std::string_view bytes,
                                             const std::string &displayName,
                                             const std::string &baseDir,
                                             mlir::MLIRContext &ctx,
                                             std::vector<std::string> &errors,
                                             const InputShapes &inputShapes,
                                             const ImportLimits &limits = {});

/// Reads and imports the ONNX model at `path`; external data files are found
/// relative to its folder. On failure `errors` holds one line.
std::optional<ImportedModel> importOnnxFile(const std::string &path,
                                            mlir::MLIRContext &ctx,
                                            std::vector<std::string> &errors,
                                            const InputShapes &inputShapes,
                                            const ImportLimits &limits = {});

} // namespace tcc

#endif // TCC_FRONTEND_ONNXIMPORTER_H
