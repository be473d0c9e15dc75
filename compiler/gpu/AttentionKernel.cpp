//===- AttentionKernel.cpp - the fused attention kernel template ----------===//
//
// The kernel, for a block owning query tile qt of head h in batch z:
//
//   copy the Q tile into shared memory (one cp.async group)
//   [tStart, tEnd) = the key tiles the mask can keep for these rows
//   prologue: copy K and V of tiles tStart..tStart+S-2 (a group each)
//   for j in [tStart, tEnd):
//     wait for K_j; barrier; copy K and V of tile j+S-1 into the stage read
//       at j-1
//     if the mask keeps nothing of the tile: skip it (checked only where the
//       bounds can be loose)
//     S = Q K_j^T (mma.sync; K given transposed, [D][keys] tiles, by
//       ldmatrix.trans as V); scale, scoreMod; if the mask is partial on the
//       tile: masked scores become -inf
//     online softmax: new row max (quad shuffles), correction of O and l,
//       P = contribution(S, max), kept in registers as mma A fragments
//     wait for V_j; barrier; O += P V_j (V fragments by ldmatrix.trans)
//   O / l (row sums reduced over the quad once, here), stored.
//
// A warp owns blockQ / warps query rows (mTiles m16 tiles) and every key of
// the tile, so the softmax's row reductions stay inside a quad of lanes: the
// m16n8 accumulator gives lane l rows l/4 and l/4 + 8, columns 2(l%4)+{0,1}.
// That is also the layout of the m16n8k16 A fragment, so S turns into P's
// fragment with a conversion and no data movement.
//
// Masks are conjunctions of linear constraints a*q + b*k + c >= 0. Over a
// (query tile, key tile) rectangle such a function takes its extremes at
// corners, so each tile is classified exactly: fully masked (outside the
// loop bounds, or skipped where constraints interact), fully kept (no mask
// code runs), or partial (masked per element).
// Keys past lk are one more constraint of the same form.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/AttentionKernel.h"
#include "compiler/gpu/AttentionCommon.h"

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
#include <cmath>
#include <cstdlib>
#include <limits>
#include <tuple>

using namespace mlir;

namespace tcc::gpu {
namespace {

/// f32 problems run on tensor cores as three tf32 MMAs a product (3xTF32,
/// below): an f32 operand is the sum of two tf32 values.
bool splitF32(const AttentionProblem &p) { return p.elemType.isF32(); }

/// The bytes of an element of Q, K, V and O, and the elements of a 16-byte
/// chunk (the unit of every copy and of the swizzle).
int64_t elemBytes(const AttentionProblem &p) { return splitF32(p) ? 4 : 2; }
int64_t chunkElems(const AttentionProblem &p) { return 16 / elemBytes(p); }

/// The head size the MMAs compute on: head size `d` rounded up to 16 (one
/// k-step of Q K^T, and an even number of n-tiles of P V); f32 to 32 (P V's
/// B fragments come 4 n-tiles at a time, below). Head sizes are whole
/// 16-byte chunks: the padding's chunks are zero-filled in shared memory,
/// add nothing to the scores, and their columns of O are never stored.
int64_t computeDimOf(const AttentionProblem &p, int64_t d) {
  return llvm::alignTo(d, splitF32(p) ? 32 : 16);
}
/// Q K^T's k extent (Q's and K's head size), and P V's n extent (V's).
int64_t computeDim(const AttentionProblem &p) {
  return computeDimOf(p, p.headDim);
}
int64_t computeDimV(const AttentionProblem &p) {
  return computeDimOf(p, p.dimV());
}

/// The row length of the shared tiles: the larger head size (Q's and K's,
/// or V's) rounded up to a power of two of at least 64 elements (8 16-byte
/// chunks, which the swizzle and the fragment addressing want). Columns
/// past a tensor's compute dim are never read by an MMA; every chunk past
/// its head size is zero-filled.
int64_t tileRow(const AttentionProblem &p) {
  return std::max<int64_t>(64,
                           llvm::PowerOf2Ceil(std::max(p.headDim, p.dimV())));
}

/// The row length of a K tile given transposed ([headDim][keys]): the key
/// tile rounded up to at least 64 elements (as tileRow, for the swizzle).
int64_t kTransposedRow(int64_t blockKV) {
  return std::max<int64_t>(64, llvm::PowerOf2Ceil(blockKV));
}

/// The elements of one stage of K.
int64_t kStageElems(const AttentionProblem &p, int64_t blockKV) {
  return p.kTransposed ? computeDim(p) * kTransposedRow(blockKV)
                       : blockKV * tileRow(p);
}

int64_t sharedBytesOf(const AttentionProblem &p, const AttentionSchedule &s) {
  // 3xTF32 keeps Q split: the tile holds the big parts, a second one the
  // small parts; the current K or V tile's small parts take one more key
  // tile, and V's big parts, interleaved by key pairs, another
  // (AttentionBuilder::splitK, splitV).
  int64_t qTiles = splitF32(p) ? 2 : 1;
  int64_t smallKV = splitF32(p) ? 2 * s.blockKV * tileRow(p) : 0;
  return (qTiles * s.blockQ * tileRow(p) +
          s.stages * (kStageElems(p, s.blockKV) + s.blockKV * tileRow(p)) +
          smallKV) *
         elemBytes(p);
}

/// The decode partial kernel as the builder sees it: a 16-row query tile.
AttentionSchedule asAttention(const DecodeSchedule &s) {
  return {16, s.blockKV, s.warps, s.stages};
}

/// The partial kernel's shared memory: the tiles, then (over the K and V
/// stages) the warps' results, 16 rows of O, m and l each.
int64_t decodeSharedBytes(const AttentionProblem &p, const DecodeSchedule &s) {
  int64_t merge = 16 * tileRow(p) * 2 + s.warps * 16 * (p.dimV() + 2) * 4;
  return std::max(sharedBytesOf(p, asAttention(s)), merge);
}

/// Tells ptxas (.minnctapersm) the residency to plan registers for: as many
/// blocks as still leave a thread all 255 registers (2 at 128 threads, 1 at
/// 256; 64K registers a multiprocessor from sm_80 on). Left to itself, ptxas
/// (13.0) picks an occupancy target of its own, 128 or 168 registers at 128
/// threads (four or three blocks), and spills in the key loop to meet it
/// when a few more values are live (per-score reads of masks and biases,
/// strided addressing, Q's fragments at head sizes 96 and 128). The launch
/// never uses that residency: chooseAttentionSchedule takes 64-row blocks
/// only where the grid then needs at most two blocks a multiprocessor, and
/// ptxas already gives the 128-row kernels of larger grids 220 to 255
/// registers; the decode partial kernel calls this only where its shared
/// memory admits at most two blocks.
void setResidency(mlir::gpu::GPUFuncOp func, int64_t threads) {
  constexpr int64_t kRegistersPerSM = 65536, kMaxRegisters = 255;
  int64_t blocks =
      std::max<int64_t>(1, kRegistersPerSM / (threads * kMaxRegisters));
  func->setAttr(
      NVVM::NVVMDialect::getMinctasmAttrName(),
      IntegerAttr::get(IntegerType::get(func.getContext(), 32), blocks));
}

int64_t decodeChunks(const AttentionProblem &p, const DecodeSchedule &s) {
  return ceilDiv(ceilDiv(p.lk, s.blockKV), s.chunkTiles);
}

/// Builds the kernel body; all helpers emit at the builder's insertion point.
class AttentionBuilder : AttentionArith {
public:
  /// `decode`: the partial kernel of the decode form (s.blockQ is 16; the
  /// warps share the rows and split each key tile).
  AttentionBuilder(OpBuilder &b, Location loc, const AttentionProblem &p,
                   const AttentionSchedule &s,
                   const DecodeSchedule *decode = nullptr)
      : AttentionArith(b, loc, p), s(s), decode(decode), threads(32 * s.warps),
        ce(chunkElems(p)), ld(tileRow(p)), cpr(ld / ce),
        ldK(p.kTransposed ? kTransposedRow(s.blockKV) : ld),
        rowsPerWarp(decode ? 16 : s.blockQ / s.warps), mTiles(rowsPerWarp / 16),
        keysPerWarp(decode ? s.blockKV / s.warps : s.blockKV),
        nS(keysPerWarp / 8), nO(computeDimV(p) / 8), nOStored(p.dimV() / 8) {
    elemT = p.elemType;
    split = splitF32(p);
    // Softmax's own algebra with no score modification: the row max is kept
    // over raw Q K^T and scale * log2(e) folds into one FMA before ex2.
    fast = !p.scoreMod && !p.correction && !p.contribution && p.scale > 0;
    constraints.assign(p.mask.begin(), p.mask.end());
    if (p.lk % s.blockKV)
      constraints.push_back({0, -1, p.lk - 1});
    // Q's fragments take 4 registers a k-step (of 16 elements in 16 bits,
    // 8 in f32): beside the accumulators of wider heads they would spill.
    qInRegs = !split && mTiles == 1 && computeDim(p) * elemBytes(p) <= 256;
    if (decode) {
      // Q and O are the 4-D tensors where no merged view exists
      // (buildDecodeKernels).
      int64_t group = p.headsQ / p.headsKV;
      SmallVector<int64_t, 4> qs =
          attentionOperandStrides(p, AttentionOperand::Q);
      SmallVector<int64_t, 4> os =
          attentionOperandStrides(p, AttentionOperand::O);
      qSplit = !mergedStride(group, qs[1], p.lq, qs[2]);
      oSplit = !mergedStride(group, os[1], p.lq, os[2]) ||
               !mergedStride(p.batch, os[0], p.headsKV, group * os[1]);
    }
  }

  using AttentionArith::setCaptured;

  /// Prefill: `o` is the output. Decode: `o` and `stats` are the scratch
  /// buffers of partial O and (m, l).
  void build(Value q, Value k, Value v, Value o, Value stats = nullptr);

private:
  Value extract(Value v, ArrayRef<int64_t> pos) {
    return vector::ExtractOp::create(b, loc, v, pos);
  }

  /// Copies rows row0..row0+rows-1 of src[batch, head] (rows past `bound`
  /// zero-filled) into the swizzled tile at element `dstBase` of `dst`.
  /// `dims`: the tensor's head size (V's may differ from Q's and K's).
  void copyRows(Value src, Value head, Value row0, int64_t bound, int64_t rows,
                Value dst, Value dstBase, int64_t dims);
  /// The indices of element `col` of row `row` of src[batch, head]: decode's
  /// row r of key/value head `head` is query head head * group + r / lq,
  /// position r % lq, where Q is the 4-D tensor.
  SmallVector<Value, 4> rowIndices(Value src, Value head, Value row,
                                   Value col) {
    if (src != qArg || !qSplit)
      return {batch, head, row, col};
    return {batch, add(mul(head, p.headsQ / p.headsKV), div(row, p.lq)),
            rem(row, p.lq), col};
  }
  void waitGroups(int64_t pending) {
    nvgpu::DeviceAsyncWaitOp::create(b, loc, token,
                                     b.getI32IntegerAttr(pending));
  }
  /// Copies K or V of key tile `tile` into `stage` if tile < tEnd, then
  /// commits (always, so that group counts stay uniform).
  /// `live`: whether the tile keeps a key (key skipping), when known.
  void copyKVTile(bool isK, Value tile, Value stage, Value live = {});
  /// Copies the key tile `tile` of K given transposed ([headDim][keys]) into
  /// the swizzled [headDim][ldK] tile at element `dstBase` of smemK (keys
  /// past lk zero-filled).
  void copyKTransposed(Value tile, Value dstBase);

