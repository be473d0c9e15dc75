//===- MatmulKernel.cpp - the tensor-core GEMM kernel template ------------===//
//
// The kernel, for a block owning C tile (bm, bn) of batch bz:
//
//   prologue: copy k-tiles 0..S-2 of A and B into shared stages 0..S-2
//   for kt in [0, kTiles):
//     wait until k-tile kt has landed (cp.async.wait_group S-2); barrier
//     copy k-tile kt+S-1 into stage (kt+S-1) % S (the stage read at kt-1)
//     each warp: ldmatrix fragments of stage kt % S, mma.sync into registers
//   epilogue: cast the f32 accumulators to cType and store (edge-checked)
//
// Shared tiles keep the global layout of their operand (rows x contiguous
// columns), in 16-byte chunks XOR-swizzled so that the 8 rows one ldmatrix
// phase reads, and the chunks one cp.async phase writes, hit distinct banks.
// A contiguous extent that is not a multiple of 16 bytes cannot use cp.async
// (its rows are not 16-byte aligned): that operand is copied with ordinary
// element loads and stores instead, at the same point of the pipeline.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/MatmulKernel.h"
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

#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;

namespace tcc::gpu {
namespace {

enum class Path { Mma16, Tf32, Simt };

Path pathOf(const MatmulProblem &p) {
  if (!p.aType.isF32())
    return Path::Mma16;
  return p.allowTf32 ? Path::Tf32 : Path::Simt;
}

int64_t bytesOf(Type t) { return t.getIntOrFloatBitWidth() / 8; }

/// One operand's shared tile: `rows` x `cols` elements, cols contiguous.
struct TileShape {
  int64_t rows, cols;
};

/// The shared tiles of A and B for schedule `s` (their layout follows the
/// operand's global layout).
std::pair<TileShape, TileShape> tileShapes(const MatmulProblem &p,
                                           const MatmulSchedule &s) {
  TileShape a =
      p.transA ? TileShape{s.tileK, s.tileM} : TileShape{s.tileM, s.tileK};
  TileShape b =
      p.transB ? TileShape{s.tileN, s.tileK} : TileShape{s.tileK, s.tileN};
  return {a, b};
}

int64_t sharedBytesOf(const MatmulProblem &p, const MatmulSchedule &s) {
  int64_t stages = s.stages * (s.tileM + s.tileN) * s.tileK * bytesOf(p.aType);
  // A cluster split-K's f32 partial tile reuses the stages' memory.
  return s.clusterSplitK ? std::max(stages, s.tileM * s.tileN * 4) : stages;
}

/// Builds the kernel body; all helpers emit at the builder's insertion point.
class KernelBuilder : GemmParts {
public:
  KernelBuilder(OpBuilder &b, Location loc, const MatmulProblem &p,
                const MatmulSchedule &s, const GemmGather *gather,
                const GemmEpilogue &epi)
      : GemmParts(b, loc), p(p), s(s), gather(gather), epi(epi),
        path(pathOf(p)), eb(bytesOf(p.aType)), epc(16 / eb),
        threads(32 * s.warpsM * s.warpsN) {
    std::tie(tileA, tileB) = tileShapes(p, s);
  }

  void build(Value a, Value bMat, Value bias, Value residual, Value c,
             Value raw);
  /// epi.elementFn's buffers.
  void setCaptured(ValueRange args) {
    captured.assign(args.begin(), args.end());
  }

private:
  /// Copies k-tile `kt` of one operand into shared stage `stage`.
  void copyTile(bool isA, Value kt, Value stage);
  /// The source of one element of a copy: its indices in the operand and
  /// whether it is inside the operand (null: always).
  using Source = std::pair<SmallVector<Value, 3>, Value>;
  /// Copies one 16-byte chunk into shared chunk `dstChunk`: one zero-filling
  /// cp.async from srcAt(0) when `aligned` (the chunk is all in or all out),
  /// else element loads from srcAt(e), zero outside the operand.
  void copyChunk(bool isA, Value dstChunk, bool aligned,
                 llvm::function_ref<Source(int64_t)> srcAt);
  /// The gathered A's per-row values (GemmGather): computed once per block.
  void gatherRows();
  /// copyTile of a gathered A.
  void copyGatheredA(Value kt, Value stage);
  /// The pipeline's k-tile copy of both operands, then a commit.
  Value copyStage(Value kt, Value stage);

  /// One k-tile of MMA work from stage `stage`; returns the new accumulators.
  /// `afterFirstLoads` is called once the first fragments are loaded.
  SmallVector<Value> mmaStep(Value stage, ValueRange acc,
                             llvm::function_ref<void()> afterFirstLoads);
  SmallVector<Value> simtStep(Value stage, ValueRange acc);

  /// tf32 with B stored [k][n]: ldmatrix cannot transpose 32-bit data, so
  /// each group of 4 n-tiles (32 columns) permutes its columns instead: the
  /// lanes of quad row g own columns 4*chunkOf(g) + j of n-tiles j = 0..3,
  /// which one 16-byte shared load reads. The accumulators then hold 4
  /// consecutive columns a lane, which the epilogue stores as vectors.
  bool permutedB() const {
    return path == Path::Tf32 && !p.transB && (s.tileN / s.warpsN / 8) % 4 == 0;
  }
  /// The 16-byte chunk (of a 32-column group) of quad row g: the two quad
  /// rows of one 8-lane phase differ in bit 2, so that with the swizzle's
  /// XOR by (k row & 7) the phase touches 8 distinct bank groups.
  Value chunkOf(Value g) { return add(mul(band(g, 1), 4), div(g, 2)); }

  /// Stores `vals` (f32 elements of C row `row`, columns col..col+L-1).
  void storeRow(Value row, Value col, Value vals);
  /// The epilogue's bias and ReLU on `vals` (columns col..); `raw` (if
  /// given) receives the value before the ReLU.
  Value applyEpilogue(Value vals, Value row, Value col, Value *raw = nullptr);
  void epilogue(ValueRange acc);
  /// A cluster split-K's epilogue: the partial tile to shared memory, then
  /// this block's share of the tile's rows summed across the cluster.
  void clusterEpilogue(ValueRange acc);
  /// barrier.cluster arrive and wait (release and acquire by default, which
  /// PTX 7.8 cannot spell out): every block's shared-memory writes before
  /// it are visible to the cluster after it.
  void clusterBarrier();
  /// The 4 f32 at shared-window byte address `addr` (i32) of the cluster's
  /// block `rank` (i32), as a vector.
  Value loadCluster4(Value addr, Value rank);

  const MatmulProblem &p;
  const MatmulSchedule &s;
  const GemmGather *gather;
  GemmEpilogue epi;
  Path path;
  int64_t eb, epc, threads;
  TileShape tileA, tileB;

