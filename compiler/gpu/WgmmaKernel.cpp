//===- WgmmaKernel.cpp - the Hopper warpgroup-MMA GEMM template -----------===//
//
// The kernel, for a block owning C tile (bm, bn), S stages, kT k-tiles:
//
//   prologue: cp.async k-tiles 0..S-3 into stages 0..S-3 (a group each)
//   for kt in [0, kT):
//     cp.async.wait_group S-3 (k-tile kt landed); fence.proxy.async; barrier
//     wgmma.fence; 4 steps of m64nNk16 (k8 for tf32) per 64-row slice;
//     commit
//     cp.async k-tile kt+S-2 into stage (kt-2) % S; commit (maybe empty)
//     wgmma.wait_group 1 (the wgmmas of kt-1 are done)
//   wgmma.wait_group 0; store the accumulators
//
// Why kt+S-2 and not kt+S-1: the wgmmas are asynchronous, so at iteration kt
// those of kt-1 may still read stage (kt-1) % S in the other warpgroup. Each
// warpgroup has waited for its wgmmas of kt-2 before this iteration's
// barrier, so stage (kt-2) % S is free for every thread after it.
// cp.async writes shared memory through the generic proxy and wgmma reads it
// through the async proxy: each thread fences (fence.proxy.async.shared::cta)
// after its copies land and before the barrier.
//
// Shared layout (128-byte swizzle, what the descriptors' mode 1 expects):
// rows of 128 bytes (one k-tile: 64 bf16/f16, 32 tf32 or 128 f8/i8 elements),
// the 16-byte chunk c of row r stored at chunk c ^ (r & 7), 8-row atoms of 1024
// bytes aligned to 1024 bytes (the swizzle is a function of the address bits,
// so the base is aligned at run time). K-major tiles (A [M][K], B [N][K]) are
// tile rows x 128 bytes; B [K][N] (N-major, transposed for wgmma) is tileN/64
// column blocks of 64 k rows x 64 n each.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/WgmmaKernel.h"
#include "compiler/gpu/GemmParts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

using namespace mlir;

namespace tcc::gpu {
namespace {

constexpr int64_t kRowBytes = 128;   // one swizzle row: the k-tile
constexpr int64_t kAtomBytes = 1024; // 8 swizzled rows

int64_t tileABytes(const WgmmaSchedule &s) { return s.tileM * kRowBytes; }
int64_t stageBytes(const WgmmaSchedule &s) {
  return (s.tileM + s.tileN) * kRowBytes;
}
int64_t sharedBytesOf(const WgmmaSchedule &s) {
  // One extra atom so the base can be aligned to 1024 bytes at run time;
  // with TMA, a "stage full" mbarrier per stage after the stages (and, with
  // a producer warpgroup, a "stage empty" one).
  return s.stages * stageBytes(s) + kAtomBytes + (s.tma ? 8 * s.stages : 0) +
         (s.producer ? 16 * s.stages : 0);
}

/// A producer warpgroup's and each computing warpgroup's registers a
/// thread after setmaxnreg: a block of (warpgroups + 1) x 128 threads starts
/// with 65536 / threads each (one block a multiprocessor: a warp of each
/// warpgroup shares a quarter's 16384), the producer keeps few and the rest
/// go to the others (2: 168 -> 40 and 232; 3: 128 -> 24 and 160).
std::pair<int64_t, int64_t> producerRegisters(const WgmmaSchedule &s) {
  int64_t entry = 65536 / (128 * (s.warpgroups + 1)) / 8 * 8;
  int64_t producer = s.warpgroups >= 3 ? 24 : 40;
  int64_t consumer = std::min<int64_t>(
      ((s.warpgroups + 1) * entry - producer) / s.warpgroups / 8 * 8, 256);
  return {producer, consumer};
}

int64_t elemBytesOf(const WgmmaProblem &p) {
  return p.abType.getIntOrFloatBitWidth() / 8;
}

/// The im2col box's lower and upper corner offsets along one spatial dim
/// of `in` input and `out` output positions: from the first window's
/// origin (-pad) to the last's, so that the map's walk visits exactly the
/// output positions of a row before it moves to the next.
std::pair<int64_t, int64_t> im2colCorners(int64_t in, int64_t out,
                                          int64_t stride, int64_t pad) {
  return {-pad, -pad + (out - 1) * stride - (in - 1)};
}

class KernelBuilder : GemmParts {
public:
  KernelBuilder(OpBuilder &b, Location loc, const WgmmaProblem &p,
                const WgmmaSchedule &s, const GemmGather *gather,
                const GemmEpilogue &epi)
      : GemmParts(b, loc), p(p), s(s), gather(gather), epi(epi),
        threads(128 * s.warpgroups), slices(s.tileM / s.warpgroups / 64),
        elemBytes(p.abType.getIntOrFloatBitWidth() / 8),
        tileK(wgmmaTileK(p.abType)), chunkElems(16 / elemBytes) {}

  void build(Value aArg, Value bArg, Value biasArg, Value residualArg,
             Value cArg, Value rawArg);
  /// p.mask: the tile codes and the scales (null where absent).
  void setMask(Value codesArg, Value rowScaleArg, Value colScaleArg) {
    codes = codesArg;
    rowScale = rowScaleArg;
    colScale = colScaleArg;
  }
  /// epi.elementFn's buffers.
  void setCaptured(ValueRange args) {
    captured.assign(args.begin(), args.end());
  }
  /// s.tma: the tensor maps of A (im2col) and B (tiled), generic pointers
  /// to the kernel's by-value parameters.
  void setTensorMaps(Value a, Value b) {
    mapA = a;
    mapB = b;
  }

private:
  Value i64(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  }
  Value toI64(Value index) {
    return arith::IndexCastUIOp::create(b, loc, b.getI64Type(), index);
  }
  void copyTile(bool isA, Value kt, Value stage);
  /// copyTile of a gathered A (a convolution's window elements).
  void copyGatheredA(Value kt, Value stage);
  /// Copies this block's k-tile `kt` (from kBase) into stage `stage`.
  void copyStage(Value kt, Value stage) {
    Value k = add(kBase, kt);
    copyTile(/*isA=*/true, k, stage);
    copyTile(/*isA=*/false, k, stage);
  }
  /// The descriptor `stageDesc` moved by `off` bytes (a multiple of 16): the
  /// start address, in 16-byte units, fills its low bits.
  Value descriptor(Value stageDesc, int64_t off) {
    return arith::AddIOp::create(b, loc, stageDesc, i64(off / 16));
  }
  /// One k-tile's wgmmas into `acc`; with `fresh`, the first discards
  /// what `acc` held (scale-d 0).
  SmallVector<Value> mmaStep(Value stage, ValueRange acc, bool fresh = false);
  /// acc + part, element by element (the promotion of an f8 k-tile's sum).
  SmallVector<Value> addAccumulators(ValueRange acc, ValueRange part);
  void epilogue(ValueRange acc);

  /// s.tma or s.producer: the shared-window address (i32) of stage
  /// `stage`'s "full" mbarrier; with a producer, of its "empty" one.
  Value fullBarrier(Value stage) { return asI32(add(barBase, mul(stage, 8))); }
  Value emptyBarrier(Value stage) {
    return asI32(add(barBase, add(mul(stage, 8), 8 * s.stages)));
  }
  /// A barrier of the computing threads: the block's, or (with a producer
  /// warpgroup, which never reaches it) named barrier 1 of theirs alone.
  void consumerBarrier() {
    if (s.producer)
      ptx("bar.sync 1, " + std::to_string(threads) + ";");
    else
      mlir::gpu::BarrierOp::create(b, loc);
  }
  /// s.tma or s.producer: thread 0 sets up the stages' mbarriers ("full",
  /// and with a producer "empty"), then the block's barrier.
  void initStageBarriers(Value isThread0) {
    whenTrue(isThread0, [&] {
      for (int64_t st = 0; st < s.stages; ++st) {
        ptx("mbarrier.init.shared::cta.b64 [$0], 1;", "r",
            fullBarrier(cst(st)));
        if (s.producer)
          ptx("mbarrier.init.shared::cta.b64 [$0], " +
                  std::to_string(4 * s.warpgroups) + ";",
              "r", emptyBarrier(cst(st)));
      }
    });
    mlir::gpu::BarrierOp::create(b, loc);
  }
  /// Waits until stage kt % S holds k-tile kt: its "full" mbarrier's phase
  /// kt / S completed.
  void waitStageFull(Value kt) {
    waitParity(fullBarrier(rem(kt, s.stages)),
               asI32(band(div(kt, s.stages), 1)));
  }
  /// s.producer: the producer thread's copy of k-tile `kt` (from kBase)
  /// into stage `stage` by TMA, completing on its "full" mbarrier.
  void tmaPlainStage(Value kt, Value stage);
  /// s.producer: the producer warpgroup's loop (its first thread keeps the
  /// stages filled), and the computing warpgroups' loops.
  void producerLoop(Value myTiles);
  SmallVector<Value> consumerLoop(Value myTiles);
  /// Thread 0: k-tile `kt` (from kBase) into stage `stage` by TMA, both
  /// copies completing on the stage's mbarrier.
  void tmaStage(Value kt, Value stage);

