//===- FrontendFuzzer.cpp - libFuzzer target for the model frontend -------===//
//
// Feeds arbitrary bytes to importModelText as model JSON. Relative weight
// paths resolve in a scratch folder holding one honest safetensors file and
// a few that lie, so `{"file": ...}` initialisers are fuzzed too. Any crash,
// sanitizer report, leak, timeout or allocation over libFuzzer's limit is a
// bug: the frontend must turn every input into a model or one-line errors.
//
//===----------------------------------------------------------------------===//
#include "frontend/ModelImporter.h"
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

void writeFile(const std::string &name, const std::string &header,
               const std::string &data, uint64_t sizeField) {
  std::ofstream out(scratchDir + "/" + name, std::ios::binary);
  for (int i = 0; i < 8; ++i)
    out.put((char)(sizeField >> (8 * i)));
  out << header << data;
}

void writeFixtures() {
  std::string data(64, '\0');
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = (char)(i * 37 % 251);
  std::string honest =
      R"({"__metadata__": {"format": "pt"},
          "w": {"dtype": "F32", "shape": [2, 4], "data_offsets": [0, 32]},
          "h": {"dtype": "BF16", "shape": [4, 2], "data_offsets": [32, 48]},
          "i": {"dtype": "I64", "shape": [2], "data_offsets": [48, 64]},
          "b": {"dtype": "BOOL", "shape": [0], "data_offsets": [64, 64]}})";
  writeFile("w.safetensors", honest, data, honest.size());
  writeFile("big-header.safetensors", honest, data, ~uint64_t(0) >> 1);
  std::string lying =
      R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 0]}})";
  writeFile("lying.safetensors", lying, data, lying.size());
  writeFile("truncated.safetensors", honest, data.substr(0, 40), honest.size());
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / "tcc-fuzz-XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    std::abort();
  scratchDir = tmpl;
  std::atexit(removeScratch);
  writeFixtures();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: nothing uniqued by one input can grow the
  // next one's memory or hide its bugs.
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  ctx.getOrLoadDialect<mlir::tcc::TccDialect>();
  ctx.getOrLoadDialect<mlir::func::FuncDialect>();
  std::vector<std::string> errors;
  uint64_t internalBefore = tcc::internalImportErrorCount();
  tcc::ImportLimits limits;
  // Under libFuzzer's memory limit, whatever the input declares.
  limits.maxParamBytes = uint64_t(64) << 20;
  std::string_view text((const char *)data, size);
  auto model =
      tcc::importModelText(text, "fuzz.json", scratchDir, ctx, errors, limits);
  // The contract: a model without errors, or errors and no model, each one
  // line. An internal error means the frontend built IR that its own
  // checks should have refused (the verifier caught it): a bug too. It is
  // counted, not read from the text, which may quote user bytes.
  if (model.has_value() == !errors.empty() ||
      tcc::internalImportErrorCount() != internalBefore)
    std::abort();
  for (const std::string &e : errors)
    if (e.empty() || e.find('\n') != std::string::npos)
      std::abort();
  return 0;
}
