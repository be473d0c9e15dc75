//===- PartitionGrid.cpp - split a kernel's work into a grid --------------===//
//
// The host runtime calls a kernel on disjoint sub-ranges of [0, grid) from
// several threads, as a GPU runs blocks. This pass makes that safe: it picks,
// for every linalg op that writes a kernel argument, a parallel loop dimension
// and restricts the op to [begin, end) along it by subviews of its operands.
// Ops writing kernel-local buffers run whole in every call (each call has its
// own allocations), so they need no restriction.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCPARTITIONGRID
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

/// The allocation or argument a (possibly viewed) buffer comes from.
Value rootOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    v = view.getViewSource();
  }
  return v;
}

/// Positions of the results of `map` that are exactly `d<dim>`, or nullopt
/// when d<dim> also appears inside a compound expression.
std::optional<SmallVector<unsigned>> plainPositions(AffineMap map,
                                                    unsigned dim) {
  SmallVector<unsigned> positions;
  for (auto [i, expr] : llvm::enumerate(map.getResults())) {
    if (auto d = dyn_cast<AffineDimExpr>(expr)) {
      if (d.getPosition() == dim)
        positions.push_back(i);
      continue;
    }
    if (expr.isFunctionOfDim(dim))
      return std::nullopt;
  }
  return positions;
}

struct Partitioner {
  func::FuncOp func;
  SmallVector<linalg::LinalgOp> restricted; // in program order
  /// Writers of each argument buffer among the restricted ops.
  llvm::DenseSet<Value> sharedWritten;
  /// Chosen loop dimension of each restricted op.
  SmallVector<unsigned> dims;
  /// Buffer dimension each shared buffer is split along.
  llvm::DenseMap<Value, unsigned> bufferDim;
  int64_t extent = 0;

