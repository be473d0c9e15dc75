//===- ImportDump.cpp - import a model, print it, dump its params ---------===//
//
// Test helper: `tcc-import-dump MODEL.json [PARAM_DIR]` prints the imported
// module, and writes each param's bytes to PARAM_DIR/<index>.bin so that
// check_params.py can compare them with NumPy. Errors go to stderr, one per
// line, with exit status 1.
//
//===----------------------------------------------------------------------===//
#include "frontend/ModelImporter.h"
#include "ir/TccDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>
#include <iostream>

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: tcc-import-dump MODEL.json [PARAM_DIR]\n";
    return 1;
  }
  mlir::MLIRContext ctx;
  std::vector<std::string> errors;
  auto model = tcc::importModelFile(argv[1], ctx, errors);
  for (const std::string &e : errors)
    std::cerr << e << "\n";
  if (!model)
    return 1;
  model->module->print(llvm::outs());
  llvm::outs() << "\n";
  if (argc == 3) {
    for (size_t i = 0; i < model->params.size(); ++i) {
      std::ofstream out(std::string(argv[2]) + "/" + std::to_string(i) + ".bin",
                        std::ios::binary);
      out.write((const char *)model->params[i].bytes.data(),
                (std::streamsize)model->params[i].bytes.size());
      if (!out) {
        std::cerr << "cannot write " << argv[2] << "\n";
        return 1;
      }
    }
  }
  return 0;
}
