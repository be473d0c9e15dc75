//===- PartitionGrid.cpp - split a kernel's work into a grid --------------===//
//
// The host runtime calls a kernel on disjoint sub-ranges of [0, grid) from
// several threads, as a GPU runs blocks. This pass makes that safe: it picks,
// for every linalg op that writes a kernel argument, a parallel loop dimension
// and restricts the op to [begin, end) along it by subviews of its operands.
//
// First it tries to restrict every op, kernel-local buffers included, along
// one row dimension: a chain kernel (softmax: max, exp, sum, divide through
// local buffers) then computes only its own rows in each call. That holds
// when every buffer an op writes is read and written along one buffer
// dimension only, as a plain index: the rows are then independent. When
// that fails, ops writing kernel-local buffers run whole in every call (each
// call has its own allocations) and only the writers of kernel arguments are
// restricted.
//
//===----------------------------------------------------------------------===//
#include "passes/BufferUtils.h"
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

/// The dimension of `root` that dimension `dim` of `view` shows, when the
/// views between them only add or drop unit dimensions around it.
std::optional<unsigned> rootDim(Value view, unsigned dim) {
  while (view != rootOf(view)) {
    Operation *def = view.getDefiningOp();
    ArrayRef<int64_t> viewShape = cast<MemRefType>(view.getType()).getShape();
    SmallVector<ReassociationIndices> groups;
    Value source;
    bool expand;
    if (auto e = dyn_cast<memref::ExpandShapeOp>(def)) {
      groups = e.getReassociationIndices();
      source = e.getSrc();
      expand = true;
    } else if (auto c = dyn_cast<memref::CollapseShapeOp>(def)) {
      groups = c.getReassociationIndices();
      source = c.getSrc();
      expand = false;
    } else {
      return std::nullopt;
    }
    ArrayRef<int64_t> sourceShape =
        cast<MemRefType>(source.getType()).getShape();
    // Expanding: groups index the view; collapsing: they index the source.
    ArrayRef<int64_t> wide = expand ? viewShape : sourceShape;
    std::optional<unsigned> next;
    for (auto [g, group] : llvm::enumerate(groups)) {
      bool inGroup =
          expand ? llvm::is_contained(group, (int64_t)dim) : g == dim;
      if (!inGroup)
        continue;
      // The other dimensions of the group must all be 1.
      int64_t kept = -1;
      for (int64_t i : group)
        if (wide[i] != 1 || (expand && i == (int64_t)dim)) {
          if (kept >= 0)
            return std::nullopt;
          kept = i;
        }
      if (kept < 0 || (expand && kept != (int64_t)dim))
        return std::nullopt;
      next = expand ? (unsigned)g : (unsigned)kept;
    }
    if (!next)
      return std::nullopt;
    dim = *next;
    view = source;
  }
  return dim;
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
  /// Restrict every op, kernel-local buffers included.
  bool rows = false;
  SmallVector<linalg::LinalgOp> restricted; // in program order
  /// Buffers (roots) the restricted ops write: each is split by rows.
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
        if (isa<BlockArgument>(root) || rows) {
          if (isa<BlockArgument>(root) && root != init)
            return false; // a view of an argument: not handled
          writesShared = true;
        } else {
          writesLocal = true;
        }
      }
      if (writesShared && writesLocal && !rows)
        return false;
      if (writesShared || rows) {
        restricted.push_back(linalgOp);
        for (Value init : linalgOp.getDpsInits())
          sharedWritten.insert(rootOf(init));
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
    // A load in the body (a pad's or a gather's computed index) follows no
    // loop dimension: from a restricted buffer it may read rows that
    // another call writes (a slice feeding a pad read rows of its local
    // buffer that only another call had computed: garbage).
    bool loadsRestricted = false;
    op->walk([&](memref::LoadOp load) {
      loadsRestricted |= sharedWritten.contains(rootOf(load.getMemRef()));
    });
    if (loadsRestricted)
      return out;
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
        // d, or calls would race or read rows they did not write. A view of
        // a local buffer may add or drop unit dimensions.
        if (!pos || (pos->empty() && (op.isDpsInit(&operand) || shared)))
          ok = false;
        else if (shared && root != operand.get() &&
                 (isa<BlockArgument>(root) || pos->size() != 1 ||
                  !rootDim(operand.get(), pos->front())))
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
        unsigned dim = *rootDim(operand.get(), pos.front());
        auto [it, inserted] = bufferDim.try_emplace(root, dim);
        if (!inserted && it->second != dim)
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

    // Rows first (no call repeats another's work), else arguments only.
    Partitioner p;
    bool found = false;
    for (bool rows : {true, false}) {
      p = Partitioner();
      p.func = func;
      p.rows = rows;
      if (!p.collect())
        continue;
      p.dims.assign(p.restricted.size(), 0);
      if (p.assign(p.restricted.size() - 1)) {
        found = true;
        break;
      }
    }
    if (!found)
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
