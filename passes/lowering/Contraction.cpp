//===- Contraction.cpp - lower tcc.matmul ---------------------------------===//
//
// One linalg.generic over [batch..., M, N, K]: broadcast batch dimensions
// read index 0 and the transposes are just other indexing maps, so nothing
// is materialised before the contraction.
//
//===----------------------------------------------------------------------===//
#include "passes/lowering/Patterns.h"
#include "passes/lowering/Utils.h"

#include "ir/TccOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::lowering;

namespace {

/// The type a matmul with operands of type `in` and result `out`
/// accumulates in: the result's integer type for integers (products and sums
/// wrap the same way in any wider type), else f32, or f64 when either side is
/// f64.
Type accumulatorType(Type in, Type out) {
  if (isa<IntegerType>(in) && isa<IntegerType>(out))
    return out;
  Builder b(in.getContext());
  if (in.isF64() || out.isF64())
    return b.getF64Type();
  return b.getF32Type();
}

/// The indexing map of one operand: its batch dimensions broadcast against
/// the result's, then its two matrix dimensions.
AffineMap operandMap(ArrayRef<int64_t> shape, ArrayRef<int64_t> batch,
                     AffineExpr row, AffineExpr col, unsigned numLoops,
                     MLIRContext *ctx) {
  ArrayRef<int64_t> own = shape.drop_back(2);
  AffineMap b = broadcastMap(own, batch, ctx);
  SmallVector<AffineExpr> exprs(b.getResults());
  exprs.push_back(row);
  exprs.push_back(col);
  return AffineMap::get(numLoops, 0, exprs, ctx);
}

struct MatmulLowering : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType resultType = op.getType();
    ArrayRef<int64_t> outShape = resultType.getShape();
    unsigned rank = outShape.size();
    ArrayRef<int64_t> batch = outShape.drop_back(2);
    Type inElt = tensorTypeOf(op.getA()).getElementType();
    Type acc = accumulatorType(inElt, resultType.getElementType());

    // Loops: batch..., m, n, k.
    unsigned numLoops = rank + 1;
    AffineExpr m = getAffineDimExpr(rank - 2, ctx);
    AffineExpr n = getAffineDimExpr(rank - 1, ctx);
    AffineExpr k = getAffineDimExpr(rank, ctx);
    AffineMap aMap = op.getTransposeA()
                         ? operandMap(tensorTypeOf(op.getA()).getShape(),
                                      batch, k, m, numLoops, ctx)
                         : operandMap(tensorTypeOf(op.getA()).getShape(),
                                      batch, m, k, numLoops, ctx);
    AffineMap bMap = op.getTransposeB()
                         ? operandMap(tensorTypeOf(op.getB()).getShape(),
                                      batch, n, k, numLoops, ctx)
                         : operandMap(tensorTypeOf(op.getB()).getShape(),
                                      batch, k, n, numLoops, ctx);
    SmallVector<AffineExpr> outExprs;
    for (unsigned d = 0; d < rank; ++d)
      outExprs.push_back(getAffineDimExpr(d, ctx));
    AffineMap outMap = AffineMap::get(numLoops, 0, outExprs, ctx);
    SmallVector<utils::IteratorType> iters = parallelIterators(rank);
    iters.push_back(utils::IteratorType::reduction);

    Value init = filledTensor(rewriter, loc, outShape,
                              scalarConstant(rewriter, loc, acc, 0.0));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()},
        ValueRange{op.getA(), op.getB()}, init,
        SmallVector<AffineMap>{aMap, bMap, outMap}, iters,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          ImplicitLocOpBuilder b(nl, nb);
          Value x = convertScalar(b, args[0], acc);
          Value y = convertScalar(b, args[1], acc);
          Value sum;
          if (isa<FloatType>(acc))
            sum = arith::AddFOp::create(b, args[2],
                                        arith::MulFOp::create(b, x, y));
          else
            sum = arith::AddIOp::create(b, args[2],
                                        arith::MulIOp::create(b, x, y));
          linalg::YieldOp::create(b, sum);
        });
    rewriter.replaceOp(op, convertTensor(rewriter, loc, generic.getResult(0),
                                         resultType.getElementType()));
    return success();
  }
};

} // namespace

void mlir::tcc::populateContractionLoweringPatterns(
    RewritePatternSet &patterns) {
  patterns.add<MatmulLowering>(patterns.getContext());
}
