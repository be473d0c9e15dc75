//===- GpuRowReductions.cpp - cooperative row reductions on GPUs ----------===//
//
// The generic GPU mapping gives each output element of a reduction its own
// thread, which walks the row alone: neighbouring threads then read memory a
// row apart, and a long row leaves the GPU nearly idle. Here the threads of
// a warp (or a block, for long rows) share an output element and read the
// row side by side.
//
//===----------------------------------------------------------------------===//
#include "passes/GpuUtils.h"
#include "passes/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUROWREDUCTIONS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc::gpuutil;

namespace {

constexpr int64_t kBlock = 256;
/// Blocks a split reduction aims for: several waves' worth on today's GPUs
/// (132 multiprocessors on an H100/H200, 104-304 compute units on AMD's).
constexpr int64_t kSplitBlocks = 1024;
/// The fewest elements a block of a split row reduces (16 a thread).
constexpr int64_t kSplitMinElems = 16 * kBlock;

/// The atomic kind that combines a block's part of a row into the output,
/// where the GPU has one for the combiner's type: float adds in f32 and
/// f64, integer adds and bounds in i32 and i64.
std::optional<arith::AtomicRMWKind> atomicKindOf(Operation *combiner) {
  Type t = combiner->getResult(0).getType();
  if (t.isF32() || t.isF64())
    return isa<arith::AddFOp>(combiner)
               ? std::optional(arith::AtomicRMWKind::addf)
               : std::nullopt;
  if (!t.isInteger(32) && !t.isInteger(64))
    return std::nullopt;
  return llvm::TypeSwitch<Operation *, std::optional<arith::AtomicRMWKind>>(
             combiner)
      .Case([](arith::AddIOp) { return arith::AtomicRMWKind::addi; })
      .Case([](arith::MaxSIOp) { return arith::AtomicRMWKind::maxs; })
      .Case([](arith::MinSIOp) { return arith::AtomicRMWKind::mins; })
      .Case([](arith::MaxUIOp) { return arith::AtomicRMWKind::maxu; })
      .Case([](arith::MinUIOp) { return arith::AtomicRMWKind::minu; })
      .Case([](arith::AndIOp) { return arith::AtomicRMWKind::andi; })
      .Case([](arith::OrIOp) { return arith::AtomicRMWKind::ori; })
      .Default([](Operation *) { return std::nullopt; });
}

struct Match {
  Operation *combiner;
  TypedAttr neutral;
  /// The loops of extent > 1, parallel ones (outer) and reduction ones
  /// (inner); loops of extent 1 are neither and run at index 0.
  SmallVector<unsigned> parDims, redDims;
  SmallVector<int64_t> ranges;
};

/// Whether `op` is a row reduction this pass handles, and how.
std::optional<Match> matchRowReduction(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1)
    return std::nullopt;
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  // Loops of extent 1 are left out: a sum over the rows of [N, 1] (a
  // column, its loops reduction then parallel) is a row of N values.
  SmallVector<unsigned> parDims, redDims;
  for (unsigned d = 0; d < iters.size(); ++d) {
    if (ranges[d] == 1)
      continue;
    if (iters[d] == utils::IteratorType::parallel) {
      if (!redDims.empty())
        return std::nullopt;
      parDims.push_back(d);
    } else if (iters[d] == utils::IteratorType::reduction) {
      redDims.push_back(d);
    } else {
      return std::nullopt;
    }
  }
  if (redDims.empty())
    return std::nullopt;

  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  if (!outMap.isProjectedPermutation(/*allowZeroInResults=*/true))
    return std::nullopt;
  for (unsigned d = 0; d < iters.size(); ++d)
    if (iters[d] == utils::IteratorType::reduction && outMap.isFunctionOfDim(d))
      return std::nullopt;
  // Neighbouring threads read neighbouring elements: the innermost loop
  // (of extent > 1) indexes exactly one dimension of every input that
  // follows it, alone, and that dimension has unit stride.
  unsigned last = redDims.back();
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap m = op.getMatchingIndexingMap(in);
    if (!m.isFunctionOfDim(last))
      continue;
    auto ty = dyn_cast<MemRefType>(in->get().getType());
    if (!ty)
      return std::nullopt;
    std::optional<unsigned> at;
    for (unsigned r = 0; r < m.getNumResults(); ++r) {
      if (!m.getResult(r).isFunctionOfDim(last))
        continue;
      auto dim = dyn_cast<AffineDimExpr>(m.getResult(r));
      if (at || !dim)
        return std::nullopt;
      at = r;
    }
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(ty.getStridesAndOffset(strides, offset)) || strides[*at] != 1)
      return std::nullopt;
  }

  SmallVector<Operation *> combiners;
  if (!matchReduction(op.getRegionOutputArgs(), 0, combiners) ||
      combiners.size() != 1 || combiners[0]->getNumOperands() != 2)
    return std::nullopt;
  std::optional<TypedAttr> neutral = arith::getNeutralElement(combiners[0]);
  Type t = combiners[0]->getResult(0).getType();
  if (!neutral || !t.isIntOrFloat() || t.getIntOrFloatBitWidth() > 64)
    return std::nullopt;
  return Match{combiners[0], *neutral, parDims, redDims, ranges};
}