  Value ldmatrix(Value mem, Value off, bool transpose) {
    return nvgpu::LdMatrixOp::create(
        b, loc, VectorType::get({4, split ? 1 : 2}, elemT), mem,
        ValueRange{off}, transpose, /*numTiles=*/4);
  }
  /// The B fragment `half` (0 or 1) of an ldmatrix x4 pair.
  Value half(Value pair, int64_t h) {
    int64_t cols = cast<VectorType>(pair.getType()).getDimSize(1);
    return vector::ExtractStridedSliceOp::create(
        b, loc, pair, ArrayRef<int64_t>{2 * h, 0}, ArrayRef<int64_t>{2, cols},
        ArrayRef<int64_t>{1, 1});
  }
  Value mma(Value aFrag, Value bFrag, Value acc);
  /// An f32 fragment as tf32 (big, small): big rounds it, small rounds the
  /// rest (3xTF32).
  std::pair<Value, Value> splitTf32(Value frag) {
    Value big = roundToTf32(frag);
    return {big, roundToTf32(arith::SubFOp::create(b, loc, frag, big))};
  }
  /// acc + a x b from split fragments: the small products first, then the
  /// big one (a_small x b_small, below f32's precision, is left out).
  Value mma3(std::pair<Value, Value> a, std::pair<Value, Value> bf, Value acc) {
    acc = mmaTf32(a.second, bf.first, acc);
    acc = mmaTf32(a.first, bf.second, acc);
    return mmaTf32(a.first, bf.first, acc);
  }
  Value mmaTf32(Value aFrag, Value bFrag, Value acc) {
    return nvgpu::MmaSyncOp::create(b, loc, aFrag, bFrag, acc,
                                    ArrayRef<int64_t>{16, 8, 8},
                                    /*tf32Enabled=*/true);
  }
  /// O += P V for one key tile in f32 (3xTF32; see tileStep).
  void pvF32(ArrayRef<Value> pv, ArrayRef<Value> corrVecs,
             SmallVectorImpl<Value> &oAcc);
  /// 3xTF32: splits the `chunks` 16-byte chunks of `tile` from `base` in
  /// place (the big parts), the small parts to `small` at the same offsets
  /// from its start.
  void splitInPlace(Value tile, Value base, Value small, int64_t chunks);
  /// Calls `body` with items tid, tid + threads, ... below `items`, the
  /// last round guarded where it would pass them.
  void forEachItem(int64_t items, llvm::function_ref<void(Value)> body);
  /// 3xTF32: splits K's tile at `base` (splitInPlace, the small parts to
  /// smemKVSmall), then barriers (the loop's barrier before it).
  void splitK(Value base);
  /// 3xTF32: splits V's tile at `base` into smemVBig and smemKVSmall,
  /// interleaved by key pairs (pvF32), between barriers.
  void splitV(Value base);
  /// 3xTF32: the element offset of V's (key pair `pair`, 16-byte chunk
  /// `chunk`) in smemVBig and smemKVSmall (splitV).
  Value vPairOffset(Value pair, Value chunk);
  /// 3xTF32: stores row half h of m-tile i (O's columns permuted, pvF32).
  void storeRowF32(ValueRange oAcc, int64_t i, int64_t h, Value row, Value inv);
  /// Q's A fragment for m-tile i, k-step kk (from shared memory: smemQ, or
  /// `from`, a tile of the same layout).
  Value qFragment(int64_t i, int64_t kk, Value from = {});
  /// The per-thread ldmatrix bases tA.
  void fragmentBases();
  /// `v`, through an asm that LLVM cannot see through or hoist.
  Value opaque(Value v);

  /// One key tile: returns the new loop-carried values (O..., m..., l...).
  SmallVector<Value> tileStep(Value stage, Value k0, ValueRange carried);
  /// The mask per element, applied to the score vectors `sv`.
  SmallVector<Value> applyMask(ArrayRef<Value> sv, Value k0);
  void epilogue(ValueRange carried);
  /// Decode: merges the warps' partial results in shared memory and writes
  /// the block's to scratch.
  void decodeEpilogue(ValueRange carried);
  /// The correction of an accumulator built against running value `oldRun`
  /// (-inf: nothing seen) when it becomes `newRun` (finite): the problem's,
  /// or softmax's exp(oldRun - newRun).
  Value correctionOf(Value oldRun, Value newRun) {
    return p.correction ? p.correction(b, loc, oldRun, newRun)
                        : exp2(fmul(fsub(oldRun, newRun), cstF(kLog2E)));
  }
  /// `m` where it is finite, else 0 (see tileStep: a row with nothing kept).
  Value finiteRun(Value m) {
    Value none =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                              cstF(-std::numeric_limits<double>::infinity()));
    return select(none, cstF(0.0), m);
  }

public:
  /// Decode: the indices in O of column `col` of row `r` of the packed rows
  /// of batch-and-head `bh` (batch * headsKV + kvHead): the merged
  /// [batch * headsKV, rows, headDim] view, or the 4-D O (oSplit).
  SmallVector<Value, 4> outputIndices(Value bh, Value r, Value col) {
    if (!oSplit)
      return {bh, r, col};
    int64_t group = p.headsQ / p.headsKV;
    return {div(bh, p.headsKV),
            add(mul(rem(bh, p.headsKV), group), div(r, p.lq)), rem(r, p.lq),
            col};
  }
  SmallVector<Value, 4> outputIndices(Value r, Value col) {
    return outputIndices(add(mul(batch, p.headsKV), kvHead), r, col);
  }

  /// The decode form's combine kernel: `o` from the partial results.
  void buildCombine(Value partO, Value stats, Value o);

private:
  /// The query position and the query head of the thread's row h of m-tile
  /// i (i32), and the key position of its first score of a tile at k0.
  Value rowQ(int64_t i, int64_t h) {
    return decode ? rowQI32[h] : add(qThreadI32, i * 16 + h * 8);
  }
  Value rowHead(int64_t h) { return decode ? rowHeadI32[h] : headI32; }
  Value keyThread(Value k0) {
    Value k = add(k0, mul(tq, 2));
    return toI32(warpKey ? add(k, warpKey) : k);
  }

  const AttentionSchedule &s;
  const DecodeSchedule *decode;
  // nO: n-tiles of O computed (computeDim / 8); nOStored: of them, those
  // inside the head size.
  // ce: elements of a 16-byte chunk.
  int64_t threads, ce, ld, cpr, ldK, rowsPerWarp, mTiles, keysPerWarp, nS, nO,
      nOStored;
  Type elemT;
  bool fast, qInRegs, split;
  SmallVector<MaskConstraint, 3> constraints;

  Value qArg, kArg, vArg, oArg;
  Value smemQ, smemK, smemV; // 1-D element views of the shared tiles
  Value smemQSmall;          // 3xTF32: Q's small parts (smemQ: the big)
  Value smemKVSmall;         // 3xTF32: the current K or V tile's small parts
  Value smemVBig;            // 3xTF32: the current V tile's big parts
  Value smallBase;           // 0, opaque inside the key loop (see tileStep)
  Value tid, lane, warpRow, gq, tq;
  Value batch, head, kvHead, tEnd;
  Value batchI32, headI32, qThreadI32;
  Value warpKey;                   // decode: the warp's first key of a tile
  Value chunk, statsArg;           // decode
  Value rowQI32[2], rowHeadI32[2]; // decode
  SmallVector<Value> qFrags;       // when qInRegs: [kk]
  SmallVector<Value> tA;           // fragment bases (elements), by chunk pair
  SmallVector<Value> tAK;          // K's, when given transposed (rows of ldK)
  SmallVector<Value> tBK;          // 3xTF32: K's, B fragments adjacent
  Value tV[2];                     // 3xTF32: V's pair loads (pvF32)
  Value qBase; // the warp's first Q row (opaque inside the loop)
  Value token;
  // Decode: Q (partial kernel) and O (combine) given as the 4-D tensors,
  // their rows not mergeable into one axis.
  bool qSplit = false, oSplit = false;
};

void AttentionBuilder::copyRows(Value src, Value hd, Value row0, int64_t bound,
                                int64_t rows, Value dst, Value dstBase,
                                int64_t dims) {
  int64_t chunks = rows * cpr, rowStep = threads / cpr;
  // Tiles start at multiples of `rows`, so only a ragged bound needs checks.
  bool needRow = bound % rows != 0;
  Value cChunk = rem(tid, cpr);
  Value rBase = div(tid, cpr);
  Value col = mul(cChunk, ce);
  // Chunks past the head size (a padded tile row) read 0 bytes of column 0:
  // zero-filled.
  Value inHead;
  if (ld != dims) {
    inHead = ult(cChunk, dims / ce);
    col = select(inHead, col, cst(0));
  }
  // When rowStep is a multiple of 8, every row of this thread has the same
  // swizzle and the rows differ by a constant.
  bool sameSwizzle = rowStep % 8 == 0;
  Value dstThread = add(dstBase, mul(swizzle(rBase, cChunk, cpr), ce));
  for (int64_t it = 0; it < chunks / threads; ++it) {
    Value row = add(add(row0, rBase), it * rowStep);
    Value dstOff =
        sameSwizzle
            ? add(dstThread, it * rowStep * ld)
            : add(dstBase,
                  mul(swizzle(add(rBase, it * rowStep), cChunk, cpr), ce));
    Value n;
    Value ok = inHead;
    if (needRow) {
      // Out-of-range rows read 0 bytes of row 0 (always in the buffer):
      // the chunk is zero-filled.
      Value inRows = ult(row, bound);
      row = select(inRows, row, cst(0));
      ok = land(ok, inRows);
    }
    if (ok)
      n = select(ok, cst(ce), cst(0));
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), dst,
        ValueRange{dstOff}, src, rowIndices(src, hd, row, col),
        b.getIndexAttr(ce), n, b.getUnitAttr());
  }
}

void AttentionBuilder::copyKVTile(bool isK, Value tile, Value stage,
                                  Value live) {
  Value inRange = cmp(arith::CmpIPredicate::slt, tile, tEnd);
  auto ifOp = scf::IfOp::create(
      b, loc, live ? land(inRange, live) : copyWanted(inRange, tile, s.blockKV),
      /*withElse=*/false);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    if (isK && p.kTransposed)
      copyKTransposed(tile, mul(stage, kStageElems(p, s.blockKV)));
    else
      copyRows(isK ? kArg : vArg, kvHead, mul(tile, s.blockKV), p.lk, s.blockKV,
               isK ? smemK : smemV, mul(stage, s.blockKV * ld),
               isK ? p.headDim : p.dimV());
  }
  token = commitGroup();
}

void AttentionBuilder::copyKTransposed(Value tile, Value dstBase) {
  // Rows are the head dims (those past the head size, up to computeDim,
  // zero-filled), chunks are 8 keys: with lk a multiple of 8
  // (attentionKernelSupports), every row starts 16-byte aligned and a chunk
  // is wholly inside or past lk.
  int64_t kc = s.blockKV / 8, cprK = ldK / 8, dims = computeDim(p);
  int64_t chunks = dims * kc, rowStep = threads / kc;
  bool needKey = p.lk % s.blockKV != 0;
  Value cChunk = rem(tid, kc);
  Value rBase = div(tid, kc);
  Value key0 = add(mul(tile, s.blockKV), mul(cChunk, 8));
  Value n;
  if (needKey) {
    // Chunks past lk read 0 bytes of key 0: zero-filled.
    Value inKeys = ult(key0, p.lk);
    key0 = select(inKeys, key0, cst(0));
    n = select(inKeys, cst(8), cst(0));
  }
  for (int64_t it = 0; it < ceilDiv(chunks, threads); ++it) {
    Value row = add(rBase, it * rowStep);
    std::optional<OpBuilder::InsertionGuard> guard;
    if ((it + 1) * threads > chunks) {
      // Fewer chunks than threads in the last round (small head dims).
      guard.emplace(b);
      auto ifOp = scf::IfOp::create(b, loc, ult(row, dims), /*withElse=*/false);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    }
    Value dstOff = add(dstBase, mul(swizzle(row, cChunk, cprK), 8));
    // Padding rows read 0 bytes of row 0.
    Value srcRow = row, rowN = n;
    if (dims != p.headDim) {
      Value inHead = ult(row, p.headDim);
      srcRow = select(inHead, row, cst(0));
      rowN = select(inHead, n ? n : cst(8), cst(0));
    }
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), smemK,
        ValueRange{dstOff}, kArg, ValueRange{batch, kvHead, srcRow, key0},
        b.getIndexAttr(8), rowN, b.getUnitAttr());
  }
}

