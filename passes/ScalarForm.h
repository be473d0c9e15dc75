//===- ScalarForm.h - tcc's elementwise ops as scalar arithmetic -*- C++
//-*-===//
//
// Templates that apply a model's elementwise code per element rebuild each
// tcc op on scalars. Attention's score changes (buildScalarOp) compute floats
// in f32 throughout (casts between float types fold away; the template
// rounds once where it stores). A GEMM's epilogue (buildElementwiseScalar)
// computes each op as the linalg lowering does, rounded to its dtype.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_SCALARFORM_H
#define TCC_PASSES_SCALARFORM_H

#include "ir/TccOps.h"

#include "mlir/IR/Builders.h"

#include <optional>
#include <tuple>

namespace mlir::tcc {

/// The value of a constant of one value (a scalar or a splat), as a double.
std::optional<double> constantValue(Value v);

/// A division by the constant `v`, in f32: (c, 1/c rounded, whether x * (1/c)
/// is exact: c a power of two), when c and 1/c are normal numbers.
std::optional<std::tuple<float, float, bool>> divisorReciprocal(Value v);

/// Whether a tensor of shape `from` broadcasts to `to` (NumPy rules).
bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to);

/// Elementwise ops with a scalar meaning (buildScalarOp builds them), and
/// constants and iotas.
bool isScalarOp(Operation *op);

/// `op` (an isScalarOp other than a constant or an iota) on the scalars
/// `in`, one per operand, of the compute types: f32 for floats, the
/// element type otherwise.
Value buildScalarOp(OpBuilder &b, Location loc, Operation *op, ValueRange in);

/// Whether `op` is an elementwise tcc op other than a source (the ops the
/// linalg lowering computes per element).
bool hasElementwiseScalar(Operation *op);

/// `op` (hasElementwiseScalar) on scalar operands `args` of its operands'
/// element types, giving its result's element type: the same code its
/// linalg lowering runs per element (arithmetic in the compute type, then
/// one rounding), so that a template applying a model's code per element
/// computes what the generic kernels do. Null for other ops.
Value buildElementwiseScalar(OpBuilder &b, Location loc, Operation *op,
                             ValueRange args);

/// Whether `a` and `b` are the same value, or computed alike by ops free of
/// memory effects and regions from values `strip` maps to the same ones
/// (ops cloned apart, such as a mask a fusion copied into two bodies).
/// `strip` sees every value before it is compared (identity: none).
bool sameComputation(Value a, Value b,
                     llvm::function_ref<Value(Value)> strip = nullptr);

} // namespace mlir::tcc

#endif // TCC_PASSES_SCALARFORM_H
