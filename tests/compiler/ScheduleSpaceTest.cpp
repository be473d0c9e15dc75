//===- ScheduleSpaceTest.cpp - the matmul templates' schedule spaces ------===//
//
// A tuning record names a point of a template's schedule space (issue 17):
// every point must be one the template accepts, the heuristic's choice one
// of them, and a problem the template cannot take an empty space.
#include "compiler/Target.h"
#include "compiler/gpu/ConvKernel.h"
#include "compiler/gpu/MatmulKernel.h"
#include "compiler/gpu/WgmmaKernel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

#include <random>

using namespace tcc;
using namespace tcc::gpu;

static TargetDesc target(const char *name) {
  std::string error;
  std::optional<TargetDesc> t = parseTarget(name, error);
  REQUIRE(t);
  return *t;
}

TEST_CASE("wgmma schedule space", "[tuning]") {
  mlir::MLIRContext ctx;
  mlir::Builder b(&ctx);
  TargetDesc sm90a = target("sm_90a");
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 6; ++trial) {
    WgmmaProblem p;
    p.m = 64 * (1 + rng() % 64);
    p.n = 64 * (1 + rng() % 64);
    p.k = 64 * (1 + rng() % 64);
    p.transB = true;
    p.abType = trial % 2 ? b.getF16Type() : b.getBF16Type();
    p.cType = trial % 3 ? p.abType : b.getF32Type();
    INFO("m " << p.m << " n " << p.n << " k " << p.k);
    std::vector<WgmmaSchedule> space = wgmmaScheduleSpace(p, sm90a);
    REQUIRE(!space.empty());
    std::string why;
    for (const WgmmaSchedule &s : space)
      CHECK(wgmmaKernelSupports(p, s, sm90a, why));
    WgmmaSchedule h = chooseWgmmaSchedule(p);
    if (wgmmaKernelSupports(p, h, sm90a, why))
      CHECK(
          std::any_of(space.begin(), space.end(), [&](const WgmmaSchedule &s) {
            return s.tileM == h.tileM && s.tileN == h.tileN &&
                   s.warpgroups == h.warpgroups && s.stages == h.stages &&
                   s.splitK == h.splitK && s.producer == h.producer;
          }));
    // Both ways of feeding the stages are points of the space.
    CHECK(std::any_of(space.begin(), space.end(),
                      [](const WgmmaSchedule &s) { return s.producer; }));
    CHECK(std::any_of(space.begin(), space.end(),
                      [](const WgmmaSchedule &s) { return !s.producer; }));
  }
  // f8: the heuristic's producer schedule (128x192 tiles at 8192^3, promoted
  // every k-tile) is a point of the space, and so are 3 warpgroups.
  {
    WgmmaProblem p;
    p.m = p.n = p.k = 8192;
    p.transB = true;
    p.abType = b.getType<mlir::Float8E4M3FNType>();
    p.cType = b.getBF16Type();
    std::vector<WgmmaSchedule> space = wgmmaScheduleSpace(p, sm90a);
    WgmmaSchedule h = chooseWgmmaSchedule(p);
    std::string why;
    REQUIRE(wgmmaKernelSupports(p, h, sm90a, why));
    CHECK(h.producer == 1);
    CHECK(std::any_of(space.begin(), space.end(), [&](const WgmmaSchedule &s) {
      return s.tileM == h.tileM && s.tileN == h.tileN &&
             s.warpgroups == h.warpgroups && s.stages == h.stages &&
             s.splitK == h.splitK && s.producer == h.producer &&
             s.promote == h.promote;
    }));
    CHECK(std::any_of(space.begin(), space.end(), [](const WgmmaSchedule &s) {
      return s.warpgroups == 3 && s.producer;
    }));
    for (const WgmmaSchedule &s : space)
      CHECK(wgmmaKernelSupports(p, s, sm90a, why));
  }
  // No wgmma on sm_90 (without the a): nothing to tune.
  WgmmaProblem p;
  p.m = p.n = p.k = 1024;
  p.transB = true;
  p.abType = p.cType = b.getBF16Type();
  CHECK(wgmmaScheduleSpace(p, target("sm_90")).empty());
}