// f16 goes through nvgpu; bf16 through mmaBf16 (nvgpu cannot lower it).
Value AttentionBuilder::mma(Value aFrag, Value bFrag, Value acc) {
  if (!elemT.isBF16())
    return nvgpu::MmaSyncOp::create(b, loc, aFrag, bFrag, acc,
                                    ArrayRef<int64_t>{16, 8, 16});
  return mmaBf16(aFrag, bFrag, acc);
}

Value AttentionBuilder::qFragment(int64_t i, int64_t kk, Value from) {
  return ldmatrix(from ? from : smemQ,
                  add(add(qBase, tA[kk % 4]), (kk / 4) * 8 * ce + i * 16 * ld),
                  false);
}

void AttentionBuilder::fragmentBases() {
  // Every fragment is read with one lane mapping, the A operand's: lane l
  // addresses row l%16 and chunk pair bit l/16 of a 16 x 16 block, giving
  // matrices (rows 0-7|8-15) x (chunk 0|1) in that order. Its rows r have
  // r % 8 = l % 8 and a chunk 2x + bit below 8 chunks, so the swizzled
  // chunk is (2x + bit) ^ (l % 8), and chunks 8 and up only add 8. Each
  // address is then one of four per-thread bases plus a loop-variant base
  // plus a constant that ptxas folds into the instruction; built otherwise,
  // LLVM hoists one 64-bit address per (fragment, k-step) out of the loop
  // and the registers run out.
  Value l16 = band(lane, 15), lHi = div(lane, 16), l8 = band(lane, 7);
  for (int64_t x = 0; x < 4; ++x) {
    Value chunk = arith::XOrIOp::create(b, loc, add(lHi, 2 * x), l8);
    tA.push_back(add(mul(l16, ld), mul(chunk, ce)));
  }
  if (split && !p.kTransposed) {
    // K's B fragments (tileStep): lane l addresses row l%8 + 8 (l/16) and
    // chunk bit (l/8)%2, giving matrices (rows 0-7|8-15) x (chunk 0|1) in
    // row-major order.
    Value row = add(l8, mul(lHi, 8)), bit = band(div(lane, 8), 1);
    for (int64_t x = 0; x < 4; ++x) {
      Value chunk = arith::XOrIOp::create(b, loc, add(bit, 2 * x), l8);
      tBK.push_back(add(mul(row, ld), mul(chunk, ce)));
    }
    // V's (pvF32): lane (g, t)'s key pair t, chunks 2g and 2g + 1, of key
    // n-tile 0 and group 0 (the others add constants: f(pair) depends on t
    // alone).
    for (int64_t u = 0; u < 2; ++u)
      tV[u] = vPairOffset(tq, add(mul(gq, 2), u));
  }
  if (!p.kTransposed)
    return;
  // K given transposed is read as V is (ldmatrix.trans, rows the k-steps):
  // rows of ldK elements, chunks of keys from the warp's first key (decode:
  // warpKey, a multiple of 16, whose chunk may pass 8; the XOR only
  // changes a chunk's low 3 bits, as the swizzle does).
  if (ldK == ld && !warpKey) {
    tAK = tA;
    return;
  }
  Value kc0 = warpKey ? div(warpKey, 8) : cst(0);
  for (int64_t x = 0; x < std::min<int64_t>(4, nS / 2); ++x) {
    Value chunk = arith::XOrIOp::create(b, loc, add(add(lHi, kc0), 2 * x), l8);
    tAK.push_back(add(mul(l16, ldK), mul(chunk, 8)));
  }
}

Value AttentionBuilder::opaque(Value v) {
  // Used on the Q tile's base inside the key loop: it keeps LLVM from
  // hoisting one 64-bit address per (m-tile, k-step) out of the loop.
  Type i64 = b.getI64Type();
  auto op = LLVM::InlineAsmOp::create(
      b, loc, i64, ValueRange{arith::IndexCastOp::create(b, loc, i64, v)},
      b.getStringAttr("mov.b64 $0, $1;"), b.getStringAttr("=l,l"),
      b.getUnitAttr(), UnitAttr(), LLVM::TailCallKindAttr(),
      LLVM::AsmDialectAttr(), ArrayAttr());
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), op.getRes());
}

SmallVector<Value> AttentionBuilder::applyMask(ArrayRef<Value> sv, Value k0) {
  Value kThread = keyThread(k0);
  // bases[c][h]: constraint c at the thread's row h of m-tile 0 (prefill:
  // later m-tiles add a constant; decode has one m-tile) and first key.
  SmallVector<std::array<Value, 2>> bases;
  for (const MaskConstraint &mc : constraints) {
    std::array<Value, 2> vh;
    for (int64_t h = 0; h < 2; ++h) {
      Value v = cstI32(mc.c);
      if (mc.a)
        v = add(v, mul(rowQ(0, h), mc.a));
      if (mc.b)
        v = add(v, mul(kThread, mc.b));
      vh[h] = v;
    }
    bases.push_back(vh);
  }
  Value negInf = cstF(-std::numeric_limits<double>::infinity());
  SmallVector<Value> out;
  for (int64_t i = 0; i < mTiles; ++i)
    for (int64_t jn = 0; jn < nS; ++jn) {
      Value vec = sv[i * nS + jn];
      SmallVector<Value> e;
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t x = 0; x < 2; ++x) {
          Value keep;
          for (size_t c = 0; c < constraints.size(); ++c) {
            const MaskConstraint &mc = constraints[c];
            int64_t off = mc.a * i * 16 + mc.b * (jn * 8 + x);
            keep = land(keep, cmp(arith::CmpIPredicate::sge, bases[c][h],
                                  cstI32(-off)));
          }
          e.push_back(select(keep, extract(vec, {h, x}), negInf));
        }
      out.push_back(vector::FromElementsOp::create(
          b, loc, VectorType::get({2, 2}, f32), e));
    }
  return out;
}

