//===- GpuRowFusion.cpp - a kernel of row-wise ops as one GPU launch
//-------===//
//
// A kernel whose ops all work row by row (softmax: max, exp, sum, divide; a
// norm: mean, variance, scale) runs as one launch with a block per row: the
// ops run one after another inside the block, separated by barriers, and the
// kernel-local buffers of a row (the exponentials, the max) live in shared
// memory. The row is read from global memory by the first op that needs it
// and is then in the caches for the next; nothing between the ops goes back
// to memory. Rows are independent, so blocks never wait for one another.
//
//===----------------------------------------------------------------------===//
#include "passes/BufferUtils.h"
#include "passes/GpuUtils.h"
#include "passes/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUROWFUSION
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc::gpuutil;
using mlir::tcc::rootOf;

namespace {

/// How an op touches a buffer, as a function of (row, position in the row).
enum class Access { Row, RowScalar, Vector, Scalar };

/// One op of the kernel: its first `numRow` loops walk the rows, the others
/// the row's `inner` positions (`length`, or 1 for a per-row op).
struct OpPlan {
  linalg::GenericOp op;
  unsigned numRow;
  int64_t inner;
  Operation *combiner = nullptr; // reductions
  TypedAttr neutral;
  /// Consecutive row positions a thread takes at once (16 bytes of the
  /// narrowest element it reads or writes in global memory).
  int64_t vector = 1;
};

/// Row-major strides of a box.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// How `operand` of `plan.op` is read or written, or nullopt when its
/// flattened offset is not row * S + inner * c with S in {length, 1, 0} and
/// c in {1, 0}.
std::optional<Access> classify(const OpPlan &plan, OpOperand &operand,
                               ArrayRef<int64_t> ranges, int64_t length) {
  auto type = dyn_cast<MemRefType>(operand.get().getType());
  if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
    return std::nullopt;
  linalg::GenericOp op = plan.op;
  AffineMap map = op.getMatchingIndexingMap(&operand);
  SmallVector<int64_t> viewStrides = stridesOf(type.getShape());
  SmallVector<int64_t> coef(ranges.size(), 0);
  for (auto [r, e] : llvm::enumerate(map.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(e)) {
      coef[dim.getPosition()] += viewStrides[r];
      continue;
    }
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0)
      return std::nullopt;
  }
  ArrayRef<int64_t> rowRanges = ranges.take_front(plan.numRow);
  ArrayRef<int64_t> innerRanges = ranges.drop_front(plan.numRow);
  SmallVector<int64_t> rowStrides = stridesOf(rowRanges),
                       innerStrides = stridesOf(innerRanges);
  // The scale of each part, from its first loop that moves.
  auto scaleOf = [&](ArrayRef<int64_t> rangesPart, ArrayRef<int64_t> strides,
                     ArrayRef<int64_t> coefs) -> std::optional<int64_t> {
    std::optional<int64_t> scale;
    for (auto [n, s, c] : llvm::zip(rangesPart, strides, coefs)) {
      if (n == 1)
        continue;
      if (c % s != 0)
        return std::nullopt;
      if (!scale)
        scale = c / s;
      else if (*scale * s != c)
        return std::nullopt;
    }
    return scale.value_or(0);
  };
  std::optional<int64_t> rowScale =
      scaleOf(rowRanges, rowStrides, ArrayRef(coef).take_front(plan.numRow));
  std::optional<int64_t> innerScale = scaleOf(
      innerRanges, innerStrides, ArrayRef(coef).drop_front(plan.numRow));
  if (!rowScale || !innerScale)
    return std::nullopt;
  int64_t rowsMoved = ShapedType::getNumElements(rowRanges),
          innerMoved = ShapedType::getNumElements(innerRanges);
  // A dimension of extent 1 says nothing: pick the reading that fits.
  if (innerMoved == 1)
    innerScale = *rowScale == length ? 1 : 0;
  if (rowsMoved == 1)
    rowScale = *innerScale == 1 ? length : 1;
  if (*innerScale == 1 && *rowScale == length)
    return Access::Row;
  if (*innerScale == 0 && *rowScale == 1)
    return Access::RowScalar;
  if (*innerScale == 1 && *rowScale == 0)
    return Access::Vector;
  if (*innerScale == 0 && *rowScale == 0)
    return Access::Scalar;
  return std::nullopt;
}

struct TccGpuRowFusion : mlir::tcc::impl::TccGpuRowFusionBase<TccGpuRowFusion> {
  using Base::Base;

  int64_t rows = 0, length = 0;
  SmallVector<OpPlan> plans;
  /// Kernel-local buffers, each a row or a per-row scalar.
  llvm::MapVector<Value, Access> scratch;

