//===- WgmmaAttention.cpp - attention on Hopper warpgroup MMA -------------===//
//
// The kernel, for a block owning query tile qt of head h in batch z, with
// W warpgroups of 64 rows, S stages, key tiles of Bc keys:
//
//   copy the Q tile (one cp.async group)
//   [tStart, tEnd) = the key tiles the mask can keep for these rows
//   prologue: copy K and V of tiles tStart..tStart+S-2 (a group per tile)
//   for j in [tStart, tEnd):
//     cp.async.wait_group S-2 (Q and tile j landed); fence.proxy.async;
//       barrier; copy tile j+S-1 into the stage tile j-1 used
//     if the mask keeps nothing of the tile: skip it
//     S = Q K_j^T: D/16 wgmma m64nBck16 (both operands K-major in shared
//       memory); commit; wait
//     scale, scoreMod, mask; online softmax on the accumulators (a row's
//       values sit in the 4 lanes of a quad); O and l corrected
//     O += P V_j: Bc/16 wgmma m64nDvk16, P as the register A operand, V as
//       transposed (N-major) B; commit; wait
//   O / l, stored from registers.
//
// Each iteration waits for all its wgmmas, so after the barrier of j every
// warpgroup is done with the stage of tile j-1 and the copy of tile j+S-1
// may overwrite it. The warpgroups run unsynchronised between barriers, so
// one's softmax overlaps the other's wgmmas. The schedule's `overlap` also
// overlaps them inside a warpgroup (see overlappedLoop): S_{j+1} and
// P_j V_j are issued together and the softmax of tile j+1 runs while
// P_j V_j is in flight.
//
// The m64nN f32 accumulator gives thread (warp w, lane l) of a warpgroup, for
// each 8 columns n, rows 16w + l/4 (elements 4n, 4n+1) and 16w + l/4 + 8
// (4n+2, 4n+3) at columns 8n + 2(l%4) + {0, 1}. The register A operand of
// wgmma k16 takes from the same thread rows 16w + l/4 (+8) at k columns
// 2(l%4) + {0, 1} (+8): for keys 16kk..16kk+15, S's elements 8kk..8kk+7 in
// order, two to a 32-bit register. So P feeds the P V wgmma with a
// conversion and no data movement, as in FlashAttention-3.
//
// V may have a head size Dv of its own (DeepSeek's MLA: Q K^T over 192,
// values of 128): Q K^T takes D/16 k-steps, P V is m64nDvk16 into Dv/2
// accumulators, and K and V tiles have their own sizes (all K stages, then
// all V stages).
//
// Shared layout: every tile (Q: blockQ rows, K and V: Bc rows, of D
// elements, V's of Dv) is D/64 (Dv/64) column blocks of rows x 128 bytes, the 16-byte chunk c
// of row r stored at c ^ (r & 7) (wgmma's 128-byte swizzle), from a base
// aligned to 1024 bytes. Read K-major (Q as A, K as B): LBO 16, SBO 1024, a
// k16 step 32 bytes inside a column block. V as N-major B: the column blocks
// are the N blocks (LBO = Bc x 128), SBO 1024 between 8-key atoms, a k16
// step 16 rows (2048 bytes). K given transposed ([D][keys], kTransposed)
// takes V's layout with keys and head dims exchanged (Bc/64 column blocks of
// D rows) and is read as V is: N-major, LBO D x 128.
//
// Masks are conjunctions of linear constraints, classified per (query tile,
// key tile) at its corners as in AttentionKernel.cpp: fully masked tiles
// are outside the loop bounds or skipped, fully kept tiles run no mask code.
// The producer's overlapped loop cannot branch per tile (the branch would
// sit where P V is in flight): where the compiler proves that only the last
// tile of every block's range is partial (causal, bottom-right causal, an
// odd lk), it takes the tiles last to first and masks the prologue's tile
// alone; otherwise it masks every tile with selects.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/WgmmaAttention.h"
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

#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>

using namespace mlir;

namespace tcc::gpu {
namespace {

constexpr int64_t kRowBytes = 128;   // one swizzle row: 64 16-bit elements
constexpr int64_t kAtomBytes = 1024; // 8 swizzled rows

int64_t qBytesOf(const AttentionProblem &p, const WgmmaAttentionSchedule &s) {
  return 64 * s.warpgroups * p.headDim * 2;
}
/// A stage's K tile and V tile (V may have a head size of its own: MLA).
int64_t kBytesOf(const AttentionProblem &p, const WgmmaAttentionSchedule &s) {
  return s.blockKV * p.headDim * 2;
}
int64_t vBytesOf(const AttentionProblem &p, const WgmmaAttentionSchedule &s) {
  return s.blockKV * p.dimV() * 2;
}
/// The byte of V's stage 0: after Q and every stage of K.
int64_t vFirstByteOf(const AttentionProblem &p,
                     const WgmmaAttentionSchedule &s) {
  return qBytesOf(p, s) + s.stages * kBytesOf(p, s);
}
/// The captured tensors staged through shared memory with K and V, tile by
/// tile (copied by TMA or in 16-byte chunks, read by each thread at its
/// scores): those
/// of the problem's element type holding a full [lq, lk] plane (a bias),
/// whose rows start 16-byte aligned (lk a multiple of 8), as many as the
/// shared memory holds. The others are read from global memory per score.
SmallVector<int64_t> stagedCaptured(const AttentionProblem &p,
                                    const WgmmaAttentionSchedule &s) {
  // sm_90a's shared memory a block, less the alignment atom and barriers.
  constexpr int64_t kShared = 227 * 1024 - 1024 - 64;
  int64_t used = qBytesOf(p, s) + s.stages * (kBytesOf(p, s) + vBytesOf(p, s));
  int64_t per = s.stages * 64 * s.warpgroups * s.blockKV * 2;
  SmallVector<int64_t> out;
  for (auto [i, t] : llvm::enumerate(p.captured)) {
    auto mt = cast<MemRefType>(t);
    int64_t r = mt.getRank();
    if (r < 2 || r > 4 || mt.getElementType() != p.elemType ||
        !capturedIsPlane(p, i) || p.lk % 8 || s.blockKV < 64 ||
        used + per > kShared)
      continue;
    out.push_back(int64_t(i));
    used += per;
  }
  return out;
}
int64_t stagedBytesOf(const AttentionProblem &p,
                      const WgmmaAttentionSchedule &s) {
  return int64_t(stagedCaptured(p, s).size()) * s.stages * 64 * s.warpgroups *
         s.blockKV * 2;
}
int64_t tileBytesOf(const AttentionProblem &p,
                    const WgmmaAttentionSchedule &s) {
  return vFirstByteOf(p, s) + s.stages * vBytesOf(p, s) + stagedBytesOf(p, s);
}
/// With a producer: the mbarriers "stage full" (S), "stage empty" (S) and
/// "Q full", 8 bytes each, after the tiles.
int64_t barrierBytesOf(const WgmmaAttentionSchedule &s) {
  return s.producer ? 16 * s.stages + 16 : 0;
}
/// The registers a computing thread takes with a producer and 2 computing
/// warpgroups (setmaxnreg); the producer keeps 504 - 2x of the 3 x 168 a
/// thread of the block starts with. ptxas allocates each side within its
/// count (measured with ptxas -v at D 128): both loops fit 200 with no
/// spill; the producer's address arithmetic spills below 88 registers with
/// 2 stages and below 104 with 3 or more.
int64_t consumerRegisters(const WgmmaAttentionSchedule &s) {
  return s.stages >= 3 ? 200 : 208;
}
int64_t sharedBytesOf(const AttentionProblem &p,
                      const WgmmaAttentionSchedule &s) {
  // One extra atom so that the base can be aligned to 1024 bytes at run time.
  return tileBytesOf(p, s) + barrierBytesOf(s) + kAtomBytes;
}

/// Whether the producer's overlapped loop may take its key tiles last to
/// first with the mask on the first tile alone: some constraint (the mask's
/// or the bound of an lk that tiles do not divide) cuts a tile, and for
/// every query tile the key tiles of its range other than its last are kept
/// whole. Evaluated at compile time (the shapes are static), mirroring
/// keyTileRange and tilePartial; one check per (query tile, key tile) pair,
/// as many as the kernel's own iterations.
bool reversedKeysSuffice(const AttentionProblem &p,
                         const WgmmaAttentionSchedule &s) {
  SmallVector<MaskConstraint, 3> constraints(p.mask.begin(), p.mask.end());
  if (p.lk % s.blockKV)
    constraints.push_back({0, -1, p.lk - 1});
  if (constraints.empty())
    return false;
  auto floorDivC = [](int64_t x, int64_t d) {
    return x >= 0 ? x / d : -((-x + d - 1) / d);
  };
  int64_t blockQ = 64 * s.warpgroups, nKTiles = ceilDiv(p.lk, s.blockKV);
  for (int64_t qa = 0; qa < p.lq; qa += blockQ) {
    int64_t qb = std::min(qa + blockQ, p.lq) - 1;
    int64_t start = 0, end = nKTiles;
    for (const MaskConstraint &mc : p.mask) {
      if (!mc.b)
        continue;
      int64_t hi = (mc.a ? (mc.a > 0 ? qb : qa) * mc.a : 0) + mc.c;
      if (mc.b > 0)
        start = std::max(start,
                         floorDivC(floorDivC(-hi + mc.b - 1, mc.b), s.blockKV));
      else
        end = std::min(end, floorDivC(floorDivC(hi, -mc.b), s.blockKV) + 1);
    }
    for (int64_t t = start; t + 1 < end; ++t) {
      int64_t ka = t * s.blockKV, kb = ka + s.blockKV - 1;
      for (const MaskConstraint &mc : constraints)
        if (mc.c + (mc.a > 0 ? qa : qb) * mc.a + (mc.b > 0 ? ka : kb) * mc.b <
            0)
          return false;
    }
  }
  return true;
}

class FlashBuilder : AttentionArith {
public:
  FlashBuilder(OpBuilder &b, Location loc, const AttentionProblem &p,
               const WgmmaAttentionSchedule &s)
      : AttentionArith(b, loc, p), s(s), blockQ(64 * s.warpgroups),
        threads(128 * s.warpgroups), nS(s.blockKV / 2), nO(p.dimV() / 2) {
    fast = !p.scoreMod && !p.correction && !p.contribution && p.scale > 0;
    constraints.assign(p.mask.begin(), p.mask.end());
    if (p.lk % s.blockKV)
      constraints.push_back({0, -1, p.lk - 1});
    staged = stagedCaptured(p, s);
    opaqueCopyLoops =
        p.lq % blockQ || p.lk % s.blockKV || p.kTransposed || !staged.empty();
  }