SmallVector<Value> AttentionBuilder::tileStep(Value stage, Value k0,
                                              ValueRange carried) {
  int64_t nOAll = mTiles * nO;
  SmallVector<Value> oAcc(carried.begin(), carried.begin() + nOAll);
  SmallVector<Value> mRun(carried.begin() + nOAll,
                          carried.begin() + nOAll + 2 * mTiles);
  SmallVector<Value> lRun(carried.begin() + nOAll + 2 * mTiles, carried.end());
  Value kBase = mul(stage, s.blockKV * ld);
  if (warpKey)
    kBase = add(kBase, mul(warpKey, ld));
  // K given transposed: the stage's [headDim][ldK] tile (the warp's keys
  // are in tAK).
  Value kTBase =
      p.kTransposed ? mul(stage, kStageElems(p, s.blockKV)) : Value();
  if (!qInRegs)
    qBase = opaque(mul(warpRow, ld));

  // S = Q K^T: sv[i * nS + jn] is the m16n8 accumulator of m-tile i and
  // key n-tile jn. K is stored [key][d], i.e. the B operand's [n][k].
  Value zero4 = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(VectorType::get({2, 2}, f32), 0.0f));
  SmallVector<Value> sv(mTiles * nS, zero4);
  // A k-step is two 16-byte chunks of d (16 elements in 16 bits, 8 in f32),
  // read into fragments by the same ldmatrix lane mapping: for 32-bit
  // elements an 8 x 8 b16 matrix is 8 rows of 4, and lane l gets row l/4,
  // element l%4, the tf32 A (and [n][k] B) fragment layout.
  SmallVector<std::pair<Value, Value>> aSplit(mTiles);
  if (split) {
    splitK(kBase);
    // The small parts' offsets are loop-invariant: LLVM would hoist one
    // address per fragment out of the loop (as Q's, qBase) and spill.
    smallBase = opaque(cst(0));
  }
  // 3xTF32: the tensor cores add each MMA's products to the accumulator
  // with truncation, so a long chain of MMAs into one accumulator biases it
  // (48 at head size 128: 2-10x the error of SDPA's f32 kernel measured on
  // the H100, session 49). Scores are summed in blocks of kScoreBlock
  // k-steps (12 MMAs), each from zero, the blocks added in f32.
  constexpr int64_t kScoreBlock = 4;
  int64_t kSteps = computeDim(p) / (2 * ce);
  SmallVector<Value> sTotal;
  for (int64_t kk = 0; kk < kSteps; ++kk) {
    SmallVector<Value> aFrag;
    for (int64_t i = 0; i < mTiles; ++i) {
      if (split) {
        aSplit[i] = {qFragment(i, kk), qFragment(i, kk, smemQSmall)};
        continue;
      }
      aFrag.push_back(qInRegs ? qFrags[kk] : qFragment(i, kk));
    }
    for (int64_t jp = 0; jp < nS / 2; ++jp) {
      // K is stored [key][d], the B operand's [n][k]: the matrices are
      // (keys 0-7|8-15) x (d chunk 0|1), so key n-tile h takes 2 and h + 2.
      // Given transposed, [d][key] is the B operand's [k][n], read as V is:
      // (d 0-7|8-15) x (key chunk 0|1), key n-tile h takes 2h and 2h + 1.
      // 3xTF32 reads its (split) tiles with tBK's lane mapping, whose
      // matrices are (keys 0-7, chunk 0|1), (keys 8-15, chunk 0|1): key
      // n-tile h takes 2h and 2h + 1, adjacent registers, as the MMA reads
      // its B operand (with {h, h + 2}, ptxas moved 4 registers an n-tile:
      // 450 moves a key tile at head size 128, session 50's SASS).
      // K [key][d], from `base` (3xTF32: the tile is split already, the
      // small parts at the same offsets in smemKVSmall).
      auto kPair = [&](Value mem, Value base) {
        return ldmatrix(mem,
                        add(add(base, split ? tBK[kk % 4] : tA[kk % 4]),
                            (kk / 4) * 8 * ce + jp * 16 * ld),
                        false);
      };
      Value pair = p.kTransposed ? ldmatrix(smemK,
                                            add(add(kTBase, tAK[jp % 4]),
                                                (jp / 4) * 64 + kk * 16 * ldK),
                                            true)
                                 : kPair(smemK, kBase);
      Value pairSmall = split ? kPair(smemKVSmall, smallBase) : Value();
      auto bOf = [&](Value pr, int64_t h) -> Value {
        if (p.kTransposed || split)
          return half(pr, h);
        return vector::ShuffleOp::create(b, loc, pr, pr,
                                         ArrayRef<int64_t>{h, h + 2});
      };
      for (int64_t h = 0; h < 2; ++h) {
        Value bFrag = bOf(pair, h);
        std::pair<Value, Value> bSplit;
        if (split)
          bSplit = {bFrag, bOf(pairSmall, h)};
        for (int64_t i = 0; i < mTiles; ++i) {
          Value &acc = sv[i * nS + jp * 2 + h];
          acc =
              split ? mma3(aSplit[i], bSplit, acc) : mma(aFrag[i], bFrag, acc);
        }
      }
    }
    if (split && ((kk + 1) % kScoreBlock == 0 || kk + 1 == kSteps)) {
      if (sTotal.empty())
        sTotal = sv;
      else
        for (size_t e = 0; e < sv.size(); ++e)
          sTotal[e] = fadd(sTotal[e], sv[e]);
      sv.assign(sv.size(), zero4);
    }
  }
  if (split)
    sv = sTotal;

  // Scale and modify (the fast path keeps raw scores), then mask.
  if (!fast) {
    Value scale = cstF(p.scale);
    Value kThread = keyThread(k0);
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t jn = 0; jn < nS; ++jn) {
        Value &vec = sv[i * nS + jn];
        SmallVector<Value> e;
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t x = 0; x < 2; ++x) {
            Value sc = extract(vec, {h, x});
            if (p.scale != 1.0)
              sc = fmul(sc, scale);
            if (p.scoreMod)
              sc = scoreMod(sc, batchI32, rowHead(h), rowQ(i, h),
                            add(kThread, jn * 8 + x));
            e.push_back(sc);
          }
        vec = vector::FromElementsOp::create(b, loc,
                                             VectorType::get({2, 2}, f32), e);
      }
  }
  if (p.keyKeepApply) {
    // The key mask, per key: its dropped keys' scores become -inf, raw or
    // scaled alike; not built for a tile known to keep every key. Decode's
    // rows span heads: a per-head mask is read per row half.
    auto maskKeys = [&] {
      SmallVector<Value> masked(sv);
      Value kThread = keyThread(k0);
      Value negInf = cstF(-std::numeric_limits<double>::infinity());
      for (int64_t jn = 0; jn < nS; ++jn) {
        Value keep[2][2];
        for (int64_t x = 0; x < 2; ++x)
          for (int64_t h = 0; h < 2; ++h)
            keep[h][x] = h && !(decode && p.keyKeepPerHead)
                             ? keep[0][x]
                             : p.keyKeep(b, loc, batchI32, rowHead(h),
                                         add(kThread, jn * 8 + x), captured);
        for (int64_t i = 0; i < mTiles; ++i) {
          Value &vec = masked[i * nS + jn];
          SmallVector<Value> e;
          for (int64_t h = 0; h < 2; ++h)
            for (int64_t x = 0; x < 2; ++x)
              e.push_back(select(keep[h][x], extract(vec, {h, x}), negInf));
          vec = vector::FromElementsOp::create(b, loc,
                                               VectorType::get({2, 2}, f32), e);
        }
      }
      return masked;
    };
    sv = keyAllKept
             ? yieldIf(
                   keyAllKept, SmallVector<Type>(sv.size(), sv[0].getType()),
                   [&] { return sv; }, maskKeys)
             : maskKeys();
  }
  if (!constraints.empty())
    sv = yieldIf(
        tilePartial(constraints, k0, s.blockKV),
        SmallVector<Type>(sv.size(), sv[0].getType()),
        [&] { return applyMask(sv, k0); }, [&] { return sv; });

  // Online softmax, per row (m-tile i, half h): the row max over the quad,
  // the correction of the running O and l, and P.
  Value negInf = cstF(-std::numeric_limits<double>::infinity());
  Value zeroF = cstF(0.0);
  Value c = cstF(p.scale * kLog2E);
  // pv[i][jn][h][x] as scalars.
  SmallVector<Value> pv(mTiles * nS * 4);
  auto at = [&](int64_t i, int64_t jn, int64_t h, int64_t x) -> Value & {
    return pv[((i * nS + jn) * 2 + h) * 2 + x];
  };
  SmallVector<Value> corrVecs; // per m-tile, [h][x] = corr[h]
  for (int64_t i = 0; i < mTiles; ++i) {
    Value corr[2];
    for (int64_t h = 0; h < 2; ++h) {
      SmallVector<Value> vals;
      for (int64_t jn = 0; jn < nS; ++jn)
        for (int64_t x = 0; x < 2; ++x)
          vals.push_back(extract(sv[i * nS + jn], {h, x}));
      // Pairwise trees keep the dependency chains short.
      auto tree = [&](SmallVector<Value> v, auto op) {
        while (v.size() > 1) {
          SmallVector<Value> next;
          for (size_t e = 0; e + 1 < v.size(); e += 2)
            next.push_back(op(v[e], v[e + 1]));
          if (v.size() % 2)
            next.push_back(v.back());
          v = std::move(next);
        }
        return v[0];
      };
      auto maxOp = [&](Value x, Value y) { return fmax(x, y); };
      auto addOp = [&](Value x, Value y) { return fadd(x, y); };
      Value mx = tree(vals, maxOp);
      mx = fmax(mx, shuffleXor(mx, 1));
      mx = fmax(mx, shuffleXor(mx, 2));
      Value mOld = mRun[i * 2 + h];
      Value mNew = fmax(mOld, mx);
      // A row with nothing kept so far has max -inf; 0 stands in for it so
      // that -inf - (-inf) never happens (every contribution is then 0).
      Value isNone = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                           mNew, negInf);
      Value mUse = select(isNone, zeroF, mNew);
      SmallVector<Value> pr;
      if (fast) {
        Value mScaled = fmul(mUse, c);
        Value negM = arith::NegFOp::create(b, loc, mScaled);
        // 3xTF32 (f32 O): the correction from the difference, exactly 1
        // while the max stays. FA2's fma(mOld, c, -m*c) leaves m*c's
        // rounding there, the same at every tile: a drift of up to 2^-23 a
        // tile, 16x SDPA's f32 error at 4096 keys in 16-key tiles (H100,
        // session 49), which 16-bit outputs never show.
        corr[h] =
            split ? exp2(fmul(fsub(mOld, mUse), c)) : exp2(fma(mOld, c, negM));
        for (Value sc : vals)
          pr.push_back(exp2(fma(sc, c, negM)));
      } else {
        corr[h] = p.correction ? p.correction(b, loc, mOld, mUse)
                               : exp2(fmul(fsub(mOld, mUse), cstF(kLog2E)));
        // Subtract before scaling: a score change may leave huge finite
        // scores (a -1e30 mask on a whole row), and fma(s, log2e, -m*log2e)
        // then yields the rounding error of m*log2e (about 1e23), not 0.
        for (Value sc : vals)
          pr.push_back(p.contribution
                           ? p.contribution(b, loc, sc, mUse)
                           : exp2(fmul(fsub(sc, mUse), cstF(kLog2E))));
      }
      for (int64_t jn = 0; jn < nS; ++jn)
        for (int64_t x = 0; x < 2; ++x)
          at(i, jn, h, x) = pr[jn * 2 + x];
      // l stays a per-lane partial sum; the quad reduces it once, at the end.
      lRun[i * 2 + h] = fma(lRun[i * 2 + h], corr[h], tree(pr, addOp));
      mRun[i * 2 + h] = mNew;
    }
    Value corrVec = vector::FromElementsOp::create(
        b, loc, VectorType::get({2, 2}, f32),
        ValueRange{corr[0], corr[0], corr[1], corr[1]});
    corrVecs.push_back(corrVec);
    // 3xTF32 folds the correction in with the tile's P V (pvF32).
    if (!split)
      for (int64_t dn = 0; dn < nO; ++dn)
        oAcc[i * nO + dn] = fmul(oAcc[i * nO + dn], corrVec);
  }

  if (split) {
    waitGroups(2 * s.stages - 2);
    splitV(kBase);
    pvF32(pv, corrVecs, oAcc);
    SmallVector<Value> out(oAcc);
    out.append(mRun);
    out.append(lRun);
    return out;
  }

  // P as A fragments: for keys 16kk..16kk+15, the accumulators of n-tiles
  // 2kk and 2kk+1 are exactly the m16n8k16 A layout.
  VectorType fragF32 = VectorType::get({4, 2}, f32);
  VectorType fragT = VectorType::get({4, 2}, elemT);
  SmallVector<Value> pFrag(mTiles * (nS / 2));
  for (int64_t i = 0; i < mTiles; ++i)
    for (int64_t kk = 0; kk < nS / 2; ++kk) {
      SmallVector<Value> e;
      for (int64_t half2 = 0; half2 < 2; ++half2)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t x = 0; x < 2; ++x)
            e.push_back(at(i, kk * 2 + half2, h, x));
      Value f = vector::FromElementsOp::create(b, loc, fragF32, e);
      pFrag[i * (nS / 2) + kk] = arith::TruncFOp::create(b, loc, fragT, f);
    }

  // O += P V (V fragments by transposed ldmatrix).
  waitGroups(2 * s.stages - 2);
  mlir::gpu::BarrierOp::create(b, loc);
  for (int64_t kk = 0; kk < nS / 2; ++kk)
    for (int64_t dp = 0; dp < nO / 2; ++dp) {
      // V is stored [key][d], the B operand's [k][n], read transposed: the
      // matrices are (keys 0-7|8-15) x (d chunk 0|1), d n-tile h takes two.
      Value off = add(add(kBase, tA[dp % 4]), (dp / 4) * 64 + kk * 16 * ld);
      Value pair = ldmatrix(smemV, off, true);
      for (int64_t i = 0; i < mTiles; ++i)
        for (int64_t h = 0; h < 2; ++h) {
          Value &acc = oAcc[i * nO + dp * 2 + h];
          acc = mma(pFrag[i * (nS / 2) + kk], half(pair, h), acc);
        }
    }

  SmallVector<Value> out(oAcc);
  out.append(mRun);
  out.append(lRun);
  return out;
}

void AttentionBuilder::pvF32(ArrayRef<Value> pv, ArrayRef<Value> corrVecs,
                             SmallVectorImpl<Value> &oAcc) {
  // The tf32 m16n8k8 A fragment holds (row g, k t), (g + 8, t), (g, t + 4),
  // (g + 8, t + 4) for lane 4g + t, while S's accumulator of key n-tile jn
  // holds keys 2t and 2t + 1: so P V's k-step jn takes its k index t as
  // key 8jn + 2t and t + 4 as key 8jn + 2t + 1, and P's fragment is the
  // accumulator as it is. V's B fragment, (k t, n g) and (k t + 4, n g), is
  // then V[8jn + 2t][d(g)] and V[8jn + 2t + 1][d(g)]: splitV stores V
  // interleaved by key pairs, (d, key 2p) beside (d, key 2p + 1), so a
  // fragment is 8 adjacent bytes, in adjacent registers as the MMA reads
  // them. With O's columns permuted, over a group of 32 columns (4
  // n-tiles) n-tile j's column n is d = 4n + j, so lane (g, t) reads d
  // 4g..4g+3 of its key pair, the B fragments of the 4 n-tiles, as two
  // 16-byte loads (vPairOffset spreads an access phase's 8 lanes over 8
  // bank groups).
  // The tile's P V goes into accumulators of its own, group by group, and
  // O = O * corr + that in f32 (the tensor cores' truncating adds stay
  // within a tile: see the scores' blocks).
  int64_t groups = computeDimV(p) / 32;
  VectorType v4 = VectorType::get({4}, f32);
  VectorType bT = VectorType::get({2, 1}, f32);
  // P's fragment of (m-tile i, k-step jn): the accumulator as it is.
  auto pSplit = [&](int64_t i, int64_t jn) {
    auto at = [&](int64_t h, int64_t x) {
      return pv[((i * nS + jn) * 2 + h) * 2 + x];
    };
    return splitTf32(vector::FromElementsOp::create(
        b, loc, VectorType::get({4, 1}, f32),
        ValueRange{at(0, 0), at(1, 0), at(0, 1), at(1, 1)}));
  };
  Value zero4 = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(VectorType::get({2, 2}, f32), 0.0f));
  for (int64_t g = 0; g < groups; ++g) {
    SmallVector<Value> tile(mTiles * 4, zero4);
    for (int64_t jn = 0; jn < nS; ++jn) {
      SmallVector<std::pair<Value, Value>> pFrag;
      for (int64_t i = 0; i < mTiles; ++i)
        pFrag.push_back(pSplit(i, jn));
      // Loads u = 0, 1 hold n-tiles 2u and 2u + 1 (vPairBases).
      Value big[2], small[2];
      for (int64_t u = 0; u < 2; ++u) {
        Value off = add(add(smallBase, tV[u]), jn * 8 * ld + g * 64);
        big[u] = vector::LoadOp::create(b, loc, v4, smemVBig, ValueRange{off},
                                        /*nontemporal=*/false, llvm::Align(16));
        small[u] =
            vector::LoadOp::create(b, loc, v4, smemKVSmall, ValueRange{off},
                                   /*nontemporal=*/false, llvm::Align(16));
      }
      auto fragment = [&](Value *r, int64_t j) -> Value {
        Value two = vector::ExtractStridedSliceOp::create(
            b, loc, r[j / 2], ArrayRef<int64_t>{2 * (j % 2)},
            ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1});
        return vector::ShapeCastOp::create(b, loc, bT, two);
      };
      for (int64_t j = 0; j < 4; ++j) {
        std::pair<Value, Value> bSplit = {fragment(big, j), fragment(small, j)};
        for (int64_t i = 0; i < mTiles; ++i) {
          Value &acc = tile[i * 4 + j];
          acc = mma3(pFrag[i], bSplit, acc);
        }
      }
    }
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        Value &o = oAcc[i * nO + g * 4 + j];
        o = vector::FMAOp::create(b, loc, o, corrVecs[i], tile[i * 4 + j]);
      }
  }
}

