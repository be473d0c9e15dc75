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

enum class Kind {
  Full,   ///< elementwise over the chain's loops
  Reduce, ///< reduces the chain's loop
  Column  ///< elementwise over the columns (the chain's loop of extent 1)
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
  unsigned axis = 0;
  int64_t outer = 1, length = 1, inner = 1;
  SmallVector<Step> steps;
  /// Root buffer -> the fill that initialises it (a reduction's output).
  DenseMap<Value, linalg::FillOp> fills;
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
    // (A column op may have no loop for the chain's axis at all.)
    bool skipAxis = column && loops.size() == ranges.size();
    for (unsigned d = 0; d < loops.size(); ++d)
      if (loops[d] != 1 && !(skipAxis && d == axis))
        want.push_back(d);
    return dims == want;
  }

  /// Whether the kernel is one chain this pass takes; fills `steps`.
  bool analyze(func::FuncOp func) {
    // (The pass object runs on one function after another.)
    ranges.clear();
    steps.clear();
    fills.clear();
    writer.clear();
    axis = 0;
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
            !fills.try_emplace(rootOf(f.getOutputs()[0]), f).second)
          return false;
        continue;
      }
      auto g = dyn_cast<linalg::GenericOp>(op);
      if (!g || !g.hasPureBufferSemantics() || g.getNumDpsInits() != 1)
        return false;
      generics.push_back(g);
    }
    // The chain's loops: a reduction's, which reduces exactly one.
    for (linalg::GenericOp g : generics) {
      if (g.getNumReductionLoops() == 0)
        continue;
      ranges = g.getStaticLoopRanges();
      SmallVector<utils::IteratorType> iters = g.getIteratorTypesArray();
      int found = 0;
      for (unsigned d = 0; d < iters.size(); ++d)
        if (iters[d] == utils::IteratorType::reduction && ranges[d] != 1) {
          axis = d;
          ++found;
        }
      if (found != 1)
        return false;
      break;
    }
    if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic))
      return false;
    outer = length = inner = 1;
    for (unsigned d = 0; d < ranges.size(); ++d)
      (d < axis ? outer : d == axis ? length : inner) *= ranges[d];
    // Rows (the chain's loop innermost) are tcc-gpu-row-fusion's; few
    // columns would leave lanes idle.
    if (inner < minColumns || length < 2)
      return false;
    // The blocks (32 columns each at least) fit the grid's x limit.
    constexpr int64_t kMostBlocks = (int64_t(1) << 31) - 1;
    if (outer > kMostBlocks / ((inner + kWarp - 1) / kWarp))
      return false;
    SmallVector<int64_t> columnRanges = ranges, columnLoops = ranges;
    columnRanges[axis] = 1;
    columnLoops.erase(columnLoops.begin() + axis);
    for (linalg::GenericOp g : generics) {
      Step s{g, Kind::Full};
      SmallVector<int64_t> r = g.getStaticLoopRanges();
      SmallVector<utils::IteratorType> iters = g.getIteratorTypesArray();
      bool reduces = g.getNumReductionLoops() != 0;
      if (r == ranges && reduces) {
        for (unsigned d = 0; d < iters.size(); ++d)
          if ((iters[d] == utils::IteratorType::reduction) != (d == axis))
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
    return llvm::any_of(steps,
                        [](const Step &s) { return s.kind == Kind::Reduce; });
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
    // Enough warps a column to fill the GPU, with at least a warp's worth
    // of positions a slice; few columns take up to a block's 32 warps.
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

    // Shared memory: the warps' partial values of each reduction.
    SmallVector<Type> shared;
    for (const Step &s : steps)
      if (s.kind == Kind::Reduce)
        shared.push_back(MemRefType::get(
            {warpsPerBlock, kWarp}, s.combiner->getResult(0).getType(),
            MemRefLayoutAttrInterface(),
            gpu::AddressSpaceAttr::get(func.getContext(),
                                       gpu::AddressSpace::Workgroup)));
    Value one = cIndex(b, loc, 1);
    auto launch = gpu::LaunchOp::create(
        b, loc, cIndex(b, loc, outer * blocksPerOuter), one, one,
        cIndex(b, loc, kWarp), cIndex(b, loc, warpsPerBlock), one,
        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/ValueRange{}, shared);
    Block &kernel = launch.getBody().front();
    b.setInsertionPointToEnd(&kernel);
    auto end = gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(end);

    // This thread's column and slice of it.
    Value lane = launch.getThreadIds().x, warp = launch.getThreadIds().y;
    Value tile =
        arith::DivUIOp::create(b, loc, warp, cIndex(b, loc, warpsPerColumn));
    Value part =
        arith::RemUIOp::create(b, loc, warp, cIndex(b, loc, warpsPerColumn));
    Value block = launch.getBlockIds().x;
    Value o =
        arith::DivUIOp::create(b, loc, block, cIndex(b, loc, blocksPerOuter));
    Value t =
        arith::RemUIOp::create(b, loc, block, cIndex(b, loc, blocksPerOuter));
    Value s = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc,
            arith::AddIOp::create(
                b, loc,
                arith::MulIOp::create(b, loc, t, cIndex(b, loc, tilesPerBlock)),
                tile),
            cIndex(b, loc, kWarp)),
        lane);
    // Lanes past the last column read the last one (every thread reaches
    // the barriers) and write nothing.
    Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, s,
                                        cIndex(b, loc, inner));
    Value sc = arith::MinUIOp::create(b, loc, s, cIndex(b, loc, inner - 1));
    SmallVector<int64_t> outerSizes(ranges.begin(), ranges.begin() + axis),
        innerSizes(ranges.begin() + axis + 1, ranges.end());
    SmallVector<Value> outerIvs = delinearize(b, loc, o, outerSizes);
    SmallVector<Value> innerIvs = delinearize(b, loc, sc, innerSizes);
    auto ivsAt = [&](Value c) {
      SmallVector<Value> ivs(outerIvs);
      ivs.push_back(c);
      ivs.append(innerIvs);
      return ivs;
    };
    Value cBegin = arith::MulIOp::create(b, loc, part, cIndex(b, loc, chunk));
    Value cEnd = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, cBegin, cIndex(b, loc, chunk)),
        cIndex(b, loc, length));
    cBegin = arith::MinUIOp::create(b, loc, cBegin, cEnd);
    Value zero = cIndex(b, loc, 0);
    Value first = arith::AndIOp::create(
        b, loc, valid,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, part, zero));

    DenseMap<Value, Value> columnValues;   // root buffer -> this column's value
    DenseMap<Value, unsigned> virtualFull; // root alloc -> its Full step
    for (unsigned i = 0; i < steps.size(); ++i)
      if (steps[i].kind == Kind::Full &&
          !isa<BlockArgument>(rootOf(steps[i].op.getDpsInitOperand(0)->get())))
        virtualFull[rootOf(steps[i].op.getDpsInitOperand(0)->get())] = i;

    // The value `g` computes at loop indices `ivs` (`acc`: a reduction's
    // running value), its inputs read or recomputed; `cache` holds the
    // recomputed values of this position.
    std::function<Value(linalg::GenericOp, ArrayRef<Value>, Value,
                        DenseMap<Value, Value> &)>
        evaluate = [&](linalg::GenericOp g, ArrayRef<Value> ivs, Value acc,
                       DenseMap<Value, Value> &cache) -> Value {
      IRMapping map;
      Block *gb = g.getBlock();
      for (OpOperand *in : g.getDpsInputOperands()) {
        Value root = rootOf(in->get());
        Value v;
        if (auto c = columnValues.find(root); c != columnValues.end()) {
          v = c->second;
        } else if (auto f = virtualFull.find(root); f != virtualFull.end()) {
          auto hit = cache.find(root);
          v = hit != cache.end()
                  ? hit->second
                  : evaluate(steps[f->second].op, ivs, Value(), cache);
          cache[root] = v;
        } else {
          v = memref::LoadOp::create(
              b, loc, in->get(),
              applyMap(b, loc, g.getMatchingIndexingMap(in), ivs));
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
      return map.lookup(
          cast<linalg::YieldOp>(gb->getTerminator()).getOperand(0));
    };

    // The slice [cBegin, cEnd) of the column, kUnroll positions at a time
    // then one by one: `fn(c, carried)` returns the new carried values.
    // `flush` runs after each iteration's positions: the stores of the
    // last pass, which come after all of its loads (the kernel's buffers
    // may alias as far as LLVM knows, so a store would keep the next
    // position's loads from starting early).
    auto overSlice =
        [&](
            ValueRange init,
            function_ref<SmallVector<Value>(Value, ValueRange)> fn,
            function_ref<void()> flush = [] {}) -> SmallVector<Value> {
      Value n = arith::SubIOp::create(b, loc, cEnd, cBegin);
      Value mainEnd = arith::AddIOp::create(
          b, loc, cBegin,
          arith::MulIOp::create(
              b, loc,
              arith::DivUIOp::create(b, loc, n, cIndex(b, loc, kUnroll)),
              cIndex(b, loc, kUnroll)));
      // (A loop without carried values comes with its yield: replaced.)
      auto bodyOf = [&](scf::ForOp loop) {
        Block *blk = loop.getBody();
        if (!blk->empty() && blk->back().hasTrait<OpTrait::IsTerminator>())
          blk->back().erase();
        b.setInsertionPointToEnd(blk);
      };
      auto unrolled = scf::ForOp::create(b, loc, cBegin, mainEnd,
                                         cIndex(b, loc, kUnroll), init);
      {
        OpBuilder::InsertionGuard guard(b);
        bodyOf(unrolled);
        SmallVector<Value> carried(unrolled.getRegionIterArgs());
        for (int64_t k = 0; k < kUnroll; ++k)
          carried = fn(arith::AddIOp::create(b, loc, unrolled.getInductionVar(),
                                             cIndex(b, loc, k)),
                       carried);
        flush();
        scf::YieldOp::create(b, loc, carried);
      }
      auto rest = scf::ForOp::create(b, loc, mainEnd, cEnd, cIndex(b, loc, 1),
                                     unrolled.getResults());
      {
        OpBuilder::InsertionGuard guard(b);
        bodyOf(rest);
        SmallVector<Value> carried =
            fn(rest.getInductionVar(), rest.getRegionIterArgs());
        flush();
        scf::YieldOp::create(b, loc, carried);
      }
      return rest.getResults();
    };
    auto storeIf = [&](Value cond, Value v, Value buffer,
                       SmallVector<Value> idx) {
      auto branch = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(branch.thenBlock()->getTerminator());
      memref::StoreOp::create(b, loc, v, buffer, idx);
    };

    unsigned sharedIndex = 0;
    SmallVector<unsigned> stores;
    for (unsigned i = 0; i < steps.size(); ++i) {
      Step &st = steps[i];
      OpOperand *init = st.op.getDpsInitOperand(0);
      Value out = rootOf(init->get());
      SmallVector<Value> columnIvs = ivsAt(zero);
      if (st.dropsAxis)
        columnIvs.erase(columnIvs.begin() + axis);
      if (st.kind == Kind::Full) {
        if (isa<BlockArgument>(out))
          stores.push_back(i);
        continue;
      }
      Value v;
      if (st.kind == Kind::Column) {
        DenseMap<Value, Value> cache;
        v = evaluate(st.op, columnIvs, Value(), cache);
      } else {
        Value neutral = arith::ConstantOp::create(b, loc, st.neutral);
        Value partial = overSlice(ValueRange{neutral}, [&](Value c,
                                                           ValueRange acc) {
          DenseMap<Value, Value> cache;
          return SmallVector<Value>{evaluate(st.op, ivsAt(c), acc[0], cache)};
        })[0];
        // The warps' partial values meet in shared memory, combined in
        // warp order with the output's initial value.
        Value sh = kernel.getArgument(kernel.getNumArguments() - shared.size() +
                                      sharedIndex++);
        memref::StoreOp::create(b, loc, partial, sh, ValueRange{warp, lane});
        gpu::BarrierOp::create(b, loc);
        auto fill = fills.find(out);
        v = fill != fills.end()
                ? fill->second.getInputs()[0]
                : memref::LoadOp::create(
                      b, loc, init->get(),
                      applyMap(b, loc, st.op.getMatchingIndexingMap(init),
                               columnIvs))
                      .getResult();
        Value base =
            arith::MulIOp::create(b, loc, tile, cIndex(b, loc, warpsPerColumn));
        for (int64_t w = 0; w < warpsPerColumn; ++w) {
          Value row = arith::AddIOp::create(b, loc, base, cIndex(b, loc, w));
          v = combine(
              b, st.combiner, v,
              memref::LoadOp::create(b, loc, sh, ValueRange{row, lane}));
        }
      }
      columnValues[out] = v;
      if (isa<BlockArgument>(out))
        storeIf(
            first, v, init->get(),
            applyMap(b, loc, st.op.getMatchingIndexingMap(init), columnIvs));
    }
    // The kernel's results along the chain: one more pass over the slice.
    if (!stores.empty()) {
      // (value, buffer, indices) computed and not stored yet.
      SmallVector<std::tuple<Value, Value, SmallVector<Value>>> pending;
      overSlice(
          ValueRange{},
          [&](Value c, ValueRange) {
            SmallVector<Value> ivs = ivsAt(c);
            DenseMap<Value, Value> cache;
            for (unsigned i : stores) {
              linalg::GenericOp g = steps[i].op;
              OpOperand *init = g.getDpsInitOperand(0);
              pending.push_back(
                  {evaluate(g, ivs, Value(), cache), init->get(),
                   applyMap(b, loc, g.getMatchingIndexingMap(init), ivs)});
            }
            return SmallVector<Value>{};
          },
          [&] {
            auto branch = scf::IfOp::create(b, loc, valid, /*withElse=*/false);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(branch.thenBlock()->getTerminator());
            for (auto &[v, buffer, idx] : pending)
              memref::StoreOp::create(b, loc, v, buffer, idx);
            pending.clear();
          });
    }

    // The generics and fills are the launch now; the views and buffers
    // that only they used go too.
    for (const Step &st : llvm::reverse(steps))
      st.op->erase();
    for (auto &[buffer, fill] : fills)
      fill->erase();
    bool erased = true;
    while (erased) {
      erased = false;
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
        if (isa<memref::AllocOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
                arith::ConstantOp>(op) &&
            op.use_empty()) {
          op.erase();
          erased = true;
        }
    }
  }
};

} // namespace
