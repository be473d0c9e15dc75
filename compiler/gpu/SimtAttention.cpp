//===- SimtAttention.cpp - f32 attention on CUDA cores --------------------===//
//
// The kernel, for a block owning query tile qt of head h in batch z:
//
//   copy the Q tile into shared memory
//   [tStart, tEnd) = the key tiles the mask can keep for these rows
//   for j in [tStart, tEnd):
//     if the mask keeps nothing of the tile: skip it (checked only where the
//       bounds can be loose)
//     barrier; copy K_j (splitKV: cp.async, unless the previous step's
//       prefetch holds it) [and V_j, cp.async]; [wait for all but V_j];
//       barrier
//     S = Q K_j^T, an R x K tile a thread; scale, scoreMod; if the mask is
//       partial on the tile: masked scores become -inf
//     online softmax: new row max (shuffles among the row's threads),
//       correction of l, P = contribution(S, max) into shared memory
//       (transposed)
//     [wait for V_j]; barrier; [splitKV: cp.async K_{j+1} if j + 1 < tEnd]
//     [copy V_j into K's buffer; barrier]; T = P V_j;
//       O = O * correction + T
//   O / l (row sums reduced over the row's threads once, here), stored.
//
// The split-K (decode) form runs the same loop over one chunk of key tiles
// a block and stores O unnormalised with the rows' m and l; the combine
// kernel, a thread per 16-byte chunk of an output row, takes the largest m
// M of the row's chunks and sums O_c and l_c corrected to M (the tiles'
// correction, from each chunk's m to M) before dividing.
//
// The register tile is R x K (s.tileRows x s.tileKeys, 4 or 8 each).
// Thread t is (row group t / kT, key thread t % kT) with kT = blockKV / K:
// it owns query rows R * group + {0..R-1} (of S and of O) and keys
// kt + kT * {0..K-1} of each tile, and O's 16-byte column chunks
// kt + kT * c. The kT threads of a row group are adjacent lanes of one warp,
// so the softmax's row reductions are xor shuffles.
//
// Shared rows (Q, K, V) are headDim floats padded to an odd number of
// 16-byte chunks: the 8 lanes of a 16-byte access phase read 8 different
// K rows (keys kt + kT * j) at one column, which then fall on 8 distinct
// bank groups; Q and P reads are broadcasts (one row a phase), V reads are
// consecutive chunks of one row. P is stored [key][row] (rows padded
// likewise), so each 4 of a thread's rows of a key are one 16-byte store
// and one 16-byte read. A larger tile feeds more FMAs from each shared
// read (docs/architecture.md has the counts). Copies from global memory are
// 16-byte cp.async, consecutive threads on consecutive chunks of a row;
// without cp.async (AMD) they go through registers, where 16-bit elements
// are widened to f32 (shared memory holds f32), and K given transposed
// comes in chunks of 4 keys of one d, scattered into K's rows. The same
// barriers order them either way.
//
// The mask is handled as in AttentionKernel.cpp: constraints evaluated at
// the tile's corners classify it as fully masked (outside the loop bounds,
// or skipped), fully kept (no mask code) or partial (masked per element);
// keys past lk are one more constraint. Rows past lq and keys past lk read
// zeros (V's must be finite: their P is 0).
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/SimtAttention.h"
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
#include <limits>
#include <tuple>

using namespace mlir;

namespace tcc::gpu {
namespace {

/// The floats of a shared Q, K or V row: headDim padded to an odd number
/// of 16-byte chunks.
int64_t rowStride(int64_t headDim) {
  int64_t chunks = headDim / 4 + 1;
  if (chunks % 2 == 0)
    ++chunks;
  return chunks * 4;
}

/// The head size the kernel computes on: headDim (Q K^T's) or V's rounded
/// up to whole 16-byte chunks of f32 (4 elements), the padding zero in
/// shared memory and never stored.
int64_t paddedHeadDim(const AttentionProblem &p) {
  return llvm::alignTo(p.headDim, 4);
}
int64_t paddedValueDim(const AttentionProblem &p) {
  return llvm::alignTo(p.dimV(), 4);
}
/// The floats of a shared row: Q, K and V rows share one stride (V takes
/// K's buffer where they are not apart), the wider head's.
int64_t sharedRowStride(const AttentionProblem &p) {
  return rowStride(std::max(paddedHeadDim(p), paddedValueDim(p)));
}

/// Whether Q, K, V and O keep rows that start 16 bytes apart (and head
/// sizes of whole chunks): then their rows travel as 16-byte vectors (or
/// cp.async copies); else element by element.
bool rowsAligned(const AttentionProblem &p) {
  std::string why;
  return p.headDim % 4 == 0 && p.dimV() % 4 == 0 &&
         attentionStridesValid(p, why);
}

int64_t keyThreads(const SimtAttentionSchedule &s) {
  return s.blockKV / s.tileKeys;
}
int64_t threadsOf(const SimtAttentionSchedule &s) {
  return s.blockQ / s.tileRows * keyThreads(s);
}
/// The floats of a shared row of P, stored transposed ([key][query row]):
/// blockQ padded to an odd number of 16-byte chunks, as rowStride.
int64_t pStride(const SimtAttentionSchedule &s) { return rowStride(s.blockQ); }

int64_t sharedBytesOf(const AttentionProblem &p,
                      const SimtAttentionSchedule &s) {
  int64_t st = sharedRowStride(p);
  return 4 * (s.blockQ * st + (s.splitKV ? 2 : 1) * s.blockKV * st +
              s.blockKV * pStride(s));
}

/// Builds the kernel body; all helpers emit at the builder's insertion point.
class SimtBuilder : AttentionArith {
public:
  SimtBuilder(OpBuilder &b, Location loc, const AttentionProblem &p,
              const SimtAttentionSchedule &s, const ::tcc::TargetDesc &target)
      : AttentionArith(b, loc, p), s(s), kRows(s.tileRows), kKeys(s.tileKeys),
        threads(threadsOf(s)), kT(keyThreads(s)), stride(sharedRowStride(p)),
        cpr(paddedHeadDim(p) / 4), cprV(paddedValueDim(p) / 4),
        nC(ceilDiv(cprV, keyThreads(s))), aligned(rowsAligned(p)),
        // 16-bit inputs are widened to f32 on the way through registers
        // (cp.async would copy their bytes as they are), and rows that are
        // not 16-byte aligned come element by element.
        asyncCopy(target.cpAsync && p.elemType.isF32() && aligned),
        scoreChunks(simtScoreBlock(s, target) / 4) {
    // A block of 32 threads on a wave of 64 (AMD, head dim 256) is one wave
    // with half its lanes: its key flags are read a lane per key of those.
    waveSize = std::min<int64_t>(target.warpSize, threads);
    amdgcn = target.isAmd();
    // Softmax's own algebra with no score modification: the row max is kept
    // over raw Q K^T and the scale folds into ex2's factor log2(e).
    fast = !p.scoreMod && !p.correction && !p.contribution && p.scale > 0;
    constraints.assign(p.mask.begin(), p.mask.end());
    if (p.lk % s.blockKV)
      constraints.push_back({0, -1, p.lk - 1});
    v4 = VectorType::get({4}, f32);
    // Q, K, V and O in memory: 4 elements of the problem's dtype a chunk
    // (shared memory holds f32 whatever the dtype).
    g4 = VectorType::get({4}, p.elemType);
    int64_t elemBytes = p.elemType.getIntOrFloatBitWidth() / 8;
    globalAlign = llvm::Align(aligned ? 4 * elemBytes : elemBytes);
  }

  using AttentionArith::setCaptured;

