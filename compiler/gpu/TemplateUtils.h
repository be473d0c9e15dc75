//===- TemplateUtils.h - helpers the GPU kernel templates share -*- C++ -*-===//
//
// What MatmulKernel.cpp and AttentionKernel.cpp both build the same way: the
// chip limits, the kernel function, index arithmetic, the dynamic shared
// memory and its swizzle, cp.async group commits and the bf16 mma.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_TEMPLATEUTILS_H
#define TCC_COMPILER_GPU_TEMPLATEUTILS_H

#include "compiler/Target.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace tcc::gpu {

/// Whether `bytes` of shared memory fit a block of `target`; when not,
/// `why` names the limit.
inline bool sharedFits(int64_t bytes, const ::tcc::TargetDesc &target,
                       std::string &why) {
  if (bytes <= target.maxSharedPerBlock)
    return true;
  why = "more than the " + std::to_string(target.maxSharedPerBlock / 1024) +
        " KiB of shared memory a block of " + target.name + " may use";
  return false;
}

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// A template kernel's attribute listing the indices of its arguments that
/// are TMA descriptors (CUtensorMap, 128 bytes), to be passed by value.
constexpr llvm::StringLiteral kTensorMapsAttr = "tcc.tensor_maps";

/// After the lowering to the LLVM dialect: gives the arguments that each
/// kernel `llvm.func` under `root` lists in kTensorMapsAttr the attributes of
/// a 128-byte grid-constant parameter (llvm.byval, llvm.align 64,
/// nvvm.grid_constant) and removes the list. Fails, with an error at the
/// function, on an index that is not a pointer argument.
mlir::LogicalResult passTensorMapsByValue(mlir::Operation *root);

/// Loads the dialects the templates build with into `ctx`.
void loadTemplateDialects(mlir::MLIRContext *ctx);

/// Appends `gpu.func @name(args) kernel` with a known block size of
/// `threads` x 1 x 1 to `module` and sets `b`'s insertion point to the start
/// of its body (the caller keeps an InsertionGuard).
mlir::gpu::GPUFuncOp createKernelFunc(mlir::OpBuilder &b,
                                      mlir::gpu::GPUModuleOp module,
                                      llvm::StringRef name,
                                      mlir::TypeRange args, int64_t threads);

/// The base of the templates' kernel builders: small emitters that build at
/// the builder's insertion point.
class TemplateBuilder {
protected:
  TemplateBuilder(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}