  Value a, bm, c;     // the kernel's memrefs
  Value c2;           // the second buffer (epi.secondOut()), or null
  Value bias;         // the epilogue's bias (or null)
  Value residual;     // the epilogue's residual (or null)
  SmallVector<Value> captured; // epi.elementFn's buffers
  // The A rows a thread copies (gatherRows): their pixels, computed once.
  SmallVector<GatherRow> gRows;
  Value smemA, smemB; // 1-D views of the shared stages
  // The same stages as 16-byte vectors: shared-memory vector accesses go
  // through memref.load/store of vector elements, which the GPU lowering
  // converts with the workgroup address space (convert-vector-to-llvm, which
  // runs before it, cannot).
  Value smemAVec, smemBVec;
  Value tid, lane, warpM, warpN;
  Value blockM0, blockN0, batchA, batchB, batchC;
  Value token; // any async token: the waits only count groups
  // Split-K (s.splitK > 1): this block's split (grid.y); c is then the f32
  // workspace [splitK, M, N] and the epilogue stores raw partial sums.
  bool partial = false;
  Value split;
  // A cluster split-K's partial tile: [tileM][tileN] f32 over the stages'
  // shared memory (rawShared), which storeRow fills (raw sums, tile-local)
  // while `stash` is set.
  Value rawShared;
  bool stash = false;
};

void KernelBuilder::copyTile(bool isA, Value kt, Value stage) {
  if (isA && gather)
    return copyGatheredA(kt, stage);
  const TileShape &t = isA ? tileA : tileB;
  bool trans = isA ? p.transA : p.transB;
  // The tile's rows and columns in the operand's global [rows][cols] matrix.
  bool rowsAreK = isA ? trans : !trans;
  Value kOff = mul(kt, s.tileK);
  Value mnOff = isA ? blockM0 : blockN0;
  Value row0 = rowsAreK ? kOff : mnOff;
  Value col0 = rowsAreK ? mnOff : kOff;
  int64_t mnBound = isA ? p.m : p.n;
  int64_t rowBound = rowsAreK ? p.k : mnBound;
  int64_t colBound = rowsAreK ? mnBound : p.k;
  Value batch = isA ? batchA : batchB;

  int64_t cpr = t.cols / epc;
  int64_t chunks = t.rows * cpr;
  int64_t rowStep = threads / cpr;
  bool needRow = rowBound % t.rows != 0;
  bool needCol = colBound % t.cols != 0;
  bool aligned = colBound % epc == 0;
  Value cChunk = rem(tid, cpr);
  Value rBase = div(tid, cpr);
  Value col = add(col0, mul(cChunk, epc));
  Value stageChunk = mul(stage, chunks);

  for (int64_t i = 0; i < chunks / threads; ++i) {
    Value r = add(rBase, i * rowStep);
    Value row = add(row0, r);
    Value dstChunk = add(stageChunk, swizzle(r, cChunk, cpr));
    Value rowOk = needRow ? ult(row, rowBound) : Value();
    // Out-of-range reads are clamped to element 0 of the operand so that no
    // address ever leaves the buffer; their data is replaced by zeros.
    Value zero = cst(0);
    Value srcRow = rowOk ? select(rowOk, row, zero) : row;
    copyChunk(isA, dstChunk, aligned, [&](int64_t e) -> Source {
      Value ce = add(col, e);
      Value colOk = needCol || !aligned ? ult(ce, colBound) : Value();
      Value ok = land(rowOk, colOk);
      return {{batch, srcRow, colOk ? select(colOk, ce, zero) : ce}, ok};
    });
  }
}

void KernelBuilder::copyChunk(bool isA, Value dstChunk, bool aligned,
                              llvm::function_ref<Source(int64_t)> srcAt) {
  Value src = isA ? a : bm;
  if (aligned) {
    auto [idx, ok] = srcAt(0);
    Value n = ok ? select(ok, cst(epc), cst(0)) : Value();
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()),
        isA ? smemA : smemB, ValueRange{mul(dstChunk, epc)}, src, idx,
        b.getIndexAttr(epc), n, b.getUnitAttr());
    return;
  }
  // Not 16-byte aligned: element loads, zero outside the operand.
  SmallVector<Value> elems;
  Type elemT = p.aType;
  Value zeroF = arith::ConstantOp::create(b, loc, b.getZeroAttr(elemT));
  for (int64_t e = 0; e < epc; ++e) {
    auto [idx, ok] = srcAt(e);
    Value v = memref::LoadOp::create(b, loc, src, idx);
    elems.push_back(ok ? select(ok, v, zeroF) : v);
  }
  Value vec = vector::FromElementsOp::create(
      b, loc, VectorType::get({epc}, elemT), elems);
  memref::StoreOp::create(b, loc, vec, isA ? smemAVec : smemBVec,
                          ValueRange{dstChunk});
}

// Thread t copies chunk column t % cpr of rows t / cpr + i * rowStep of the
// gathered A (GemmParts::gatherRows).
void KernelBuilder::gatherRows() {
  int64_t cpr = tileA.cols / epc, rowStep = threads / cpr;
  gRows = GemmParts::gatherRows(
      *gather, add(asI32(blockM0), asI32(div(tid, cpr))), rowStep,
      tileA.rows * cpr / threads, p.m, p.m % s.tileM != 0);
}

void KernelBuilder::copyGatheredA(Value kt, Value stage) {
  const GemmGather &g = *gather;
  int64_t cpr = tileA.cols / epc;
  int64_t chunks = tileA.rows * cpr;
  Value cChunk = rem(tid, cpr);
  Value stageChunk = mul(stage, chunks);
  Value rBase = div(tid, cpr);
  int64_t rowStep = threads / cpr;
  Value k0 = add(mul(asI32(kt), s.tileK), mul(asI32(cChunk), epc));
  // A chunk of 16 bytes stays in one tap when C is a multiple of it; else
  // each element decomposes its own k.
  bool aligned = g.c % epc == 0;
  bool checkK = p.k % s.tileK != 0 || !aligned;
  SmallVector<GatherTap> taps;
  for (int64_t e = 0; e < (aligned ? 1 : epc); ++e)
    taps.push_back(gatherTap(g, add(k0, e), checkK, p.k));
  for (int64_t i = 0; i < chunks / threads; ++i) {
    Value r = add(rBase, i * rowStep);
    Value dstChunk = add(stageChunk, swizzle(r, cChunk, cpr));
    copyChunk(/*isA=*/true, dstChunk, aligned, [&](int64_t e) -> Source {
      auto [off, ok] = gatherSource(g, gRows[i], taps[e]);
      return {{off}, ok};
    });
  }
}

Value KernelBuilder::copyStage(Value kt, Value stage) {
  copyTile(/*isA=*/true, kt, stage);
  copyTile(/*isA=*/false, kt, stage);
  return commitGroup();
}

