//===- WgmmaGen.cpp - builds one wgmma GEMM kernel into a PTX bundle ------===//
//
//   tcc-wgmma-gen --m M --n N --k K [--trans-b] [--type bf16|f16]
//       [--out-type f32|bf16] [--schedule TM,TN,WARPGROUPS,STAGES]
//       [--name NAME] [--out-dir DIR] [--emit-mlir]
//
// Builds the kernel with tcc::gpu::buildWgmmaKernel (the schedule from
// chooseWgmmaSchedule unless given), lowers it for sm_90a and writes
// DIR/NAME.ptx and DIR/NAME.tccb: a bundle with inputs a, b, output c and
// one launch. Prints one JSON line describing it (the fields check_gemm.py
// of tests/gpu/matmul reads). --emit-mlir prints the kernel before lowering.
//
// The lowering is the compiler's NVVM pipeline plus convert-nvvm-to-llvm,
// which turns the nvvm.wgmma ops (and fence.proxy) into inline PTX; without
// it their translation to LLVM IR fails.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/WgmmaKernel.h"
#include "runtime/src/Bundle.h"
#include "tests/gpu/TemplateGen.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <iostream>

using namespace mlir;
using tcc::gen::die;
using tcc::gen::parseInt;

namespace {

constexpr const char *kChip = "sm_90a";

std::string lowerForSm90a(ModuleOp module) {
  PassManager pm(module.getContext());
  std::string pipeline =
      std::string("nvvm-attach-target{chip=") + kChip +
      " O=3},gpu.module(convert-nvgpu-to-nvvm,convert-vector-to-llvm,"
      "convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
      "convert-nvvm-to-llvm,expand-strided-metadata,"
      "reconcile-unrealized-casts),gpu-module-to-binary{format=isa}";
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    die("bad pass pipeline");
  if (failed(pm.run(module)))
    die("lowering failed");
  std::string ptx;
  module.walk([&](gpu::BinaryOp bin) {
    for (Attribute o : bin.getObjects())
      ptx = cast<gpu::ObjectAttr>(o).getObject().str();
  });
  if (ptx.find(".entry") == std::string::npos)
    die("no PTX kernel was produced");
  return ptx;
}

std::string typeName(Type t) {
  return t.isBF16() ? "bf16" : t.isF16() ? "f16" : "f32";
}

} // namespace

int main(int argc, char **argv) {
  std::unique_ptr<MLIRContext> context =
      tcc::gen::initGenerator("tcc-wgmma-gen");
  MLIRContext &ctx = *context;

  tcc::gpu::WgmmaProblem p;
  p.abType = BFloat16Type::get(&ctx);
  p.cType = Float32Type::get(&ctx);
  tcc::gen::GenFlags flags;
  flags.name = "wgmma";
  flags.chip = kChip;
  bool haveM = false, haveN = false, haveK = false;
  auto ownFlag = [&](const std::string &f, tcc::gen::FlagValue value) {
    if (f == "--m")
      p.m = parseInt(f, value()), haveM = true;
    else if (f == "--n")
      p.n = parseInt(f, value()), haveN = true;
    else if (f == "--k")
      p.k = parseInt(f, value()), haveK = true;
    else if (f == "--trans-b")
      p.transB = true;
    else if (f == "--type") {
      std::string v = value();
      if (v != "bf16" && v != "f16")
        die("--type: expected bf16 or f16, got '" + v + "'");
      p.abType = v == "bf16" ? Type(BFloat16Type::get(&ctx))
                             : Type(Float16Type::get(&ctx));
    } else if (f == "--out-type") {
      std::string v = value();
      if (v != "f32" && v != "bf16")
        die("--out-type: expected f32 or bf16, got '" + v + "'");
      p.cType = v == "f32" ? Type(Float32Type::get(&ctx))
                           : Type(BFloat16Type::get(&ctx));
    } else
      return false;
    return true;
  };
  tcc::gen::parseFlags(argc, argv, flags, ownFlag);
  if (flags.chip != kChip)
    die("--chip: wgmma needs sm_90a");
  if (!haveM || !haveN || !haveK)
    die("--m, --n and --k are required");
  tcc::gpu::WgmmaSchedule s = tcc::gpu::chooseWgmmaSchedule(p);
  if (!flags.schedule.empty()) {
    std::vector<int64_t> v =
        tcc::gen::parseIntList("--schedule", flags.schedule, 4);
    s = {v[0], v[1], v[2], v[3]};
  }
  std::string why;
  if (!tcc::gpu::wgmmaKernelSupports(p, s, why))
    die(why);

  OpBuilder b(&ctx);
  tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
  const std::string &name = flags.name, &outDir = flags.outDir;
  FailureOr<tcc::gpu::KernelLaunch> launch =
      tcc::gpu::buildWgmmaKernel(b, km.kernels, name, p, s);
  if (failed(launch))
    die("cannot build the kernel");
  if (tcc::gen::verifyOrPrint(*km.module, flags.emitMlir))
    return 0;
  std::string ptx = lowerForSm90a(*km.module);
  tcc::gen::writePtx(outDir, name, ptx);

  // Shapes with a leading batch of 1, as the GEMM checker expects them.
  std::vector<int64_t> aShape = {1, p.m, p.k};
  std::vector<int64_t> bShape = p.transB ? std::vector<int64_t>{1, p.n, p.k}
                                         : std::vector<int64_t>{1, p.k, p.n};
  std::vector<int64_t> cShape = {1, p.m, p.n};
  auto bytes = [](const std::vector<int64_t> &shape, Type t) {
    int64_t n = t.getIntOrFloatBitWidth() / 8;
    for (int64_t d : shape)
      n *= d;
    return n;
  };
  std::string ab = typeName(p.abType), ct = typeName(p.cType);
  nlohmann::json manifest = {
      {"model", name},
      {"targets", {kChip}},
      {"inputs",
       {{{"name", "a"}, {"dtype", ab}, {"shape", aShape}, {"buffer", 0}},
        {{"name", "b"}, {"dtype", ab}, {"shape", bShape}, {"buffer", 1}}}},
      {"outputs",
       {{{"name", "c"}, {"dtype", ct}, {"shape", cShape}, {"buffer", 2}}}},
      {"params", nlohmann::json::array()},
      {"buffers",
       {{{"id", 0}, {"kind", "input"}, {"bytes", bytes(aShape, p.abType)}},
        {{"id", 1}, {"kind", "input"}, {"bytes", bytes(bShape, p.abType)}},
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
       {{{"target", kChip}, {"blob", "kernels.ptx"}, {"format", "ptx"}}}},
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
      {"batch", 1},
      {"a_batched", true},
      {"b_batched", true},
      {"trans_a", false},
      {"trans_b", p.transB},
      {"type", ab},
      {"out_type", ct},
      {"tf32", false},
      {"schedule", {s.tileM, s.tileN, s.warpgroups, s.stages}},
      {"grid", launch->grid},
      {"block", launch->block},
      {"shared_bytes", launch->sharedBytes}};
  std::cout << info.dump() << "\n";
  return 0;
}
