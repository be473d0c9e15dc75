//===- AttentionCommon.h - what the attention templates share ---*- C++ -*-===//
//
// The mma.sync template (AttentionKernel.cpp) and the wgmma template
// (WgmmaAttention.cpp) differ in how they feed the tensor cores, not in the
// algebra around them: the f32 arithmetic of the online softmax, the mask's
// linear constraints evaluated at tile corners, the result of a row with
// nothing kept. That part lives here, once.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_ATTENTIONCOMMON_H
#define TCC_COMPILER_GPU_ATTENTIONCOMMON_H

#include "compiler/gpu/AttentionKernel.h"
#include "compiler/gpu/TemplateUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdlib>
#include <optional>
#include <utility>

namespace tcc::gpu {

constexpr double kLog2E = 1.4426950408889634;

/// Bounds of a schedule's tile sizes and key tiles a chunk, checked before
/// any size is computed from them (a user's schedule may hold any integer):
/// far above what shared memory and registers allow, and key tile indices
/// stay within 32 bits (--gpu-index-bits 32).
constexpr int64_t kMaxTile = 1024;
constexpr int64_t kMaxChunkTiles = int64_t(1) << 30;

/// Whether the key loop's bounds leave no fully masked tile inside: true for
/// at most one lower and one upper bound on k, both of slope |a / b| <= 1
/// and, if both, of the same slope (causal, sliding windows, key limits).
/// Each row keeps an interval of keys that moves by at most one key a row,
/// so the rows' intervals cover [first, last] without gaps. Otherwise the
/// loop checks each tile; correctness depends on neither (a fully masked
/// tile contributes nothing).
inline bool maskBoundsExact(llvm::ArrayRef<MaskConstraint> mask) {
  const MaskConstraint *lower = nullptr, *upper = nullptr;
  for (const MaskConstraint &mc : mask) {
    if (mc.b == 0 || std::llabs(mc.a) > std::llabs(mc.b))
      return false;
    const MaskConstraint *&slot = mc.b > 0 ? lower : upper;
    if (slot)
      return false;
    slot = &mc;
  }
  return !lower || !upper || lower->a * upper->b == upper->a * lower->b;
}

/// The memref type of `shape` with `strides` (elements) from `offset`: the
/// identity layout when they are the packed row-major ones from 0 (the kernels'
/// PTX is then what it was before strides existed), a static strided layout
/// otherwise.
inline mlir::MemRefType stridedType(llvm::ArrayRef<int64_t> shape,
                                    llvm::ArrayRef<int64_t> strides,
                                    mlir::Type elem, int64_t offset = 0) {
  int64_t packed = 1;
  bool identity = offset == 0;
  for (size_t i = shape.size(); i-- > 0;) {
    identity &= strides[i] == packed;
    packed *= shape[i];
  }
  if (identity)
    return mlir::MemRefType::get(shape, elem);
  return mlir::MemRefType::get(
      shape, elem,
      mlir::StridedLayoutAttr::get(elem.getContext(), offset, strides));
}

/// The stride of one axis of size nOuter * nInner that indexes two axes
/// (nOuter of stride sOuter around nInner of stride sInner) as outer *
/// nInner + inner, if such a stride exists.
inline std::optional<int64_t> mergedStride(int64_t nOuter, int64_t sOuter,
                                           int64_t nInner, int64_t sInner) {
  if (nInner == 1)
    return sOuter;
  if (nOuter == 1 || sOuter == nInner * sInner)
    return sInner;
  return std::nullopt;
}

/// TemplateBuilder plus the arithmetic both attention builders use. `q0`
/// and `qLast` (the block's first and last query row) are set by the
/// builder before it evaluates constraints.
class AttentionArith : public TemplateBuilder {
public:
  AttentionArith(mlir::OpBuilder &b, mlir::Location loc,
                 const AttentionProblem &p)
      : TemplateBuilder(b, loc), p(p), f32(b.getF32Type()),
        i32(b.getI32Type()) {}