SmallVector<Value>
KernelBuilder::mmaStep(Value stage, ValueRange acc,
                       llvm::function_ref<void()> afterFirstLoads) {
  bool tf32 = path == Path::Tf32;
  int64_t kStep = tf32 ? 8 : 16; // mma k
  int64_t warpTileM = s.tileM / s.warpsM, warpTileN = s.tileN / s.warpsN;
  int64_t mTiles = warpTileM / 16, nTiles = warpTileN / 8;
  Type elemT = p.aType;
  Value aBase = mul(stage, tileA.rows * tileA.cols);
  Value bBase = mul(stage, tileB.rows * tileB.cols);
  int64_t cprA = tileA.cols / epc, cprB = tileB.cols / epc;
  Value warpRow = mul(warpM, warpTileM), warpCol = mul(warpN, warpTileN);
  // Lane decompositions used by the ldmatrix addresses.
  Value l16 = band(lane, 15), lHi = div(lane, 16), l8 = band(lane, 7);
  Value lMid = band(div(lane, 8), 1), lQuad = div(lane, 4), lIn = band(lane, 3);

  auto ldmatrix = [&](Value mem, Value off, bool transpose) -> Value {
    VectorType t =
        tf32 ? VectorType::get({4, 1}, elemT) : VectorType::get({4, 2}, elemT);
    return nvgpu::LdMatrixOp::create(b, loc, t, mem, ValueRange{off}, transpose,
                                     /*numTiles=*/4);
  };
  // A scalar element (row, col) of a swizzled tile (the tf32 fragments that
  // ldmatrix cannot transpose).
  auto scalarAt = [&](Value mem, Value base, int64_t cpr, Value row,
                      Value col) -> Value {
    Value off = add(
        base, add(mul(swizzle(row, div(col, epc), cpr), epc), rem(col, epc)));
    return memref::LoadOp::create(b, loc, mem, ValueRange{off});
  };

  SmallVector<Value> out(acc.begin(), acc.end());
  for (int64_t kk = 0; kk < s.tileK / kStep; ++kk) {
    // A fragments: one 16 x kStep tile per m-tile.
    SmallVector<Value> aFrag;
    for (int64_t i = 0; i < mTiles; ++i) {
      Value m0 = add(warpRow, i * 16);
      if (!p.transA) {
        // Matrices (rows 0-7|8-15) x (k chunk 0|1): lane -> row l%16, chunk
        // l/16.
        Value off =
            add(aBase, mul(swizzle(add(m0, l16), add(lHi, kk * 2), cprA), epc));
        aFrag.push_back(ldmatrix(smemA, off, false));
      } else if (!tf32) {
        // Stored [k][m]: lane -> k row (l/16)*8 + l%8, m chunk (l/8)&1.
        Value krow = add(add(mul(lHi, 8), l8), kk * 16);
        Value off =
            add(aBase, mul(swizzle(krow, add(div(m0, 8), lMid), cprA), epc));
        aFrag.push_back(ldmatrix(smemA, off, true));
      } else {
        SmallVector<Value> e;
        for (int64_t q = 0; q < 4; ++q)
          e.push_back(scalarAt(smemA, aBase, cprA,
                               add(lIn, kk * 8 + (q >> 1) * 4),
                               add(add(m0, lQuad), (q & 1) * 8)));
        aFrag.push_back(vector::FromElementsOp::create(
            b, loc, VectorType::get({4, 1}, elemT), e));
      }
    }
    // B fragments: kStep x 8 per n-tile, loaded two n-tiles at a time.
    SmallVector<Value> bFrag;
    for (int64_t j = 0; j < nTiles / 2; ++j) {
      Value n0 = add(warpCol, j * 16);
      Value pair;
      if (p.transB) {
        // Stored [n][k]: lane -> n row (l/16)*8 + l%8, k chunk (l/8)&1.
        Value nrow = add(n0, add(mul(lHi, 8), l8));
        Value off =
            add(bBase, mul(swizzle(nrow, add(lMid, kk * 2), cprB), epc));
        pair = ldmatrix(smemB, off, false);
      } else if (permutedB()) {
        if (j % 2)
          continue; // both pairs of the group are loaded at even j
        // Rows k (b0) and k + 4 (b1), columns 4*chunkOf(g)..+3 of the group.
        Value chunk = add(div(n0, 4), chunkOf(lQuad));
        Value baseChunk = mul(stage, tileB.rows * tileB.cols / epc);
        SmallVector<Value> rowsKN;
        for (int64_t q = 0; q < 2; ++q)
          rowsKN.push_back(memref::LoadOp::create(
              b, loc, smemBVec,
              ValueRange{add(baseChunk,
                             swizzle(add(lIn, kk * 8 + q * 4), chunk, cprB))}));
        for (int64_t jn = 0; jn < 4; ++jn) {
          SmallVector<Value> e;
          for (Value v : rowsKN)
            e.push_back(
                vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{jn}));
          bFrag.push_back(vector::FromElementsOp::create(
              b, loc, VectorType::get({2, 1}, elemT), e));
        }
        continue;
      } else if (!tf32) {
        // Stored [k][n]: lane -> k row l%16, n chunk l/16; transposed.
        Value off = add(
            bBase,
            mul(swizzle(add(l16, kk * 16), add(div(n0, 8), lHi), cprB), epc));
        pair = ldmatrix(smemB, off, true);
      } else {
        for (int64_t h = 0; h < 2; ++h) {
          SmallVector<Value> e;
          for (int64_t q = 0; q < 2; ++q)
            e.push_back(scalarAt(smemB, bBase, cprB, add(lIn, kk * 8 + q * 4),
                                 add(add(n0, h * 8), lQuad)));
          bFrag.push_back(vector::FromElementsOp::create(
              b, loc, VectorType::get({2, 1}, elemT), e));
        }
        continue;
      }
      int64_t w = tf32 ? 1 : 2;
      for (int64_t h = 0; h < 2; ++h)
        bFrag.push_back(vector::ExtractStridedSliceOp::create(
            b, loc, pair, ArrayRef<int64_t>{2 * h, 0}, ArrayRef<int64_t>{2, w},
            ArrayRef<int64_t>{1, 1}));
    }
    if (tf32) {
      // The tensor cores read the top 19 bits of an f32 (truncation: every
      // product's magnitude biased low, by ~1e-3 a layer, 2e-2 through
      // ResNet-50); rounded to nearest first, errors stay unbiased.
      for (Value &f : aFrag)
        f = roundToTf32(f);
      for (Value &f : bFrag)
        f = roundToTf32(f);
    }
    if (kk == 0)
      afterFirstLoads();
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t j = 0; j < nTiles; ++j) {
        // Serpentine over n so that consecutive mmas share a B fragment.
        int64_t jj = (i % 2) ? nTiles - 1 - j : j;
        Value &acc = out[i * nTiles + jj];
        acc = p.aType.isBF16()
                  ? mmaBf16(aFrag[i], bFrag[jj], acc)
                  : nvgpu::MmaSyncOp::create(b, loc, aFrag[i], bFrag[jj], acc,
                                             ArrayRef<int64_t>{16, 8, kStep},
                                             tf32);
      }
  }
  return out;
}