  const WgmmaProblem &p;
  const WgmmaSchedule &s;
  const GemmGather *gather; // null: A is a matrix
  GemmEpilogue epi;
  int64_t threads, slices;
  int64_t elemBytes, tileK, chunkElems; // chunkElems: elements in 16 bytes
  Type accT; // the struct of one m64nN accumulator
  Value a, bm, c;
  Value c2;                     // the values before the ReLU (or null)
  Value bias, residual;         // the epilogue's (or null)
  SmallVector<GatherRow> gRows; // a gathered A's rows this thread copies
  Value smem;         // the aligned stages, as 16-bit elements
  Value rawSmem;      // the dynamic shared memory, as bytes
  Value descA, descB; // descriptors of stage 0's A and B tiles
  Value tid, wg, wgTid;
  Value blockM0, blockN0;
  Value codes, rowScale, colScale; // p.mask's buffers
  SmallVector<Value> captured;     // epi.elementFn's buffers
  Value batchA, batchB, batchC; // this block's matrix of each operand
  // Split-K (s.splitK > 1): c is the f32 partials, batchC this block's
  // split, kBase its first k-tile.
  bool partial = false;
  Value kBase;
  // s.tma: the maps, the mbarriers' shared-window address (index) and the
  // input coordinates (i32) of the block's first output pixel's window.
  Value mapA, mapB, barBase, stageBase;
  Value tileW, tileH, tileN;
};

void KernelBuilder::tmaStage(Value kt, Value stage) {
  const GemmGather &g = *gather;
  // One k-tile is one tap's channels [cb * 64, cb * 64 + 64): K runs over
  // (tap row, tap column, channel) and the channels are a multiple of it.
  int64_t cBlocks = g.c / tileK;
  Value k = asI32(add(kBase, kt));
  Value tap = div(k, cBlocks), cb = rem(k, cBlocks);
  Value offH = mul(div(tap, g.kw), g.dilationH);
  Value offW = mul(rem(tap, g.kw), g.dilationW);
  Value bar = fullBarrier(stage);
  // The boxes' bytes count in full, the zeros past the edges too.
  ptx("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], " +
          std::to_string(stageBytes(s)) + ";",
      "r", bar);
  Value dstA = asI32(add(stageBase, mul(stage, stageBytes(s))));
  Value dstB = add(dstA, cstI32(tileABytes(s)));
  auto i16 = [&](Value v) {
    return arith::TruncIOp::create(b, loc, b.getI16Type(), v);
  };
  // tileM pixels from the block's first, each shifted by the tap.
  ptx("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::"
      "complete_tx::bytes [$0], [$1, {$2, $3, $4, $5}], [$6], {$7, $8};",
      "r,l,r,r,r,r,r,h,h",
      ValueRange{dstA, mapA, mul(cb, tileK), tileW, tileH, tileN, bar,
                 i16(offW), i16(offH)});
  ptx("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
      "complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
      "r,l,r,r,r", ValueRange{dstB, mapB, mul(k, tileK), asI32(blockN0), bar});
}

void KernelBuilder::tmaPlainStage(Value kt, Value stage) {
  // The maps are 3-D (K or N innermost, then rows, then the batch); the
  // boxes' bytes count in full, the zeros past the edges too.
  Value bar = fullBarrier(stage);
  ptx("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], " +
          std::to_string(stageBytes(s)) + ";",
      "r", bar);
  Value dstA = asI32(add(stageBase, mul(stage, stageBytes(s))));
  Value dstB = add(dstA, cstI32(tileABytes(s)));
  Value k0 = asI32(mul(add(kBase, kt), tileK));
  auto copy = [&](Value dst, Value map, Value inner, Value outer, Value batch) {
    ptx("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::"
        "complete_tx::bytes [$0], [$1, {$2, $3, $4}], [$5];",
        "r,l,r,r,r,r", ValueRange{dst, map, inner, outer, batch, bar});
  };
  copy(dstA, mapA, k0, asI32(blockM0), asI32(batchA));
  if (p.transB) {
    copy(dstB, mapB, k0, asI32(blockN0), asI32(batchB));
    return;
  }
  // B [K][N]: column blocks of 64 n (128 bytes) by the k-tile's rows.
  for (int64_t cb = 0; cb < s.tileN / 64; ++cb)
    copy(add(dstB, cstI32(cb * tileK * kRowBytes)), mapB,
         asI32(add(blockN0, cb * 64)), k0, asI32(batchB));
}

void KernelBuilder::copyTile(bool isA, Value kt, Value stage) {
  if (isA && gather)
    return copyGatheredA(kt, stage);
  // K-major tiles are rows x 8 chunks; B [K][N] is 64 k rows x tileN/8
  // chunks, chunk cn going to column block cn / 8.
  bool kMajor = isA || p.transB;
  int64_t rows = kMajor ? (isA ? s.tileM : s.tileN) : tileK;
  int64_t cpr = kMajor ? 8 : s.tileN / chunkElems;
  Value src = isA ? a : bm;
  Value batch = isA ? batchA : batchB;
  Value kOff = mul(kt, tileK);
  Value mnOff = isA ? blockM0 : blockN0;
  int64_t base = isA ? 0 : tileABytes(s);
  Value stageOff = mul(stage, stageBytes(s));
  // Edge tiles: a chunk past the matrix is filled with zeros (cp.async with
  // no source bytes) from a clamped, valid address. The rows are 16-byte
  // aligned (wgmmaKernelSupports), so a chunk is all in or all out. Sizes
  // that are multiples of the tile get no checks.
  int64_t rowBound = kMajor ? (isA ? p.m : p.n) : p.k;
  int64_t colBound = kMajor ? p.k : p.n;
  bool needRow = rowBound % rows != 0;
  bool needCol = colBound % (kMajor ? tileK : s.tileN) != 0;
  for (int64_t i = 0; i < rows * cpr / threads; ++i) {
    Value id = add(tid, i * threads);
    Value r = div(id, cpr), cn = rem(id, cpr);
    Value blockOff = kMajor ? cst(0) : mul(div(cn, 8), tileK * kRowBytes);
    Value chunk = kMajor ? cn : rem(cn, 8);
    Value dstByte =
        add(add(stageOff, blockOff),
            add(mul(r, kRowBytes), mul(bxor(chunk, band(r, 7)), 16)));
    dstByte = add(dstByte, base);
    Value row = add(kMajor ? mnOff : kOff, r);
    Value col = add(kMajor ? kOff : mnOff, mul(cn, chunkElems));
    Value rowOk = needRow ? ult(row, rowBound) : Value();
    Value colOk = needCol ? ult(col, colBound) : Value();
    Value ok = land(rowOk, colOk);
    Value zero = cst(0);
    Value srcElems = ok ? select(ok, cst(chunkElems), zero) : Value();
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), smem,
        ValueRange{div(dstByte, elemBytes)}, src,
        ValueRange{batch, rowOk ? select(rowOk, row, zero) : row,
                   colOk ? select(colOk, col, zero) : col},
        b.getIndexAttr(chunkElems), srcElems, b.getUnitAttr());
  }
}