  /// Whether `func` is a row kernel; fills `plans` and `scratch`.
  bool analyse(func::FuncOp func) {
    plans.clear();
    scratch.clear();
    rows = length = 0;
    IRRewriter rewriter(func.getContext());
    // Named ops (fill, copy) become generics: one kind of op to handle.
    SmallVector<linalg::LinalgOp> named;
    for (Operation &op : func.getBody().front())
      if (isa<linalg::FillOp, linalg::CopyOp>(op))
        named.push_back(cast<linalg::LinalgOp>(op));
    SmallVector<linalg::GenericOp> ops;
    for (Operation &op : func.getBody().front()) {
      if (isa<func::ReturnOp, memref::AllocOp>(op) ||
          op.hasTrait<OpTrait::ConstantLike>() ||
          (isa<ViewLikeOpInterface>(op) && isMemoryEffectFree(&op)))
        continue;
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      if (!linalgOp || !linalgOp.hasPureBufferSemantics() ||
          !isa<linalg::GenericOp, linalg::FillOp, linalg::CopyOp>(op))
        return false;
    }
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return false;
    }
    for (auto op : func.getBody().front().getOps<linalg::GenericOp>())
      ops.push_back(op);

    // The row space comes from the reductions, which must agree.
    unsigned numReductions = 0;
    for (linalg::GenericOp op : ops) {
      if (op.getNumReductionLoops() == 0)
        continue;
      ++numReductions;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      unsigned par = op.getNumParallelLoops();
      for (unsigned i = 0; i < ranges.size(); ++i)
        if ((i < par) !=
            linalg::isParallelIterator(op.getIteratorTypesArray()[i]))
          return false; // reductions must be the innermost loops
      int64_t r = ShapedType::getNumElements(ArrayRef(ranges).take_front(par)),
              l = ShapedType::getNumElements(ArrayRef(ranges).drop_front(par));
      if ((rows && (r != rows || l != length)) || ShapedType::isDynamic(r))
        return false;
      rows = r;
      length = l;
    }
    if (numReductions == 0 || ops.size() < 2 || rows <= 0 || length <= 1)
      return false;