  /// The kernel; `o` is O, or with s.chunkTiles the split-K partial
  /// kernel's O scratch, `stats` its (m, l) scratch.
  void build(Value q, Value k, Value v, Value o, Value stats = Value());
  /// The split-K combine kernel of `nChunks` chunks, in blocks of
  /// `blockThreads`: `o` from the partial results.
  void buildCombine(Value partO, Value stats, Value o, int64_t nChunks,
                    int64_t blockThreads);

private:
  Value extract(Value v, int64_t i) {
    return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i});
  }
  Value load4(Value mem, Value off) {
    return vector::LoadOp::create(b, loc, v4, mem, ValueRange{off}, false,
                                  llvm::Align(16));
  }
  Value zero4() {
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(v4, 0.0f));
  }
  /// Elements col..col+3 of a row of Q, K, V (`mem` at `at`, col last; a
  /// head size of `dims`), widened to f32: one vector load (of 16 bytes
  /// where rows are aligned). With a head size that is not a multiple of 4,
  /// the row's last chunk reads its elements one by one, those past `dims`
  /// as the row's last (inside the tensor) and zeroed.
  Value loadRow4(Value mem, SmallVector<Value, 5> at, Value col, int64_t dims);
  /// Elements col..col+3 along the last index of `mem` at `at`, one by
  /// one, widened to f32: those at `limit` or past it read element
  /// limit - 1 (inside the tensor) and are zeroed.
  Value loadEach4(Value mem, SmallVector<Value, 5> at, Value col,
                  int64_t limit);
  /// Stores the 4 elements `val` (the dtype's) at col..col+3 of a row of O,
  /// those past V's head size left out.
  void storeRow4(Value val, Value mem, SmallVector<Value, 5> at, Value col);
  /// 4 floats of O in the problem's dtype (rounded to nearest even).
  Value narrowed(Value v) {
    return g4 == v4 ? v : arith::TruncFOp::create(b, loc, g4, v).getResult();
  }
  /// `v` (an index below 2^31), through an asm that LLVM cannot see through
  /// or hoist. AMD's back end takes no inline asm here (no asm parser is
  /// linked): `v`, a per-thread value, goes through a ds_bpermute from the
  /// lane itself, which LLVM cannot see through or (convergent) hoist.
  Value opaque(Value v);
  /// Keeps ptxas from unrolling the loop whose body starts here (it sees
  /// through opaque() and would unroll a loop of known trip count). AMD's
  /// back end sees no further than LLVM: nothing to do.
  void noUnroll() {
    if (amdgcn)
      return;
    LLVM::InlineAsmOp::create(b, loc, TypeRange{}, ValueRange{},
                              b.getStringAttr(".pragma \"nounroll\";"),
                              b.getStringAttr(""), b.getUnitAttr(), UnitAttr(),
                              LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(),
                              ArrayAttr());
  }
  /// Runs `body(u, acc)` for u in [0, n) on the values `acc` carried from
  /// one to the next, as an scf.for of one unit an iteration: unrolled
  /// (whole, or two units an iteration), ptxas hoists the shared loads of
  /// later units ahead and spills at 128 registers.
  void forUnits(int64_t n, SmallVector<Value> &acc,
                llvm::function_ref<void(Value, SmallVector<Value> &)> body) {
    auto loop = scf::ForOp::create(b, loc, cst(0), cst(n), cst(1), acc);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> inner(loop.getRegionIterArgs());
    body(loop.getInductionVar(), inner);
    scf::YieldOp::create(b, loc, inner);
    acc.assign(loop.getResults().begin(), loop.getResults().end());
  }
  /// Sets tid, rowGroup and keyThread from `t`.
  void setThread(Value t) {
    tid = t;
    rowGroup = div(t, kT);
    keyThread = rem(t, kT);
  }

  /// Copies rows row0..row0+rows-1 of src[batch, head] (rows past `bound`
  /// zero-filled) into the padded tile `dst`, as cp.async copies of 16
  /// bytes (committed and waited for by the caller), or without cp.async
  /// (AMD) as loads into registers, widened to f32, and shared stores
  /// (complete when the caller's barrier is passed).
  void copyTile(Value src, Value hd, Value row0, int64_t bound, int64_t rows,
                Value dst);
  /// Commits the copies issued since the last commit as a group; returns
  /// its token.
  Value commitGroup() {
    if (!asyncCopy)
      return Value();
    return nvgpu::DeviceAsyncCreateGroupOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), ValueRange{});
  }
  /// Waits until at most `pending` committed groups of this thread's
  /// copies are in flight (the op takes a group's token, Q's: the count is
  /// what counts).
  void waitGroups(int64_t pending) {
    if (!asyncCopy)
      return;
    nvgpu::DeviceAsyncWaitOp::create(b, loc, token,
                                     b.getI32IntegerAttr(pending));
  }
  /// One key tile (j, at key k0): returns the new loop-carried values (O...,
  /// m..., l..., and with splitKV the key tile K's buffer holds or will
  /// hold when its copies land, -1 for none).
  SmallVector<Value> tileStep(Value j, Value k0, ValueRange carried);
  /// The mask per element, applied to the scores `sv` ([i * kKeys + j]).
  SmallVector<Value> applyMask(ArrayRef<Value> sv, Value k0);
  void epilogue(ValueRange carried);
  /// The factor taking a sum from running value `mOld` to `mNew` (finite):
  /// a difference, then scaled (as the contributions, see tileStep).
  Value correctionOf(Value mOld, Value mNew) {
    if (p.correction)
      return p.correction(b, loc, mOld, mNew);
    return exp2(fmul(fsub(mOld, mNew), cstF(fast ? p.scale * kLog2E : kLog2E)));
  }

  const SimtAttentionSchedule &s;
  /// Rows and keys of S a thread computes (the register tile).
  int64_t kRows, kKeys;
  // cpr: 16-byte chunks of a Q or K row (Q K^T's); cprV: of a V or O row,
  // nC of them a thread's.
  int64_t threads, kT, stride, cpr, cprV, nC;
  /// rowsAligned(p).
  bool aligned;
  /// Copies from global memory are cp.async (NVIDIA) or synchronous.
  bool asyncCopy;
  /// 16-byte chunks of d a score sums before adding them to the score.
  int64_t scoreChunks;
  bool fast;
  SmallVector<MaskConstraint, 3> constraints;
  VectorType v4, g4;
  llvm::Align globalAlign;

  Value qArg, kArg, vArg, oArg, statsArg;
  /// Key chunks (split-K) and the block's chunk; 0 and null otherwise.
  int64_t chunks = 0;
  Value chunk;
  Value smemQ, smemK, smemV, smemP; // 1-D f32 views of the shared tiles
  Value tid, rowGroup, keyThread;
  Value token; // Q's cp.async group
  Value tEnd;  // the end of the key tile loop
  Value batch, head, kvHead;
  Value batchI32, headI32, qThreadI32;
};

Value SimtBuilder::opaque(Value v) {
  if (amdgcn) {
    Value lane = toI32(
        band(mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x),
             waveSize - 1));
    Value same = LLVM::CallIntrinsicOp::create(
                     b, loc, i32, b.getStringAttr("llvm.amdgcn.ds.bpermute"),
                     ValueRange{mul(lane, 4), toI32(v)})
                     .getResult(0);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), same);
  }
  auto op = LLVM::InlineAsmOp::create(
      b, loc, i32, ValueRange{toI32(v)}, b.getStringAttr("mov.b32 $0, $1;"),
      b.getStringAttr("=r,r"), b.getUnitAttr(), UnitAttr(),
      LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(), ArrayAttr());
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), op.getRes());
}