// The SIMT layout: thread (tr, tc) owns rows tr + i*TR (i < RM) and the two
// 4-column groups at tc*4 and tileN/2 + tc*4, so B rows are read as 16-byte
// vectors and a warp's A reads touch two rows (broadcast).
SmallVector<Value> KernelBuilder::simtStep(Value stage, ValueRange acc) {
  int64_t tc = s.tileN / 8, tr = threads / tc, rm = s.tileM / tr;
  Type f32 = b.getF32Type();
  VectorType v4 = VectorType::get({4}, f32);
  Value aBase = mul(stage, tileA.rows * tileA.cols);
  Value bBase = mul(stage, tileB.rows * tileB.cols);
  int64_t cprA = tileA.cols / 4, cprB = tileB.cols / 4;
  Value tRow = div(tid, tc), tCol = rem(tid, tc);
  // Loads 16-byte chunk `chunk` of tile row `row` (mem is the vector view).
  Value aBaseChunk = mul(stage, tileA.rows * tileA.cols / 4);
  Value bBaseChunk = mul(stage, tileB.rows * tileB.cols / 4);
  auto load4 = [&](Value mem, Value baseChunk, int64_t cpr, Value row,
                   Value chunk) -> Value {
    Value at = add(baseChunk, swizzle(row, chunk, cpr));
    return memref::LoadOp::create(b, loc, mem, ValueRange{at});
  };
  auto scalar = [&](Value mem, Value base, int64_t cpr, Value row,
                    Value col) -> Value {
    Value off =
        add(base, add(mul(swizzle(row, div(col, 4), cpr), 4), rem(col, 4)));
    return memref::LoadOp::create(b, loc, mem, ValueRange{off});
  };
  auto extract = [&](Value v, int64_t i) -> Value {
    return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i});
  };

  SmallVector<Value> out(acc.begin(), acc.end());
  for (int64_t kc = 0; kc < s.tileK / 4; ++kc) {
    // aVal[i][q]: A(row i, k = kc*4 + q).
    SmallVector<SmallVector<Value, 4>> aVal(rm);
    for (int64_t i = 0; i < rm; ++i) {
      Value row = add(tRow, i * tr);
      if (!p.transA) {
        Value v = load4(smemAVec, aBaseChunk, cprA, row, cst(kc));
        for (int64_t q = 0; q < 4; ++q)
          aVal[i].push_back(extract(v, q));
      } else {
        for (int64_t q = 0; q < 4; ++q)
          aVal[i].push_back(scalar(smemA, aBase, cprA, cst(kc * 4 + q), row));
      }
    }
    // bVal[h][q]: B(k = kc*4 + q, columns of group h) as a 4-vector.
    SmallVector<SmallVector<Value, 4>> bVal(2);
    for (int64_t h = 0; h < 2; ++h) {
      Value chunk = add(tCol, h * (s.tileN / 8));
      if (!p.transB) {
        for (int64_t q = 0; q < 4; ++q)
          bVal[h].push_back(
              load4(smemBVec, bBaseChunk, cprB, cst(kc * 4 + q), chunk));
      } else {
        // Stored [n][k]: one 16-byte read gives 4 k of one column.
        SmallVector<Value, 4> cols;
        for (int64_t e = 0; e < 4; ++e)
          cols.push_back(load4(smemBVec, bBaseChunk, cprB,
                               add(mul(chunk, 4), e), cst(kc)));
        for (int64_t q = 0; q < 4; ++q) {
          SmallVector<Value> e;
          for (int64_t col = 0; col < 4; ++col)
            e.push_back(extract(cols[col], q));
          bVal[h].push_back(vector::FromElementsOp::create(b, loc, v4, e));
        }
      }
    }
    for (int64_t q = 0; q < 4; ++q)
      for (int64_t i = 0; i < rm; ++i) {
        Value aSplat = vector::BroadcastOp::create(b, loc, v4, aVal[i][q]);
        for (int64_t h = 0; h < 2; ++h) {
          Value &accV = out[i * 2 + h];
          accV = vector::FMAOp::create(b, loc, aSplat, bVal[h][q], accV);
        }
      }
  }
  return out;
}

Value KernelBuilder::applyEpilogue(Value vals, Value row, Value col,
                                   Value *raw) {
  return gemmEpilogue(epi, vals, bias, residual, batchC, row, col, p.m, p.n,
                      raw);
}

