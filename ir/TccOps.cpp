//===- TccOps.cpp - tcc op verifiers --------------------------------------===//
//
// Verifiers check result types against ShapeInference, the same code the
// frontend builds them with, so a hand-written or pass-produced op is held to
// the format's rules.
//
//===----------------------------------------------------------------------===//
#include "ir/TccOps.h"
#include "ir/ShapeInference.h"

#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tcc;

static ::tcc::Shape shapeOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return ::tcc::Shape(t.getShape().begin(), t.getShape().end());
}

static ::tcc::Shape shapeOf(Type ty) {
  auto t = cast<RankedTensorType>(ty);
  return ::tcc::Shape(t.getShape().begin(), t.getShape().end());
}

static std::vector<int64_t> vec(ArrayRef<int64_t> a) {
  return std::vector<int64_t>(a.begin(), a.end());
}

static Type elementType(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// Checks that `shape` is what the op's result type says.
static LogicalResult checkResult(Operation *op, Type resultTy,
                                 const ::tcc::ShapeOrError &expected) {
  if (!expected.ok())
    return op->emitOpError(expected.error);
  ::tcc::Shape got = shapeOf(resultTy);
  if (got != expected.shape)
    return op->emitOpError("result shape ")
           << ::tcc::shapeToString(got) << " should be "
           << ::tcc::shapeToString(expected.shape);
  return success();
}

static LogicalResult checkSameElement(Operation *op, Value a, Value b) {
  if (elementType(a) != elementType(b))
    return op->emitOpError("operand element types differ: ")
           << elementType(a) << " vs " << elementType(b);
  return success();
}

static LogicalResult verifyBinary(Operation *op) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (failed(checkSameElement(op, lhs, rhs)))
    return failure();
  Type resElt =
      cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  bool isCompare = resElt.isInteger(1) && !elementType(lhs).isInteger(1);
  if (!isCompare && resElt != elementType(lhs))
    return op->emitOpError("result element type ")
           << resElt << " differs from the operands' " << elementType(lhs);
  return checkResult(op, op->getResult(0).getType(),
                     ::tcc::broadcastShapes(shapeOf(lhs), shapeOf(rhs)));
}

#define TCC_BINARY_VERIFIER(OP)                                                \
  LogicalResult OP::verify() { return verifyBinary(getOperation()); }
TCC_BINARY_VERIFIER(AddOp)
TCC_BINARY_VERIFIER(SubOp)
TCC_BINARY_VERIFIER(MulOp)
TCC_BINARY_VERIFIER(DivOp)
TCC_BINARY_VERIFIER(MaximumOp)
TCC_BINARY_VERIFIER(MinimumOp)
TCC_BINARY_VERIFIER(PowOp)
TCC_BINARY_VERIFIER(EqualOp)
TCC_BINARY_VERIFIER(NotEqualOp)
TCC_BINARY_VERIFIER(LessOp)
TCC_BINARY_VERIFIER(LessEqualOp)
TCC_BINARY_VERIFIER(GreaterOp)
TCC_BINARY_VERIFIER(GreaterEqualOp)
TCC_BINARY_VERIFIER(AndOp)
TCC_BINARY_VERIFIER(OrOp)
#undef TCC_BINARY_VERIFIER

LogicalResult SelectOp::verify() {
  if (failed(checkSameElement(*this, getA(), getB())))
    return failure();
  if (elementType(getResult()) != elementType(getA()))
    return emitOpError("result element type differs from the operands'");
  auto ab = ::tcc::broadcastShapes(shapeOf(getA()), shapeOf(getB()));
  if (!ab.ok())
    return emitOpError(ab.error);
  return checkResult(*this, getType(),
                     ::tcc::broadcastShapes(shapeOf(getCond()), ab.shape));
}

LogicalResult CastOp::verify() {
  if (shapeOf(getInput()) != shapeOf(getResult()))
    return emitOpError("cast changes the shape");
  return success();
}

/// Whether every value of element type `from` converts to `to` exactly.
static bool convertsExactly(Type from, Type to) {
  auto ff = dyn_cast<FloatType>(from), ft = dyn_cast<FloatType>(to);
  if (ff && ft)
    return llvm::APFloatBase::isRepresentableBy(ff.getFloatSemantics(),
                                                ft.getFloatSemantics());
  auto inf = dyn_cast<IntegerType>(from), it = dyn_cast<IntegerType>(to);
  // Integers are signed (i1, bool, is 0 or 1: exact in any wider one).
  return inf && it && inf.getWidth() <= it.getWidth();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  auto inner = getInput().getDefiningOp<CastOp>();
  if (inner && inner.getInput().getType() == getType() &&
      convertsExactly(elementType(inner.getInput()),
                      elementType(inner.getResult())))
    return inner.getInput();
  return {};
}