Value SimtBuilder::loadRow4(Value mem, SmallVector<Value, 5> at, Value col,
                            int64_t dims) {
  if (dims % 4)
    return loadEach4(mem, std::move(at), col, dims);
  at.push_back(col);
  Value val = vector::LoadOp::create(b, loc, g4, mem, at, false, globalAlign);
  return g4 == v4 ? val : arith::ExtFOp::create(b, loc, v4, val).getResult();
}

Value SimtBuilder::loadEach4(Value mem, SmallVector<Value, 5> at, Value col,
                             int64_t limit) {
  SmallVector<Value, 4> elems;
  at.push_back(Value());
  for (int64_t i = 0; i < 4; ++i) {
    Value c = add(col, i);
    at.back() = arith::MinUIOp::create(b, loc, c, cst(limit - 1));
    Value x = memref::LoadOp::create(b, loc, mem, at);
    if (x.getType() != f32)
      x = arith::ExtFOp::create(b, loc, f32, x);
    elems.push_back(select(ult(c, limit), x, cstF(0.0)));
  }
  return vector::FromElementsOp::create(b, loc, v4, elems);
}

void SimtBuilder::storeRow4(Value val, Value mem, SmallVector<Value, 5> at,
                            Value col) {
  if (p.dimV() % 4 == 0) {
    at.push_back(col);
    vector::StoreOp::create(b, loc, val, mem, at, false, globalAlign);
    return;
  }
  at.push_back(Value());
  for (int64_t i = 0; i < 4; ++i) {
    Value c = add(col, i);
    whenTrue(ult(c, p.dimV()), [&] {
      at.back() = c;
      memref::StoreOp::create(b, loc, extract(val, i), mem, at);
    });
  }
}

void SimtBuilder::copyTile(Value src, Value hd, Value row0, int64_t bound,
                           int64_t rows, Value dst) {
  // K given transposed ([.., D, Lk], copies through registers only): a
  // chunk is 4 keys of one d, consecutive threads on consecutive keys.
  bool keysByD = src == kArg && p.kTransposed;
  // V's rows are of its own head size; Q's and K's of Q K^T's.
  int64_t dims = src == vArg ? p.dimV() : p.headDim;
  int64_t rowChunks = src == vArg ? cprV : cpr;
  int64_t keyChunks = rows / 4;
  int64_t items = keysByD ? cpr * 4 * keyChunks : rows * rowChunks;
  // Tiles start at multiples of `rows`, so only a ragged bound needs checks.
  bool needRow = bound % rows != 0;
  // The copies hold no registers but their addresses: past two groups of
  // perIteration rounds, the whole groups run in a loop that neither LLVM
  // (an opaque trip count) nor ptxas (a nounroll pragma) unrolls, so that
  // ptxas does not compute every address ahead (and spill, decode's tiles
  // of 128 keys at head dim 192).
  // A round of rows that travel element by element (a head size not a
  // multiple of 4) holds 4 loads and their selects: a loop round each
  // (f32 head dim 50 in 32 x 128 tiles spilled its 7 unrolled rounds at
  // 128 registers).
  int64_t perIteration = (keysByD ? p.lk % 4 : dims % 4) ? 1 : 4;
  // Round `it` of the copy, with `e` (tid + it * threads) its item.
  auto round = [&](Value e, bool last) {
    // A last round past the tile repeats its last chunk (the same bytes
    // copied twice).
    if (last && items % threads)
      e = arith::MinUIOp::create(b, loc, e, cst(items - 1));
    if (keysByD) {
      // Keys past `bound` (lk a multiple of 4: whole chunks) read key 0:
      // zero-filled.
      // d past headDim (a head size not a multiple of 4) reads the last d
      // and is zeroed: it is the padding of K's shared rows.
      Value d = div(e, keyChunks), kc = rem(e, keyChunks);
      Value key = add(row0, mul(kc, 4)), dRead = d, dOk;
      if (p.headDim % 4) {
        dOk = ult(d, p.headDim);
        dRead = arith::MinUIOp::create(b, loc, d, cst(p.headDim - 1));
      }
      Value val;
      if (p.lk % 4) {
        // Rows of lk keys: the chunk's keys one by one, those past lk (the
        // chunk straddles it, or lies past it) read the last and zeroed.
        val = loadEach4(src, {batch, hd, dRead}, key, p.lk);
      } else {
        Value ok;
        if (needRow) {
          ok = ult(key, bound);
          key = select(ok, key, cst(0));
        }
        val = vector::LoadOp::create(b, loc, g4, src,
                                     ValueRange{batch, hd, dRead, key}, false,
                                     globalAlign);
        if (g4 != v4)
          val = arith::ExtFOp::create(b, loc, v4, val);
        if (ok)
          val = select(ok, val, zero4());
      }
      if (dOk)
        val = select(dOk, val, zero4());
      for (int64_t i = 0; i < 4; ++i)
        memref::StoreOp::create(
            b, loc, extract(val, i), dst,
            ValueRange{add(mul(add(mul(kc, 4), i), stride), d)});
      return;
    }
    Value r = div(e, rowChunks), c = rem(e, rowChunks);
    Value row = add(row0, r);
    Value n, ok;
    if (needRow) {
      // Rows out of range read 0 bytes of row 0 (always in the tensor):
      // zero-filled.
      ok = ult(row, bound);
      row = select(ok, row, cst(0));
      n = select(ok, cst(4), cst(0));
    }
    if (!asyncCopy) {
      Value val = loadRow4(src, {batch, hd, row}, mul(c, 4), dims);
      if (ok)
        val = select(ok, val, zero4());
      vector::StoreOp::create(b, loc, val, dst,
                              ValueRange{add(mul(r, stride), mul(c, 4))}, false,
                              llvm::Align(16));
      return;
    }
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), dst,
        ValueRange{add(mul(r, stride), mul(c, 4))}, src,
        ValueRange{batch, hd, row, mul(c, 4)}, b.getIndexAttr(4), n,
        b.getUnitAttr());
  };
  int64_t rounds = ceilDiv(items, threads);
  int64_t groups = items / threads / perIteration;
  int64_t first = 0;
  if (groups >= 2) {
    // (AMD: a constant; LLVM's unrolling there is checked by the spill
    // counts of tests/gpu/amd_attention_test.py.)
    Value n = amdgcn ? cst(groups) : opaque(cst(groups));
    auto loop = scf::ForOp::create(b, loc, cst(0), n, cst(1));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    noUnroll();
    Value e0 = add(tid, mul(loop.getInductionVar(), perIteration * threads));
    for (int64_t it = 0; it < perIteration; ++it)
      round(add(e0, it * threads), false);
    first = groups * perIteration;
  }
  for (int64_t it = first; it < rounds; ++it)
    round(add(tid, it * threads), it + 1 == rounds);
}

SmallVector<Value> SimtBuilder::applyMask(ArrayRef<Value> sv, Value k0) {
  Value kThread = toI32(add(k0, keyThread));
  // bases[c]: constraint c at the thread's first row and first key.
  SmallVector<Value> bases;
  for (const MaskConstraint &mc : constraints) {
    Value v = cstI32(mc.c);
    if (mc.a)
      v = add(v, mul(qThreadI32, mc.a));
    if (mc.b)
      v = add(v, mul(kThread, mc.b));
    bases.push_back(v);
  }
  Value negInf = cstF(-std::numeric_limits<double>::infinity());
  SmallVector<Value> out;
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kKeys; ++j) {
      Value keep;
      for (auto [c, mc] : llvm::enumerate(constraints)) {
        int64_t off = mc.a * i + mc.b * kT * j;
        keep =
            land(keep, cmp(arith::CmpIPredicate::sge, bases[c], cstI32(-off)));
      }
      out.push_back(select(keep, sv[i * kKeys + j], negInf));
    }
  return out;
}

