//===- SimtGen.cpp - builds one f32 SIMT attention kernel -----------------===//
//
//   tcc-simt-gen --lq LQ --lk LK --d D [--dv DV] [--batch B] [--hq HQ]
//       [--hkv HKV]
//       [--scale S] [--causal] [--window W] [--mask A,B,C] [--alibi]
//       [--softcap C] [--algebra-callbacks] [--masked-rows zero|nan]
//       [--key-runs R] [--schedule BQ,BKV,SPLITKV[,ROWS,KEYS[,MINBLOCKS]]]
//       [--chunk-tiles N] [--ptx [--out-dir DIR]]
//       [--layout bhld|blhd] [--o-layout bhld|blhd] [--q-strides S0,S1,S2,S3]
//       [--k-strides ..] [--v-strides ..] [--o-strides ..]
//       [--chip CHIP] [--name NAME]
//
// --chip gfx90a or gfx942: the AMD form of the kernel (copies through
// registers, 64-lane waves, ROCDL's ballot and exp2; with --type f16 or
// bf16 too), for the interpreter only.
//
// --layout etc.: strided Q, K, V and O as for tcc-flash-gen
// (tests/gpu/flash/FlashGen.cpp); the interpreter reads the strides from
// the kernels' memref types.
//
// --key-runs R: a key mask (AttentionProblem::keyKeep) dropping keys k with
// (k / R) % 3 == 1 for every row, applied to the scores with -inf after the
// other changes, as the compiler hands over a padding mask.
//
// --chunk-tiles N: with --schedule, the split-K (decode) form with chunks
// of N key tiles (0: one kernel).
//
// --schedule: ROWS x KEYS is the thread's register tile of S
// (SimtAttentionSchedule::tileRows, tileKeys; 4 x 4 when not given),
// MINBLOCKS its minBlocks (0, no register bound, when not given).
//
// --ptx: lowers the kernels to DIR/NAME.ptx (the compiler's NVVM pipeline)
// and prints tcc-flash-gen's JSON line instead (check_flash.py's input:
// tests/gpu/simt/run-on-gpu.sh times them on a GPU); no MLIR.
//
// Builds the kernel of compiler/gpu/SimtAttention.cpp (f32, the flags and
// hooks of tcc-flash-gen; the schedule from chooseSimtAttentionSchedule for
// --chip unless given; the split-K form's two kernels where it has chunks)
// and prints one JSON line (grid, block, shared bytes; the combine's grid
// and block and the chunks for the split-K form) and then the module in MLIR's
// generic form: simt_interp_test.py's input, which runs the kernel without a
// GPU.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/SimtAttention.h"
#include "tests/gpu/AttentionGen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <limits>
#include <vector>

using namespace mlir;
using tcc::gen::die;