    for (linalg::GenericOp op : ops) {
      if (op.getNumDpsInits() != 1)
        return false;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (llvm::any_of(ranges, ShapedType::isDynamic))
        return false;
      SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
      OpPlan plan{op, 0, 0};
      bool found = false;
      for (int k = ranges.size(); k >= 0 && !found; --k) {
        ArrayRef<int64_t> r(ranges);
        if (ShapedType::getNumElements(r.take_front(k)) != rows)
          continue;
        int64_t inner = ShapedType::getNumElements(r.drop_front(k));
        if (inner != length && inner != 1)
          continue;
        bool rowsParallel = llvm::all_of(ArrayRef(iters).take_front(k),
                                         [](utils::IteratorType t) {
                                           return linalg::isParallelIterator(t);
                                         });
        if (!rowsParallel)
          continue;
        plan.numRow = k;
        plan.inner = inner;
        found = true;
      }
      if (!found)
        return false;
      if (op.getNumReductionLoops() != 0) {
        SmallVector<Operation *> combiners;
        if (!matchReduction(op.getRegionOutputArgs(), 0, combiners) ||
            combiners.size() != 1 || combiners[0]->getNumOperands() != 2)
          return false;
        std::optional<TypedAttr> neutral =
            arith::getNeutralElement(combiners[0]);
        Type t = combiners[0]->getResult(0).getType();
        if (!neutral || !t.isIntOrFloat() || t.getIntOrFloatBitWidth() > 64)
          return false;
        plan.combiner = combiners[0];
        plan.neutral = *neutral;
      }
      for (OpOperand &operand : op->getOpOperands()) {
        if (!isa<ShapedType>(operand.get().getType()))
          continue; // a scalar (a fill's value)
        std::optional<Access> access = classify(plan, operand, ranges, length);
        if (!access)
          return false;
        Value root = rootOf(operand.get());
        bool written = op.isDpsInit(&operand);
        if (root.getDefiningOp<memref::AllocOp>()) {
          if (*access != Access::Row && *access != Access::RowScalar)
            return false; // shared across rows: not private to a block
          auto [it, inserted] = scratch.insert({root, *access});
          if (!inserted && it->second != *access)
            return false;
        } else if (written &&
                   (*access == Access::Vector || *access == Access::Scalar)) {
          return false; // every block would write it
        }
      }
      int64_t minBytes = 8;
      for (OpOperand &operand : op->getOpOperands())
        if (auto t = dyn_cast<MemRefType>(operand.get().getType()))
          if (!rootOf(operand.get()).getDefiningOp<memref::AllocOp>())
            minBytes = std::min<int64_t>(
                minBytes, std::max<int64_t>(1, t.getElementTypeBitWidth() / 8));
      plan.vector = std::min<int64_t>(16 / minBytes, 8);
      while (plan.vector > 1 && plan.inner % plan.vector != 0)
        plan.vector /= 2;
      plans.push_back(plan);
    }
    // Kernel-local rows in shared memory: at most 48 KiB in all.
    int64_t bytes = 0;
    for (auto [root, access] : scratch) {
      auto t = cast<MemRefType>(root.getType());
      bytes += (access == Access::Row ? length : 1) *
               std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
    }
    return bytes <= 48 * 1024;
  }

  /// The buffer and indices `operand` reads or writes at loop indices `ivs`.
  std::pair<Value, SmallVector<Value>>
  address(OpBuilder &b, Location loc, const OpPlan &plan, OpOperand &operand,
          ArrayRef<Value> ivs, Value innerLinear,
          const llvm::DenseMap<Value, Value> &shared) {
    auto it = shared.find(rootOf(operand.get()));
    linalg::GenericOp op = plan.op;
    if (it == shared.end())
      return {operand.get(),
              applyMap(b, loc, op.getMatchingIndexingMap(&operand), ivs)};
    bool row = scratch.lookup(rootOf(operand.get())) == Access::Row;
    return {it->second, {row ? innerLinear : cIndex(b, loc, 0)}};
  }

  void generate(func::FuncOp func) {
    Location loc = func.getLoc();
    MLIRContext *ctx = func.getContext();
    auto workgroup =
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    int64_t widest = 1;
    for (const OpPlan &p : plans)
      widest = std::max(widest, p.vector);
    int64_t perThread = (length + widest - 1) / widest;
    int64_t threads = std::clamp<int64_t>(
        (perThread + kWarp - 1) / kWarp * kWarp, kWarp, 256);
    SmallVector<Type> attributions;
    for (auto [root, access] : scratch)
      attributions.push_back(
          MemRefType::get({access == Access::Row ? length : 1},
                          cast<MemRefType>(root.getType()).getElementType(),
                          MemRefLayoutAttrInterface(), workgroup));
    for (const OpPlan &p : plans)
      if (p.combiner)
        attributions.push_back(MemRefType::get(
            {threads / kWarp}, p.combiner->getResult(0).getType(),
            MemRefLayoutAttrInterface(), workgroup));

    // After the last op: every view the ops use is defined by then.
    OpBuilder b(ctx);
    b.setInsertionPointAfter(plans.back().op);
    Value one = cIndex(b, loc, 1);
    auto launch = gpu::LaunchOp::create(
        b, loc, cIndex(b, loc, rows), one, one, cIndex(b, loc, threads), one,
        one, nullptr, nullptr, ValueRange{}, attributions);
    Block &body = launch.getBody().front();
    b.setInsertionPointToEnd(&body);
    auto end = gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(end);
    ArrayRef<BlockArgument> wg = launch.getWorkgroupAttributions();
    llvm::DenseMap<Value, Value> shared;
    for (auto [i, entry] : llvm::enumerate(scratch))
      shared[entry.first] = wg[i];
    unsigned nextPartials = scratch.size();

    Value row = launch.getBlockIds().x, tid = launch.getThreadIds().x;
    for (const OpPlan &plan : plans) {
      linalg::GenericOp op = plan.op;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      ArrayRef<int64_t> rowRanges = ArrayRef(ranges).take_front(plan.numRow);
      ArrayRef<int64_t> innerRanges = ArrayRef(ranges).drop_front(plan.numRow);
      SmallVector<Value> rowIvs = delinearize(b, loc, row, rowRanges);
      Block *opBody = op.getBlock();
      OpOperand *init = op.getDpsInitOperand(0);
      Value accInit =
          plan.combiner
              ? arith::ConstantOp::create(b, loc, plan.neutral).getResult()
              : Value();
      // The thread's strided share of the row, `vector` positions at a time,
      // cloned op by op so that the loads of neighbours come first.
      int64_t vec = plan.vector;
      Value first =
          vec == 1 ? tid
                   : arith::MulIOp::create(b, loc, tid, cIndex(b, loc, vec))
                         .getResult();
      auto loop = scf::ForOp::create(b, loc, first, cIndex(b, loc, plan.inner),
                                     cIndex(b, loc, threads * vec),
                                     plan.combiner ? ValueRange{accInit}
                                                   : ValueRange{});
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        SmallVector<Value> ks;
        SmallVector<SmallVector<Value>> ivs(vec);
        SmallVector<IRMapping> maps(vec);
        for (int64_t u = 0; u < vec; ++u) {
          Value k = loop.getInductionVar();
          if (u)
            k = arith::AddIOp::create(b, loc, k, cIndex(b, loc, u));
          ks.push_back(k);
          ivs[u] = rowIvs;
          llvm::append_range(ivs[u], delinearize(b, loc, k, innerRanges));
        }
        for (OpOperand *in : op.getDpsInputOperands())
          for (int64_t u = 0; u < vec; ++u) {
            Value arg = opBody->getArgument(in->getOperandNumber());
            if (!isa<ShapedType>(in->get().getType())) {
              maps[u].map(arg, in->get());
              continue;
            }
            auto [buffer, idx] =
                address(b, loc, plan, *in, ivs[u], ks[u], shared);
            maps[u].map(arg, memref::LoadOp::create(b, loc, buffer, idx));
          }
        Value acc = plan.combiner ? loop.getRegionIterArgs()[0] : Value();
        for (Operation &inner : opBody->without_terminator())
          for (int64_t u = 0; u < vec; ++u) {
            if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
              maps[u].map(index.getResult(), ivs[u][index.getDim()]);
              continue;
            }
            // The running value passes from one position to the next.
            if (&inner == plan.combiner)
              maps[u].map(op.getRegionOutputArgs()[0], acc);
            Operation *clone = b.clone(inner, maps[u]);
            if (&inner == plan.combiner)
              acc = clone->getResult(0);
          }
        Value yieldedArg =
            cast<linalg::YieldOp>(opBody->getTerminator()).getOperand(0);
        if (plan.combiner) {
          scf::YieldOp::create(b, loc, acc);
        } else {
          for (int64_t u = 0; u < vec; ++u) {
            auto [buffer, idx] =
                address(b, loc, plan, *init, ivs[u], ks[u], shared);
            memref::StoreOp::create(b, loc, maps[u].lookupOrDefault(yieldedArg),
                                    buffer, idx);
          }
        }
      }
      if (plan.combiner) {
        // Lanes, then warps through shared memory, then the first thread
        // combines with the output's initial value.
        Value partials = wg[nextPartials++];
        Value v = warpReduce(b, loc, plan.combiner, loop.getResult(0));
        Value warpId =
            arith::DivUIOp::create(b, loc, tid, cIndex(b, loc, kWarp));
        Value lane = arith::RemUIOp::create(b, loc, tid, cIndex(b, loc, kWarp));
        auto isZero = [&](Value x) {
          return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x,
                                       cIndex(b, loc, 0));
        };
        auto then = [&](Value cond, auto fn) {
          auto branch = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(branch.thenBlock()->getTerminator());
          fn();
        };
        then(isZero(lane), [&] {
          memref::StoreOp::create(b, loc, v, partials, ValueRange{warpId});
        });
        gpu::BarrierOp::create(b, loc);
        then(isZero(warpId), [&] {
          Value has =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid,
                                    cIndex(b, loc, threads / kWarp));
          auto pick = scf::IfOp::create(b, loc, TypeRange{v.getType()}, has,
                                        /*withElse=*/true);
          {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(pick.thenBlock());
            scf::YieldOp::create(
                b, loc,
                ValueRange{
                    memref::LoadOp::create(b, loc, partials, ValueRange{tid})
                        .getResult()});
            b.setInsertionPointToStart(pick.elseBlock());
            scf::YieldOp::create(
                b, loc,
                ValueRange{arith::ConstantOp::create(b, loc, plan.neutral)
                               .getResult()});
          }
          Value total = warpReduce(b, loc, plan.combiner, pick.getResult(0));
          then(isZero(tid), [&] {
            SmallVector<Value> ivs = rowIvs;
            for (size_t i = 0; i < innerRanges.size(); ++i)
              ivs.push_back(cIndex(b, loc, 0));
            auto [buffer, idx] =
                address(b, loc, plan, *init, ivs, cIndex(b, loc, 0), shared);
            Value old = memref::LoadOp::create(b, loc, buffer, idx);
            memref::StoreOp::create(
                b, loc, combine(b, plan.combiner, old, total), buffer, idx);
          });
        });
      }
      // What one op wrote, the next may read at any position of the row.
      gpu::BarrierOp::create(b, loc);
    }
    for (OpPlan &plan : llvm::reverse(plans))
      plan.op.erase();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr("tcc.kernel") || func.isExternal() ||
        !func.getBody().hasOneBlock())
      return;
    if (!analyse(func))
      return;
    generate(func);
  }
};

} // namespace
