//===- AttentionOpTest.cpp - tcc.attention's regions in the templates ----===//
//
// The templates build the score change and key mask from tcc.attention's
// regions (attentionProblemOf): the code they get must be what the match
// builds from the chain itself (AttentionMatch::buildScoreMod, buildKeyKeep),
// op for op, for a captured tensor passed as the kernel's buffer and as the
// element a template staged, so that bundles do not change with the op.
//
//===----------------------------------------------------------------------===//
#include "compiler/Registration.h"
#include "compiler/Target.h"
#include "compiler/gpu/AttentionPlan.h"
#include "passes/AttentionMatch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace mlir;

namespace {

const char *kBias = R"mlir(
func.func @bias_input(%q: tensor<1x4x64x64xf16>, %k: tensor<1x4x64x64xf16>, %v: tensor<1x4x64x64xf16>, %bias: tensor<1x4x64x64xf16>) -> tensor<1x4x64x64xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x64x64xf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    %c = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
    %ss = tcc.mul %s, %c : tensor<1x4x64x64xf16>, tensor<f16> -> tensor<1x4x64x64xf16>
    %sb = tcc.add %ss, %bias : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    %9 = tcc.reduce_max %sb {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xf16> -> tensor<1x4x64x1xf16>
    %10 = tcc.sub %sb, %9 : tensor<1x4x64x64xf16>, tensor<1x4x64x1xf16> -> tensor<1x4x64x64xf16>
    %11 = tcc.exp %10 : tensor<1x4x64x64xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xf16> -> tensor<1x4x64x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x64x64xf16>, tensor<1x4x64x1xf16> -> tensor<1x4x64x64xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    tcc.yield %14 : tensor<1x4x64x64xf16>
  }
  return %0 : tensor<1x4x64x64xf16>
}
)mlir";

const char *kPadding = R"mlir(
func.func @padding_mask(%q: tensor<2x4x64x64xbf16>, %k: tensor<2x4x64x64xbf16>, %v: tensor<2x4x64x64xbf16>, %mask: tensor<2x1x1x64xi1>) -> tensor<2x4x64x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x64x64xbf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xbf16>
    %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %ss = tcc.mul %s, %c : tensor<2x4x64x64xbf16>, tensor<bf16> -> tensor<2x4x64x64xbf16>
    %neg = tcc.constant {value = 0xFF80 : bf16} : tensor<bf16>
    %sm = tcc.select %mask, %ss, %neg : tensor<2x1x1x64xi1>, tensor<2x4x64x64xbf16>, tensor<bf16> -> tensor<2x4x64x64xbf16>
    %9 = tcc.reduce_max %sm {axes = array<i64: 3>, keepdims = true} : tensor<2x4x64x64xbf16> -> tensor<2x4x64x1xbf16>
    %10 = tcc.sub %sm, %9 : tensor<2x4x64x64xbf16>, tensor<2x4x64x1xbf16> -> tensor<2x4x64x64xbf16>
    %11 = tcc.exp %10 : tensor<2x4x64x64xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x64x64xbf16> -> tensor<2x4x64x1xbf16>
    %13 = tcc.div %11, %12 : tensor<2x4x64x64xbf16>, tensor<2x4x64x1xbf16> -> tensor<2x4x64x64xbf16>
    %14 = tcc.matmul %13, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xbf16>
    tcc.yield %14 : tensor<2x4x64x64xbf16>
  }
  return %0 : tensor<2x4x64x64xbf16>
}
)mlir";

/// The chain of `src` matched as attention, and its tcc.attention.
struct Formed {
  OwningOpRef<ModuleOp> module;
  std::optional<mlir::tcc::AttentionMatch> match;
  mlir::tcc::AttentionOp op;
};

Formed form(MLIRContext &ctx, const char *src) {
  Formed f;
  f.module = parseSourceString<ModuleOp>(src, &ctx);
  REQUIRE(f.module);
  mlir::tcc::ChainOp chain;
  f.module->walk([&](mlir::tcc::ChainOp c) { chain = c; });
  REQUIRE(chain);
  std::string why;
  f.match = mlir::tcc::matchAttention(chain, why);
  REQUIRE(f.match);
  OpBuilder b(chain);
  f.op = f.match->buildOp(b);
  REQUIRE(succeeded(verify(f.op)));
  return f;
}