  using AttentionArith::setCaptured;
  /// schedule.tma: the maps of K, V and the staged tensors (in `staged`'s
  /// order).
  void setTensorMaps(Value k, Value v, ValueRange planes) {
    tmapK = k;
    tmapV = v;
    tmapPlanes.assign(planes.begin(), planes.end());
  }
  void build(Value q, Value k, Value v, Value o);

private:
  Value i64(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  }
  Value addI64(Value x, int64_t v) {
    return v ? arith::AddIOp::create(b, loc, x, i64(v)).getResult() : x;
  }
  Value toI64(Value index) {
    return arith::IndexCastUIOp::create(b, loc, b.getI64Type(), index);
  }
  Value isNegInf(Value x) {
    return arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OEQ, x,
        cstF(-std::numeric_limits<double>::infinity()));
  }

  /// The shared-window address (i32) of mbarrier `i`: full[0..S), empty[0..S),
  /// then Q's.
  Value barrier(Value i) { return toI32(add(barrierBase, mul(i, 8))); }
  Value fullBarrier(Value stage) { return barrier(stage); }
  Value emptyBarrier(Value stage) { return barrier(add(stage, s.stages)); }
  Value qBarrier() { return barrier(cst(2 * s.stages)); }
  void arrive(Value bar) {
    ptx("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [$0];\n}", "r",
        bar);
  }
  /// The parity of use `i` of a stage (i / S rounds before it).
  Value roundParity(Value i) { return toI32(band(div(i, s.stages), 1)); }
  void fenceProxyAsync() {
    MLIRContext *ctx = b.getContext();
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  }
  /// The warp-specialised kernel (schedule.producer): a producer warpgroup
  /// and the computing ones.
  void buildSpecialized(int64_t nKTiles);
  void producerLoop(Value tStart);
  SmallVector<Value> consumerLoop(Value tStart, ArrayRef<Value> init);
  /// consumerLoop with the softmax of tile i+1 overlapping P V of tile i.
  SmallVector<Value> consumerOverlappedLoop(Value tStart, ArrayRef<Value> init);
  /// Ping-pong: waits for this warpgroup's turn to issue wgmmas (named
  /// barrier 1 + wg), and gives the turn to the other (2 - wg).
  void takeTurn() {
    if (s.pingpong)
      ptx("bar.sync $0, 256;", "r", toI32(add(wg, 1)));
  }
  void giveTurn() {
    if (s.pingpong)
      ptx("bar.arrive $0, 256;", "r", toI32(sub(cst(2), wg)));
  }
  /// Ping-pong starts with warpgroup 0's turn; each warpgroup takes as many
  /// turns as it gives, and warpgroup 0 takes the one left after the loop.
  void startTurns() {
    if (s.pingpong)
      whenTrue(cmp(arith::CmpIPredicate::eq, wg, cst(1)),
               [&] { ptx("bar.arrive 1, 256;"); });
  }
  void endTurns() {
    if (s.pingpong)
      whenTrue(cmp(arith::CmpIPredicate::eq, wg, cst(0)),
               [&] { ptx("bar.sync 1, 256;"); });
  }

  /// Runs `body(id)` for chunk ids 0..chunks-1 spread over the copying
  /// threads (copyTid of copyThreads): unrolled, or (the producer) in a
  /// loop.
  void forEachChunk(int64_t chunks, function_ref<void(Value)> body);
  /// Copies rows row0..row0+rows-1 of src[batch, hd] (rows past `bound`
  /// zero-filled) into the swizzled tile at byte `dstByte` of the shared
  /// memory, split over the copying threads (copyTid of copyThreads).
  void copyRows(Value src, Value hd, Value row0, int64_t bound, int64_t rows,
                int64_t dim, Value dstByte);
  /// Copies key tile `tile` of K given transposed ([headDim][keys]) into the
  /// swizzled tile at byte `dstByte`: blockKV / 64 column blocks of headDim
  /// rows x 128 bytes (V's layout, keys and head dims exchanged), keys past
  /// lk zero-filled.
  void copyKTransposed(Value tile, Value dstByte);
  /// Copies K and V of key tile `tile` into `stage` if tile < tEnd, then
  /// commits (always, so that group counts stay uniform).
  /// `live`: whether the tile keeps a key (key skipping), when known.
  void copyKVTile(Value tile, Value stage, Value live = {});
  /// schedule.tma: the calling (one) thread announces the bytes of key tile
  /// `tile` on the "full" barrier of `stage` and issues its K and V copies
  /// by TMA (D/64 boxes of 64 columns x blockKV keys each, K given
  /// transposed blockKV/64 boxes of 64 keys x D rows, landing in the
  /// 128-byte swizzle the descriptors read; keys past lk load as zeros),
  /// and those of the staged tensors (blockKV/64 boxes of 64 keys x blockQ
  /// rows; rows past lq and keys past lk load as zeros).
  void tmaKVTile(Value tile, Value stage);
  /// The byte (from the aligned base) of staged tensor `i` (an index into
  /// `staged`) in `stage`: blockQ x blockKV elements as blockKV / 64 boxes
  /// of blockQ rows x 128 bytes (64 keys), the 16-byte chunk c of row r at
  /// c ^ (r % 8): TMA's 128-byte swizzle, so that the cp.async and TMA
  /// copies lay the plane out alike, and the 8 rows a warp reads at once
  /// fall in distinct banks.
  Value stagedByte(int64_t i, Value stage) {
    int64_t plane = blockQ * s.blockKV * 2;
    return add(cst(vFirstByteOf(p, s) + s.stages * vBytesOf(p, s) +
                   i * s.stages * plane),
               mul(stage, plane));
  }
  /// Copies rows q0.. and keys of tile `tile` of staged tensor `i` (rows
  /// past lq and keys past lk zero-filled) into `stage`.
  void copyStaged(int64_t i, Value tile, Value stage);
  /// The staged tensors' values at the thread's scores of the tile in
  /// `stage`: [staged index][e] (e as in softmax's scores).
  SmallVector<SmallVector<Value>> readStaged(Value stage);
  void waitGroups(int64_t pending) {
    nvgpu::DeviceAsyncWaitOp::create(b, loc, token,
                                     b.getI32IntegerAttr(pending));
  }

  /// `vals` through one empty asm with side effects: LLVM keeps side
  /// effects in order, so reads of wgmma results stay after the wait and
  /// writes of its operands before the fence (CUTLASS's fence_operand).
  SmallVector<Value> fenceOperands(ArrayRef<Value> vals);
  /// Issues S = Q K^T of the K tile in `stage` as one wgmma group; the
  /// Bc/2 accumulator values are read after waitWgmma and fenceOperands.
  SmallVector<Value> scores(Value stage);
  /// Issues O += P V of the V tile in `stage` as one wgmma group, P as
  /// register A operands (pRegs: Bc/2 registers of two elements).
  SmallVector<Value> accumulate(Value stage, ArrayRef<Value> pRegs,
                                ArrayRef<Value> oAcc);
  void waitWgmma(int64_t pending) {
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(pending));
  }
  /// The offsets of `stage`'s K and V tiles from stage 0's (16-byte
  /// units, as the descriptors count).
  Value kUnitsOf(Value stage) { return toI64(mul(stage, kBytesOf(p, s) / 16)); }
  Value vUnitsOf(Value stage) { return toI64(mul(stage, vBytesOf(p, s) / 16)); }
  SmallVector<Value> applyMask(ArrayRef<Value> sv, Value k0);
  /// Scale, scoreMod and mask on the scores `sv` of the key tile at k0,
  /// then the online softmax: updates mRun and lRun, sets corr (the factor
  /// for O) and returns P as A registers. `keptWhole`: the tile is known
  /// to be kept whole (the reversed loop's, reversedKeysSuffice): no mask.
  SmallVector<Value> softmax(SmallVector<Value> sv, Value k0,
                             MutableArrayRef<Value> mRun,
                             MutableArrayRef<Value> lRun, Value corr[2],
                             Value stage, bool keptWhole = false);
  /// O *= corr per row half.
  void rescale(MutableArrayRef<Value> oAcc, Value corr[2]) {
    for (int64_t e = 0; e < nO; ++e)
      oAcc[e] = fmul(oAcc[e], corr[(e / 2) % 2]);
  }
  /// One key tile, unpipelined: returns the new (O..., m..., l...).
  SmallVector<Value> tileStep(Value stage, Value k0, ValueRange carried);
  /// The key loop, unpipelined (the loop's results: O..., m..., l...).
  SmallVector<Value> simpleLoop(Value tStart, ArrayRef<Value> init);
  /// The key loop with the softmax of tile j+1 overlapping P V of tile j.
  SmallVector<Value> overlappedLoop(Value tStart, ArrayRef<Value> init);
  /// cp.async wait, proxy fence and barrier: the K and V copies of the
  /// groups older than the last `pending` are visible to every wgmma.
  void publishTiles(int64_t pending);
  void epilogue(ValueRange carried);
  /// The thread's query position of row half h (i32), and its first key of
  /// a tile at k0.
  Value rowQ(int64_t h) { return add(rowI32, h * 8); }
  Value keyThread(Value k0) { return toI32(add(k0, mul(tq, 2))); }

  const WgmmaAttentionSchedule &s;
  int64_t blockQ, threads, nS, nO;
  int64_t copyThreads = 0; // the threads that copy tiles (set in build)
  /// Whether the producer's copy loops take an opaque trip count (see
  /// forEachChunk): where its copies carry edge checks, transposed K or
  /// staged tensors.
  bool opaqueCopyLoops = false;
  Value copyTid;
  Value barrierBase; // index: shared-window address of the mbarriers
  bool fast;
  SmallVector<MaskConstraint, 3> constraints;
  /// Indices into p.captured of the tensors staged through shared memory.
  SmallVector<int64_t> staged;

  Value qArg, kArg, vArg, oArg;
  Value tmapK, tmapV; // schedule.tma: the tensor maps (generic pointers)
  SmallVector<Value> tmapPlanes; // and the staged tensors'