void KernelBuilder::storeRow(Value row, Value col, Value vals) {
  auto vt = cast<VectorType>(vals.getType());
  int64_t len = vt.getNumElements();
  if (stash) {
    // The whole tile, rows and columns outside C included (their sums are
    // zeros of the zero-filled operands): no checks. As a memref.store of
    // a vector element, like the stages' vector accesses (smemAVec).
    Value at = add(mul(sub(row, blockM0), s.tileN), sub(col, blockN0));
    Value view = sharedView(rawShared, s.tileM * s.tileN / len, vt, 0);
    memref::StoreOp::create(b, loc, vals, view, ValueRange{div(at, len)});
    return;
  }
  Type cT = partial ? b.getF32Type() : epi.storedType(p.cType);
  bool needRow = p.m % s.tileM != 0, needCol = p.n % s.tileN != 0;
  // A bias or residual is read inside the bounds check of a whole-vector
  // store. (The split-K workspace gets raw sums: epi is empty then.)
  bool late = (epi.biasType || epi.residualType) && p.n % len == 0;
  // The stored values, and (epi.rawOut) those before the ReLU or
  // (epi.copyOut) the same again, for the second buffer.
  Value raw;
  auto finish = [&](Value v) {
    if (epi.elementFn && !partial)
      return applyElementFn(b, loc, epi, v, captured, batchC, row, col);
    v = epi.biasType || epi.residualType || epi.relu
            ? applyEpilogue(v, row, col, epi.rawOut ? &raw : nullptr)
            : v;
    if (!cT.isF32()) {
      auto t = VectorType::get({len}, cT);
      v = arith::TruncFOp::create(b, loc, t, v);
      if (raw)
        raw = arith::TruncFOp::create(b, loc, t, raw);
    }
    if (epi.copyOut)
      raw = v;
    return v;
  };
  // C's indices (a shuffled C's pixel and channel); the second buffer's are
  // the GEMM's own.
  auto at = [&](Value mem, Value batch, Value cc) -> SmallVector<Value, 3> {
    if (mem == c)
      return gemmOutIndices(b, loc, epi, p.n, batch, row, cc);
    return {batch, row, cc};
  };
  if (!late)
    vals = finish(vals);
  Value batch = partial ? split : batchC;
  if (p.n % len == 0) {
    // The segment is all in or all out, and aligned to its size.
    Value ok = land(needRow ? ult(row, p.m) : Value(),
                    needCol ? ult(col, p.n) : Value());
    whenTrue(ok, [&] {
      Value out = late ? finish(vals) : vals;
      for (auto [v, mem] : {std::pair(out, c), std::pair(raw, c2)})
        if (v)
          vector::StoreOp::create(b, loc, v, mem, at(mem, batch, col), false,
                                  llvm::Align(len * bytesOf(cT)));
    });
    return;
  }
  for (int64_t e = 0; e < len; ++e) {
    Value ce = add(col, e);
    Value ok = land(needRow ? ult(row, p.m) : Value(), ult(ce, p.n));
    auto ifOp = scf::IfOp::create(b, loc, ok, /*withElse=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    for (auto [v, mem] : {std::pair(vals, c), std::pair(raw, c2)})
      if (v)
        memref::StoreOp::create(
            b, loc, vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{e}),
            mem, at(mem, batch, ce));
  }
}

void KernelBuilder::epilogue(ValueRange acc) {
  if (path == Path::Simt) {
    int64_t tc = s.tileN / 8, tr = threads / tc, rm = s.tileM / tr;
    Value tRow = div(tid, tc), tCol = rem(tid, tc);
    for (int64_t i = 0; i < rm; ++i)
      for (int64_t h = 0; h < 2; ++h)
        storeRow(add(blockM0, add(tRow, i * tr)),
                 add(blockN0, add(mul(tCol, 4), h * (s.tileN / 2))),
                 acc[i * 2 + h]);
    return;
  }
  int64_t warpTileM = s.tileM / s.warpsM, warpTileN = s.tileN / s.warpsN;
  int64_t mTiles = warpTileM / 16, nTiles = warpTileN / 8;
  Value rowBase = add(blockM0, add(mul(warpM, warpTileM), div(lane, 4)));
  if (permutedB()) {
    // Lane quad position q holds columns 4q + j (element 0) and 16 + 4q + j
    // (element 1) of n-tile j of each 32-column group.
    Value colBase =
        add(blockN0, add(mul(warpN, warpTileN), mul(band(lane, 3), 4)));
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t grp = 0; grp < nTiles / 4; ++grp)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t x = 0; x < 2; ++x) {
            SmallVector<Value> e;
            for (int64_t jn = 0; jn < 4; ++jn)
              e.push_back(vector::ExtractOp::create(
                  b, loc, acc[i * nTiles + grp * 4 + jn],
                  ArrayRef<int64_t>{h, x}));
            Value v = vector::FromElementsOp::create(
                b, loc, VectorType::get({4}, b.getF32Type()), e);
            storeRow(add(rowBase, i * 16 + h * 8),
                     add(colBase, grp * 32 + x * 16), v);
          }
    return;
  }
  Value colBase =
      add(blockN0, add(mul(warpN, warpTileN), mul(band(lane, 3), 2)));
  for (int64_t i = 0; i < mTiles; ++i)
    for (int64_t j = 0; j < nTiles; ++j)
      for (int64_t h = 0; h < 2; ++h) {
        // Accumulator rows: h = 0 holds row lane/4, h = 1 row lane/4 + 8.
        Value v = vector::ExtractOp::create(b, loc, acc[i * nTiles + j],
                                            ArrayRef<int64_t>{h});
        storeRow(add(rowBase, i * 16 + h * 8), add(colBase, j * 8), v);
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
  int64_t tilesM = ceilDiv(p.m, s.tileM), tilesN = ceilDiv(p.n, s.tileN);

  tid = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
  lane = rem(tid, 32);
  Value warp = div(tid, 32);
  warpM = div(warp, s.warpsN);
  warpN = rem(warp, s.warpsN);

  auto [pidM, pidN] =
      groupedTile(mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x),
                  tilesM, tilesN);
  blockM0 = mul(pidM, s.tileM);
  blockN0 = mul(pidN, s.tileN);
  batchC = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::z);
  batchA = p.aBatched ? batchC : cst(0);
  batchB = p.bBatched ? batchC : cst(0);
  if (gather)
    gatherRows();
  // Split-K: this block's k-tiles are [kBase, kBase + kTiles / splitK).
  int64_t kTiles = ceilDiv(p.k, s.tileK);
  partial = s.splitK > 1;
  Value kBase = cst(0);
  if (partial) {
    split = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::y);
    kTiles /= s.splitK;
    kBase = mul(split, kTiles);
  }

  // The stages: [S][A tile] then [S][B tile], in dynamic shared memory.
  Value raw = dynamicSharedMemory();
  rawShared = raw;
  int64_t aElems = s.stages * tileA.rows * tileA.cols;
  int64_t bElems = s.stages * tileB.rows * tileB.cols;
  smemA = sharedView(raw, aElems, p.aType, 0);
  smemB = sharedView(raw, bElems, p.aType, aElems * eb);
  VectorType chunkT = VectorType::get({epc}, p.aType);
  smemAVec = sharedView(raw, aElems / epc, chunkT, 0);
  smemBVec = sharedView(raw, bElems / epc, chunkT, aElems * eb);

  for (int64_t st = 0; st + 1 < s.stages; ++st) {
    if (st < kTiles)
      token = copyStage(add(kBase, st), cst(st));
    else
      token = commitGroup();
  }

  // Accumulators.
  SmallVector<Value> init;
  Type f32 = b.getF32Type();
  if (path == Path::Simt) {
    int64_t tc = s.tileN / 8, rm = s.tileM / (threads / tc);
    Value z = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(VectorType::get({4}, f32), 0.0f));
    init.assign(rm * 2, z);
  } else {
    int64_t n = (s.tileM / s.warpsM / 16) * (s.tileN / s.warpsN / 8);
    Value z = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(VectorType::get({2, 2}, f32), 0.0f));
    init.assign(n, z);
  }

  auto loop = scf::ForOp::create(b, loc, cst(0), cst(kTiles), cst(1), init);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    nvgpu::DeviceAsyncWaitOp::create(b, loc, token,
                                     b.getI32IntegerAttr(s.stages - 2));
    mlir::gpu::BarrierOp::create(b, loc);
    // The prefetch of k-tile kt+S-1 is emitted after the first fragment
    // loads of this k-tile, so that the mmas start right after the barrier.
    auto prefetch = [&] {
      Value next = add(kt, s.stages - 1);
      auto ifOp = scf::IfOp::create(b, loc, ult(next, kTiles),
                                    /*withElse=*/false);
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        Value stage = rem(next, s.stages);
        next = partial ? add(kBase, next) : next;
        copyTile(true, next, stage);
        copyTile(false, next, stage);
      }
      // Commit unconditionally so that group counting stays uniform.
      commitGroup();
    };
    Value stage = rem(kt, s.stages);
    SmallVector<Value> next2;
    if (path == Path::Simt) {
      prefetch();
      next2 = simtStep(stage, loop.getRegionIterArgs());
    } else {
      next2 = mmaStep(stage, loop.getRegionIterArgs(), prefetch);
    }
    scf::YieldOp::create(b, loc, next2);
  }
  if (s.clusterSplitK)
    clusterEpilogue(loop.getResults());
  else
    epilogue(loop.getResults());
}

void KernelBuilder::clusterBarrier() {
  // NVVM's ops: their intrinsics are convergent, so LLVM never copies the
  // `.aligned` barrier into the branches of a condition (inline assembly
  // may be, and a warp reaching two copies hangs the cluster).
  NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
}

Value KernelBuilder::loadCluster4(Value addr, Value rank) {
  Type f32 = b.getF32Type();
  auto four =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  // Side effects, so that it stays after the cluster barrier.
  auto load = LLVM::InlineAsmOp::create(
      b, loc, four, ValueRange{addr, rank},
      b.getStringAttr("{\n.reg .b32 ra;\n"
                      "mapa.shared::cluster.u32 ra, $4, $5;\n"
                      "ld.shared::cluster.v4.f32 {$0, $1, $2, $3}, [ra];\n}"),
      b.getStringAttr("=f,=f,=f,=f,r,r,~{memory}"), b.getUnitAttr(), UnitAttr(),
      LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(), ArrayAttr());
  SmallVector<Value> e;
  for (int64_t i = 0; i < 4; ++i)
    e.push_back(LLVM::ExtractValueOp::create(b, loc, load.getResult(0), i));
  return vector::FromElementsOp::create(b, loc, VectorType::get({4}, f32), e);
}

void KernelBuilder::clusterEpilogue(ValueRange acc) {
  // No copy is in flight (the loop waited for its last k-tile), but every
  // warp must be done reading the stages the partial tile overwrites.
  mlir::gpu::BarrierOp::create(b, loc);
  stash = true;
  epilogue(acc);
  stash = false;
  clusterBarrier();
  // Block `split` (its rank in the cluster: the cluster spans grid.y) sums
  // rows [split * per, (split + 1) * per) of the tile over the splits, in
  // split order, 4 columns a thread at a time, and stores them as the
  // unsplit epilogue would.
  int64_t per = ceilDiv(s.tileM, s.splitK), quads = s.tileN / 4;
  int64_t chunks = per * quads;
  Value base =
      asI32(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, rawShared));
  partial = false;
  Value firstRow = mul(split, per);
  auto loop =
      scf::ForOp::create(b, loc, cst(0), cst(ceilDiv(chunks, threads)), cst(1));
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value chunk = add(mul(loop.getInductionVar(), threads), tid);
    Value row = add(firstRow, div(chunk, quads));
    Value col = mul(rem(chunk, quads), 4);
    Value ok = land(chunks % threads ? ult(chunk, chunks) : Value(),
                    s.tileM % s.splitK ? ult(row, s.tileM) : Value());
    auto body = [&] {
      Value byteOff = asI32(mul(add(mul(row, s.tileN), col), 4));
      Value addr = arith::AddIOp::create(b, loc, base, byteOff);
      Value sum = loadCluster4(addr, cstI32(0));
      for (int64_t q = 1; q < s.splitK; ++q)
        sum = arith::AddFOp::create(b, loc, sum, loadCluster4(addr, cstI32(q)));
      storeRow(add(blockM0, row), add(blockN0, col), sum);
    };
    if (ok)
      whenTrue(ok, body);
    else
      body();
  }
  // No block leaves while another may still read its shared memory.
  clusterBarrier();
}

