//===- OnnxFuzzer.cpp - libFuzzer target for the ONNX importer ------------===//
//
// Feeds arbitrary bytes to importOnnxBytes as a serialized ModelProto.
// External data paths resolve in a scratch folder holding one small file, so
// `data_location: EXTERNAL` initialisers are fuzzed too. Any crash, sanitizer
// report, leak, timeout or allocation over libFuzzer's limit is a bug: the
// importer must turn every input into a model or exactly one error line.
//
//===----------------------------------------------------------------------===//
#include "frontend/OnnxImporter.h"
#include "ir/TccDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

std::string scratchDir;

void removeScratch() {
  std::error_code ec;
  std::filesystem::remove_all(scratchDir, ec);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / "tcc-fuzz-onnx-XXXXXX")
          .string();
  if (!mkdtemp(tmpl.data()))
    std::abort();
  scratchDir = tmpl;
  std::atexit(removeScratch);
  std::ofstream out(scratchDir + "/weights.bin", std::ios::binary);
  for (int i = 0; i < 4096; ++i)
    out.put((char)(i * 37 % 251));
  return 0;
}

/// Imports `bytes` and checks the contract: a model and no errors, or
/// exactly one error line. An internal error (the importer built IR that the
/// format's checks should have refused, or threw) is a bug too; it is
/// counted, not read from the text, which may quote user bytes.
static void importOnce(std::string_view bytes, bool keepRecipes) {
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  ctx.getOrLoadDialect<mlir::tcc::TccDialect>();
  ctx.getOrLoadDialect<mlir::func::FuncDialect>();
  std::vector<std::string> errors;
  uint64_t internalBefore = tcc::internalImportErrorCount();
  tcc::ImportLimits limits;
  // Under libFuzzer's memory limit, whatever the input declares.
  limits.maxParamBytes = uint64_t(64) << 20;
  limits.deferRecipes = keepRecipes;
  auto model = tcc::importOnnxBytes(bytes, "fuzz.onnx", scratchDir, ctx, errors,
                                    {}, limits);
  if (model.has_value() == !errors.empty() || errors.size() > 1 ||
      tcc::internalImportErrorCount() != internalBefore)
    std::abort();
  for (const std::string &e : errors)
    if (e.empty() || e.find('\n') != std::string::npos)
      std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes((const char *)data, size);
  importOnce(bytes, false);
  // Initializers' recipe hints are read only as for --param-recipes=keep:
  // inputs that may hold one are imported that way too.
  if (bytes.find("tcc.recipe") != std::string_view::npos)
    importOnce(bytes, true);
  return 0;
}