  Value smem; // the aligned shared memory, as elements
  Value tid, wg, wgTid, gq, tq;
  Value batch, head, kvHead, tStart, tEnd;
  /// The producer's overlapped loop takes its key tiles last to first when
  /// that leaves every tile but the first unmasked (reversedKeysSuffice):
  /// the mask is then built for the prologue's tile only.
  bool reverseKeys = false;
  /// Key tile index of the idx-th tile the loop takes.
  Value tileAt(Value idx) {
    return reverseKeys ? sub(add(tEnd, -1), idx) : add(tStart, idx);
  }

  Value batchI32, headI32, rowI32;
  Value descQ, descK, descV; // descriptors (the Q one of this warpgroup)
  Value token;
  /// The simple loop's initial key-skipping flags (see build()).
  SmallVector<Value> liveFlags;
};

void FlashBuilder::forEachChunk(int64_t chunks,
                                function_ref<void(Value)> body) {
  // The producer warpgroup copies in a loop: unrolled, its addresses would
  // be computed up front and outlive its 64 registers.
  bool looped = s.producer && chunks % copyThreads == 0;
  scf::ForOp loop;
  if (looped && !opaqueCopyLoops) {
    loop =
        scf::ForOp::create(b, loc, cst(0), cst(chunks / copyThreads), cst(1));
  } else if (looped) {
    // The trip count through an asm: LLVM cannot see it, so it cannot
    // unroll the loop whole and hoist the addresses of every iteration,
    // which it did where the copies check rows or keys at the edges, read K
    // transposed or stage captured tensors, and which spilled the producer.
    auto count = LLVM::InlineAsmOp::create(
        b, loc, i32, ValueRange{},
        b.getStringAttr("mov.u32 $0, " + std::to_string(chunks / copyThreads) +
                        ";"),
        b.getStringAttr("=r"), UnitAttr(), UnitAttr(), LLVM::TailCallKindAttr(),
        LLVM::AsmDialectAttr(), ArrayAttr());
    Value upper = arith::IndexCastUIOp::create(b, loc, b.getIndexType(),
                                               count.getResult(0));
    loop = scf::ForOp::create(b, loc, cst(0), upper, cst(1));
  }
  OpBuilder::InsertionGuard outer(b);
  if (looped)
    b.setInsertionPointToStart(loop.getBody());
  for (int64_t it = 0; it < (looped ? 1 : ceilDiv(chunks, copyThreads)); ++it) {
    OpBuilder::InsertionGuard g(b);
    Value id = looped ? add(copyTid, mul(loop.getInductionVar(), copyThreads))
                      : add(copyTid, it * copyThreads);
    if (!looped && (it + 1) * copyThreads > chunks) {
      auto ifOp = scf::IfOp::create(b, loc, ult(id, chunks), false);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    }
    body(id);
  }
}

void FlashBuilder::copyRows(Value src, Value hd, Value row0, int64_t bound,
                            int64_t rows, int64_t dim, Value dstByte) {
  int64_t cpr = dim / 8, chunks = rows * cpr;
  bool needRow = bound % rows != 0;
  forEachChunk(chunks, [&](Value id) {
    Value r = div(id, cpr), cn = rem(id, cpr);
    // Column block cn / 8, swizzled chunk (cn % 8) ^ (r % 8).
    Value byte =
        add(add(dstByte, mul(div(cn, 8), rows * kRowBytes)),
            add(mul(r, kRowBytes), mul(bxor(band(cn, 7), band(r, 7)), 16)));
    Value row = add(row0, r);
    Value n;
    if (needRow) {
      // Rows out of range read 0 bytes of row 0: zero-filled.
      Value ok = ult(row, bound);
      row = select(ok, row, cst(0));
      n = select(ok, cst(8), cst(0));
    }
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), smem,
        ValueRange{div(byte, 2)}, src, ValueRange{batch, hd, row, mul(cn, 8)},
        b.getIndexAttr(8), n, b.getUnitAttr());
  });
}

void FlashBuilder::copyKTransposed(Value tile, Value dstByte) {
  // lk is a multiple of 8 (wgmmaAttentionSupports): rows start 16-byte
  // aligned and a chunk of 8 keys is wholly inside or past lk.
  int64_t cpr = s.blockKV / 8, rows = p.headDim, chunks = rows * cpr;
  bool needKey = p.lk % s.blockKV != 0;
  forEachChunk(chunks, [&](Value id) {
    Value r = div(id, cpr), cn = rem(id, cpr);
    // Column block cn / 8 (64 keys), swizzled chunk (cn % 8) ^ (r % 8).
    Value byte =
        add(add(dstByte, mul(div(cn, 8), rows * kRowBytes)),
            add(mul(r, kRowBytes), mul(bxor(band(cn, 7), band(r, 7)), 16)));
    Value key = add(mul(tile, s.blockKV), mul(cn, 8));
    Value n;
    if (needKey) {
      // Keys past lk read 0 bytes of key 0: zero-filled.
      Value ok = ult(key, p.lk);
      key = select(ok, key, cst(0));
      n = select(ok, cst(8), cst(0));
    }
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), smem,
        ValueRange{div(byte, 2)}, kArg, ValueRange{batch, kvHead, r, key},
        b.getIndexAttr(8), n, b.getUnitAttr());
  });
}

void FlashBuilder::copyKVTile(Value tile, Value stage, Value live) {
  Value inRange = reverseKeys ? cmp(arith::CmpIPredicate::sge, tile, tStart)
                              : cmp(arith::CmpIPredicate::slt, tile, tEnd);
  auto ifOp = scf::IfOp::create(
      b, loc, live ? land(inRange, live) : copyWanted(inRange, tile, s.blockKV),
      /*withElse=*/false);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Value row0 = mul(tile, s.blockKV);
    Value kByte = add(mul(stage, kBytesOf(p, s)), qBytesOf(p, s));
    Value vByte = add(mul(stage, vBytesOf(p, s)), vFirstByteOf(p, s));
    if (p.kTransposed)
      copyKTransposed(tile, kByte);
    else
      copyRows(kArg, kvHead, row0, p.lk, s.blockKV, p.headDim, kByte);
    copyRows(vArg, kvHead, row0, p.lk, s.blockKV, p.dimV(), vByte);
    for (int64_t i = 0, e = staged.size(); i < e; ++i)
      copyStaged(i, tile, stage);
  }
  token = commitGroup();
}

void FlashBuilder::tmaKVTile(Value tile, Value stage) {
  int64_t kb = kBytesOf(p, s), vb = vBytesOf(p, s);
  int64_t plane = blockQ * s.blockKV * 2;
  Value bar = fullBarrier(stage);
  // A box's bytes count in full, the zeros loaded past the tensor's edges
  // too.
  ptx("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], " +
          std::to_string(kb + vb + int64_t(staged.size()) * plane) + ";",
      "r", bar);
  // Shared-window addresses: the aligned base (rawAddr + pad, as the
  // barriers') plus the K or V stage's byte offset.
  Value base = sub(barrierBase, cst(tileBytesOf(p, s)));
  Value k0 = toI32(mul(tile, s.blockKV)), kvH = toI32(kvHead), z = toI32(batch);
  Value kByte = add(base, add(cst(qBytesOf(p, s)), mul(stage, kb)));
  Value vByte = add(base, add(cst(vFirstByteOf(p, s)), mul(stage, vb)));
  auto box = [&](Value first, Value map, Value inner, Value outer) {
    ptx("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::"
        "complete_tx::bytes [$0], [$1, {$2, $3, $4, $5}], [$6];",
        "r,l,r,r,r,r,r",
        ValueRange{toI32(first), map, inner, outer, kvH, z, bar});
  };
  // K given transposed: blockKV / 64 boxes of 64 keys by headDim rows, each
  // a column block of V's layout (keys and head dims exchanged).
  if (p.kTransposed)
    for (int64_t c = 0; c < s.blockKV / 64; ++c)
      box(add(kByte, c * p.headDim * kRowBytes), tmapK,
          toI32(add(mul(tile, s.blockKV), c * 64)), cstI32(0));
  else
    for (int64_t c = 0; c < p.headDim / 64; ++c)
      box(add(kByte, c * s.blockKV * kRowBytes), tmapK, cstI32(c * 64), k0);
  for (int64_t c = 0; c < p.dimV() / 64; ++c)
    box(add(vByte, c * s.blockKV * kRowBytes), tmapV, cstI32(c * 64), k0);
  // The staged tensors: coordinates (key, row, then head and batch where
  // the tensor has those axes; 0 on a broadcast one).
  for (auto [i, map] : llvm::enumerate(tmapPlanes)) {
    auto mt = cast<MemRefType>(p.captured[staged[i]]);
    int64_t rank = mt.getRank();
    Value first = add(base, stagedByte(i, stage));
    std::string coords, cons = "r,l";
    for (int64_t d = 0; d < rank; ++d) {
      coords += (d ? ", $" : "$") + std::to_string(d + 2);
      cons += ",r";
    }
    cons += ",r";
    for (int64_t c = 0; c < s.blockKV / 64; ++c) {
      SmallVector<Value> args{toI32(add(first, c * blockQ * kRowBytes)), map,
                              toI32(add(mul(tile, s.blockKV), c * 64)),
                              toI32(q0)};
      for (int64_t d = rank - 3; d >= 0; --d)
        args.push_back(mt.getDimSize(d) == 1 ? cstI32(0)
                       : rank - 1 - d == 2   ? toI32(head)
                                             : z);
      args.push_back(bar);
      ptx("cp.async.bulk.tensor." + std::to_string(rank) +
              "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
              "[$0], [$1, {" +
              coords + "}], [$" + std::to_string(rank + 2) + "];",
          cons, args);
    }
  }
}

void FlashBuilder::copyStaged(int64_t i, Value tile, Value stage) {
  auto mt = cast<MemRefType>(p.captured[staged[i]]);
  Value src = captured[staged[i]];
  int64_t rank = mt.getRank(), cpr = s.blockKV / 8, chunks = blockQ * cpr;
  Value base = stagedByte(i, stage), k0 = mul(tile, s.blockKV);
  bool needRow = p.lq % blockQ != 0, needKey = p.lk % s.blockKV != 0;
  forEachChunk(chunks, [&](Value id) {
    Value r = div(id, cpr), c = rem(id, cpr);
    // Box c / 8, row r, swizzled chunk (c % 8) ^ (r % 8).
    Value byte =
        add(add(base, mul(div(c, 8), blockQ * kRowBytes)),
            add(mul(r, kRowBytes), mul(bxor(band(c, 7), band(r, 7)), 16)));
    Value row = add(q0, r), key = add(k0, mul(c, 8)), ok;
    // Rows past lq and keys past lk (whole chunks: lk is a multiple of 8)
    // read 0 bytes of element 0: zero-filled.
    if (needRow) {
      ok = ult(row, p.lq);
      row = select(ok, row, cst(0));
    }
    if (needKey) {
      Value in = ult(key, p.lk);
      key = select(in, key, cst(0));
      ok = land(ok, in);
    }
    Value n = ok ? select(ok, cst(8), cst(0)) : Value();
    SmallVector<Value> idx;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t fromRight = rank - 1 - d;
      idx.push_back(fromRight == 0          ? key
                    : fromRight == 1        ? row
                    : mt.getDimSize(d) == 1 ? cst(0)
                    : fromRight == 2        ? head
                                            : batch);
    }
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), smem,
        ValueRange{div(byte, 2)}, src, idx, b.getIndexAttr(8), n,
        b.getUnitAttr());
  });
}

