//===- GpuColumnChains.cpp - a chain along a non-innermost loop on GPUs ---===//
//
// A reduction chain along a loop that is not the innermost (softmax over the
// channels of [N, C, H, W], over axis 1 of [B, L, D]) has no row kernel: its
// positions along the chain are a stride apart. Here a column (the positions
// along the chain's loop at fixed other loops) belongs to one lane of one to
// eight warps: the lanes of a warp take consecutive columns, so that every
// load of a warp reads consecutive addresses, and the warps of a column
// consecutive slices of it. The whole chain is one launch; elementwise values
// are recomputed where they are read instead of being written to memory.
//
//===----------------------------------------------------------------------===//
#include "passes/BufferUtils.h"
#include "passes/ExpForm.h"
#include "passes/GpuUtils.h"
#include "passes/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/bit.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUCOLUMNCHAINS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc::gpuutil;
using mlir::tcc::rootOf;

namespace {

/// Warps a block at least: a column's warps times the column tiles a block
/// holds (up to 32 warps where a column takes them all).
constexpr int64_t kWarps = 8;
/// Threads a launch aims for: a full H100 or H200 (132 multiprocessors of
/// 2048), so that enough loads are in flight to hide memory's latency.
constexpr int64_t kTargetThreads = 132 * 2048;
/// Positions of a column a thread reads before combining them (independent
/// loads in flight).
constexpr int64_t kUnroll = 4;
/// The fewest bytes of a thread's slice of a column for which a max and the
/// sum of exponentials after it share one pass (see emitColumns).
constexpr int64_t kPairSliceBytes = 128;

enum class Kind {
  Full,   ///< elementwise over the chain's loops
  Reduce, ///< reduces the chain's loop
  Column  ///< elementwise over the columns (the chain's loop of extent 1)
};

/// Values of one position made while emitting it: recomputed elementwise
/// results (by root buffer) and loads (by view and indexing map).
struct Cache {
  DenseMap<Value, Value> full;
  DenseMap<std::pair<Value, AffineMap>, Value> loads;
};

struct Step {
  linalg::GenericOp op;
  Kind kind;
  Operation *combiner = nullptr;
  TypedAttr neutral;
  /// A column op whose loops leave out the chain's (a reduction's result
  /// without keepdims, cast): its indices are the column's less that one.
  bool dropsAxis = false;
};

SmallVector<int64_t> withoutUnitDims(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> out;
  for (int64_t n : shape)
    if (n != 1)
      out.push_back(n);
  return out;
}

struct TccGpuColumnChains
    : mlir::tcc::impl::TccGpuColumnChainsBase<TccGpuColumnChains> {
  using Base::Base;

  SmallVector<int64_t> ranges;
  /// The chain's loops: `axes` consecutive loops from `axis` (a mean over
  /// H and W of NHWC is one chain of H·W positions).
  unsigned axis = 0, axes = 1;
  bool onAxis(unsigned d) const { return d >= axis && d < axis + axes; }
  int64_t outer = 1, length = 1, inner = 1;
  SmallVector<Step> steps;
  /// Root buffer -> the fill that initialises it (a reduction's output).
  /// (A fill is a linalg.fill or a generic yielding its scalar input.)
  DenseMap<Value, std::pair<Operation *, Value>> fills;
  /// Root buffer -> the step writing it.
  DenseMap<Value, unsigned> writer;

  /// Whether `map` reads the position of its own loop indices: its
  /// results, less constants (0, at unit dims), are its op's `loops` of
  /// extent > 1 in order (without the chain's, `column`).
  bool ownPosition(AffineMap map, ArrayRef<int64_t> loops, bool column) {
    SmallVector<unsigned> dims;
    for (AffineExpr e : map.getResults()) {
      if (auto c = dyn_cast<AffineConstantExpr>(e)) {
        if (c.getValue() != 0)
          return false;
        continue;
      }
      auto d = dyn_cast<AffineDimExpr>(e);
      if (!d)
        return false;
      if (loops[d.getPosition()] != 1)
        dims.push_back(d.getPosition());
    }
    SmallVector<unsigned> want;
    // (A column op may have no loop for the chain's axes at all.)
    bool skipAxis = column && loops.size() == ranges.size();
    for (unsigned d = 0; d < loops.size(); ++d)
      if (loops[d] != 1 && !(skipAxis && onAxis(d)))
        want.push_back(d);
    return dims == want;
  }

  /// The scalar a generic writes everywhere (a fill generalized: its one
  /// input not a buffer, yielded as is), or null.
  static Value filledScalar(linalg::GenericOp g) {
    if (g.getNumDpsInputs() != 1 || g.getNumReductionLoops() != 0)
      return Value();
    Value in = g.getDpsInputOperand(0)->get();
    auto yield = cast<linalg::YieldOp>(g.getBlock()->getTerminator());
    if (isa<ShapedType>(in.getType()) ||
        yield.getOperand(0) != g.getBlock()->getArgument(0))
      return Value();
    return in;
  }

  /// Whether the kernel is one chain this pass takes; fills `steps`.
  bool analyze(func::FuncOp func) {
    // (The pass object runs on one function after another.)
    ranges.clear();
    steps.clear();
    fills.clear();
    writer.clear();
    axis = 0;
    axes = 1;
    Block &body = func.getBody().front();
    SmallVector<linalg::GenericOp> generics;
    for (Operation &op : body.without_terminator()) {
      if (isa<arith::ConstantOp, memref::AllocOp>(op))
        continue;
      if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(op)) {
        // Views that add or drop unit dims only: a column value read
        // through one is still the column's.
        auto from = cast<MemRefType>(op.getOperand(0).getType());
        auto to = cast<MemRefType>(op.getResult(0).getType());
        if (withoutUnitDims(from.getShape()) != withoutUnitDims(to.getShape()))
          return false;
        continue;
      }
      if (auto f = dyn_cast<linalg::FillOp>(op)) {
        if (f.getOutputs().size() != 1 ||
            !fills
                 .try_emplace(
                     rootOf(f.getOutputs()[0]),
                     std::make_pair(f.getOperation(), f.getInputs()[0]))
                 .second)
          return false;
        continue;
      }
      auto g = dyn_cast<linalg::GenericOp>(op);
      if (!g || !g.hasPureBufferSemantics() || g.getNumDpsInits() != 1)
        return false;
      if (Value scalar = filledScalar(g)) {
        if (!fills
                 .try_emplace(rootOf(g.getDpsInitOperand(0)->get()),
                              std::make_pair(g.getOperation(), scalar))
                 .second)
          return false;
        continue;
      }
      generics.push_back(g);
    }
    // The chain's loops: a reduction's, which reduces consecutive ones.
    for (linalg::GenericOp g : generics) {
      if (g.getNumReductionLoops() == 0)
        continue;
      ranges = g.getStaticLoopRanges();
      SmallVector<utils::IteratorType> iters = g.getIteratorTypesArray();
      SmallVector<unsigned> reduced;
      for (unsigned d = 0; d < iters.size(); ++d)
        if (iters[d] == utils::IteratorType::reduction && ranges[d] != 1)
          reduced.push_back(d);
      if (reduced.empty() ||
          reduced.back() - reduced.front() + 1 != reduced.size())
        return false;
      axis = reduced.front();
      axes = reduced.size();
      break;
    }
    if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic))
      return false;
    outer = length = inner = 1;
    for (unsigned d = 0; d < ranges.size(); ++d)
      (d < axis ? outer : onAxis(d) ? length : inner) *= ranges[d];
    // Rows (the chain's loop innermost) are tcc-gpu-row-fusion's, but for
    // those it leaves that are long enough to split over blocks; few
    // columns would leave lanes idle.
    bool longRows = inner == 1 && length >= minRowLength;
    if ((inner < minColumns && !longRows) || length < 2)
      return false;
    // The blocks (32 columns each at least, or a part of a row) fit the
    // grid's x limit.
    constexpr int64_t kMostBlocks = (int64_t(1) << 31) - 1;
    int64_t blocksPerOuter = longRows ? kTargetThreads / (kWarp * kWarps)
                                      : (inner + kWarp - 1) / kWarp;
    if (outer > kMostBlocks / blocksPerOuter)
      return false;
    SmallVector<int64_t> columnRanges = ranges, columnLoops = ranges;
    for (unsigned d = axis; d < axis + axes; ++d)
      columnRanges[d] = 1;
    columnLoops.erase(columnLoops.begin() + axis,
                      columnLoops.begin() + axis + axes);
    for (linalg::GenericOp g : generics) {
      Step s{g, Kind::Full};
      SmallVector<int64_t> r = g.getStaticLoopRanges();
      SmallVector<utils::IteratorType> iters = g.getIteratorTypesArray();
      bool reduces = g.getNumReductionLoops() != 0;
      if (r == ranges && reduces) {
        for (unsigned d = 0; d < iters.size(); ++d)
          if ((iters[d] == utils::IteratorType::reduction) != onAxis(d))
            return false;
        SmallVector<Operation *> combiners;
        if (!matchReduction(g.getRegionOutputArgs(), 0, combiners) ||
            combiners.size() != 1 || combiners[0]->getNumOperands() != 2)
          return false;
        std::optional<TypedAttr> neutral =
            arith::getNeutralElement(combiners[0]);
        if (!neutral)
          return false;
        s = Step{g, Kind::Reduce, combiners[0], *neutral};
      } else if (!reduces &&
                 (r == ranges || r == columnRanges || r == columnLoops)) {
        s.kind = r == ranges ? Kind::Full : Kind::Column;
        s.dropsAxis = r == columnLoops && r != columnRanges;
        // Elementwise: the output's old value is not read.
        if (!g.getRegionOutputArgs()[0].use_empty())
          return false;
      } else {
        return false;
      }
      OpOperand *init = g.getDpsInitOperand(0);
      if (!g.getMatchingIndexingMap(init).isProjectedPermutation(true) ||
          !ownPosition(g.getMatchingIndexingMap(init), r, s.kind != Kind::Full))
        return false;
      Value out = rootOf(init->get());
      if (!writer.try_emplace(out, steps.size()).second)
        return false;
      // A fill initialises a reduction's output and nothing else.
      if (s.kind != Kind::Reduce && fills.count(out))
        return false;
      for (OpOperand *in : g.getDpsInputOperands()) {
        AffineMap m = g.getMatchingIndexingMap(in);
        if (!m.isProjectedPermutation(true))
          return false;
        auto w = writer.find(rootOf(in->get()));
        if (w == writer.end()) {
          // Read from memory: nothing in the kernel may write it later.
          continue;
        }
        const Step &from = steps[w->second];
        // A kernel result written position by position is not read back
        // (other threads write it); values made in the kernel are read at
        // the reader's own position, or column.
        bool fromFull = from.kind == Kind::Full;
        if (fromFull &&
            (isa<BlockArgument>(w->first) || s.kind == Kind::Column))
          return false;
        if (!ownPosition(m, r, !fromFull))
          return false;
      }
      steps.push_back(s);
    }
    // Inputs read from memory are not written by the kernel afterwards.
    for (Step &s : steps)
      for (OpOperand *in : s.op.getDpsInputOperands())
        if (auto w = writer.find(rootOf(in->get()));
            w != writer.end() && !steps[w->second].op->isBeforeInBlock(s.op))
          return false;
    // Every fill initialises a reduction's output (the launch writes no
    // other).
    for (auto &[root, fill] : fills) {
      auto w = writer.find(root);
      if (w == writer.end() || steps[w->second].kind != Kind::Reduce)
        return false;
    }
    return llvm::any_of(steps,
                        [](const Step &s) { return s.kind == Kind::Reduce; });
  }

  /// The steps (i, j) one pass over the slice takes together: a max (or
  /// min) i from an infinite neutral and the float sum j, the next
  /// reduction after it (the ops between are elementwise).
  std::optional<std::pair<unsigned, unsigned>> streamPair() const {
    for (unsigned i = 0; i < steps.size(); ++i) {
      if (steps[i].kind != Kind::Reduce)
        continue;
      auto neutral = dyn_cast<FloatAttr>(steps[i].neutral);
      if (!isa<arith::MaximumFOp, arith::MinimumFOp>(steps[i].combiner) ||
          !neutral || !neutral.getValue().isInfinity())
        return std::nullopt;
      for (unsigned j = i + 1; j < steps.size(); ++j)
        if (steps[j].kind == Kind::Reduce)
          return isa<arith::AddFOp>(steps[j].combiner)
                     ? std::optional(std::make_pair(i, j))
                     : std::nullopt;
      return std::nullopt;
    }
    return std::nullopt;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr("tcc.kernel") || func.isExternal() || !analyze(func))
      return;
    generate(func);
  }

  void generate(func::FuncOp func) {
    Block &body = func.getBody().front();
    Location loc = func.getLoc();
    OpBuilder b(body.getTerminator());

    // What the emitters below read, set for the launch being built.
    gpu::TerminatorOp end;
    Value lane, warp, zero;
    /// The thread's positions along the chain: [cBegin, cEnd) by `stride`.
    Value cBegin, cEnd;
    int64_t stride = 1;
    SmallVector<Value> outerIvs, innerIvs;
    SmallVector<int64_t> outerSizes(ranges.begin(), ranges.begin() + axis),
        axisSizes(ranges.begin() + axis, ranges.begin() + axis + axes),
        innerSizes(ranges.begin() + axis + axes, ranges.end());
    auto ivsAt = [&](Value c) {
      SmallVector<Value> ivs(outerIvs);
      if (axes == 1)
        ivs.push_back(c);
      else
        ivs.append(delinearize(b, loc, c, axisSizes));
      ivs.append(innerIvs);
      return ivs;
    };
    // Each reduction's shared array in the launch being built, by step.
    DenseMap<unsigned, Value> sharedOf;
    DenseMap<Value, Value> columnValues;   // root buffer -> this column's value
    DenseMap<Value, unsigned> virtualFull; // root alloc -> its Full step
    for (unsigned i = 0; i < steps.size(); ++i)
      if (steps[i].kind == Kind::Full &&
          !isa<BlockArgument>(rootOf(steps[i].op.getDpsInitOperand(0)->get())))
        virtualFull[rootOf(steps[i].op.getDpsInitOperand(0)->get())] = i;

    // The value `g` computes at loop indices `ivs` (`acc`: a reduction's
    // running value), its inputs read or recomputed; `cache` holds the
    // values of this position. `reduced` (with `acc`) receives what the
    // combiner `combiner` folds into the running value at this position.
    std::function<Value(linalg::GenericOp, ArrayRef<Value>, Value, Cache &,
                        Operation *, Value *)>
        evaluate = [&](linalg::GenericOp g, ArrayRef<Value> ivs, Value acc,
                       Cache &cache, Operation *combiner = nullptr,
                       Value *reduced = nullptr) -> Value {
      IRMapping map;
      Block *gb = g.getBlock();
      for (OpOperand *in : g.getDpsInputOperands()) {
        Value root = rootOf(in->get());
        Value v;
        if (auto c = columnValues.find(root); c != columnValues.end()) {
          v = c->second;
        } else if (auto f = virtualFull.find(root); f != virtualFull.end()) {
          auto hit = cache.full.find(root);
          v = hit != cache.full.end()
                  ? hit->second
                  : evaluate(steps[f->second].op, ivs, Value(), cache, nullptr,
                             nullptr);
          cache.full[root] = v;
        } else {
          AffineMap m = g.getMatchingIndexingMap(in);
          Value &hit = cache.loads[{in->get(), m}];
          if (!hit)
            hit = memref::LoadOp::create(b, loc, in->get(),
                                         applyMap(b, loc, m, ivs));
          v = hit;
        }
        map.map(gb->getArgument(in->getOperandNumber()), v);
      }
      if (acc)
        map.map(g.getRegionOutputArgs()[0], acc);
      for (Operation &op : gb->without_terminator()) {
        if (auto index = dyn_cast<linalg::IndexOp>(op)) {
          map.map(index.getResult(), ivs[index.getDim()]);
          continue;
        }
        b.clone(op, map);
      }
      if (reduced) {
        Value accArg = g.getRegionOutputArgs()[0];
        *reduced = map.lookupOrDefault(combiner->getOperand(0) == accArg
                                           ? combiner->getOperand(1)
                                           : combiner->getOperand(0));
      }
      return map.lookup(
          cast<linalg::YieldOp>(gb->getTerminator()).getOperand(0));
    };

    // The thread's positions, kUnroll at a time then one by one:
    // `fn(positions, carried)` returns the new carried values. `flush`
    // runs after each iteration's positions: the stores of the last pass,
    // which come after all of its loads (the kernel's buffers may alias as
    // far as LLVM knows, so a store would keep the next position's loads
    // from starting early).
    auto overSlice =
        [&](
            ValueRange init,
            function_ref<SmallVector<Value>(ArrayRef<Value>, ValueRange)> fn,
            function_ref<void()> flush = [] {}) -> SmallVector<Value> {
      Value n = arith::SubIOp::create(b, loc, cEnd, cBegin);
      if (stride != 1)
        n = arith::DivUIOp::create(
            b, loc,
            arith::AddIOp::create(b, loc, n, cIndex(b, loc, stride - 1)),
            cIndex(b, loc, stride));
      Value mainEnd = arith::AddIOp::create(
          b, loc, cBegin,
          arith::MulIOp::create(
              b, loc,
              arith::DivUIOp::create(b, loc, n, cIndex(b, loc, kUnroll)),
              cIndex(b, loc, kUnroll * stride)));
      // (A loop without carried values comes with its yield: replaced.)
      auto bodyOf = [&](scf::ForOp loop) {
        Block *blk = loop.getBody();
        if (!blk->empty() && blk->back().hasTrait<OpTrait::IsTerminator>())
          blk->back().erase();
        b.setInsertionPointToEnd(blk);
      };
      auto unrolled = scf::ForOp::create(
          b, loc, cBegin, mainEnd, cIndex(b, loc, kUnroll * stride), init);
      {
        OpBuilder::InsertionGuard guard(b);
        bodyOf(unrolled);
        SmallVector<Value> positions;
        for (int64_t k = 0; k < kUnroll; ++k)
          positions.push_back(arith::AddIOp::create(
              b, loc, unrolled.getInductionVar(), cIndex(b, loc, k * stride)));
        SmallVector<Value> carried =
            fn(positions, unrolled.getRegionIterArgs());
        flush();
        scf::YieldOp::create(b, loc, carried);
      }
      auto rest = scf::ForOp::create(
          b, loc, mainEnd, cEnd, cIndex(b, loc, stride), unrolled.getResults());
      {
        OpBuilder::InsertionGuard guard(b);
        bodyOf(rest);
        SmallVector<Value> carried =
            fn(Value(rest.getInductionVar()), rest.getRegionIterArgs());
        flush();
        scf::YieldOp::create(b, loc, carried);
      }
      return rest.getResults();
    };
    // A store under `cond` (none: always).
    auto storeIf = [&](Value cond, Value v, Value buffer,
                       SmallVector<Value> idx) {
      if (!cond) {
        memref::StoreOp::create(b, loc, v, buffer, idx);
        return;
      }
      auto branch = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(branch.thenBlock()->getTerminator());
      memref::StoreOp::create(b, loc, v, buffer, idx);
    };
    auto columnIvsOf = [&](const Step &st) {
      SmallVector<Value> ivs = ivsAt(zero);
      if (st.dropsAxis)
        ivs.erase(ivs.begin() + axis, ivs.begin() + axis + axes);
      return ivs;
    };
    // The initial value of reduction `st`'s output at this column.
    auto initialOf = [&](Step &st) -> Value {
      OpOperand *init = st.op.getDpsInitOperand(0);
      auto fill = fills.find(rootOf(init->get()));
      if (fill != fills.end())
        return fill->second.second;
      return memref::LoadOp::create(b, loc, init->get(),
                                    applyMap(b, loc,
                                             st.op.getMatchingIndexingMap(init),
                                             columnIvsOf(st)));
    };
    // A reduction's running value over the thread's positions, from the
    // neutral value.
    auto threadPartial = [&](Step &st) -> Value {
      Value neutral = arith::ConstantOp::create(b, loc, st.neutral);
      return overSlice(
          ValueRange{neutral}, [&](ArrayRef<Value> positions, ValueRange acc) {
            Value v = acc[0];
            for (Value c : positions) {
              Cache cache;
              v = evaluate(st.op, ivsAt(c), v, cache, nullptr, nullptr);
            }
            return SmallVector<Value>{v};
          })[0];
    };

    // A max (or min) and the float sum after it whose shares are
    // exp(k·(r - v))·h, r the max and v what it reduced at the position
    // (softmax's Σ exp(x - m); ExpForm.h reads k off the emitted shares):
    // one pass over the thread's positions for both, the running sum
    // scaled by exp(k·(m_new - m_old)) where the running max moves (once
    // every kUnroll positions), instead of one pass each. Pairs combine
    // as the row kernels' blocks do (GpuRowFusion's emitStreamPair): a
    // pair without a value (its max the neutral) counts 0 where the
    // combination has one; where neither has, its sum against the neutral
    // is the unpaired sum's share.
    std::optional<std::pair<unsigned, unsigned>> pair = streamPair();
    std::optional<double> pairK;
    Type maxType, sumType, corrType;
    if (pair) {
      maxType = steps[pair->first].combiner->getResult(0).getType();
      sumType = steps[pair->second].combiner->getResult(0).getType();
      // The factor is at most 1: f32 unless the max is wider.
      corrType =
          maxType.getIntOrFloatBitWidth() > 32 ? maxType : Type(b.getF32Type());
    }
    auto toType = [&](Value v, Type t) { return castFloat(b, loc, v, t); };
    auto isEmpty = [&](Value m) {
      return arith::CmpFOp::create(
          b, loc, arith::CmpFPredicate::OEQ, m,
          arith::ConstantOp::create(b, loc, steps[pair->first].neutral));
    };
    auto sumZero = [&]() -> Value {
      return arith::ConstantOp::create(b, loc, b.getZeroAttr(sumType));
    };
    // exp(k·(m - mb)) in the sum's type.
    auto factor = [&](Value m, Value mb) {
      Value d = arith::SubFOp::create(b, loc, toType(m, corrType),
                                      toType(mb, corrType));
      Value e = math::ExpOp::create(
          b, loc,
          arith::MulFOp::create(b, loc,
                                arith::ConstantOp::create(
                                    b, loc, b.getFloatAttr(corrType, *pairK)),
                                d));
      return toType(e, sumType);
    };
    // The sum `s` against the max `mb` as a share of one against `m`.
    auto shareAt = [&](Value mb, Value s, Value m) -> Value {
      return arith::SelectOp::create(
          b, loc, isEmpty(mb),
          arith::SelectOp::create(b, loc, isEmpty(m), s, sumZero()),
          arith::MulFOp::create(b, loc, s, factor(m, mb)));
    };
    auto foldPair = [&](Value m1, Value s1, Value m2,
                        Value s2) -> std::pair<Value, Value> {
      Value m = combine(b, steps[pair->first].combiner, m1, m2);
      return {m, arith::AddFOp::create(b, loc, shareAt(m1, s1, m),
                                       shareAt(m2, s2, m))};
    };
    // The thread's running (max, sum) over its positions; nothing emitted
    // and nullopt where the shares have no exp(k·(r - v))·h form.
    auto pairLoop = [&]() -> std::optional<std::pair<Value, Value>> {
      unsigned i = pair->first, j = pair->second;
      Step &mx = steps[i], &sm = steps[j];
      Value maxRoot = rootOf(mx.op.getDpsInitOperand(0)->get());
      Operation *mark = end->getPrevNode();
      bool isMax = isa<arith::MaximumFOp>(mx.combiner);
      // The buffers whose values move with the running max: recomputed
      // for the shares, the others (a mask's select) are the max's own.
      DenseSet<Value> movesWithMax{maxRoot};
      for (unsigned q = i + 1; q < j; ++q)
        for (OpOperand *in : steps[q].op.getDpsInputOperands())
          if (movesWithMax.contains(rootOf(in->get())))
            movesWithMax.insert(
                rootOf(steps[q].op.getDpsInitOperand(0)->get()));
      bool failed = false;
      Value neutral = arith::ConstantOp::create(b, loc, mx.neutral);
      SmallVector<Value> carried = overSlice(
          ValueRange{neutral, sumZero()},
          [&](ArrayRef<Value> positions, ValueRange run) -> SmallVector<Value> {
            Value mOld = run[0], sOld = run[1];
            Value m = mOld;
            SmallVector<Value> reduced, shares;
            // (The shares read the loads the max read.)
            SmallVector<Cache> caches(positions.size());
            for (auto [c, cache] : llvm::zip(positions, caches)) {
              Value v;
              m = evaluate(mx.op, ivsAt(c), m, cache, mx.combiner, &v);
              reduced.push_back(v);
              for (Value root : movesWithMax)
                cache.full.erase(root);
            }
            columnValues[maxRoot] = m;
            for (unsigned q = i + 1; q < j; ++q)
              if (steps[q].kind == Kind::Column) {
                Cache cache;
                columnValues[rootOf(steps[q].op.getDpsInitOperand(0)->get())] =
                    evaluate(steps[q].op, columnIvsOf(steps[q]), Value(), cache,
                             nullptr, nullptr);
              }
            Value part = arith::ConstantOp::create(b, loc, sm.neutral);
            for (auto [c, cache] : llvm::zip(positions, caches)) {
              Value share;
              part =
                  evaluate(sm.op, ivsAt(c), part, cache, sm.combiner, &share);
              shares.push_back(share);
            }
            // Shares widened from f32 (the lowering's f64 sum of f32
            // exponentials) are added in f32 within the step, then once
            // to the f64 sum: each is at most 1, so 4 of them lose no
            // more than a few f32 ulps, and the f64 adds (two registers
            // each) took the row kernel to 40 registers, 6 blocks of 256
            // a multiprocessor for a grid planned at 8.
            if (positions.size() > 1 && sumType.isF64() &&
                llvm::all_of(shares, [](Value v) {
                  auto ext = v.getDefiningOp<arith::ExtFOp>();
                  return ext && ext.getIn().getType().isF32();
                })) {
              Value narrow;
              for (Value v : shares) {
                Value x = v.getDefiningOp<arith::ExtFOp>().getIn();
                narrow =
                    narrow
                        ? arith::AddFOp::create(b, loc, narrow, x).getResult()
                        : x;
              }
              part = arith::ExtFOp::create(b, loc, sumType, narrow);
            }
            std::optional<double> here =
                llvm::all_of(reduced, [](Value v) { return bool(v); })
                    ? mlir::tcc::commonExpExponent(shares, m, reduced)
                    : std::nullopt;
            if (!here || (isMax ? *here > 0 : *here < 0) ||
                (pairK && *pairK != *here)) {
              failed = true;
              return {mOld, sOld};
            }
            pairK = here;
            Value kept = arith::MulFOp::create(b, loc, sOld, factor(m, mOld));
            Value sum = arith::AddFOp::create(
                b, loc,
                arith::SelectOp::create(b, loc, isEmpty(mOld), sumZero(), kept),
                part);
            return {m, sum};
          });
      for (unsigned q = i; q < j; ++q)
        columnValues.erase(rootOf(steps[q].op.getDpsInitOperand(0)->get()));
      if (failed || !pairK) {
        for (Operation *op = end->getPrevNode(); op != mark;) {
          Operation *prev = op->getPrevNode();
          op->erase();
          op = prev;
        }
        pairK.reset();
        return std::nullopt;
      }
      return std::make_pair(carried[0], carried[1]);
    };
    // The column's (max, sum) from the combined pair (m, s) and the
    // outputs' initial values.
    auto withInitials = [&](Value m, Value s) -> std::pair<Value, Value> {
      Value total = combine(b, steps[pair->first].combiner,
                            initialOf(steps[pair->first]), m);
      return {total,
              arith::AddFOp::create(b, loc, initialOf(steps[pair->second]),
                                    shareAt(m, s, total))};
    };

    auto eraseChain = [&] {
      // The generics and fills are launches now; the views and buffers
      // that only they used go too.
      for (const Step &st : llvm::reverse(steps))
        st.op->erase();
      for (auto &[buffer, fill] : fills)
        fill.first->erase();
      bool erased = true;
      while (erased) {
        erased = false;
        for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
          if (isa<memref::AllocOp, memref::ExpandShapeOp,
                  memref::CollapseShapeOp, arith::ConstantOp>(op) &&
              op.use_empty()) {
            op.erase();
            erased = true;
          }
      }
    };
    // The kernel's results along the chain: a pass over the thread's
    // positions storing them (under `valid`).
    auto storeRows = [&](ArrayRef<unsigned> stores, Value valid) {
      if (stores.empty())
        return;
      // (value, buffer, indices) computed and not stored yet.
      SmallVector<std::tuple<Value, Value, SmallVector<Value>>> pending;
      overSlice(
          ValueRange{},
          [&](ArrayRef<Value> positions, ValueRange) {
            for (Value c : positions) {
              SmallVector<Value> ivs = ivsAt(c);
              Cache cache;
              for (unsigned i : stores) {
                linalg::GenericOp g = steps[i].op;
                OpOperand *init = g.getDpsInitOperand(0);
                pending.push_back(
                    {evaluate(g, ivs, Value(), cache, nullptr, nullptr),
                     init->get(),
                     applyMap(b, loc, g.getMatchingIndexingMap(init), ivs)});
              }
            }
            return SmallVector<Value>{};
          },
          [&] {
            std::optional<OpBuilder::InsertionGuard> guard;
            if (valid) {
              auto branch =
                  scf::IfOp::create(b, loc, valid, /*withElse=*/false);
              guard.emplace(b);
              b.setInsertionPoint(branch.thenBlock()->getTerminator());
            }
            for (auto &[v, buffer, idx] : pending)
              memref::StoreOp::create(b, loc, v, buffer, idx);
            pending.clear();
          });
    };
    auto workgroup = [&](int64_t n, Type t, int64_t lanes) {
      SmallVector<int64_t> shape{n};
      if (lanes > 1)
        shape.push_back(lanes);
      return MemRefType::get(
          shape, t, MemRefLayoutAttrInterface(),
          gpu::AddressSpaceAttr::get(func.getContext(),
                                     gpu::AddressSpace::Workgroup));
    };
    // A launch of `blocks` blocks of 32 x `warps` threads with a shared
    // array a reduction (`lanes` values a warp); the builder inside it.
    auto newLaunch = [&](int64_t blocks, int64_t warps,
                         int64_t lanes) -> gpu::LaunchOp {
      b.setInsertionPoint(body.getTerminator());
      SmallVector<Type> shared;
      SmallVector<unsigned> reduces;
      for (unsigned i = 0; i < steps.size(); ++i)
        if (steps[i].kind == Kind::Reduce) {
          shared.push_back(workgroup(
              warps, steps[i].combiner->getResult(0).getType(), lanes));
          reduces.push_back(i);
        }
      Value one = cIndex(b, loc, 1);
      auto launch = gpu::LaunchOp::create(
          b, loc, cIndex(b, loc, blocks), one, one, cIndex(b, loc, kWarp),
          cIndex(b, loc, warps), one,
          /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
          /*asyncDependencies=*/ValueRange{}, shared);
      Block &kernel = launch.getBody().front();
      b.setInsertionPointToEnd(&kernel);
      end = gpu::TerminatorOp::create(b, loc);
      b.setInsertionPoint(end);
      sharedOf.clear();
      for (auto [n, i] : llvm::enumerate(reduces))
        sharedOf[i] =
            kernel.getArgument(kernel.getNumArguments() - shared.size() + n);
      lane = launch.getThreadIds().x;
      warp = launch.getThreadIds().y;
      zero = cIndex(b, loc, 0);
      columnValues.clear();
      return launch;
    };

    // The steps whose results along the chain the kernel writes.
    auto resultSteps = [&] {
      SmallVector<unsigned> stores;
      for (unsigned i = 0; i < steps.size(); ++i)
        if (steps[i].kind == Kind::Full &&
            isa<BlockArgument>(rootOf(steps[i].op.getDpsInitOperand(0)->get())))
          stores.push_back(i);
      return stores;
    };
    // Each reduction's partial values, [columns or rows, parts], before
    // the launches.
    auto partialBuffers = [&](int64_t n, int64_t parts) {
      DenseMap<unsigned, Value> partialsOf;
      b.setInsertionPoint(body.getTerminator());
      for (unsigned i = 0; i < steps.size(); ++i)
        if (steps[i].kind == Kind::Reduce)
          partialsOf[i] = memref::AllocOp::create(
              b, loc,
              MemRefType::get({n, parts},
                              steps[i].combiner->getResult(0).getType()));
      return partialsOf;
    };
    // The split mappings' launches (few columns, long rows): one for each
    // reduction (or paired max and sum) after `recompute` gave it the
    // values before it, whose block folds its threads' values
    // (`blockPair`, `blockValue`) and whose `writer` stores them into the
    // partials `at`; then one for the results. `launch`, `writer`, `at` and
    // `valid` are the mapping's (the last three read per launch).
    auto emitLevels =
        [&](int64_t parts, DenseMap<unsigned, Value> &partialsOf, bool &paired,
            function_ref<void(int64_t)> launch,
            function_ref<void(unsigned, bool)> recompute,
            function_ref<std::pair<Value, Value>(Value, Value)> blockPair,
            function_ref<Value(Step &, Value, unsigned)> blockValue,
            function_ref<Value()> writer, function_ref<SmallVector<Value>()> at,
            function_ref<Value()> valid, ArrayRef<unsigned> stores) {
          for (unsigned k = 0; k < steps.size(); ++k) {
            Step &st = steps[k];
            if (st.kind != Kind::Reduce || (paired && k == pair->second))
              continue;
            launch(parts);
            recompute(k, /*write=*/false);
            if (pair && k == pair->first) {
              if (std::optional<std::pair<Value, Value>> run = pairLoop()) {
                paired = true;
                auto [m, sum] = blockPair(run->first, run->second);
                storeIf(writer(), m, partialsOf[pair->first], at());
                storeIf(writer(), sum, partialsOf[pair->second], at());
                continue;
              }
            }
            storeIf(writer(), blockValue(st, threadPartial(st), k),
                    partialsOf[k], at());
          }
          launch(stores.empty() ? 1 : parts);
          recompute(steps.size(), /*write=*/true);
          storeRows(stores, valid());
        };

    // Columns: one launch. Lanes take consecutive columns, one to 32
    // warps a column slices of it (enough to fill the GPU, with at least a
    // warp's worth of positions a slice; few columns take up to a block's
    // 32 warps). The warps' partial values meet in shared memory.
    auto emitColumns = [&] {
      int64_t columns = outer * inner;
      int64_t most = std::clamp<int64_t>(
          int64_t(llvm::bit_floor(uint64_t(length / kWarp))), 1, 1024 / kWarp);
      int64_t warpsPerColumn =
          std::clamp<int64_t>(int64_t(llvm::bit_floor(uint64_t(
                                  (kTargetThreads + columns - 1) / columns))),
                              std::min(most, kWarps), most);
      int64_t warpsPerBlock = std::max(kWarps, warpsPerColumn);
      int64_t tilesPerBlock = warpsPerBlock / warpsPerColumn;
      int64_t tileColumns = kWarp * tilesPerBlock;
      int64_t blocksPerOuter = (inner + tileColumns - 1) / tileColumns;
      int64_t chunk = (length + warpsPerColumn - 1) / warpsPerColumn;
      // Few columns leave most of the GPU idle even at 32 warps a column:
      // their positions are then split into parts over blocks too (at
      // least a warp's worth a slice), a launch a reduction (partials
      // [column, part]) and one for the results, as long rows are.
      int64_t blocks = outer * blocksPerOuter;
      int64_t parts = std::clamp<int64_t>(
          kTargetThreads / (blocks * warpsPerBlock * kWarp), 1,
          std::max<int64_t>(1, length / (warpsPerColumn * kWarp)));
      int64_t partLength = (length + parts - 1) / parts;
      parts = (length + partLength - 1) / partLength;
      if (parts > 1)
        chunk = (partLength + warpsPerColumn - 1) / warpsPerColumn;
      // A thread's slice of under 128 bytes (2048 threads' within the
      // multiprocessor's L1) is read again from L1: the pair's one pass
      // then saves no traffic and costs its corrections (softmax over the
      // 21 classes of NCHW f16 scores: 0.097 ms paired, 0.081 not; H100).
      int64_t elementBytes = 1;
      for (Type t : func.getArgumentTypes())
        if (auto m = dyn_cast<MemRefType>(t))
          elementBytes = std::max<int64_t>(
              elementBytes, m.getElementType().getIntOrFloatBitWidth() / 8);
      if (chunk * elementBytes < kPairSliceBytes)
        pair.reset();
      Value tile, part, valid, first, warpBase, column, p;
      // A launch of `launchParts` blocks for each column tile; the
      // thread's column, part and slice.
      auto columnsLaunch = [&](int64_t launchParts) {
        gpu::LaunchOp launch =
            newLaunch(blocks * launchParts, warpsPerBlock, kWarp);
        // This thread's column and slice of it.
        tile = arith::DivUIOp::create(b, loc, warp,
                                      cIndex(b, loc, warpsPerColumn));
        part = arith::RemUIOp::create(b, loc, warp,
                                      cIndex(b, loc, warpsPerColumn));
        Value block = launch.getBlockIds().x;
        p = zero;
        if (launchParts > 1) {
          p = arith::RemUIOp::create(b, loc, block,
                                     cIndex(b, loc, launchParts));
          block = arith::DivUIOp::create(b, loc, block,
                                         cIndex(b, loc, launchParts));
        }
        Value o = arith::DivUIOp::create(b, loc, block,
                                         cIndex(b, loc, blocksPerOuter));
        Value t = arith::RemUIOp::create(b, loc, block,
                                         cIndex(b, loc, blocksPerOuter));
        Value s = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(
                b, loc,
                arith::AddIOp::create(
                    b, loc,
                    arith::MulIOp::create(b, loc, t,
                                          cIndex(b, loc, tilesPerBlock)),
                    tile),
                cIndex(b, loc, kWarp)),
            lane);
        // Lanes past the last column read the last one (every thread
        // reaches the barriers) and write nothing.
        valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, s,
                                      cIndex(b, loc, inner));
        Value sc = arith::MinUIOp::create(b, loc, s, cIndex(b, loc, inner - 1));
        outerIvs = delinearize(b, loc, o, outerSizes);
        innerIvs = delinearize(b, loc, sc, innerSizes);
        stride = 1;
        Value partBegin = zero, partEnd = cIndex(b, loc, length);
        if (parts > 1) {
          column = arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, o, cIndex(b, loc, inner)),
              sc);
          partBegin =
              arith::MulIOp::create(b, loc, p, cIndex(b, loc, partLength));
          partEnd = arith::MinUIOp::create(
              b, loc,
              arith::AddIOp::create(b, loc, partBegin,
                                    cIndex(b, loc, partLength)),
              partEnd);
        }
        cBegin = arith::MulIOp::create(b, loc, part, cIndex(b, loc, chunk));
        if (parts > 1)
          cBegin = arith::AddIOp::create(b, loc, partBegin, cBegin);
        cEnd = arith::MinUIOp::create(
            b, loc,
            arith::AddIOp::create(b, loc, cBegin, cIndex(b, loc, chunk)),
            partEnd);
        cBegin = arith::MinUIOp::create(b, loc, cBegin, cEnd);
        first = arith::AndIOp::create(
            b, loc, valid,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, part,
                                  zero));
        warpBase =
            arith::MulIOp::create(b, loc, tile, cIndex(b, loc, warpsPerColumn));
      };
      auto warpRow = [&](int64_t w) -> Value {
        return arith::AddIOp::create(b, loc, warpBase, cIndex(b, loc, w));
      };
      // The column's pair from its warps' in shared memory, by a tree:
      // warp w < h folds in warp w + h's pair and leaves the result in its
      // slot, h = 16, 8, ..., 1, a barrier after each round; every thread
      // then reads the first warp's. (The warps' pairs folded in one thread
      // took 63 registers, half the residency of 32 in blocks of 1024
      // threads, or spilled where LLVM hoisted their loads together.)
      auto warpsPair = [&](Value mThread, Value sThread) {
        Value shMax = sharedOf[pair->first], shSum = sharedOf[pair->second];
        memref::StoreOp::create(b, loc, mThread, shMax, ValueRange{warp, lane});
        memref::StoreOp::create(b, loc, sThread, shSum, ValueRange{warp, lane});
        gpu::BarrierOp::create(b, loc);
        Value m = mThread, sum = sThread;
        for (int64_t half = warpsPerColumn / 2; half >= 1; half /= 2) {
          Value active = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::ult, part, cIndex(b, loc, half));
          auto branch = scf::IfOp::create(
              b, loc, TypeRange{m.getType(), sum.getType()}, active,
              /*withElseRegion=*/true);
          {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(branch.thenBlock());
            Value other =
                arith::AddIOp::create(b, loc, warp, cIndex(b, loc, half));
            auto [fm, fs] = foldPair(
                m, sum,
                memref::LoadOp::create(b, loc, shMax, ValueRange{other, lane}),
                memref::LoadOp::create(b, loc, shSum, ValueRange{other, lane}));
            memref::StoreOp::create(b, loc, fm, shMax, ValueRange{warp, lane});
            memref::StoreOp::create(b, loc, fs, shSum, ValueRange{warp, lane});
            scf::YieldOp::create(b, loc, ValueRange{fm, fs});
            b.setInsertionPointToStart(branch.elseBlock());
            scf::YieldOp::create(b, loc, ValueRange{m, sum});
          }
          m = branch.getResult(0);
          sum = branch.getResult(1);
          gpu::BarrierOp::create(b, loc);
        }
        return std::make_pair(Value(memref::LoadOp::create(
                                  b, loc, shMax, ValueRange{warpBase, lane})),
                              Value(memref::LoadOp::create(
                                  b, loc, shSum, ValueRange{warpBase, lane})));
      };
      // The warps' partial values of reduction `st` in shared memory,
      // combined in warp order onto `v` (null: from the first warp's).
      auto warpsValue = [&](Step &st, Value partial, Value sh, Value v) {
        memref::StoreOp::create(b, loc, partial, sh, ValueRange{warp, lane});
        gpu::BarrierOp::create(b, loc);
        for (int64_t w = 0; w < warpsPerColumn; ++w) {
          Value got =
              memref::LoadOp::create(b, loc, sh, ValueRange{warpRow(w), lane});
          v = v ? combine(b, st.combiner, v, got) : got;
        }
        return v;
      };
      SmallVector<unsigned> stores = resultSteps();
      if (parts > 1) {
        DenseMap<unsigned, Value> partialsOf =
            partialBuffers(outer * inner, parts);
        bool paired = false;
        // The column's values of the steps before `upTo` (reductions from
        // their partials, in part order); with `write`, the kernel's
        // results among them (by the column's first thread of part 0).
        auto recompute = [&](unsigned upTo, bool write) {
          Value writer = arith::AndIOp::create(
              b, loc, first,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, p, zero));
          auto output = [&](Step &st, Value v) {
            OpOperand *init = st.op.getDpsInitOperand(0);
            columnValues[rootOf(init->get())] = v;
            if (write && isa<BlockArgument>(rootOf(init->get())))
              storeIf(writer, v, init->get(),
                      applyMap(b, loc, st.op.getMatchingIndexingMap(init),
                               columnIvsOf(st)));
          };
          for (unsigned k = 0; k < upTo; ++k) {
            Step &st = steps[k];
            if (st.kind == Kind::Full || (paired && k == pair->second))
              continue;
            if (st.kind == Kind::Column) {
              Cache cache;
              output(st, evaluate(st.op, columnIvsOf(st), Value(), cache,
                                  nullptr, nullptr));
              continue;
            }
            bool both = paired && k == pair->first;
            SmallVector<Value> init{
                arith::ConstantOp::create(b, loc, st.neutral)};
            if (both)
              init.push_back(sumZero());
            // The column's warps share its partials (warp w folds parts
            // w, w + warps, ...) and then fold their values together, as
            // for their slices: every thread folding all 32 partials of
            // [4, 32768, 64]'s softmax (2 exponentials each) ran 0.90x
            // torch.compile.
            auto loop = scf::ForOp::create(b, loc, part, cIndex(b, loc, parts),
                                           cIndex(b, loc, warpsPerColumn), init);
            {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPointToStart(loop.getBody());
              Value q = loop.getInductionVar();
              ValueRange acc = loop.getRegionIterArgs();
              Value got = memref::LoadOp::create(b, loc, partialsOf[k],
                                                 ValueRange{column, q});
              if (both) {
                Value gotSum = memref::LoadOp::create(
                    b, loc, partialsOf[pair->second], ValueRange{column, q});
                auto [m, sum] = foldPair(acc[0], acc[1], got, gotSum);
                scf::YieldOp::create(b, loc, ValueRange{m, sum});
              } else {
                scf::YieldOp::create(b, loc,
                                     combine(b, st.combiner, acc[0], got));
              }
            }
            if (both) {
              auto [wm, ws] = warpsPair(loop.getResult(0), loop.getResult(1));
              auto [m, sum] = withInitials(wm, ws);
              output(st, m);
              output(steps[pair->second], sum);
            } else {
              output(st, warpsValue(st, loop.getResult(0), sharedOf[k],
                                    initialOf(st)));
            }
          }
        };
        emitLevels(
            parts, partialsOf, paired, columnsLaunch, recompute, warpsPair,
            [&](Step &st, Value partial, unsigned k) {
              return warpsValue(st, partial, sharedOf[k], Value());
            },
            [&] { return first; },
            [&] { return SmallVector<Value>{column, p}; },
            [&] { return valid; }, stores);
        return;
      }
      columnsLaunch(1);

      bool paired = false;
      Value pairMax, pairSum;
      for (unsigned i = 0; i < steps.size(); ++i) {
        Step &st = steps[i];
        OpOperand *init = st.op.getDpsInitOperand(0);
        Value out = rootOf(init->get());
        SmallVector<Value> columnIvs = columnIvsOf(st);
        if (st.kind == Kind::Full)
          continue;
        Value v;
        std::optional<std::pair<Value, Value>> run;
        if (st.kind == Kind::Column) {
          Cache cache;
          v = evaluate(st.op, columnIvs, Value(), cache, nullptr, nullptr);
        } else if (pair && i == pair->first && (run = pairLoop())) {
          auto [m, sum] = warpsPair(run->first, run->second);
          std::tie(pairMax, pairSum) = withInitials(m, sum);
          paired = true;
          v = pairMax;
        } else if (paired && i == pair->second) {
          v = pairSum;
        } else {
          // The warps' partial values meet in shared memory, combined in
          // warp order with the output's initial value.
          v = warpsValue(st, threadPartial(st), sharedOf[i], initialOf(st));
        }
        columnValues[out] = v;
        if (isa<BlockArgument>(out))
          storeIf(
              first, v, init->get(),
              applyMap(b, loc, st.op.getMatchingIndexingMap(init), columnIvs));
      }
      storeRows(stores, valid);
    };

    // Rows longer than a cluster holds (GpuRowFusion leaves them): a launch
    // for each reduction (or (max, sum) pair) in which `parts` blocks a row
    // each reduce a consecutive part of it, 256 threads at consecutive
    // positions, and write a partial value; a last launch writes the
    // results. Each launch first combines the partials of the reductions
    // before it (every block of the row the same way, so every block sees
    // the same bits). The input is read once a reduction and once for the
    // results; a row of 2^20 f32 values stays in the H100's and H200's L2
    // between the launches.
    auto emitRows = [&] {
      constexpr int64_t threads = kWarp * kWarps;
      int64_t rows = outer;
      int64_t parts = std::clamp<int64_t>(
          (kTargetThreads / threads + rows - 1) / rows, 1,
          std::max<int64_t>(1, length / (threads * kUnroll)));
      // Parts start at multiples of 32 positions (whole 128-byte lines of
      // f32 where the row's start is aligned).
      int64_t chunk =
          ((length + parts - 1) / parts + kWarp - 1) / kWarp * kWarp;
      parts = (length + chunk - 1) / chunk;
      DenseMap<unsigned, Value> partialsOf = partialBuffers(rows, parts);
      Value r, p, t, threadZero;
      auto rowsLaunch = [&](int64_t blocksPerRow) {
        gpu::LaunchOp launch = newLaunch(rows * blocksPerRow, kWarps, 1);
        Value block = launch.getBlockIds().x;
        r = arith::DivUIOp::create(b, loc, block, cIndex(b, loc, blocksPerRow));
        p = arith::RemUIOp::create(b, loc, block, cIndex(b, loc, blocksPerRow));
        t = arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, warp, cIndex(b, loc, kWarp)),
            lane);
        threadZero =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t, zero);
        outerIvs = delinearize(b, loc, r, outerSizes);
        innerIvs = delinearize(b, loc, zero, innerSizes);
        Value start = arith::MulIOp::create(b, loc, p, cIndex(b, loc, chunk));
        cEnd = arith::MinUIOp::create(
            b, loc, arith::AddIOp::create(b, loc, start, cIndex(b, loc, chunk)),
            cIndex(b, loc, length));
        cBegin = arith::MinUIOp::create(
            b, loc, arith::AddIOp::create(b, loc, start, t), cEnd);
        stride = threads;
      };
      // The block's value of `v` in every thread: the warps' values by
      // butterflies, then each thread folds the warps' in order.
      // The warps' values (`vs`, one a buffer of `shs`, each warp's the same
      // in all its lanes) folded by a tree through shared memory: warp w <
      // h folds in warp w + h's, h = 4, 2, 1, a barrier after each round;
      // every thread then reads the first warp's. (Folded by each thread in
      // turn, the 8 warps' loads were hoisted together: 40 registers, 6
      // blocks of 256 a multiprocessor for a grid planned at 8.)
      auto warpsTree =
          [&](SmallVector<Value> vs, ArrayRef<Value> shs,
              function_ref<SmallVector<Value>(ValueRange, ValueRange)> fold) {
            Value lane0 = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::eq, lane, zero);
            for (auto [v, sh] : llvm::zip(vs, shs))
              storeIf(lane0, v, sh, {warp});
            gpu::BarrierOp::create(b, loc);
            for (int64_t half = kWarps / 2; half >= 1; half /= 2) {
              Value active = arith::AndIOp::create(
                  b, loc, lane0,
                  arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, warp,
                                        cIndex(b, loc, half)));
              auto branch = scf::IfOp::create(b, loc, active,
                                              /*withElseRegion=*/false);
              {
                OpBuilder::InsertionGuard guard(b);
                b.setInsertionPoint(branch.thenBlock()->getTerminator());
                Value other =
                    arith::AddIOp::create(b, loc, warp, cIndex(b, loc, half));
                SmallVector<Value> mine, theirs;
                for (Value sh : shs) {
                  mine.push_back(
                      memref::LoadOp::create(b, loc, sh, ValueRange{warp}));
                  theirs.push_back(
                      memref::LoadOp::create(b, loc, sh, ValueRange{other}));
                }
                for (auto [v, sh] : llvm::zip(fold(mine, theirs), shs))
                  memref::StoreOp::create(b, loc, v, sh, ValueRange{warp});
              }
              gpu::BarrierOp::create(b, loc);
            }
            SmallVector<Value> out;
            for (Value sh : shs)
              out.push_back(
                  memref::LoadOp::create(b, loc, sh, ValueRange{zero}));
            return out;
          };
      auto blockAll = [&](Operation *combiner, Value v, Value sh) -> Value {
        return warpsTree({warpReduce(b, loc, combiner, v)}, {sh},
                         [&](ValueRange x, ValueRange y) {
                           return SmallVector<Value>{
                               combine(b, combiner, x[0], y[0])};
                         })[0];
      };
      auto blockAllPair = [&](Value m, Value s) -> std::pair<Value, Value> {
        for (int64_t off = kWarp / 2; off >= 1; off /= 2)
          std::tie(m, s) = foldPair(m, s, shuffleXor(b, loc, m, off),
                                    shuffleXor(b, loc, s, off));
        SmallVector<Value> out =
            warpsTree({m, s}, {sharedOf[pair->first], sharedOf[pair->second]},
                      [&](ValueRange x, ValueRange y) {
                        auto [fm, fs] = foldPair(x[0], x[1], y[0], y[1]);
                        return SmallVector<Value>{fm, fs};
                      });
        return {out[0], out[1]};
      };
      // The thread's fold of the row's partials t, t + 256, ... of the
      // reductions `ks` (one, or the pair), from `init`.
      auto partialsFold =
          [&](ArrayRef<unsigned> ks, ValueRange init,
              function_ref<SmallVector<Value>(ValueRange, ValueRange)> fold) {
            auto loop = scf::ForOp::create(b, loc, t, cIndex(b, loc, parts),
                                           cIndex(b, loc, threads), init);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(loop.getBody());
            SmallVector<Value> got;
            for (unsigned k : ks)
              got.push_back(memref::LoadOp::create(
                  b, loc, partialsOf[k],
                  ValueRange{r, loop.getInductionVar()}));
            scf::YieldOp::create(b, loc, fold(loop.getRegionIterArgs(), got));
            return SmallVector<Value>(loop.getResults());
          };
      bool paired = false;
      // The values of the steps before `upTo` at the row (reductions from
      // their partials); with `write`, the kernel's results among them.
      auto recompute = [&](unsigned upTo, bool write) {
        for (unsigned k = 0; k < upTo; ++k) {
          Step &st = steps[k];
          if (st.kind == Kind::Full || (paired && k == pair->second))
            continue;
          OpOperand *init = st.op.getDpsInitOperand(0);
          Value v;
          if (st.kind == Kind::Column) {
            Cache cache;
            v = evaluate(st.op, columnIvsOf(st), Value(), cache, nullptr,
                         nullptr);
          } else if (paired && k == pair->first) {
            Value neutral = arith::ConstantOp::create(b, loc, st.neutral);
            SmallVector<Value> run = partialsFold(
                {pair->first, pair->second}, ValueRange{neutral, sumZero()},
                [&](ValueRange acc, ValueRange got) {
                  auto [m, s] = foldPair(acc[0], acc[1], got[0], got[1]);
                  return SmallVector<Value>{m, s};
                });
            auto [m, s] = blockAllPair(run[0], run[1]);
            auto [total, sum] = withInitials(m, s);
            Step &sm = steps[pair->second];
            OpOperand *sumInit = sm.op.getDpsInitOperand(0);
            columnValues[rootOf(sumInit->get())] = sum;
            if (write && isa<BlockArgument>(rootOf(sumInit->get())))
              storeIf(arith::AndIOp::create(
                          b, loc, threadZero,
                          arith::CmpIOp::create(
                              b, loc, arith::CmpIPredicate::eq, p, zero)),
                      sum, sumInit->get(),
                      applyMap(b, loc, sm.op.getMatchingIndexingMap(sumInit),
                               columnIvsOf(sm)));
            v = total;
          } else {
            Value neutral = arith::ConstantOp::create(b, loc, st.neutral);
            Value part = partialsFold(
                {k}, ValueRange{neutral}, [&](ValueRange acc, ValueRange got) {
                  return SmallVector<Value>{
                      combine(b, st.combiner, acc[0], got[0])};
                })[0];
            v = combine(b, st.combiner, initialOf(st),
                        blockAll(st.combiner, part, sharedOf[k]));
          }
          columnValues[rootOf(init->get())] = v;
          if (write && isa<BlockArgument>(rootOf(init->get())))
            storeIf(arith::AndIOp::create(
                        b, loc, threadZero,
                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              p, zero)),
                    v, init->get(),
                    applyMap(b, loc, st.op.getMatchingIndexingMap(init),
                             columnIvsOf(st)));
        }
      };
      emitLevels(
          parts, partialsOf, paired, rowsLaunch, recompute, blockAllPair,
          [&](Step &st, Value partial, unsigned k) {
            return blockAll(st.combiner, partial, sharedOf[k]);
          },
          [&] { return threadZero; }, [&] { return SmallVector<Value>{r, p}; },
          [&] { return Value(); }, resultSteps());
    };

    if (inner > 1)
      emitColumns();
    else
      emitRows();
    eraseChain();
  }
};

} // namespace