/// Whether `v` is a constant whose every element is one.
static bool isConstantOne(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return false;
  if (auto f = dyn_cast<FloatAttr>(c.getValue()))
    return f.getValue().isExactlyValue(1.0);
  auto i = dyn_cast<IntegerAttr>(c.getValue());
  return i && i.getValue().isOne();
}

OpFoldResult MulOp::fold(FoldAdaptor) {
  for (auto [x, c] : {std::pair(getLhs(), getRhs()), {getRhs(), getLhs()}})
    if (x.getType() == getType() && isConstantOne(c))
      return x;
  return {};
}

OpFoldResult DivOp::fold(FoldAdaptor) {
  if (getLhs().getType() == getType() && isConstantOne(getRhs()))
    return getLhs();
  return {};
}

namespace {
/// x + neg(y) (or neg(y) + x) is x - y.
struct AddOfNeg : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [x, n] :
         {std::pair(op.getLhs(), op.getRhs()), {op.getRhs(), op.getLhs()}})
      if (auto neg = n.getDefiningOp<NegOp>()) {
        rewriter.replaceOpWithNewOp<SubOp>(op, op.getType(), x, neg.getInput());
        return success();
      }
    return failure();
  }
};
} // namespace

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<AddOfNeg>(context);
}

LogicalResult ConstantOp::verify() {
  Type elt = elementType(getResult());
  if (getValue().getType() != elt)
    return emitOpError("value type ")
           << getValue().getType() << " differs from the element type " << elt;
  if (!isa<FloatAttr, IntegerAttr>(getValue()))
    return emitOpError("value must be a float or integer attribute");
  return success();
}

LogicalResult IotaOp::verify() {
  int64_t rank = getType().getRank();
  if (getAxis() < 0 || getAxis() >= rank)
    return emitOpError("axis ")
           << getAxis() << " out of range for rank " << rank;
  return success();
}

static LogicalResult verifyReduce(Operation *op, Value input,
                                  ArrayRef<int64_t> axes, bool keepdims) {
  if (!llvm::is_sorted(axes))
    return op->emitOpError("axes must be sorted");
  if (elementType(input) != elementType(op->getResult(0)))
    return op->emitOpError("result element type differs from the input's");
  return checkResult(op, op->getResult(0).getType(),
                     ::tcc::reduceShape(shapeOf(input), vec(axes), keepdims));
}

LogicalResult ReduceSumOp::verify() {
  return verifyReduce(*this, getInput(), getAxes(), getKeepdims());
}
LogicalResult ReduceMaxOp::verify() {
  return verifyReduce(*this, getInput(), getAxes(), getKeepdims());
}
LogicalResult ReduceMinOp::verify() {
  return verifyReduce(*this, getInput(), getAxes(), getKeepdims());
}
LogicalResult ReduceMeanOp::verify() {
  if (!isa<FloatType>(elementType(getInput())))
    return emitOpError("reduce_mean needs a float input");
  return verifyReduce(*this, getInput(), getAxes(), getKeepdims());
}

static LogicalResult verifyArg(Operation *op, Value input, int64_t axis,
                               bool keepdims) {
  return checkResult(op, op->getResult(0).getType(),
                     ::tcc::reduceShape(shapeOf(input), {axis}, keepdims));
}
LogicalResult ArgmaxOp::verify() {
  return verifyArg(*this, getInput(), getAxis(), getKeepdims());
}
LogicalResult ArgminOp::verify() {
  return verifyArg(*this, getInput(), getAxis(), getKeepdims());
}

LogicalResult TopkOp::verify() {
  ::tcc::Shape in = shapeOf(getInput());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= (int64_t)in.size())
    return emitOpError("axis ")
           << axis << " out of range for rank " << in.size();
  if (getK() < 0 || getK() > in[axis])
    return emitOpError("k = ")
           << getK() << " exceeds the axis size " << in[axis];
  if (elementType(getValues()) != elementType(getInput()))
    return emitOpError("values element type differs from the input's");
  in[axis] = getK();
  if (failed(checkResult(*this, getValues().getType(), {in, ""})))
    return failure();
  return checkResult(*this, getIndices().getType(), {in, ""});
}