  mlir::Value cstF(double v) {
    return mlir::arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
  }
  mlir::Value toI32(mlir::Value x) {
    return mlir::arith::IndexCastOp::create(b, loc, i32, x);
  }
  /// floor(x / d) and ceil(x / d) of a signed index x, for constant d > 0.
  mlir::Value floorDiv(mlir::Value x, int64_t d) {
    if (d == 1)
      return x;
    mlir::Value neg = cmp(mlir::arith::CmpIPredicate::slt, x, cst(0));
    mlir::Value adj = select(neg, add(x, -(d - 1)), x);
    return mlir::arith::DivSIOp::create(b, loc, adj, cst(d));
  }
  mlir::Value ceilDivS(mlir::Value x, int64_t d) {
    return floorDiv(add(x, d - 1), d);
  }
  /// a*q + b*k + c of `mc` at the corner of rows [q0, qLast] x keys
  /// [k0, kLast] where it is largest (`largest`) or smallest: a linear
  /// function takes its extremes over a rectangle at corners.
  mlir::Value constraintAt(const MaskConstraint &mc, mlir::Value k0,
                           mlir::Value kLast, bool largest) {
    mlir::Value v = cst(mc.c);
    if (mc.a)
      v = add(v, mul((mc.a > 0) == largest ? qLast : q0, mc.a));
    if (mc.b)
      v = add(v, mul((mc.b > 0) == largest ? kLast : k0, mc.b));
    return v;
  }

  /// The key tiles [start, end) of `blockKV` keys that can hold a kept key
  /// for some row of [q0, qLast], out of `nKTiles`: each constraint with
  /// b != 0 bounds k on one side, loosest at the row where a*q + c is
  /// largest.
  std::pair<mlir::Value, mlir::Value> keyTileRange(int64_t nKTiles,
                                                   int64_t blockKV) {
    mlir::Value start = cst(0), end = cst(nKTiles);
    for (const MaskConstraint &mc : p.mask) {
      if (!mc.b)
        continue;
      mlir::Value hi =
          add(mc.a ? mul(mc.a > 0 ? qLast : q0, mc.a) : cst(0), mc.c);
      if (mc.b > 0) {
        mlir::Value kLo = ceilDivS(sub(cst(0), hi), mc.b);
        start =
            mlir::arith::MaxSIOp::create(b, loc, start, floorDiv(kLo, blockKV));
      } else {
        mlir::Value kHi = floorDiv(hi, -mc.b);
        end = mlir::arith::MinSIOp::create(b, loc, end,
                                           add(floorDiv(kHi, blockKV), 1));
      }
    }
    return {start, end};
  }

  /// Whether the key tile at k0 (blockKV keys) is partial under
  /// `constraints`: some constraint fails at its worst corner.
  mlir::Value tilePartial(llvm::ArrayRef<MaskConstraint> constraints,
                          mlir::Value k0, int64_t blockKV) {
    mlir::Value kLast = add(k0, blockKV - 1), partial;
    for (const MaskConstraint &mc : constraints)
      partial = lor(partial, cmp(mlir::arith::CmpIPredicate::slt,
                                 constraintAt(mc, k0, kLast, false), cst(0)));
    return partial;
  }
  /// The values `thenB()` builds where `cond` holds, else `elseB()`'s: one
  /// scf.if yielding `types` (a mask built only for the tiles that need it).
  llvm::SmallVector<mlir::Value>
  yieldIf(mlir::Value cond, mlir::TypeRange types,
          llvm::function_ref<llvm::SmallVector<mlir::Value>()> thenB,
          llvm::function_ref<llvm::SmallVector<mlir::Value>()> elseB) {
    auto ifOp = mlir::scf::IfOp::create(b, loc, types, cond, /*withElse=*/true);
    {
      mlir::OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      mlir::scf::YieldOp::create(b, loc, thenB());
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      mlir::scf::YieldOp::create(b, loc, elseB());
    }
    return llvm::SmallVector<mlir::Value>(ifOp.getResults());
  }