SmallVector<Value> SimtBuilder::tileStep(Value j, Value k0,
                                         ValueRange carried) {
  SmallVector<Value> oAcc(carried.begin(), carried.begin() + kRows * nC);
  SmallVector<Value> mRun(carried.begin() + kRows * nC,
                          carried.begin() + kRows * nC + kRows);
  SmallVector<Value> lRun(carried.begin() + kRows * nC + kRows,
                          carried.begin() + kRows * nC + 2 * kRows);
  Value kHave = s.splitKV ? carried[kRows * nC + 2 * kRows] : Value();

  // Every shared address of the step derives from the thread id made opaque
  // here: they are all the same from tile to tile, and LLVM would otherwise
  // hoist each out of the key loop into a 64-bit register of its own (far
  // more than the registers hold).
  std::tuple<Value, Value, Value> kernelThread{tid, rowGroup, keyThread};
  setThread(opaque(tid));

  // Every thread is past the previous tile's P V: its buffers are free.
  // Copies are cp.async (a tile's all in flight at once, no registers).
  // With buffers of their own, V's lands while S and the softmax run, and
  // K's was issued by the previous step (after its S) unless that tile was
  // not the next one run (skipped tiles).
  mlir::gpu::BarrierOp::create(b, loc);
  if (s.splitKV) {
    whenTrue(cmp(arith::CmpIPredicate::ne, kHave, j), [&] {
      // A copy of a skipped tile may still be in flight to the buffer.
      waitGroups(0);
      copyTile(kArg, kvHead, k0, p.lk, s.blockKV, smemK);
    });
    commitGroup();
    copyTile(vArg, kvHead, k0, p.lk, s.blockKV, smemV);
    commitGroup();
    waitGroups(1);
  } else {
    copyTile(kArg, kvHead, k0, p.lk, s.blockKV, smemK);
    commitGroup();
    waitGroups(0);
  }
  mlir::gpu::BarrierOp::create(b, loc);

  // S = Q K^T: sv[i * kKeys + j] is row kRows * group + i, key kt + kT * j,
  // summed over d in blocks of scoreChunks 16-byte chunks: each block's
  // products as a chain of f32 FMAs from the first product, then added to
  // the score. Rounding then errs about b + d / b units (blocks of b), not
  // d as one chain over d does, which dominates the kernel's error when
  // scores are large (docs/architecture.md, "f32 attention").
  Value qOff = mul(rowGroup, kRows * stride);
  Value kOff = mul(keyThread, stride);
  SmallVector<Value> sv(kRows * kKeys, cstF(0.0));
  // The block of n chunks from chunk c0 added to `acc`.
  auto block = [&](Value c0, int64_t n, SmallVector<Value> &acc) {
    SmallVector<Value> part(kRows * kKeys);
    for (int64_t u = 0; u < n; ++u) {
      Value col = mul(add(c0, u), 4);
      SmallVector<Value> qv, kv;
      for (int64_t i = 0; i < kRows; ++i)
        qv.push_back(load4(smemQ, add(add(qOff, col), i * stride)));
      for (int64_t j = 0; j < kKeys; ++j)
        kv.push_back(load4(smemK, add(add(kOff, col), j * kT * stride)));
      for (int64_t i = 0; i < kRows; ++i)
        for (int64_t j = 0; j < kKeys; ++j) {
          Value &t = part[i * kKeys + j];
          for (int64_t e = 0; e < 4; ++e) {
            Value x = extract(qv[i], e), y = extract(kv[j], e);
            t = t ? fma(x, y, t) : fmul(x, y);
          }
          // Each sum joins its score as soon as it is complete: a block of
          // one chunk then holds no more registers.
          if (u + 1 == n)
            acc[i * kKeys + j] = fadd(acc[i * kKeys + j], t);
        }
    }
  };
  forUnits(cpr / scoreChunks, sv, [&](Value bc, SmallVector<Value> &acc) {
    block(mul(bc, scoreChunks), scoreChunks, acc);
  });
  if (cpr % scoreChunks)
    block(cst(cpr - cpr % scoreChunks), cpr % scoreChunks, sv);

  // Scale and modify (the fast path keeps raw scores), then mask.
  Value kThreadI32 = toI32(add(k0, keyThread));
  if (!fast) {
    Value scale = cstF(p.scale);
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < kKeys; ++j) {
        Value &sc = sv[i * kKeys + j];
        if (p.scale != 1.0)
          sc = fmul(sc, scale);
        if (p.scoreMod)
          sc = scoreMod(sc, batchI32, headI32, add(qThreadI32, i),
                        add(kThreadI32, j * kT));
      }
  }
  if (p.keyKeepApply) {
    // The key mask is the problem's whole mask (scoreMod leaves it out): a
    // plan that chose this template over a tensor-core one still gets it.
    Value negInf = cstF(-std::numeric_limits<double>::infinity());
    for (int64_t j = 0; j < kKeys; ++j) {
      Value keep = p.keyKeep(b, loc, batchI32, headI32, add(kThreadI32, j * kT),
                             captured);
      for (int64_t i = 0; i < kRows; ++i) {
        Value &sc = sv[i * kKeys + j];
        sc = select(keep, sc, negInf);
      }
    }
  }
  if (!constraints.empty())
    sv = yieldIf(
        tilePartial(constraints, k0, s.blockKV),
        SmallVector<Type>(sv.size(), f32), [&] { return applyMask(sv, k0); },
        [&] { return sv; });

  // Online softmax, per row: the row max over the row's kT threads, the
  // correction of l (O's is applied with the tile's P V, below), and P into
  // shared memory.
  Value negInf = cstF(-std::numeric_limits<double>::infinity());
  Value zeroF = cstF(0.0);
  Value c = cstF(p.scale * kLog2E);
  // P^T[key][row]: each 4 of a thread's rows of one key are one 16-byte
  // store.
  Value pOff = add(mul(keyThread, pStride(s)), mul(rowGroup, kRows));
  SmallVector<SmallVector<Value, 8>> pByKey(kKeys);
  SmallVector<Value> corrs;
  // A row's kKeys values (a power of two) reduced pairwise.
  auto reduce = [](ArrayRef<Value> row, auto op) {
    SmallVector<Value, 8> v(row);
    for (size_t n = v.size() / 2; n >= 1; n /= 2)
      for (size_t e = 0; e < n; ++e)
        v[e] = op(v[2 * e], v[2 * e + 1]);
    return v[0];
  };
  for (int64_t i = 0; i < kRows; ++i) {
    ArrayRef<Value> row(sv.data() + i * kKeys, kKeys);
    Value mx = reduce(row, [&](Value x, Value y) { return fmax(x, y); });
    for (int64_t off = 1; off < kT; off *= 2)
      mx = fmax(mx, shuffleXor(mx, off));
    Value mOld = mRun[i];
    Value mNew = fmax(mOld, mx);
    // A row with nothing kept so far has max -inf; 0 stands in for it so
    // that -inf - (-inf) never happens (every contribution is then 0).
    Value isNone =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mNew, negInf);
    Value mUse = select(isNone, zeroF, mNew);
    // Both as differences from the running max, then scaled (by log2(e),
    // and by the scale on the fast path): every contribution and correction
    // then refers to the max itself. Folding the max into an fma
    // (s * c - m * c) refers them to m * c rounded, a different rounding at
    // each new max, and an f32 emulation errs 1.6-1.9x as much at 3001 and
    // 8192 keys; a score change may also leave huge finite scores (a -1e30
    // mask on a whole row), where s * c - m * c leaves the rounding error of
    // m * c, not 0.
    Value scaleExp = fast ? c : cstF(kLog2E);
    Value corr = correctionOf(mOld, mUse);
    SmallVector<Value> pr;
    for (Value sc : row)
      pr.push_back(p.contribution ? p.contribution(b, loc, sc, mUse)
                                  : exp2(fmul(fsub(sc, mUse), scaleExp)));
    // l stays a per-thread partial sum; the row's threads reduce it once,
    // at the end.
    lRun[i] = fma(lRun[i], corr,
                  reduce(pr, [&](Value x, Value y) { return fadd(x, y); }));
    mRun[i] = mNew;
    corrs.push_back(corr);
    for (int64_t j = 0; j < kKeys; ++j)
      pByKey[j].push_back(pr[j]);
  }
  for (int64_t j = 0; j < kKeys; ++j)
    for (int64_t r4 = 0; r4 < kRows; r4 += 4)
      vector::StoreOp::create(
          b, loc,
          vector::FromElementsOp::create(
              b, loc, v4, ArrayRef<Value>(pByKey[j]).slice(r4, 4)),
          smemP, ValueRange{add(pOff, j * kT * pStride(s) + r4)}, false,
          llvm::Align(16));

  // P is complete, V has landed, and every thread is past its reads of K:
  // the next tile's K copies (splitKV) land during this tile's P V.
  if (s.splitKV)
    waitGroups(0);
  mlir::gpu::BarrierOp::create(b, loc);
  if (s.splitKV) {
    Value next = add(j, 1);
    Value more = cmp(arith::CmpIPredicate::slt, next, tEnd);
    whenTrue(more, [&] {
      copyTile(kArg, kvHead, add(k0, s.blockKV), p.lk, s.blockKV, smemK);
    });
    commitGroup();
    kHave = select(more, next, cst(-1));
  }
  if (!s.splitKV) {
    copyTile(vArg, kvHead, k0, p.lk, s.blockKV, smemV);
    commitGroup();
    waitGroups(0);
    mlir::gpu::BarrierOp::create(b, loc);
  }

  // O += P V: 4 keys an iteration; for each key, P of the thread's kRows
  // rows as kRows / 4 16-byte reads (broadcasts among the row group), V's
  // chunks of the key row shared by the rows. A thread's chunks past V's
  // head size (its chunks not a multiple of kT) read the last chunk and are
  // not stored.
  Value pRow = mul(rowGroup, kRows);
  SmallVector<Value> vCol;
  for (int64_t cc = 0; cc < nC; ++cc) {
    Value ch = add(keyThread, cc * kT);
    if ((cc + 1) * kT > cprV)
      ch = arith::MinUIOp::create(b, loc, ch, cst(cprV - 1));
    vCol.push_back(mul(ch, 4));
  }
  // The tile's P V sums into accumulators of its own, added to the
  // corrected O once: a sum in blocks of blockKV keys, not one chain of lk
  // (an f32 emulation: a quarter of the error at 3001 and 8192 keys).
  SmallVector<Value> tAcc(kRows * nC, zero4());
  forUnits(s.blockKV / 4, tAcc, [&](Value kc, SmallVector<Value> &acc) {
    Value vRow = mul(kc, 4 * stride);
    Value pKey = add(pRow, mul(kc, 4 * pStride(s)));
    for (int64_t kk = 0; kk < 4; ++kk) {
      SmallVector<Value, 2> pLoads;
      for (int64_t r4 = 0; r4 < kRows; r4 += 4)
        pLoads.push_back(load4(smemP, add(pKey, kk * pStride(s) + r4)));
      for (int64_t cc = 0; cc < nC; ++cc) {
        Value vv = load4(smemV, add(add(vCol[cc], vRow), kk * stride));
        for (int64_t i = 0; i < kRows; ++i) {
          Value pSplat = vector::BroadcastOp::create(
              b, loc, v4, extract(pLoads[i / 4], i % 4));
          Value &a = acc[i * nC + cc];
          a = vector::FMAOp::create(b, loc, pSplat, vv, a);
        }
      }
    }
  });

  for (int64_t i = 0; i < kRows; ++i) {
    Value corrVec = vector::BroadcastOp::create(b, loc, v4, corrs[i]);
    for (int64_t cc = 0; cc < nC; ++cc)
      oAcc[i * nC + cc] = vector::FMAOp::create(b, loc, oAcc[i * nC + cc],
                                                corrVec, tAcc[i * nC + cc]);
  }

  std::tie(tid, rowGroup, keyThread) = kernelThread;
  SmallVector<Value> out(oAcc);
  out.append(mRun);
  out.append(lRun);
  if (kHave)
    out.push_back(kHave);
  return out;
}