Value AttentionBuilder::vPairOffset(Value pair, Value chunk) {
  // Pair p's row holds 2 ld elements: chunk c (d 2c and 2c + 1 of keys 2p
  // and 2p + 1) at c ^ f(p), f(p) = (p & 1) | (p & 2) << 1. pvF32's phase of
  // 8 lanes (g = 0, 1 or 2, 3; t = 0..3) reads chunks 2g (+1) of pairs
  // 4jn + t: f(t) in {0, 1, 4, 5} puts them in 8 distinct bank groups.
  Value f = arith::OrIOp::create(b, loc, band(pair, 1), mul(band(pair, 2), 2));
  return add(mul(pair, 2 * ld),
             mul(arith::XOrIOp::create(b, loc, chunk, f), ce));
}

void AttentionBuilder::forEachItem(int64_t items,
                                   llvm::function_ref<void(Value)> body) {
  for (int64_t it = 0; it < ceilDiv(items, threads); ++it) {
    OpBuilder::InsertionGuard guard(b);
    Value c = add(tid, it * threads);
    if ((it + 1) * threads > items) {
      auto ifOp = scf::IfOp::create(b, loc, ult(c, items), /*withElse=*/false);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    }
    body(c);
  }
}

void AttentionBuilder::splitInPlace(Value tile, Value base, Value small,
                                    int64_t chunks) {
  VectorType v4 = VectorType::get({4}, f32);
  forEachItem(chunks, [&](Value c) {
    Value off = mul(c, ce);
    Value at = add(base, off);
    auto [big, rest] = splitTf32(vector::LoadOp::create(
        b, loc, v4, tile, ValueRange{at}, false, llvm::Align(16)));
    vector::StoreOp::create(b, loc, big, tile, ValueRange{at}, false,
                            llvm::Align(16));
    vector::StoreOp::create(b, loc, rest, small, ValueRange{off}, false,
                            llvm::Align(16));
  });
}

void AttentionBuilder::splitK(Value base) {
  // Every warp reads every element of a K or V tile, so split in the
  // fragments each of the block's warps would repeat the tile's roundings
  // (2 conversions an element, each 4 ALU instructions on sm_90 (SASS):
  // the kernel's bound, about 9K cycles a 32-key tile at head size 128).
  // Split here, each element is rounded once a block. Chunks are taken in
  // storage order: the swizzle only permutes them.
  splitInPlace(smemK, base, smemKVSmall, s.blockKV * cpr);
  mlir::gpu::BarrierOp::create(b, loc);
}

void AttentionBuilder::splitV(Value base) {
  // As splitK, into pvF32's layout: an item is a key pair's d chunk q (4
  // values of each key), written as pair chunks 2q and 2q + 1. The barrier
  // first: V has landed, and every warp is past Q K^T's reads of
  // smemKVSmall.
  mlir::gpu::BarrierOp::create(b, loc);
  VectorType v4 = VectorType::get({4}, f32);
  forEachItem(s.blockKV / 2 * cpr, [&](Value c) {
    Value pair = div(c, cpr), q = rem(c, cpr);
    Value x[2];
    for (int64_t k = 0; k < 2; ++k) {
      Value key = add(mul(pair, 2), k);
      x[k] = vector::LoadOp::create(
          b, loc, v4, smemV,
          ValueRange{add(base, mul(swizzle(key, q, cpr), ce))}, false,
          llvm::Align(16));
    }
    for (int64_t hf = 0; hf < 2; ++hf) {
      Value inter = vector::FromElementsOp::create(
          b, loc, v4,
          ValueRange{extract(x[0], {2 * hf}), extract(x[1], {2 * hf}),
                     extract(x[0], {2 * hf + 1}), extract(x[1], {2 * hf + 1})});
      auto [big, small] = splitTf32(inter);
      Value off = vPairOffset(pair, add(mul(q, 2), hf));
      vector::StoreOp::create(b, loc, big, smemVBig, ValueRange{off}, false,
                              llvm::Align(16));
      vector::StoreOp::create(b, loc, small, smemKVSmall, ValueRange{off},
                              false, llvm::Align(16));
    }
  });
  mlir::gpu::BarrierOp::create(b, loc);
}

void AttentionBuilder::storeRowF32(ValueRange oAcc, int64_t i, int64_t h,
                                   Value row, Value inv) {
  // Lane (g, t) holds, for its rows, n-tile (group G, j)'s columns n = 2t
  // and 2t + 1, that is d = 32G + 8t + j and 32G + 8t + 4 + j (pvF32): 8
  // consecutive columns, stored as two 16-byte vectors.
  VectorType v4 = VectorType::get({4}, f32);
  for (int64_t g = 0; g < computeDimV(p) / 32; ++g)
    for (int64_t x = 0; x < 2; ++x) {
      SmallVector<Value> e;
      for (int64_t j = 0; j < 4; ++j)
        e.push_back(fmul(extract(oAcc[i * nO + g * 4 + j], {h, x}), inv));
      Value col = add(mul(tq, 8), g * 32 + x * 4);
      // Whole chunks: the head size is a multiple of 4.
      std::optional<OpBuilder::InsertionGuard> colGuard;
      if ((g + 1) * 32 > p.dimV()) {
        colGuard.emplace(b);
        auto ifOp =
            scf::IfOp::create(b, loc, ult(col, p.dimV()), /*withElse=*/false);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      }
      vector::StoreOp::create(
          b, loc, vector::FromElementsOp::create(b, loc, v4, e), oArg,
          ValueRange{batch, head, row, col}, false, llvm::Align(16));
    }
}

void AttentionBuilder::epilogue(ValueRange carried) {
  int64_t nOAll = mTiles * nO;
  bool needRow = p.lq % s.blockQ != 0;
  VectorType v2 = VectorType::get({2}, f32);
  for (int64_t i = 0; i < mTiles; ++i)
    for (int64_t h = 0; h < 2; ++h) {
      Value l = carried[nOAll + 2 * mTiles + i * 2 + h];
      l = fadd(l, shuffleXor(l, 1));
      l = fadd(l, shuffleXor(l, 2));
      Value inv = inverseSum(l);
      Value row = add(q0, add(add(warpRow, i * 16 + h * 8), gq));
      std::optional<OpBuilder::InsertionGuard> guard;
      if (needRow) {
        guard.emplace(b);
        auto ifOp = scf::IfOp::create(b, loc, ult(row, p.lq),
                                      /*withElse=*/false);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      }
      if (split) {
        storeRowF32(carried.take_front(nOAll), i, h, row, inv);
        continue;
      }
      Value invVec = vector::BroadcastOp::create(b, loc, v2, inv);
      for (int64_t dn = 0; dn < nOStored; ++dn) {
        Value vals = fmul(extract(carried[i * nO + dn], {h}), invVec);
        vals =
            arith::TruncFOp::create(b, loc, VectorType::get({2}, elemT), vals);
        Value col = add(mul(tq, 2), dn * 8);
        vector::StoreOp::create(b, loc, vals, oArg,
                                ValueRange{batch, head, row, col}, false,
                                llvm::Align(4));
      }
    }
}

void AttentionBuilder::decodeEpilogue(ValueRange carried) {
  int64_t rows = decodeRows(p);
  Value m[2], l[2];
  for (int64_t h = 0; h < 2; ++h) {
    l[h] = carried[nO + 2 + h];
    l[h] = fadd(l[h], shuffleXor(l[h], 1));
    l[h] = fadd(l[h], shuffleXor(l[h], 2));
    // The fast path keeps the max of raw scores; the scratch holds running
    // values of the scaled scores, which the correction expects.
    m[h] = carried[nO + h];
    if (fast)
      m[h] = fmul(m[h], cstF(p.scale));
  }
  // Every warp is past the last key tile, whose copies were all waited for:
  // the K and V stages take the warps' results.
  mlir::gpu::BarrierOp::create(b, loc);
  Value raw = dynamicSharedMemory();
  int64_t base = s.blockQ * ld * 2;
  int64_t slots = s.warps * 16;
  int64_t dv = p.dimV();
  Value sO = sharedView(raw, slots * dv, f32, base);
  Value sML = sharedView(raw, slots * 2, f32, base + slots * dv * 4);
  Value warp = div(tid, 32);
  VectorType v2 = VectorType::get({2}, f32);
  for (int64_t h = 0; h < 2; ++h) {
    Value slot = add(mul(warp, 16), add(gq, h * 8));
    for (int64_t dn = 0; dn < nOStored; ++dn)
      vector::StoreOp::create(
          b, loc, extract(carried[dn], {h}), sO,
          ValueRange{add(mul(slot, dv), add(mul(tq, 2), dn * 8))}, false,
          llvm::Align(8));
    // The quad's four lanes store the same pair.
    vector::StoreOp::create(
        b, loc,
        vector::FromElementsOp::create(b, loc, v2, ValueRange{m[h], l[h]}), sML,
        ValueRange{mul(slot, 2)}, false, llvm::Align(8));
  }
  mlir::gpu::BarrierOp::create(b, loc);

  // Merge the warps: a thread per 4 columns of a row.
  int64_t vecs = dv / 4, items = rows * vecs;
  VectorType v4 = VectorType::get({4}, f32);
  for (int64_t it = 0; it < ceilDiv(items, threads); ++it) {
    Value e = add(tid, it * threads);
    std::optional<OpBuilder::InsertionGuard> guard;
    if ((it + 1) * threads > items) {
      guard.emplace(b);
      auto ifOp = scf::IfOp::create(b, loc, ult(e, items), /*withElse=*/false);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    }
    Value row = div(e, vecs), col = mul(rem(e, vecs), 4);
    SmallVector<Value> ms, ls;
    Value mMax;
    for (int64_t w = 0; w < s.warps; ++w) {
      Value ml = vector::LoadOp::create(b, loc, v2, sML,
                                        ValueRange{mul(add(row, w * 16), 2)},
                                        false, llvm::Align(8));
      ms.push_back(extract(ml, {0}));
      ls.push_back(extract(ml, {1}));
      mMax = mMax ? fmax(mMax, ms.back()) : ms.back();
    }
    Value mUse = finiteRun(mMax);
    Value acc =
        arith::ConstantOp::create(b, loc, DenseElementsAttr::get(v4, 0.0f));
    Value lSum = cstF(0.0);
    for (int64_t w = 0; w < s.warps; ++w) {
      Value corr = correctionOf(ms[w], mUse);
      Value part = vector::LoadOp::create(
          b, loc, v4, sO, ValueRange{add(mul(add(row, w * 16), dv), col)},
          false, llvm::Align(16));
      acc =
          fadd(acc, fmul(part, vector::BroadcastOp::create(b, loc, v4, corr)));
      lSum = fma(ls[w], corr, lSum);
    }
    if (decodeChunks(p, *decode) == 1) {
      // One chunk holds every key: the block's result is final, and no
      // combine runs (buildDecodeKernels).
      Value out =
          fmul(acc, vector::BroadcastOp::create(b, loc, v4, inverseSum(lSum)));
      out = arith::TruncFOp::create(b, loc, VectorType::get({4}, elemT), out);
      vector::StoreOp::create(b, loc, out, oArg, outputIndices(row, col), false,
                              llvm::Align(8));
      continue;
    }
    vector::StoreOp::create(b, loc, acc, oArg,
                            ValueRange{batch, kvHead, chunk, row, col}, false,
                            llvm::Align(16));
    auto first = scf::IfOp::create(
        b, loc, cmp(arith::CmpIPredicate::eq, col, cst(0)), false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&first.getThenRegion().front());
    vector::StoreOp::create(
        b, loc,
        vector::FromElementsOp::create(b, loc, v2, ValueRange{mMax, lSum}),
        statsArg, ValueRange{batch, kvHead, chunk, row, cst(0)}, false,
        llvm::Align(8));
  }
}

