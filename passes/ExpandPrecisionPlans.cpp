//===- ExpandPrecisionPlans.cpp - a planned matmul as what it stands for --===//
//
// A tcc.planned_matmul's output tile computes in its plan's precision
// (docs/precision.md). This pass writes that out in tcc ops, for every
// target: per precision of the plan, A's row blocks and B's column blocks
// rounded to it (f16, f8 and i8 after dividing each block by its largest
// magnitude over the format's largest value), a matmul of the rounded
// operands accumulating in f32 (i32 for i8), the block scales multiplied
// back, and each tile's result picked by its code. Every precision's
// matmul covers the whole output: correct, the plan's semantics, but not
// the speed a mixed kernel gets by computing each tile once. Where B is a
// param, its rounding runs once at load (tcc-hoist-param-computations).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCEXPANDPRECISIONPLANS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

/// The largest value a block's largest magnitude is scaled to, or 0 for a
/// precision that takes its values unscaled (f32's range).
double scaledMax(Type t) {
  if (t.isF16())
    return 65504.0;
  if (isa<Float8E4M3FNType>(t))
    return 448.0;
  if (isa<Float8E5M2Type>(t))
    return 57344.0;
  if (t.isInteger(8))
    return 127.0;
  return 0.0;
}

class Expander {
public:
  Expander(OpBuilder &b, Location loc, bool tileKernels)
      : b(b), loc(loc), tileKernels(tileKernels) {}

  /// Whether the wgmma template computes precision `p`'s tiles of `op`
  /// (tcc.tile_matmul): one matrix, A row-major, at least 64 rows, rows of
  /// 16 bytes, a plan tile of whole 64 x 64 kernel tiles; not f32 (wgmma's
  /// f32 is tf32).
  bool takesTiles(PlannedMatmulOp op, Type p) const {
    auto aTy = cast<RankedTensorType>(op.getA().getType());
    auto bTy = cast<RankedTensorType>(op.getB().getType());
    PrecisionPlanAttr plan = op.getPlan();
    if (!tileKernels || p.isF32() || aTy.getRank() != 2 || bTy.getRank() != 2 ||
        op.getTransposeA())
      return false;
    int64_t m = aTy.getDimSize(0), k = aTy.getDimSize(1);
    int64_t n = op.getTransposeB() ? bTy.getDimSize(0) : bTy.getDimSize(1);
    int64_t perRow = 128 / p.getIntOrFloatBitWidth(); // elements in 16 bytes
    bool eightBit = p.getIntOrFloatBitWidth() == 8;
    return m >= 64 && k % perRow == 0 &&
           (op.getTransposeB() || eightBit || n % perRow == 0) &&
           plan.getTileM() % 64 == 0 && plan.getTileN() % 64 == 0;
  }