void SimtBuilder::epilogue(ValueRange carried) {
  bool needRow = p.lq % s.blockQ != 0;
  for (int64_t i = 0; i < kRows; ++i) {
    // The row's threads reduce l before any of them may branch.
    Value l = carried[kRows * nC + kRows + i];
    for (int64_t off = 1; off < kT; off *= 2)
      l = fadd(l, shuffleXor(l, off));
    // Split-K: O as summed, and the row's (m, l) from its first key thread.
    Value invVec = chunks
                       ? Value()
                       : vector::BroadcastOp::create(b, loc, v4, inverseSum(l));
    Value row = add(q0, add(mul(rowGroup, kRows), i));
    whenTrue(needRow ? ult(row, p.lq) : Value(), [&] {
      for (int64_t cc = 0; cc < nC; ++cc) {
        Value ch = add(keyThread, cc * kT);
        whenTrue((cc + 1) * kT > cprV ? ult(ch, cprV) : Value(), [&] {
          Value val = carried[i * nC + cc];
          if (chunks)
            vector::StoreOp::create(
                b, loc, val, oArg,
                ValueRange{batch, head, chunk, row, mul(ch, 4)}, false,
                llvm::Align(16));
          else
            storeRow4(narrowed(fmul(val, invVec)), oArg, {batch, head, row},
                      mul(ch, 4));
        });
      }
      if (chunks)
        whenTrue(cmp(arith::CmpIPredicate::eq, keyThread, cst(0)), [&] {
          Value ml = vector::FromElementsOp::create(
              b, loc, VectorType::get({2}, f32),
              ValueRange{carried[kRows * nC + i], l});
          vector::StoreOp::create(b, loc, ml, statsArg,
                                  ValueRange{batch, head, chunk, row, cst(0)},
                                  false, llvm::Align(8));
        });
    });
  }
}

