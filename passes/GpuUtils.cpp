//===- GpuUtils.cpp - building blocks of GPU code generation --------------===//
#include "passes/GpuUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;

namespace mlir::tcc::gpuutil {

Value cIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                               ArrayRef<int64_t> sizes) {
  SmallVector<Value> ivs(sizes.size());
  Value rest = linear;
  for (int d = sizes.size() - 1; d >= 0; --d) {
    if (d == 0) {
      ivs[d] = rest;
      break;
    }
    Value size = cIndex(b, loc, sizes[d]);
    ivs[d] = arith::RemUIOp::create(b, loc, rest, size);
    rest = arith::DivUIOp::create(b, loc, rest, size);
  }
  return ivs;
}

SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ArrayRef<Value> ivs) {
  SmallVector<Value> out;
  for (unsigned i = 0; i < map.getNumResults(); ++i) {
    AffineExpr e = map.getResult(i);
    if (auto dim = dyn_cast<AffineDimExpr>(e))
      out.push_back(ivs[dim.getPosition()]);
    else if (auto c = dyn_cast<AffineConstantExpr>(e))
      out.push_back(cIndex(b, loc, c.getValue()));
    else
      out.push_back(
          affine::AffineApplyOp::create(b, loc, map.getSubMap({i}), ivs));
  }
  return out;
}

/// `v` from lane (lane ^ offset) of the warp. Shuffles move 32 bits: smaller
/// values are widened, 64-bit ones move in two halves.
Value shuffleXor(OpBuilder &b, Location loc, Value v, int64_t offset) {
  Type t = v.getType();
  unsigned bits = t.getIntOrFloatBitWidth();
  Type i32 = b.getI32Type();
  Value off = arith::ConstantIntOp::create(b, loc, i32, offset);
  Value width = arith::ConstantIntOp::create(b, loc, i32, kWarp);
  auto shuffle = [&](Value x) {
    return gpu::ShuffleOp::create(b, loc, x, off, width, gpu::ShuffleMode::XOR)
        .getShuffleResult();
  };
  if (t.isF32() || t.isInteger(32))
    return shuffle(v);
  Type intTy = b.getIntegerType(bits);
  Value asInt =
      isa<FloatType>(t) ? arith::BitcastOp::create(b, loc, intTy, v) : v;
  Value got;
  if (bits < 32) {
    Value wide = arith::ExtUIOp::create(b, loc, i32, asInt);
    got = arith::TruncIOp::create(b, loc, intTy, shuffle(wide));
  } else {
    Value lo = arith::TruncIOp::create(b, loc, i32, asInt);
    Value hi = arith::TruncIOp::create(
        b, loc, i32,
        arith::ShRUIOp::create(
            b, loc, asInt, arith::ConstantIntOp::create(b, loc, intTy, 32)));
    Value lo2 = arith::ExtUIOp::create(b, loc, intTy, shuffle(lo));
    Value hi2 = arith::ExtUIOp::create(b, loc, intTy, shuffle(hi));
    got = arith::OrIOp::create(
        b, loc, lo2,
        arith::ShLIOp::create(b, loc, hi2,
                              arith::ConstantIntOp::create(b, loc, intTy, 32)));
  }
  return isa<FloatType>(t) ? arith::BitcastOp::create(b, loc, t, got) : got;
}

/// A new op of the combiner's kind on `lhs` and `rhs`.
Value combine(OpBuilder &b, Operation *combiner, Value lhs, Value rhs) {
  OperationState state(combiner->getLoc(), combiner->getName());
  state.addOperands({lhs, rhs});
  state.addTypes(lhs.getType());
  state.addAttributes(combiner->getAttrs());
  return b.create(state)->getResult(0);
}

Value castFloat(OpBuilder &b, Location loc, Value v, Type t) {
  if (v.getType() == t)
    return v;
  if (v.getType().getIntOrFloatBitWidth() < t.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, t, v);
  return arith::TruncFOp::create(b, loc, t, v);
}

/// Combines `v` across the 32 lanes of each warp: every lane ends with the
/// warp's value.
Value warpReduce(OpBuilder &b, Location loc, Operation *combiner, Value v) {
  for (int64_t offset = kWarp / 2; offset >= 1; offset /= 2)
    v = combine(b, combiner, v, shuffleXor(b, loc, v, offset));
  return v;
}

} // namespace mlir::tcc::gpuutil