int main(int argc, char **argv) {
  std::unique_ptr<MLIRContext> context =
      tcc::gen::initGenerator("tcc-simt-gen");
  // f32 unless --type says otherwise (which the builder then refuses).
  std::string typeFlag = "--type", f32 = "f32";
  std::vector<char *> args{argv[0], typeFlag.data(), f32.data()};
  int64_t keyRuns = 0, chunkTiles = -1;
  bool ptx = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--ptx") {
      ptx = true;
      continue;
    }
    if (std::string(argv[i]) == "--chunk-tiles" && i + 1 < argc) {
      chunkTiles = tcc::gen::parseInt("--chunk-tiles", argv[++i]);
      continue;
    }
    if (std::string(argv[i]) == "--key-runs" && i + 1 < argc) {
      keyRuns = tcc::gen::parseInt("--key-runs", argv[++i]);
      if (keyRuns < 1)
        die("--key-runs: expected a positive integer");
      continue;
    }
    args.push_back(argv[i]);
  }
  tcc::gen::AttentionCase c = tcc::gen::parseAttentionCase(
      int(args.size()), args.data(), *context, "sm_90");
  tcc::gpu::AttentionProblem &p = c.p;
  if (keyRuns) {
    auto keeps = [keyRuns](OpBuilder &b, Location loc, Value k) -> Value {
      auto i32 = [&](int64_t v) {
        return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
      };
      Value run = arith::DivSIOp::create(b, loc, k, i32(keyRuns));
      Value r3 = arith::RemSIOp::create(b, loc, run, i32(3));
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r3,
                                   i32(1));
    };
    p.keyKeep = [keeps](OpBuilder &b, Location loc, Value, Value, Value k,
                        ValueRange) { return keeps(b, loc, k); };
    tcc::gpu::ScoreModFn inner = p.scoreMod;
    p.scoreMod = [inner, keeps](OpBuilder &b, Location loc, Value s,
                                Value batch, Value head, Value q, Value k,
                                ValueRange captured) -> Value {
      if (inner)
        s = inner(b, loc, s, batch, head, q, k, captured);
      Value negInf = arith::ConstantOp::create(
          b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
      return arith::SelectOp::create(b, loc, keeps(b, loc, k), s, negInf);
    };
  }
  // AMD chips (gfx90a, gfx942): the kernel with synchronous copies, 64-lane
  // waves and ROCDL's ballot and exp2, for the interpreter (no --ptx).
  bool amd = llvm::StringRef(c.flags.chip).starts_with("gfx");
  if (amd && ptx)
    die("--ptx: an NVIDIA --chip");
  if (!amd)
    tcc::gen::checkChip(c.flags.chip);
  std::string why;
  if (!tcc::gpu::simtAttentionSupports(p, why))
    die(why);
  const ::tcc::TargetDesc &target = tcc::gen::targetOf(c.flags.chip);
  tcc::gpu::SimtAttentionSchedule s =
      tcc::gpu::chooseSimtAttentionSchedule(p, target);
  if (!c.flags.schedule.empty()) {
    size_t n = 1 + llvm::count(c.flags.schedule, ',');
    std::vector<int64_t> v = tcc::gen::parseIntList(
        "--schedule", c.flags.schedule, n >= 5 ? std::min<size_t>(n, 6) : 3);
    s = {v[0], v[1], v[2] != 0, 0, 0};
    if (v.size() >= 5) {
      s.tileRows = v[3];
      s.tileKeys = v[4];
    }
    if (v.size() == 6)
      s.minBlocks = v[5];
  }
  if (chunkTiles >= 0)
    s.chunkTiles = chunkTiles;
  if (!tcc::gpu::simtAttentionScheduleValid(p, s, target, why))
    die(why);

  OpBuilder b(context.get());
  tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
  nlohmann::json info;
  std::vector<int64_t> schedule{s.blockQ,     s.blockKV,  s.splitKV,
                                s.chunkTiles, s.tileRows, s.tileKeys};
  // check_flash.py's form of the launch (flash's decode fields).
  tcc::gpu::KernelLaunch launch;
  tcc::gpu::DecodeKernels decode;
  if (s.chunkTiles) {
    FailureOr<tcc::gpu::SimtDecodeKernels> dk =
        tcc::gpu::buildSimtDecodeKernels(b, km.kernels, c.flags.name,
                                         c.flags.name + "_combine", p, s,
                                         target);
    if (failed(dk))
      die("cannot build the kernels");
    info = {
        {"grid", dk->partial.grid},
        {"block", dk->partial.block},
        {"shared", dk->partial.sharedBytes},
        {"combine", {{"grid", dk->combine.grid}, {"block", dk->combine.block}}},
        {"chunks", dk->chunks}};
    launch = dk->partial;
    decode.combine = dk->combine;
    decode.chunks = dk->chunks;
    decode.partialOBytes = dk->partialOBytes;
    decode.partialStatsBytes = dk->partialStatsBytes;
  } else {
    FailureOr<tcc::gpu::KernelLaunch> l = tcc::gpu::buildSimtAttentionKernel(
        b, km.kernels, c.flags.name, p, s, target);
    if (failed(l))
      die("cannot build the kernel");
    launch = *l;
    info = {{"grid", launch.grid},
            {"block", launch.block},
            {"shared", launch.sharedBytes}};
  }
  tcc::gen::verifyOrPrint(*km.module, /*emitMlir=*/false);
  if (ptx) {
    tcc::gen::writePtx(c.flags.outDir, c.flags.name,
                       tcc::gen::lowerToPtx(*km.module, c.flags.chip));
    tcc::gen::printAttentionCase(c, schedule, launch,
                                 s.chunkTiles ? &decode : nullptr);
    return 0;
  }
  info["schedule"] = schedule;
  info["score_block"] = tcc::gpu::simtScoreBlock(s, target);
  std::cout << info.dump() << "\n" << std::flush;
  OpPrintingFlags flags;
  flags.printGenericOpForm();
  km.module->print(llvm::outs(), flags);
  llvm::outs() << "\n";
  return 0;
}
