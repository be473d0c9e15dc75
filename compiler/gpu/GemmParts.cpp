//===- GemmParts.cpp - pieces the GEMM templates share --------------------===//
//
// The gather's index math is 32-bit: every offset of the input fits
// (convKernelSupports checks). A row's pixel decomposition is made once per
// block, and each k-tile decomposes only the thread's k (tap and channel).
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/GemmParts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;

namespace tcc::gpu {

std::pair<bool, bool> GemmParts::gatherChecks(const GemmGather &g) {
  bool needH =
      g.padTop > 0 || (g.oh - 1) * g.strideH + (g.kh - 1) * g.dilationH >= g.h;
  bool needW =
      g.padLeft > 0 || (g.ow - 1) * g.strideW + (g.kw - 1) * g.dilationW >= g.w;
  return {needH, needW};
}

SmallVector<GemmParts::GatherRow>
GemmParts::gatherRows(const GemmGather &g, Value firstRow, int64_t rowStep,
                      int64_t count, int64_t m, bool needRow) {
  auto [needH, needW] = gatherChecks(g);
  int64_t pixels = g.oh * g.ow;
  // An input row or column no window reaches: rows past M get it, so that
  // the bounds check that padding needs rejects them too.
  Value far = cstI32(std::numeric_limits<int32_t>::min() / 2);
  SmallVector<GatherRow> rows;
  for (int64_t i = 0; i < count; ++i) {
    Value r = add(firstRow, i * rowStep);
    Value ok = needRow ? ult(r, m) : Value();
    Value rc = ok ? select(ok, r, cstI32(0)) : r;
    Value img = div(rc, pixels), q = rem(rc, pixels);
    Value ih = add(mul(div(q, g.ow), g.strideH), -g.padTop);
    Value iw = add(mul(rem(q, g.ow), g.strideW), -g.padLeft);
    Value base = mul(add(mul(add(mul(img, g.h), ih), g.w), iw), g.c);
    if (ok && needH)
      ih = select(ok, ih, far);
    else if (ok && needW)
      iw = select(ok, iw, far);
    rows.push_back({base, ih, iw, needH || needW ? Value() : ok});
  }
  return rows;
}

GemmParts::GatherTap GemmParts::gatherTap(const GemmGather &g, Value k,
                                          bool check, int64_t kBound) {
  Value ok = check ? ult(k, kBound) : Value();
  Value tap = div(k, g.c), ch = rem(k, g.c);
  Value dy = mul(div(tap, g.kw), g.dilationH);
  Value dx = mul(rem(tap, g.kw), g.dilationW);
  return {dy, dx, add(mul(add(mul(dy, g.w), dx), g.c), ch), ok};
}

std::pair<Value, Value> GemmParts::gatherSource(const GemmGather &g,
                                                const GatherRow &row,
                                                const GatherTap &tap) {
  auto [needH, needW] = gatherChecks(g);
  Value ok = land(row.ok, tap.ok);
  if (needH)
    ok = land(ok, ult(add(row.ih, tap.dy), g.h));
  if (needW)
    ok = land(ok, ult(add(row.iw, tap.dx), g.w));
  Value off = add(row.base, tap.off);
  return {asIndex(ok ? select(ok, off, cstI32(0)) : off), ok};
}

Value GemmParts::gemmEpilogue(const GemmEpilogue &epi, Value vals, Value bias,
                              Value residual, Value batch, Value row, Value col,
                              int64_t m, int64_t n, Value *raw) {
  auto vt = cast<VectorType>(vals.getType());
  int64_t len = vt.getNumElements();
  auto bytes = [](Type t) { return t.getIntOrFloatBitWidth() / 8; };
  // Whole aligned vectors inside the store's bounds check, or elements at
  // clamped indices before element-wise checked stores.
  auto read = [&](Value mem, Type t, ValueRange lead) -> Value {
    auto rt = VectorType::get({len}, t);
    SmallVector<Value> at(lead.begin(), lead.end());
    if (n % len == 0) {
      at.push_back(col);
      return vector::LoadOp::create(b, loc, rt, mem, at, false,
                                    llvm::Align(len * bytes(t)));
    }
    SmallVector<Value> e;
    for (int64_t i = 0; i < len; ++i) {
      Value ce = add(col, i);
      SmallVector<Value> idx = at;
      idx.push_back(select(ult(ce, n), ce, cst(0)));
      e.push_back(memref::LoadOp::create(b, loc, mem, idx));
    }
    return vector::FromElementsOp::create(b, loc, rt, e);
  };
  auto addTo = [&](Value v, Type t) {
    if (!t.isF32())
      v = arith::ExtFOp::create(b, loc, vt, v);
    vals = arith::AddFOp::create(b, loc, vals, v);
  };
  if (epi.biasType)
    addTo(read(bias, epi.biasType, {}), epi.biasType);
  if (epi.residualType) {
    Value r = n % len == 0 ? row : select(ult(row, m), row, cst(0));
    addTo(read(residual, epi.residualType, {batch, r}), epi.residualType);
  }
  if (raw)
    *raw = vals;
  if (epi.relu)
    vals = arith::MaximumFOp::create(
        b, loc, vals,
        arith::ConstantOp::create(b, loc, DenseElementsAttr::get(vt, 0.0f)));
  return vals;
}

Value applyElementFn(OpBuilder &b, Location loc, const GemmEpilogue &epi,
                     Value vals, ValueRange captured, Value batch, Value row,
                     Value col) {
  auto vt = cast<VectorType>(vals.getType());
  SmallVector<Value> out;
  for (int64_t i = 0, e = vt.getNumElements(); i < e; ++i) {
    Value acc = vector::ExtractOp::create(b, loc, vals, ArrayRef<int64_t>{i});
    Value c = col;
    if (i)
      c = arith::AddIOp::create(
          b, loc, col,
          arith::ConstantOp::create(b, loc,
                                    b.getIntegerAttr(col.getType(), i)));
    out.push_back(epi.elementFn(b, loc, acc, batch, row, c, captured));
  }
  Value v = vector::FromElementsOp::create(
      b, loc, VectorType::get({vt.getNumElements()}, out[0].getType()), out);
  assert(out[0].getType() == epi.outType && "elementFn returns C's type");
  return v;
}

MemRefType gemmOutBufferType(const GemmEpilogue &epi, int64_t batch, int64_t m,
                             int64_t n, Type t) {
  int64_t phases = epi.shuffleH * epi.shuffleW;
  return MemRefType::get(
      {batch, m * phases, epi.outStride ? epi.outStride : n / phases}, t);
}

Value gemmOutView(OpBuilder &b, Location loc, const GemmEpilogue &epi,
                  Value buffer, int64_t n) {
  if (!epi.outStride)
    return buffer;
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(0),
                                       b.getIndexAttr(epi.outOffset)};
  SmallVector<OpFoldResult> sizes = {
      b.getIndexAttr(type.getDimSize(0)), b.getIndexAttr(type.getDimSize(1)),
      b.getIndexAttr(n / (epi.shuffleH * epi.shuffleW))};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  return memref::SubViewOp::create(b, loc, buffer, offsets, sizes, strides);
}