LogicalResult MatmulOp::verify() {
  if (failed(checkSameElement(*this, getA(), getB())))
    return failure();
  return checkResult(*this, getType(),
                     ::tcc::matmulShape(shapeOf(getA()), shapeOf(getB()),
                                        getTransposeA(), getTransposeB()));
}

/// Whether `t` is a precision a plan may name (docs/precision.md).
static bool isPlanPrecision(Type t) {
  return t.isF32() || t.isBF16() || t.isF16() ||
         isa<Float8E4M3FNType, Float8E5M2Type>(t) || t.isInteger(8);
}

LogicalResult
PrecisionPlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          int64_t tileM, int64_t tileN,
                          ArrayRef<Type> precisions) {
  if (tileM < 1 || tileN < 1)
    return emitError() << "a precision plan's tiles must be at least 1 x 1";
  if (precisions.empty() || precisions.size() > 127)
    return emitError() << "a precision plan names 1 to 127 precisions";
  for (auto [i, t] : llvm::enumerate(precisions)) {
    if (!isPlanPrecision(t))
      return emitError() << "precision " << t
                         << " is not one of f32, bf16, f16, f8E4M3FN, "
                            "f8E5M2, i8";
    if (llvm::is_contained(precisions.take_front(i), t))
      return emitError() << "precision " << t << " is named twice";
  }
  return success();
}

LogicalResult PlannedMatmulOp::verify() {
  if (failed(checkSameElement(*this, getA(), getB())))
    return failure();
  if (elementType(getA()) != elementType(getResult()))
    return emitOpError("the result's element type is not the operands'");
  if (failed(checkResult(*this, getType(),
                         ::tcc::matmulShape(shapeOf(getA()), shapeOf(getB()),
                                            getTransposeA(), getTransposeB()))))
    return failure();
  ArrayRef<int64_t> c = getType().getShape();
  int64_t m = c[c.size() - 2], n = c[c.size() - 1];
  PrecisionPlanAttr plan = getPlan();
  ::tcc::Shape grid = {(m + plan.getTileM() - 1) / plan.getTileM(),
                       (n + plan.getTileN() - 1) / plan.getTileN()};
  if (getCodes().getType().getShape() != ArrayRef<int64_t>(grid))
    return emitOpError("codes should be the tile grid ")
           << ::tcc::shapeToString(grid) << ", not "
           << ::tcc::shapeToString(shapeOf(getCodes()));
  return success();
}

LogicalResult TileMatmulOp::verify() {
  if (failed(checkSameElement(*this, getA(), getB())))
    return failure();
  if (failed(checkResult(*this, getType(),
                         ::tcc::matmulShape(shapeOf(getA()), shapeOf(getB()),
                                            false, getTransposeB()))))
    return failure();
  ArrayRef<int64_t> c = getType().getShape();
  int64_t m = c[c.size() - 2], n = c[c.size() - 1];
  int64_t tm = int64_t(getTileM()), tn = int64_t(getTileN());
  if (tm < 1 || tn < 1)
    return emitOpError("tiles must be at least 1 x 1");
  ::tcc::Shape grid = {(m + tm - 1) / tm, (n + tn - 1) / tn};
  if (shapeOf(getCodes()) != grid)
    return emitOpError("codes should be the tile grid ")
           << ::tcc::shapeToString(grid) << ", not "
           << ::tcc::shapeToString(shapeOf(getCodes()));
  if (getRowScale() && shapeOf(getRowScale()) != ::tcc::Shape{m, 1})
    return emitOpError("row_scale should be [M, 1]");
  if (getColScale() && shapeOf(getColScale()) != ::tcc::Shape{1, n})
    return emitOpError("col_scale should be [1, N]");
  return success();
}

LogicalResult ReshapeOp::verify() {
  if (elementType(getInput()) != elementType(getResult()))
    return emitOpError("reshape changes the element type");
  if (getInput().getType().getNumElements() != getType().getNumElements())
    return emitOpError("reshape changes the number of elements");
  return success();
}