/// A function of `args` returning what `build` builds from them, printed.
std::string
emitted(MLIRContext &ctx, ArrayRef<Type> args, Type result,
        llvm::function_ref<Value(OpBuilder &, Location, ValueRange)> build) {
  Location loc = UnknownLoc::get(&ctx);
  OwningOpRef<ModuleOp> m = ModuleOp::create(loc);
  OpBuilder b = OpBuilder::atBlockEnd(m->getBody());
  auto f = func::FuncOp::create(b, loc, "f", b.getFunctionType(args, {result}));
  b.setInsertionPointToStart(f.addEntryBlock());
  Value r = build(b, loc, f.getArguments());
  func::ReturnOp::create(b, loc, r);
  REQUIRE(succeeded(verify(*m)));
  std::string s;
  llvm::raw_string_ostream os(s);
  f.print(os);
  return s;
}

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    ::tcc::registerAllDialects(registry);
    auto *c = new MLIRContext(registry);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

} // namespace

TEST_CASE("tcc.attention: the score region builds the match's score code",
          "[attention]") {
  MLIRContext &ctx = context();
  Formed f = form(ctx, kBias);
  std::string error;
  std::optional<::tcc::TargetDesc> target = ::tcc::parseTarget("sm_90", error);
  REQUIRE(target);
  ::tcc::gpu::AttentionProblem p =
      ::tcc::gpu::attentionProblemOf(f.op, *target);
  REQUIRE(p.scoreMod);
  REQUIRE(p.captured.size() == 1);
  Type f32 = Float32Type::get(&ctx), i32 = IntegerType::get(&ctx, 32);
  // The bias as the kernel's buffer, then as a staged f16 element.
  for (Type bias : {p.captured[0], Type(Float16Type::get(&ctx))}) {
    SmallVector<Type> args{f32, i32, i32, i32, i32, bias};
    std::string viaOp =
        emitted(ctx, args, f32, [&](OpBuilder &b, Location l, ValueRange a) {
          return p.scoreMod(b, l, a[0], a[1], a[2], a[3], a[4],
                            a.drop_front(5));
        });
    std::string viaMatch =
        emitted(ctx, args, f32, [&](OpBuilder &b, Location l, ValueRange a) {
          return f.match->buildScoreMod(b, l, a[0], a[1], a[2], a[3], a[4],
                                        a.drop_front(5));
        });
    CHECK(viaOp == viaMatch);
    bool buffer = isa<MemRefType>(bias);
    CHECK((viaOp.find("memref.load") != std::string::npos) == buffer);
    // A staged element needs no index code: none is built.
    CHECK((viaOp.find("arith.minsi") != std::string::npos) == buffer);
    CHECK(viaOp.find("tensor.extract") == std::string::npos);
  }
}

TEST_CASE("tcc.attention: the key_keep region builds the match's key mask",
          "[attention]") {
  MLIRContext &ctx = context();
  Formed f = form(ctx, kPadding);
  std::string error;
  // The SIMT template takes the key mask beside a scale as score code too.
  for (const char *name : {"sm_90", "gfx942"}) {
    std::optional<::tcc::TargetDesc> target = ::tcc::parseTarget(name, error);
    REQUIRE(target);
    ::tcc::gpu::AttentionProblem p =
        ::tcc::gpu::attentionProblemOf(f.op, *target);
    REQUIRE(p.keyKeep);
    CHECK(p.keyKeepApply == (std::string(name) == "sm_90"));
    CHECK(bool(p.scoreMod) == (std::string(name) == "gfx942"));
    Type i32 = IntegerType::get(&ctx, 32), i1 = IntegerType::get(&ctx, 1);
    SmallVector<Type> args{i32, i32, i32, p.captured[0]};
    std::string viaOp =
        emitted(ctx, args, i1, [&](OpBuilder &b, Location l, ValueRange a) {
          return p.keyKeep(b, l, a[0], a[1], a[2], a.drop_front(3));
        });
    std::string viaMatch =
        emitted(ctx, args, i1, [&](OpBuilder &b, Location l, ValueRange a) {
          return f.match->buildKeyKeep(b, l, a[0], a[1], a[2], a.drop_front(3));
        });
    CHECK(viaOp == viaMatch);
    CHECK(viaOp.find("memref.load") != std::string::npos);
  }
}