void SimtBuilder::buildCombine(Value partO, Value stats, Value o,
                               int64_t nChunks, int64_t blockThreads) {
  chunks = nChunks;
  // A thread per 16-byte chunk of a row of [batch * headsQ, lq]; each reads
  // the row's (m, l) pairs once for the max, then once for the sums.
  int64_t n = p.batch * p.headsQ * p.lq * cprV;
  Value t = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
  Value blockX = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
  Value e = add(mul(blockX, blockThreads), t);
  whenTrue(n % blockThreads ? ult(e, n) : Value(), [&] {
    Value rowIdx = div(e, cprV), col = mul(rem(e, cprV), 4);
    Value bh = div(rowIdx, p.lq), r = rem(rowIdx, p.lq);
    VectorType v2 = VectorType::get({2}, f32);
    auto statsAt = [&](Value c) {
      return vector::LoadOp::create(b, loc, v2, stats,
                                    ValueRange{bh, c, r, cst(0)}, false,
                                    llvm::Align(8));
    };
    Value negInf = cstF(-std::numeric_limits<double>::infinity());
    auto maxLoop = scf::ForOp::create(b, loc, cst(0), cst(chunks), cst(1),
                                      ValueRange{negInf});
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(maxLoop.getBody());
      Value m = extract(statsAt(maxLoop.getInductionVar()), 0);
      scf::YieldOp::create(b, loc,
                           ValueRange{fmax(maxLoop.getRegionIterArgs()[0], m)});
    }
    // As in tileStep: 0 stands in for the max of a row with nothing kept.
    Value mMax = maxLoop.getResult(0);
    Value mUse = select(
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mMax, negInf),
        cstF(0.0), mMax);
    auto sumLoop = scf::ForOp::create(b, loc, cst(0), cst(chunks), cst(1),
                                      ValueRange{zero4(), cstF(0.0)});
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(sumLoop.getBody());
      Value c = sumLoop.getInductionVar();
      Value ml = statsAt(c);
      Value corr = correctionOf(extract(ml, 0), mUse);
      Value part = vector::LoadOp::create(
          b, loc, v4, partO, ValueRange{bh, c, r, col}, false, llvm::Align(16));
      ValueRange acc = sumLoop.getRegionIterArgs();
      Value oSum = vector::FMAOp::create(
          b, loc, part, vector::BroadcastOp::create(b, loc, v4, corr), acc[0]);
      scf::YieldOp::create(b, loc,
                           ValueRange{oSum, fma(extract(ml, 1), corr, acc[1])});
    }
    Value inv = vector::BroadcastOp::create(b, loc, v4,
                                            inverseSum(sumLoop.getResult(1)));
    // O is [batch * headsQ, lq, dimV], or the 4-D tensor where its
    // strides merge no batch and head (buildSimtDecodeKernels).
    SmallVector<Value, 5> at{bh, r};
    if (cast<MemRefType>(o.getType()).getRank() == 4)
      at = {div(bh, p.headsQ), rem(bh, p.headsQ), r};
    storeRow4(narrowed(fmul(sumLoop.getResult(0), inv)), o, at, col);
  });
}

void SimtBuilder::build(Value q, Value k, Value v, Value o, Value stats) {
  qArg = q;
  kArg = k;
  vArg = v;
  oArg = o;
  statsArg = stats;
  int64_t nQTiles = ceilDiv(p.lq, s.blockQ);
  int64_t nKTiles = ceilDiv(p.lk, s.blockKV);
  int64_t group = p.headsQ / p.headsKV;

  setThread(mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x));
  Value blockX = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
  head = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::y);
  batch = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::z);
  kvHead = div(head, group);
  if (s.chunkTiles) {
    chunks = ceilDiv(nKTiles, s.chunkTiles);
    chunk = rem(blockX, chunks);
    blockX = div(blockX, chunks);
  }
  // Query tiles run last to first: under a causal mask the late tiles
  // carry the most keys, and starting them first shortens the tail.
  q0 = mul(sub(cst(nQTiles - 1), blockX), s.blockQ);
  qLast = add(arith::MinSIOp::create(b, loc, add(q0, s.blockQ), cst(p.lq)), -1);
  batchI32 = toI32(batch);
  headI32 = toI32(head);
  // The block's rows are one head of one batch: a key mask (p.keyKeep) the
  // same for all of them skips the key tiles it drops throughout.
  keepBatch = batchI32;
  keepHead = headI32;
  qThreadI32 = toI32(add(q0, mul(rowGroup, kRows)));

  // Shared memory: Q, K (and V with splitKV), P.
  Value raw = dynamicSharedMemory();
  int64_t qElems = s.blockQ * stride, kvElems = s.blockKV * stride;
  smemQ = sharedView(raw, qElems, f32, 0);
  smemK = sharedView(raw, kvElems, f32, qElems * 4);
  smemV =
      s.splitKV ? sharedView(raw, kvElems, f32, (qElems + kvElems) * 4) : smemK;
  int64_t pByte = (qElems + (s.splitKV ? 2 : 1) * kvElems) * 4;
  smemP = sharedView(raw, s.blockKV * pStride(s), f32, pByte);

  // Visible to every thread after the first tile's copy barrier (a cp.async
  // group of its own, waited for with K's).
  copyTile(qArg, head, q0, p.lq, s.blockQ, smemQ);
  token = commitGroup();

  Value tStart;
  std::tie(tStart, tEnd) = keyTileRange(nKTiles, s.blockKV);
  if (chunks) {
    // The block's chunk of key tiles; an empty range still writes its
    // (empty: m = -inf, l = 0) partial result, which the combine reads.
    Value c0 = mul(chunk, s.chunkTiles);
    tStart = arith::MaxSIOp::create(b, loc, tStart, c0);
    tEnd = arith::MinSIOp::create(b, loc, tEnd, add(c0, s.chunkTiles));
  }
  SmallVector<Value> init(kRows * nC, zero4());
  init.append(kRows, cstF(-std::numeric_limits<double>::infinity()));
  init.append(kRows, cstF(0.0));
  if (s.splitKV)
    init.push_back(cst(-1));
  // With a key mask, each lane's share of "tile j keeps a key" is read a
  // tile ahead and carried, so that its loads are off the critical path;
  // every warp votes on the same flags, so the skip is uniform.
  bool keys = skipsKeys();
  if (keys)
    init.push_back(laneKeeps(tStart, s.blockKV));
  auto loop = scf::ForOp::create(b, loc, tStart, tEnd, cst(1), init);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    Value k0 = mul(j, s.blockKV);
    ValueRange carried = loop.getRegionIterArgs();
    Value live, laneNext;
    if (keys) {
      live = warpAny(carried.back());
      laneNext = laneKeeps(add(j, 1), s.blockKV);
      carried = carried.drop_back();
    }
    SmallVector<Value> out = stepUnlessMasked(
        k0, s.blockKV, carried, [&] { return tileStep(j, k0, carried); }, live);
    if (keys)
      out.push_back(laneNext);
    scf::YieldOp::create(b, loc, out);
  }
  SmallVector<Value> results(loop.getResults());
  if (keys)
    results.pop_back();
  // Q's copy when no key tile ran.
  waitGroups(0);
  epilogue(results);
}

/// simtAttentionScheduleValid without the target's limits: what the builder
/// needs.
bool simtShapeValid(const AttentionProblem &p, const SimtAttentionSchedule &s,
                    int64_t warpSize, std::string &why) {
  auto fail = [&](const std::string &msg) {
    why = "SIMT attention schedule: " + msg;
    return false;
  };
  if (!simtAttentionSupports(p, why))
    return false;
  for (int64_t v : {s.blockQ, s.blockKV})
    if (v < 1 || !llvm::isPowerOf2_64(v))
      return fail("blockQ and blockKV must be powers of two");
  // P's 16-byte stores hold 4 of a thread's rows; S's rows and keys are
  // reduced pairwise.
  if ((s.tileRows != 4 && s.tileRows != 8) ||
      (s.tileKeys != 4 && s.tileKeys != 8))
    return fail("tileRows and tileKeys must be 4 or 8");
  if (s.blockQ < s.tileRows || s.blockQ > 256)
    return fail("blockQ must be in [tileRows, 256]");
  // A row's key threads share a warp (its reductions are shuffles).
  if (s.blockKV < 2 * s.tileKeys || keyThreads(s) > 32)
    return fail("blockKV must be in [2 * tileKeys, 32 * tileKeys]");
  int64_t threads = threadsOf(s);
  // minBlocks is ptxas's .minnctapersm (a multiprocessor holds at most 32
  // blocks); chunkTiles indexes key tiles in 32 bits where --gpu-index-bits
  // says so.
  if (s.minBlocks < 0 || s.minBlocks > 32)
    return fail("minBlocks must be in [0, 32]");
  if (s.chunkTiles < 0 || s.chunkTiles > kMaxChunkTiles)
    return fail("chunkTiles must be in [0, 2^30]");
  // Whole warps: every lane takes part in the key mask's votes (and AMD's
  // key flags are read a lane per key of the wave). On AMD a block of 32
  // threads is one wave of 64 with half its lanes (the builder reads the
  // flags over 32); larger blocks are whole waves.
  if (threads % 32 || threads > 1024 ||
      (threads > warpSize && threads % warpSize))
    return fail("(blockQ / tileRows) x (blockKV / tileKeys) threads must be "
                "whole warps" +
                (warpSize == 32 ? std::string()
                                : " (one of 32 threads, or waves of " +
                                      std::to_string(warpSize) + ")") +
                ", at most 1024");
  return true;
}

} // namespace