SmallVector<Value, 3> gemmOutIndices(OpBuilder &b, Location loc,
                                     const GemmEpilogue &epi, int64_t n,
                                     Value batch, Value row, Value col) {
  if (!epi.shuffled())
    return {batch, row, col};
  // Constant divisors: LLVM turns these into multiplies and shifts.
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, row.getType(),
                                     b.getIntegerAttr(row.getType(), v));
  };
  auto div = [&](Value x, int64_t d) -> Value {
    return arith::DivUIOp::create(b, loc, x, cst(d));
  };
  auto rem = [&](Value x, int64_t d) -> Value {
    return arith::RemUIOp::create(b, loc, x, cst(d));
  };
  auto mul = [&](Value x, int64_t v) -> Value {
    return arith::MulIOp::create(b, loc, x, cst(v));
  };
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddIOp::create(b, loc, x, y);
  };
  int64_t channels = n / (epi.shuffleH * epi.shuffleW);
  int64_t pixels = epi.rowsH * epi.rowsW;
  Value phase = div(col, channels), ch = rem(col, channels);
  Value rh = div(phase, epi.shuffleW), rw = rem(phase, epi.shuffleW);
  Value img = div(row, pixels), q = rem(row, pixels);
  Value y = div(q, epi.rowsW), x = rem(q, epi.rowsW);
  Value outY = add(mul(add(mul(img, epi.rowsH), y), epi.shuffleH), rh);
  Value outX = add(mul(x, epi.shuffleW), rw);
  Value pixel = add(mul(outY, epi.rowsW * epi.shuffleW), outX);
  return {batch, pixel, ch};
}

bool gemmOutputsValid(const GemmEpilogue &epi, int64_t m, int64_t n,
                      std::string &why) {
  if (epi.elementFn) {
    Type t = epi.outType;
    if (epi.biasType || epi.residualType || epi.relu || epi.secondOut() ||
        epi.shuffled() || epi.outStride ||
        !(t && (t.isF32() || t.isBF16() || t.isF16() || t.isInteger(32)))) {
      why = "elementwise epilogue code stores f32, bf16, f16 or i32 to a C "
            "of its own, with nothing else in the epilogue";
      return false;
    }
  }
  if (epi.rawOut && (!epi.relu || epi.outStride)) {
    why = "a raw output needs a ReLU and no output slice";
    return false;
  }
  if (epi.rawOut && epi.copyOut) {
    why = "a raw output and a copy of the output both take the second buffer";
    return false;
  }
  int64_t phases = epi.shuffleH * epi.shuffleW;
  if (epi.shuffled()) {
    if (epi.shuffleH < 1 || epi.shuffleW < 1 || n % phases != 0 ||
        (n / phases) % 8 != 0 || epi.rowsH < 1 || epi.rowsW < 1 ||
        m % (epi.rowsH * epi.rowsW) != 0 || epi.secondOut()) {
      why = "a shuffled output needs columns of whole pixels of multiples of 8 "
            "channels, rows of whole images and no second output";
      return false;
    }
  }
  if (!epi.outStride)
    return true;
  int64_t width = n / phases;
  if (epi.outOffset < 0 || epi.outOffset + width > epi.outStride ||
      epi.outOffset % 8 != 0 || epi.outStride % 8 != 0) {
    why = "output slice [" + std::to_string(epi.outOffset) + ", " +
          std::to_string(epi.outOffset + width) + ") of rows of " +
          std::to_string(epi.outStride) +
          ": must fit and start and stride at multiples of 8 elements";
    return false;
  }
  return true;
}

} // namespace tcc::gpu