SmallVector<SmallVector<Value>> FlashBuilder::readStaged(Value stage) {
  SmallVector<SmallVector<Value>> out;
  Value rowLocal = add(mul(wg, 64), add(mul(div(wgTid, 32), 16), gq));
  VectorType v2 = VectorType::get({2}, p.elemType);
  for (int64_t i = 0, e = staged.size(); i < e; ++i) {
    Value base = div(stagedByte(i, stage), 2);
    SmallVector<Value> vals(nS);
    for (int64_t n = 0; n < nS / 4; ++n)
      for (int64_t h = 0; h < 2; ++h) {
        // Row rowLocal + 8h has (row % 8) = gq: chunk n sits in box n / 8
        // at (n % 8) ^ gq.
        Value off = add(add(base, cst((n / 8) * blockQ * 64)),
                        add(mul(add(rowLocal, 8 * h), 64),
                            add(mul(bxor(cst(n % 8), gq), 8), mul(tq, 2))));
        Value pair = vector::LoadOp::create(b, loc, v2, smem, ValueRange{off},
                                            false, llvm::Align(4));
        for (int64_t x = 0; x < 2; ++x)
          vals[n * 4 + h * 2 + x] =
              vector::ExtractOp::create(b, loc, pair, ArrayRef<int64_t>{x});
      }
    out.push_back(std::move(vals));
  }
  return out;
}

SmallVector<Value> FlashBuilder::fenceOperands(ArrayRef<Value> vals) {
  SmallVector<Type> types;
  std::string cons;
  for (size_t e = 0; e < vals.size(); ++e) {
    types.push_back(vals[e].getType());
    cons +=
        std::string(e ? "," : "") + (vals[e].getType().isF32() ? "=f" : "=r");
  }
  for (size_t e = 0; e < vals.size(); ++e)
    cons += "," + std::to_string(e);
  Type structT = LLVM::LLVMStructType::getLiteral(b.getContext(), types);
  auto op = LLVM::InlineAsmOp::create(
      b, loc, structT, vals, b.getStringAttr(""), b.getStringAttr(cons),
      b.getUnitAttr(), UnitAttr(), LLVM::TailCallKindAttr(),
      LLVM::AsmDialectAttr(), ArrayAttr());
  SmallVector<Value> out;
  for (size_t e = 0; e < vals.size(); ++e)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, op.getRes(), e));
  return out;
}

SmallVector<Value> FlashBuilder::scores(Value stage) {
  MLIRContext *ctx = b.getContext();
  SmallVector<Type> f32s(nS, f32);
  Type accT = LLVM::LLVMStructType::getLiteral(ctx, f32s);
  NVVM::WGMMATypes abT =
      p.elemType.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
  auto typeAttr = [&](NVVM::WGMMATypes t) {
    return NVVM::WGMMATypesAttr::get(ctx, t);
  };
  auto one = NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one);
  Value dK = arith::AddIOp::create(b, loc, descK, kUnitsOf(stage));
  Value acc = LLVM::ZeroOp::create(b, loc, accT);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (int64_t kk = 0; kk < p.headDim / 16; ++kk) {
    // k16 step kk: column block kk / 4, 32 bytes a step inside it. K given
    // transposed is N-major, as V: a k16 step is 16 rows (2048 bytes).
    int64_t inBlock = (kk % 4) * 32;
    Value da = addI64(descQ, ((kk / 4) * blockQ * kRowBytes + inBlock) / 16);
    Value db = addI64(
        dK, p.kTransposed ? kk * 16 * kRowBytes / 16
                          : ((kk / 4) * s.blockKV * kRowBytes + inBlock) / 16);
    acc = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, accT, acc, da, db,
        NVVM::MMAShapeAttr::get(ctx, 64, s.blockKV, 16), typeAttr(abT),
        typeAttr(abT), typeAttr(NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, kk ? NVVM::WGMMAScaleOut::one
                                             : NVVM::WGMMAScaleOut::zero),
        one, one, NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
        NVVM::MMALayoutAttr::get(ctx, p.kTransposed ? NVVM::MMALayout::row
                                                    : NVVM::MMALayout::col),
        NVVM::MMAIntOverflowAttr());
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  SmallVector<Value> out;
  for (int64_t e = 0; e < nS; ++e)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, acc, e));
  return out;
}

