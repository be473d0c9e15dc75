//===- SimtGen.cpp - builds one f32 SIMT attention kernel -----------------===//
//
//   tcc-simt-gen --lq LQ --lk LK --d D [--batch B] [--hq HQ] [--hkv HKV]
//       [--scale S] [--causal] [--window W] [--mask A,B,C] [--alibi]
//       [--softcap C] [--algebra-callbacks] [--masked-rows zero|nan]
//       [--schedule BQ,BKV,SPLITKV] [--chip CHIP] [--name NAME]
//
// Builds the kernel of compiler/gpu/SimtAttention.cpp (f32, the flags and
// hooks of tcc-flash-gen; the schedule from chooseSimtAttentionSchedule for
// --chip unless given) and prints one JSON line (grid, block, shared bytes)
// and then the module in MLIR's generic form: simt_interp_test.py's input,
// which runs the kernel without a GPU.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/SimtAttention.h"
#include "tests/gpu/AttentionGen.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <vector>

using namespace mlir;
using tcc::gen::die;

int main(int argc, char **argv) {
  std::unique_ptr<MLIRContext> context =
      tcc::gen::initGenerator("tcc-simt-gen");
  // f32 unless --type says otherwise (which the builder then refuses).
  std::vector<char *> args(argv, argv + argc);
  std::string typeFlag = "--type", f32 = "f32";
  args.insert(args.begin() + 1, {typeFlag.data(), f32.data()});
  tcc::gen::AttentionCase c = tcc::gen::parseAttentionCase(
      int(args.size()), args.data(), *context, "sm_90");
  const tcc::gpu::AttentionProblem &p = c.p;
  tcc::gen::checkChip(c.flags.chip);
  std::string why;
  if (!tcc::gpu::simtAttentionSupports(p, why))
    die(why);
  const ::tcc::TargetDesc &target = tcc::gen::targetOf(c.flags.chip);
  tcc::gpu::SimtAttentionSchedule s =
      tcc::gpu::chooseSimtAttentionSchedule(p, target);
  if (!c.flags.schedule.empty()) {
    std::vector<int64_t> v =
        tcc::gen::parseIntList("--schedule", c.flags.schedule, 3);
    s = {v[0], v[1], v[2] != 0, 0};
  }
  if (!tcc::gpu::simtAttentionScheduleValid(p, s, target, why))
    die(why);

  OpBuilder b(context.get());
  tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
  FailureOr<tcc::gpu::KernelLaunch> launch =
      tcc::gpu::buildSimtAttentionKernel(b, km.kernels, c.flags.name, p, s);
  if (failed(launch))
    die("cannot build the kernel");
  tcc::gen::verifyOrPrint(*km.module, /*emitMlir=*/false);
  nlohmann::json info = {{"grid", launch->grid},
                         {"block", launch->block},
                         {"shared", launch->sharedBytes},
                         {"schedule", {s.blockQ, s.blockKV, s.splitKV}}};
  std::cout << info.dump() << "\n" << std::flush;
  OpPrintingFlags flags;
  flags.printGenericOpForm();
  km.module->print(llvm::outs(), flags);
  llvm::outs() << "\n";
  return 0;
}