void AttentionBuilder::buildCombine(Value partO, Value stats, Value o) {
  // A warp per row of [batch * headsKV * rows], a lane per 4 columns (in
  // headDim / 128 passes; lanes past the row's end idle); the chunks' (m, l)
  // pairs are read once for the max, then once a pass for the sums.
  int64_t rows = decodeRows(p);
  int64_t n = p.batch * p.headsKV * rows, vecs = p.dimV() / 4;
  int64_t chunks = decodeChunks(p, *decode);
  tid = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
  lane = rem(tid, 32);
  Value blockX = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
  Value rowIdx = add(mul(blockX, s.warps), div(tid, 32));
  std::optional<OpBuilder::InsertionGuard> guard;
  if (n % s.warps) {
    guard.emplace(b);
    auto ifOp = scf::IfOp::create(b, loc, ult(rowIdx, n), /*withElse=*/false);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  }
  Value bh = div(rowIdx, rows), r = rem(rowIdx, rows);
  VectorType v2 = VectorType::get({2}, f32);
  VectorType v4 = VectorType::get({4}, f32);
  auto statsAt = [&](Value c) {
    return vector::LoadOp::create(
        b, loc, v2, stats, ValueRange{bh, c, r, cst(0)}, false, llvm::Align(8));
  };
  Value negInf = cstF(-std::numeric_limits<double>::infinity());
  auto maxLoop = scf::ForOp::create(b, loc, cst(0), cst(chunks), cst(1),
                                    ValueRange{negInf});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(maxLoop.getBody());
    Value m = extract(statsAt(maxLoop.getInductionVar()), {0});
    scf::YieldOp::create(b, loc,
                         ValueRange{fmax(maxLoop.getRegionIterArgs()[0], m)});
  }
  Value mUse = finiteRun(maxLoop.getResult(0));
  Value zeroV =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(v4, 0.0f));
  for (int64_t pass = 0; pass < ceilDiv(vecs, 32); ++pass) {
    OpBuilder::InsertionGuard g(b);
    Value item = add(lane, pass * 32);
    if ((pass + 1) * 32 > vecs) {
      auto ifOp =
          scf::IfOp::create(b, loc, ult(item, vecs), /*withElse=*/false);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    }
    Value col = mul(item, 4);
    auto sumLoop = scf::ForOp::create(b, loc, cst(0), cst(chunks), cst(1),
                                      ValueRange{zeroV, cstF(0.0)});
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(sumLoop.getBody());
      Value c = sumLoop.getInductionVar();
      Value ml = statsAt(c);
      Value corr = correctionOf(extract(ml, {0}), mUse);
      Value part = vector::LoadOp::create(
          b, loc, v4, partO, ValueRange{bh, c, r, col}, false, llvm::Align(16));
      Value acc =
          fadd(sumLoop.getRegionIterArgs()[0],
               fmul(part, vector::BroadcastOp::create(b, loc, v4, corr)));
      Value lSum = fma(extract(ml, {1}), corr, sumLoop.getRegionIterArgs()[1]);
      scf::YieldOp::create(b, loc, ValueRange{acc, lSum});
    }
    Value inv = inverseSum(sumLoop.getResult(1));
    Value out = fmul(sumLoop.getResult(0),
                     vector::BroadcastOp::create(b, loc, v4, inv));
    out = arith::TruncFOp::create(b, loc, VectorType::get({4}, elemT), out);
    vector::StoreOp::create(b, loc, out, o, outputIndices(bh, r, col), false,
                            llvm::Align(8));
  }
}

void AttentionBuilder::build(Value q, Value k, Value v, Value o, Value stats) {
  qArg = q;
  kArg = k;
  vArg = v;
  oArg = o;
  statsArg = stats;
  int64_t nQTiles = ceilDiv(p.lq, s.blockQ);
  int64_t nKTiles = ceilDiv(p.lk, s.blockKV);
  int64_t group = p.headsQ / p.headsKV;

  tid = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
  lane = rem(tid, 32);
  gq = div(lane, 4);
  tq = band(lane, 3);
  Value blockX = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
  Value blockY = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::y);
  batch = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::z);
  batchI32 = toI32(batch);
  keepBatch = batchI32;
  if (decode) {
    // The block's rows span the group's query heads: keys are skipped only
    // by a mask the same for every head.
    if (!p.keyKeepPerHead)
      keepHead = cstI32(0);
    // Every warp holds all rows (row r: query head kvHead * group + r / lq,
    // position r % lq) and takes its own slice of each key tile.
    warpRow = cst(0);
    warpKey = mul(div(tid, 32), keysPerWarp);
    chunk = blockX;
    kvHead = blockY;
    head = kvHead; // Q: [batch, headsKV, rows, headDim], or 4-D (qSplit)
    q0 = cst(0);
    qLast = cst(p.lq - 1);
    for (int64_t h = 0; h < 2; ++h) {
      Value r = add(gq, h * 8);
      rowQI32[h] = toI32(rem(r, p.lq));
      rowHeadI32[h] = toI32(add(mul(kvHead, group), div(r, p.lq)));
    }
  } else {
    warpRow = mul(div(tid, 32), rowsPerWarp);
    // Query tiles run last to first: under a causal mask the late tiles
    // carry the most keys, and starting them first shortens the tail.
    Value qTile = sub(cst(nQTiles - 1), blockX);
    head = blockY;
    kvHead = div(head, group);
    q0 = mul(qTile, s.blockQ);
    qLast =
        add(arith::MinSIOp::create(b, loc, add(q0, s.blockQ), cst(p.lq)), -1);
    headI32 = toI32(head);
    keepHead = headI32;
    qThreadI32 = toI32(add(q0, add(warpRow, gq)));
  }

  // Shared memory: the Q tile, then S stages of K, then S stages of V.
  Value raw = dynamicSharedMemory();
  int64_t qElems = s.blockQ * ld;
  int64_t kvElems = s.stages * s.blockKV * ld;
  int64_t kElems = s.stages * kStageElems(p, s.blockKV);
  int64_t eb = elemBytes(p);
  smemQ = sharedView(raw, qElems, elemT, 0);
  smemK = sharedView(raw, kElems, elemT, qElems * eb);
  smemV = sharedView(raw, kvElems, elemT, (qElems + kElems) * eb);
  if (split) {
    smemQSmall =
        sharedView(raw, qElems, elemT, (qElems + kElems + kvElems) * eb);
    smemKVSmall = sharedView(raw, s.blockKV * ld, elemT,
                             (2 * qElems + kElems + kvElems) * eb);
    smemVBig =
        sharedView(raw, s.blockKV * ld, elemT,
                   (2 * qElems + kElems + kvElems + s.blockKV * ld) * eb);
  }

  copyRows(qArg, head, q0, decode ? decodeRows(p) : p.lq, s.blockQ, smemQ,
           cst(0), p.headDim);
  token = commitGroup();

  Value tStart;
  std::tie(tStart, tEnd) = keyTileRange(nKTiles, s.blockKV);
  if (decode) {
    // The block's chunk of key tiles; an empty range still writes its
    // (empty) partial result, which the combine reads.
    Value c0 = mul(chunk, decode->chunkTiles);
    tStart = arith::MaxSIOp::create(b, loc, tStart, c0);
    tEnd = arith::MinSIOp::create(b, loc, tEnd, add(c0, decode->chunkTiles));
  }

  // With key skipping, the loop carries each tile's liveness from its copy
  // to its step, and reads the flags of the tile it copies next an
  // iteration ahead (their loads then never stall the loop).
  SmallVector<Value> live;
  SmallVector<Value> flags =
      keyFlagsPrologue(tStart, s.blockKV, s.stages, live);
  for (int64_t st = 0; st + 1 < s.stages; ++st) {
    Value tile = add(tStart, st);
    copyKVTile(true, tile, cst(st), live.empty() ? Value() : live[st]);
    copyKVTile(false, tile, cst(st), live.empty() ? Value() : live[st]);
  }
  fragmentBases();
  qBase = mul(warpRow, ld);
  if (split) {
    // Q is split once: every thread rounds its 16-byte chunks of the tile
    // in place (the big parts) and writes the rest's rounding beside (the
    // small parts), at the same offsets, so the fragments of both come
    // from the same ldmatrix addresses. Split per key tile instead, Q's
    // fragments cost 3 ALU operations an element a tile (192 a thread at
    // head size 128), as many as the tile's MMAs.
    waitGroups(2 * (s.stages - 1));
    mlir::gpu::BarrierOp::create(b, loc);
    splitInPlace(smemQ, cst(0), smemQSmall, s.blockQ * cpr);
    mlir::gpu::BarrierOp::create(b, loc);
  }
  if (qInRegs) {
    // Q's fragments stay in registers for the whole loop.
    waitGroups(2 * (s.stages - 1));
    mlir::gpu::BarrierOp::create(b, loc);
    for (int64_t kk = 0; kk < computeDim(p) / (2 * ce); ++kk)
      qFrags.push_back(qFragment(0, kk));
  }

  SmallVector<Value> init;
  Value zero4 = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(VectorType::get({2, 2}, f32), 0.0f));
  init.append(mTiles * nO, zero4);
  init.append(2 * mTiles, cstF(-std::numeric_limits<double>::infinity()));
  init.append(2 * mTiles, cstF(0.0));

  // Carried after the accumulators (key skipping): keyFlagsPrologue's.
  SmallVector<Value> all(init);
  llvm::append_range(all, flags);
  auto loop = scf::ForOp::create(b, loc, tStart, tEnd, cst(1), all);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    ValueRange carried = loop.getRegionIterArgs().take_front(init.size());
    ValueRange carriedFlags = loop.getRegionIterArgs().drop_front(init.size());
    Value stage = rem(sub(j, tStart), s.stages);
    // K_j has landed once at most 2S-3 newer groups are pending (V_j and
    // the K/V groups of tiles j+1..j+S-2).
    waitGroups(2 * s.stages - 3);
    mlir::gpu::BarrierOp::create(b, loc);
    // Every warp is past tile j-1, so its stage takes tile j+S-1.
    Value next = add(j, s.stages - 1);
    Value nextStage = rem(add(stage, s.stages - 1), s.stages);
    KeyFlagStep kf = keyFlagsStep(carriedFlags, next, s.blockKV, s.stages);
    copyKVTile(true, next, nextStage, kf.liveNext);
    copyKVTile(false, next, nextStage, kf.liveNext);
    Value k0 = mul(j, s.blockKV);

    keyAllKept = kf.allNow;
    SmallVector<Value> out = stepUnlessMasked(
        k0, s.blockKV, carried, [&] { return tileStep(stage, k0, carried); },
        kf.liveNow);
    keyAllKept = Value();
    llvm::append_range(out, kf.yield);
    scf::YieldOp::create(b, loc, out);
  }
  ValueRange results = loop.getResults().take_front(init.size());
  if (decode)
    decodeEpilogue(results);
  else
    epilogue(results);
}

