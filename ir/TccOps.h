//===- TccOps.h - tcc dialect ops ---------------------------------*- C++
//-*-===//
#ifndef TCC_IR_TCCOPS_H
#define TCC_IR_TCCOPS_H

#include "ir/TccAttrs.h"
#include "ir/TccDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::OpTrait::tcc {
/// Every result element depends only on operand elements at the same
/// (broadcast) position.
template <typename ConcreteType>
class ElementwiseMap : public TraitBase<ConcreteType, ElementwiseMap> {};
/// The op only moves or copies elements.
template <typename ConcreteType>
class DataMovement : public TraitBase<ConcreteType, DataMovement> {};
/// The op reduces along some axes.
template <typename ConcreteType>
class Reduction : public TraitBase<ConcreteType, Reduction> {};
} // namespace mlir::OpTrait::tcc

#include <optional>

#define GET_OP_CLASSES
#include "ir/TccOps.h.inc"

namespace mlir::tcc {
inline bool isElementwise(Operation *op) {
  return op->hasTrait<OpTrait::tcc::ElementwiseMap>();
}
inline bool isDataMovement(Operation *op) {
  return op->hasTrait<OpTrait::tcc::DataMovement>();
}
inline bool isReduction(Operation *op) {
  return op->hasTrait<OpTrait::tcc::Reduction>();
}

/// A depth-to-space (pixel shuffle) of an NHWC tensor as tcc ops: `input`
/// [n, h, w, sh * sw * c] reshaped to [n, h, w, sh, sw, c], transposed to
/// [n, h, sh, w, sw, c] and reshaped to [n, h * sh, w * sw, c] (the sub-pixel
/// up-convolution's interleave, as tcc-conv-layout writes it).
struct DepthToSpace {
  Value input;
  int64_t factorH, factorW;
  /// The three ops, first to last.
  Operation *ops[3];
};
/// `v` as such a chain whose intermediate values have one use each.
std::optional<DepthToSpace> matchDepthToSpace(Value v);
} // namespace mlir::tcc

#endif // TCC_IR_TCCOPS_H