SmallVector<Value> FlashBuilder::accumulate(Value stage, ArrayRef<Value> pRegs,
                                            ArrayRef<Value> oAcc) {
  MLIRContext *ctx = b.getContext();
  SmallVector<Type> f32s(nO, f32);
  Type accT = LLVM::LLVMStructType::getLiteral(ctx, f32s);
  // wgmma with A in registers: d, {a0..a3}, b-desc, scale-d, scale-a,
  // scale-b, trans-b (1: V is N-major). The accumulators are tied in-outs.
  std::string ty = p.elemType.isBF16() ? "bf16" : "f16";
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n" +
                     std::to_string(p.dimV()) + "k16.f32." + ty + "." + ty +
                     " {";
  std::string cons;
  for (int64_t e = 0; e < nO; ++e) {
    text += (e ? ", $" : "$") + std::to_string(e);
    cons += (e ? ",=f" : "=f");
  }
  text += "}, {";
  for (int64_t r = 0; r < 4; ++r)
    text += (r ? ", $" : "$") + std::to_string(2 * nO + r);
  text += "}, $" + std::to_string(2 * nO + 4) + ", p, 1, 1, 1;\n}";
  for (int64_t e = 0; e < nO; ++e)
    cons += "," + std::to_string(e);
  cons += ",r,r,r,r,l";

  Value dV = arith::AddIOp::create(b, loc, descV, vUnitsOf(stage));
  SmallVector<Value> ins(oAcc.begin(), oAcc.end());
  ins.append(pRegs.begin(), pRegs.end());
  ins = fenceOperands(ins);
  SmallVector<Value> acc(ins.begin(), ins.begin() + nO);
  SmallVector<Value> aRegs(ins.begin() + nO, ins.end());
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (int64_t kk = 0; kk < s.blockKV / 16; ++kk) {
    SmallVector<Value> operands(acc);
    operands.append(aRegs.begin() + 4 * kk, aRegs.begin() + 4 * kk + 4);
    operands.push_back(addI64(dV, kk * 16 * kRowBytes / 16));
    auto op = LLVM::InlineAsmOp::create(
        b, loc, accT, operands, b.getStringAttr(text), b.getStringAttr(cons),
        b.getUnitAttr(), UnitAttr(), LLVM::TailCallKindAttr(),
        LLVM::AsmDialectAttr(), ArrayAttr());
    for (int64_t e = 0; e < nO; ++e)
      acc[e] = LLVM::ExtractValueOp::create(b, loc, op.getRes(), e);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return acc;
}

SmallVector<Value> FlashBuilder::applyMask(ArrayRef<Value> sv, Value k0) {
  Value kThread = keyThread(k0);
  // bases[c][h]: constraint c at the thread's row half h and first key;
  // element (n, x) adds b * (8n + x).
  SmallVector<std::array<Value, 2>> bases;
  for (const MaskConstraint &mc : constraints) {
    std::array<Value, 2> vh;
    for (int64_t h = 0; h < 2; ++h) {
      Value v = cstI32(mc.c);
      if (mc.a)
        v = add(v, mul(rowQ(h), mc.a));
      if (mc.b)
        v = add(v, mul(kThread, mc.b));
      vh[h] = v;
    }
    bases.push_back(vh);
  }
  Value negInf = cstF(-std::numeric_limits<double>::infinity());
  SmallVector<Value> out(sv.begin(), sv.end());
  for (int64_t e = 0; e < nS; ++e) {
    int64_t n = e / 4, h = (e / 2) % 2, x = e % 2;
    Value keep;
    for (size_t c = 0; c < constraints.size(); ++c) {
      int64_t off = constraints[c].b * (n * 8 + x);
      keep =
          land(keep, cmp(arith::CmpIPredicate::sge, bases[c][h], cstI32(-off)));
    }
    out[e] = select(keep, sv[e], negInf);
  }
  return out;
}

SmallVector<Value> FlashBuilder::softmax(SmallVector<Value> sv, Value k0,
                                         MutableArrayRef<Value> mRun,
                                         MutableArrayRef<Value> lRun,
                                         Value corr[2], Value stage,
                                         bool keptWhole) {
  // Scale and modify (the fast path keeps raw scores), then mask.
  if (!fast) {
    Value scale = cstF(p.scale);
    Value kThread = keyThread(k0);
    SmallVector<SmallVector<Value>> stagedVals = readStaged(stage);
    SmallVector<Value> args(captured);
    for (int64_t e = 0; e < nS; ++e) {
      int64_t n = e / 4, h = (e / 2) % 2, x = e % 2;
      Value sc = sv[e];
      if (p.scale != 1.0)
        sc = fmul(sc, scale);
      // A staged tensor is passed as its value at this score.
      for (auto [i, c] : llvm::enumerate(staged))
        args[c] = stagedVals[i][e];
      if (p.scoreMod)
        sc = p.scoreMod(b, loc, sc, batchI32, headI32, rowQ(h),
                        add(kThread, n * 8 + x), args);
      sv[e] = sc;
    }
  }
  if (p.keyKeepApply) {
    // The key mask, per key (both row halves share it): its dropped keys'
    // scores become -inf, raw or scaled alike; not built for a tile known
    // to keep every key.
    auto maskKeys = [&] {
      Value kThread = keyThread(k0);
      Value negInf = cstF(-std::numeric_limits<double>::infinity());
      SmallVector<Value> masked(sv);
      for (int64_t n = 0; n < nS / 4; ++n)
        for (int64_t x = 0; x < 2; ++x) {
          Value keep = p.keyKeep(b, loc, batchI32, headI32,
                                 add(kThread, n * 8 + x), captured);
          for (int64_t h = 0; h < 2; ++h) {
            int64_t e = n * 4 + h * 2 + x;
            masked[e] = select(keep, sv[e], negInf);
          }
        }
      return masked;
    };
    sv = keyAllKept ? yieldIf(
                          keyAllKept, SmallVector<Type>(nS, f32),
                          [&] { return sv; }, maskKeys)
                    : maskKeys();
  }
  // The overlapped loops apply a linear mask to every tile, with selects:
  // a branch there would sit inside the window where P V is in flight.
  // Keys taken last to first need it on the prologue's tile only.
  if (!keptWhole && s.overlap && !p.mask.empty())
    sv = applyMask(sv, k0);
  else if (!keptWhole && !constraints.empty())
    sv = yieldIf(
        tilePartial(constraints, k0, s.blockKV), SmallVector<Type>(nS, f32),
        [&] { return applyMask(sv, k0); }, [&] { return sv; });

  // Online softmax per row half h: max over the quad, correction, P.
  Value zeroF = cstF(0.0);
  Value c = cstF(p.scale * kLog2E);
  auto tree = [&](SmallVector<Value> v, bool isMax) {
    while (v.size() > 1) {
      SmallVector<Value> next;
      for (size_t e = 0; e + 1 < v.size(); e += 2)
        next.push_back(isMax ? fmax(v[e], v[e + 1]) : fadd(v[e], v[e + 1]));
      if (v.size() % 2)
        next.push_back(v.back());
      v = std::move(next);
    }
    return v[0];
  };
  SmallVector<Value> pv(nS);
  for (int64_t h = 0; h < 2; ++h) {
    SmallVector<int64_t> idx;
    SmallVector<Value> vals;
    for (int64_t e = 0; e < nS; ++e)
      if ((e / 2) % 2 == h) {
        idx.push_back(e);
        vals.push_back(sv[e]);
      }
    Value mx = tree(vals, true);
    mx = fmax(mx, shuffleXor(mx, 1));
    mx = fmax(mx, shuffleXor(mx, 2));
    Value mOld = mRun[h];
    Value mNew = fmax(mOld, mx);
    // A row with nothing kept so far has max -inf; 0 stands in for it so
    // that -inf - (-inf) never happens (every contribution is then 0).
    Value mUse = select(isNegInf(mNew), zeroF, mNew);
    SmallVector<Value> pr;
    if (fast) {
      Value negM = arith::NegFOp::create(b, loc, fmul(mUse, c));
      corr[h] = exp2(fma(mOld, c, negM));
      for (Value sc : vals)
        pr.push_back(exp2(fma(sc, c, negM)));
    } else {
      corr[h] = p.correction ? p.correction(b, loc, mOld, mUse)
                             : exp2(fmul(fsub(mOld, mUse), cstF(kLog2E)));
      // Subtract before scaling (see AttentionKernel.cpp: huge finite
      // scores would leave the rounding error of m * log2(e)).
      for (Value sc : vals)
        pr.push_back(p.contribution ? p.contribution(b, loc, sc, mUse)
                                    : exp2(fmul(fsub(sc, mUse), cstF(kLog2E))));
    }
    for (size_t e = 0; e < idx.size(); ++e)
      pv[idx[e]] = pr[e];
    // l stays a per-lane partial sum; the quad reduces it once, at the end.
    lRun[h] = fma(lRun[h], corr[h], tree(pr, false));
    mRun[h] = mNew;
  }

  // P as the A operand: element pairs (2r, 2r+1) into 32-bit registers.
  Type elemT = p.elemType;
  VectorType pairF = VectorType::get({2}, f32),
             pairT = VectorType::get({2}, elemT);
  SmallVector<Value> pRegs;
  for (int64_t r = 0; r < nS / 2; ++r) {
    Value f = vector::FromElementsOp::create(
        b, loc, pairF, ValueRange{pv[2 * r], pv[2 * r + 1]});
    Value t = arith::TruncFOp::create(b, loc, pairT, f);
    pRegs.push_back(LLVM::BitcastOp::create(b, loc, i32, t));
  }
  return pRegs;
}

SmallVector<Value> FlashBuilder::tileStep(Value stage, Value k0,
                                          ValueRange carried) {
  SmallVector<Value> oAcc(carried.begin(), carried.begin() + nO);
  SmallVector<Value> mRun(carried.begin() + nO, carried.begin() + nO + 2);
  SmallVector<Value> lRun(carried.begin() + nO + 2, carried.end());
  // Ping-pong: this warpgroup issues Q K^T on its turn.
  takeTurn();
  SmallVector<Value> sv = scores(stage);
  giveTurn();
  waitWgmma(0);
  Value corr[2];
  SmallVector<Value> pRegs =
      softmax(fenceOperands(sv), k0, mRun, lRun, corr, stage);
  rescale(oAcc, corr);
  SmallVector<Value> out = accumulate(stage, pRegs, oAcc);
  waitWgmma(0);
  out = fenceOperands(out);
  out.append(mRun);
  out.append(lRun);
  return out;
}

void FlashBuilder::epilogue(ValueRange carried) {
  bool needRow = p.lq % blockQ != 0;
  VectorType pairF = VectorType::get({2}, f32);
  VectorType pairT = VectorType::get({2}, p.elemType);
  Value rowBase = add(q0, add(mul(wg, 64), add(mul(div(wgTid, 32), 16), gq)));
  for (int64_t h = 0; h < 2; ++h) {
    Value l = carried[nO + 2 + h];
    l = fadd(l, shuffleXor(l, 1));
    l = fadd(l, shuffleXor(l, 2));
    Value inv = inverseSum(l);
    Value row = add(rowBase, h * 8);
    OpBuilder::InsertionGuard g(b);
    if (needRow) {
      auto ifOp = scf::IfOp::create(b, loc, ult(row, p.lq), false);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    }
    for (int64_t n = 0; n < p.dimV() / 8; ++n) {
      Value vals = vector::FromElementsOp::create(
          b, loc, pairF,
          ValueRange{fmul(carried[4 * n + 2 * h], inv),
                     fmul(carried[4 * n + 2 * h + 1], inv)});
      vals = arith::TruncFOp::create(b, loc, pairT, vals);
      vector::StoreOp::create(
          b, loc, vals, oArg,
          ValueRange{batch, head, row, add(mul(tq, 2), n * 8)}, false,
          llvm::Align(4));
    }
  }
}

void FlashBuilder::build(Value q, Value k, Value v, Value o) {
  qArg = q;
  kArg = k;
  vArg = v;
  oArg = o;
  MLIRContext *ctx = b.getContext();
  int64_t nQTiles = ceilDiv(p.lq, blockQ);
  int64_t nKTiles = ceilDiv(p.lk, s.blockKV);
  int64_t group = p.headsQ / p.headsKV;

  tid = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
  wg = div(tid, 128);
  wgTid = rem(tid, 128);
  Value lane = rem(tid, 32);
  gq = div(lane, 4);
  tq = band(lane, 3);
  // Query tiles run last to first: under a causal mask the late tiles carry
  // the most keys, and starting them first shortens the tail.
  Value blockX = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
  head = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::y);
  batch = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::z);
  batchI32 = toI32(batch);
  headI32 = toI32(head);
  keepBatch = batchI32;
  keepHead = headI32;
  kvHead = div(head, group);
  q0 = mul(sub(cst(nQTiles - 1), blockX), blockQ);
  qLast = add(arith::MinSIOp::create(b, loc, add(q0, blockQ), cst(p.lq)), -1);
  rowI32 = toI32(add(q0, add(mul(wg, 64), add(mul(div(wgTid, 32), 16), gq))));

  // The shared memory from its first 1024-byte boundary (the swizzle is a
  // function of the address bits), and the descriptors' constant fields:
  // 128-byte swizzle (mode 1) in bits 62-63, SBO in 32-45, LBO in 16-29,
  // the start address in 16-byte units in 0-13.
  Value raw = dynamicSharedMemory();
  Value rawAddr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, raw);
  Value pad =
      band(sub(cst(kAtomBytes), band(rawAddr, kAtomBytes - 1)), kAtomBytes - 1);
  Attribute space = cast<MemRefType>(raw.getType()).getMemorySpace();
  int64_t elems = (sharedBytesOf(p, s) - kAtomBytes) / 2;
  smem = memref::ViewOp::create(
      b, loc,
      MemRefType::get({elems}, p.elemType, MemRefLayoutAttrInterface(), space),
      raw, pad, ValueRange{});
  auto fields = [&](int64_t lbo, int64_t sbo) {
    return (int64_t(1) << 62) | ((sbo / 16) << 32) | ((lbo / 16) << 16);
  };
  Value start =
      toI64(arith::ShRUIOp::create(b, loc, add(rawAddr, pad), cst(4)));
  start = arith::AndIOp::create(b, loc, start, i64(0x3fff));
  Value kMajor =
      arith::OrIOp::create(b, loc, start, i64(fields(16, kAtomBytes)));
  descQ = arith::AddIOp::create(b, loc, kMajor,
                                toI64(mul(wg, 64 * kRowBytes / 16)));
  // K given transposed is N-major, as V (column blocks of 64 keys, each
  // headDim rows x 128 bytes): LBO headDim x 128, SBO between 8-row atoms.
  descK = p.kTransposed
              ? addI64(arith::OrIOp::create(
                           b, loc, start,
                           i64(fields(p.headDim * kRowBytes, kAtomBytes))),
                       qBytesOf(p, s) / 16)
              : addI64(kMajor, qBytesOf(p, s) / 16);
  descV =
      addI64(arith::OrIOp::create(
                 b, loc, start, i64(fields(s.blockKV * kRowBytes, kAtomBytes))),
             vFirstByteOf(p, s) / 16);

  if (s.producer) {
    barrierBase = add(add(rawAddr, pad), tileBytesOf(p, s));
    buildSpecialized(nKTiles);
    return;
  }
  copyTid = tid;
  copyThreads = threads;
  copyRows(qArg, head, q0, p.lq, blockQ, p.headDim, cst(0));
  token = commitGroup();

  std::tie(tStart, tEnd) = keyTileRange(nKTiles, s.blockKV);
  // With key skipping, the simple loop carries each tile's liveness from
  // its copy to its step, and reads the flags of the tile it copies next
  // an iteration ahead (their loads then never stall the loop).
  liveFlags.clear();
  SmallVector<Value> live;
  if (!s.overlap)
    liveFlags = keyFlagsPrologue(tStart, s.blockKV, s.stages, live);
  for (int64_t st = 0; st + 1 < s.stages; ++st)
    copyKVTile(add(tStart, st), cst(st), live.empty() ? Value() : live[st]);

  SmallVector<Value> init(nO, cstF(0.0));
  init.append(2, cstF(-std::numeric_limits<double>::infinity()));
  init.append(2, cstF(0.0));
  epilogue(s.overlap ? overlappedLoop(tStart, init) : simpleLoop(tStart, init));
}