// Thread t copies chunk t % 8 of rows t / 8 + i * threads / 8 (as copyTile
// does), so its k within a k-tile is fixed: one tap per k-tile (C is a
// multiple of the chunk: wgmmaShapeValid), and the rows' pixels were
// decomposed once (gRows).
void KernelBuilder::copyGatheredA(Value kt, Value stage) {
  Value cn = rem(tid, 8);
  Value k = add(mul(asI32(kt), tileK), mul(asI32(cn), chunkElems));
  GatherTap tap = gatherTap(*gather, k, p.k % tileK != 0, p.k);
  Value stageOff = mul(stage, stageBytes(s));
  Value r0 = div(tid, 8);
  for (int64_t i = 0; i < int64_t(gRows.size()); ++i) {
    Value r = add(r0, i * threads / 8);
    Value dstByte =
        add(stageOff, add(mul(r, kRowBytes), mul(bxor(cn, band(r, 7)), 16)));
    auto [off, ok] = gatherSource(*gather, gRows[i], tap);
    Value srcElems = ok ? select(ok, cst(chunkElems), cst(0)) : Value();
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), smem,
        ValueRange{div(dstByte, elemBytes)}, a, ValueRange{off},
        b.getIndexAttr(chunkElems), srcElems, b.getUnitAttr());
  }
}

SmallVector<Value> KernelBuilder::addAccumulators(ValueRange acc,
                                                  ValueRange part) {
  SmallVector<Value> out;
  for (auto [a, q] : llvm::zip(acc, part)) {
    Value sum = a;
    for (int64_t j = 0; j < s.tileN / 2; ++j) {
      Value x = LLVM::ExtractValueOp::create(b, loc, a, j);
      Value y = LLVM::ExtractValueOp::create(b, loc, q, j);
      sum = LLVM::InsertValueOp::create(b, loc, sum,
                                        arith::AddFOp::create(b, loc, x, y), j);
    }
    out.push_back(sum);
  }
  return out;
}

SmallVector<Value> KernelBuilder::mmaStep(Value stage, ValueRange acc,
                                          bool fresh) {
  MLIRContext *ctx = b.getContext();
  Value stageUnits = toI64(mul(stage, stageBytes(s) / 16));
  Value dA = arith::AddIOp::create(b, loc, descA, stageUnits);
  Value dB = arith::AddIOp::create(b, loc, descB, stageUnits);
  // This warpgroup's rows start at wg * tileM / warpgroups.
  Value wgRows = toI64(mul(wg, s.tileM / s.warpgroups * kRowBytes / 16));
  dA = arith::AddIOp::create(b, loc, dA, wgRows);
  NVVM::WGMMATypes abT =
      p.abType.isBF16()                 ? NVVM::WGMMATypes::bf16
      : p.abType.isF16()                ? NVVM::WGMMATypes::f16
      : isa<Float8E4M3FNType>(p.abType) ? NVVM::WGMMATypes::e4m3
      : isa<Float8E5M2Type>(p.abType)   ? NVVM::WGMMATypes::e5m2
      : p.abType.isInteger(8)           ? NVVM::WGMMATypes::s8
                                        : NVVM::WGMMATypes::tf32;
  // i8 accumulates exactly in i32, wrapping (128^2 x K stays inside i32
  // for K below 131,072).
  bool integer = p.abType.isInteger(8);
  NVVM::WGMMATypes dT = integer ? NVVM::WGMMATypes::s32 : NVVM::WGMMATypes::f32;
  auto overflow =
      integer
          ? NVVM::MMAIntOverflowAttr::get(ctx, NVVM::MMAIntOverflow::wrapped)
          : NVVM::MMAIntOverflowAttr();
  // One wgmma reads 32 bytes of K: k16 of 16-bit elements, k8 of tf32,
  // k32 of 8-bit floats and integers.
  int64_t mmaK = 32 / elemBytes;
  auto typeAttr = [&](NVVM::WGMMATypes t) {
    return NVVM::WGMMATypesAttr::get(ctx, t);
  };
  auto one = NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one);
  // "col" for B is K-major (B^T rows); "row" is N-major, wgmma's transpose.
  auto layoutB = NVVM::MMALayoutAttr::get(ctx, p.transB ? NVVM::MMALayout::col
                                                        : NVVM::MMALayout::row);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  SmallVector<Value> out(acc.begin(), acc.end());
  for (int64_t ks = 0; ks < tileK / mmaK; ++ks) {
    // k step ks: 32 bytes along a K-major row, or 16 k rows of B [K][N].
    int64_t bStep = p.transB ? ks * 32 : ks * 16 * kRowBytes;
    Value db = descriptor(dB, bStep);
    for (int64_t i = 0; i < slices; ++i) {
      Value da = descriptor(dA, i * 64 * kRowBytes + ks * 32);
      out[i] = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, accT, out[i], da, db,
          NVVM::MMAShapeAttr::get(ctx, 64, s.tileN, mmaK), typeAttr(abT),
          typeAttr(abT), typeAttr(dT),
          NVVM::WGMMAScaleOutAttr::get(ctx, fresh && ks == 0
                                                ? NVVM::WGMMAScaleOut::zero
                                                : NVVM::WGMMAScaleOut::one),
          one, one, NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
          layoutB, overflow);
    }
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return out;
}

void KernelBuilder::producerLoop(Value myTiles) {
  // Stage kt % S takes k-tile kt once its use by k-tile kt - S is over (the
  // "empty" phase of that use, (kt / S - 1) % 2, completed).
  whenTrue(cmp(arith::CmpIPredicate::eq, tid, cst(threads)), [&] {
    auto loop = scf::ForOp::create(b, loc, cst(0), myTiles, cst(1));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value stage = rem(kt, s.stages);
    whenTrue(cmp(arith::CmpIPredicate::uge, kt, cst(s.stages)), [&] {
      waitParity(emptyBarrier(stage),
                 asI32(band(sub(div(kt, s.stages), cst(1)), 1)));
    });
    tmaPlainStage(kt, stage);
  });
}

SmallVector<Value> KernelBuilder::consumerLoop(Value myTiles) {
  Value laneZero = cmp(arith::CmpIPredicate::eq, rem(tid, 32), cst(0));
  // Each computing warp's first thread hands a stage back once the warp's
  // wgmmas reading it are done (the "empty" mbarrier counts 4 per
  // warpgroup).
  auto release = [&](Value kt) {
    whenTrue(laneZero, [&] {
      ptx("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [$0];\n}", "r",
          emptyBarrier(rem(kt, s.stages)));
    });
  };
  Value zeroAcc = LLVM::ZeroOp::create(b, loc, accT);
  if (s.promote == 0) {
    // A k-tile's wgmmas run while the next one's are issued; the stage of
    // k-tile kt - 1 goes back once they are done.
    auto loop = scf::ForOp::create(b, loc, cst(0), myTiles, cst(1),
                                   SmallVector<Value>(slices, zeroAcc));
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(loop.getBody());
      Value kt = loop.getInductionVar();
      waitStageFull(kt);
      SmallVector<Value> acc =
          mmaStep(rem(kt, s.stages), loop.getRegionIterArgs());
      NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(1));
      whenTrue(cmp(arith::CmpIPredicate::ugt, kt, cst(0)),
               [&] { release(sub(kt, cst(1))); });
      scf::YieldOp::create(b, loc, acc);
    }
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(0));
    return SmallVector<Value>(loop.getResults());
  }
  // Runs of `promote` k-tiles, each summed into fresh registers (zeros,
  // added to) and added to the sums once all are done; the stages go back
  // then. (Starting the second warpgroup's runs half a run later, so that
  // one's wait falls while the other's wgmmas run, measured slower: 0.130
  // ms against 0.120 at 4096^3 on the H100, session 41.)
  int64_t run = s.promote;
  Value runs = div(add(myTiles, cst(run - 1)), run);
  std::optional<int64_t> staticTiles = getConstantIntValue(myTiles);
  auto loop = scf::ForOp::create(b, loc, cst(0), runs, cst(1),
                                 SmallVector<Value>(slices, zeroAcc));
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  Value first = mul(loop.getInductionVar(), run);
  SmallVector<Value> part(slices, zeroAcc);
  SmallVector<Value> valid(run);
  for (int64_t r = 0; r < run; ++r) {
    Value kt = add(first, r);
    // Only the last run may end past the last k-tile.
    bool always = r == 0 || (staticTiles && *staticTiles % run == 0);
    if (always) {
      waitStageFull(kt);
      part = mmaStep(rem(kt, s.stages), part);
      continue;
    }
    valid[r] = cmp(arith::CmpIPredicate::ult, kt, myTiles);
    SmallVector<Type> types(slices, accT);
    auto ifOp = scf::IfOp::create(b, loc, types, valid[r], /*withElse=*/true);
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    waitStageFull(kt);
    scf::YieldOp::create(b, loc, mmaStep(rem(kt, s.stages), part));
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    scf::YieldOp::create(b, loc, part);
    b.setInsertionPointAfter(ifOp);
    part.assign(ifOp.getResults().begin(), ifOp.getResults().end());
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(0));
  for (int64_t r = 0; r < run; ++r)
    whenTrue(valid[r], [&] { release(add(first, r)); });
  scf::YieldOp::create(b, loc, addAccumulators(loop.getRegionIterArgs(), part));
  b.setInsertionPointAfter(loop);
  return SmallVector<Value>(loop.getResults());
}

