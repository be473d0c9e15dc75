//===- Flash3Gen.cpp - builds one wgmma attention kernel into PTX ---------===//
//
//   tcc-flash3-gen --lq LQ --lk LK --d D [--batch B] [--hq HQ] [--hkv HKV]
//       [--type bf16|f16] [--scale S] [--causal] [--window W] [--mask A,B,C]
//       [--alibi] [--softcap C] [--algebra-callbacks] [--masked-rows zero|nan]
//       [--k-transposed] [--layout bhld|blhd] [--o-layout bhld|blhd]
//       [--q-strides S0,S1,S2,S3] [--k-strides ..] [--v-strides ..]
//       [--o-strides ..]
//       [--schedule WARPGROUPS,BKV,STAGES,OVERLAP[,PRODUCER,PINGPONG[,TMA]]]
//       [--name NAME]
//       [--out-dir DIR] [--emit-mlir]
//
// Builds the kernel with tcc::gpu::buildWgmmaAttentionKernel (the schedule
// from chooseWgmmaAttentionSchedule unless given), lowers it for sm_90a with
// the compiler's NVVM pipeline, writes DIR/NAME.ptx and prints one JSON line
// in the format of tcc-flash-gen (tests/gpu/flash/check_flash.py's input).
// The variants are those of tests/gpu/flash/FlashGen.cpp:
//   --causal        mask q - k >= 0
//   --window W      mask k - q + W - 1 >= 0
//   --mask A,B,C    any constraint A*q + B*k + C >= 0 (repeatable)
//   --alibi         scoreMod s + slope_h * (k - q), slope_h = 2^(-8(h+1)/HQ)
//   --softcap C     scoreMod C * tanh(s / C)
//   --algebra-callbacks  softmax's correction/contribution as callbacks
//   --k-transposed  K given as [B, HKV, D, LK] (LK a multiple of 8)
//   --layout, --o-layout, --X-strides  strided tensors
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/WgmmaAttention.h"
#include "tests/gpu/AttentionGen.h"

#include <algorithm>

using namespace mlir;
using tcc::gen::die;

int main(int argc, char **argv) {
  std::unique_ptr<MLIRContext> context =
      tcc::gen::initGenerator("tcc-flash3-gen");
  tcc::gen::AttentionCase c =
      tcc::gen::parseAttentionCase(argc, argv, *context, "sm_90a");
  const tcc::gpu::AttentionProblem &p = c.p;
  const std::string &chip = c.flags.chip;
  if (chip != "sm_90a")
    die("--chip: wgmma needs sm_90a");
  tcc::gpu::WgmmaAttentionSchedule s =
      tcc::gpu::chooseWgmmaAttentionSchedule(p);
  if (!c.flags.schedule.empty()) {
    // Four fields, six with PRODUCER and PINGPONG, or seven with TMA.
    size_t fields =
        1 + std::count(c.flags.schedule.begin(), c.flags.schedule.end(), ',');
    std::vector<int64_t> v =
        tcc::gen::parseIntList("--schedule", c.flags.schedule,
                               fields == 7   ? 7
                               : fields == 6 ? 6
                                             : 4);
    for (size_t f = 3; f < v.size(); ++f)
      if (v[f] != 0 && v[f] != 1)
        die("--schedule: OVERLAP, PRODUCER, PINGPONG and TMA must be 0 or 1");
    s = {v[0], v[1], v[2], v[3] == 1};
    if (v.size() >= 6) {
      s.producer = v[4] == 1;
      s.pingpong = v[5] == 1;
    }
    s.tma = v.size() == 7 && v[6] == 1;
  }
  std::string why;
  if (!tcc::gpu::wgmmaAttentionSupports(p, s, tcc::gen::targetOf(chip), why))
    die(why);

  OpBuilder b(context.get());
  tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
  FailureOr<tcc::gpu::KernelLaunch> launch =
      tcc::gpu::buildWgmmaAttentionKernel(b, km.kernels, c.flags.name, p, s);
  if (failed(launch))
    die("cannot build the kernel");
  if (tcc::gen::verifyOrPrint(*km.module, c.flags.emitMlir))
    return 0;
  tcc::gen::writePtx(c.flags.outDir, c.flags.name,
                     tcc::gen::lowerToPtx(*km.module, chip));
  tcc::gen::printAttentionCase(c,
                               {s.warpgroups, s.blockKV, s.stages,
                                int64_t(s.overlap), int64_t(s.producer),
                                int64_t(s.pingpong), int64_t(s.tma)},
                               *launch);
  return 0;
}