/// A reduction over axes of extent 1 whose result has the input's type
/// (keepdims) is its input: a sum, max, min or mean of one element is that
/// element (a loss's mean over the one row of a [1, C] batch).
static OpFoldResult foldUnitReduction(Value input, ArrayRef<int64_t> axes,
                                      Type resultType) {
  auto t = dyn_cast<RankedTensorType>(input.getType());
  if (!t || t != resultType)
    return {};
  for (int64_t a : axes)
    if (a < 0 || a >= t.getRank() || t.getDimSize(a) != 1)
      return {};
  return input;
}
namespace {
/// A reduction over axes of extent 1 that drops them (keepdims false) is a
/// reshape of its input: one element reduces to itself.
template <typename Op> struct UnitReductionToReshape : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op,
                                PatternRewriter &rewriter) const override {
    auto t = dyn_cast<RankedTensorType>(op.getInput().getType());
    auto rt = dyn_cast<RankedTensorType>(op.getType());
    if (!t || !rt || t == rt || t.getElementType() != rt.getElementType() ||
        t.getNumElements() != rt.getNumElements())
      return failure();
    for (int64_t a : op.getAxes())
      if (a < 0 || a >= t.getRank() || t.getDimSize(a) != 1)
        return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, rt, op.getInput());
    return success();
  }
};
} // namespace

void ReduceSumOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<UnitReductionToReshape<ReduceSumOp>>(context);
}
void ReduceMaxOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<UnitReductionToReshape<ReduceMaxOp>>(context);
}
void ReduceMinOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<UnitReductionToReshape<ReduceMinOp>>(context);
}
void ReduceMeanOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                               MLIRContext *context) {
  results.add<UnitReductionToReshape<ReduceMeanOp>>(context);
}

OpFoldResult ReduceSumOp::fold(FoldAdaptor) {
  return foldUnitReduction(getInput(), getAxes(), getType());
}
OpFoldResult ReduceMaxOp::fold(FoldAdaptor) {
  return foldUnitReduction(getInput(), getAxes(), getType());
}
OpFoldResult ReduceMinOp::fold(FoldAdaptor) {
  return foldUnitReduction(getInput(), getAxes(), getType());
}
OpFoldResult ReduceMeanOp::fold(FoldAdaptor) {
  return foldUnitReduction(getInput(), getAxes(), getType());
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  auto identity = [](ArrayRef<int64_t> perm) {
    for (auto [i, p] : llvm::enumerate(perm))
      if (p != int64_t(i))
        return false;
    return true;
  };
  if (identity(getPerm()))
    return getInput();
  auto inner = getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  // Result dim i is inner's dim perm[i], which is its input's dim
  // innerPerm[perm[i]].
  SmallVector<int64_t> composed;
  for (int64_t p : getPerm())
    composed.push_back(inner.getPerm()[p]);
  if (identity(composed))
    return inner.getInput();
  getInputMutable().assign(inner.getInput());
  setPerm(composed);
  return getResult();
}

LogicalResult TransposeOp::verify() {
  if (elementType(getInput()) != elementType(getResult()))
    return emitOpError("transpose changes the element type");
  return checkResult(
      *this, getType(),
      ::tcc::transposeShape(shapeOf(getInput()), vec(getPerm())));
}

LogicalResult BroadcastToOp::verify() {
  if (elementType(getInput()) != elementType(getResult()))
    return emitOpError("broadcast_to changes the element type");
  ::tcc::Shape target = shapeOf(getResult());
  auto b = ::tcc::broadcastShapes(shapeOf(getInput()), target);
  if (!b.ok() || b.shape != target)
    return emitOpError("cannot broadcast ")
           << ::tcc::shapeToString(shapeOf(getInput())) << " to "
           << ::tcc::shapeToString(target);
  return success();
}

namespace {
/// An element-wise op reading a broadcast_to whose input its other
/// operands broadcast to the same result shape reads the input.
struct BroadcastIntoElementwise : OpRewritePattern<BroadcastToOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastToOp op,
                                PatternRewriter &rewriter) const override {
    bool changed = false;
    for (OpOperand &use : llvm::make_early_inc_range(op->getUses())) {
      Operation *user = use.getOwner();
      if (!user->hasTrait<OpTrait::tcc::ElementwiseMap>() ||
          user->getNumResults() != 1 || user->getNumOperands() < 2)
        continue;
      ::tcc::ShapeOrError shape;
      shape.shape = {};
      bool ok = true;
      for (OpOperand &o : user->getOpOperands()) {
        Value v = &o == &use ? op.getInput() : o.get();
        auto t = dyn_cast<RankedTensorType>(v.getType());
        if (!t) {
          ok = false;
          break;
        }
        shape = ::tcc::broadcastShapes(shape.shape, shapeOf(v));
        if (!shape.ok()) {
          ok = false;
          break;
        }
      }
      if (!ok || shape.shape != shapeOf(user->getResult(0)))
        continue;
      rewriter.modifyOpInPlace(user, [&] { use.set(op.getInput()); });
      changed = true;
    }
    return success(changed);
  }
};
} // namespace

void BroadcastToOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                MLIRContext *context) {
  results.add<BroadcastIntoElementwise>(context);
}

LogicalResult ConcatOp::verify() {
  std::vector<::tcc::Shape> shapes;
  for (Value v : getInputs()) {
    if (elementType(v) != elementType(getResult()))
      return emitOpError("concat inputs have different element types");
    shapes.push_back(shapeOf(v));
  }
  return checkResult(*this, getType(), ::tcc::concatShape(shapes, getAxis()));
}

LogicalResult SliceOp::verify() {
  ::tcc::Shape in = shapeOf(getInput()), out = shapeOf(getResult());
  if (elementType(getInput()) != elementType(getResult()))
    return emitOpError("slice changes the element type");
  if (getStarts().size() != in.size() || getSteps().size() != in.size() ||
      out.size() != in.size())
    return emitOpError("starts and steps need one entry per axis");
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t start = getStarts()[i], step = getSteps()[i], n = out[i];
    if (step == 0)
      return emitOpError("step 0 on axis ") << i;
    if (n == 0)
      continue;
    int64_t last = start + (n - 1) * step;
    if (start < 0 || start >= in[i] || last < 0 || last >= in[i])
      return emitOpError("slice reads outside axis ") << i;
  }
  return success();
}

LogicalResult PadOp::verify() {
  if (elementType(getInput()) != elementType(getResult()))
    return emitOpError("pad changes the element type");
  for (int64_t p : getPads())
    if (p < 0)
      return emitOpError("pads must be non-negative");
  return checkResult(*this, getType(),
                     ::tcc::padShape(shapeOf(getInput()), vec(getPads())));
}

LogicalResult GatherOp::verify() {
  if (elementType(getData()) != elementType(getResult()))
    return emitOpError("gather changes the element type");
  return checkResult(
      *this, getType(),
      ::tcc::gatherShape(shapeOf(getData()), shapeOf(getIndices()), getAxis()));
}

LogicalResult TakeAlongAxisOp::verify() {
  ::tcc::Shape d = shapeOf(getData()), i = shapeOf(getIndices());
  if (elementType(getData()) != elementType(getResult()))
    return emitOpError("take_along_axis changes the element type");
  if (d.size() != i.size())
    return emitOpError("indices must have the rank of data");
  if (getAxis() < 0 || getAxis() >= (int64_t)d.size())
    return emitOpError("axis out of range");
  for (size_t k = 0; k < d.size(); ++k)
    if ((int64_t)k != getAxis() && i[k] != d[k])
      return emitOpError("indices shape ")
             << ::tcc::shapeToString(i) << " differs from data shape "
             << ::tcc::shapeToString(d) << " off the axis";
  return checkResult(*this, getType(), {i, ""});
}

namespace {
/// take_along_axis(f(a, b), idx) -> f(take_along_axis(a, idx), b) for an
/// elementwise f (TakeAlongAxisOp's description). Where f's result has
/// other users, f then also runs on the gathered entries: only where they
/// are at most half its result.
struct TakeThroughElementwise : OpRewritePattern<TakeAlongAxisOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TakeAlongAxisOp take,
                                PatternRewriter &rewriter) const override {
    Operation *def = take.getData().getDefiningOp();
    if (!def || !isElementwise(def) || def->getNumResults() != 1 ||
        def->getNumRegions() != 0)
      return failure();
    auto dataTy = cast<RankedTensorType>(take.getData().getType());
    auto idxTy = cast<RankedTensorType>(take.getIndices().getType());
    if (!dataTy.hasStaticShape() || !idxTy.hasStaticShape())
      return failure();
    if (!def->hasOneUse() &&
        2 * idxTy.getNumElements() > dataTy.getNumElements())
      return failure();
    int64_t axis = take.getAxis();
    SmallVector<Value> operands;
    bool gathered = false;
    for (Value v : def->getOperands()) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t)
        return failure();
      if (t.getShape() == dataTy.getShape()) {
        operands.push_back(TakeAlongAxisOp::create(
            rewriter, take.getLoc(),
            RankedTensorType::get(idxTy.getShape(), t.getElementType()), v,
            take.getIndices(), take.getAxisAttr()));
        gathered = true;
        continue;
      }
      // Broadcast (aligned to the right): constant along the axis, or
      // without it.
      int64_t at = axis - (dataTy.getRank() - t.getRank());
      if (t.getRank() > dataTy.getRank() || (at >= 0 && t.getDimSize(at) != 1))
        return failure();
      operands.push_back(v);
    }
    if (!gathered)
      return failure();
    OperationState state(
        def->getLoc(), def->getName(), operands,
        RankedTensorType::get(idxTy.getShape(),
                              getElementTypeOrSelf(def->getResult(0))),
        def->getAttrs());
    rewriter.replaceOp(take, rewriter.create(state)->getResults());
    return success();
  }
};
} // namespace

void TakeAlongAxisOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                  MLIRContext *context) {
  results.add<TakeThroughElementwise>(context);
}

LogicalResult IndexCheckOp::verify() {
  if (getCount().getType().getRank() != 0)
    return emitOpError("count must be a scalar tensor<i32>");
  if (getBound() < 0)
    return emitOpError("bound must be non-negative");
  return success();
}

static LogicalResult checkBias(Operation *op, Value bias, int64_t channels) {
  if (!bias)
    return success();
  if (shapeOf(bias) != ::tcc::Shape{channels})
    return op->emitOpError("bias must have shape [") << channels << "]";
  if (elementType(bias) != elementType(op->getOperand(0)))
    return op->emitOpError("bias element type differs from the input's");
  return success();
}

LogicalResult Conv2dOp::verify() {
  if (failed(checkSameElement(*this, getInput(), getWeight())))
    return failure();
  auto s = ::tcc::conv2dShape(shapeOf(getInput()), shapeOf(getWeight()),
                              vec(getStrides()), vec(getPads()),
                              vec(getDilations()), getGroups(), getNhwc());
  if (failed(checkResult(*this, getType(), s)))
    return failure();
  return checkBias(*this, getBias(), s.shape[getNhwc() ? 3 : 1]);
}

LogicalResult ConvTranspose2dOp::verify() {
  if (failed(checkSameElement(*this, getInput(), getWeight())))
    return failure();
  auto s = ::tcc::convTranspose2dShape(shapeOf(getInput()),
                                       shapeOf(getWeight()), vec(getStrides()),
                                       vec(getPads()), vec(getDilations()),
                                       vec(getOutputPadding()), getGroups());
  if (failed(checkResult(*this, getType(), s)))
    return failure();
  return checkBias(*this, getBias(), s.shape[1]);
}

LogicalResult MaxPool2dOp::verify() {
  return checkResult(*this, getType(),
                     ::tcc::pool2dShape(shapeOf(getInput()), vec(getKernel()),
                                        vec(getStrides()), vec(getPads()),
                                        getCeilMode(), getNhwc()));
}

LogicalResult AvgPool2dOp::verify() {
  return checkResult(*this, getType(),
                     ::tcc::pool2dShape(shapeOf(getInput()), vec(getKernel()),
                                        vec(getStrides()), vec(getPads()),
                                        getCeilMode(), getNhwc()));
}

LogicalResult GlobalAvgPool2dOp::verify() {
  ::tcc::Shape in = shapeOf(getInput());
  if (in.size() != 4)
    return emitOpError("needs a rank-4 input");
  if (getNhwc())
    return checkResult(*this, getType(), {{in[0], 1, 1, in[3]}, ""});
  return checkResult(*this, getType(), {{in[0], in[1], 1, 1}, ""});
}

LogicalResult BatchNormOp::verify() {
  ::tcc::Shape in = shapeOf(getInput());
  if (in.size() < 2)
    return emitOpError("needs rank >= 2 (channel axis 1)");
  for (Value v : {getScale(), getBias(), getMean(), getVar()}) {
    if (shapeOf(v) != ::tcc::Shape{in[1]})
      return emitOpError("scale, bias, mean and var must have shape [")
             << in[1] << "]";
    if (failed(checkSameElement(*this, getInput(), v)))
      return failure();
  }
  return checkResult(*this, getType(), {in, ""});
}