void KernelBuilder::epilogue(ValueRange acc) {
  // m64nN f32 fragment: thread (warp w, lane l) holds, for each 8 columns j,
  // rows 16w + l/4 (elements 4j, 4j+1) and +8 (4j+2, 4j+3) at columns
  // 8j + 2(l%4) + {0, 1}.
  Value warp = div(wgTid, 32), lane = rem(wgTid, 32);
  Value row0 = add(add(blockM0, mul(wg, s.tileM / s.warpgroups)),
                   add(mul(warp, 16), div(lane, 4)));
  Value col0 = add(blockN0, mul(rem(lane, 4), 2));
  // i8's accumulators are i32 and C is i32 (wgmmaShapeValid): no conversion.
  Type accElem = p.abType.isInteger(8) ? Type(b.getI32Type()) : b.getF32Type();
  VectorType pairT = VectorType::get({2}, accElem);
  Type cT = partial ? b.getF32Type() : epi.storedType(p.cType);
  VectorType outT = VectorType::get({2}, cT);
  bool epilogueOps = !partial && (epi.biasType || epi.residualType || epi.relu);
  // The stored values, and in `raw` (epi.rawOut) those before the ReLU or
  // (epi.copyOut) the same again, for the second buffer.
  Value raw;
  auto finish = [&](Value v, Value row, Value col) {
    if (p.mask) {
      // A planned precision's tile: the i32 sum converted, the block
      // scales multiplied in (row then column, in f32).
      if (isa<IntegerType>(accElem))
        v = arith::SIToFPOp::create(b, loc,
                                    VectorType::get({2}, b.getF32Type()), v);
      VectorType f2 = VectorType::get({2}, b.getF32Type());
      if (rowScale) {
        Value r = memref::LoadOp::create(b, loc, rowScale, ValueRange{row});
        v = arith::MulFOp::create(b, loc, v,
                                  vector::BroadcastOp::create(b, loc, f2, r));
      }
      if (colScale) {
        // The pair's second column may lie past N (N odd): clamped, and
        // then not stored.
        Value c1 = arith::MinUIOp::create(b, loc, add(col, 1), cst(p.n - 1));
        Value s0 = memref::LoadOp::create(b, loc, colScale, ValueRange{col});
        Value s1 = memref::LoadOp::create(b, loc, colScale, ValueRange{c1});
        v = arith::MulFOp::create(
            b, loc, v,
            vector::FromElementsOp::create(b, loc, f2, ValueRange{s0, s1}));
      }
      return v;
    }
    if (epi.elementFn && !partial)
      return applyElementFn(b, loc, epi, v, captured, batchC, row, col);
    if (epilogueOps)
      v = gemmEpilogue(epi, v, bias, residual, batchC, row, col, p.m, p.n,
                       epi.rawOut ? &raw : nullptr);
    if (cT.getIntOrFloatBitWidth() == 16) {
      v = arith::TruncFOp::create(b, loc, outT, v);
      if (raw)
        raw = arith::TruncFOp::create(b, loc, outT, raw);
    }
    if (epi.copyOut)
      raw = v;
    return v;
  };
  // C's indices (a shuffled C's pixel and channel); the second buffer's are
  // the GEMM's own.
  auto at = [&](Value mem, Value row, Value col) -> SmallVector<Value, 3> {
    if (mem == c)
      return gemmOutIndices(b, loc, epi, p.n, batchC, row, col);
    return {batchC, row, col};
  };
  // Edge tiles store only what lies inside C: a pair of columns is all in or
  // all out when N is even; when N is odd each element is checked (and the
  // pairs would not be aligned anyway).
  bool needRow = p.m % s.tileM != 0, needCol = p.n % s.tileN != 0;
  bool pairs = p.n % 2 == 0;
  // 16-bit results of rows of whole 16-byte chunks go through shared
  // memory: each thread's pairs land in the block's tile there, then each
  // thread stores 16 bytes at a time, eight threads a 128-byte row segment
  // (pairs from the fragments wrote 8 rows x 16 bytes an instruction: U-Net's
  // 256x256 layers spent about a third of their time storing).
  bool staged = !partial && !epi.rawOut && cT.getIntOrFloatBitWidth() == 16 &&
                p.n % 8 == 0;
  int64_t stagedRow = s.tileN + 8; // 16 bytes apart: no bank conflicts
  Value cTile;
  if (staged) {
    cTile = sharedView(rawSmem, s.tileM * stagedRow, cT, 0);
    // Every warpgroup's wgmmas (and the copies) are done with the stages.
    consumerBarrier();
  }
  for (int64_t i = 0; i < slices; ++i) {
    for (int64_t j = 0; j < s.tileN / 8; ++j) {
      for (int64_t h = 0; h < 2; ++h) {
        SmallVector<Value> e;
        for (int64_t x = 0; x < 2; ++x)
          e.push_back(LLVM::ExtractValueOp::create(
              b, loc, acc[i], ArrayRef<int64_t>{4 * j + 2 * h + x}));
        Value vec = vector::FromElementsOp::create(b, loc, pairT, e);
        Value row = add(row0, i * 64 + h * 8);
        Value col = add(col0, j * 8);
        Value rowOk = needRow ? ult(row, p.m) : Value();
        if (staged) {
          // Rows and columns outside C stay unwritten: never stored.
          whenTrue(land(rowOk, needCol ? ult(col, p.n) : Value()), [&] {
            Value out = finish(vec, row, col);
            Value slot =
                add(mul(sub(row, blockM0), stagedRow), sub(col, blockN0));
            vector::StoreOp::create(
                b, loc, out, cTile, ValueRange{slot},
                /*nontemporal=*/false,
                llvm::Align(cT.getIntOrFloatBitWidth() / 4));
          });
          continue;
        }
        if (pairs) {
          // The epilogue's reads go inside the check (gemmEpilogue).
          whenTrue(land(rowOk, needCol ? ult(col, p.n) : Value()), [&] {
            Value out = finish(vec, row, col);
            // A pair at an even column of rows of even length (or of an
            // even outStride) is aligned to its size: one store, not two
            // 16-bit ones (U-Net's 256x256 layers took 29 us with those
            // and 22 with these, session 26).
            int64_t pairBytes = cT.getIntOrFloatBitWidth() / 4;
            for (auto [v, mem] : {std::pair(out, c), std::pair(raw, c2)})
              if (v)
                vector::StoreOp::create(b, loc, v, mem, at(mem, row, col),
                                        /*nontemporal=*/false,
                                        llvm::Align(pairBytes));
          });
          continue;
        }
        Value out = finish(vec, row, col);
        for (int64_t x = 0; x < 2; ++x) {
          Value cx = add(col, x);
          whenTrue(land(rowOk, ult(cx, p.n)), [&] {
            for (auto [v, mem] : {std::pair(out, c), std::pair(raw, c2)})
              if (v)
                memref::StoreOp::create(
                    b, loc,
                    vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{x}),
                    mem, at(mem, row, cx));
          });
        }
      }
    }
  }
  if (!staged)
    return;
  consumerBarrier();
  // Eight threads a row's 128 bytes; a vector of 8 columns is all in or
  // all out (N a multiple of 8) and, in a shuffled C, in one pixel.
  // (192 columns: 24 chunks a row, and threads past whole rows idle.)
  int64_t chunks = s.tileN / 8, rowsPerPass = threads / chunks;
  VectorType chunkT = VectorType::get({8}, cT);
  for (int64_t pass = 0; pass < ceilDiv(s.tileM, rowsPerPass); ++pass) {
    Value lr = add(div(tid, chunks), pass * rowsPerPass);
    Value lc = mul(rem(tid, chunks), 8);
    Value row = add(blockM0, lr), col = add(blockN0, lc);
    bool partialPass =
        threads % chunks != 0 || (pass + 1) * rowsPerPass > s.tileM;
    whenTrue(land(land(partialPass ? ult(lr, s.tileM) : Value(),
                       needRow ? ult(row, p.m) : Value()),
                  needCol ? ult(col, p.n) : Value()),
             [&] {
               Value v = vector::LoadOp::create(
                   b, loc, chunkT, cTile,
                   ValueRange{add(mul(lr, stagedRow), lc)}, false,
                   llvm::Align(16));
               vector::StoreOp::create(b, loc, v, c, at(c, row, col), false,
                                       llvm::Align(16));
               if (epi.copyOut)
                 vector::StoreOp::create(b, loc, v, c2, at(c2, row, col), false,
                                         llvm::Align(16));
             });
  }
}