bool simtAttentionSupports(const AttentionProblem &p, std::string &why) {
  auto fail = [&](const std::string &msg) {
    why = "SIMT attention kernel: " + msg;
    return false;
  };
  if (!p.elemType ||
      !(p.elemType.isF32() || p.elemType.isF16() || p.elemType.isBF16()))
    return fail("Q, K, V must be f32, f16 or bf16");
  if (p.batch < 1 || p.headsQ < 1 || p.headsKV < 1 || p.lq < 1 || p.lk < 1)
    return fail("batch, heads, lq and lk must be >= 1");
  if (p.headsQ % p.headsKV)
    return fail("query heads must be a multiple of key/value heads");
  // Any head size and row alignment: rows that are not 16-byte aligned (or
  // of whole 16-byte chunks) travel element by element (rowsAligned).
  if (p.headDim < 1 || p.headDim > 256)
    return fail("head dim must be in [1, 256]");
  if (p.dimV() < 1 || p.dimV() > 256)
    return fail("V's head dim must be in [1, 256]");
  std::string strideWhy;
  if (!attentionStridesValid(p, strideWhy, /*alignedRows=*/false))
    return fail(strideWhy);
  if (p.batch > 65535 || p.headsQ > 65535)
    return fail("batch and query heads must be <= 65535 (grid limits)");
  if (p.lq > (int64_t(1) << 30) || p.lk > (int64_t(1) << 30))
    return fail("sequence lengths above 2^30");
  if (!std::isfinite(p.scale))
    return fail("the scale must be finite");
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

bool simtAttentionScheduleValid(const AttentionProblem &p,
                                const SimtAttentionSchedule &s,
                                const ::tcc::TargetDesc &target,
                                std::string &why) {
  if (!simtShapeValid(p, s, target.warpSize, why))
    return false;
  if (!target.isGpu()) {
    why = "SIMT attention schedule: not a GPU target";
    return false;
  }
  // K given transposed is copied through registers (a chunk is 4 keys of
  // one d), also where the other copies are cp.async: its stores are
  // complete when issued, and the barrier that orders K's cp.async copies
  // before the scores orders them too (its commit group is empty). Any
  // key count: rows of keys that are not 16-byte chunks (lk not a multiple
  // of 4) are read key by key (copyTile).
  // minctasm is NVVM's; AMD's occupancy follows from the registers alone.
  if (s.minBlocks && !target.isNvidia()) {
    why = "SIMT attention schedule: minBlocks (NVIDIA's minctasm) must be 0 "
          "on " +
          target.name;
    return false;
  }
  std::string limit;
  if (!sharedFits(sharedBytesOf(p, s), target, limit)) {
    why = "SIMT attention schedule: " + limit;
    return false;
  }
  return true;
}

int64_t simtScoreBlock(const SimtAttentionSchedule &s,
                       const ::tcc::TargetDesc &target) {
  // A block spanning chunks keeps a partial sum a score across them (R x K
  // more registers): ptxas sm_90 fits them without spills where a thread
  // may have 232 registers or more (the 8 x 4 tile: 210 -> 232-252; 4 x 4
  // at head dims 160-256: 147-205 -> 160-205), not at 128 (spills at head
  // dim 80, and 8 x 4 at 64). Blocks of 8 also halve the block sums' FADDs.
  // AMD keeps 4 (its register budgets are unchecked here).
  if (!target.isNvidia())
    return 4;
  int64_t regs = 65536 / (threadsOf(s) * std::max<int64_t>(1, s.minBlocks));
  return std::min<int64_t>(regs, 255) >= 232 ? 8 : 4;
}

SimtAttentionSchedule
chooseSimtAttentionSchedule(const AttentionProblem &p,
                            const ::tcc::TargetDesc &target) {
  int64_t maxShared = target.maxSharedPerBlock,
          sms = target.multiprocessorsForHeuristics();
  // 64 x 64 tiles, 256 threads: 16 S FMAs per two 16-byte shared reads,
  // and 16 O registers a thread for each 64 columns of the head.
  SimtAttentionSchedule s{64, 64, true};
  // Few query rows (decode): smaller tiles leave fewer threads idle; and
  // fewer rows a block while the grid leaves multiprocessors idle.
  while (s.blockQ > 16 && (s.blockQ >= 2 * p.lq ||
                           ceilDiv(p.lq, s.blockQ) * p.headsQ * p.batch < sms))
    s.blockQ /= 2;
  // Small query tiles take wider key tiles: blocks stay 128 or 256 threads.
  if (s.blockQ < 64)
    s.blockKV = 128;
  // K and V in buffers of their own (one copy phase a tile, V's cp.async
  // copy landing while S and the softmax run) where two blocks still share
  // a multiprocessor, or where one block would hold it alone anyway.
  // Otherwise (headDim 128 at 64 x 64) one block of 128 query rows takes
  // the multiprocessor (each K and V tile read once for twice the rows)
  // where its registers (O of 2 chunks a thread) and shared memory allow
  // and the grid still fills the multiprocessors; else V reuses K's
  // buffer. That block's threads own 8 rows x 4 keys of S each (256
  // threads): 0.54x the shared bytes an FMA of 4 x 4 (512 threads) and 0.7x
  // the shared loads (docs/architecture.md, "f32 attention"); 1.14x faster
  // on the H200 at head dim 128 (docs/performance.md, session 14).
  SimtAttentionSchedule shared = s;
  shared.splitKV = false;
  if (2 * sharedBytesOf(p, s) > maxShared &&
      2 * sharedBytesOf(p, shared) <= maxShared) {
    SimtAttentionSchedule wide = s;
    wide.blockQ = 128;
    wide.tileRows = 8;
    bool fits = s.blockQ == 64 &&
                ceilDiv(paddedValueDim(p) / 4, keyThreads(wide)) <= 2 &&
                sharedBytesOf(p, wide) <= maxShared &&
                ceilDiv(p.lq, wide.blockQ) * p.headsQ * p.batch >= sms;
    s = fits ? wide : shared;
  } else if (sharedBytesOf(p, s) > maxShared) {
    // Smaller tiles would be the price of buffers apart: shared ones.
    s = shared;
  }
  while (sharedBytesOf(p, s) > maxShared && s.blockQ > 16)
    s.blockQ /= 2;
  while (sharedBytesOf(p, s) > maxShared && s.blockKV > 32)
    s.blockKV /= 2;
  // A whole wave (AMD: 64 threads; 16 x 32 tiles have 32) where shared
  // memory allows: twice the query rows, else twice the keys (head dim
  // 192: 32 x 32). Head dim 256 keeps 32 threads, half a wave.
  while (threadsOf(s) < target.warpSize) {
    SimtAttentionSchedule rows = s, keys = s;
    rows.blockQ *= 2;
    keys.blockKV *= 2;
    if (sharedBytesOf(p, rows) <= maxShared)
      s = rows;
    else if (keyThreads(keys) <= 32 && sharedBytesOf(p, keys) <= maxShared)
      s = keys;
    else
      break;
  }
  // Left alone, ptxas takes the registers the block size allows (about
  // 145 at headDim 128 in blocks of 256 threads: one block a
  // multiprocessor). A thread's O of up to 32 floats fits 128 registers
  // without spills (ptxas, headDim 16 to 256 with the tilings above), 64
  // floats 168 (4 x 4) or 210 (8 x 4); minctasm bounds them, but never
  // below the registers of the blocks shared memory lets in: a bound that
  // buys no residency only costs accuracy (the score blocks of 8 need 232
  // registers, simtScoreBlock) and spills. Head dim 192 in 16 x 128 tiles
  // (218 KiB, one block a multiprocessor) asked for 4 blocks' 128 registers.
  int64_t oFloats =
      s.tileRows * 4 * ceilDiv(paddedValueDim(p) / 4, keyThreads(s));
  int64_t regs = oFloats <= 32 ? 128 : 232;
  s.minBlocks =
      target.isNvidia()
          ? std::max<int64_t>(
                1, std::min(65536 / (threadsOf(s) * regs),
                            target.blocksByShared(sharedBytesOf(p, s))))
          : 0;
  // Decode (the query rows one tile): where the grid leaves multiprocessors
  // idle, the keys split into chunks of at least kMinChunk tiles (the
  // partial result's write and the combine's read are then a small part of
  // a chunk's work), enough for about 4 blocks a multiprocessor.
  constexpr int64_t kMinChunk = 2;
  int64_t base = p.headsQ * p.batch;
  int64_t tiles = ceilDiv(p.lk, s.blockKV);
  if (p.lq <= s.blockQ && base < sms && tiles >= 2 * kMinChunk) {
    int64_t chunks = std::min(tiles / kMinChunk,
                              std::max<int64_t>(2, ceilDiv(4 * sms, base)));
    s.chunkTiles = ceilDiv(tiles, chunks);
  }
  return s;
}

FailureOr<KernelLaunch>
buildSimtAttentionKernel(OpBuilder &b, mlir::gpu::GPUModuleOp module,
                         StringRef name, const AttentionProblem &p,
                         const SimtAttentionSchedule &s,
                         const ::tcc::TargetDesc &target) {
  std::string why;
  if (!simtAttentionScheduleValid(p, s, target, why))
    return module.emitError(why), failure();
  if (s.chunkTiles)
    return module.emitError("SIMT attention: a split-K schedule needs "
                            "buildSimtDecodeKernels"),
           failure();
  loadTemplateDialects(b.getContext());

  OpBuilder::InsertionGuard g(b);
  int64_t threads = threadsOf(s);
  SmallVector<Type> args{attentionOperandType(p, AttentionOperand::Q),
                         attentionOperandType(p, AttentionOperand::K),
                         attentionOperandType(p, AttentionOperand::V),
                         attentionOperandType(p, AttentionOperand::O)};
  llvm::append_range(args, p.captured);
  auto func = createKernelFunc(b, module, name, args, threads);
  if (s.minBlocks > 0 && target.isNvidia())
    func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(s.minBlocks));
  Block &entry = func.getBody().front();
  Location loc = module.getLoc();
  SimtBuilder sb(b, loc, p, s, target);
  sb.setCaptured(entry.getArguments().drop_front(4));
  sb.build(entry.getArgument(0), entry.getArgument(1), entry.getArgument(2),
           entry.getArgument(3));
  mlir::gpu::ReturnOp::create(b, loc);

  KernelLaunch launch;
  launch.grid = {ceilDiv(p.lq, s.blockQ), p.headsQ, p.batch};
  launch.block = {threads, 1, 1};
  launch.sharedBytes = sharedBytesOf(p, s);
  return launch;
}