TEST_CASE("mma.sync schedule space", "[tuning]") {
  mlir::MLIRContext ctx;
  mlir::Builder b(&ctx);
  TargetDesc sm90 = target("sm_90");
  MatmulProblem p;
  p.m = 1000;
  p.n = 3001;
  p.k = 512;
  p.transB = true;
  p.aType = p.bType = p.cType = b.getF16Type();
  std::vector<MatmulSchedule> space = matmulScheduleSpace(p, sm90);
  REQUIRE(space.size() > 10);
  std::string why;
  for (const MatmulSchedule &s : space)
    CHECK(matmulScheduleValid(p, s, sm90, why));
  MatmulSchedule h = chooseMatmulSchedule(p, sm90);
  CHECK(std::any_of(space.begin(), space.end(), [&](const MatmulSchedule &s) {
    return s.tileM == h.tileM && s.tileN == h.tileN && s.tileK == h.tileK &&
           s.warpsM == h.warpsM && s.warpsN == h.warpsN &&
           s.stages == h.stages && s.splitK == h.splitK;
  }));
}

TEST_CASE("convolution schedule spaces", "[tuning]") {
  mlir::MLIRContext ctx;
  mlir::Builder b(&ctx);
  TargetDesc sm90a = target("sm_90a");
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 4; ++trial) {
    ConvProblem p;
    p.n = 1 + rng() % 2;
    p.h = p.w = 14 << (rng() % 3);
    p.c = 32 << (rng() % 3);
    p.o = 64 << (rng() % 3);
    p.kh = p.kw = trial % 2 ? 3 : 1;
    p.padTop = p.padLeft = p.padBottom = p.padRight = p.kh / 2;
    p.strideH = p.strideW = 1 + rng() % 2;
    p.inType = p.weightType = p.outType = b.getF16Type();
    p.biasType = trial % 3 ? b.getF16Type() : mlir::Type();
    p.relu = trial % 2;
    INFO("n " << p.n << " hw " << p.h << " c " << p.c << " o " << p.o << " k "
              << p.kh << " stride " << p.strideH);
    std::string why;
    std::vector<WgmmaSchedule> wspace = wgmmaConvScheduleSpace(p, sm90a);
    for (const WgmmaSchedule &s : wspace)
      CHECK(wgmmaConvScheduleValid(p, s, sm90a, why));
    // The heuristics' choices are points of the spaces: tuning starts from
    // them and can only keep or beat them.
    if (std::optional<WgmmaSchedule> h = chooseWgmmaConvSchedule(p, sm90a))
      CHECK(std::any_of(
          wspace.begin(), wspace.end(), [&](const WgmmaSchedule &s) {
            return s.tileM == h->tileM && s.tileN == h->tileN &&
                   s.warpgroups == h->warpgroups && s.stages == h->stages &&
                   s.splitK == h->splitK && s.tma == h->tma;
          }));
    std::vector<ConvSchedule> space = convScheduleSpace(p, sm90a);
    REQUIRE(space.size() > 10);
    for (const ConvSchedule &s : space)
      CHECK(convScheduleValid(p, s, sm90a, why));
    ConvSchedule h = chooseConvSchedule(p, sm90a);
    INFO("heuristic " << h.tileM << "x" << h.tileN << "x" << h.tileK
                      << " warps " << h.warpsM << "x" << h.warpsN << " stages "
                      << h.stages << " split " << h.splitK);
    INFO("space of " << space.size());
    CHECK(std::any_of(space.begin(), space.end(), [&](const ConvSchedule &s) {
      return s.tileM == h.tileM && s.tileN == h.tileN && s.tileK == h.tileK &&
             s.warpsM == h.warpsM && s.warpsN == h.warpsN &&
             s.stages == h.stages && s.splitK == h.splitK;
    }));
  }
}