void KernelBuilder::build(Value aArg, Value bArg, Value biasArg,
                          Value residualArg, Value cArg, Value rawArg) {
  a = aArg;
  bm = bArg;
  bias = biasArg;
  residual = residualArg;
  c = gemmOutView(b, loc, epi, cArg, p.n);
  c2 = rawArg;
  MLIRContext *ctx = b.getContext();
  int64_t tilesM = ceilDiv(p.m, s.tileM), tilesN = ceilDiv(p.n, s.tileN);
  tid = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
  wg = div(tid, 128);
  wgTid = rem(tid, 128);

  auto [pidM, pidN] =
      groupedTile(mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x),
                  tilesM, tilesN);
  blockM0 = mul(pidM, s.tileM);
  blockN0 = mul(pidN, s.tileN);
  // A tile mask: blocks of another precision's tiles do nothing (the
  // condition is the block's, so its barriers stay uniform).
  scf::IfOp maskIf;
  if (p.mask) {
    Value at = add(mul(div(blockM0, p.mask->planTileM), p.mask->planGridN),
                   div(blockN0, p.mask->planTileN));
    Value code = memref::LoadOp::create(b, loc, codes, ValueRange{at});
    Value mine = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, code,
        arith::ConstantOp::create(b, loc,
                                  b.getI8IntegerAttr(int8_t(p.mask->code))));
    maskIf = scf::IfOp::create(b, loc, mine, /*withElseRegion=*/false);
    b.setInsertionPointToStart(maskIf.thenBlock());
  }
  batchC = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::z);
  batchA = p.aBatched ? batchC : cst(0);
  batchB = p.bBatched ? batchC : cst(0);
  int64_t kTiles = ceilDiv(p.k, tileK);
  // Split-K: split y takes k-tiles [y * perSplit, min(kTiles, ...)), none
  // empty (wgmmaShapeValid).
  int64_t perSplit = ceilDiv(kTiles, s.splitK);
  partial = s.splitK > 1;
  kBase = cst(0);
  Value myTiles = cst(kTiles);
  if (partial) {
    batchC = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::y);
    kBase = mul(batchC, perSplit);
    // A trip count LLVM cannot see as constant gets the loop versioned, and
    // ptxas then serializes the wgmmas (accumulators moved between them):
    // static when the splits are equal.
    myTiles = kTiles % s.splitK == 0
                  ? cst(perSplit)
                  : arith::MinUIOp::create(b, loc, cst(perSplit),
                                           sub(cst(kTiles), kBase))
                        .getResult();
  }

  // The stages start at the first 1024-byte boundary of the dynamic shared
  // memory (its shared-window address, as the descriptors want it).
  Value raw = dynamicSharedMemory();
  rawSmem = raw;
  Value rawAddr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, raw);
  Value pad =
      band(sub(cst(kAtomBytes), band(rawAddr, kAtomBytes - 1)), kAtomBytes - 1);
  Attribute space = cast<MemRefType>(raw.getType()).getMemorySpace();
  int64_t elems = s.stages * stageBytes(s) / elemBytes;
  smem = memref::ViewOp::create(
      b, loc,
      MemRefType::get({elems}, p.abType, MemRefLayoutAttrInterface(), space),
      raw, pad, ValueRange{});

  // Descriptor fields that never change: swizzle mode 1 (128 bytes) in bits
  // 62-63; the stride byte offset (between 8-row atoms along M/N for K-major
  // tiles, along K for B [K][N]) in bits 32-45; the leading byte offset
  // (unused for swizzled K-major tiles; between 64-column blocks of
  // B [K][N]) in bits 16-29.
  auto fields = [&](int64_t lbo, int64_t sbo) {
    return (int64_t(1) << 62) | ((sbo / 16) << 32) | ((lbo / 16) << 16);
  };
  Value start =
      toI64(arith::ShRUIOp::create(b, loc, add(rawAddr, pad), cst(4)));
  start = arith::AndIOp::create(b, loc, start, i64(0x3fff));
  descA = arith::OrIOp::create(b, loc, start, i64(fields(16, kAtomBytes)));
  int64_t bLbo = p.transB ? 16 : tileK * kRowBytes;
  descB = arith::AddIOp::create(
      b, loc,
      arith::OrIOp::create(b, loc, start, i64(fields(bLbo, kAtomBytes))),
      i64(tileABytes(s) / 16));

  if (gather && !s.tma)
    gRows =
        gatherRows(*gather, add(asI32(blockM0), asI32(div(tid, 8))),
                   threads / 8, s.tileM * 8 / threads, p.m, p.m % s.tileM != 0);
  Value isThread0 = cmp(arith::CmpIPredicate::eq, tid, cst(0));
  Type accElem = p.abType.isInteger(8) ? Type(b.getI32Type()) : b.getF32Type();
  accT = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(s.tileN / 2, accElem));
  if (s.producer) {
    stageBase = add(rawAddr, pad);
    barBase = add(stageBase, s.stages * stageBytes(s));
    initStageBarriers(isThread0);
    auto role = scf::IfOp::create(
        b, loc, cmp(arith::CmpIPredicate::uge, tid, cst(threads)),
        /*withElse=*/true);
    {
      OpBuilder::InsertionGuard g(b);
      auto [producerRegs, consumerRegs] = producerRegisters(s);
      b.setInsertionPointToStart(&role.getThenRegion().front());
      if (s.warpgroups > 1)
        ptx("setmaxnreg.dec.sync.aligned.u32 " + std::to_string(producerRegs) +
            ";");
      producerLoop(myTiles);
      b.setInsertionPointToStart(&role.getElseRegion().front());
      if (s.warpgroups > 1)
        ptx("setmaxnreg.inc.sync.aligned.u32 " + std::to_string(consumerRegs) +
            ";");
      epilogue(consumerLoop(myTiles));
    }
    if (maskIf)
      b.setInsertionPointAfter(maskIf);
    return;
  }
  if (s.tma) {
    // The window of the block's first output pixel, in input coordinates
    // (negative in the padding); the im2col map walks on from there.
    const GemmGather &g = *gather;
    Value m0 = asI32(blockM0);
    Value q = rem(m0, g.oh * g.ow);
    tileN = div(m0, g.oh * g.ow);
    tileH = add(mul(div(q, g.ow), g.strideH), -g.padTop);
    tileW = add(mul(rem(q, g.ow), g.strideW), -g.padLeft);
    stageBase = add(rawAddr, pad);
    barBase = add(stageBase, s.stages * stageBytes(s));
    initStageBarriers(isThread0);
    whenTrue(isThread0, [&] {
      for (int64_t st = 0; st + 2 < s.stages; ++st) {
        if (partial && st > 0)
          whenTrue(cmp(arith::CmpIPredicate::ult, cst(st), myTiles),
                   [&] { tmaStage(cst(st), cst(st)); });
        else if (st < kTiles)
          tmaStage(cst(st), cst(st));
      }
    });
  }

  Value token; // any async token: the waits only count groups
  for (int64_t st = 0; !s.tma && st + 2 < s.stages; ++st) {
    if (partial && st > 0) {
      // A split may have fewer k-tiles than the prologue copies.
      whenTrue(cmp(arith::CmpIPredicate::ult, cst(st), myTiles),
               [&] { copyStage(cst(st), cst(st)); });
    } else if (st < kTiles) {
      copyStage(cst(st), cst(st));
    }
    token = commitGroup();
  }

  // One k-tile: wait for its copies, `mma` (its wgmmas; stage in, the
  // accumulators they wrote out), the copies of k-tile kt + S - 2, then a
  // wait leaving `inFlight` wgmma groups running.
  auto kTile = [&](Value kt, llvm::function_ref<SmallVector<Value>(Value)> mma,
                   int64_t inFlight) {
    Value ahead = add(kt, s.stages - 2);
    SmallVector<Value> stepped;
    if (s.tma) {
      // After the barrier every warpgroup has waited for its wgmmas of
      // kt - 2, so thread 0 refills that stage at once.
      Value stage = rem(kt, s.stages);
      waitStageFull(kt);
      mlir::gpu::BarrierOp::create(b, loc);
      whenTrue(land(isThread0, cmp(arith::CmpIPredicate::ult, ahead, myTiles)),
               [&] { tmaStage(ahead, rem(ahead, s.stages)); });
      stepped = mma(stage);
    } else {
      nvgpu::DeviceAsyncWaitOp::create(b, loc, token,
                                       b.getI32IntegerAttr(s.stages - 3));
      NVVM::FenceProxyOp::create(
          b, loc, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
          NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
      mlir::gpu::BarrierOp::create(b, loc);
      stepped = mma(rem(kt, s.stages));
      auto ifOp = scf::IfOp::create(
          b, loc, cmp(arith::CmpIPredicate::ult, ahead, myTiles),
          /*withElse=*/false);
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        copyStage(ahead, rem(ahead, s.stages));
      }
      // Commit unconditionally so that group counting stays uniform.
      commitGroup();
    }
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(inFlight));
    return stepped;
  };
  auto fresh = [&](ValueRange regs) {
    return [this, regs](Value stage) {
      return mmaStep(stage, regs, /*fresh=*/true);
    };
  };
  Value zeroAcc = LLVM::ZeroOp::create(b, loc, accT);
  SmallVector<Value> sums;
  if (s.promote == 0) {
    // The wgmmas add into the accumulators; a k-tile's run while the
    // next one's are issued.
    auto loop = scf::ForOp::create(b, loc, cst(0), myTiles, cst(1),
                                   SmallVector<Value>(slices, zeroAcc));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    ValueRange acc = loop.getRegionIterArgs();
    scf::YieldOp::create(b, loc,
                         kTile(
                             loop.getInductionVar(),
                             [&](Value stage) { return mmaStep(stage, acc); },
                             1));
    b.setInsertionPointAfter(loop);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(0));
    sums.assign(loop.getResults().begin(), loop.getResults().end());
  } else {
    // Each run of `promote` k-tiles sums into fresh registers, added to the
    // sums once done: one loop iteration a run, its last k-tile waiting for
    // all (a run's last may be short). (Two sets in turn, so that a run's
    // wgmmas go on while the previous run's are added, took 255 registers
    // and spilled at 128x128.)
    int64_t run = s.promote;
    SmallVector<Value> init(2 * slices, zeroAcc);
    auto loop = scf::ForOp::create(b, loc, cst(0), myTiles, cst(run), init);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    ValueRange carried = loop.getRegionIterArgs();
    Value kt = loop.getInductionVar();
    SmallVector<Value> part =
        kTile(kt, fresh(carried.drop_front(slices)), run == 1 ? 0 : 1);
    for (int64_t r = 1; r < run; ++r) {
      // k-tile kt + r, when there is one; the last waits for the run.
      Value k = add(kt, r);
      SmallVector<Type> types(slices, accT);
      auto more = scf::IfOp::create(b, loc, types,
                                    cmp(arith::CmpIPredicate::ult, k, myTiles),
                                    /*withElse=*/true);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&more.getThenRegion().front());
      SmallVector<Value> in = part;
      scf::YieldOp::create(b, loc,
                           kTile(
                               k,
                               [&](Value stage) { return mmaStep(stage, in); },
                               r + 1 == run ? 0 : 1));
      b.setInsertionPointToStart(&more.getElseRegion().front());
      scf::YieldOp::create(b, loc, part);
      b.setInsertionPointAfter(more);
      part.assign(more.getResults().begin(), more.getResults().end());
    }
    if (run > 1)
      NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(0));
    SmallVector<Value> out = addAccumulators(carried.take_front(slices), part);
    out.append(part.begin(), part.end());
    scf::YieldOp::create(b, loc, out);
    b.setInsertionPointAfter(loop);
    sums.assign(loop.getResults().begin(), loop.getResults().begin() + slices);
  }
  epilogue(sums);
  if (maskIf)
    b.setInsertionPointAfter(maskIf);
}

} // namespace