bool isOperandType(Type t) {
  return t && (t.isBF16() || t.isF16() || t.isF32());
}

} // namespace

bool matmulKernelSupports(const MatmulProblem &p, std::string &why) {
  if (!isOperandType(p.aType) || p.aType != p.bType) {
    why = "matmul kernel: A and B must both be bf16, f16 or f32";
    return false;
  }
  if (!isOperandType(p.cType)) {
    why = "matmul kernel: C must be f32, bf16 or f16";
    return false;
  }
  if (p.m < 1 || p.n < 1 || p.k < 0 || p.batch < 1) {
    why = "matmul kernel: empty output (M, N and batch must be >= 1)";
    return false;
  }
  if (p.batch > 65535) {
    why = "matmul kernel: batch above 65535 (the grid's z limit)";
    return false;
  }
  // Index math is 64-bit; this bound only keeps the grid's x legal with the
  // smallest tiles the heuristic picks.
  if (ceilDiv(p.m, 32) * ceilDiv(p.n, 32) > (int64_t(1) << 31) - 1) {
    why = "matmul kernel: too many output tiles for one grid";
    return false;
  }
  return true;
}

/// matmulScheduleValid without the target's limits: what the builder needs.
static bool matmulShapeValid(const MatmulProblem &p, const MatmulSchedule &s,
                             std::string &why) {
  auto fail = [&](const std::string &msg) {
    why = "matmul schedule: " + msg;
    return false;
  };
  if (!matmulKernelSupports(p, why))
    return false;
  for (int64_t v : {s.tileM, s.tileN, s.tileK, s.warpsM, s.warpsN})
    if (v < 1 || !llvm::isPowerOf2_64(v))
      return fail("tile sizes and warp counts must be powers of two");
  if (s.stages < 2 || s.stages > 8)
    return fail("stages must be in [2, 8]");
  if (s.splitK < 1 || s.splitK > 65535)
    return fail("split_k must be in [1, 65535]");
  if (s.splitK > 1) {
    int64_t kTiles = (p.k + s.tileK - 1) / s.tileK;
    if (kTiles % s.splitK)
      return fail("split_k must divide the k-tiles (" + std::to_string(kTiles) +
                  " of tile_k " + std::to_string(s.tileK) + ")");
    if (p.batch != 1)
      return fail("split_k needs one matrix (batch 1)");
  }
  if (s.clusterSplitK && (s.splitK < 2 || s.splitK > kMaxClusterSplits))
    return fail("a cluster split-K needs 2 to " +
                std::to_string(kMaxClusterSplits) + " splits");
  int64_t threads = 32 * s.warpsM * s.warpsN;
  if (threads > 1024)
    return fail("more than 1024 threads");
  Path path = pathOf(p);
  int64_t eb = bytesOf(p.aType), epc = 16 / eb;
  if (path == Path::Simt) {
    int64_t tc = s.tileN / 8;
    if (s.tileN < 32 || threads % tc || s.tileM % (threads / tc) ||
        s.tileM / (threads / tc) > 16)
      return fail("SIMT needs tileN >= 32, threads divisible by tileN/8 and "
                  "at most 16 rows a thread");
    if (s.tileK < 4)
      return fail("SIMT needs tileK >= 4");
  } else {
    int64_t kStep = path == Path::Tf32 ? 8 : 16;
    if (s.tileM % (16 * s.warpsM) || s.tileN % (16 * s.warpsN) ||
        s.tileK % kStep)
      return fail("warp tiles must be multiples of 16 x 16 and tileK of the "
                  "mma k");
  }
  auto [ta, tb] = tileShapes(p, s);
  for (const TileShape &t : {ta, tb}) {
    int64_t cpr = t.cols / epc;
    if (cpr < 2)
      return fail("a shared tile row must hold at least 32 bytes");
    if (threads % cpr || (t.rows * cpr) % threads)
      return fail("a tile's 16-byte chunks must spread evenly over threads");
  }
  return true;
}

bool matmulScheduleValid(const MatmulProblem &p, const MatmulSchedule &s,
                         const ::tcc::TargetDesc &target, std::string &why) {
  if (!matmulShapeValid(p, s, why))
    return false;
  if (s.clusterSplitK && !target.clusters) {
    why = "matmul schedule: a cluster split-K needs thread-block clusters "
          "(sm_90 and later)";
    return false;
  }
  std::string limit;
  if (!sharedFits(sharedBytesOf(p, s), target, limit)) {
    why = "matmul schedule: " + limit;
    return false;
  }
  return true;
}

void chooseSplitK(const MatmulProblem &p, MatmulSchedule &s,
                  const ::tcc::TargetDesc &target) {
  s.splitK = 1;
  int64_t sms = target.multiprocessorsForHeuristics();
  int64_t blocks = ceilDiv(p.m, s.tileM) * ceilDiv(p.n, s.tileN) * p.batch;
  int64_t kTiles = ceilDiv(p.k, s.tileK);
  // Only when the tiles alone leave half the multiprocessors idle: the
  // partial sums cost a second launch and 8 bytes an output a split.
  if (p.batch != 1 || blocks * 2 > sms)
    return;
  // The most splits that keep the grid within two waves, each split at
  // least 4 k-tiles deep (a shallower one is all pipeline fill).
  // Up to 8 splits sum across a cluster (chooseSplitKReduction), more in a
  // second kernel: capping them at a cluster's 8 cost DenseNet-121 3.5% in
  // a CUDA graph (docs/performance.md, session 23).
  for (int64_t d = 2; d <= 32; ++d)
    if (kTiles % d == 0 && kTiles / d >= 4 && blocks * d <= 2 * sms)
      s.splitK = d;
  if (s.splitK > 1)
    s.stages = std::max<int64_t>(2, std::min(s.stages, kTiles / s.splitK + 1));
  chooseSplitKReduction(s, target);
}

void splitThinGrid(const MatmulProblem &p, MatmulSchedule &s,
                   const ::tcc::TargetDesc &target) {
  int64_t sms = target.multiprocessorsForHeuristics();
  int64_t blocks = ceilDiv(p.m, s.tileM) * ceilDiv(p.n, s.tileN) * p.batch;
  int64_t kTiles = ceilDiv(p.k, s.tileK), warps = s.warpsM * s.warpsN;
  if (s.splitK != 1 || p.batch != 1 || !target.clusters || kTiles < 8 ||
      blocks * warps >= 4 * sms)
    return;
  for (int64_t d = 2; d <= kMaxClusterSplits; ++d)
    if (kTiles % d == 0 && kTiles / d >= 4 && blocks * warps * d <= 8 * sms)
      s.splitK = d;
  if (s.splitK > 1)
    s.stages = std::max<int64_t>(2, std::min(s.stages, kTiles / s.splitK + 1));
  chooseSplitKReduction(s, target);
}