  /// Classifies the kernel's ops; false when the kernel cannot be split.
  bool collect() {
    for (Operation &op : func.getBody().front()) {
      if (isa<func::ReturnOp, arith::ConstantOp, memref::AllocOp,
              memref::AllocaOp>(op) ||
          isa<ViewLikeOpInterface>(op))
        continue;
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      if (!linalgOp || !linalgOp.hasPureBufferSemantics())
        return false;
      bool writesShared = false, writesLocal = false;
      for (Value init : linalgOp.getDpsInits()) {
        Value root = rootOf(init);
        if (isa<BlockArgument>(root)) {
          if (root != init) // a view of an argument: not handled
            return false;
          writesShared = true;
        } else {
          writesLocal = true;
        }
      }
      if (writesShared && writesLocal)
        return false;
      if (writesShared) {
        restricted.push_back(linalgOp);
        for (Value init : linalgOp.getDpsInits())
          sharedWritten.insert(init);
      }
    }
    // Whole-running ops must not read what restricted ops wrote: they would
    // see only this call's rows.
    for (Operation &op : func.getBody().front()) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      if (!linalgOp || llvm::is_contained(restricted, linalgOp))
        continue;
      for (Value v : op.getOperands())
        if (sharedWritten.contains(rootOf(v)))
          return false;
    }
    return !restricted.empty();
  }

  /// Loop dimensions of `op` along which it can be restricted.
  SmallVector<unsigned> candidates(linalg::LinalgOp op) {
    SmallVector<unsigned> out;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    auto iterators = op.getIteratorTypesArray();
    for (unsigned d = 0; d < op.getNumLoops(); ++d) {
      if (iterators[d] != utils::IteratorType::parallel ||
          ShapedType::isDynamic(ranges[d]) || ranges[d] < 2)
        continue;
      bool ok = true;
      for (OpOperand &operand : op->getOpOperands()) {
        if (!isa<MemRefType>(operand.get().getType()))
          continue;
        auto pos = plainPositions(op.getMatchingIndexingMap(&operand), d);
        Value root = rootOf(operand.get());
        bool shared = sharedWritten.contains(root);
        // Every write, and every read of a restricted buffer, must follow
        // d, or calls would race or read rows they did not write.
        if (!pos || (pos->empty() && (op.isDpsInit(&operand) || shared)) ||
            (shared && root != operand.get()))
          ok = false;
      }
      if (ok)
        out.push_back(d);
    }
    // Largest extent first: more, evener chunks.
    llvm::stable_sort(
        out, [&](unsigned a, unsigned b) { return ranges[a] > ranges[b]; });
    return out;
  }

  /// Assigns dims to restricted ops from the last one back, keeping every
  /// shared buffer split along one buffer dimension and one extent.
  bool assign(int index) {
    if (index < 0)
      return true;
    linalg::LinalgOp op = restricted[index];
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    for (unsigned d : candidates(op)) {
      if (extent && ranges[d] != extent)
        continue;
      auto savedBufferDim = bufferDim;
      int64_t savedExtent = extent;
      bool ok = true;
      for (OpOperand &operand : op->getOpOperands()) {
        Value root = rootOf(operand.get());
        if (!sharedWritten.contains(root))
          continue;
        auto pos = *plainPositions(op.getMatchingIndexingMap(&operand), d);
        if (pos.size() != 1) {
          ok = false;
          break;
        }
        auto [it, inserted] = bufferDim.try_emplace(root, pos.front());
        if (!inserted && it->second != pos.front())
          ok = false;
      }
      if (ok) {
        extent = ranges[d];
        dims[index] = d;
        if (assign(index - 1))
          return true;
      }
      bufferDim = std::move(savedBufferDim);
      extent = savedExtent;
    }
    return false;
  }

  void restrict(linalg::LinalgOp op, unsigned d, Value begin, Value end) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value size = arith::SubIOp::create(b, loc, end, begin);
    for (OpOperand &operand : op->getOpOperands()) {
      auto type = dyn_cast<MemRefType>(operand.get().getType());
      if (!type)
        continue;
      auto pos = *plainPositions(op.getMatchingIndexingMap(&operand), d);
      if (pos.empty())
        continue;
      SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes,
          strides(type.getRank(), b.getIndexAttr(1));
      for (int64_t s : type.getShape())
        sizes.push_back(b.getIndexAttr(s));
      for (unsigned p : pos) {
        offsets[p] = begin;
        sizes[p] = size;
      }
      Value view = memref::SubViewOp::create(b, loc, operand.get(), offsets,
                                             sizes, strides);
      operand.set(view);
    }
    // linalg.index along d now counts from 0 in the restricted range.
    op->walk([&](linalg::IndexOp index) {
      if (index.getDim() != d)
        return;
      OpBuilder ib(index);
      ib.setInsertionPointAfter(index);
      auto shifted = arith::AddIOp::create(ib, index.getLoc(), index, begin);
      index.getResult().replaceAllUsesExcept(shifted, shifted);
    });
  }
};

struct TccPartitionGrid
    : mlir::tcc::impl::TccPartitionGridBase<TccPartitionGrid> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr("tcc.kernel") || func.isExternal())
      return;
    Builder b(func.getContext());
    unsigned n = func.getNumArguments();
    (void)func.insertArgument(n, b.getIndexType(), DictionaryAttr(),
                              func.getLoc());
    (void)func.insertArgument(n + 1, b.getIndexType(), DictionaryAttr(),
                              func.getLoc());
    Value begin = func.getArgument(n), end = func.getArgument(n + 1);
    func->setAttr("tcc.grid", b.getI64IntegerAttr(1));

    Partitioner p;
    p.func = func;
    if (!p.collect())
      return;
    p.dims.assign(p.restricted.size(), 0);
    if (!p.assign(p.restricted.size() - 1))
      return;
    int64_t work = 0;
    for (linalg::LinalgOp op : p.restricted) {
      int64_t iterations = 1;
      for (int64_t r : op.getStaticLoopRanges())
        iterations = std::min<int64_t>(iterations * std::max<int64_t>(r, 1),
                                       int64_t(1) << 40);
      work += iterations;
    }
    if (work < minWork)
      return;
    for (auto [op, d] : llvm::zip(p.restricted, p.dims))
      p.restrict(op, d, begin, end);
    func->setAttr("tcc.grid", b.getI64IntegerAttr(p.extent));
  }
};

} // namespace