WgmmaSchedule chooseWgmmaSchedule(const WgmmaProblem &p) {
  WgmmaSchedule s;
  // 128x256 with 4 stages per block (one block per multiprocessor) unless
  // that leaves multiprocessors idle or N does not divide; then 128x128,
  // whose smaller stages allow 5 (on the H200 at 4096^3: 128x256 S4 592
  // TFLOP/s, 128x128 S5 554, 128x128 S4 465).
  if (p.n % 256 != 0 || ceilDiv(p.m, 128) * (p.n / 256) * p.batch < 132) {
    s.tileN = 128;
    s.stages = 5;
  }
  // f8 sums to f32's accuracy: promoted every k-tile. On the H200 at
  // 4096^3 (session 40): every k-tile 0.136 ms (worst error 0.48 of the f32
  // bound), every 2 0.125 (0.82), every 4 0.118 (1.5: out of bound); the
  // hardware's sums 0.101 (4.7), cuBLAS 0.102. Every 2 came within 0.96
  // of the bound at 1000x3008x517 and past it on another draw at 4096^3
  // (bench/epilogue_bench.py, session 41): every k-tile, at 4-5% of the
  // time, keeps a margin.
  if (p.abType && isa<Float8E4M3FNType, Float8E5M2Type>(p.abType)) {
    s.promote = 1;
    s.tileN = 128;
    s.stages = 5;
    if (p.mask)
      return s;
    // Fed by a producer warpgroup, whose registers let 128x192 tiles hold
    // both accumulator sets. On the H100 (session 41, promoted every 2
    // k-tiles; cuBLAS 0.102 and 0.889 ms): 4096^3 0.127 -> 0.118 ms (128x192
    // 0.117), 8192^3 0.990 -> 0.931 (128x192 0.862, 4 stages 0.847; every
    // k-tile 0.899). 128x192 computes a wave's tiles about 6% faster a
    // flop, but fills the waves less evenly (4096^3: 704 tiles, 5.3 waves
    // of 132): it is taken where its waves x 192 / 1.06 is less than 128's
    // waves x 128.
    s.producer = 1;
    auto cost = [&](int64_t tileN, double speed) {
      int64_t tiles = ceilDiv(p.m, s.tileM) * ceilDiv(p.n, tileN) * p.batch;
      return double(ceilDiv(tiles, 132)) * double(tileN) / speed;
    };
    if (cost(192, 1.06) < cost(128, 1.0)) {
      s.tileN = 192;
      s.stages = 4;
    }
  }
  return s;
}