  void expand(PlannedMatmulOp op) {
    PrecisionPlanAttr plan = op.getPlan();
    bool transA = op.getTransposeA(), transB = op.getTransposeB();
    Type f32 = b.getF32Type();
    Value a = convert(op.getA(), f32), bv = convert(op.getB(), f32);
    auto cType = cast<RankedTensorType>(op.getType());
    int64_t rank = cType.getRank();
    int64_t m = cType.getDimSize(rank - 2), n = cType.getDimSize(rank - 1);
    // A's M axis and B's N axis, as stored.
    int64_t aM = transA ? -1 : -2, bN = transB ? -2 : -1;
    SmallVector<Value> results;
    for (Type p : plan.getPrecisions()) {
      double qmax = scaledMax(p);
      Value qa = a, qb = bv, sa, sb;
      if (qmax > 0) {
        sa = blockScale(a, aM, plan.getTileM(), qmax);
        sb = blockScale(bv, bN, plan.getTileN(), qmax);
        qa = div(a, sa);
        qb = div(bv, sb);
      }
      qa = round(qa, p);
      qb = round(qb, p);
      if (takesTiles(op, p)) {
        // Only this precision's tiles, the scales in the epilogue.
        results.push_back(TileMatmulOp::create(
            b, loc, cType.clone(f32), qa, qb, op.getCodes(),
            sa ? toAxis(sa, -2) : Value(), sb ? toAxis(sb, -1) : Value(),
            b.getI64IntegerAttr(int64_t(results.size())),
            b.getI64IntegerAttr(plan.getTileM()),
            b.getI64IntegerAttr(plan.getTileN()), b.getBoolAttr(transB)));
        continue;
      }
      Type acc = p.isInteger(8) ? Type(b.getI32Type()) : f32;
      Value c = MatmulOp::create(b, loc, cType.clone(acc), qa, qb,
                                 b.getBoolAttr(transA), b.getBoolAttr(transB));
      c = convert(c, f32);
      if (qmax > 0) {
        // Scales in C's coordinates: A's per row [.., M, 1], B's per column
        // [.., 1, N] (a transposed operand's are the other way round, and
        // one of their axes is 1, so a reshape turns them).
        c = mul(c, toAxis(sa, -2));
        c = mul(c, toAxis(sb, -1));
      }
      results.push_back(c);
    }
    // Each tile's code, spread over its elements: [gm, gn] -> [M, N].
    Value result = results.back();
    if (results.size() > 1) {
      // A tile larger than the output is the output (the grid is 1 there).
      int64_t tm = std::min(plan.getTileM(), m),
              tn = std::min(plan.getTileN(), n);
      int64_t gm = llvm::divideCeil(m, tm), gn = llvm::divideCeil(n, tn);
      Type i8 = b.getI8Type();
      Value codes = reshape(op.getCodes(), {gm, 1, gn, 1});
      codes = BroadcastToOp::create(
          b, loc, RankedTensorType::get({gm, tm, gn, tn}, i8), codes);
      codes = reshape(codes, {gm * tm, gn * tn});
      codes = slice(codes, {m, n});
      auto codeType = cast<RankedTensorType>(codes.getType());
      for (int64_t i = int64_t(results.size()) - 2; i >= 0; --i) {
        Value id = ConstantOp::create(b, loc, RankedTensorType::get({}, i8),
                                      b.getIntegerAttr(i8, i));
        Value is =
            EqualOp::create(b, loc, codeType.clone(b.getI1Type()), codes, id);
        result =
            SelectOp::create(b, loc, result.getType(), is, results[i], result);
      }
    }
    op.replaceAllUsesWith(convert(result, cType.getElementType()));
    op.erase();
  }

private:
  RankedTensorType typeOf(Value v) {
    return ::llvm::cast<RankedTensorType>(v.getType());
  }
  Value convert(Value v, Type elt) {
    if (typeOf(v).getElementType() == elt)
      return v;
    return CastOp::create(b, loc, typeOf(v).clone(elt), v);
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    if (typeOf(v).getShape() == shape)
      return v;
    return ReshapeOp::create(b, loc, typeOf(v).clone(shape), v);
  }
  /// v[..., :sizes] over the last axes sizes.size() axes.
  Value slice(Value v, ArrayRef<int64_t> sizes) {
    RankedTensorType t = typeOf(v);
    SmallVector<int64_t> shape(t.getShape());
    if (ArrayRef<int64_t>(shape).take_back(sizes.size()) == sizes)
      return v;
    llvm::copy(sizes, shape.end() - sizes.size());
    SmallVector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
    return SliceOp::create(b, loc, t.clone(shape), v,
                           b.getDenseI64ArrayAttr(starts),
                           b.getDenseI64ArrayAttr(steps));
  }
  Value scalar(double v, Type elt) {
    return ConstantOp::create(b, loc, RankedTensorType::get({}, elt),
                              b.getFloatAttr(elt, v));
  }
  /// The broadcast shape of two operands (NumPy rules).
  RankedTensorType broadcastType(Value x, Value y) {
    ArrayRef<int64_t> sx = typeOf(x).getShape(), sy = typeOf(y).getShape();
    size_t r = std::max(sx.size(), sy.size());
    SmallVector<int64_t> out(r, 1);
    for (size_t i = 0; i < r; ++i) {
      int64_t dx = i < sx.size() ? sx[sx.size() - 1 - i] : 1;
      int64_t dy = i < sy.size() ? sy[sy.size() - 1 - i] : 1;
      out[r - 1 - i] = dx == 1 ? dy : dx;
    }
    return typeOf(x).clone(out);
  }
  Value div(Value x, Value y) {
    return DivOp::create(b, loc, broadcastType(x, y), x, y);
  }
  Value mul(Value x, Value y) {
    return MulOp::create(b, loc, broadcastType(x, y), x, y);
  }
  /// The scale of each element's block: x's largest magnitude over the
  /// other of its last two axes, then over blocks of `tile` along `axis`
  /// (-2 or -1), divided by `qmax` (1 where the block is all zeros). Its
  /// shape is x's with the other axis 1.
  Value blockScale(Value x, int64_t axis, int64_t tile, double qmax) {
    RankedTensorType t = typeOf(x);
    int64_t rank = t.getRank();
    int64_t len = t.getDimSize(rank + axis);
    tile = std::min(tile, std::max<int64_t>(len, 1)); // one block of all
    int64_t other = axis == -2 ? rank - 1 : rank - 2;
    SmallVector<int64_t> batch(t.getShape().drop_back(2));
    SmallVector<int64_t> kept(t.getShape());
    kept[other] = 1;
    Value mag = AbsOp::create(b, loc, x);
    Value amax = ReduceMaxOp::create(b, loc, t.clone(kept), mag,
                                     b.getDenseI64ArrayAttr({other}),
                                     b.getBoolAttr(true));
    // [.., len] padded to whole tiles, as [.., g, tile], its tiles' maxima
    // spread back over [.., len].
    int64_t g = llvm::divideCeil(len, tile);
    auto shape = [&](ArrayRef<int64_t> tail) {
      SmallVector<int64_t> s(batch);
      s.append(tail.begin(), tail.end());
      return s;
    };
    Value v = reshape(amax, shape({len}));
    if (g * tile != len) {
      SmallVector<int64_t> pads(2 * (batch.size() + 1), 0);
      pads.back() = g * tile - len;
      v = PadOp::create(b, loc, typeOf(v).clone(shape({g * tile})), v,
                        b.getDenseI64ArrayAttr(pads), b.getF64FloatAttr(0.0));
    }
    v = reshape(v, shape({g, tile}));
    v = ReduceMaxOp::create(b, loc, typeOf(v).clone(shape({g, 1})), v,
                            b.getDenseI64ArrayAttr({int64_t(batch.size()) + 1}),
                            b.getBoolAttr(true));
    v = BroadcastToOp::create(b, loc, typeOf(v).clone(shape({g, tile})), v);
    v = reshape(v, shape({g * tile}));
    v = slice(v, {len});
    v = reshape(v, kept);
    Type f32 = b.getF32Type();
    RankedTensorType vt = typeOf(v);
    Value nonzero =
        GreaterOp::create(b, loc, vt.clone(b.getI1Type()), v, scalar(0.0, f32));
    Value scaled = div(v, scalar(qmax, f32));
    return SelectOp::create(b, loc, vt, nonzero, scaled, scalar(1.0, f32));
  }
  /// A scale of blockScale's shape turned so that its blocked axis is
  /// `axis` of C (-2: per row, -1: per column).
  Value toAxis(Value s, int64_t axis) {
    SmallVector<int64_t> shape(typeOf(s).getShape());
    int64_t rank = shape.size();
    int64_t len = shape[rank - 2] * shape[rank - 1];
    shape[rank - 2] = axis == -2 ? len : 1;
    shape[rank - 1] = axis == -1 ? len : 1;
    return reshape(s, shape);
  }
  /// x (f32) rounded to precision `p`, as `p`: i8 to the nearest integer
  /// (halves up), clamped to [-127, 127].
  Value round(Value x, Type p) {
    if (!p.isInteger(8))
      return convert(x, p);
    Type f32 = b.getF32Type();
    Value half = AddOp::create(b, loc, typeOf(x), x, scalar(0.5, f32));
    Value fl = FloorOp::create(b, loc, half);
    Value cl = ClampOp::create(b, loc, typeOf(x), fl, b.getF64FloatAttr(-127.0),
                               b.getF64FloatAttr(127.0));
    return convert(cl, p);
  }

  OpBuilder &b;
  Location loc;
  bool tileKernels;
};

struct ExpandPrecisionPlans
    : mlir::tcc::impl::TccExpandPrecisionPlansBase<ExpandPrecisionPlans> {
  using TccExpandPrecisionPlansBase::TccExpandPrecisionPlansBase;
  void runOnOperation() override {
    SmallVector<PlannedMatmulOp> ops;
    getOperation().walk([&](PlannedMatmulOp op) { ops.push_back(op); });
    for (PlannedMatmulOp op : ops) {
      OpBuilder b(op);
      Expander(b, op.getLoc(), tileKernels).expand(op);
    }
  }
};

} // namespace
