//===- TemplateGen.cpp - what the kernel template generators share --------===//
#include "tests/gpu/TemplateGen.h"
#include "compiler/gpu/TemplateUtils.h"

#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace mlir;

namespace tcc::gen {

static std::string toolName = "tcc-gen";

std::unique_ptr<MLIRContext> initGenerator(const std::string &tool) {
  toolName = tool;
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerAllPasses();
  llvm::InitializeAllTargets();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmPrinters();
  auto ctx = std::make_unique<MLIRContext>(registry);
  ctx->loadAllAvailableDialects();
  return ctx;
}

void die(const std::string &msg) {
  std::cerr << toolName << ": " << msg << "\n";
  std::exit(1);
}

int64_t parseInt(const std::string &flag, const std::string &v,
                 bool allowNegative) {
  char *end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || (!allowNegative && x < 0) ||
      std::llabs(x) > (int64_t(1) << 40))
    die(flag + ": expected " +
        (allowNegative ? "an integer" : "a non-negative integer") + ", got '" +
        v + "'");
  return x;
}

std::vector<int64_t> parseIntList(const std::string &flag, const std::string &v,
                                  size_t n, bool allowNegative) {
  std::vector<int64_t> out;
  std::stringstream ss(v);
  for (std::string item; std::getline(ss, item, ',');)
    out.push_back(parseInt(flag, item, allowNegative));
  if (out.size() != n)
    die(flag + ": expected " + std::to_string(n) +
        " comma-separated integers, got '" + v + "'");
  return out;
}

void parseFlags(int argc, char **argv, GenFlags &flags,
                llvm::function_ref<bool(const std::string &, FlagValue)> own) {
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        die(f + " needs a value");
      return argv[++i];
    };
    if (f == "--schedule")
      flags.schedule = value();
    else if (f == "--chip")
      flags.chip = value();
    else if (f == "--name")
      flags.name = value();
    else if (f == "--out-dir")
      flags.outDir = value();
    else if (f == "--emit-mlir")
      flags.emitMlir = true;
    else if (!own(f, value))
      die("unknown flag '" + f + "'");
  }
}

void checkChip(const std::string &chip) {
  if (chip != "sm_90" && chip != "sm_80" && chip != "sm_90a")
    die("--chip: expected sm_90, sm_90a or sm_80");
}

tcc::TargetDesc targetOf(const std::string &chip) {
  std::string error;
  std::optional<tcc::TargetDesc> t = tcc::parseTarget(chip, error);
  if (!t)
    die("--chip: " + error);
  return *t;
}

KernelModule createKernelModule(OpBuilder &b) {
  Location loc = b.getUnknownLoc();
  KernelModule km;
  km.module = ModuleOp::create(loc);
  (*km.module)
      ->setAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName(),
                b.getUnitAttr());
  b.setInsertionPointToEnd(km.module->getBody());
  km.kernels = mlir::gpu::GPUModuleOp::create(b, loc, "kernels");
  return km;
}

bool verifyOrPrint(ModuleOp module, bool emitMlir) {
  if (failed(verify(module)))
    die("the built kernel does not verify");
  if (emitMlir)
    module.print(llvm::outs());
  return emitMlir;
}

std::string lowerToPtx(ModuleOp module, const std::string &chip) {
  // Two runs: TMA descriptor arguments get their by-value attributes
  // between the lowering to the LLVM dialect and the binary (as the
  // compiler's tcc-gpu-tensor-map-args does).
  PassManager pm(module.getContext()), toBinary(module.getContext());
  std::string pipeline =
      "nvvm-attach-target{chip=" + chip +
      " O=3},gpu.module(convert-nvgpu-to-nvvm,convert-vector-to-llvm,"
      "convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
      "convert-nvvm-to-llvm,expand-strided-metadata,reconcile-unrealized-"
      "casts)";
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())) ||
      failed(parsePassPipeline("gpu-module-to-binary{format=isa}", toBinary,
                               llvm::errs())))
    die("bad pass pipeline");
  if (failed(pm.run(module)) ||
      failed(tcc::gpu::passTensorMapsByValue(module)) ||
      failed(toBinary.run(module)))
    die("lowering failed");
  std::string ptx;
  module.walk([&](mlir::gpu::BinaryOp bin) {
    for (Attribute o : bin.getObjects())
      ptx = cast<mlir::gpu::ObjectAttr>(o).getObject().str();
  });
  if (ptx.find(".entry") == std::string::npos) {
    module.print(llvm::errs());
    die("no PTX kernel was produced");
  }
  return ptx;
}

void writePtx(const std::string &outDir, const std::string &name,
              const std::string &ptx) {
  std::string path = outDir + "/" + name + ".ptx";
  std::ofstream f(path);
  f << ptx;
  if (!f)
    die("cannot write " + path);
}

mlir::Type parseFloatType(mlir::MLIRContext &ctx, const std::string &flag,
                          const std::string &v) {
  if (v == "bf16")
    return mlir::BFloat16Type::get(&ctx);
  if (v == "f16")
    return mlir::Float16Type::get(&ctx);
  if (v == "f32")
    return mlir::Float32Type::get(&ctx);
  die(flag + ": expected bf16, f16 or f32, got '" + v + "'");
}

} // namespace tcc::gen
