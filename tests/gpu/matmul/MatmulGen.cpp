//===- MatmulGen.cpp - builds one matmul kernel into a PTX bundle ---------===//
//
//   tcc-matmul-gen --m M --n N --k K [--batch B] [--shared-a] [--shared-b]
//       [--trans-a] [--trans-b] [--type bf16|f16|f32] [--out-type f32|bf16|f16]
//       [--tf32] [--schedule TM,TN,TK,WM,WN,STAGES] [--chip sm_90|sm_80]
//       [--name NAME] [--out-dir DIR] [--emit-mlir]
//
// Builds the kernel with tcc::gpu::buildMatmulKernel (the schedule from
// chooseMatmulSchedule unless given), lowers it with the NVVM pipeline that
// the compiler uses, and writes DIR/NAME.ptx and DIR/NAME.tccb: a bundle with
// inputs a, b, output c and one launch. Prints one JSON line describing it.
// --emit-mlir prints the kernel before lowering instead.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/MatmulKernel.h"
#include "runtime/src/Bundle.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
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

namespace {

[[noreturn]] void die(const std::string &msg) {
  std::cerr << "tcc-matmul-gen: " << msg << "\n";
  std::exit(1);
}

int64_t parseInt(const std::string &flag, const std::string &v) {
  char *end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || x < 0 || x > (int64_t(1) << 40))
    die(flag + ": expected a non-negative integer, got '" + v + "'");
  return x;
}

Type parseType(MLIRContext &ctx, const std::string &flag,
               const std::string &v) {
  if (v == "bf16")
    return BFloat16Type::get(&ctx);
  if (v == "f16")
    return Float16Type::get(&ctx);
  if (v == "f32")
    return Float32Type::get(&ctx);
  die(flag + ": expected bf16, f16 or f32, got '" + v + "'");
}

std::string typeName(Type t) {
  return t.isBF16() ? "bf16" : t.isF16() ? "f16" : "f32";
}

} // namespace

