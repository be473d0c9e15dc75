//===- PrecisionPlan.h - --precision-plan files --------------*- C++ -*-===//
//
// A precision plan file (docs/precision.md) names matmuls of a model and,
// for each, the precision every tile of its output computes in. Applying it
// turns each named tcc.matmul into a tcc.planned_matmul whose tile codes are
// a new param (tcc-expand-precision-plans then writes out what it means).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_PRECISIONPLAN_H
#define TCC_COMPILER_PRECISIONPLAN_H

#include "frontend/ModelImporter.h"

#include <string>
#include <vector>

namespace tcc {

/// The names a plan may give the node an op came from, the first unique:
/// the JSON format's node pointer ("/nodes/3") and its name, or the ONNX
/// importer's `node 3 "name" (MatMul)`, "node 3" and the name.
std::vector<std::string> planNodeKeys(mlir::Location loc);

/// Applies the plan file at `path` to `model`. On a file that cannot be
/// read, is not a plan, names a node that is no matmul of the model, gives a
/// tile grid that is not the output's, an unknown precision or a code out
/// of range: false, with one line in `error` (no change to the model).
bool applyPrecisionPlan(ImportedModel &model, const std::string &path,
                        std::string &error);

} // namespace tcc

#endif // TCC_COMPILER_PRECISIONPLAN_H