void FlashBuilder::buildSpecialized(int64_t nKTiles) {
  // Thread 0 sets up the mbarriers: "full" completes when the producer's
  // 128 threads have landed and fenced their copies of a stage (with TMA:
  // when its one arrival and the copies' bytes are in), "empty" when every
  // computing thread is done reading it.
  int64_t consumers = 128 * s.warpgroups;
  whenTrue(cmp(arith::CmpIPredicate::eq, tid, cst(0)), [&] {
    for (int64_t st = 0; st < s.stages; ++st) {
      ptx(std::string("mbarrier.init.shared::cta.b64 [$0], ") +
              (s.tma ? "1;" : "128;"),
          "r", fullBarrier(cst(st)));
      ptx("mbarrier.init.shared::cta.b64 [$0], " + std::to_string(consumers) +
              ";",
          "r", emptyBarrier(cst(st)));
    }
    ptx("mbarrier.init.shared::cta.b64 [$0], 128;", "r", qBarrier());
  });
  mlir::gpu::BarrierOp::create(b, loc);

  std::tie(tStart, tEnd) = keyTileRange(nKTiles, s.blockKV);
  reverseKeys = s.overlap && reversedKeysSuffice(p, s);
  auto ifOp = scf::IfOp::create(
      b, loc, cmp(arith::CmpIPredicate::eq, wg, cst(s.warpgroups)),
      /*withElse=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  producerLoop(tStart);
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  // Two computing warpgroups take the registers the producer gives up
  // (the block starts with 384 x 168 registers, and an increase waits until
  // decreases freed enough: 2 x consumer + producer <= 2 x 168 + 168).
  if (s.warpgroups == 2)
    ptx("setmaxnreg.inc.sync.aligned.u32 " +
        std::to_string(consumerRegisters(s)) + ";");
  SmallVector<Value> init(nO, cstF(0.0));
  init.append(2, cstF(-std::numeric_limits<double>::infinity()));
  init.append(2, cstF(0.0));
  epilogue(s.overlap ? consumerOverlappedLoop(tStart, init)
                     : consumerLoop(tStart, init));
}

void FlashBuilder::producerLoop(Value tStart) {
  if (s.warpgroups == 2)
    ptx("setmaxnreg.dec.sync.aligned.u32 " +
        std::to_string(504 - 2 * consumerRegisters(s)) + ";");
  copyTid = sub(tid, cst(128 * s.warpgroups));
  copyThreads = 128;
  if (s.tma) {
    // Q by the warpgroup's cp.async (once a block); then one thread keeps
    // every stage filled by TMA, which signals "full" itself: no proxy
    // fence, no publication step, and the other 127 threads are done.
    copyRows(qArg, head, q0, p.lq, blockQ, p.headDim, cst(0));
    token = commitGroup();
    waitGroups(0);
    fenceProxyAsync();
    arrive(qBarrier());
    Value n = sub(tEnd, tStart);
    whenTrue(cmp(arith::CmpIPredicate::eq, copyTid, cst(0)), [&] {
      for (int64_t st = 0; st < s.stages; ++st)
        whenTrue(cmp(arith::CmpIPredicate::sgt, n, cst(st)),
                 [&] { tmaKVTile(tileAt(cst(st)), cst(st)); });
      auto loop = scf::ForOp::create(b, loc, cst(0), n, cst(1));
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(loop.getBody());
      Value i = loop.getInductionVar();
      Value refill = add(i, s.stages);
      whenTrue(cmp(arith::CmpIPredicate::slt, refill, n), [&] {
        waitParity(emptyBarrier(rem(i, s.stages)), roundParity(i));
        tmaKVTile(tileAt(refill), rem(i, s.stages));
      });
    });
    return;
  }
  // Groups: Q, then tiles 0..S-1 of the range (empty past its end).
  copyRows(qArg, head, q0, p.lq, blockQ, p.headDim, cst(0));
  token = commitGroup();
  for (int64_t st = 0; st < s.stages; ++st)
    copyKVTile(tileAt(cst(st)), cst(st));
  // A stage is published once this thread's copies landed and were fenced
  // for the async proxy (wgmma reads through it); the arrive releases them.
  waitGroups(s.stages);
  fenceProxyAsync();
  arrive(qBarrier());
  // The computing warpgroups hold `held` stages at once (the overlapped
  // loop reads tile i+1 while P V of tile i runs), so tile i+held is
  // published before the producer waits to refill the stage of tile i: a
  // later publication would wait for the consumers to release tile i, a
  // round trip on their critical path. Every phase of a "full" barrier is
  // one tile: an arrival past the last tile would complete a second phase
  // before a slow consumer waited for the first, and its parity wait would
  // then never end.
  int64_t held = s.overlap ? 2 : 1;
  Value n = sub(tEnd, tStart);
  for (int64_t t = 0; t < held; ++t) {
    waitGroups(s.stages - 1 - t);
    fenceProxyAsync();
    whenTrue(cmp(arith::CmpIPredicate::sgt, n, cst(t)),
             [&] { arrive(fullBarrier(cst(t))); });
  }
  auto loop = scf::ForOp::create(b, loc, cst(0), n, cst(1));
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  Value i = loop.getInductionVar();
  // Committed: tiles up to i+S-1; tile i+held landed with S-1-held newer
  // groups pending.
  waitGroups(s.stages - 1 - held);
  fenceProxyAsync();
  Value pub = add(i, held);
  whenTrue(cmp(arith::CmpIPredicate::slt, pub, n),
           [&] { arrive(fullBarrier(rem(pub, s.stages))); });
  // Refill the stage of tile i with tile i+S once every computing thread is
  // done with tile i.
  Value refill = add(i, s.stages);
  whenTrue(cmp(arith::CmpIPredicate::slt, refill, n),
           [&] { waitParity(emptyBarrier(rem(i, s.stages)), roundParity(i)); });
  copyKVTile(tileAt(refill), rem(i, s.stages));
}

SmallVector<Value> FlashBuilder::consumerLoop(Value tStart,
                                              ArrayRef<Value> init) {
  waitParity(qBarrier(), toI32(cst(0)));
  startTurns();
  auto loop =
      scf::ForOp::create(b, loc, cst(0), sub(tEnd, tStart), cst(1), init);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value i = loop.getInductionVar();
    ValueRange carried = loop.getRegionIterArgs();
    Value stage = rem(i, s.stages);
    waitParity(fullBarrier(stage), roundParity(i));
    Value k0 = mul(tileAt(i), s.blockKV);
    SmallVector<Value> out = stepUnlessMasked(
        k0, s.blockKV, carried, [&] { return tileStep(stage, k0, carried); });
    // tileStep waited for its wgmmas: the stage may be refilled.
    arrive(emptyBarrier(stage));
    scf::YieldOp::create(b, loc, out);
  }
  endTurns();
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> FlashBuilder::consumerOverlappedLoop(Value tStart,
                                                        ArrayRef<Value> init) {
  // As overlappedLoop, with the stages handed over by mbarriers: iteration
  // i waits for tile i+1, issues S_{i+1} = Q K_{i+1}^T, rescales O by the
  // correction of tile i (while S_{i+1} runs), issues O += P_i V_i, runs
  // the softmax of tile i+1 once S_{i+1} is done, and releases the stage of
  // tile i once P_i V_i is. Tiles inside the bounds that the mask empties
  // are computed, not skipped (their P is 0; the bounds are exact for the
  // masks this schedule is chosen for, and key masks are refused).
  waitParity(qBarrier(), toI32(cst(0)));
  startTurns();
  SmallVector<Type> types;
  for (Value v : init)
    types.push_back(v.getType());
  Value n = sub(tEnd, tStart);
  auto any = scf::IfOp::create(b, loc, types,
                               cmp(arith::CmpIPredicate::sgt, n, cst(0)),
                               /*withElse=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&any.getElseRegion().front());
    scf::YieldOp::create(b, loc, init);
    b.setInsertionPointToStart(&any.getThenRegion().front());

    // Tile 0: S and P (O is still 0: its correction is not needed).
    waitParity(fullBarrier(cst(0)), toI32(cst(0)));
    SmallVector<Value> mRun(init.begin() + nO, init.begin() + nO + 2);
    SmallVector<Value> lRun(init.begin() + nO + 2, init.end());
    Value corr[2];
    takeTurn();
    SmallVector<Value> sv = scores(cst(0));
    giveTurn();
    waitWgmma(0);
    SmallVector<Value> pRegs = softmax(
        fenceOperands(sv), mul(tileAt(cst(0)), s.blockKV), mRun, lRun, corr,
        cst(0));
    SmallVector<Value> carriedInit(init.begin(), init.begin() + nO);
    carriedInit.append(mRun);
    carriedInit.append(lRun);
    carriedInit.append(pRegs);
    carriedInit.append({cstF(1.0), cstF(1.0)});
    auto loop =
        scf::ForOp::create(b, loc, cst(0), add(n, -1), cst(1), carriedInit);
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(loop.getBody());
      Value i = loop.getInductionVar();
      ValueRange c = loop.getRegionIterArgs();
      SmallVector<Value> oAcc(c.begin(), c.begin() + nO);
      SmallVector<Value> m(c.begin() + nO, c.begin() + nO + 2);
      SmallVector<Value> l(c.begin() + nO + 2, c.begin() + nO + 4);
      SmallVector<Value> pi(c.drop_front(nO + 4).drop_back(2));
      Value corrI[2] = {c[c.size() - 2], c[c.size() - 1]};
      Value stage = rem(i, s.stages);
      Value iNext = add(i, 1);
      Value stageNext = rem(iNext, s.stages);
      waitParity(fullBarrier(stageNext), roundParity(iNext));
      takeTurn();
      SmallVector<Value> svNext = scores(stageNext);
      rescale(oAcc, corrI);
      SmallVector<Value> oNext = accumulate(stage, pi, oAcc);
      giveTurn();
      waitWgmma(1);
      Value corrNext[2];
      SmallVector<Value> pNext =
          softmax(fenceOperands(svNext), mul(tileAt(iNext), s.blockKV), m, l,
                  corrNext, stageNext, /*keptWhole=*/reverseKeys);
      waitWgmma(0);
      oNext = fenceOperands(oNext);
      arrive(emptyBarrier(stage));
      SmallVector<Value> out(oNext);
      out.append(m);
      out.append(l);
      out.append(pNext);
      out.append({corrNext[0], corrNext[1]});
      scf::YieldOp::create(b, loc, out);
    }
    // Tail: P V of the last tile.
    ValueRange r = loop.getResults();
    SmallVector<Value> oAcc(r.begin(), r.begin() + nO);
    SmallVector<Value> pLast(r.drop_front(nO + 4).drop_back(2));
    Value corrLast[2] = {r[r.size() - 2], r[r.size() - 1]};
    Value lastStage = rem(add(n, -1), s.stages);
    rescale(oAcc, corrLast);
    SmallVector<Value> out = accumulate(lastStage, pLast, oAcc);
    waitWgmma(0);
    out = fenceOperands(out);
    arrive(emptyBarrier(lastStage));
    out.append(r.begin() + nO, r.begin() + nO + 4);
    scf::YieldOp::create(b, loc, out);
  }
  endTurns();
  return SmallVector<Value>(any.getResults());
}