/// wgmmaKernelSupports without the target: what the builder needs.
static bool wgmmaShapeValid(const WgmmaProblem &p, const WgmmaSchedule &s,
                            const GemmGather *gather, std::string &why) {
  auto fail = [&](const std::string &msg) {
    why = "wgmma kernel: " + msg;
    return false;
  };
  bool f8 = p.abType && isa<Float8E4M3FNType, Float8E5M2Type>(p.abType);
  bool i8 = p.abType && p.abType.isInteger(8);
  if (!p.abType ||
      !(p.abType.isBF16() || p.abType.isF16() || p.abType.isF32() || f8 || i8))
    return fail("A and B must be bf16, f16, f32 (as tf32), f8E4M3FN, "
                "f8E5M2 or i8");
  if ((p.abType.isF32() || f8 || i8) && !p.transB)
    return fail(std::string(f8   ? "f8"
                            : i8 ? "i8"
                                 : "tf32") +
                " needs B stored [N][K] (wgmma reads 8- and 32-bit operands "
                "K-major only)");
  if (p.mask) {
    if (!p.cType || !p.cType.isF32())
      return fail("a tile-masked GEMM gives an f32 C");
    if (p.batch != 1 || s.splitK != 1)
      return fail("a tile-masked GEMM takes one matrix and no split-K");
    if (p.mask->planTileM % s.tileM != 0 || p.mask->planTileN % s.tileN != 0)
      return fail("the kernel tile must divide the plan's tile");
    if (p.mask->planGridN != ceilDiv(p.n, p.mask->planTileN))
      return fail("the plan's grid is not the output's");
  } else if (i8) {
    // The i32 sums are exact; an f32 partial or output would round them.
    if (!p.cType || !p.cType.isInteger(32))
      return fail("i8 operands give an i32 C");
    if (s.splitK != 1)
      return fail("i8 has no split-K (its partials would be f32)");
  } else if (!p.cType ||
             !(p.cType.isF32() || p.cType.isBF16() || p.cType.isF16())) {
    return fail("C must be f32, bf16 or f16");
  }
  if (s.warpgroups < 1 || s.warpgroups > (s.producer ? 3 : 2))
    return fail("1 or 2 warpgroups per block (3 with a producer)");
  if (s.tileM < 64 || s.tileM % (64 * s.warpgroups) != 0 ||
      s.tileM / s.warpgroups > 128)
    return fail("tileM must be 64 or 128 rows per warpgroup");
  if (s.tileN < 64 || s.tileN > 256 || s.tileN % 64 != 0)
    return fail("tileN must be 64, 128, 192 or 256");
  if ((s.tileM / s.warpgroups / 64) * s.tileN > 256)
    return fail("more than 128 accumulators per thread");
  if (s.promote < 0 || s.promote > 4)
    return fail("promote is 0 to 4 (k-tiles a sum in fresh registers)");
  if (s.promote && !f8)
    return fail("promotion is for f8 operands");
  if (s.promote && (s.tileM / s.warpgroups / 64) * s.tileN > 192)
    return fail("promotion doubles the accumulators: at most 96 per "
                "thread (tileN 192 for 64 rows a warpgroup)");
  if (s.stages < 3)
    return fail("at least 3 stages");
  if (s.producer < 0 || s.producer > 1)
    return fail("producer is 0 or 1");
  if (s.producer && (gather || s.tma))
    return fail("a producer warpgroup feeds a plain matmul, not a convolution");
  // TMA's coordinates are signed 32-bit and its boxes at most 256 rows.
  if (s.producer && std::max({p.m, p.n, p.k}) >= (int64_t(1) << 31))
    return fail("a producer's tensor maps take dims below 2^31");
  if (s.producer && s.tileM > 256)
    return fail("a producer's copies take at most 256 rows a tile");
  // A run's k-tiles are handed back after its wait: a run longer than the
  // stages would wait for a k-tile whose stage it holds itself.
  if (s.producer && s.promote > s.stages)
    return fail("a producer needs promote <= stages");
  // 3 warpgroups keep 160 registers a thread (setmaxnreg), but ptxas
  // compiles them under the 128 of 512 threads: one wgmma of 256 columns
  // (128 accumulators) does not fit that.
  if (s.warpgroups == 3 &&
      (s.tileM / 3 / 64) * s.tileN / 2 * (s.promote ? 2 : 1) > 128)
    return fail("3 warpgroups hold at most 128 accumulators a thread");
  if (s.warpgroups == 3 && s.tileN > 192)
    return fail("3 warpgroups take tiles of at most 192 columns");
  if (p.m < 1 || p.n < 1 || p.k < 1 || p.batch < 1)
    return fail("M, N, K and the batch must be positive");
  // The 16-byte copies need every row of A and B to start 16 bytes aligned
  // (edge tiles are handled by whole chunks).
  int64_t chunk = 128 / p.abType.getIntOrFloatBitWidth();
  if (p.k % chunk != 0 || (!p.transB && p.n % chunk != 0))
    return fail("K (and N when B is stored [K][N]) must be a multiple of " +
                std::to_string(chunk) + " elements (16-byte rows)");
  if (ceilDiv(p.m, s.tileM) * ceilDiv(p.n, s.tileN) > (int64_t(1) << 31) - 1)
    return fail("too many output tiles for one grid");
  if (p.batch > 65535)
    return fail("a batch of at most 65535 matrices");
  if (s.splitK < 1 || s.splitK > 65535)
    return fail("splitK must be in [1, 65535]");
  if (s.splitK > 1) {
    int64_t kTiles = ceilDiv(p.k, wgmmaTileK(p.abType));
    if (p.batch != 1)
      return fail("split-K needs one matrix");
    if ((s.splitK - 1) * ceilDiv(kTiles, s.splitK) >= kTiles)
      return fail("split-K leaves a split without k-tiles (" +
                  std::to_string(kTiles) + " k-tiles in " +
                  std::to_string(s.splitK) + " splits)");
  }
  if (gather) {
    // A thread's chunk is then one tap's channels, and B the weight
    // [O][KH*KW*C]; the offsets are i32 (convKernelSupports checks them).
    if (p.batch != 1 || !p.transB)
      return fail("a gathered A needs one matrix and B stored [N][K]");
    if (gather->c % chunk != 0)
      return fail("a gathered A needs channels that are a multiple of " +
                  std::to_string(chunk));
    if (p.m != gather->batch * gather->oh * gather->ow ||
        p.k != gather->kh * gather->kw * gather->c)
      return fail("the GEMM is not the gather's");
  }
  if (s.tma) {
    // The im2col map's limits (cuTensorMapEncodeIm2col): its corners are
    // within [-128, 127] for a 4-D tensor, its walk's steps at most 8, a
    // copy at most 256 channels of 1024 pixels; and a k-tile must be one
    // tap's channels.
    const GemmGather *g = gather;
    if (!g)
      return fail("TMA copies need a gathered A (a convolution)");
    if (elemBytesOf(p) != 2 || g->c % wgmmaTileK(p.abType) != 0)
      return fail("TMA copies need 16-bit operands and channels a multiple "
                  "of " +
                  std::to_string(wgmmaTileK(p.abType)));
    auto [lw, uw] = im2colCorners(g->w, g->ow, g->strideW, g->padLeft);
    auto [lh, uh] = im2colCorners(g->h, g->oh, g->strideH, g->padTop);
    for (int64_t v : {lw, uw, lh, uh})
      if (v < -128 || v > 127)
        return fail("the im2col box's corners leave [-128, 127]");
    if (g->strideH > 8 || g->strideW > 8)
      return fail("TMA walks with strides of at most 8");
    if ((g->kh - 1) * g->dilationH > 65535 ||
        (g->kw - 1) * g->dilationW > 65535)
      return fail("a tap's offset must fit 16 bits");
    if (g->w * g->c > (int64_t(1) << 32) || g->h > (int64_t(1) << 32) ||
        g->batch > (int64_t(1) << 32))
      return fail("a dim of the input exceeds 2^32");
  }
  return true;
}

std::vector<WgmmaSchedule> wgmmaScheduleSpace(const WgmmaProblem &p,
                                              const ::tcc::TargetDesc &target) {
  std::vector<WgmmaSchedule> space;
  std::string why;
  // With a producer warpgroup (TMA copies, setmaxnreg), 128x192 tiles and
  // 3 warpgroups (192 rows) fit too; wgmmaKernelSupports keeps the legal
  // points.
  int64_t promote = chooseWgmmaSchedule(p).promote;
  for (int64_t producer : {0, 1})
    for (int64_t tm : {64, 128, 192})
      for (int64_t tn : {64, 128, 192, 256})
        for (int64_t wg : {1, 2, 3})
          for (int64_t st : {3, 4, 5, 6})
            for (int64_t sk : {1, 2, 4, 8, 16}) {
              WgmmaSchedule s;
              s.producer = producer;
              s.tileM = tm;
              s.tileN = tn;
              s.warpgroups = wg;
              s.stages = st;
              s.splitK = sk;
              // f8 keeps f32's accuracy (the space holds no fast sums).
              s.promote = promote;
              if (wgmmaKernelSupports(p, s, target, why))
                space.push_back(s);
            }
  return space;
}

bool wgmmaKernelSupports(const WgmmaProblem &p, const WgmmaSchedule &s,
                         const ::tcc::TargetDesc &target, std::string &why,
                         const GemmGather *gather) {
  std::string limit;
  if (!target.wgmma)
    limit = "needs wgmma (sm_90a), not on " + target.name;
  else if (!wgmmaShapeValid(p, s, gather, why))
    return false;
  if (limit.empty() && sharedFits(sharedBytesOf(s), target, limit))
    return true;
  why = "wgmma kernel: " + limit;
  return false;
}

