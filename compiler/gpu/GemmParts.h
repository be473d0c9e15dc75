//===- GemmParts.h - pieces the GEMM templates share -------------*- C++
//-*-===//
//
// The implicit-GEMM gather (an NHWC convolution's A, GemmGather) and the
// epilogue (bias, residual, ReLU: GemmEpilogue), as emitters both GEMM
// templates (MatmulKernel.cpp's mma.sync one and WgmmaKernel.cpp's) build
// from, so that the two compute the same values the same way.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_GEMMPARTS_H
#define TCC_COMPILER_GPU_GEMMPARTS_H

#include "compiler/gpu/MatmulKernel.h"
#include "compiler/gpu/TemplateUtils.h"

namespace tcc::gpu {

/// `vals` (a vector of accumulators of C row `row`, columns col..col+L-1 of
/// batch `batch`) through epi.elementFn, element by element: the values to
/// store, of epi.outType. `captured`: the kernel's buffers of
/// epi.captured.
mlir::Value applyElementFn(mlir::OpBuilder &b, mlir::Location loc,
                           const GemmEpilogue &epi, mlir::Value vals,
                           mlir::ValueRange captured, mlir::Value batch,
                           mlir::Value row, mlir::Value col);

class GemmParts : protected TemplateBuilder {
protected:
  GemmParts(mlir::OpBuilder &b, mlir::Location loc) : TemplateBuilder(b, loc) {}

  /// One gathered row (an output pixel), in i32: the input offset of its
  /// window's origin (tap 0, channel 0), that origin's input row and column,
  /// and whether the row is inside A (null: no check, or folded into an
  /// input row or column no window reaches, which the padding check
  /// rejects).
  struct GatherRow {
    mlir::Value base, ih, iw, ok;
  };
  /// One column k of A (i32): the tap's row and column offsets, its input
  /// offset from a row's base, and whether k < K (null: no check).
  struct GatherTap {
    mlir::Value dy, dx, off, ok;
  };
  /// Whether some window of a valid pixel leaves the input in rows or in
  /// columns (the padding): then every element is checked.
  static std::pair<bool, bool> gatherChecks(const GemmGather &g);
  /// The rows firstRow + i * rowStep (i32), i < count, of a GEMM of `m`
  /// rows; `needRow`: rows at or past `m` may occur.
  mlir::SmallVector<GatherRow> gatherRows(const GemmGather &g,
                                          mlir::Value firstRow, int64_t rowStep,
                                          int64_t count, int64_t m,
                                          bool needRow);
  /// Column `k` (i32); `check`: k may be at or past K (`kBound`).
  GatherTap gatherTap(const GemmGather &g, mlir::Value k, bool check,
                      int64_t kBound);
  /// Element (row, tap) of A: its offset in the input (index) and whether it
  /// is inside the input (null: always). Outside, the caller reads zero;
  /// the offset is then 0, a valid address.
  std::pair<mlir::Value, mlir::Value>
  gatherSource(const GemmGather &g, const GatherRow &row, const GatherTap &tap);

  /// `vals` (f32 vector of C row `row`, columns col..col+L-1 of batch
  /// `batch`) with `epi` applied: + bias[col], + residual[batch][row][col],
  /// then ReLU. When n % L == 0 it must be called inside the store's bounds
  /// check (it reads whole, aligned vectors); else it reads clamped
  /// elements. `raw` (if given) receives the value before the ReLU.
  mlir::Value gemmEpilogue(const GemmEpilogue &epi, mlir::Value vals,
                           mlir::Value bias, mlir::Value residual,
                           mlir::Value batch, mlir::Value row, mlir::Value col,
                           int64_t m, int64_t n, mlir::Value *raw = nullptr);
};

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_GEMMPARTS_H
