//===- Utils.h - helpers shared by the tcc lowering patterns ----*- C++ -*-===//
//
// Scalar numerics (compute types, dtype conversions with the format's rounding
// and saturation rules) and builders for the linalg ops every family emits.
// docs/numerics.md states the rules these helpers implement.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_LOWERING_UTILS_H
#define TCC_PASSES_LOWERING_UTILS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tcc::lowering {

//===----------------------------------------------------------------------===//
// Scalars
//===----------------------------------------------------------------------===//

/// f16, bf16 or one of the f8 types: stored narrow, computed in f32.
bool isNarrowFloat(Type t);
/// f8E4M3FN or f8E5M2, which no backend converts natively.
bool isF8(Type t);
/// The type arithmetic on elements of type `t` runs in: f32 for narrow
/// floats, `t` itself otherwise.
Type computeType(Type t);

/// Converts scalar `v` to type `to` with tcc.cast semantics: floats round to
/// nearest even (f8 saturates, e5m2 keeps infinities), float to int truncates
/// toward zero and saturates with NaN giving 0, ints wrap, anything to i1 is
/// `v != 0`, i1 to a number is 0 or 1.
Value convertScalar(ImplicitLocOpBuilder &b, Value v, Type to);
/// `v` in its compute type (exact).
inline Value toCompute(ImplicitLocOpBuilder &b, Value v) {
  return convertScalar(b, v, computeType(v.getType()));
}

/// The attribute holding `v` as an element of `type`, rounded like
/// tcc.cast (integers: truncated toward zero and saturated, i1: `v != 0`).
TypedAttr scalarAttr(Type type, double v);
/// A scalar arith.constant of `type` holding `v`, see scalarAttr.
Value scalarConstant(OpBuilder &b, Location loc, Type type, double v);
/// An integer or index constant.
Value intConstant(OpBuilder &b, Location loc, Type type, int64_t v);
/// The lowest value of `type` (-inf where it exists, else the most negative
/// finite value or INT_MIN), or the highest one when `highest`.
Value extremeConstant(OpBuilder &b, Location loc, Type type, bool highest);

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

/// tensor.empty of a static shape.
Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elt);
/// A tensor of `shape` holding `scalar` everywhere (linalg.fill).
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Value scalar);

/// A tensor of `shape` holding `input` element i at offsets + i * strides
/// (unit strides when empty) and `padValue` elsewhere, as one linalg.generic
/// that extracts from `input`. (fill + insert_slice would bufferize to a
/// memref.copy, a runtime call for non-contiguous slices unless later
/// canonicalization folds it.)
Value padTensor(OpBuilder &b, Location loc, Value input,
                ArrayRef<int64_t> shape, ArrayRef<int64_t> offsets,
                ArrayRef<int64_t> strides, Value padValue);

/// All-parallel iterator types.
SmallVector<utils::IteratorType> parallelIterators(unsigned n);

/// The indexing map that reads an operand of shape `in` NumPy-broadcast to
/// the iteration space of shape `out`: dimensions are aligned at the end and a
/// size-1 dimension that broadcasts reads index 0.
AffineMap broadcastMap(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                       MLIRContext *ctx);

/// Computes one scalar from the scalars of the operands.
using ScalarFn = function_ref<Value(ImplicitLocOpBuilder &, ValueRange)>;

/// A linalg.generic over `resultType`'s shape whose body yields `fn` of the
/// elements of `inputs`, each broadcast to that shape. `fn` must return a
/// value of the result element type.
Value buildElementwise(OpBuilder &b, Location loc, ValueRange inputs,
                       RankedTensorType resultType, ScalarFn fn);

/// Every element of `t` converted to `elt` with convertScalar.
Value convertTensor(OpBuilder &b, Location loc, Value t, Type elt);

/// Folds an element into an accumulator: (element, accumulator) -> new
/// accumulator.
using CombineFn =
    function_ref<Value(ImplicitLocOpBuilder &, Value elem, Value acc)>;

/// Shape of `in` reduced over `axes` (kept as size 1 when `keepdims`).
SmallVector<int64_t> reducedShape(ArrayRef<int64_t> in, ArrayRef<int64_t> axes,
                                  bool keepdims);

/// A linalg.generic reducing `input` over `axes` with `combine`, each output
/// element starting at `init`. Returns the accumulator tensor (of init's
/// type) with the reduced shape.
Value buildReduction(OpBuilder &b, Location loc, Value input,
                     ArrayRef<int64_t> axes, bool keepdims, Value init,
                     CombineFn combine);

inline RankedTensorType tensorTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

} // namespace mlir::tcc::lowering

#endif // TCC_PASSES_LOWERING_UTILS_H