FailureOr<SimtDecodeKernels> buildSimtDecodeKernels(
    OpBuilder &b, mlir::gpu::GPUModuleOp module, StringRef partialName,
    StringRef combineName, const AttentionProblem &p,
    const SimtAttentionSchedule &s, const ::tcc::TargetDesc &target) {
  std::string why;
  if (!simtAttentionScheduleValid(p, s, target, why))
    return module.emitError(why), failure();
  if (s.chunkTiles < 1)
    return module.emitError("SIMT attention: the split-K form needs "
                            "chunkTiles >= 1"),
           failure();
  loadTemplateDialects(b.getContext());
  int64_t chunks = ceilDiv(ceilDiv(p.lk, s.blockKV), s.chunkTiles);
  int64_t nQTiles = ceilDiv(p.lq, s.blockQ);
  if (nQTiles * chunks > std::numeric_limits<int32_t>::max())
    return module.emitError("SIMT attention: too many blocks"), failure();
  Type f32 = b.getF32Type();
  // The partial results keep the padded head size (16-byte rows).
  int64_t dPad = paddedValueDim(p);
  Type partT = MemRefType::get({p.batch, p.headsQ, chunks, p.lq, dPad}, f32);
  Type statsT = MemRefType::get({p.batch, p.headsQ, chunks, p.lq, 2}, f32);
  // The combine kernel reads the same buffers with batch and head merged,
  // and O so too where its strides allow (else the 4-D tensor).
  int64_t bh = p.batch * p.headsQ;
  Type partFlatT = MemRefType::get({bh, chunks, p.lq, dPad}, f32);
  Type statsFlatT = MemRefType::get({bh, chunks, p.lq, 2}, f32);
  SmallVector<int64_t, 4> os = attentionOperandStrides(p, AttentionOperand::O);
  std::optional<int64_t> oBH = mergedStride(p.batch, os[0], p.headsQ, os[1]);
  Type oFlatT = oBH ? Type(stridedType({bh, p.lq, p.dimV()}, {*oBH, os[2], 1},
                                       p.elemType))
                    : Type(attentionOperandType(p, AttentionOperand::O));

  OpBuilder::InsertionGuard g(b);
  Location loc = module.getLoc();
  int64_t threads = threadsOf(s);
  SmallVector<Type> args{attentionOperandType(p, AttentionOperand::Q),
                         attentionOperandType(p, AttentionOperand::K),
                         attentionOperandType(p, AttentionOperand::V), partT,
                         statsT};
  llvm::append_range(args, p.captured);
  auto partial = createKernelFunc(b, module, partialName, args, threads);
  if (s.minBlocks > 0 && target.isNvidia())
    partial->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                     b.getI32IntegerAttr(s.minBlocks));
  Block &pe = partial.getBody().front();
  {
    SimtBuilder sb(b, loc, p, s, target);
    sb.setCaptured(pe.getArguments().drop_front(5));
    sb.build(pe.getArgument(0), pe.getArgument(1), pe.getArgument(2),
             pe.getArgument(3), pe.getArgument(4));
    mlir::gpu::ReturnOp::create(b, loc);
  }

  constexpr int64_t kCombineThreads = 128;
  auto combine = createKernelFunc(
      b, module, combineName, {partFlatT, statsFlatT, oFlatT}, kCombineThreads);
  Block &ce = combine.getBody().front();
  {
    SimtBuilder sb(b, loc, p, s, target);
    sb.buildCombine(ce.getArgument(0), ce.getArgument(1), ce.getArgument(2),
                    chunks, kCombineThreads);
    mlir::gpu::ReturnOp::create(b, loc);
  }

  SimtDecodeKernels k;
  k.chunks = chunks;
  k.partial.grid = {nQTiles * chunks, p.headsQ, p.batch};
  k.partial.block = {threads, 1, 1};
  k.partial.sharedBytes = sharedBytesOf(p, s);
  k.combine.grid = {ceilDiv(bh * p.lq * (dPad / 4), kCombineThreads), 1, 1};
  k.combine.block = {kCombineThreads, 1, 1};
  k.combine.sharedBytes = 0;
  k.partialOBytes = uint64_t(bh * chunks * p.lq * dPad) * 4;
  k.partialStatsBytes = uint64_t(bh * chunks * p.lq * 2) * 4;
  return k;
}

} // namespace tcc::gpu