std::vector<MatmulSchedule>
matmulScheduleSpace(const MatmulProblem &p, const ::tcc::TargetDesc &target) {
  std::vector<MatmulSchedule> space;
  std::string why;
  for (int64_t tm : {32, 64, 128, 256})
    for (int64_t tn : {32, 64, 128, 256})
      for (int64_t tk : {16, 32, 64})
        for (int64_t wm : {1, 2, 4})
          for (int64_t wn : {1, 2, 4})
            for (int64_t st : {2, 3, 4})
              // Every split chooseSplitK may pick (divisors of the k-tiles
              // up to 32: the check keeps those), so that the heuristic's
              // choice is a point of the space.
              for (int64_t sk = 1; sk <= 32; ++sk) {
                MatmulSchedule s;
                s.tileM = tm;
                s.tileN = tn;
                s.tileK = tk;
                s.warpsM = wm;
                s.warpsN = wn;
                s.stages = st;
                s.splitK = sk;
                chooseSplitKReduction(s, target);
                if (matmulScheduleValid(p, s, target, why))
                  space.push_back(s);
              }
  return space;
}

void chooseSplitKReduction(MatmulSchedule &s, const ::tcc::TargetDesc &target) {
  s.clusterSplitK =
      target.clusters && s.splitK > 1 && s.splitK <= kMaxClusterSplits;
}

MatmulSchedule chooseMatmulSchedule(const MatmulProblem &p,
                                    const ::tcc::TargetDesc &target) {
  int64_t maxShared = target.maxSharedPerBlock,
          sms = target.multiprocessorsForHeuristics();
  Path path = pathOf(p);
  // Measured on the H200 at 4096^3 and 8192^3 (docs: gemm-report.md): two
  // resident 4-warp blocks of 128x128 beat one 8-warp block of 128x256,
  // whose barriers stall the whole multiprocessor.
  MatmulSchedule s;
  if (path == Path::Simt)
    s = {128, 128, 16, 2, 4, 3};
  else if (path == Path::Tf32)
    s = {128, 128, 16, 2, 2, 4}; // 206 against 198 TFLOP/s for tileK 32
                                 // with 3 stages, at 4096^3
  else
    s = {128, 128, 32, 2, 2, 4};
  // Smaller tiles while the grid would leave multiprocessors idle; warp
  // tiles stay at least 32 wide.
  auto blocks = [&] {
    return ceilDiv(p.m, s.tileM) * ceilDiv(p.n, s.tileN) * p.batch;
  };
  while (blocks() < sms && (s.tileM > 32 || s.tileN > 32)) {
    if (s.tileM >= s.tileN && s.tileM > 32) {
      s.tileM /= 2;
      if (s.tileM / s.warpsM < 32 && s.warpsM > 1)
        s.warpsM /= 2;
    } else if (s.tileN > 32) {
      s.tileN /= 2;
      if (s.tileN / s.warpsN < 32 && s.warpsN > 1)
        s.warpsN /= 2;
    }
  }
  // Shallow K: fewer stages than k-tiles buy nothing.
  int64_t kTiles = std::max<int64_t>(1, ceilDiv(p.k, s.tileK));
  s.stages = std::max<int64_t>(2, std::min(s.stages, kTiles + 1));
  while (s.stages > 2 && sharedBytesOf(p, s) > maxShared)
    --s.stages;
  chooseSplitK(p, s, target);
  std::string why;
  if (!matmulScheduleValid(p, s, target, why)) {
    // The conservative fallback that every supported problem accepts.
    s = path == Path::Simt ? MatmulSchedule{64, 64, 16, 2, 2, 2}
                           : MatmulSchedule{64, 64, 32, 2, 2, 2};
  }
  return s;
}

FailureOr<KernelLaunch>
buildMatmulKernel(OpBuilder &b, mlir::gpu::GPUModuleOp module, StringRef name,
                  const MatmulProblem &p, const MatmulSchedule &s,
                  const GemmEpilogue &epilogue) {
  return buildGemmKernel(b, module, name, p, s, nullptr, epilogue);
}

FailureOr<KernelLaunch>
buildGemmKernel(OpBuilder &b, mlir::gpu::GPUModuleOp module, StringRef name,
                const MatmulProblem &p, const MatmulSchedule &s,
                const GemmGather *gather, const GemmEpilogue &epilogue) {
  std::string why;
  if (!matmulShapeValid(p, s, why))
    return module.emitError(why), failure();
  if (gather && (p.transA || p.batch != 1))
    return module.emitError("gathered GEMM: A row-major and one batch"),
           failure();
  if (!gemmOutputsValid(epilogue, p.batch * p.m, p.n, why))
    return module.emitError(why), failure();
  loadTemplateDialects(b.getContext());

  auto memrefOf = [](ArrayRef<int64_t> shape, Type t) {
    return MemRefType::get(shape, t);
  };
  int64_t ba = p.aBatched ? p.batch : 1, bb = p.bBatched ? p.batch : 1;
  Type aT = p.transA ? memrefOf({ba, p.k, p.m}, p.aType)
                     : memrefOf({ba, p.m, p.k}, p.aType);
  if (gather)
    aT = memrefOf({gather->batch * gather->h * gather->w * gather->c}, p.aType);
  Type bT = p.transB ? memrefOf({bb, p.n, p.k}, p.bType)
                     : memrefOf({bb, p.k, p.n}, p.bType);
  Type cT = gemmOutBufferType(epilogue, p.batch, p.m, p.n,
                              epilogue.storedType(p.cType));
  // Split-K: the workspace in C's place; the epilogue runs in the reduction
  // (in the kernel itself with a cluster split-K).
  bool split = s.splitK > 1 && !s.clusterSplitK;
  GemmEpilogue epi = split ? GemmEpilogue() : epilogue;
  if (split)
    cT = memrefOf({s.splitK, p.m, p.n}, b.getF32Type());
  SmallVector<Type> args = {aT, bT, cT};
  // epi.elementFn's buffers after B.
  if (epi.elementFn)
    args.insert(args.begin() + 2, epi.captured.begin(), epi.captured.end());
  if (epi.biasType)
    args.insert(args.begin() + 2, memrefOf({p.n}, epi.biasType));
  if (epi.residualType)
    args.insert(args.end() - 1,
                memrefOf({p.batch, p.m, p.n}, epi.residualType));
  // After C: the values before the ReLU, or a copy of C's.
  if (epi.secondOut())
    args.push_back(memrefOf({p.batch, p.m, p.n}, p.cType));

  OpBuilder::InsertionGuard g(b);
  int64_t threads = 32 * s.warpsM * s.warpsN;
  auto func = createKernelFunc(b, module, name, args, threads);
  // One warp a block comes from a grid that leaves multiprocessors idle
  // (chooseMatmulSchedule's smallest tiles): nothing is gained by the
  // occupancy ptxas aims for on its own, 72 registers at 32 threads, under
  // which a 32x32 tile with GELU in its epilogue spilled (CI's draw of
  // matmul_epilogue_test, seed 4025007556). As many blocks as leave a
  // thread 255 registers (attention's setResidency).
  if (threads == 32)
    func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(65536 / (threads * 255)));
  Block &entry = func.getBody().front();
  Location loc = module.getLoc();
  KernelBuilder kb(b, loc, p, s, gather, epi);
  unsigned nC = entry.getNumArguments() - (epi.secondOut() ? 2 : 1);
  if (epi.elementFn)
    kb.setCaptured(entry.getArguments().slice(2, epi.captured.size()));
  kb.build(entry.getArgument(0), entry.getArgument(1),
           epi.biasType ? entry.getArgument(2) : Value(),
           epi.residualType ? entry.getArgument(nC - 1) : Value(),
           entry.getArgument(nC),
           epi.secondOut() ? entry.getArgument(nC + 1) : Value());
  mlir::gpu::ReturnOp::create(b, loc);

  KernelLaunch launch;
  launch.grid = {ceilDiv(p.m, s.tileM) * ceilDiv(p.n, s.tileN), s.splitK,
                 p.batch};
  launch.block = {threads, 1, 1};
  launch.sharedBytes = sharedBytesOf(p, s);
  if (s.clusterSplitK)
    launch.cluster = {1, s.splitK, 1};
  return launch;
}

