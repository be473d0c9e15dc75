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
#include "tests/gpu/MatmulBundle.h"
#include "tests/gpu/TemplateGen.h"

using namespace mlir;
using tcc::gen::die;
using tcc::gen::parseInt;

int main(int argc, char **argv) {
  std::unique_ptr<MLIRContext> context =
      tcc::gen::initGenerator("tcc-matmul-gen");
  MLIRContext &ctx = *context;

  tcc::gpu::MatmulProblem p;
  p.aType = p.bType = BFloat16Type::get(&ctx);
  p.cType = Float32Type::get(&ctx);
  tcc::gen::GenFlags flags;
  flags.name = "matmul";
  bool haveM = false, haveN = false, haveK = false;
  // The flags of this generator; parseFlags takes the common ones.
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
      p.aBatched = false;
    else if (f == "--shared-b")
      p.bBatched = false;
    else if (f == "--trans-a")
      p.transA = true;
    else if (f == "--trans-b")
      p.transB = true;
    else if (f == "--type")
      p.aType = p.bType = tcc::gen::parseFloatType(ctx, f, value());
    else if (f == "--out-type")
      p.cType = tcc::gen::parseFloatType(ctx, f, value());
    else if (f == "--tf32")
      p.allowTf32 = true;
    else
      return false;
    return true;
  };
  tcc::gen::parseFlags(argc, argv, flags, ownFlag);
  const std::string &chip = flags.chip, &name = flags.name,
                    &outDir = flags.outDir;
  if (!haveM || !haveN || !haveK)
    die("--m, --n and --k are required");
  tcc::gen::checkChip(chip);
  std::string why;
  if (!tcc::gpu::matmulKernelSupports(p, why))
    die(why);
  tcc::gpu::MatmulSchedule s =
      tcc::gpu::chooseMatmulSchedule(p, tcc::gen::targetOf(chip));
  if (!flags.schedule.empty()) {
    std::vector<int64_t> v =
        tcc::gen::parseIntList("--schedule", flags.schedule, 6);
    s = {v[0], v[1], v[2], v[3], v[4], v[5]};
  }

  OpBuilder b(&ctx);
  tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
  FailureOr<tcc::gpu::KernelLaunch> launch =
      tcc::gpu::buildMatmulKernel(b, km.kernels, name, p, s);
  if (failed(launch))
    die("cannot build the kernel");
  if (tcc::gen::verifyOrPrint(*km.module, flags.emitMlir))
    return 0;
  std::string ptx = tcc::gen::lowerToPtx(*km.module, chip);
  tcc::gen::writePtx(outDir, name, ptx);

  int64_t ba = p.aBatched ? p.batch : 1, bb = p.bBatched ? p.batch : 1;
  tcc::gen::MatmulBundle mb;
  mb.name = name;
  mb.chip = chip;
  mb.aType = p.aType;
  mb.bType = p.bType;
  mb.cType = p.cType;
  mb.aShape = p.transA ? std::vector<int64_t>{ba, p.k, p.m}
                       : std::vector<int64_t>{ba, p.m, p.k};
  mb.bShape = p.transB ? std::vector<int64_t>{bb, p.n, p.k}
                       : std::vector<int64_t>{bb, p.k, p.n};
  mb.cShape = {p.batch, p.m, p.n};
  mb.m = p.m;
  mb.n = p.n;
  mb.k = p.k;
  mb.batch = p.batch;
  mb.aBatched = p.aBatched;
  mb.bBatched = p.bBatched;
  mb.transA = p.transA;
  mb.transB = p.transB;
  mb.tf32 = p.allowTf32;
  mb.schedule = {s.tileM, s.tileN, s.tileK, s.warpsM, s.warpsN, s.stages};
  tcc::gen::writeMatmulBundle(outDir, mb, ptx, *launch);
  return 0;
}
