//===- FlashGen.cpp - builds one attention kernel into PTX ----------------===//
//
//   tcc-flash-gen --lq LQ --lk LK --d D [--batch B] [--hq HQ] [--hkv HKV]
//       [--type bf16|f16] [--scale S] [--causal] [--window W] [--mask A,B,C]
//       [--alibi] [--softcap C] [--algebra-callbacks] [--masked-rows zero|nan]
//       [--k-transposed] [--layout bhld|blhd] [--o-layout bhld|blhd]
//       [--q-strides S0,S1,S2,S3] [--k-strides ..] [--v-strides ..]
//       [--o-strides ..] [--decode]
//       [--schedule BQ,BKV,WARPS,STAGES] [--chip sm_90|sm_80] [--name NAME]
//       [--out-dir DIR] [--emit-mlir]
//
// Builds the kernel with tcc::gpu::buildAttentionKernel (the schedule from
// chooseAttentionSchedule unless given), lowers it with the NVVM pipeline
// that the compiler uses, writes DIR/NAME.ptx and prints one JSON line that
// describes the kernel and its launch (the checker's input).
//
// The variants are built here the way the compiler will hand them over:
//   --causal        mask q - k >= 0
//   --window W      mask k - q + W - 1 >= 0 (with --causal: a sliding window
//                   of W keys ending at q)
//   --mask A,B,C    any constraint A*q + B*k + C >= 0 (repeatable)
//   --alibi         scoreMod s + slope_h * (k - q), slope_h = 2^(-8(h+1)/HQ)
//   --softcap C     scoreMod C * tanh(s / C)
//   --algebra-callbacks  softmax's correction/contribution passed as
//                   callbacks (exp(old - new), exp(s - run)): the general path
//   --k-transposed  K given as [B, HKV, D, LK] (LK a multiple of 8)
//   --layout blhd   Q, K, V and O read where a model keeps them, [B, L, H, D]
//                   (K given transposed: [B, D, HKV, LK]); --o-layout, O's
//                   alone; --X-strides, any element strides of the logical
//                   [B, H, rows, D] tensor X (the JSON line gives each
//                   tensor's, which the checker lays its buffers out by)
//   --decode        the split-K decode pair (buildDecodeKernels: NAME and
//                   NAME_combine in one PTX; --schedule BKV,WARPS,STAGES,
//                   CHUNK_TILES; the JSON's "decode" gives the combine's
//                   launch and the scratch sizes)
// --emit-mlir prints the kernel before lowering instead.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/AttentionKernel.h"
#include "tests/gpu/AttentionGen.h"

using namespace mlir;
using tcc::gen::die;

int main(int argc, char **argv) {
  std::unique_ptr<MLIRContext> context =
      tcc::gen::initGenerator("tcc-flash-gen");
  std::vector<char *> args;
  bool decode = false;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::string(argv[i]) == "--decode")
      decode = true;
    else
      args.push_back(argv[i]);
  }
  tcc::gen::AttentionCase c = tcc::gen::parseAttentionCase(
      int(args.size()), args.data(), *context, "sm_90");
  const tcc::gpu::AttentionProblem &p = c.p;
  const std::string &chip = c.flags.chip;
  tcc::gen::checkChip(chip);
  std::string why;
  if (!tcc::gpu::attentionKernelSupports(p, why))
    die(why);
  if (decode) {
    const ::tcc::TargetDesc &target = tcc::gen::targetOf(chip);
    tcc::gpu::DecodeSchedule s = tcc::gpu::chooseDecodeSchedule(p, target);
    if (!c.flags.schedule.empty()) {
      std::vector<int64_t> v =
          tcc::gen::parseIntList("--schedule", c.flags.schedule, 4);
      s = {v[0], v[1], v[2], v[3]};
    }
    if (!tcc::gpu::decodeScheduleValid(p, s, target, why))
      die(why);
    OpBuilder b(context.get());
    tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
    FailureOr<tcc::gpu::DecodeKernels> dk = tcc::gpu::buildDecodeKernels(
        b, km.kernels, c.flags.name, c.flags.name + "_combine", p, s);
    if (failed(dk))
      die("cannot build the kernels");
    if (tcc::gen::verifyOrPrint(*km.module, c.flags.emitMlir))
      return 0;
    tcc::gen::writePtx(c.flags.outDir, c.flags.name,
                       tcc::gen::lowerToPtx(*km.module, chip));
    tcc::gen::printAttentionCase(
        c, {s.blockKV, s.warps, s.stages, s.chunkTiles}, dk->partial, &*dk);
    return 0;
  }
  tcc::gpu::AttentionSchedule s =
      tcc::gpu::chooseAttentionSchedule(p, tcc::gen::targetOf(chip));
  if (!c.flags.schedule.empty()) {
    std::vector<int64_t> v =
        tcc::gen::parseIntList("--schedule", c.flags.schedule, 4);
    s = {v[0], v[1], v[2], v[3]};
  }
  if (!tcc::gpu::attentionScheduleValid(p, s, tcc::gen::targetOf(chip), why))
    die(why);

  OpBuilder b(context.get());
  tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
  FailureOr<tcc::gpu::KernelLaunch> launch =
      tcc::gpu::buildAttentionKernel(b, km.kernels, c.flags.name, p, s);
  if (failed(launch))
    die("cannot build the kernel");
  if (tcc::gen::verifyOrPrint(*km.module, c.flags.emitMlir))
    return 0;
  tcc::gen::writePtx(c.flags.outDir, c.flags.name,
                     tcc::gen::lowerToPtx(*km.module, chip));
  tcc::gen::printAttentionCase(c, {s.blockQ, s.blockKV, s.warps, s.stages},
                               *launch);
  return 0;
}