FailureOr<KernelLaunch>
buildWgmmaKernel(OpBuilder &b, mlir::gpu::GPUModuleOp module, StringRef name,
                 const WgmmaProblem &p, const WgmmaSchedule &s,
                 const GemmGather *gather, const GemmEpilogue &epilogue) {
  std::string why;
  if (!wgmmaShapeValid(p, s, gather, why) ||
      !gemmOutputsValid(epilogue, p.batch * p.m, p.n, why))
    return module.emitError(why);
  if (p.abType.isInteger(8) && (epilogue.biasType || epilogue.residualType ||
                                epilogue.relu || epilogue.secondOut()))
    return module.emitError("wgmma kernel: an i8 GEMM takes no bias, "
                            "residual or ReLU (elementwise code only)");
  if (epilogue.elementFn && (p.mask || gather))
    return module.emitError(
        "wgmma kernel: elementwise epilogue code with a tile mask or a "
        "gathered A");
  OpBuilder::InsertionGuard guard(b);
  loadTemplateDialects(b.getContext());
  auto memref = [&](bool batched, int64_t rows, int64_t cols, Type t) {
    return MemRefType::get({batched ? p.batch : 1, rows, cols}, t);
  };
  SmallVector<Type> args = {
      gather
          ? MemRefType::get({gather->batch * gather->h * gather->w * gather->c},
                            p.abType)
          : memref(p.aBatched, p.m, p.k, p.abType),
      p.transB ? memref(p.bBatched, p.n, p.k, p.abType)
               : memref(p.bBatched, p.k, p.n, p.abType)};
  // A tile mask's codes and scales, after B.
  if (p.mask) {
    if (epilogue.biasType || epilogue.residualType || epilogue.relu ||
        epilogue.secondOut())
      return module.emitError("wgmma kernel: a tile mask takes no epilogue");
    int64_t rows = ceilDiv(p.m, p.mask->planTileM);
    args.push_back(
        MemRefType::get({rows * p.mask->planGridN}, b.getIntegerType(8)));
    if (p.mask->rowScale)
      args.push_back(MemRefType::get({p.m}, b.getF32Type()));
    if (p.mask->colScale)
      args.push_back(MemRefType::get({p.n}, b.getF32Type()));
  }
  // Split-K: the f32 partials, and the reduction applies the epilogue.
  GemmEpilogue epi = s.splitK > 1 ? GemmEpilogue() : epilogue;
  unsigned firstCaptured = unsigned(args.size());
  if (epi.elementFn)
    args.append(epi.captured.begin(), epi.captured.end());
  unsigned maskArgs = unsigned(args.size()) - 2;
  if (epi.biasType)
    args.push_back(MemRefType::get({p.n}, epi.biasType));
  if (epi.residualType)
    args.push_back(memref(true, p.m, p.n, epi.residualType));
  args.push_back(
      s.splitK > 1
          ? MemRefType::get({s.splitK, p.m, p.n}, b.getF32Type())
          : gemmOutBufferType(epi, p.batch, p.m, p.n, epi.storedType(p.cType)));
  // After C: the values before the ReLU, or a copy of C's.
  if (epi.secondOut())
    args.push_back(memref(true, p.m, p.n, p.cType));
  // With TMA, A's and B's tensor maps after the buffers (passed by value:
  // passTensorMapsByValue).
  bool maps = s.tma || s.producer;
  int64_t nBuffers = int64_t(args.size()), nMaps = maps ? 2 : 0;
  args.append(nMaps, LLVM::LLVMPointerType::get(b.getContext()));
  // A producer warpgroup after the computing ones (a warp would take the
  // registers of one anyway: a quarter of the multiprocessor's registers
  // serves a warp of each warpgroup).
  int64_t threads = 128 * (s.warpgroups + (s.producer ? 1 : 0));
  mlir::gpu::GPUFuncOp func = createKernelFunc(b, module, name, args, threads);
  // setmaxnreg needs the registers at entry known to ptxas: one block a
  // multiprocessor.
  if (s.producer)
    func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(1));
  if (maps)
    func->setAttr(kTensorMapsAttr,
                  b.getDenseI64ArrayAttr({nBuffers, nBuffers + 1}));
  KernelBuilder kb(b, func.getLoc(), p, s, gather, epi);
  if (maps)
    kb.setTensorMaps(func.getArgument(nBuffers),
                     func.getArgument(nBuffers + 1));
  unsigned nC = nBuffers - (epi.secondOut() ? 2 : 1);
  if (p.mask) {
    unsigned next = 3;
    Value rs = p.mask->rowScale ? func.getArgument(next++) : Value();
    Value cs = p.mask->colScale ? func.getArgument(next++) : Value();
    kb.setMask(func.getArgument(2), rs, cs);
  }
  if (epi.elementFn)
    kb.setCaptured(
        func.getArguments().slice(firstCaptured, epi.captured.size()));
  kb.build(func.getArgument(0), func.getArgument(1),
           epi.biasType ? func.getArgument(2 + maskArgs) : Value(),
           epi.residualType ? func.getArgument(nC - 1) : Value(),
           func.getArgument(nC),
           epi.secondOut() ? func.getArgument(nC + 1) : Value());
  mlir::gpu::ReturnOp::create(b, func.getLoc());
  KernelLaunch launch;
  launch.grid = {ceilDiv(p.m, s.tileM) * ceilDiv(p.n, s.tileN), s.splitK,
                 p.batch};
  launch.block = {threads, 1, 1};
  launch.sharedBytes = sharedBytesOf(s);
  if (s.producer) {
    // A [batch or 1][M][K] in boxes of one k-tile by tileM rows; B [N][K]
    // likewise, or B [K][N] in boxes of 64 columns (128 bytes) by the
    // k-tile's rows. 128-byte swizzled, as the wgmma descriptors read them;
    // elements past the edges load as zeros.
    int64_t e = elemBytesOf(p), tileK = wgmmaTileK(p.abType);
    std::string dtype = p.abType.isBF16()                 ? "bf16"
                        : p.abType.isF16()                ? "f16"
                        : p.abType.isF32()                ? "f32"
                        : isa<Float8E4M3FNType>(p.abType) ? "f8e4m3"
                        : isa<Float8E5M2Type>(p.abType)   ? "f8e5m2"
                                                          : "i8";
    auto map = [&](int64_t operand, int64_t inner, int64_t outer, int64_t batch,
                   int64_t boxInner, int64_t boxOuter) {
      TensorMapSpec t;
      t.operand = operand;
      t.dtype = dtype;
      t.dims = {inner, outer, batch};
      t.strides = {inner * e, inner * outer * e};
      t.box = {boxInner, boxOuter, 1};
      t.swizzle = "128B";
      return t;
    };
    int64_t batchA = p.aBatched ? p.batch : 1,
            batchB = p.bBatched ? p.batch : 1;
    launch.tensorMaps = {map(0, p.k, p.m, batchA, tileK, s.tileM),
                         p.transB ? map(1, p.k, p.n, batchB, tileK, s.tileN)
                                  : map(1, p.n, p.k, batchB, 64, tileK)};
  }
  if (s.tma) {
    // A: the NHWC input (dims C, W, H, N innermost first), one tap's k-tile
    // of channels for tileM pixels a copy; B: the weights [O][K], boxes of
    // one k-tile by tileN rows. Both 128-byte swizzled, as the wgmma
    // descriptors read them; elements past the edges load as zeros.
    const GemmGather &g = *gather;
    std::string dtype = p.abType.isBF16() ? "bf16" : "f16";
    int64_t e = elemBytesOf(p), tileK = wgmmaTileK(p.abType);
    TensorMapSpec a;
    a.operand = 0;
    a.dtype = dtype;
    a.dims = {g.c, g.w, g.h, g.batch};
    a.strides = {g.c * e, g.w * g.c * e, g.h * g.w * g.c * e};
    a.swizzle = "128B";
    a.im2col = true;
    a.channels = tileK;
    a.pixels = s.tileM;
    auto [lw, uw] = im2colCorners(g.w, g.ow, g.strideW, g.padLeft);
    auto [lh, uh] = im2colCorners(g.h, g.oh, g.strideH, g.padTop);
    a.lower = {lw, lh};
    a.upper = {uw, uh};
    a.elementStrides = {1, g.strideW, g.strideH, 1};
    TensorMapSpec bm;
    bm.operand = 1;
    bm.dtype = dtype;
    bm.dims = {p.k, p.n};
    bm.strides = {p.k * e};
    bm.box = {tileK, s.tileN};
    bm.swizzle = "128B";
    launch.tensorMaps = {a, bm};
  }
  return launch;
}

} // namespace tcc::gpu
