//===- WgmmaGen.cpp - builds one wgmma GEMM kernel into a PTX bundle ------===//
//
//   tcc-wgmma-gen --m M --n N --k K [--batch B] [--shared-a] [--shared-b]
//       [--trans-b] [--type bf16|f16|e4m3|e5m2] [--out-type f32|bf16|f16]
//       [--schedule TM,TN,WARPGROUPS,STAGES]
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
#include "tests/gpu/MatmulBundle.h"
#include "tests/gpu/TemplateGen.h"

using namespace mlir;
using tcc::gen::die;
using tcc::gen::parseInt;

namespace {

constexpr const char *kChip = "sm_90a";

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
  bool sharedA = false, sharedB = false;
  auto ownFlag = [&](const std::string &f, tcc::gen::FlagValue value) {
    if (f == "--m")
      p.m = parseInt(f, value()), haveM = true;
    else if (f == "--n")
      p.n = parseInt(f, value()), haveN = true;
    else if (f == "--k")
      p.k = parseInt(f, value()), haveK = true;
    else if (f == "--batch")
      p.batch = parseInt(f, value());
    else if (f == "--shared-a")
      sharedA = true;
    else if (f == "--shared-b")
      sharedB = true;
    else if (f == "--trans-b")
      p.transB = true;
    else if (f == "--type") {
      std::string v = value();
      if (v != "bf16" && v != "f16" && v != "e4m3" && v != "e5m2")
        die("--type: expected bf16, f16, e4m3 or e5m2, got '" + v + "'");
      p.abType = v == "bf16"   ? Type(BFloat16Type::get(&ctx))
                 : v == "f16"  ? Type(Float16Type::get(&ctx))
                 : v == "e4m3" ? Type(Float8E4M3FNType::get(&ctx))
                               : Type(Float8E5M2Type::get(&ctx));
    } else if (f == "--out-type") {
      std::string v = value();
      if (v != "f32" && v != "bf16" && v != "f16")
        die("--out-type: expected f32, bf16 or f16, got '" + v + "'");
      p.cType = v == "f32"    ? Type(Float32Type::get(&ctx))
                : v == "bf16" ? Type(BFloat16Type::get(&ctx))
                              : Type(Float16Type::get(&ctx));
    } else
      return false;
    return true;
  };
  tcc::gen::parseFlags(argc, argv, flags, ownFlag);
  if (flags.chip != kChip)
    die("--chip: wgmma needs sm_90a");
  if (!haveM || !haveN || !haveK)
    die("--m, --n and --k are required");
  p.aBatched = !sharedA && p.batch > 1;
  p.bBatched = !sharedB && p.batch > 1;
  tcc::gpu::WgmmaSchedule s = tcc::gpu::chooseWgmmaSchedule(p);
  // The cp.async pipeline: a producer's kernel takes tensor maps, which
  // these bundles do not carry (tcc compile's do: lowp_gemm_test.py).
  s.producer = 0;
  if (!flags.schedule.empty()) {
    std::vector<int64_t> v =
        tcc::gen::parseIntList("--schedule", flags.schedule, 4);
    s = {v[0], v[1], v[2], v[3]};
  }
  std::string why;
  if (!tcc::gpu::wgmmaKernelSupports(p, s, tcc::gen::targetOf(kChip), why))
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
  std::string ptx = tcc::gen::lowerToPtx(*km.module, kChip);
  tcc::gen::writePtx(outDir, name, ptx);

  // Shapes with a leading batch (1 for an operand shared by all), as the
  // GEMM checker expects them.
  tcc::gen::MatmulBundle mb;
  mb.name = name;
  mb.chip = kChip;
  mb.aType = mb.bType = p.abType;
  mb.cType = p.cType;
  int64_t ba = p.aBatched ? p.batch : 1, bb = p.bBatched ? p.batch : 1;
  mb.aShape = {ba, p.m, p.k};
  mb.bShape = p.transB ? std::vector<int64_t>{bb, p.n, p.k}
                       : std::vector<int64_t>{bb, p.k, p.n};
  mb.cShape = {p.batch, p.m, p.n};
  mb.m = p.m;
  mb.n = p.n;
  mb.k = p.k;
  mb.batch = p.batch;
  mb.aBatched = p.aBatched || p.batch == 1;
  mb.bBatched = p.bBatched || p.batch == 1;
  mb.transB = p.transB;
  mb.schedule = {s.tileM, s.tileN, s.warpgroups, s.stages};
  tcc::gen::writeMatmulBundle(outDir, mb, ptx, *launch);
  return 0;
}