void FlashBuilder::publishTiles(int64_t pending) {
  // cp.async writes through the generic proxy, wgmma reads through the
  // async one: each thread fences its landed copies before the barrier.
  waitGroups(pending);
  fenceProxyAsync();
  mlir::gpu::BarrierOp::create(b, loc);
}

SmallVector<Value> FlashBuilder::simpleLoop(Value tStart,
                                            ArrayRef<Value> init) {
  // Carried after the accumulators (key skipping): keyFlagsPrologue's.
  SmallVector<Value> all(init);
  llvm::append_range(all, liveFlags);
  auto loop = scf::ForOp::create(b, loc, tStart, tEnd, cst(1), all);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(loop.getBody());
  Value j = loop.getInductionVar();
  ValueRange carried = loop.getRegionIterArgs().take_front(init.size());
  ValueRange flags = loop.getRegionIterArgs().drop_front(init.size());
  Value stage = rem(sub(j, tStart), s.stages);
  Value next = add(j, s.stages - 1);
  // Tile j has landed once at most S-2 newer groups are pending.
  publishTiles(s.stages - 2);
  KeyFlagStep kf = keyFlagsStep(flags, next, s.blockKV, s.stages);
  copyKVTile(next, rem(add(stage, s.stages - 1), s.stages), kf.liveNext);
  Value k0 = mul(j, s.blockKV);
  keyAllKept = kf.allNow;
  SmallVector<Value> out = stepUnlessMasked(
      k0, s.blockKV, carried, [&] { return tileStep(stage, k0, carried); },
      kf.liveNow);
  keyAllKept = Value();
  llvm::append_range(out, kf.yield);
  scf::YieldOp::create(b, loc, out);
  return SmallVector<Value>(loop.getResults().take_front(init.size()));
}