bool isElemType(Type t) { return t && (t.isBF16() || t.isF16() || t.isF32()); }

} // namespace

Value buildExp2Approx(OpBuilder &b, Location loc, Value x) {
  // The NVVM intrinsic, not llvm.exp2: convert-gpu-to-nvvm rejects the
  // latter, and math.exp2 would need libdevice.
  return LLVM::CallIntrinsicOp::create(
             b, loc, b.getF32Type(),
             b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"), ValueRange{x})
      .getResult(0);
}

SmallVector<int64_t, 4> attentionOperandShape(const AttentionProblem &p,
                                              AttentionOperand which) {
  switch (which) {
  case AttentionOperand::Q:
    return {p.batch, p.headsQ, p.lq, p.headDim};
  case AttentionOperand::O:
    return {p.batch, p.headsQ, p.lq, p.dimV()};
  case AttentionOperand::K:
    if (p.kTransposed)
      return {p.batch, p.headsKV, p.headDim, p.lk};
    return {p.batch, p.headsKV, p.lk, p.headDim};
  case AttentionOperand::V:
    return {p.batch, p.headsKV, p.lk, p.dimV()};
  }
  llvm_unreachable("an attention operand");
}

/// The strides `p` gives `which` (empty: packed).
static ArrayRef<int64_t> givenStrides(const AttentionProblem &p,
                                      AttentionOperand which) {
  switch (which) {
  case AttentionOperand::Q:
    return p.qStrides;
  case AttentionOperand::K:
    return p.kStrides;
  case AttentionOperand::V:
    return p.vStrides;
  case AttentionOperand::O:
    return p.oStrides;
  }
  llvm_unreachable("an attention operand");
}

SmallVector<int64_t, 4> attentionOperandStrides(const AttentionProblem &p,
                                                AttentionOperand which) {
  SmallVector<int64_t, 4> shape = attentionOperandShape(p, which);
  ArrayRef<int64_t> given = givenStrides(p, which);
  SmallVector<int64_t, 4> out(shape.size());
  // Innermost first: an axis of size 1 (or all of them, when none are
  // given, or not one per axis, which attentionStridesValid refuses) takes
  // the stride that packs it around the axes inside it (packed: the next
  // inner one's extent; [B, L, H, D] with one batch: L*H*D).
  bool packedAll = given.size() != shape.size();
  int64_t extent = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    out[i] = packedAll || shape[i] == 1 ? extent : given[i];
    extent = std::max(extent, out[i] * shape[i]);
  }
  return out;
}

int64_t attentionOperandOffset(const AttentionProblem &p,
                               AttentionOperand which) {
  switch (which) {
  case AttentionOperand::Q:
    return p.qOffset;
  case AttentionOperand::K:
    return p.kOffset;
  case AttentionOperand::V:
    return p.vOffset;
  case AttentionOperand::O:
    return 0;
  }
  llvm_unreachable("an attention operand");
}

MemRefType attentionOperandType(const AttentionProblem &p,
                                AttentionOperand which) {
  return stridedType(attentionOperandShape(p, which),
                     attentionOperandStrides(p, which), p.elemType,
                     attentionOperandOffset(p, which));
}

bool attentionStridesValid(const AttentionProblem &p, std::string &why,
                           bool alignedRows) {
  int64_t elemBytes = p.elemType && p.elemType.isIntOrFloat()
                          ? p.elemType.getIntOrFloatBitWidth() / 8
                          : 0;
  for (const auto &operand : {std::pair{AttentionOperand::Q, "Q"},
                              {AttentionOperand::K, "K"},
                              {AttentionOperand::V, "V"},
                              {AttentionOperand::O, "O"}}) {
    AttentionOperand which = operand.first;
    const char *name = operand.second;
    ArrayRef<int64_t> given = givenStrides(p, which);
    int64_t offset = attentionOperandOffset(p, which);
    if (given.empty() && offset == 0)
      continue;
    SmallVector<int64_t, 4> shape = attentionOperandShape(p, which);
    auto fail = [&](const std::string &msg) {
      why = std::string(name) + "'s strides " + msg;
      return false;
    };
    if (given.empty() || offset < 0 || offset > (int64_t(1) << 48))
      return fail("must be given with an offset (from 0 to 2^48)");
    // The first row starts a 16-byte chunk too.
    if (alignedRows && (offset * elemBytes) % 16)
      return fail("start " + std::to_string(offset) +
                  " elements in, not at a 16-byte boundary");
    if (given.size() != shape.size())
      return fail("must be one per axis (4)");
    // Bounded before any arithmetic on them (attentionOperandStrides').
    double span = 0;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 1)
        continue;
      if (given[i] < 1 || given[i] > (int64_t(1) << 40))
        return fail("must be positive (and below 2^40)");
      span += double(shape[i] - 1) * double(given[i]);
    }
    if (span >= double(int64_t(1) << 48))
      return fail("span more than 2^48 elements");
    SmallVector<int64_t, 4> strides = attentionOperandStrides(p, which);
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 1)
        continue;
      if (i + 1 == shape.size() && strides[i] != 1)
        return fail("must have the innermost 1");
      // Rows travel as 16-byte chunks (cp.async, vector loads and stores).
      if (alignedRows && i + 1 < shape.size() && (strides[i] * elemBytes) % 16)
        return fail("do not keep 16-byte aligned rows");
    }
    if (which != AttentionOperand::O)
      continue;
    // O is written: distinct elements must have distinct addresses. With
    // the axes sorted by stride, each stride must pass the extent of the
    // axes inside it.
    SmallVector<size_t, 4> axes;
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] > 1)
        axes.push_back(i);
    llvm::sort(axes,
               [&](size_t x, size_t y) { return strides[x] < strides[y]; });
    int64_t extent = 0;
    for (size_t i : axes) {
      if (strides[i] <= extent)
        return fail("overlap its elements");
      extent += (shape[i] - 1) * strides[i];
    }
  }
  return true;
}

bool attentionKernelSupports(const AttentionProblem &p, std::string &why) {
  auto fail = [&](const std::string &msg) {
    why = "attention kernel: " + msg;
    return false;
  };
  if (!isElemType(p.elemType))
    return fail("Q, K, V must be bf16, f16 or f32");
  if (p.batch < 1 || p.headsQ < 1 || p.headsKV < 1 || p.lq < 1 || p.lk < 1)
    return fail("batch, heads, lq and lk must be >= 1");
  if (p.headsQ % p.headsKV)
    return fail("query heads must be a multiple of key/value heads");
  // Multiples of 16: one k-step of the Q K^T MMA, and an even number of
  // n-tiles of P V (shared rows are padded, tileRow).
  for (int64_t d : {p.headDim, p.dimV()})
    if (d < 8 || d > 256 || d % chunkElems(p))
      return fail(std::string(d == p.headDim ? "head dim" : "V's head dim") +
                  " must be a multiple of " + (splitF32(p) ? "4" : "8") +
                  " from 8 to 256");
  // ldmatrix cannot transpose 32-bit data (the SIMT template takes it).
  if (splitF32(p) && p.kTransposed)
    return fail("f32 with K given transposed");
  if (p.batch > 65535 || p.headsQ > 65535)
    return fail("batch and query heads must be <= 65535 (grid limits)");
  if (p.lq > (int64_t(1) << 30) || p.lk > (int64_t(1) << 30))
    return fail("sequence lengths above 2^30");
  if (!std::isfinite(p.scale))
    return fail("the scale must be finite");
  // K given transposed is copied in 16-byte chunks of keys along its rows.
  if (p.kTransposed && p.lk % 8)
    return fail("K given transposed needs lk a multiple of 8 (16-byte rows)");
  std::string strideWhy;
  if (!attentionStridesValid(p, strideWhy))
    return fail(strideWhy);
  // Per-element mask values are i32: a*q + b*k + c must fit.
  for (const MaskConstraint &mc : p.mask) {
    double range = std::fabs(double(mc.a)) * double(p.lq) +
                   std::fabs(double(mc.b)) * double(p.lk) +
                   std::fabs(double(mc.c));
    if (range >= double(int64_t(1) << 30))
      return fail("a mask constraint's values exceed the 32-bit range");
  }
  return true;
}

/// attentionScheduleValid without the target's limits: what the builder
/// needs.
static bool attentionShapeValid(const AttentionProblem &p,
                                const AttentionSchedule &s, std::string &why) {
  auto fail = [&](const std::string &msg) {
    why = "attention schedule: " + msg;
    return false;
  };
  if (!attentionKernelSupports(p, why))
    return false;
  for (int64_t v : {s.blockQ, s.blockKV, s.warps})
    if (v < 1 || !llvm::isPowerOf2_64(v))
      return fail("blockQ, blockKV and warps must be powers of two");
  if (s.blockQ > kMaxTile || s.blockKV > kMaxTile)
    return fail("blockQ and blockKV must be <= " + std::to_string(kMaxTile));
  if (s.stages < 2 || s.stages > 4)
    return fail("stages must be in [2, 4]");
  if (s.warps > 16)
    return fail("at most 16 warps");
  if (s.blockQ % (16 * s.warps))
    return fail("each warp needs a multiple of 16 query rows");
  if (s.blockKV < 16)
    return fail("blockKV must be >= 16");
  int64_t threads = 32 * s.warps, cpr = tileRow(p) / chunkElems(p);
  if (p.kTransposed && s.blockKV / 8 > threads)
    return fail("a row of K given transposed has more chunks than threads");
  if (threads % cpr || (s.blockKV * cpr) % threads ||
      (s.blockQ * cpr) % threads)
    return fail("a tile's 16-byte chunks must spread evenly over threads");
  return true;
}

bool attentionScheduleValid(const AttentionProblem &p,
                            const AttentionSchedule &s,
                            const ::tcc::TargetDesc &target, std::string &why) {
  if (!attentionShapeValid(p, s, why))
    return false;
  std::string limit;
  if (!sharedFits(sharedBytesOf(p, s), target, limit)) {
    why = "attention schedule: " + limit;
    return false;
  }
  return true;
}

AttentionSchedule chooseAttentionSchedule(const AttentionProblem &p,
                                          const ::tcc::TargetDesc &target) {
  int64_t maxShared = target.maxSharedPerBlock,
          sms = target.multiprocessorsForHeuristics();
  // 128 query rows, 4 warps of 32 rows each (K and V fragments serve two
  // m16 tiles: half the shared-memory reads of 16-row warps); 32-key tiles,
  // whose scores fit the registers beside the 32 x headDim accumulators;
  // double-buffered.
  int64_t widest = std::max(computeDim(p), computeDimV(p));
  AttentionSchedule s{128, 32, 4, 2};
  if (widest <= 64)
    s = {128, 64, 4, 3};
  // V's head size above 128: 16 rows a warp, the accumulators alone take
  // V's head size / 2 registers an m-tile. Q's and K's head size only adds
  // k-steps (Q's fragments come from shared memory): MLA's 192 over values
  // of 128 keeps 32 rows a warp, 251 registers and no spills (ptxas), 2.56
  // ms against 16 rows' 2.84 (causal, sequence 8192, H100, session 54).
  if (computeDimV(p) > 128)
    s = {128, 32, 8, 2};
  // f32 (3xTF32): 16 rows a warp, whose 3 MMAs a product leave K's and V's
  // fragments used 3 times each anyway; 128 rows of 8 warps share each K
  // and V tile (one block a multiprocessor). 32-key tiles at head sizes up
  // to 128 (253 registers at 128; 5.33 ms against 16-key tiles' 5.62 at
  // sequence 4096 on the H100, session 49), 3 stages up to 64. Above 128,
  // 64 rows and 16 keys (Q's two halves alone are 256 KiB at 128 rows).
  if (splitF32(p))
    s = widest <= 64    ? AttentionSchedule{128, 32, 8, 3}
        : widest <= 128 ? AttentionSchedule{128, 32, 8, 2}
                        : AttentionSchedule{64, 16, 4, 2};
  // Fewer rows a block while the grid leaves multiprocessors idle.
  while (ceilDiv(p.lq, s.blockQ) * p.headsQ * p.batch < sms && s.blockQ > 64) {
    s.blockQ /= 2;
    if (s.blockQ / s.warps < 16)
      s.warps /= 2;
  }
  while (s.stages > 2 && sharedBytesOf(p, s) > maxShared)
    --s.stages;
  std::string why;
  if (!attentionScheduleValid(p, s, target, why))
    s = {64, 32, 4, 2}; // every supported problem takes this one
  return s;
}