int64_t splitKWorkspaceBytes(const MatmulProblem &p, const MatmulSchedule &s) {
  return s.splitK > 1 && !s.clusterSplitK ? s.splitK * p.m * p.n * 4 : 0;
}

namespace {

/// The split-K reduction: a thread per `len` consecutive columns of a row.
class SplitKReduceBuilder : TemplateBuilder {
public:
  SplitKReduceBuilder(OpBuilder &b, Location loc, const MatmulProblem &p,
                      int64_t splits, const GemmEpilogue &epi, int64_t len)
      : TemplateBuilder(b, loc), p(p), splits(splits), epi(epi), len(len) {}

  void build(Value ws, ValueRange captured, Value bias, Value residual, Value c,
             Value raw, int64_t block) {
    Value tid = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
    Value blk = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
    Value linear = add(mul(blk, block), tid);
    int64_t perRow = p.n / len, total = p.m * perRow;
    auto ifOp = scf::IfOp::create(b, loc, ult(linear, total), false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value row = div(linear, perRow), col = mul(rem(linear, perRow), len);
    Type f32 = b.getF32Type();
    auto vecT = [&](Type t) { return VectorType::get({len}, t); };
    auto load = [&](Value mem, Type t, ValueRange idx) -> Value {
      // Buffers are 16-byte aligned (the runtime's rule), no more.
      Value v = vector::LoadOp::create(
          b, loc, vecT(t), mem, idx, false,
          llvm::Align(std::min<int64_t>(16, len * bytesOf(t))));
      return t.isF32() ? v : arith::ExtFOp::create(b, loc, vecT(f32), v);
    };
    Value zero = cst(0);
    // In split order, so the sum does not depend on the launch.
    Value sum = load(ws, f32, ValueRange{zero, row, col});
    for (int64_t sp = 1; sp < splits; ++sp)
      sum = arith::AddFOp::create(b, loc, sum,
                                  load(ws, f32, ValueRange{cst(sp), row, col}));
    if (epi.elementFn) {
      Type st = epi.storedType(p.cType);
      vector::StoreOp::create(
          b, loc, applyElementFn(b, loc, epi, sum, captured, zero, row, col), c,
          ValueRange{zero, row, col}, false,
          llvm::Align(std::min<int64_t>(16, len * bytesOf(st))));
      return;
    }
    if (epi.biasType)
      sum = arith::AddFOp::create(b, loc, sum,
                                  load(bias, epi.biasType, ValueRange{col}));
    if (epi.residualType)
      sum = arith::AddFOp::create(
          b, loc, sum,
          load(residual, epi.residualType, ValueRange{zero, row, col}));
    Value before = sum;
    if (epi.relu)
      sum = arith::MaximumFOp::create(
          b, loc, sum,
          arith::ConstantOp::create(b, loc,
                                    DenseElementsAttr::get(vecT(f32), 0.0f)));
    auto store = [&](Value v, Value mem) {
      if (!p.cType.isF32())
        v = arith::TruncFOp::create(b, loc, vecT(p.cType), v);
      SmallVector<Value, 3> idx =
          mem == c ? gemmOutIndices(b, loc, epi, p.n, zero, row, col)
                   : SmallVector<Value, 3>{zero, row, col};
      vector::StoreOp::create(b, loc, v, mem, idx, false,
                              llvm::Align(len * bytesOf(p.cType)));
    };
    store(sum, c);
    if (raw)
      store(epi.copyOut ? sum : before, raw);
  }

private:
  const MatmulProblem &p;
  int64_t splits;
  GemmEpilogue epi;
  int64_t len;
};

} // namespace

KernelLaunch buildSplitKReduceKernel(OpBuilder &b,
                                     mlir::gpu::GPUModuleOp module,
                                     StringRef name, const MatmulProblem &p,
                                     int64_t splits,
                                     const GemmEpilogue &epilogue) {
  loadTemplateDialects(b.getContext());
  OpBuilder::InsertionGuard g(b);
  // Vectors of up to 16 bytes of C, as long as rows split into them evenly
  // (each vector access then stays aligned to its size).
  int64_t len = 1;
  while (len < 8 && p.n % (len * 2) == 0 && len * 2 * bytesOf(p.cType) <= 16)
    len *= 2;
  SmallVector<Type> args = {
      MemRefType::get({splits, p.m, p.n}, b.getF32Type())};
  if (epilogue.elementFn)
    args.append(epilogue.captured.begin(), epilogue.captured.end());
  if (epilogue.biasType)
    args.push_back(MemRefType::get({p.n}, epilogue.biasType));
  if (epilogue.residualType)
    args.push_back(MemRefType::get({1, p.m, p.n}, epilogue.residualType));
  args.push_back(
      gemmOutBufferType(epilogue, 1, p.m, p.n, epilogue.storedType(p.cType)));
  if (epilogue.secondOut())
    args.push_back(MemRefType::get({1, p.m, p.n}, p.cType));
  int64_t total = p.m * (p.n / len);
  int64_t block = std::min<int64_t>(256, (total + 31) / 32 * 32);
  auto func = createKernelFunc(b, module, name, args, block);
  Block &entry = func.getBody().front();
  Location loc = module.getLoc();
  unsigned nC = entry.getNumArguments() - (epilogue.secondOut() ? 2 : 1);
  SplitKReduceBuilder(b, loc, p, splits, epilogue, len)
      .build(entry.getArgument(0),
             entry.getArguments().slice(
                 1, epilogue.elementFn ? epilogue.captured.size() : 0),
             epilogue.biasType ? entry.getArgument(1) : Value(),
             epilogue.residualType ? entry.getArgument(nC - 1) : Value(),
             gemmOutView(b, loc, epilogue, entry.getArgument(nC), p.n),
             epilogue.secondOut() ? entry.getArgument(nC + 1) : Value(), block);
  mlir::gpu::ReturnOp::create(b, loc);
  KernelLaunch launch;
  launch.grid = {ceilDiv(total, block), 1, 1};
  launch.block = {block, 1, 1};
  launch.sharedBytes = 0;
  return launch;
}

} // namespace tcc::gpu