LogicalResult GroupOp::verify() {
  auto yield = cast<YieldOp>(getBody().front().getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yielded types differ from the result types");
  return success();
}

/// Checks region `r` of attention op `op`: empty, or one block whose
/// arguments are `lead` then the captured tensors' types, ending in a
/// tcc.yield of one `yielded`.
static LogicalResult verifyAttentionRegion(AttentionOp op, Region &r,
                                           StringRef name, ArrayRef<Type> lead,
                                           Type yielded) {
  if (r.empty())
    return success();
  if (!r.hasOneBlock())
    return op.emitOpError() << "'" << name << "' holds more than one block";
  Block &block = r.front();
  SmallVector<Type> want(lead);
  llvm::append_range(want, op.getCaptured().getTypes());
  if (TypeRange(block.getArgumentTypes()) != TypeRange(want)) {
    std::string sig;
    llvm::raw_string_ostream os(sig);
    llvm::interleaveComma(want, os);
    return op.emitOpError() << "'" << name << "' takes (" << sig
                            << "): the indices, then the captured tensors";
  }
  // A block without ops has no terminator to ask for (getTerminator would
  // read past the end).
  auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
  if (!yield || yield.getValues().size() != 1 ||
      yield.getValues()[0].getType() != yielded)
    return op.emitOpError() << "'" << name << "' must yield one " << yielded;
  return success();
}

LogicalResult AttentionOp::verify() {
  auto rankOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  };
  // The result's rank is attention's, unless it is written through
  // o_strides (a reshape of the result's layout: heads merged back): then
  // theirs. An operand read through strides (a view of a larger tensor) may
  // have any rank.
  int64_t rank = getOStrides().empty() ? getResult().getType().getRank()
                                       : int64_t(getOStrides().size());
  auto rankFits = [&](Value v, ArrayRef<int64_t> strides) {
    return !strides.empty() || rankOf(v) == rank;
  };
  if (rank < 2 || rank > 4 || !rankFits(getQ(), getQStrides()) ||
      !rankFits(getK(), getKStrides()) || !rankFits(getV(), getVStrides()))
    return emitOpError("Q, K, V and the result must have one rank, 2 to 4");
  Type elem = elementType(getQ());
  if (!(elem.isBF16() || elem.isF16() || elem.isF32()) ||
      elementType(getK()) != elem || elementType(getV()) != elem ||
      elementType(getResult()) != elem)
    return emitOpError(
        "Q, K, V and the result must be all bf16, all f16 or all f32");
  int64_t sizes[] = {getBatchAttr().getInt(),   getHeadsAttr().getInt(),
                     getKvHeadsAttr().getInt(), getLqAttr().getInt(),
                     getLkAttr().getInt(),      getHeadDimAttr().getInt()};
  if (llvm::any_of(sizes, [](int64_t n) { return n < 1; }) ||
      sizes[1] % sizes[2])
    return emitOpError("sizes must be positive, kv_heads dividing heads");
  // Each operand holds its (batch, heads, length, head_dim) elements, in
  // attention's order when packed (strides name another layout's order).
  auto stridesFit = [&](ArrayRef<int64_t> s, int64_t r,
                        StringRef what) -> LogicalResult {
    if (!s.empty() && int64_t(s.size()) != r)
      return emitOpError() << what
                           << " must be empty (packed) or one per axis (" << r
                           << ")";
    if (llvm::any_of(s, [](int64_t n) { return n < 0; }))
      return emitOpError() << what << " must not be negative";
    return success();
  };
  if (failed(stridesFit(getQStrides(), rank, "q_strides")) ||
      failed(stridesFit(getKStrides(), rank, "k_strides")) ||
      failed(stridesFit(getVStrides(), rank, "v_strides")) ||
      failed(stridesFit(getOStrides(), rank, "o_strides")))
    return failure();
  int64_t lq = sizes[3], lk = sizes[4], hd = sizes[5];
  std::optional<int64_t> valueDim = getValueDim();
  if (valueDim && *valueDim < 1)
    return emitOpError("value_dim must be positive");
  int64_t vd = valueDim.value_or(hd);
  auto holds = [&](Value v, int64_t heads, int64_t rows, int64_t cols,
                   ArrayRef<int64_t> strides, int64_t offset,
                   StringRef what) -> LogicalResult {
    ::tcc::Shape shape = shapeOf(v);
    int64_t want = sizes[0], got = 1;
    bool overflow = false;
    for (int64_t n : {heads, rows, cols})
      overflow |= llvm::MulOverflow(want, n, want);
    for (int64_t n : shape)
      overflow |= llvm::MulOverflow(got, n, got);
    if (offset < 0 || (offset && strides.empty()))
      return emitOpError() << what
                           << "'s offset must be 0, or positive with strides";
    // A view (strides given) reaches offset + sum((n - 1) * stride); the
    // logical shape's leading axes the rank lacks are of size 1.
    if (!overflow && !strides.empty() && int64_t(strides.size()) == rank) {
      int64_t dims[] = {sizes[0], heads, rows, cols};
      int64_t last = offset;
      for (int64_t i = 0; i < rank; ++i) {
        int64_t step;
        overflow |= llvm::MulOverflow(dims[4 - rank + i] - 1,
                                      std::max<int64_t>(strides[i], 0), step);
        overflow |= llvm::AddOverflow(last, step, last);
      }
      if (!overflow && last < got && want <= got)
        return success();
      return emitOpError() << what << " must hold the " << sizes[0] << "x"
                           << heads << "x" << rows << "x" << cols
                           << " elements its strides and offset reach";
    }
    if (overflow || got != want ||
        (strides.empty() &&
         (shape[rank - 2] != rows || shape[rank - 1] != cols)))
      return emitOpError() << what << " must hold " << sizes[0] << "x" << heads
                           << "x" << rows << "x" << cols
                           << " elements (batch, heads, rows, columns), the "
                              "last two axes when packed";
    return success();
  };
  int64_t kRows = getKTransposed() ? hd : lk,
          kCols = getKTransposed() ? lk : hd;
  if (failed(
          holds(getQ(), sizes[1], lq, hd, getQStrides(), getQOffset(), "Q")) ||
      failed(holds(getK(), sizes[2], kRows, kCols, getKStrides(), getKOffset(),
                   "K")) ||
      failed(
          holds(getV(), sizes[2], lk, vd, getVStrides(), getVOffset(), "V")) ||
      failed(
          holds(getResult(), sizes[1], lq, vd, getOStrides(), 0, "the result")))
    return failure();
  if (getMask().size() % 3)
    return emitOpError("mask must hold (a, b, c) triples");
  ArrayRef<int64_t> views = getCapturedViews();
  for (auto [i, c] : llvm::enumerate(views))
    if (c < 0 || c >= int64_t(getCaptured().size()) || (i && c <= views[i - 1]))
      return emitOpError("captured_views must name captured tensors by "
                         "increasing index");
  if (FloatAttr s = getScaleAttr();
      s && !(s.getValueAsDouble() > 0 && std::isfinite(s.getValueAsDouble())))
    return emitOpError("scale must be positive and finite");
  Builder b(getContext());
  Type i32 = b.getI32Type();
  if (failed(verifyAttentionRegion(*this, getScore(), "score",
                                   {b.getF32Type(), i32, i32, i32, i32},
                                   b.getF32Type())) ||
      failed(verifyAttentionRegion(*this, getKeyKeep(), "key_keep",
                                   {i32, i32, i32}, b.getI1Type())))
    return failure();
  if (getScore().empty() && !getScaleAttr())
    return emitOpError("an empty 'score' needs a scale");
  if ((getKeyMaskPerHead() || getKeyMaskAlone()) && getKeyKeep().empty())
    return emitOpError("key_mask_per_head and key_mask_alone need 'key_keep'");
  if (getKeyMaskAlone() && (!getScaleAttr() || getScore().empty()))
    return emitOpError(
        "key_mask_alone needs a scale and the change as 'score' too");
  return success();
}