int main(int argc, char **argv) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerAllPasses();
  llvm::InitializeAllTargets();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmPrinters();
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  tcc::gpu::MatmulProblem p;
  p.aType = p.bType = BFloat16Type::get(&ctx);
  p.cType = Float32Type::get(&ctx);
  std::string chip = "sm_90", name = "matmul", outDir = ".", schedule;
  bool emitMlir = false, haveM = false, haveN = false, haveK = false;
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        die(f + " needs a value");
      return argv[++i];
    };
    if (f == "--m")
      p.m = parseInt(f, value()), haveM = true;
    else if (f == "--n")
      p.n = parseInt(f, value()), haveN = true;
    else if (f == "--k")
      p.k = parseInt(f, value()), haveK = true;
    else if (f == "--batch")
      p.batch = parseInt(f, value());
    else if (f == "--shared-a")
      p.aBatched = false;
    else if (f == "--shared-b")
      p.bBatched = false;
    else if (f == "--trans-a")
      p.transA = true;
    else if (f == "--trans-b")
      p.transB = true;
    else if (f == "--type")
      p.aType = p.bType = parseType(ctx, f, value());
    else if (f == "--out-type")
      p.cType = parseType(ctx, f, value());
    else if (f == "--tf32")
      p.allowTf32 = true;
    else if (f == "--schedule")
      schedule = value();
    else if (f == "--chip")
      chip = value();
    else if (f == "--name")
      name = value();
    else if (f == "--out-dir")
      outDir = value();
    else if (f == "--emit-mlir")
      emitMlir = true;
    else
      die("unknown flag '" + f + "'");
  }
  if (!haveM || !haveN || !haveK)
    die("--m, --n and --k are required");
  if (chip != "sm_90" && chip != "sm_80")
    die("--chip: expected sm_90 or sm_80");
  std::string why;
  if (!tcc::gpu::matmulKernelSupports(p, why))
    die(why);
  tcc::gpu::MatmulSchedule s = tcc::gpu::chooseMatmulSchedule(p, chip);
  if (!schedule.empty()) {
    std::vector<int64_t> v;
    std::stringstream ss(schedule);
    for (std::string item; std::getline(ss, item, ',');)
      v.push_back(parseInt("--schedule", item));
    if (v.size() != 6)
      die("--schedule: expected TM,TN,TK,WM,WN,STAGES");
    s = {v[0], v[1], v[2], v[3], v[4], v[5]};
  }

  OpBuilder b(&ctx);
  Location loc = UnknownLoc::get(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  (*module)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                     b.getUnitAttr());
  b.setInsertionPointToEnd(module->getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, loc, "kernels");
  FailureOr<tcc::gpu::KernelLaunch> launch =
      tcc::gpu::buildMatmulKernel(b, gpuModule, name, p, s);
  if (failed(launch))
    die("cannot build the kernel");
  if (failed(verify(*module)))
    die("the built kernel does not verify");
  if (emitMlir) {
    module->print(llvm::outs());
    return 0;
  }

  // The lowering the compiler uses for its GPU kernels.
  PassManager pm(&ctx);
  std::string pipeline =
      "nvvm-attach-target{chip=" + chip +
      " O=3},gpu.module(convert-nvgpu-to-nvvm,convert-vector-to-llvm,"
      "convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
      "expand-strided-metadata,reconcile-unrealized-casts),"
      "gpu-module-to-binary{format=isa}";
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    die("bad pass pipeline");
  if (failed(pm.run(*module)))
    die("lowering failed");
  std::string ptx;
  module->walk([&](gpu::BinaryOp bin) {
    for (Attribute o : bin.getObjects())
      ptx = cast<gpu::ObjectAttr>(o).getObject().str();
  });
  if (ptx.find(".entry") == std::string::npos) {
    module->print(llvm::errs());
    die("no PTX kernel was produced");
  }
  {
    std::ofstream f(outDir + "/" + name + ".ptx");
    f << ptx;
    if (!f)
      die("cannot write " + outDir + "/" + name + ".ptx");
  }

  int64_t ba = p.aBatched ? p.batch : 1, bb = p.bBatched ? p.batch : 1;
  std::vector<int64_t> aShape = p.transA ? std::vector<int64_t>{ba, p.k, p.m}
                                         : std::vector<int64_t>{ba, p.m, p.k};
  std::vector<int64_t> bShape = p.transB ? std::vector<int64_t>{bb, p.n, p.k}
                                         : std::vector<int64_t>{bb, p.k, p.n};
  std::vector<int64_t> cShape = {p.batch, p.m, p.n};
  auto bytes = [](const std::vector<int64_t> &shape, Type t) {
    int64_t n = t.getIntOrFloatBitWidth() / 8;
    for (int64_t d : shape)
      n *= d;
    return n;
  };
  nlohmann::json manifest = {
      {"model", name},
      {"targets", {chip}},
      {"inputs",
       {{{"name", "a"},
         {"dtype", typeName(p.aType)},
         {"shape", aShape},
         {"buffer", 0}},
        {{"name", "b"},
         {"dtype", typeName(p.bType)},
         {"shape", bShape},
         {"buffer", 1}}}},
      {"outputs",
       {{{"name", "c"},
         {"dtype", typeName(p.cType)},
         {"shape", cShape},
         {"buffer", 2}}}},
      {"params", nlohmann::json::array()},
      {"buffers",
       {{{"id", 0}, {"kind", "input"}, {"bytes", bytes(aShape, p.aType)}},
        {{"id", 1}, {"kind", "input"}, {"bytes", bytes(bShape, p.bType)}},
        {{"id", 2}, {"kind", "output"}, {"bytes", bytes(cShape, p.cType)}}}},
      {"arena_bytes", 0},
      {"kernels",
       {{{"name", name},
         {"symbol", name},
         {"kind", "matmul"},
         {"ops", {"tcc.matmul"}},
         {"code", "kernels.ptx"},
         {"shared_bytes", launch->sharedBytes}}}},
      {"code",
       {{{"target", chip}, {"blob", "kernels.ptx"}, {"format", "ptx"}}}},
      {"launches",
       {{{"kernel", 0},
         {"args", {0, 1, 2}},
         {"grid", launch->grid},
         {"block", launch->block}}}}};
  tcc::bundle::BundleWriter w;
  w.addBlob("kernels.ptx", std::vector<uint8_t>(ptx.begin(), ptx.end()));
  w.setManifest(manifest);
  std::string error;
  if (!w.writeFile(outDir + "/" + name + ".tccb", error))
    die(error);

  nlohmann::json info = {
      {"name", name},
      {"m", p.m},
      {"n", p.n},
      {"k", p.k},
      {"batch", p.batch},
      {"a_batched", p.aBatched},
      {"b_batched", p.bBatched},
      {"trans_a", p.transA},
      {"trans_b", p.transB},
      {"type", typeName(p.aType)},
      {"out_type", typeName(p.cType)},
      {"tf32", p.allowTf32},
      {"schedule", {s.tileM, s.tileN, s.tileK, s.warpsM, s.warpsN, s.stages}},
      {"grid", launch->grid},
      {"block", launch->block},
      {"shared_bytes", launch->sharedBytes}};
  std::cout << info.dump() << "\n";
  return 0;
}