  /// `step()` for the key tile at k0 (blockKV keys), whose results replace
  /// `carried`. Where the loop bounds can leave tiles the mask keeps nothing
  /// of (constraints that interact), such a tile is skipped whole: the
  /// condition is uniform over the block, so barriers inside stay legal.
  /// A key tile whose keys p.keyKeep drops throughout is skipped too: every
  /// warp reads the tile's keep flags (a lane per key) and votes, so the
  /// condition is uniform without a barrier.
  llvm::SmallVector<mlir::Value>
  stepUnlessMasked(mlir::Value k0, int64_t blockKV, mlir::ValueRange carried,
                   llvm::function_ref<llvm::SmallVector<mlir::Value>()> step,
                   mlir::Value keyLive = {}) {
    bool keys = skipsKeys();
    if (!keys && (p.mask.empty() || maskBoundsExact(p.mask)))
      return step();
    mlir::Value kLast = add(k0, blockKV - 1);
    mlir::Value dead;
    if (!maskBoundsExact(p.mask))
      for (const MaskConstraint &mc : p.mask) {
        mlir::Value vmax = constraintAt(mc, k0, kLast, /*largest=*/true);
        dead = lor(dead, cmp(mlir::arith::CmpIPredicate::slt, vmax, cst(0)));
      }
    if (keys)
      dead = lor(dead, keyLive ? notI1(keyLive) : noKeyKept(k0, blockKV));
    llvm::SmallVector<mlir::Type> types;
    for (mlir::Value c : carried)
      types.push_back(c.getType());
    auto ifOp = mlir::scf::IfOp::create(b, loc, types, dead, /*withElse=*/true);
    mlir::OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    mlir::scf::YieldOp::create(b, loc, carried);
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    mlir::scf::YieldOp::create(b, loc, step());
    return llvm::SmallVector<mlir::Value>(ifOp.getResults());
  }

  /// `inRange` (whether a key tile is in the loop's range), and, where
  /// p.keyKeep drops keys, whether it keeps a key of tile `tile`: a tile it
  /// drops throughout is neither copied nor computed (skipping the MMAs
  /// alone leaves the loop waiting for the copies).
  mlir::Value copyWanted(mlir::Value inRange, mlir::Value tile,
                         int64_t blockKV) {
    if (!skipsKeys())
      return inRange;
    return land(inRange, warpAny(laneKeeps(tile, blockKV)));
  }

  /// Whether run-time key skipping applies (p.keyKeep, one batch and head
  /// for the block's rows).
  bool skipsKeys() const { return p.keyKeep && keepBatch && keepHead; }

  /// The lane's part of "tile `tile` keeps a key": p.keyKeep over keys
  /// k0 + lane + Wj of the tile, W the warp's (wave's) lanes (keys past lk
  /// count as dropped). Loads only: warpAny() combines the lanes.
  mlir::Value laneKeeps(mlir::Value tile, int64_t blockKV) {
    return laneKeepFlags(tile, blockKV, /*withAll=*/false).first;
  }
  /// The lane's parts of "tile `tile` keeps a key" and, with `withAll`,
  /// "keeps every key" (keys past lk count as dropped for the first, kept
  /// for the second: a tile constraint drops them), from one set of loads.
  /// The second is built only where it is used: ptxas (the CUDA 13 JIT on
  /// the H100) miscompiled the first or of the lane's "any" into an and
  /// where the "every" chain beside it fed only an unused vote.all, and
  /// tiles that kept some of their first 2W keys were skipped (session 46).
  std::pair<mlir::Value, mlir::Value>
  laneKeepFlags(mlir::Value tile, int64_t blockKV, bool withAll) {
    int64_t lanes = waveSize;
    mlir::Value laneI32 = toI32(mlir::arith::RemUIOp::create(
        b, loc, mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x),
        cst(lanes)));
    mlir::Value k0I32 = toI32(mul(tile, blockKV)), any, all;
    for (int64_t j = 0; j * lanes < blockKV; ++j) {
      mlir::Value off = add(laneI32, j * lanes);
      mlir::Value k = add(k0I32, off);
      mlir::Value in = cmp(mlir::arith::CmpIPredicate::slt, k, cstI32(p.lk));
      if ((j + 1) * lanes > blockKV)
        in = land(in,
                  cmp(mlir::arith::CmpIPredicate::slt, off, cstI32(blockKV)));
      mlir::Value keep = p.keyKeep(b, loc, keepBatch, keepHead, k, captured);
      any = lor(any, land(in, keep));
      if (withAll)
        all = land(all, lor(notI1(in), keep));
    }
    return {any, all};
  }
  /// Whether every lane of the warp holds `laneFlag` (uniform).
  mlir::Value warpAll(mlir::Value laneFlag) {
    if (amdgcn)
      return ballotIsZero(notI1(laneFlag));
    return vote("llvm.nvvm.vote.all.sync", laneFlag);
  }
  /// Whether no lane of the wave holds `flag` (AMD: the wave's ballot,
  /// uniform; the templates call it with every lane active).
  mlir::Value ballotIsZero(mlir::Value flag) {
    mlir::Type i64 = b.getI64Type();
    mlir::Value mask =
        mlir::LLVM::CallIntrinsicOp::create(
            b, loc, i64, b.getStringAttr("llvm.amdgcn.ballot.i64"),
            mlir::ValueRange{flag})
            .getResult(0);
    return cmp(mlir::arith::CmpIPredicate::eq, mask,
               mlir::arith::ConstantIntOp::create(b, loc, i64, 0));
  }
  /// `laneFlag` voted over the full warp with `intrinsic` (uniform).
  mlir::Value vote(llvm::StringRef intrinsic, mlir::Value laneFlag) {
    mlir::Value all = mlir::arith::ConstantIntOp::create(b, loc, i32, -1);
    return mlir::LLVM::CallIntrinsicOp::create(b, loc, b.getI1Type(),
                                               b.getStringAttr(intrinsic),
                                               mlir::ValueRange{all, laneFlag})
        .getResult(0);
  }