std::optional<mlir::tcc::DepthToSpace> mlir::tcc::matchDepthToSpace(Value v) {
  auto outer = v.getDefiningOp<ReshapeOp>();
  auto t = outer ? outer.getInput().getDefiningOp<TransposeOp>() : nullptr;
  auto inner = t ? t.getInput().getDefiningOp<ReshapeOp>() : nullptr;
  if (!inner || !inner.getResult().hasOneUse() || !t.getResult().hasOneUse() ||
      t.getPerm() != ArrayRef<int64_t>{0, 1, 3, 2, 4, 5})
    return std::nullopt;
  auto inTy = cast<RankedTensorType>(inner.getInput().getType());
  auto split = cast<RankedTensorType>(inner.getType());
  auto outTy = cast<RankedTensorType>(outer.getType());
  if (inTy.getRank() != 4 || split.getRank() != 6 || outTy.getRank() != 4 ||
      !inTy.hasStaticShape() || !split.hasStaticShape())
    return std::nullopt;
  ArrayRef<int64_t> a = inTy.getShape(), s = split.getShape(),
                    o = outTy.getShape();
  if (s[0] != a[0] || s[1] != a[1] || s[2] != a[2] ||
      s[3] * s[4] * s[5] != a[3] || o[0] != a[0] || o[1] != a[1] * s[3] ||
      o[2] != a[2] * s[4] || o[3] != s[5])
    return std::nullopt;
  return DepthToSpace{inner.getInput(), s[3], s[4], {inner, t, outer}};
}

#define GET_OP_CLASSES
#include "ir/TccOps.cpp.inc"