struct TccGpuRowReductions
    : mlir::tcc::impl::TccGpuRowReductionsBase<TccGpuRowReductions> {
  using Base::Base;

  void rewrite(linalg::GenericOp op, const Match &m) {
    Location loc = op.getLoc();
    SmallVector<int64_t> parSizes, redSizes;
    for (unsigned d : m.parDims)
      parSizes.push_back(m.ranges[d]);
    for (unsigned d : m.redDims)
      redSizes.push_back(m.ranges[d]);
    int64_t rows = 1, length = 1;
    for (int64_t s : parSizes)
      rows *= s;
    for (int64_t s : redSizes)
      length *= s;
    if (rows == 0 || length == 0) { // nothing to write, or nothing to add
      op.erase();
      return;
    }
    bool blockPerRow = length >= blockRowLength;
    int64_t threads = blockPerRow ? kBlock : kWarp;
    int64_t rowsPerBlock = kBlock / threads;
    // Few long rows (a mean over every element, a loss over all the rows)
    // would leave most of the GPU idle with a block a row: each row is
    // split into parts of at least kSplitMinElems, a block each, whose
    // totals are combined into the output atomically (its initial value
    // is written before the launch). The order of the combination varies
    // from run to run, as with any parallel reduction that uses atomics.
    int64_t splits = 1;
    std::optional<arith::AtomicRMWKind> atomic = atomicKindOf(m.combiner);
    if (blockPerRow && atomic && rows < kSplitBlocks)
      splits = std::max<int64_t>(
          1, std::min(kSplitBlocks / rows, length / kSplitMinElems));
    int64_t chunk = (length + splits - 1) / splits;
    chunk = (chunk + kBlock - 1) / kBlock * kBlock;
    splits = (length + chunk - 1) / chunk;
    int64_t grid = (rows + rowsPerBlock - 1) / rowsPerBlock * splits;
    Type accTy = m.combiner->getResult(0).getType();
    auto sharedTy =
        MemRefType::get({kBlock / kWarp}, accTy, MemRefLayoutAttrInterface(),
                        gpu::AddressSpaceAttr::get(
                            op.getContext(), gpu::AddressSpace::Workgroup));

    OpBuilder b(op);
    Value one = cIndex(b, loc, 1);
    auto launch = gpu::LaunchOp::create(
        b, loc, cIndex(b, loc, grid), one, one, cIndex(b, loc, kBlock), one,
        one, /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/ValueRange{},
        blockPerRow ? TypeRange{sharedTy} : TypeRange{});
    Block &body = launch.getBody().front();
    b.setInsertionPointToEnd(&body);
    auto end = gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(end);

    Value tid = launch.getThreadIds().x;
    Value lane, row;
    // The part of the row this block reduces: [begin, end).
    Value begin = cIndex(b, loc, 0), partEnd = cIndex(b, loc, length);
    if (blockPerRow && splits > 1) {
      lane = tid;
      Value block = launch.getBlockIds().x;
      row = arith::DivUIOp::create(b, loc, block, cIndex(b, loc, splits));
      begin = arith::MulIOp::create(
          b, loc, arith::RemUIOp::create(b, loc, block, cIndex(b, loc, splits)),
          cIndex(b, loc, chunk));
      partEnd = arith::MinUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, begin, cIndex(b, loc, chunk)),
          cIndex(b, loc, length));
    } else if (blockPerRow) {
      lane = tid;
      row = launch.getBlockIds().x;
    } else {
      lane = arith::RemUIOp::create(b, loc, tid, cIndex(b, loc, kWarp));
      row = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                cIndex(b, loc, rowsPerBlock)),
          arith::DivUIOp::create(b, loc, tid, cIndex(b, loc, kWarp)));
      // Whole warps past the last row leave (a warp-uniform branch).
      auto valid = scf::IfOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                cIndex(b, loc, rows)),
          /*withElse=*/false);
      b.setInsertionPoint(valid.thenBlock()->getTerminator());
    }
    // The loops' indices in the generic's order: the row's, then (in the
    // loop below) the reduction's; 0 for loops of extent 1.
    SmallVector<Value> parIvs(m.ranges.size(), cIndex(b, loc, 0));
    for (auto [d, iv] :
         llvm::zip(m.parDims, delinearize(b, loc, row, parSizes)))
      parIvs[d] = iv;

    // Each thread's strided share of the row.
    Value neutral = arith::ConstantOp::create(b, loc, m.neutral);
    auto loop = scf::ForOp::create(
        b, loc, arith::AddIOp::create(b, loc, begin, lane), partEnd,
        cIndex(b, loc, threads), ValueRange{neutral});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> ivs = parIvs;
      for (auto [d, iv] :
           llvm::zip(m.redDims,
                     delinearize(b, loc, loop.getInductionVar(), redSizes)))
        ivs[d] = iv;
      IRMapping map;
      Block *genericBody = op.getBlock();
      for (OpOperand *in : op.getDpsInputOperands()) {
        SmallVector<Value> idx =
            applyMap(b, loc, op.getMatchingIndexingMap(in), ivs);
        map.map(genericBody->getArgument(in->getOperandNumber()),
                memref::LoadOp::create(b, loc, in->get(), idx));
      }
      map.map(op.getRegionOutputArgs()[0], loop.getRegionIterArgs()[0]);
      for (Operation &inner : genericBody->without_terminator()) {
        if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
          map.map(index.getResult(), ivs[index.getDim()]);
          continue;
        }
        b.clone(inner, map);
      }
      Value yielded = map.lookup(
          cast<linalg::YieldOp>(genericBody->getTerminator()).getOperand(0));
      scf::YieldOp::create(b, loc, yielded);
    }
    Value v = warpReduce(b, loc, m.combiner, loop.getResult(0));

    auto writeOut = [&](Value total) {
      OpOperand *init = op.getDpsInitOperand(0);
      SmallVector<Value> idx =
          applyMap(b, loc, op.getMatchingIndexingMap(init), parIvs);
      if (splits > 1) {
        memref::AtomicRMWOp::create(b, loc, *atomic, total, init->get(), idx);
        return;
      }
      Value old = memref::LoadOp::create(b, loc, init->get(), idx);
      memref::StoreOp::create(b, loc, combine(b, m.combiner, old, total),
                              init->get(), idx);
    };
    auto ifThen = [&](Value cond, auto fn) {
      auto branch = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(branch.thenBlock()->getTerminator());
      fn();
    };
    auto isZero = [&](Value x) {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x,
                                   cIndex(b, loc, 0));
    };
    if (!blockPerRow) {
      ifThen(isZero(lane), [&] { writeOut(v); });
    } else {
      // Warp totals meet in shared memory; the first warp combines them.
      Value shared = body.getArgument(body.getNumArguments() - 1);
      Value warpId = arith::DivUIOp::create(b, loc, tid, cIndex(b, loc, kWarp));
      Value laneInWarp =
          arith::RemUIOp::create(b, loc, tid, cIndex(b, loc, kWarp));
      ifThen(isZero(laneInWarp), [&] {
        memref::StoreOp::create(b, loc, v, shared, ValueRange{warpId});
      });
      gpu::BarrierOp::create(b, loc);
      ifThen(isZero(warpId), [&] {
        Value has = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          tid, cIndex(b, loc, kBlock / kWarp));
        auto pick = scf::IfOp::create(b, loc, TypeRange{accTy}, has,
                                      /*withElse=*/true);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(pick.thenBlock());
          scf::YieldOp::create(
              b, loc,
              ValueRange{memref::LoadOp::create(b, loc, shared, ValueRange{tid})
                             .getResult()});
          b.setInsertionPointToStart(pick.elseBlock());
          scf::YieldOp::create(
              b, loc,
              ValueRange{
                  arith::ConstantOp::create(b, loc, m.neutral).getResult()});
        }
        Value total = warpReduce(b, loc, m.combiner, pick.getResult(0));
        ifThen(isZero(tid), [&] { writeOut(total); });
      });
    }
    op.erase();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr("tcc.kernel") || func.isExternal())
      return;
    SmallVector<std::pair<linalg::GenericOp, Match>> todo;
    for (auto op : func.getBody().front().getOps<linalg::GenericOp>())
      if (std::optional<Match> m = matchRowReduction(op))
        todo.push_back({op, *m});
    for (auto &[op, m] : todo)
      rewrite(op, m);
    // The reductions left (reduced axes not innermost, e.g. a mean over
    // H and W of [N, H, W, C], or over the rows of a matrix) get their
    // parallel loops outermost: the generic mapping then gives each output
    // element a thread that walks its reduced elements, neighbouring
    // threads reading neighbouring addresses. Left as they were, the
    // parallel loops inside the reduction ones ran on one thread.
    IRRewriter rewriter(func.getContext());
    SmallVector<linalg::GenericOp> generics(
        func.getBody().front().getOps<linalg::GenericOp>());
    for (linalg::GenericOp op : generics) {
      SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      SmallVector<unsigned> order;
      bool reductionSeen = false, interleaved = false;
      for (unsigned d = 0; d < iters.size(); ++d) {
        bool par = iters[d] == utils::IteratorType::parallel;
        if (par) {
          order.push_back(d);
          interleaved |= reductionSeen && ranges[d] != 1;
        } else if (ranges[d] != 1) {
          reductionSeen = true;
        }
      }
      if (!interleaved)
        continue;
      for (unsigned d = 0; d < iters.size(); ++d)
        if (iters[d] != utils::IteratorType::parallel)
          order.push_back(d);
      rewriter.setInsertionPoint(op);
      (void)linalg::interchangeGenericOp(rewriter, op, order);
    }
  }
};

} // namespace