  /// The key-skipping flags a pipelined key loop of `stages` stages carries
  /// (empty without skipping): for tiles j..j+S-2 whether each keeps a key
  /// (and, with p.keyKeepApply, whether it keeps every key: its per-key
  /// mask is then left out), and the lane's flags of tile j+S-1, read an
  /// iteration ahead. `live` gets the prologue tiles' liveness, for their
  /// copies.
  llvm::SmallVector<mlir::Value>
  keyFlagsPrologue(mlir::Value tStart, int64_t blockKV, int64_t stages,
                   llvm::SmallVectorImpl<mlir::Value> &live) {
    llvm::SmallVector<mlir::Value> liveF, allF;
    if (!skipsKeys())
      return {};
    bool withAll = p.keyKeepApply;
    for (int64_t st = 0; st + 1 < stages; ++st) {
      auto [any, every] = laneKeepFlags(add(tStart, st), blockKV, withAll);
      liveF.push_back(warpAny(any));
      if (withAll)
        allF.push_back(warpAll(every));
    }
    live.assign(liveF.begin(), liveF.end());
    auto [any, every] =
        laneKeepFlags(add(tStart, stages - 1), blockKV, withAll);
    llvm::SmallVector<mlir::Value> out(liveF);
    if (p.keyKeepApply)
      out.append(allF.begin(), allF.end());
    out.push_back(any);
    if (p.keyKeepApply)
      out.push_back(every);
    return out;
  }
  /// One iteration's use of the carried `flags` (keyFlagsPrologue's
  /// layout), `next` the tile copied this iteration: its liveness
  /// (`liveNext`), the current tile's (`liveNow`) and whether it keeps every
  /// key (`allNow`, null without keyKeepApply), and the flags to yield.
  struct KeyFlagStep {
    mlir::Value liveNow, allNow, liveNext;
    llvm::SmallVector<mlir::Value> yield;
  };
  KeyFlagStep keyFlagsStep(mlir::ValueRange flags, mlir::Value next,
                           int64_t blockKV, int64_t stages) {
    KeyFlagStep r;
    if (flags.empty())
      return r;
    int64_t n = stages - 1;
    bool withAll = p.keyKeepApply;
    mlir::ValueRange live = flags.take_front(n);
    mlir::ValueRange all = withAll ? flags.slice(n, n) : mlir::ValueRange();
    mlir::Value laneAny = flags[withAll ? 2 * n : n];
    r.liveNow = live.front();
    r.liveNext = warpAny(laneAny);
    mlir::Value allNext;
    if (withAll) {
      r.allNow = all.front();
      allNext = warpAll(flags[2 * n + 1]);
    }
    auto [any, every] = laneKeepFlags(add(next, 1), blockKV, withAll);
    llvm::append_range(r.yield, live.drop_front());
    r.yield.push_back(r.liveNext);
    if (withAll) {
      llvm::append_range(r.yield, all.drop_front());
      r.yield.push_back(allNext);
    }
    r.yield.push_back(any);
    if (withAll)
      r.yield.push_back(every);
    return r;
  }