  // Index (and i32) arithmetic; constants of 0 and 1 fold away here so that
  // the emitted IR stays readable.
  mlir::Value cst(int64_t v) {
    return mlir::arith::ConstantIndexOp::create(b, loc, v);
  }
  mlir::Value cstI32(int64_t v) {
    return mlir::arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  mlir::Value add(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddIOp::create(b, loc, x, y);
  }
  /// The constant `v` of `x`'s type (index or i32).
  mlir::Value cstLike(mlir::Value x, int64_t v) {
    return x.getType().isIndex() ? cst(v) : cstI32(v);
  }
  mlir::Value add(mlir::Value x, int64_t y) {
    if (!y)
      return x;
    return add(x, cstLike(x, y));
  }
  mlir::Value sub(mlir::Value x, mlir::Value y) {
    return mlir::arith::SubIOp::create(b, loc, x, y);
  }
  mlir::Value mul(mlir::Value x, int64_t y) {
    if (y == 1)
      return x;
    return mlir::arith::MulIOp::create(b, loc, x, cstLike(x, y));
  }
  mlir::Value mul(mlir::Value x, mlir::Value y) {
    return mlir::arith::MulIOp::create(b, loc, x, y);
  }
  mlir::Value div(mlir::Value x, int64_t y) {
    return y == 1 ? x : mlir::arith::DivUIOp::create(b, loc, x, cstLike(x, y));
  }
  mlir::Value rem(mlir::Value x, int64_t y) {
    return mlir::arith::RemUIOp::create(b, loc, x, cstLike(x, y));
  }
  mlir::Value bxor(mlir::Value x, mlir::Value y) {
    return mlir::arith::XOrIOp::create(b, loc, x, y);
  }
  mlir::Value band(mlir::Value x, int64_t y) {
    return mlir::arith::AndIOp::create(b, loc, x, cstLike(x, y));
  }
  mlir::Value cmp(mlir::arith::CmpIPredicate pred, mlir::Value x,
                  mlir::Value y) {
    return mlir::arith::CmpIOp::create(b, loc, pred, x, y);
  }
  mlir::Value ult(mlir::Value x, int64_t y) {
    return cmp(mlir::arith::CmpIPredicate::ult, x, cstLike(x, y));
  }
  /// `x` (index) as i32, for the 32-bit index math of the gathers.
  mlir::Value asI32(mlir::Value x) {
    return mlir::arith::IndexCastUIOp::create(b, loc, b.getI32Type(), x);
  }
  mlir::Value asIndex(mlir::Value x) {
    return mlir::arith::IndexCastUIOp::create(b, loc, b.getIndexType(), x);
  }
  /// x && y, where a null operand means "true" (no check needed).
  mlir::Value land(mlir::Value x, mlir::Value y) {
    if (!x)
      return y;
    if (!y)
      return x;
    return mlir::arith::AndIOp::create(b, loc, x, y);
  }
  /// x || y, where a null `x` means "false" (nothing accumulated yet).
  mlir::Value lor(mlir::Value x, mlir::Value y) {
    if (!x)
      return y;
    return mlir::arith::OrIOp::create(b, loc, x, y);
  }
  mlir::Value select(mlir::Value c, mlir::Value x, mlir::Value y) {
    return mlir::arith::SelectOp::create(b, loc, c, x, y);
  }
  /// Emits `body` under `if (cond)`, or unconditionally when `cond` is null
  /// (nothing to check, as land() returns).
  void whenTrue(mlir::Value cond, llvm::function_ref<void()> body);

  /// The swizzled chunk of chunk `c` in row `r` of a tile with `cpr` 16-byte
  /// chunks a row, as a chunk index from the tile's start. Rows of >= 128
  /// bytes XOR the chunk's low 3 bits with the row; narrower rows share a
  /// 128-byte line and XOR with the line's index, so 8 consecutive rows read
  /// at one column (an ldmatrix phase), and the chunks a cp.async phase
  /// writes, land in 8 distinct 16-byte bank groups either way.
  mlir::Value swizzle(mlir::Value r, mlir::Value c, int64_t cpr);

  /// The output tile (row, column) of block `pid` in a grid of tilesM x
  /// tilesN tiles: blocks walk C in groups of up to 8 tile rows, column by
  /// column, so that the blocks resident at once share A and B panels in L2.
  std::pair<mlir::Value, mlir::Value>
  groupedTile(mlir::Value pid, int64_t tilesM, int64_t tilesN);

  /// The block's `gpu.dynamic_shared_memory` as raw bytes.
  mlir::Value dynamicSharedMemory();
  /// A 1-D view of `elems` elements of type `elemT` at byte `byteOff` of
  /// `raw` (from dynamicSharedMemory).
  mlir::Value sharedView(mlir::Value raw, int64_t elems, mlir::Type elemT,
                         int64_t byteOff);

  /// Closes the pending cp.async copies into one group; returns its token
  /// (the waits only count groups, so any token serves them).
  mlir::Value commitGroup();

  /// An instruction of inline PTX with side effects and a memory clobber
  /// (the synchronisation and TMA copies that the NVVM dialect spells
  /// differently from release to release).
  void ptx(llvm::StringRef text, llvm::StringRef cons = "",
           mlir::ValueRange args = {});
  /// Waits until the phase of mbarrier `bar` (an i32 shared-window address)
  /// with parity `parity` (i32) completed.
  void waitParity(mlir::Value bar, mlir::Value parity);

  /// mma.sync m16n8k16 of bf16 fragments into f32 accumulators (vector<2x2>).
  /// nvgpu.mma.sync does not lower bf16 operands (MLIR 22), so this goes to
  /// nvvm.mma.sync directly: operands as b32 registers holding two bf16 each.
  mlir::Value mmaBf16(mlir::Value aFrag, mlir::Value bFrag, mlir::Value acc);
  /// `frag`'s f32 elements rounded to tf32 (to nearest, ties away), as f32.
  mlir::Value roundToTf32(mlir::Value frag);

  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_TEMPLATEUTILS_H
