//===- ChainAlgebra.h - corrections of reduction chains ---------*- C++ -*-===//
//
// A reduction chain (tcc.chain) computes reductions R_1..R_n over one axis
// where R_j reduces f_j(x, r_1..r_{j-1}): an expression of the elements and
// of earlier results. Fusing the chain into one pass over the axis (rolling)
// or into chunks reduced in parallel (split-K) computes each R_j with running
// values of the earlier r_i, so an accumulator built with an old r_i must be
// corrected when r_i changes. This file derives that correction from the
// chain's ops, by one rule set (docs/fusion.md):
//
//   f_j = A(r) (x) B(x), with (x) distributing over R_j's reducer:
//     * over +   (sum, mean, P·V):  Scale: acc · A(r_new) / A(r_old),
//                                   A = exp(la(r)) · pa(r)
//     * + over + with a count n:    Shift: acc + n · (a(r_new) - a(r_old))
//     * + over max/min:             Shift: acc + (a(r_new) - a(r_old))
//     * · by exp(..) > 0 over max:  Scale
//   a product of two additive forms under a sum (layer norm's (x - mean)²,
//   cross-entropy's t · (x - lse)): ShiftedProduct, with the auxiliary
//   sums S_u = Σu, S_w = Σw kept next to the accumulator.
//
// The factors A, a are expressions (Expr) over the chain's row values
// (values without the axis), evaluated by an ExprEmitter: tensors for the
// tcc-level rewrite (ChainFusion.cpp), scalars for GPU templates.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_CHAINALGEBRA_H
#define TCC_PASSES_CHAINALGEBRA_H

#include "ir/TccOps.h"
#include "mlir/IR/Builders.h"

#include <memory>
#include <string>

namespace mlir::tcc {

/// An expression over a chain's row values: the factor A(r) or shift a(r)
/// of a reduction's input. Row leaves are chain values that do not vary
/// along the axis; evaluating one rebuilds its ops with the reductions'
/// results replaced by given running values.
struct Expr {
  enum Kind { Zero, One, Row, Add, Sub, Mul, Div, Neg, Exp };
  Kind kind;
  Value row;                            ///< for Row
  std::shared_ptr<const Expr> lhs, rhs; ///< operands of the others
};
using ExprPtr = std::shared_ptr<const Expr>;

/// Builds the values an Expr stands for, one node at a time.
class ExprEmitter {
public:
  virtual ~ExprEmitter() = default;
  /// `row` (a chain value without the axis) at the emitter's running values.
  virtual Value row(Value row) = 0;
  virtual Value constant(double v) = 0;
  /// Kind is Add, Sub, Mul, Div (binary), Neg or Exp (rhs null).
  virtual Value apply(Expr::Kind kind, Value lhs, Value rhs) = 0;
};

/// The value of `e`, null when the emitter failed on a node.
Value evaluate(const ExprPtr &e, ExprEmitter &emitter);

/// How one reduction of a chain is combined.
enum class Reducer { Sum, Mean, Max, Min, Dot };

/// How an accumulator follows the running values its input reads.
enum class CorrectionRule {
  Independent,   ///< reads no running value: plain combine
  Scale,         ///< acc · exp(la(new) - la(old)) · pa(new) / pa(old)
  Shift,         ///< acc + a(new) - a(old), times the count under a sum
  ShiftedProduct ///< Σ(a_u + B_u)(a_w + B_w) with the sums S_u, S_w kept
};

/// One reduction of a chain, in program order.
struct ChainReduction {
  Operation *op = nullptr; ///< reduce_* or the P·V matmul
  Reducer reducer = Reducer::Sum;
  Value input; ///< the reduced tensor (P for P·V), full shape
  Value other; ///< V for P·V
  CorrectionRule rule = CorrectionRule::Independent;
  /// Scale: log factor and plain factor (null: 0 and 1).
  ExprPtr logFactor, plainFactor;
  /// Shift: the additive part; ShiftedProduct: those of u and w.
  ExprPtr shift, shiftU, shiftW;
  /// ShiftedProduct: the factors (full shape) whose sums are kept.
  Value u, w;
  /// Indices of earlier reductions whose results the input reads.
  SmallVector<unsigned> deps;
};

/// The derivation for one chain.
class ChainAlgebra {
public:
  /// Derives the corrections of every reduction of `chain`. On failure,
  /// `reason` is a one-line explanation naming the op and the condition
  /// that failed.
  static std::unique_ptr<ChainAlgebra> derive(ChainOp chain,
                                              std::string &reason);

  ArrayRef<ChainReduction> getReductions() const { return reductions; }
  int64_t getAxis() const { return axis; }
  ArrayRef<int64_t> getSpace() const { return space; }
  /// Index of the reduction `op`, or -1.
  int indexOf(Operation *op) const;
  /// Whether `v` has the axis (its aligned dimension is the axis length).
  bool varies(Value v) const;

  /// Scalar API (GPU templates): the factor by which the accumulator of
  /// reduction `j` (rule Scale) is multiplied when its running values move
  /// from `oldRuns` to `newRuns` (one scalar per reduction, in order; only
  /// those in `deps` are read), or the amount added (rule Shift; under a
  /// sum, per counted element). Null when the factor reads a value other
  /// than the running values and constants.
  Value buildCorrection(OpBuilder &b, Location loc, unsigned j,
                        ValueRange oldRuns, ValueRange newRuns) const;
  /// Scalar API: f_j(element, runs), the contribution of one element to
  /// reduction `j` (for P·V, the weight p multiplying V's row). `element`
  /// stands for the chain's single varying input (the scores); null when
  /// the input reads another varying value (a mask from iotas, a bias).
  Value buildContribution(OpBuilder &b, Location loc, unsigned j, Value element,
                          ValueRange runs) const;
  /// The varying value buildContribution's `element` stands for: the one
  /// leaf of the chain's first reduction input.
  Value getElementLeaf() const { return elementLeaf; }

private:
  SmallVector<ChainReduction> reductions;
  SmallVector<int64_t> space;
  int64_t axis = 0;
  Value elementLeaf;
};

} // namespace mlir::tcc

#endif // TCC_PASSES_CHAINALGEBRA_H