  /// Whether any lane of the warp holds `laneFlag` (uniform over the warp).
  mlir::Value warpAny(mlir::Value laneFlag) {
    if (amdgcn)
      return notI1(ballotIsZero(laneFlag));
    return vote("llvm.nvvm.vote.any.sync", laneFlag);
  }
  mlir::Value notI1(mlir::Value x) {
    return mlir::arith::XOrIOp::create(
        b, loc, x,
        mlir::arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  }
  /// Whether p.keyKeep drops every key of the tile at k0 (uniform over the
  /// warp; the loads' latency is on the critical path: a loop that reads
  /// the flags a tile ahead passes stepUnlessMasked the tile's liveness).
  mlir::Value noKeyKept(mlir::Value k0, int64_t blockKV) {
    return notI1(warpAny(laneKeeps(
        mlir::arith::DivUIOp::create(b, loc, k0, cst(blockKV)), blockKV)));
  }

  // f32 arithmetic.
  mlir::Value fadd(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddFOp::create(b, loc, x, y);
  }
  mlir::Value fsub(mlir::Value x, mlir::Value y) {
    return mlir::arith::SubFOp::create(b, loc, x, y);
  }
  mlir::Value fmul(mlir::Value x, mlir::Value y) {
    return mlir::arith::MulFOp::create(b, loc, x, y);
  }
  mlir::Value fmax(mlir::Value x, mlir::Value y) {
    return mlir::arith::MaxNumFOp::create(b, loc, x, y);
  }
  mlir::Value fma(mlir::Value x, mlir::Value y, mlir::Value z) {
    return mlir::LLVM::FMAOp::create(b, loc, x, y, z);
  }
  mlir::Value exp2(mlir::Value x) {
    // AMD: v_exp_f32 (about 1 ulp; denormal results flush, as ex2.approx.ftz
    // does), not llvm.exp2, whose expansion rescales for denormals.
    if (amdgcn)
      return mlir::LLVM::CallIntrinsicOp::create(
                 b, loc, f32, b.getStringAttr("llvm.amdgcn.exp2.f32"),
                 mlir::ValueRange{x})
          .getResult(0);
    return buildExp2Approx(b, loc, x);
  }
  mlir::Value shuffleXor(mlir::Value x, int32_t offset) {
    return mlir::gpu::ShuffleOp::create(b, loc, x, offset, waveSize,
                                        mlir::gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }

  /// 1 / l, or what a row with l = 0 (nothing kept) gets by the policy.
  mlir::Value inverseSum(mlir::Value l) {
    // l = 0 only when the row kept nothing: O is 0 there, and 0 * (1/0)
    // is NaN, which is the NaN policy; the zero policy selects 0.
    mlir::Value zeroF = cstF(0.0);
    mlir::Value inv = mlir::arith::DivFOp::create(b, loc, cstF(1.0), l);
    if (p.maskedRows == MaskedRowPolicy::Zero)
      inv = select(mlir::arith::CmpFOp::create(
                       b, loc, mlir::arith::CmpFPredicate::OEQ, l, zeroF),
                   zeroF, inv);
    return inv;
  }

  /// The kernel's arguments for p.captured, for scoreMod.
  void setCaptured(mlir::ValueRange args) {
    captured.assign(args.begin(), args.end());
  }
  /// The score change at one score: p.scoreMod with the kernel's captured
  /// tensors.
  mlir::Value scoreMod(mlir::Value score, mlir::Value batch, mlir::Value head,
                       mlir::Value q, mlir::Value k) {
    return p.scoreMod(b, loc, score, batch, head, q, k, captured);
  }

protected:
  const AttentionProblem &p;
  mlir::Type f32, i32;
  /// The lanes of a warp (AMD: a wavefront) and whether votes and exp2 are
  /// AMD's (ROCDL) rather than NVVM's; the tensor-core templates keep the
  /// NVIDIA defaults, the SIMT template sets them from its target.
  int32_t waveSize = 32;
  bool amdgcn = false;
  mlir::Value q0, qLast;
  /// The batch and head (i32) p.keyKeep reads for the block's rows; null
  /// when the block's rows span heads it distinguishes (no key skipping).
  mlir::Value keepBatch, keepHead;
  /// Whether the key tile being built keeps every key (uniform i1; null:
  /// not known): its per-key mask (p.keyKeepApply) is then not built.
  mlir::Value keyAllKept;
  /// The kernel's arguments for p.captured (set by the builder).
  llvm::SmallVector<mlir::Value> captured;
};

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_ATTENTIONCOMMON_H