SmallVector<Value> FlashBuilder::overlappedLoop(Value tStart,
                                                ArrayRef<Value> init) {
  // Iteration j (tiles tStart..tEnd-2) issues S_{j+1} = Q K_{j+1}^T and
  // O += P_j V_j as two wgmma groups, waits for the first (wait_group 1),
  // runs the softmax of tile j+1 while P_j V_j is in flight, then waits for
  // it and rescales O. The prologue computes P of tile tStart; the tail
  // adds P V of tile tEnd-1. Fully masked tiles inside the bounds are not
  // skipped here (they contribute 0). Tile j+1 must have landed at
  // iteration j, while the stage of tile j-1 takes tile j+S-1: S >= 3.
  SmallVector<Type> types;
  for (Value v : init)
    types.push_back(v.getType());
  auto any = scf::IfOp::create(b, loc, types,
                               cmp(arith::CmpIPredicate::slt, tStart, tEnd),
                               /*withElse=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&any.getElseRegion().front());
  scf::YieldOp::create(b, loc, init);
  b.setInsertionPointToStart(&any.getThenRegion().front());

  // Prologue: Q and tile tStart landed (S-2 newer groups pending).
  publishTiles(s.stages - 2);
  SmallVector<Value> mRun(init.begin() + nO, init.begin() + nO + 2);
  SmallVector<Value> lRun(init.begin() + nO + 2, init.end());
  Value corr[2];
  SmallVector<Value> sv = scores(cst(0));
  waitWgmma(0);
  SmallVector<Value> pRegs = softmax(fenceOperands(sv), mul(tStart, s.blockKV),
                                     mRun, lRun, corr, cst(0));

  SmallVector<Value> carriedInit(init.begin(), init.begin() + nO);
  carriedInit.append(mRun);
  carriedInit.append(lRun);
  carriedInit.append(pRegs);
  auto loop =
      scf::ForOp::create(b, loc, tStart, add(tEnd, -1), cst(1), carriedInit);
  {
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    ValueRange c = loop.getRegionIterArgs();
    SmallVector<Value> oAcc(c.begin(), c.begin() + nO);
    SmallVector<Value> m(c.begin() + nO, c.begin() + nO + 2);
    SmallVector<Value> l(c.begin() + nO + 2, c.begin() + nO + 4);
    SmallVector<Value> pj(c.begin() + nO + 4, c.end());
    Value stage = rem(sub(j, tStart), s.stages);
    Value stageNext = rem(add(stage, 1), s.stages);
    // Committed so far: tiles up to j+S-2; tile j+1 needs S-3 pending.
    publishTiles(s.stages - 3);
    // Every warpgroup has finished P V of tile j-1: its stage is free.
    copyKVTile(add(j, s.stages - 1), rem(add(stage, s.stages - 1), s.stages));
    SmallVector<Value> svNext = scores(stageNext);
    SmallVector<Value> oNext = accumulate(stage, pj, oAcc);
    waitWgmma(1);
    Value corrNext[2];
    SmallVector<Value> pNext =
        softmax(fenceOperands(svNext), mul(add(j, 1), s.blockKV), m, l,
                corrNext, stageNext);
    waitWgmma(0);
    oNext = fenceOperands(oNext);
    rescale(oNext, corrNext);
    SmallVector<Value> out(oNext);
    out.append(m);
    out.append(l);
    out.append(pNext);
    scf::YieldOp::create(b, loc, out);
  }
  // Tail: P V of tile tEnd-1.
  ValueRange r = loop.getResults();
  SmallVector<Value> oAcc(r.begin(), r.begin() + nO);
  SmallVector<Value> pLast(r.begin() + nO + 4, r.end());
  Value lastStage = rem(sub(add(tEnd, -1), tStart), s.stages);
  SmallVector<Value> out = accumulate(lastStage, pLast, oAcc);
  waitWgmma(0);
  out = fenceOperands(out);
  out.append(r.begin() + nO, r.begin() + nO + 4);
  scf::YieldOp::create(b, loc, out);
  return SmallVector<Value>(any.getResults());
}

} // namespace

/// Score code (ops per score) that keeps the overlapped loop out.
constexpr int64_t kHeavyScoreOps = 12;

/// Whether `s`'s shared memory fits an sm_90a block (227 KiB).
static bool sharedFitsSm90a(const AttentionProblem &p,
                            const WgmmaAttentionSchedule &s) {
  return sharedBytesOf(p, s) <= 227 * 1024;
}

/// `s` with 64-key tiles where its 128-key ones do not fit the shared
/// memory (Q and K of head size 192 or 256).
static WgmmaAttentionSchedule fitKeys(const AttentionProblem &p,
                                      WgmmaAttentionSchedule s) {
  if (!sharedFitsSm90a(p, s))
    s.blockKV = 64;
  return s;
}

WgmmaAttentionSchedule chooseWgmmaAttentionSchedule(const AttentionProblem &p) {
  // Two warpgroups (128 query rows) and 128-key tiles: S (64) and O (64 at
  // D 128) accumulators and P (32 registers) fit one thread's registers.
  // Measured on the H200 (docs/performance.md, sessions 15 and 16), bf16
  // D 128 sequence 8192: the producer warpgroup with the overlapped loop
  // and 3 stages runs 1.08x the producer's simple loop on unmasked
  // attention. On causal, with ping-pong and the keys last to first (the
  // mask on the first tile only), 1.10x at b1 and 1.09x at b8 (session
  // 18; masking every tile with selects, 1.02-1.04x); ALiBi causal the
  // same way 1.03x. With a mask bounding keys from below too (a sliding
  // window), where every tile is masked, 0.79-0.81x, not yet explained, so
  // it keeps the simple loop, as do score changes on masks the reversal
  // does not cover. (Peeling the whole tiles' iterations into a loop of
  // their own made ptxas serialise the wgmmas, C7513, even with identical
  // loop bodies: session 16.)
  // Key masks keep the kernel without a producer (its skipped tiles are
  // measured there), and a captured bias plane keeps the simple loop with
  // 2 stages (the room to stage it through shared memory). So does score
  // code of kHeavyScoreOps ops or more: beside the overlapped loop's two
  // live score tiles it spilled (ptxas, 168 registers: 4-412 bytes in 5 of
  // 43 random D64/D128 forms with 12 to 22 ops; none with the simple loop
  // or with 64-key tiles).
  // Head sizes past 128 take 64-key tiles where 128-key ones leave no room
  // for the stages (fitKeys: head size 256).
  WgmmaAttentionSchedule s = fitKeys(p, {2, 128, p.headDim <= 64 ? 3 : 2});
  // Without a producer every thread copies, and LLVM hoists the addresses
  // of its unrolled copies out of the key loop: Q and K over 192 (20 chunks
  // a thread a tile) took 255 registers and spilled 8 bytes (ptxas); 64-key
  // tiles over 3 stages take 205.
  if (p.keyKeep)
    return p.headDim > 128 ? WgmmaAttentionSchedule{2, 64, 3} : s;
  WgmmaAttentionSchedule pd = s;
  pd.producer = true;
  // The producer copies K and V (and a staged bias plane) by TMA: 1.04-1.17x
  // its cp.async warpgroup (session 18), whose 128 threads' copies took 16%
  // of the instructions the multiprocessors issued. K given transposed too:
  // its cp.async copies ran causal attention at 0.95x cuDNN where K
  // untransposed ran 1.08x (H100, session 56).
  auto withTma = [&](WgmmaAttentionSchedule r) {
    r.tma = true;
    return r;
  };
  // A captured [lq, lk] plane (a bias) is read per score: staged through
  // shared memory, or from global memory where its rows are not 16-byte
  // aligned, whose addresses the overlapped loop has no registers for.
  bool plane = llvm::any_of(llvm::seq<size_t>(0, p.captured.size()),
                            [&](size_t i) { return capturedIsPlane(p, i); });
  bool fastScores = !p.scoreMod && !p.correction && !p.contribution;
  bool upperBoundsOnly =
      llvm::all_of(p.mask, [](const MaskConstraint &mc) { return mc.b < 0; });
  bool unmasked = p.mask.empty();
  WgmmaAttentionSchedule op = pd;
  op.overlap = true;
  op.stages = 3;
  op.pingpong = !unmasked;
  // 128-key tiles come first: for MLA (Q.K^T over 192), where 3 stages of
  // them overflow, the producer's simple loop over 2 stages of 128 keys ran
  // 1.05x (causal) and 1.04x (unmasked) the overlapped loop over 64-key
  // tiles (H100, session 55). The overlapped loop takes 64-key tiles only
  // where 128-key ones fit neither loop (head size 256).
  if (pd.blockKV == 64)
    op = fitKeys(p, op);
  if (!sharedFitsSm90a(p, op) || plane || p.scoreModOps >= kHeavyScoreOps ||
      !(unmasked ||
        (upperBoundsOnly && (fastScores || reversedKeysSuffice(p, op))))) {
    // A plane read per score from global memory spilled beside MLA's
    // 128-key tiles (ptxas: 24 bytes); 64-key ones leave it the room to be
    // staged.
    WgmmaAttentionSchedule narrow = pd;
    narrow.blockKV = 64;
    if (plane &&
        stagedCaptured(p, narrow).size() > stagedCaptured(p, pd).size())
      pd = narrow;
    return withTma(pd);
  }
  return withTma(op);
}

/// wgmmaAttentionSupports without the target: what the builder needs.
static bool wgmmaAttentionShapeValid(const AttentionProblem &p,
                                     const WgmmaAttentionSchedule &s,
                                     std::string &why) {
  auto fail = [&](const std::string &msg) {
    why = "wgmma attention: " + msg;
    return false;
  };
  if (!attentionKernelSupports(p, why))
    return false;
  if (!p.elemType.isBF16() && !p.elemType.isF16())
    return fail("Q, K, V must be bf16 or f16 (f32 takes the mma.sync "
                "template, as 3xTF32)");
  // Q and K are read from shared memory in 64-column blocks, so their head
  // size only adds k-steps; V's sets O's accumulators (dimV / 2 registers a
  // thread beside S's and P's): 256 would spill.
  if (p.headDim % 64 || p.headDim > 256)
    return fail("head dim must be 64, 128, 192 or 256");
  if (p.dimV() != 64 && p.dimV() != 128)
    return fail("V's head size must be 64 or 128");
  if (s.warpgroups < 1 || s.warpgroups > 3)
    return fail("1 to 3 warpgroups per block");
  if (s.blockKV != 64 && s.blockKV != 128)
    return fail("blockKV must be 64 or 128");
  if (s.stages < 2 || s.stages > 6)
    return fail("stages must be in [2, 6]");
  if (s.overlap && s.stages < 3)
    return fail("overlap needs at least 3 stages");
  if (s.overlap && p.keyKeep)
    return fail("the overlapped loop does not skip key tiles (key mask)");
  if (s.producer && s.warpgroups > 2)
    return fail("a producer serves at most 2 warpgroups (registers)");
  if (s.pingpong && (!s.producer || s.warpgroups != 2))
    return fail("ping-pong needs a producer and 2 warpgroups");
  if (s.tma && !s.producer)
    return fail("tma copies through the producer warpgroup");
  return true;
}

bool wgmmaAttentionSupports(const AttentionProblem &p,
                            const WgmmaAttentionSchedule &s,
                            const ::tcc::TargetDesc &target, std::string &why) {
  std::string limit;
  if (!target.wgmma)
    limit = "needs wgmma (sm_90a), not on " + target.name;
  else if (s.tma && !target.tma)
    limit = "tma needs the tensor memory accelerator, not on " + target.name;
  else if (!wgmmaAttentionShapeValid(p, s, why))
    return false;
  if (limit.empty() && sharedFits(sharedBytesOf(p, s), target, limit))
    return true;
  why = "wgmma attention: " + limit;
  return false;
}

/// The tensor map of staged tensor `captured` (rank 2 to 4, identity
/// layout, [.., lq, lk]) as the producer's TMA copies read it: its dims
/// innermost first, boxes of 64 keys (one 128-byte swizzle row) by the
/// block's query rows.
static TensorMapSpec planeTensorMap(const AttentionProblem &p,
                                    const WgmmaAttentionSchedule &s,
                                    int64_t captured) {
  auto mt = cast<MemRefType>(p.captured[captured]);
  TensorMapSpec m;
  m.operand = 4 + captured;
  m.dtype = p.elemType.isBF16() ? "bf16" : "f16";
  int64_t stride = 2;
  for (int64_t d = mt.getRank() - 1; d >= 0; --d) {
    if (d != mt.getRank() - 1)
      m.strides.push_back(stride);
    m.dims.push_back(mt.getDimSize(d));
    m.box.push_back(d == mt.getRank() - 1   ? 64
                    : d == mt.getRank() - 2 ? 64 * s.warpgroups
                                            : 1);
    stride *= mt.getDimSize(d);
  }
  m.swizzle = "128B";
  return m;
}

/// The tensor map of K or V ([batch, headsKV, lk, head size] with the
/// problem's strides) as the producer's TMA copies read it: dims (head size,
/// lk, headsKV, batch), boxes of 64 columns (one 128-byte swizzle row) by
/// blockKV keys; K given transposed, dims (lk, head size, ..), boxes of 64
/// keys by the head size. An axis of size 1 takes the tensor's packed extent as
/// its stride (its own is ignored, and may not be one TMA accepts).
static TensorMapSpec kvTensorMap(const AttentionProblem &p,
                                 const WgmmaAttentionSchedule &s,
                                 AttentionOperand which) {
  SmallVector<int64_t, 4> st = attentionOperandStrides(p, which);
  bool isK = which == AttentionOperand::K;
  int64_t dim = isK ? p.headDim : p.dimV();
  // K given transposed ([batch, headsKV, head size, lk]): dims (lk, head
  // size, ...), boxes of 64 keys by the whole head size.
  bool kT = isK && p.kTransposed;
  int64_t dims[4] = {kT ? p.lk : dim, kT ? dim : p.lk, p.headsKV, p.batch};
  int64_t packed = p.batch * p.headsKV * p.lk * dim * 2;
  TensorMapSpec m;
  m.operand = isK ? 1 : 2;
  m.dtype = p.elemType.isBF16() ? "bf16" : "f16";
  m.dims.assign(dims, dims + 4);
  // st is [batch, heads, rows, 1]: rows, heads, batch for dims 1..3.
  for (int64_t axis : {2, 1, 0}) {
    int64_t extent = dims[3 - axis];
    m.strides.push_back(extent == 1 ? llvm::alignTo(packed, 16) : st[axis] * 2);
  }
  m.box = {64, kT ? dim : s.blockKV, 1, 1};
  m.swizzle = "128B";
  m.offset = attentionOperandOffset(p, which) * 2;
  return m;
}

FailureOr<KernelLaunch>
buildWgmmaAttentionKernel(OpBuilder &b, mlir::gpu::GPUModuleOp module,
                          StringRef name, const AttentionProblem &p,
                          const WgmmaAttentionSchedule &s) {
  std::string why;
  if (!wgmmaAttentionShapeValid(p, s, why))
    return module.emitError(why), failure();
  loadTemplateDialects(b.getContext());
  OpBuilder::InsertionGuard g(b);
  int64_t threads = 128 * (s.warpgroups + (s.producer ? 1 : 0));
  SmallVector<Type> args{attentionOperandType(p, AttentionOperand::Q),
                         attentionOperandType(p, AttentionOperand::K),
                         attentionOperandType(p, AttentionOperand::V),
                         attentionOperandType(p, AttentionOperand::O)};
  llvm::append_range(args, p.captured);
  // With TMA, the tensor maps after the buffers (passed by value:
  // passTensorMapsByValue, after the lowering to the LLVM dialect): K's,
  // V's, then the staged tensors'.
  SmallVector<int64_t> staged = stagedCaptured(p, s);
  int64_t nMaps = s.tma ? 2 + int64_t(staged.size()) : 0;
  args.append(nMaps, LLVM::LLVMPointerType::get(b.getContext()));
  auto func = createKernelFunc(b, module, name, args, threads);
  int64_t nArgs = int64_t(args.size());
  if (s.tma)
    func->setAttr(kTensorMapsAttr,
                  b.getDenseI64ArrayAttr(llvm::to_vector(
                      llvm::seq<int64_t>(nArgs - nMaps, nArgs))));
  // setmaxnreg needs the register count at entry known to ptxas: one block
  // per multiprocessor (65536 / 384 = 168 each, then 216 and 64).
  if (s.producer)
    func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(1));
  Block &entry = func.getBody().front();
  Location loc = module.getLoc();
  FlashBuilder fb(b, loc, p, s);
  fb.setCaptured(
      entry.getArguments().drop_front(4).take_front(p.captured.size()));
  if (s.tma)
    fb.setTensorMaps(entry.getArgument(nArgs - nMaps),
                     entry.getArgument(nArgs - nMaps + 1),
                     entry.getArguments().take_back(nMaps - 2));
  fb.build(entry.getArgument(0), entry.getArgument(1), entry.getArgument(2),
           entry.getArgument(3));
  mlir::gpu::ReturnOp::create(b, loc);
  KernelLaunch launch;
  launch.grid = {ceilDiv(p.lq, 64 * s.warpgroups), p.headsQ, p.batch};
  launch.block = {threads, 1, 1};
  launch.sharedBytes = sharedBytesOf(p, s);
  if (s.tma) {
    for (AttentionOperand which : {AttentionOperand::K, AttentionOperand::V})
      launch.tensorMaps.push_back(kvTensorMap(p, s, which));
    for (int64_t c : staged)
      launch.tensorMaps.push_back(planeTensorMap(p, s, c));
  }
  return launch;
}

} // namespace tcc::gpu
