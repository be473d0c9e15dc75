//===- TestUtil.h - helpers of the frontend tests -----------------*- C++
//-*-===//
#ifndef TCC_TESTS_FRONTEND_TESTUTIL_H
#define TCC_TESTS_FRONTEND_TESTUTIL_H

#include "frontend/ModelImporter.h"
#include "ir/TccDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tcc::test {

/// What an import gave: the op names of @main in order (without the
/// return), the printed result types, and the error lines.
struct Imported {
  bool ok = false;
  std::vector<std::string> ops;
  std::vector<std::string> resultTypes;
  std::vector<std::string> errors;
  std::string ir;
  std::optional<ImportedModel> model;
};

inline std::string typeString(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

/// Imports `json` as "test.json" with safetensors paths relative to
/// `baseDir`.
inline Imported importJson(mlir::MLIRContext &ctx, const std::string &json,
                           const std::string &baseDir = "/nonexistent",
                           const ImportLimits &limits = {}) {
  Imported r;
  r.model = importModelText(json, "test.json", baseDir, ctx, r.errors, limits);
  r.ok = r.model.has_value();
  if (!r.ok)
    return r;
  llvm::raw_string_ostream os(r.ir);
  r.model->module->print(os);
  auto func = *r.model->module->getOps<mlir::func::FuncOp>().begin();
  for (mlir::Operation &op : func.getBody().front().without_terminator())
    r.ops.push_back(op.getName().getStringRef().str());
  for (mlir::Type t : func.getFunctionType().getResults())
    r.resultTypes.push_back(typeString(t));
  return r;
}

/// A model around the given JSON fragments.
inline std::string modelJson(const std::string &inputs,
                             const std::string &nodes,
                             const std::string &outputs,
                             const std::string &params = "[]") {
  return R"({"format": "tcc-model", "version": 1, "name": "t", "inputs": )" +
         inputs + R"(, "params": )" + params + R"(, "nodes": )" + nodes +
         R"(, "outputs": )" + outputs + "}";
}

} // namespace tcc::test

#endif // TCC_TESTS_FRONTEND_TESTUTIL_H