FailureOr<KernelLaunch> buildAttentionKernel(OpBuilder &b,
                                             mlir::gpu::GPUModuleOp module,
                                             StringRef name,
                                             const AttentionProblem &p,
                                             const AttentionSchedule &s) {
  std::string why;
  if (!attentionShapeValid(p, s, why))
    return module.emitError(why), failure();
  loadTemplateDialects(b.getContext());

  OpBuilder::InsertionGuard g(b);
  int64_t threads = 32 * s.warps;
  SmallVector<Type> args{attentionOperandType(p, AttentionOperand::Q),
                         attentionOperandType(p, AttentionOperand::K),
                         attentionOperandType(p, AttentionOperand::V),
                         attentionOperandType(p, AttentionOperand::O)};
  llvm::append_range(args, p.captured);
  auto func = createKernelFunc(b, module, name, args, threads);
  setResidency(func, threads);
  Block &entry = func.getBody().front();
  Location loc = module.getLoc();
  AttentionBuilder ab(b, loc, p, s);
  ab.setCaptured(entry.getArguments().drop_front(4));
  ab.build(entry.getArgument(0), entry.getArgument(1), entry.getArgument(2),
           entry.getArgument(3));
  mlir::gpu::ReturnOp::create(b, loc);

  KernelLaunch launch;
  launch.grid = {ceilDiv(p.lq, s.blockQ), p.headsQ, p.batch};
  launch.block = {threads, 1, 1};
  launch.sharedBytes = sharedBytesOf(p, s);
  return launch;
}

bool capturedIsPlane(const AttentionProblem &p, size_t i) {
  if (i < p.capturedView.size() && p.capturedView[i])
    return false;
  auto t = cast<ShapedType>(p.captured[i]);
  int64_t r = t.getRank();
  return r >= 2 && t.getDimSize(r - 2) == p.lq && t.getDimSize(r - 1) == p.lk;
}

int64_t decodeRows(const AttentionProblem &p) {
  return p.headsKV > 0 ? p.headsQ / p.headsKV * p.lq : 0;
}

bool preferDecode(const AttentionProblem &p) {
  return decodeRows(p) <= 16 && p.lk >= 512;
}

/// decodeScheduleValid without the target's limits: what the builder needs.
static bool decodeShapeValid(const AttentionProblem &p, const DecodeSchedule &s,
                             std::string &why) {
  auto fail = [&](const std::string &msg) {
    why = "decode schedule: " + msg;
    return false;
  };
  if (!attentionKernelSupports(p, why))
    return false;
  // f32 decode is bound by memory: the SIMT template's split-K pair.
  if (splitF32(p))
    return fail("f32 takes the SIMT template's decode pair");
  if (decodeRows(p) > 16)
    return fail("more than 16 query rows share a key/value head");
  if (p.headsKV > 65535)
    return fail("key/value heads must be <= 65535 (grid limits)");
  for (int64_t v : {s.blockKV, s.warps})
    if (v < 1 || !llvm::isPowerOf2_64(v))
      return fail("blockKV and warps must be powers of two");
  if (s.blockKV > kMaxTile)
    return fail("blockKV must be <= " + std::to_string(kMaxTile));
  if (s.stages < 2 || s.stages > 4)
    return fail("stages must be in [2, 4]");
  if (s.warps > 16)
    return fail("at most 16 warps");
  if (s.blockKV < 16 * s.warps)
    return fail("each warp needs a multiple of 16 keys of a tile");
  if (s.chunkTiles < 1 || s.chunkTiles > kMaxChunkTiles)
    return fail("a chunk holds 1 to 2^30 key tiles");
  int64_t threads = 32 * s.warps, cpr = tileRow(p) / chunkElems(p);
  if (p.kTransposed && s.blockKV / 8 > threads)
    return fail("a row of K given transposed has more chunks than threads");
  if (threads % cpr || (s.blockKV * cpr) % threads || (16 * cpr) % threads)
    return fail("a tile's 16-byte chunks must spread evenly over threads");
  return true;
}

bool decodeScheduleValid(const AttentionProblem &p, const DecodeSchedule &s,
                         const ::tcc::TargetDesc &target, std::string &why) {
  if (!decodeShapeValid(p, s, why))
    return false;
  std::string limit;
  if (!sharedFits(decodeSharedBytes(p, s), target, limit)) {
    why = "decode schedule: " + limit;
    return false;
  }
  return true;
}

DecodeSchedule chooseDecodeSchedule(const AttentionProblem &p,
                                    const ::tcc::TargetDesc &target) {
  int64_t maxShared = target.maxSharedPerBlock,
          sms = target.multiprocessorsForHeuristics();
  // 64-key tiles, 16 keys a warp, three stages: 2 x 64 keys of K and V in
  // flight a block, about 100 KiB of shared memory at headDim 128, so two
  // blocks share a multiprocessor (wider heads drop to two stages).
  DecodeSchedule s{64, 4, 3, 4};
  while (s.stages > 2 && decodeSharedBytes(p, s) > maxShared)
    --s.stages;
  // Chunks for one wave: as many blocks as the multiprocessors hold at once
  // (shared memory bounds them), two chunks or more, each at least 4 key
  // tiles so that the pipeline's prologue and the partial result's write
  // are amortised. A second, partial wave costs a chunk's whole time: at
  // B 1, 32 heads, 32768 keys, 17 chunks (544 blocks for 264 places) ran
  // 0.1356 ms, 8 chunks 0.1277 (H200, docs/performance.md, session 14).
  int64_t tiles = ceilDiv(p.lk, s.blockKV);
  int64_t perChunk = std::max<int64_t>(1, p.batch * p.headsKV);
  int64_t resident = std::max<int64_t>(
      1, maxShared / std::max<int64_t>(1, decodeSharedBytes(p, s)));
  // Where the (batch, head) pairs alone fill at least three quarters of the
  // places, one chunk: every block reads its pair's keys once and writes O,
  // and the combine's launch (about 1% of 0.245 ms at B 8, 32 heads, 8192
  // keys; docs/performance.md, session 20) is saved.
  int64_t places = sms * resident;
  int64_t chunks =
      4 * perChunk >= 3 * places ? 1 : std::max<int64_t>(2, places / perChunk);
  s.chunkTiles = std::min(tiles, std::max<int64_t>(4, ceilDiv(tiles, chunks)));
  return s;
}

FailureOr<DecodeKernels>
buildDecodeKernels(OpBuilder &b, mlir::gpu::GPUModuleOp module,
                   StringRef partialName, StringRef combineName,
                   const AttentionProblem &p, const DecodeSchedule &s) {
  std::string why;
  if (!decodeShapeValid(p, s, why))
    return module.emitError(why), failure();
  loadTemplateDialects(b.getContext());
  int64_t rows = decodeRows(p), chunks = decodeChunks(p, s);
  Type f32 = b.getF32Type();
  int64_t group = p.headsQ / p.headsKV;
  // Q's and O's rows of a key/value head, merged where their strides allow
  // (row r: query head r / lq of the group, position r % lq).
  SmallVector<int64_t, 4> qs = attentionOperandStrides(p, AttentionOperand::Q);
  SmallVector<int64_t, 4> os = attentionOperandStrides(p, AttentionOperand::O);
  std::optional<int64_t> qRow = mergedStride(group, qs[1], p.lq, qs[2]);
  std::optional<int64_t> oRow = mergedStride(group, os[1], p.lq, os[2]);
  std::optional<int64_t> oBH =
      mergedStride(p.batch, os[0], p.headsKV, group * os[1]);
  Type qT = qRow ? Type(stridedType({p.batch, p.headsKV, rows, p.headDim},
                                    {qs[0], group * qs[1], *qRow, 1},
                                    p.elemType, p.qOffset))
                 : Type(attentionOperandType(p, AttentionOperand::Q));
  Type partT =
      MemRefType::get({p.batch, p.headsKV, chunks, rows, p.dimV()}, f32);
  Type statsT = MemRefType::get({p.batch, p.headsKV, chunks, rows, 2}, f32);
  // The combine kernel reads the same buffers with batch and head merged.
  int64_t bh = p.batch * p.headsKV;
  Type partFlatT = MemRefType::get({bh, chunks, rows, p.dimV()}, f32);
  Type statsFlatT = MemRefType::get({bh, chunks, rows, 2}, f32);
  Type oFlatT = oRow && oBH
                    ? Type(stridedType({bh, rows, p.dimV()}, {*oBH, *oRow, 1},
                                       p.elemType))
                    : Type(attentionOperandType(p, AttentionOperand::O));

  OpBuilder::InsertionGuard g(b);
  Location loc = module.getLoc();
  AttentionSchedule as = asAttention(s);
  int64_t threads = 32 * s.warps;
  // One chunk (the (batch, head) pairs alone fill the multiprocessors,
  // chooseDecodeSchedule): the partial kernel writes O, and no combine runs.
  bool single = chunks == 1;
  SmallVector<Type> args{qT, attentionOperandType(p, AttentionOperand::K),
                         attentionOperandType(p, AttentionOperand::V)};
  if (single)
    args.push_back(oFlatT);
  else
    llvm::append_range(args, SmallVector<Type, 2>{partT, statsT});
  int64_t leading = args.size();
  llvm::append_range(args, p.captured);
  auto partial = createKernelFunc(b, module, partialName, args, threads);
  // Chunks are planned for the blocks shared memory admits at once
  // (chooseDecodeSchedule). Where three fit even sm_90's 228 KiB (head sizes
  // up to 64, 50 KiB a block), ptxas's own target keeps that residency.
  constexpr int64_t kLargestSharedPerSM = 228 * 1024;
  if (3 * decodeSharedBytes(p, s) > kLargestSharedPerSM)
    setResidency(partial, threads);
  Block &pe = partial.getBody().front();
  AttentionBuilder pb(b, loc, p, as, &s);
  pb.setCaptured(pe.getArguments().drop_front(leading));
  pb.build(pe.getArgument(0), pe.getArgument(1), pe.getArgument(2),
           pe.getArgument(3), single ? Value() : pe.getArgument(4));
  mlir::gpu::ReturnOp::create(b, loc);

  DecodeKernels k;
  k.chunks = chunks;
  k.partial.grid = {chunks, p.headsKV, p.batch};
  k.partial.block = {threads, 1, 1};
  k.partial.sharedBytes = decodeSharedBytes(p, s);
  if (single)
    return k;

  auto combine = createKernelFunc(b, module, combineName,
                                  {partFlatT, statsFlatT, oFlatT}, threads);
  Block &ce = combine.getBody().front();
  AttentionBuilder(b, loc, p, as, &s)
      .buildCombine(ce.getArgument(0), ce.getArgument(1), ce.getArgument(2));
  mlir::gpu::ReturnOp::create(b, loc);

  k.combine.grid = {ceilDiv(bh * rows, s.warps), 1, 1};
  k.combine.block = {threads, 1, 1};
  k.combine.sharedBytes = 0;
  k.partialOBytes = uint64_t(bh * chunks * rows * p.dimV()) * 4;
  k.partialStatsBytes = uint64_t(bh * chunks * rows * 2) * 4;
  return k;
}

} // namespace tcc::gpu
