//===- AttentionStridesTest.cpp - strided attention operands --------------===//
//
// The memref types the attention templates take Q, K, V and O as, and the
// strides they refuse. Kernels built on them are checked by running them:
// tests/gpu/simt (without a GPU) and tests/gpu/flash (on one).
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/AttentionKernel.h"
#include "compiler/gpu/SimtAttention.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

using tcc::gpu::AttentionOperand;
using tcc::gpu::AttentionProblem;

namespace {

AttentionProblem problem(mlir::MLIRContext &ctx) {
  AttentionProblem p;
  p.batch = 2;
  p.headsQ = 8;
  p.headsKV = 2;
  p.lq = 100;
  p.lk = 300;
  p.headDim = 64;
  p.elemType = mlir::BFloat16Type::get(&ctx);
  return p;
}

std::vector<int64_t> stridesOf(mlir::MemRefType t) {
  auto layout = mlir::dyn_cast<mlir::StridedLayoutAttr>(t.getLayout());
  if (!layout)
    return {};
  REQUIRE(layout.getOffset() == 0);
  return std::vector<int64_t>(layout.getStrides().begin(),
                              layout.getStrides().end());
}

std::string refusal(const AttentionProblem &p) {
  std::string why;
  CHECK_FALSE(tcc::gpu::attentionStridesValid(p, why));
  std::string kernel;
  CHECK_FALSE(tcc::gpu::attentionKernelSupports(p, kernel));
  CHECK(kernel.find(why) != std::string::npos);
  return why;
}

} // namespace

TEST_CASE("attention operands: packed strides give the identity layout",
          "[attention]") {
  mlir::MLIRContext ctx;
  AttentionProblem p = problem(ctx);
  mlir::MemRefType q = tcc::gpu::attentionOperandType(p, AttentionOperand::Q);
  CHECK(q.getShape() == llvm::ArrayRef<int64_t>{2, 8, 100, 64});
  CHECK(q.getLayout().isIdentity());
  // The packed strides given explicitly, and a size-1 axis with any stride
  // (the compiler may pass 0 there), are packed too.
  p.qStrides = {8 * 100 * 64, 100 * 64, 64, 1};
  CHECK(tcc::gpu::attentionOperandType(p, AttentionOperand::Q)
            .getLayout()
            .isIdentity());
  p.lq = 1;
  p.qStrides = {8 * 64, 64, 0, 1};
  CHECK(tcc::gpu::attentionOperandType(p, AttentionOperand::Q)
            .getLayout()
            .isIdentity());
  std::string why;
  CHECK(tcc::gpu::attentionStridesValid(p, why));
  // K given transposed: [batch, headsKV, headDim, lk].
  p.kTransposed = true;
  mlir::MemRefType k = tcc::gpu::attentionOperandType(p, AttentionOperand::K);
  CHECK(k.getShape() == llvm::ArrayRef<int64_t>{2, 2, 64, 300});
  CHECK(k.getLayout().isIdentity());
}

TEST_CASE("attention operands: [B, L, H, D] tensors keep their strides",
          "[attention]") {
  mlir::MLIRContext ctx;
  AttentionProblem p = problem(ctx);
  p.qStrides = {100 * 8 * 64, 64, 8 * 64, 1};
  p.kStrides = p.vStrides = {300 * 2 * 64, 64, 2 * 64, 1};
  p.oStrides = p.qStrides;
  std::string why;
  CHECK(tcc::gpu::attentionStridesValid(p, why));
  CHECK(tcc::gpu::attentionKernelSupports(p, why));
  mlir::MemRefType q = tcc::gpu::attentionOperandType(p, AttentionOperand::Q);
  CHECK(q.getShape() == llvm::ArrayRef<int64_t>{2, 8, 100, 64});
  CHECK(stridesOf(q) == std::vector<int64_t>{51200, 64, 512, 1});
  CHECK(stridesOf(tcc::gpu::attentionOperandType(p, AttentionOperand::V)) ==
        std::vector<int64_t>{38400, 64, 128, 1});
  // One batch: its stride is whatever packing gives (it indexes nothing).
  p.batch = 1;
  p.qStrides[0] = 7;
  CHECK(stridesOf(tcc::gpu::attentionOperandType(p, AttentionOperand::Q)) ==
        std::vector<int64_t>{51200, 64, 512, 1});
}

TEST_CASE("attention operands: unaligned, broken or overlapping strides are "
          "refused",
          "[attention]") {
  mlir::MLIRContext ctx;
  AttentionProblem p = problem(ctx);
  p.qStrides = {100 * 8 * 72, 72, 8 * 72, 1}; // 144-byte rows: fine
  std::string why;
  CHECK(tcc::gpu::attentionStridesValid(p, why));
  p.qStrides = {100 * 8 * 68, 68, 8 * 68, 1}; // 136-byte rows
  CHECK(refusal(p) == "Q's strides do not keep 16-byte aligned rows");
  p.qStrides = {};
  p.kStrides = {1, 2, 3};
  CHECK(refusal(p) == "K's strides must be one per axis (4)");
  p.kStrides = {300 * 2 * 128, 300 * 128, 128, 2};
  CHECK(refusal(p) == "K's strides must have the innermost 1");
  p.kStrides = {};
  p.vStrides = {0, 300 * 64, 64, 1};
  CHECK(refusal(p) == "V's strides must be positive (and below 2^40)");
  p.vStrides = {64, 64, int64_t(1) << 40, 1};
  CHECK(refusal(p) == "V's strides span more than 2^48 elements");
  p.vStrides = {};
  // O's heads on top of each other; Q's may be (it is only read).
  p.oStrides = {100 * 64, 64, 64, 1};
  CHECK(refusal(p) == "O's strides overlap its elements");
  p.oStrides = {};
  p.qStrides = {100 * 64, 64, 64, 1};
  CHECK(tcc::gpu::attentionStridesValid(p, why));
  // The f32 template checks them too (4-byte elements: rows of 4k floats
  // are 16-byte aligned), but takes rows that are not, element by element;
  // its other checks stand.
  p.elemType = mlir::Float32Type::get(&ctx);
  p.qStrides = {100 * 8 * 68, 68, 8 * 68, 1};
  CHECK(tcc::gpu::attentionStridesValid(p, why));
  p.qStrides = {100 * 8 * 66, 66, 8 * 66, 1};
  CHECK_FALSE(tcc::gpu::attentionStridesValid(p, why));
  CHECK(why.find("Q's strides do not keep 16-byte aligned rows") !=
        std::string::npos);
  CHECK(tcc::gpu::attentionStridesValid(p, why, /*alignedRows=*/false));
  CHECK(tcc::gpu::simtAttentionSupports(p, why));
  p.oStrides = {100 * 64, 64, 64, 1};
  CHECK_FALSE(tcc::gpu::simtAttentionSupports(p, why));
  CHECK(why.find("O's strides overlap its elements") != std::string::npos);
}
