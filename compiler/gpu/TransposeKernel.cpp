//===- TransposeKernel.cpp - a batched matrix transpose on the GPU --------===//

#include "compiler/gpu/TransposeKernel.h"
#include "compiler/gpu/TemplateUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace tcc::gpu {
namespace {

constexpr int64_t kTile = 32, kRowsPerPass = 8;

class TransposeBuilder : TemplateBuilder {
public:
  TransposeBuilder(OpBuilder &b, Location loc, int64_t rows, int64_t cols,
                   Type elemType)
      : TemplateBuilder(b, loc), rows(rows), cols(cols), elemType(elemType) {}

  void build(Value src, Value dst) {
    Value tid = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
    Value lane = rem(tid, kTile), slot = div(tid, kTile);
    // Blocks walk the tiles row by row in x alone (grid.y would cap the
    // rows at 65535 tiles).
    Value tile = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
    int64_t tilesC = ceilDiv(cols, kTile);
    Value row0 = mul(div(tile, tilesC), kTile);
    Value col0 = mul(rem(tile, tilesC), kTile);
    Value batch = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::z);
    // staged[i][j] at i * (kTile + 1) + j.
    Value staged =
        sharedView(dynamicSharedMemory(), kTile * (kTile + 1), elemType, 0);
    // Reads: a warp takes one source row segment of 32 columns.
    for (int64_t i = 0; i < kTile; i += kRowsPerPass) {
      Value r = add(slot, i);
      Value gr = add(row0, r), gc = add(col0, lane);
      guarded(inBounds(gr, rows, gc, cols), [&] {
        Value v = memref::LoadOp::create(b, loc, src, ValueRange{batch, gr, gc});
        memref::StoreOp::create(b, loc, v, staged,
                                ValueRange{add(mul(r, kTile + 1), lane)});
      });
    }
    mlir::gpu::BarrierOp::create(b, loc);
    // Writes: a warp takes one destination row segment (a source column).
    for (int64_t i = 0; i < kTile; i += kRowsPerPass) {
      Value c = add(slot, i);
      Value gc = add(col0, c), gr = add(row0, lane);
      guarded(inBounds(gr, rows, gc, cols), [&] {
        Value v = memref::LoadOp::create(
            b, loc, staged, ValueRange{add(mul(lane, kTile + 1), c)});
        memref::StoreOp::create(b, loc, v, dst, ValueRange{batch, gc, gr});
      });
    }
  }

private:
  /// The bounds check of (r, c), or null where the sizes are multiples of
  /// the tile and every access is in bounds.
  Value inBounds(Value r, int64_t nr, Value c, int64_t nc) {
    Value ok;
    if (nr % kTile)
      ok = land(ok, ult(r, nr));
    if (nc % kTile)
      ok = land(ok, ult(c, nc));
    return ok;
  }
  void guarded(Value cond, llvm::function_ref<void()> body) {
    if (!cond)
      return body();
    OpBuilder::InsertionGuard g(b);
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  }

  int64_t rows, cols;
  Type elemType;
};

} // namespace

KernelLaunch buildTransposeKernel(OpBuilder &b, mlir::gpu::GPUModuleOp module,
                                  StringRef name, int64_t batch, int64_t rows,
                                  int64_t cols, Type elemType) {
  loadTemplateDialects(b.getContext());
  OpBuilder::InsertionGuard g(b);
  Type srcT = MemRefType::get({batch, rows, cols}, elemType);
  Type dstT = MemRefType::get({batch, cols, rows}, elemType);
  int64_t threads = kTile * kRowsPerPass;
  auto func = createKernelFunc(b, module, name, {srcT, dstT}, threads);
  Block &entry = func.getBody().front();
  Location loc = module.getLoc();
  TransposeBuilder(b, loc, rows, cols, elemType)
      .build(entry.getArgument(0), entry.getArgument(1));
  mlir::gpu::ReturnOp::create(b, loc);
  KernelLaunch launch;
  launch.grid = {ceilDiv(cols, kTile) * ceilDiv(rows, kTile), 1, batch};
  launch.block = {threads, 1, 1};
  launch.sharedBytes =
      kTile * (kTile + 1) * int64_t(elemType.getIntOrFloatBitWidth() / 8);
  return launch;
}

} // namespace tcc::gpu
