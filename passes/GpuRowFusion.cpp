//===- GpuRowFusion.cpp - a kernel of row-wise ops as one GPU launch ------===//
//
// A kernel whose ops all work row by row (softmax: max, exp, sum, divide; a
// norm: mean, variance, scale) runs as one launch in which a group of
// threads owns a row. Every op gives a row position to the same thread (16
// bytes of neighbours at a time, strided over the group), so whatever one op
// leaves for the next (the exponentials, a centred row, the input itself)
// stays in that thread's registers: the row is read from memory once and the
// result written once, which is what makes these kernels run at the copy
// bandwidth. Per-row values (a max, a sum) reach every thread of the group
// through shuffles, and across warps through shared memory. Rows are
// independent, so groups never wait for one another.
//
// A reduction of per-row values to one value (a loss's mean, an index
// check's count) runs in the same launch: each block combines its rows'
// values and writes one partial; the last block to finish adds them to the
// output, whose initial value (its fill) is written before the launch, and
// runs the single-value ops that read such an output (a mean's division).
// Separate launches for those cost more than the reduction itself on a
// loss over long rows (five launches instead of two).
//
//===----------------------------------------------------------------------===//
#include "passes/BufferUtils.h"
#include "passes/ExpForm.h"
#include "passes/GpuUtils.h"
#include "passes/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
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

/// The most partials a thread of the last block combines (see generate).
constexpr int64_t kMostPartials = 16;
/// The fewest and the most threads of the launch that finishes the
/// reductions of per-row values after a row launch (finishInLaunch): enough
/// that each combines at most kMostPartials partials.
constexpr int64_t kFinishThreads = 256;
constexpr int64_t kMostFinishThreads = 1024;

/// The threads of a finish launch over `parts` partials: a power of two
/// from kFinishThreads up.
int64_t finishThreadsFor(int64_t parts) {
  int64_t need = (parts + kMostPartials - 1) / kMostPartials;
  return std::clamp<int64_t>(int64_t(llvm::PowerOf2Ceil(need)), kFinishThreads,
                             kMostFinishThreads);
}

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
  /// A sum of f32 (or narrower) values that the lowering accumulates in f64
  /// is combined in f32 here: the f64 guards a sequential loop, whose error
  /// grows with the length; the tree and the shuffles grow it with log2 of
  /// it, within the format's "accumulate in f32". f64 doubled the shuffles
  /// and the registers of every partial sum.
  bool narrowSum = false;
  /// Consecutive row positions a thread takes at once (16 bytes of the
  /// narrowest element it reads or writes in global memory).
  int64_t vector = 1;
  /// A reduction of per-row values to one value (every loop walks rows).
  bool whole = false;
};

/// Whether `op` reduces to one value along loops that are all reductions
/// (or of extent 1): a candidate reduction of per-row values.
bool isWholeCandidate(linalg::GenericOp op) {
  if (op.getNumReductionLoops() == 0 || op.getNumDpsInits() != 1)
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (auto [n, it] : llvm::zip(ranges, op.getIteratorTypesArray()))
    if (ShapedType::isDynamic(n) || (n != 1 && linalg::isParallelIterator(it)))
      return false;
  auto type = dyn_cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
  return type && type.hasStaticShape() && type.getNumElements() == 1;
}

int64_t loopProduct(linalg::GenericOp op) {
  return ShapedType::getNumElements(op.getStaticLoopRanges());
}

/// Row-major strides of a box.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// How `operand` of `plan.op` is read or written, or nullopt when its
/// flattened offset is not row * S + inner * c with S in {length, 1, 0} and
/// c in {1, 0}. With `rowCoefs`, an offset whose row part is any sum of the
/// op's row loops (a mask [B, 1, 1, S] or slopes [1, H, 1, 1] read by rows
/// (b, h, l)) is a Row (c 1) or RowScalar (c 0) read at that sum, whose
/// coefficients fill `rowCoefs` (left empty for the plain reads).
std::optional<Access> classify(const OpPlan &plan, OpOperand &operand,
                               ArrayRef<int64_t> ranges, int64_t length,
                               SmallVectorImpl<int64_t> *rowCoefs = nullptr) {
  if (rowCoefs)
    rowCoefs->clear();
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
  if (!innerScale)
    return std::nullopt;
  int64_t rowsMoved = ShapedType::getNumElements(rowRanges),
          innerMoved = ShapedType::getNumElements(innerRanges);
  // A dimension of extent 1 says nothing: pick the reading that fits.
  if (innerMoved == 1)
    innerScale = rowScale && *rowScale == length ? 1 : 0;
  if (rowsMoved == 1)
    rowScale = *innerScale == 1 ? length : 1;
  if (rowScale) {
    if (*innerScale == 1 && *rowScale == length)
      return Access::Row;
    if (*innerScale == 0 && *rowScale == 1)
      return Access::RowScalar;
    if (*innerScale == 1 && *rowScale == 0)
      return Access::Vector;
    if (*innerScale == 0 && *rowScale == 0)
      return Access::Scalar;
  }
  if (!rowCoefs || *innerScale > 1)
    return std::nullopt;
  ArrayRef<int64_t> rowCoef = ArrayRef(coef).take_front(plan.numRow);
  // A row read whole takes vectors at multiples of their width: its rows
  // start at multiples of the length (which the width divides).
  if (*innerScale == 1 &&
      llvm::any_of(rowCoef, [&](int64_t c) { return c % length != 0; }))
    return std::nullopt;
  rowCoefs->assign(rowCoef.begin(), rowCoef.end());
  return *innerScale == 1 ? Access::Row : Access::RowScalar;
}

/// How the threads of a launch share the rows: `threads` consecutive threads
/// own a row, `rowsPerBlock` rows a block; a thread holds `vectors` runs of
/// `vec` neighbouring positions, the i-th starting at (i * threads + t) * vec.
/// A row longer than a block's registers hold spans the `cluster` blocks of
/// a cluster (one row a cluster): thread t of the block of rank r is thread
/// r * threads + t of the row's cluster * threads.
struct Layout {
  int64_t vec = 1, threads = 1, rowsPerBlock = 1, vectors = 1, cluster = 1;
  /// A streamed row (stream-rows): `chunks` passes of `vectors` vectors a
  /// thread, the i-th vector of chunk c at ((c * vectors + i) * threads + t)
  /// * vec.
  int64_t chunks = 1;
  int64_t rowThreads() const { return threads * cluster; }
};

/// The layout of rows of `length` read `vec` positions at a time: about
/// `perThread` values a thread (twice that at most: registers), a power of
/// two of threads up to a warp (several rows a block of 128), whole warps
/// beyond, at most 1024; beyond that, a row spans a cluster (a power of two
/// of blocks, at most `maxCluster`) of the smallest blocks from
/// `clusterThreads` up that hold it. On the H200 blocks of 256 (then 512)
/// ran long rows 1.1-1.45x faster than blocks of 1024 (session 34).
std::optional<Layout> chooseLayout(int64_t rows, int64_t length, int64_t vec,
                                   int64_t perThread, int64_t maxCluster,
                                   int64_t clusterThreads) {
  Layout l;
  l.vec = vec;
  int64_t vectors = length / vec;
  int64_t want = std::max<int64_t>(1, perThread / vec);
  int64_t threads = (vectors + want - 1) / want;
  if (threads <= kWarp)
    threads = int64_t(llvm::PowerOf2Ceil(threads));
  else
    threads = std::min<int64_t>((threads + kWarp - 1) / kWarp * kWarp, 1024);
  l.threads = threads;
  // Partial values of a row's warps meet in shared memory: a block a row.
  l.rowsPerBlock = threads <= kWarp ? std::min(128 / threads, rows) : 1;
  l.vectors = (vectors + threads - 1) / threads;
  int64_t most = std::max<int64_t>(2 * perThread, vec);
  if (l.vectors * vec <= most)
    return l;
  // The smallest blocks from `clusterThreads` threads up (more blocks a
  // multiprocessor: one's loads run while another waits at its cluster's
  // barrier), the fewest of them a cluster.
  // (Whole warps, two at least: a block's total then meets in shared memory.)
  for (int64_t t = int64_t(llvm::PowerOf2Ceil(
           std::clamp<int64_t>(clusterThreads, 2 * kWarp, 1024)));
       t <= 1024; t *= 2)
    for (int64_t c = 2; c <= maxCluster; c *= 2) {
      int64_t v = (vectors + c * t - 1) / (c * t);
      if (v * vec > most)
        continue;
      l.threads = t;
      l.cluster = c;
      l.vectors = v;
      l.rowsPerBlock = 1;
      return l;
    }
  return std::nullopt;
}

struct TccGpuRowFusion : mlir::tcc::impl::TccGpuRowFusionBase<TccGpuRowFusion> {
  using Base::Base;

  int64_t rows = 0, length = 0;
  SmallVector<OpPlan> plans;
  /// Kernel-local buffers, each a row or a per-row value.
  llvm::MapVector<Value, Access> scratch;
  /// How each operand of the planned ops is accessed.
  llvm::DenseMap<OpOperand *, Access> accesses;
  /// A read broadcast along some rows (classify's rowCoefs): its row's
  /// offset is the sum of `coefs` times the op's row loop indices, the row
  /// index delinearized over `ranges`.
  struct RowBase {
    SmallVector<int64_t> ranges, coefs;
    bool operator==(const RowBase &o) const {
      return ranges == o.ranges && coefs == o.coefs;
    }
  };
  /// The distinct row bases, and the one of each broadcast read.
  SmallVector<RowBase> rowBaseList;
  llvm::DenseMap<OpOperand *, unsigned> rowBases;
  /// Outputs of whole reductions (roots): memory, not registers.
  llvm::SetVector<Value> wholeRoots;
  /// Single-value ops that fill or read those outputs: their own launches.
  SmallVector<linalg::GenericOp> outside;
  Layout layout;

  /// Fills in the combiner of reduction `plan.op` (one combining op whose
  /// neutral value is known); false where it has none.
  bool matchCombiner(OpPlan &plan) {
    linalg::GenericOp op = plan.op;
    SmallVector<Operation *> combiners;
    if (!matchReduction(op.getRegionOutputArgs(), 0, combiners) ||
        combiners.size() != 1 || combiners[0]->getNumOperands() != 2)
      return false;
    std::optional<TypedAttr> neutral = arith::getNeutralElement(combiners[0]);
    Type t = combiners[0]->getResult(0).getType();
    if (!neutral || !t.isIntOrFloat() || t.getIntOrFloatBitWidth() > 64)
      return false;
    plan.combiner = combiners[0];
    plan.neutral = *neutral;
    if (auto add = dyn_cast<arith::AddFOp>(plan.combiner); add && t.isF64()) {
      BlockArgument acc = op.getRegionOutputArgs()[0];
      Value other = add.getLhs() == acc ? add.getRhs() : add.getLhs();
      if (auto ext = other.getDefiningOp<arith::ExtFOp>())
        plan.narrowSum = ext.getIn().getType().getIntOrFloatBitWidth() <= 32;
    }
    return true;
  }

  /// Whether `o`, one of `outside`, moves after the row launch: it stands
  /// before the last planned op and reads a whole reduction's output that a
  /// planned op before it wrote (a sum's narrowing between two losses'
  /// sums), which exists only after the launch.
  bool movesAfter(linalg::GenericOp o) {
    if (!o->isBeforeInBlock(plans.back().op))
      return false;
    llvm::DenseSet<Value> reads;
    for (OpOperand *in : o.getDpsInputOperands())
      if (isa<MemRefType>(in->get().getType()))
        reads.insert(rootOf(in->get()));
    for (OpPlan &p : plans) {
      if (!p.op->isBeforeInBlock(o))
        break;
      for (OpOperand &out : p.op.getDpsInitsMutable())
        if (wholeRoots.contains(rootOf(out.get())) &&
            reads.contains(rootOf(out.get())))
          return true;
    }
    return false;
  }

  /// Whether the single-value ops in `outside` can run as launches of their
  /// own: none touches registers. The row launch takes the place of the
  /// last planned op; an op standing after it stays there. One that moves
  /// after the launch (movesAfter) needs that no planned op after it
  /// writes what it reads or touches what it writes. The others stay where they
  /// stand: they must not see what planned ops before them wrote, nor write
  /// what those touch; nor, when a moved op stood before them, write what it
  /// touches or read what it writes.
  bool outsideOrderHolds() {
    Operation *last = plans.back().op;
    llvm::DenseSet<Value> movedReads, movedWrites;
    // Whether planned op `op` writes a root of `reads` or touches one of
    // `writes`.
    auto conflicts = [&](linalg::GenericOp op,
                         const llvm::DenseSet<Value> &reads,
                         const llvm::DenseSet<Value> &writes) {
      return llvm::any_of(op->getOpOperands(), [&](OpOperand &operand) {
        if (!isa<MemRefType>(operand.get().getType()))
          return false;
        Value root = rootOf(operand.get());
        return writes.contains(root) ||
               (op.isDpsInit(&operand) && reads.contains(root));
      });
    };
    for (linalg::GenericOp o : outside) {
      llvm::DenseSet<Value> reads, writes;
      for (OpOperand &operand : o->getOpOperands()) {
        if (!isa<MemRefType>(operand.get().getType()))
          continue;
        Value root = rootOf(operand.get());
        if (scratch.contains(root))
          return false;
        (o.isDpsInit(&operand) ? writes : reads).insert(root);
      }
      if (last->isBeforeInBlock(o))
        continue;
      if (movesAfter(o)) {
        // The planned ops after it now run before it.
        for (const OpPlan &p : plans)
          if (!p.op->isBeforeInBlock(o) && conflicts(p.op, reads, writes))
            return false;
        movedReads.insert(reads.begin(), reads.end());
        movedWrites.insert(writes.begin(), writes.end());
        continue;
      }
      if (llvm::any_of(writes,
                       [&](Value r) {
                         return movedReads.contains(r) ||
                                movedWrites.contains(r);
                       }) ||
          llvm::any_of(reads, [&](Value r) { return movedWrites.contains(r); }))
        return false;
      for (const OpPlan &p : plans) {
        if (!p.op->isBeforeInBlock(o))
          break;
        if (conflicts(p.op, reads, writes))
          return false;
      }
    }
    return true;
  }

  /// Whether `func` is a row kernel; fills `plans`, `scratch`, `accesses`
  /// and `layout`.
  bool analyse(func::FuncOp func) {
    plans.clear();
    scratch.clear();
    accesses.clear();
    rowBases.clear();
    rowBaseList.clear();
    wholeRoots.clear();
    outside.clear();
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
    // The row space comes from the reductions along rows, which must
    // agree; reductions of per-row values to one value are not among them
    // unless nothing else is (one row: the longest then walk it).
    SmallVector<linalg::GenericOp> rowReductions, wholes;
    for (Operation &o : func.getBody().front())
      if (auto op = dyn_cast<linalg::GenericOp>(o);
          op && op.getNumReductionLoops() != 0)
        (isWholeCandidate(op) ? wholes : rowReductions).push_back(op);
    if (rowReductions.empty() && !wholes.empty()) {
      int64_t most = 0;
      for (linalg::GenericOp op : wholes)
        most = std::max(most, loopProduct(op));
      for (linalg::GenericOp op : wholes)
        if (loopProduct(op) == most)
          rowReductions.push_back(op);
    }
    unsigned numReductions = 0;
    for (linalg::GenericOp op : rowReductions) {
      ++numReductions;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      unsigned par = op.getNumParallelLoops();
      for (unsigned i = 0; i < ranges.size(); ++i)
        if ((i < par) !=
            linalg::isParallelIterator(op.getIteratorTypesArray()[i]))
          return false; // reductions must be the innermost loops
      if (llvm::any_of(ranges, ShapedType::isDynamic))
        return false;
      int64_t r = ShapedType::getNumElements(ArrayRef(ranges).take_front(par)),
              l = ShapedType::getNumElements(ArrayRef(ranges).drop_front(par));
      if (rows && (r != rows || l != length))
        return false;
      rows = r;
      length = l;
    }
    if (numReductions == 0 || rows <= 0 || length <= 1)
      return false;
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return false;
    }
    for (auto op : func.getBody().front().getOps<linalg::GenericOp>())
      ops.push_back(op);
    if (ops.size() < 2)
      return false;
    // Whole reductions: those that walk the rows once.
    for (linalg::GenericOp op : ops)
      if (isWholeCandidate(op) && loopProduct(op) == rows &&
          !wholeRoots.insert(rootOf(op.getDpsInitOperand(0)->get())))
        return false; // two write one output

    // Roots of buffers the kernel's ops write outside the kernel, and how.
    llvm::DenseMap<Value, Access> globalWrites;
    for (linalg::GenericOp op : ops) {
      // Several outputs only where nothing is combined (ops fused into one).
      if (op.getNumDpsInits() != 1 &&
          (op.getNumDpsInits() == 0 || op.getNumReductionLoops() != 0))
        return false;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (llvm::any_of(ranges, ShapedType::isDynamic))
        return false;
      SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
      OpPlan plan{op, 0, 0};
      if (isWholeCandidate(op) && loopProduct(op) == rows) {
        plan.numRow = ranges.size();
        plan.inner = 1;
        plan.whole = true;
        if (!matchCombiner(plan))
          return false;
        for (OpOperand *in : op.getDpsInputOperands()) {
          if (!isa<ShapedType>(in->get().getType()))
            continue;
          std::optional<Access> access = classify(plan, *in, ranges, length);
          if (!access ||
              (*access != Access::RowScalar && *access != Access::Scalar))
            return false;
          Value root = rootOf(in->get());
          if (wholeRoots.contains(root))
            return false;
          accesses[in] = *access;
          if (root.getDefiningOp<memref::AllocOp>()) {
            if (*access != Access::RowScalar)
              return false;
            auto [it, inserted] = scratch.insert({root, *access});
            if (!inserted && it->second != *access)
              return false;
          }
        }
        plans.push_back(plan);
        continue;
      }
      // Ops that fill or read a whole reduction's output run on their own.
      if (llvm::any_of(op->getOperands(), [&](Value v) {
            return isa<MemRefType>(v.getType()) &&
                   wholeRoots.contains(rootOf(v));
          })) {
        if (loopProduct(op) != 1)
          return false;
        outside.push_back(op);
        continue;
      }
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
      if (op.getNumReductionLoops() != 0 &&
          (plan.inner != length || !matchCombiner(plan)))
        return false;
      for (OpOperand &operand : op->getOpOperands()) {
        if (!isa<ShapedType>(operand.get().getType()))
          continue; // a scalar (a fill's value)
        SmallVector<int64_t> rowCoefs;
        std::optional<Access> access =
            classify(plan, operand, ranges, length, &rowCoefs);
        if (!access)
          return false;
        accesses[&operand] = *access;
        Value root = rootOf(operand.get());
        bool written = op.isDpsInit(&operand);
        bool local = bool(root.getDefiningOp<memref::AllocOp>());
        // A read broadcast along some rows: only of memory the kernel does
        // not write (checked below), read at its own row offset.
        if (!rowCoefs.empty()) {
          if (written || local)
            return false;
          RowBase base{
              SmallVector<int64_t>(ArrayRef(ranges).take_front(plan.numRow)),
              rowCoefs};
          auto known = llvm::find(rowBaseList, base);
          rowBases[&operand] = known - rowBaseList.begin();
          if (known == rowBaseList.end())
            rowBaseList.push_back(base);
        }
        // What an op writes: a per-row value from a reduction or a per-row
        // op, a row from the others.
        if (written && *access != (plan.inner == length && !plan.combiner
                                       ? Access::Row
                                       : Access::RowScalar))
          return false;
        // A per-row op reads one value of a row: only from memory.
        if (!written && plan.inner == 1 && *access == Access::Row && local)
          return false;
        if (local) {
          if (*access != Access::Row && *access != Access::RowScalar)
            return false; // shared across rows: not private to a row
          auto [it, inserted] = scratch.insert({root, *access});
          if (!inserted && it->second != *access)
            return false;
        } else if (written) {
          auto [it, inserted] = globalWrites.insert({root, *access});
          if (!inserted && it->second != *access)
            return false;
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
    // A buffer written outside the kernel is read only the way it is
    // written (so the copy in registers is the one to read), and one read
    // across rows must not be written.
    // A per-row op reads memory directly, so never a row the ops write.
    for (auto [operand, access] : accesses) {
      auto it = globalWrites.find(rootOf(operand->get()));
      if (it == globalWrites.end())
        continue;
      if (rowBases.count(operand))
        return false;
      auto op = cast<linalg::GenericOp>(operand->getOwner());
      bool perRow = op.getStaticLoopRanges().empty() ||
                    llvm::any_of(plans, [&](const OpPlan &p) {
                      return p.op == op && p.inner == 1;
                    });
      if (it->second != access || (perRow && access == Access::Row))
        return false;
    }
    if (plans.empty() || !outsideOrderHolds())
      return false;
    // A load in an op's body (a gather) reads memory as it was before the
    // launch: never a buffer the kernel's ops write or keep in registers.
    for (OpPlan &p : plans) {
      WalkResult r = p.op->walk([&](memref::LoadOp load) {
        Value root = rootOf(load.getMemRef());
        return scratch.contains(root) || wholeRoots.contains(root) ||
                       globalWrites.contains(root)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      });
      if (r.wasInterrupted())
        return false;
    }
    // One placement of row positions for every op: the widest vector (each
    // is a power of two dividing the length).
    int64_t vec = 1;
    for (const OpPlan &p : plans)
      if (p.inner == length)
        vec = std::max(vec, p.vector);
    // Rows shorter than the values a thread would hold take a thread each,
    // and a warp's every load then reads one element of 32 rows `length`
    // apart, its every store writes them so. Where the kernel writes rows,
    // at most 4 values a thread instead (2 threads for a row of 7), so that
    // a warp's accesses cover runs of neighbouring positions: on the H200,
    // rows of 7 ran 1.5-2.2x faster (softmax, norms; f32, f16, bf16), where
    // 2 values a thread (4 threads) gained less. A kernel that writes one
    // value a row or less (a loss) keeps a thread a row: its per-row work
    // (the target's load, the log, the total) is then done once, not by
    // each of the row's threads, and its loads alone hit the same lines
    // again; cross-entropy at rows of 7 ran 1.5-1.7x faster so
    // (docs/performance.md, session 33).
    writesRows = llvm::any_of(
        globalWrites, [](const auto &w) { return w.second == Access::Row; });
    int64_t perThread = std::clamp<int64_t>(valuesPerThread, 1, 64);
    if (valuesPerThread <= 0) {
      perThread = 16;
      if (length < perThread && length > 4 && vec == 1 && writesRows)
        perThread = 4;
    }
    std::optional<Layout> l =
        chooseLayout(rows, length, vec, perThread,
                     std::clamp<int64_t>(maxCluster, 1, 8), clusterThreads);
    if (!l)
      return false;
    // Blocks of a cluster exchange their reductions' values as 16, 32 or
    // 64 bits.
    if (l->cluster > 1 && llvm::any_of(plans, [](const OpPlan &p) {
          if (!p.combiner || p.whole)
            return false;
          unsigned bits =
              p.narrowSum
                  ? 32
                  : p.combiner->getResult(0).getType().getIntOrFloatBitWidth();
          return bits != 16 && bits != 32 && bits != 64;
        }))
      return false;
    layout = *l;
    streamPair.reset();
    // Rows read in vectors of 4 or more: on the H100 cross-entropy over
    // 131072 values ran 0.096 ms streamed against 0.112 over clusters (f32;
    // f16 0.057 against 0.064), but rows of 50257 (one value a load, each
    // guarded) 0.173 against 0.076 (bf16; f32 0.176 against 0.109). A row
    // a block of 1024 holds (one block a multiprocessor, whose loads stop
    // while it reduces) streams too: 32768 f32 0.096 against 0.111, f16
    // 0.062 against 0.091.
    if (streamRows && !writesRows && vec >= 4 &&
        (layout.cluster > 1 || layout.threads >= 1024))
      if (std::optional<std::pair<size_t, size_t>> pair = streamablePair()) {
        // One block of 512 threads a row (two resident a multiprocessor),
        // each holding a chunk of twice `perThread` values (8 vector loads
        // in flight in f32) at a time.
        Layout st;
        st.vec = vec;
        st.threads = 512;
        st.vectors = std::max<int64_t>(1, 2 * perThread / vec);
        st.chunks = int64_t(
            llvm::divideCeil(uint64_t(length / vec), st.threads * st.vectors));
        // A row of one chunk is the unstreamed kernel with fewer threads
        // (not measured): left as it was.
        if (st.chunks > 1) {
          layout = st;
          streamPair = pair;
        }
      }
    return true;
  }

  /// The plans (i, j) a streamed row takes: a max (or min) i from an
  /// infinite neutral and the float sum j after it, with every op that
  /// works on row positions between them (or one of them) and no other
  /// reduction of the row: nothing reads the row's values after the sum,
  /// so a chunk's values die with the chunk.
  std::optional<std::pair<size_t, size_t>> streamablePair() const {
    std::optional<size_t> first;
    for (size_t i = 0; i < plans.size() && !first; ++i)
      if (plans[i].combiner && !plans[i].whole)
        first = i;
    if (!first)
      return std::nullopt;
    size_t i = *first;
    const OpPlan &mx = plans[i];
    auto neutral = dyn_cast<FloatAttr>(mx.neutral);
    if (!isa<arith::MaximumFOp, arith::MinimumFOp>(mx.combiner) || !neutral ||
        !neutral.getValue().isInfinity())
      return std::nullopt;
    std::optional<size_t> second;
    for (size_t j = i + 1; j < plans.size() && !second; ++j)
      if (plans[j].combiner && !plans[j].whole)
        second = j;
    if (!second || !isa<arith::AddFOp>(plans[*second].combiner) ||
        recomputesMath(i, *second))
      return std::nullopt;
    size_t j = *second;
    for (size_t k = 0; k < plans.size(); ++k) {
      bool inside = k >= i && k <= j;
      if (!inside &&
          ((plans[k].combiner && !plans[k].whole) || plans[k].inner == length))
        return std::nullopt;
    }
    return std::make_pair(i, j);
  }

  //===--------------------------------------------------------------------===//
  // Code generation: the values each thread holds, op by op.
  //===--------------------------------------------------------------------===//

  OpBuilder *b = nullptr;
  Location loc = UnknownLoc();
  Value row, lane;
  /// The block's rank in the row's cluster (null without clusters).
  Value rank;
  /// Each reduction's slot for its block's total (clusters only).
  llvm::DenseMap<Operation *, Value> clusterSlots;
  /// The first position of each of the thread's vectors, and whether it is
  /// inside the row (null where it always is).
  SmallVector<Value> starts, inRow;
  /// Null where every row of the launch exists, else whether this one does.
  Value rowExists;
  /// Whether the kernel writes row values to memory (not only one value
  /// a row or less).
  bool writesRows = false;
  /// The (max, sum) plans a streamed row takes (layout.chunks > 1).
  std::optional<std::pair<size_t, size_t>> streamPair;
  /// The thread's values of each buffer: its row positions (Row, Vector) or
  /// one value (RowScalar, Scalar).
  llvm::DenseMap<Value, SmallVector<Value>> rowValues, vectorValues;
  llvm::DenseMap<Value, Value> rowScalars, scalars;
  /// The thread's values of reads broadcast along rows, by root and base.
  llvm::DenseMap<std::pair<Value, unsigned>, SmallVector<Value>> baseValues;
  /// Buffers outside the kernel the ops wrote, in order, with a view of each.
  llvm::MapVector<Value, Value> written;
  llvm::DenseMap<Value, Value> flatViews;
  Operation *launchOp = nullptr;
  /// Values the same at every position of the row (per-row and scalar
  /// values), and the reciprocals taken of them.
  llvm::DenseSet<Value> uniform;
  llvm::DenseMap<Value, Value> reciprocals;
  /// Clones, made once for every position, of body ops whose operands are
  /// all per-row values (a cast of the row's sum): the op being emitted.
  llvm::DenseMap<Operation *, Operation *> hoisted;

  bool isUniform(Value v) {
    if (uniform.contains(v) || matchPattern(v, m_Constant()))
      return true;
    Operation *owner = v.getParentRegion()->getParentOp();
    return owner != launchOp && !launchOp->isProperAncestor(owner);
  }

  /// `view` as a 1-D memref (its layout is the identity), or 0-D.
  Value flat(Value view) {
    auto it = flatViews.find(view);
    if (it != flatViews.end())
      return it->second;
    auto type = cast<MemRefType>(view.getType());
    Value f = view;
    if (type.getRank() > 1) {
      SmallVector<ReassociationIndices> all(1);
      for (int64_t i = 0; i < type.getRank(); ++i)
        all[0].push_back(i);
      f = memref::CollapseShapeOp::create(*b, loc, view, all);
    }
    flatViews[view] = f;
    return f;
  }

  /// Element `at` of a flat view (a 0-D one has only one).
  Value loadAt(Value f, Value at) {
    if (cast<MemRefType>(f.getType()).getRank() == 0)
      return memref::LoadOp::create(*b, loc, f, ValueRange{});
    return memref::LoadOp::create(*b, loc, f, ValueRange{at});
  }
  void storeAt(Value v, Value f, Value at) {
    if (cast<MemRefType>(f.getType()).getRank() == 0)
      memref::StoreOp::create(*b, loc, v, f, ValueRange{});
    else
      memref::StoreOp::create(*b, loc, v, f, ValueRange{at});
  }

  /// The alignment of `vec` elements of `elem` at a multiple of `vec`
  /// (buffers start at 16 bytes).
  llvm::MaybeAlign alignment(Type elem) {
    return llvm::MaybeAlign(
        std::min<int64_t>(16, layout.vec * elem.getIntOrFloatBitWidth() / 8));
  }

  Value offset(Value rowScaled, Value start) {
    if (!rowScaled)
      return start;
    if (!start)
      return rowScaled;
    return arith::AddIOp::create(*b, loc, rowScaled, start);
  }

  /// Runs `fn` only where `cond` holds (always where it is null).
  template <typename Fn> void guarded(Value cond, Fn fn) {
    if (!cond) {
      fn();
      return;
    }
    auto branch = scf::IfOp::create(*b, loc, cond, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(*b);
    b->setInsertionPoint(branch.thenBlock()->getTerminator());
    fn();
  }

  static bool byteSized(Type t) {
    return t.isIntOrFloat() && t.getIntOrFloatBitWidth() % 8 == 0;
  }

  /// The thread's positions of `view`, `rowScaled` (null: 0) + position:
  /// one vector load each (zeros outside the row).
  SmallVector<Value> loadPositions(Value view, Value rowScaled) {
    Value f = flat(view);
    Type elem = cast<MemRefType>(f.getType()).getElementType();
    int64_t vec = layout.vec;
    SmallVector<Value> out;
    auto vType = VectorType::get({vec}, elem);
    for (auto [start, valid] : llvm::zip(starts, inRow)) {
      Value at = offset(rowScaled, start);
      if (!byteSized(elem)) {
        for (int64_t u = 0; u < vec; ++u) {
          Value pos = u ? arith::AddIOp::create(*b, loc, at, cIndex(*b, loc, u))
                              .getResult()
                        : at;
          out.push_back(loadScalar(f, pos, valid, elem));
        }
        continue;
      }
      auto load = [&] {
        return vector::LoadOp::create(*b, loc, vType, f, ValueRange{at},
                                      /*nontemporal=*/false, alignment(elem))
            .getResult();
      };
      Value v;
      if (!valid) {
        v = load();
      } else {
        auto branch = scf::IfOp::create(*b, loc, TypeRange{vType}, valid,
                                        /*withElse=*/true);
        OpBuilder::InsertionGuard guard(*b);
        b->setInsertionPointToStart(branch.thenBlock());
        scf::YieldOp::create(*b, loc, load());
        b->setInsertionPointToStart(branch.elseBlock());
        scf::YieldOp::create(
            *b, loc,
            arith::ConstantOp::create(*b, loc, b->getZeroAttr(vType))
                .getResult());
        v = branch.getResult(0);
      }
      for (int64_t u = 0; u < vec; ++u)
        out.push_back(vector::ExtractOp::create(*b, loc, v, u));
    }
    return out;
  }

  Value loadScalar(Value f, Value at, Value valid, Type elem) {
    if (!valid)
      return loadAt(f, at);
    auto branch = scf::IfOp::create(*b, loc, TypeRange{elem}, valid,
                                    /*withElse=*/true);
    OpBuilder::InsertionGuard guard(*b);
    b->setInsertionPointToStart(branch.thenBlock());
    scf::YieldOp::create(*b, loc, loadAt(f, at));
    b->setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(
        *b, loc,
        arith::ConstantOp::create(*b, loc, b->getZeroAttr(elem)).getResult());
    return branch.getResult(0);
  }

  /// The value `view` (one of `access`) holds for the thread: every position
  /// (Row, Vector) or the one value (RowScalar, Scalar). Reads memory the
  /// first time only.
  SmallVector<Value> read(Value view, Access access) {
    Value root = rootOf(view);
    bool local = bool(root.getDefiningOp<memref::AllocOp>());
    Type elem = cast<MemRefType>(view.getType()).getElementType();
    switch (access) {
    case Access::Row:
    case Access::Vector: {
      auto &cache = access == Access::Row ? rowValues : vectorValues;
      auto it = cache.find(root);
      if (it != cache.end())
        return it->second;
      SmallVector<Value> values;
      if (local) // never written: any value will do
        values.assign(layout.vectors * layout.vec,
                      arith::ConstantOp::create(*b, loc, b->getZeroAttr(elem)));
      else
        values = loadPositions(
            view,
            access == Access::Row
                ? arith::MulIOp::create(*b, loc, row, cIndex(*b, loc, length))
                      .getResult()
                : Value());
      return cache[root] = values;
    }
    case Access::RowScalar:
    case Access::Scalar: {
      auto &cache = access == Access::RowScalar ? rowScalars : scalars;
      auto it = cache.find(root);
      if (it != cache.end())
        return {it->second};
      Value v =
          local ? arith::ConstantOp::create(*b, loc, b->getZeroAttr(elem))
                      .getResult()
                : loadAt(flat(view), access == Access::RowScalar
                                         ? row
                                         : cIndex(*b, loc, 0));
      uniform.insert(v);
      return {cache[root] = v};
    }
    }
    llvm_unreachable("unknown access");
  }

  /// The offset of the row in a read of row base `id` (RowBase).
  Value rowOffsetOf(unsigned id) {
    const RowBase &base = rowBaseList[id];
    SmallVector<Value> indices = delinearize(*b, loc, row, base.ranges);
    Value sum;
    for (auto [index, c] : llvm::zip(indices, base.coefs)) {
      if (c == 0)
        continue;
      Value term =
          c == 1 ? index
                 : arith::MulIOp::create(*b, loc, index, cIndex(*b, loc, c))
                       .getResult();
      sum = sum ? arith::AddIOp::create(*b, loc, sum, term).getResult() : term;
    }
    return sum ? sum : cIndex(*b, loc, 0);
  }

  /// What `operand` of a planned op reads, as read() gives it; a read
  /// broadcast along rows loads at its own row offset.
  SmallVector<Value> readOperand(OpOperand &operand) {
    Access access = accesses.lookup(&operand);
    auto base = rowBases.find(&operand);
    if (base == rowBases.end())
      return read(operand.get(), access);
    auto key = std::make_pair(rootOf(operand.get()), base->second);
    auto it = baseValues.find(key);
    if (it != baseValues.end())
      return it->second;
    Value at = rowOffsetOf(base->second);
    SmallVector<Value> values;
    if (access == Access::Row) {
      values = loadPositions(operand.get(), at);
    } else {
      Value v = loadAt(flat(operand.get()), at);
      uniform.insert(v);
      values.push_back(v);
    }
    return baseValues[key] = values;
  }

  /// The loop indices of `plan.op` at row position `pos` (null: a per-row
  /// op).
  SmallVector<Value> loopIndices(const OpPlan &plan, Value pos) {
    linalg::GenericOp op = plan.op;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<Value> ivs =
        delinearize(*b, loc, row, ArrayRef(ranges).take_front(plan.numRow));
    ArrayRef<int64_t> inner = ArrayRef(ranges).drop_front(plan.numRow);
    if (!pos) {
      for (size_t i = 0; i < inner.size(); ++i)
        ivs.push_back(cIndex(*b, loc, 0));
      return ivs;
    }
    llvm::append_range(ivs, delinearize(*b, loc, pos, inner));
    return ivs;
  }

  /// The op's body for one row position `e` (-1: a per-row op), with
  /// `acc` as the running value of a reduction; returns the yielded value.
  Value body(const OpPlan &plan, int64_t e, Value acc) {
    return bodyAll(plan, e, acc)[0];
  }

  /// As body(), every yielded value (an op with several outputs).
  SmallVector<Value> bodyAll(const OpPlan &plan, int64_t e, Value acc) {
    linalg::GenericOp op = plan.op;
    Block *opBody = op.getBlock();
    IRMapping map;
    for (OpOperand &operand : op->getOpOperands()) {
      Value arg = opBody->getArgument(operand.getOperandNumber());
      if (!isa<ShapedType>(operand.get().getType())) {
        map.map(arg, operand.get());
        continue;
      }
      if (op.isDpsInit(&operand)) {
        if (acc)
          map.map(arg, acc);
        else if (!arg.use_empty())
          map.map(arg, read(operand.get(), accesses.lookup(&operand))
                           [e < 0 ? 0 : e]);
        continue;
      }
      Access access = accesses.lookup(&operand);
      if (e < 0 && (access == Access::Row || access == Access::Vector)) {
        // A per-row op reads position 0 (of the row or of the vector).
        auto base = rowBases.find(&operand);
        Value at =
            base != rowBases.end() ? rowOffsetOf(base->second)
            : access == Access::Row
                ? arith::MulIOp::create(*b, loc, row, cIndex(*b, loc, length))
                      .getResult()
                : cIndex(*b, loc, 0);
        map.map(arg, loadAt(flat(operand.get()), at));
        continue;
      }
      SmallVector<Value> values = readOperand(operand);
      map.map(arg, values.size() == 1 ? values[0] : values[e]);
    }
    SmallVector<Value> ivs;
    for (Operation &inner : opBody->without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
        if (ivs.empty()) {
          Value pos;
          if (e >= 0) {
            pos = starts[e / layout.vec];
            if (e % layout.vec)
              pos = arith::AddIOp::create(*b, loc, pos,
                                          cIndex(*b, loc, e % layout.vec));
            // Past the row's end (a last vector only partly inside) the
            // position is clamped to the row's last: an index the body
            // computes from it (a gather's row) stays inside its buffer,
            // and the result there is never used.
            if (inRow[e / layout.vec])
              pos = arith::MinUIOp::create(*b, loc, pos,
                                           cIndex(*b, loc, length - 1));
          }
          ivs = loopIndices(plan, pos);
        }
        map.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
      // Dividing by a per-row value (softmax's sum) is a multiplication by
      // its reciprocal, taken once: a division is a long instruction
      // sequence on GPUs. The result may differ from x / s in the last bit.
      if (auto div = dyn_cast<arith::DivFOp>(inner);
          div && e >= 0 && isUniform(map.lookupOrDefault(div.getRhs()))) {
        Value s = map.lookupOrDefault(div.getRhs());
        Value &r = reciprocals[s];
        if (!r)
          r = arith::DivFOp::create(
              *b, loc,
              arith::ConstantOp::create(*b, loc, b->getFloatAttr(s.getType(), 1.0)),
              s, div.getFastmathAttr());
        map.map(div.getResult(),
                arith::MulFOp::create(*b, loc, map.lookupOrDefault(div.getLhs()),
                                      r, div.getFastmathAttr())
                    .getResult());
        continue;
      }
      // An op of per-row values only is the same at every position: one
      // copy serves them all (and its result is per-row too).
      if (e >= 0 && inner.getNumRegions() == 0 && isMemoryEffectFree(&inner) &&
          llvm::all_of(inner.getOperands(), [&](Value v) {
            return isUniform(map.lookupOrDefault(v));
          })) {
        Operation *&copy = hoisted[&inner];
        if (!copy) {
          copy = b->clone(inner, map);
          for (Value r : copy->getResults())
            uniform.insert(r);
        }
        map.map(inner.getResults(), copy->getResults());
        continue;
      }
      b->clone(inner, map);
    }
    SmallVector<Value> yielded;
    for (Value v : cast<linalg::YieldOp>(opBody->getTerminator()).getOperands())
      yielded.push_back(map.lookupOrDefault(v));
    return yielded;
  }

  /// Every `group` threads' value `v` (that of the group's first thread,
  /// `thread` numbering them) left in slot `thread / group` of `slots`;
  /// after a barrier every thread folds the `n` slots in the same order.
  Value throughShared(Operation *combiner, Value v, Value slots, Value thread,
                      int64_t group, int64_t n) {
    Value firstOfGroup = arith::CmpIOp::create(
        *b, loc, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(*b, loc, thread, cIndex(*b, loc, group)),
        cIndex(*b, loc, 0));
    guarded(firstOfGroup, [&] {
      memref::StoreOp::create(*b, loc, v, slots,
                              ValueRange{arith::DivUIOp::create(
                                  *b, loc, thread, cIndex(*b, loc, group))});
    });
    gpu::BarrierOp::create(*b, loc);
    Value total =
        memref::LoadOp::create(*b, loc, slots, ValueRange{cIndex(*b, loc, 0)});
    for (int64_t i = 1; i < n; ++i)
      total = combine(*b, combiner, total,
                      memref::LoadOp::create(*b, loc, slots,
                                             ValueRange{cIndex(*b, loc, i)}));
    return total;
  }

  /// Combines the threads' `v` across the row's group: every thread ends
  /// with the same value.
  Value acrossRow(const OpPlan &plan, Value v, Value partials) {
    Value total = acrossBlock(plan, v, partials);
    return layout.cluster == 1 ? total : acrossCluster(plan, total);
  }

  /// Combines the threads' `v` across the row's threads in the block.
  Value acrossBlock(const OpPlan &plan, Value v, Value partials) {
    int64_t width = std::min<int64_t>(layout.threads, kWarp);
    for (int64_t off = width / 2; off >= 1; off /= 2)
      v = combine(*b, plan.combiner, v, shuffleXor(*b, loc, v, off));
    if (layout.threads <= kWarp) {
      assert(layout.cluster == 1 && "a cluster's blocks have several warps");
      return v;
    }
    return throughShared(plan.combiner, v, partials, lane, kWarp,
                         layout.threads / kWarp);
  }

  /// The row's blocks: each block's first thread leaves its total in the
  /// block's slot (a reduction's own, so never overwritten); after the
  /// cluster's barrier every thread folds the slots of the cluster's
  /// blocks, rank by rank, through distributed shared memory.
  Value acrossCluster(const OpPlan &plan, Value total) {
    Value slot = clusterSlots.lookup(plan.op);
    guarded(isFirstLane(), [&] {
      memref::StoreOp::create(*b, loc, total, slot,
                              ValueRange{cIndex(*b, loc, 0)});
    });
    clusterBarrier();
    SmallVector<Value> ranks = clusterValues(slot, total.getType());
    total = ranks[0];
    for (Value v : ArrayRef(ranks).drop_front())
      total = combine(*b, plan.combiner, total, v);
    return total;
  }

  Value isFirstLane() {
    return arith::CmpIOp::create(*b, loc, arith::CmpIPredicate::eq, lane,
                                 cIndex(*b, loc, 0));
  }

  /// After the cluster's barrier: slot `slot` of every block of the
  /// cluster, in rank order.
  SmallVector<Value> clusterValues(Value slot, Type type) {
    Value addr = sharedAddress(slot);
    SmallVector<Value> out;
    for (int64_t r = 0; r < layout.cluster; ++r)
      out.push_back(loadCluster(
          addr, arith::ConstantOp::create(*b, loc, b->getI32IntegerAttr(r)),
          type));
    return out;
  }

  /// After the cluster's barrier: slot `slot` of the block of rank
  /// lane % cluster. The lanes of each group of `cluster` lanes of a warp
  /// then hold every rank's value once: butterflies over the group's width
  /// combine them in as many registers as one value takes.
  Value clusterValueOfLane(Value slot, Type type) {
    Value r = arith::IndexCastOp::create(
        *b, loc, b->getI32Type(),
        arith::RemUIOp::create(*b, loc, lane, cIndex(*b, loc, layout.cluster)));
    return loadCluster(sharedAddress(slot), r, type);
  }

  /// The shared-window address (i32) of `slot`.
  Value sharedAddress(Value slot) {
    return arith::IndexCastOp::create(
        *b, loc, b->getI32Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(*b, loc, slot));
  }

  /// barrier.cluster's arrive and wait, release and acquire: what the
  /// cluster's threads stored in shared memory before it is visible to
  /// every block of the cluster after it. NVVM's ops, not inline assembly:
  /// their intrinsics are convergent, so LLVM never copies them into the
  /// branches of a condition (an `.aligned` barrier that the threads of a
  /// warp reach at two copies hangs the cluster).
  void clusterBarrier() {
    NVVM::ClusterArriveOp::create(*b, loc, b->getUnitAttr());
    NVVM::ClusterWaitOp::create(*b, loc, b->getUnitAttr());
  }

  /// The `type` value (16, 32 or 64 bits) at shared-window address `addr`
  /// (i32) of the cluster's block of rank `r` (i32).
  Value loadCluster(Value addr, Value r, Type type) {
    unsigned bits = type.getIntOrFloatBitWidth();
    Type bitsType = b->getIntegerType(bits);
    const char *reg = bits == 16 ? "=h" : bits == 32 ? "=r" : "=l";
    std::string asmText =
        "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, $1, $2;\n"
        "ld.shared::cluster.b" +
        std::to_string(bits) + " $0, [ra];\n}";
    // Side effects, so that it stays after the cluster barrier.
    auto load = LLVM::InlineAsmOp::create(
        *b, loc, bitsType, ValueRange{addr, r}, b->getStringAttr(asmText),
        b->getStringAttr(std::string(reg) + ",r,r,~{memory}"), b->getUnitAttr(),
        UnitAttr(), LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(),
        ArrayAttr());
    Value v = load.getResult(0);
    return type == bitsType ? v : arith::BitcastOp::create(*b, loc, type, v);
  }

  /// A narrowed sum's share of one position: the body added the widened
  /// value to the f64 `neutral`; the value itself, in f32, is the share.
  Value narrowed(Value part, Value neutral) {
    auto add = part.getDefiningOp<arith::AddFOp>();
    assert(add && (add.getLhs() == neutral || add.getRhs() == neutral) &&
           "a narrowed sum's body adds a widened value to the accumulator");
    Value wide = add.getLhs() == neutral ? add.getRhs() : add.getLhs();
    Value v = wide.getDefiningOp<arith::ExtFOp>().getIn();
    if (!v.getType().isF32())
      v = arith::ExtFOp::create(*b, loc, b->getF32Type(), v);
    add->erase();
    if (wide.use_empty())
      wide.getDefiningOp()->erase();
    return v;
  }

  /// The thread's combination, as a tree (no chain of dependent ops), of
  /// reduction `plan`'s shares of its positions; `shares` (if given)
  /// receives each position's share before those outside the row are
  /// masked.
  Value threadTotal(const OpPlan &plan,
                    SmallVectorImpl<Value> *shares = nullptr) {
    Value neutral = arith::ConstantOp::create(*b, loc, plan.neutral);
    Value partNeutral =
        plan.narrowSum
            ? arith::ConstantOp::create(*b, loc, b->getF32FloatAttr(-0.0f))
                  .getResult()
            : neutral;
    SmallVector<Value> parts;
    for (int64_t e = 0; e < layout.vectors * layout.vec; ++e) {
      Value part = body(plan, e, neutral);
      if (plan.narrowSum)
        part = narrowed(part, neutral);
      if (shares)
        shares->push_back(part);
      if (Value valid = inRow[e / layout.vec])
        part = arith::SelectOp::create(*b, loc, valid, part, partNeutral);
      parts.push_back(part);
    }
    while (parts.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < parts.size(); i += 2)
        next.push_back(combine(*b, plan.combiner, parts[i], parts[i + 1]));
      if (parts.size() % 2)
        next.push_back(parts.back());
      parts = next;
    }
    return parts[0];
  }

  /// The row's value of reduction `plan`: its `total` over the row, after
  /// the output's `initial` value.
  void setReduction(const OpPlan &plan, Value initial, Value total) {
    if (plan.narrowSum)
      total = arith::ExtFOp::create(*b, loc, b->getF64Type(), total);
    Value result = combine(*b, plan.combiner, initial, total);
    linalg::GenericOp op = plan.op;
    rowScalars[rootOf(op.getDpsInitOperand(0)->get())] = result;
    uniform.insert(result);
  }

  void noteWritten(linalg::GenericOp op) {
    for (OpOperand &out : op.getDpsInitsMutable()) {
      Value r = rootOf(out.get());
      if (!r.getDefiningOp<memref::AllocOp>())
        written.insert({r, out.get()});
    }
  }

  void emit(const OpPlan &plan, Value partials) {
    hoisted.clear();
    linalg::GenericOp op = plan.op;
    if (plan.combiner) {
      Value part = threadTotal(plan);
      // The initial value first: before the barriers, so that no thread
      // reads it after another has stored the row's result over it.
      Value initial =
          read(op.getDpsInitOperand(0)->get(), Access::RowScalar)[0];
      setReduction(plan, initial, acrossRow(plan, part, partials));
    } else if (plan.inner == length) {
      // One list of positions for each output (an op fused from several).
      SmallVector<SmallVector<Value>> values(op.getNumDpsInits());
      for (int64_t e = 0; e < layout.vectors * layout.vec; ++e)
        for (auto [i, v] : llvm::enumerate(bodyAll(plan, e, Value())))
          values[i].push_back(v);
      for (auto [i, out] : llvm::enumerate(op.getDpsInitsMutable()))
        rowValues[rootOf(out.get())] = values[i];
    } else {
      for (auto [out, v] :
           llvm::zip(op.getDpsInitsMutable(), bodyAll(plan, -1, Value()))) {
        rowScalars[rootOf(out.get())] = v;
        uniform.insert(v);
      }
    }
    noteWritten(op);
  }

  /// The sum that plans[i], a max (or min) over a row's cluster, may pair
  /// with (see emitPair): the next reduction, a float sum, with only
  /// per-position or per-row ops between.
  std::optional<size_t> pairedSum(size_t i) const {
    const OpPlan &first = plans[i];
    if (!pairRounds || layout.cluster == 1 || !first.combiner || first.whole ||
        !isa<arith::MaximumFOp, arith::MinimumFOp>(first.combiner))
      return std::nullopt;
    auto neutral = dyn_cast<FloatAttr>(first.neutral);
    if (!neutral || !neutral.getValue().isInfinity())
      return std::nullopt;
    for (size_t j = i + 1; j < plans.size(); ++j) {
      if (plans[j].whole)
        return std::nullopt;
      if (plans[j].combiner) {
        if (!isa<arith::AddFOp>(plans[j].combiner) || recomputesMath(i, j))
          return std::nullopt;
        return j;
      }
    }
    return std::nullopt;
  }

  /// Whether an op between plans[i] and plans[j] computes a math function
  /// (an exponential) per position whose result is read after plans[j] or
  /// stored: the pairing would compute it again against the row's max.
  /// Softmax's e = exp(x - m), read again by its division, is such a value:
  /// on the H100 the pairing then ran 16-bit softmax over 50257 values
  /// 1.07-1.11x slower, and f32 over 131072 no faster, while log-softmax
  /// and cross-entropy (whose exponentials only the sum reads) ran up to
  /// 1.7x faster (docs/performance.md, session 42).
  bool recomputesMath(size_t i, size_t j) const {
    llvm::DenseSet<Value> costly;
    for (size_t k = i + 1; k < j; ++k) {
      linalg::GenericOp op = plans[k].op;
      if (plans[k].inner != length ||
          !llvm::any_of(op.getBlock()->getOperations(), [](Operation &o) {
            return isa<math::MathDialect>(o.getDialect());
          }))
        continue;
      for (OpOperand &out : op.getDpsInitsMutable()) {
        Value root = rootOf(out.get());
        if (!root.getDefiningOp<memref::AllocOp>())
          return true; // stored
        costly.insert(root);
      }
    }
    for (size_t k = j + 1; k < plans.size(); ++k) {
      linalg::GenericOp op = plans[k].op;
      for (OpOperand *in : op.getDpsInputOperands())
        if (costly.contains(rootOf(in->get())))
          return true;
    }
    return false;
  }

  /// What the max (or min) `plan` reduced at each position, from its
  /// per-position `shares`: the body's combination with the neutral value
  /// (null where a share is not such a combination).
  SmallVector<Value> reducedValues(const OpPlan &plan,
                                   ArrayRef<Value> shares) const {
    SmallVector<Value> reduced;
    for (Value share : shares) {
      Operation *c = share.getDefiningOp();
      Value v;
      if (c && c->getName() == plan.combiner->getName())
        for (unsigned o = 0; o < 2; ++o)
          if (matchPattern(c->getOperand(1 - o), m_Constant()))
            v = c->getOperand(o);
      reduced.push_back(v);
    }
    return reduced;
  }

  /// A (max, sum) pair's correction exp(k·(m - m_b)) is computed in f32
  /// (f64 for a sum in f64), the difference of the maxes in the wider of
  /// that and the max's type.
  static Type correctionType(Type sumType) {
    return sumType.isF64() ? sumType : Float32Type::get(sumType.getContext());
  }
  static Type differenceType(Type maxType, Type corrType) {
    return maxType.getIntOrFloatBitWidth() > corrType.getIntOrFloatBitWidth()
               ? maxType
               : corrType;
  }
  /// `v` extended or truncated to the float type `t`.
  Value toFloat(Value v, Type t) { return castFloat(*b, loc, v, t); }
  /// exp(k·(m - mb)) in `corrType`, the difference taken in `diffType`.
  Value correctionFactor(double k, Value m, Value mb, Type diffType,
                         Type corrType) {
    Value scale =
        arith::ConstantOp::create(*b, loc, b->getFloatAttr(corrType, k));
    Value diff = arith::SubFOp::create(*b, loc, toFloat(m, diffType),
                                       toFloat(mb, diffType));
    return math::ExpOp::create(
        *b, loc,
        arith::MulFOp::create(*b, loc, scale, toFloat(diff, corrType)));
  }

  /// A max (or min) `plans[i]` and the sum `plans[j]` after it, when the
  /// sum's shares are exp(k·(r - v))·h, r the max and v what it reduced at
  /// the same position (log-softmax's max and sum of exponentials: k = -1;
  /// ExpForm.h reads k off the shares emitted): each block of the row's
  /// cluster computes both against its own max m_b, and one cluster round
  /// exchanges the (m_b, s_b) pairs, each block's sum scaled by
  /// exp(k·(m - m_b)), instead of one round for each. Against m_b every
  /// exponential is at most 1 (no overflow the row's max would not have).
  /// A block without a value of the row (its max the neutral infinity)
  /// counts 0 in a row that has one; in a row without one, each block's
  /// sum against the neutral is the unpaired sum's share. The ops
  /// between the two (the exponentials, the sum's fill) run again against
  /// the row's max, from what their outputs held before, for what reads
  /// them later; then the sum takes its value. Where the shares have no
  /// such form, the max takes its own round first.
  void emitPair(size_t i, size_t j, ArrayRef<Value> partials) {
    const OpPlan &first = plans[i], &second = plans[j];
    hoisted.clear();
    linalg::GenericOp firstOp = first.op, secondOp = second.op;
    Value firstInit = firstOp.getDpsInitOperand(0)->get();
    SmallVector<Value> maxShares;
    Value part = threadTotal(first, &maxShares);
    SmallVector<Value> reduced = reducedValues(first, maxShares);
    Value initial = read(firstInit, Access::RowScalar)[0];
    Value own = acrossBlock(first, part, partials[i]);
    Type maxType = own.getType();
    Value neutral = arith::ConstantOp::create(*b, loc, first.neutral);
    auto isEmpty = [&](Value m) {
      return arith::CmpFOp::create(*b, loc, arith::CmpFPredicate::OEQ, m,
                                   neutral);
    };
    // Against the block's own max, even the neutral infinity: a block
    // without a value of the row then sums what the unpaired code sums in
    // a row without one (NaN for exp(-inf - -inf), 0 where a select masks
    // it), which counts only in such a row.
    Value against = own;
    Value firstRoot = rootOf(firstInit);

    // What the ops between and the sum's initial value read from memory,
    // read now: after the cluster's barrier a block of the row may already
    // have stored its results there.
    read(secondOp.getDpsInitOperand(0)->get(), Access::RowScalar);
    for (size_t k = i + 1; k < j; ++k)
      for (OpOperand &operand : plans[k].op->getOpOperands())
        if (isa<MemRefType>(operand.get().getType()) &&
            !rootOf(operand.get()).getDefiningOp<memref::AllocOp>() &&
            accesses.count(&operand))
          readOperand(operand);
    // What the buffers the ops between write held before them (none of
    // them: an entry absent), to emit those ops again from there.
    llvm::SetVector<Value> betweenRoots;
    for (size_t k = i + 1; k < j; ++k)
      for (OpOperand &out : plans[k].op.getDpsInitsMutable())
        betweenRoots.insert(rootOf(out.get()));
    llvm::DenseMap<Value, std::optional<SmallVector<Value>>> rowsBefore;
    llvm::DenseMap<Value, std::optional<Value>> scalarsBefore;
    for (Value r : betweenRoots) {
      auto v = rowValues.find(r);
      rowsBefore[r] = v == rowValues.end()
                          ? std::nullopt
                          : std::optional<SmallVector<Value>>(v->second);
      auto sc = rowScalars.find(r);
      scalarsBefore[r] = sc == rowScalars.end()
                             ? std::nullopt
                             : std::optional<Value>(sc->second);
    }
    auto between = [&](Value maxValue) {
      for (Value r : betweenRoots) {
        if (rowsBefore[r])
          rowValues[r] = *rowsBefore[r];
        else
          rowValues.erase(r);
        if (scalarsBefore[r])
          rowScalars[r] = *scalarsBefore[r];
        else
          rowScalars.erase(r);
      }
      rowScalars[firstRoot] = maxValue;
      uniform.insert(maxValue);
      for (size_t k = i + 1; k < j; ++k)
        emit(plans[k], Value());
    };
    between(against);
    hoisted.clear();
    SmallVector<Value> shares;
    Value sharePart = threadTotal(second, &shares);
    bool isMax = isa<arith::MaximumFOp>(first.combiner);
    std::optional<double> k;
    if (llvm::all_of(reduced, [](Value v) { return bool(v); }))
      k = mlir::tcc::commonExpExponent(shares, against, reduced);
    if (!k || (isMax ? *k > 0 : *k < 0)) {
      // No such form (the shares above are left unused): a round each.
      setReduction(first, initial, acrossCluster(first, own));
      noteWritten(firstOp);
      between(rowScalars[firstRoot]);
      emit(second, partials[j]);
      return;
    }
    Value sum = acrossBlock(second, sharePart, partials[j]);
    Value maxSlot = clusterSlots.lookup(first.op),
          sumSlot = clusterSlots.lookup(second.op);
    guarded(isFirstLane(), [&] {
      Value zero = cIndex(*b, loc, 0);
      memref::StoreOp::create(*b, loc, own, maxSlot, ValueRange{zero});
      memref::StoreOp::create(*b, loc, sum, sumSlot, ValueRange{zero});
    });
    clusterBarrier();
    // In a kernel that writes rows, each lane combines one rank's pair,
    // then butterflies over the cluster's width (a lane and its partner
    // add the same two terms, so every lane, warp and block of the row
    // ends with the same bits): its row values stay in registers across
    // the round, and every rank's pair read by every thread at once took
    // 57 registers against 40 so on log-softmax over 131072 f16 (2 blocks
    // a multiprocessor instead of 3: 0.135 ms against 0.111; session 43).
    // Otherwise every thread folds the ranks' pairs in rank order (one
    // broadcast load a warp each): cross-entropy over 131072 values,
    // whose row values are dead by then, ran 0.113 ms (f32) and 0.064
    // (f16) so, 0.121 and 0.074 with the butterflies.
    bool butterflies = writesRows;
    SmallVector<Value> maxes, sums;
    Value m, s, rowMax;
    if (butterflies) {
      m = clusterValueOfLane(maxSlot, maxType);
      s = clusterValueOfLane(sumSlot, sum.getType());
      rowMax = m;
      for (int64_t off = layout.cluster / 2; off >= 1; off /= 2)
        rowMax = combine(*b, first.combiner, rowMax,
                         shuffleXor(*b, loc, rowMax, off));
      rowMax = combine(*b, first.combiner, initial, rowMax);
    } else {
      maxes = clusterValues(maxSlot, maxType);
      sums = clusterValues(sumSlot, sum.getType());
      rowMax = initial;
      for (Value v : maxes)
        rowMax = combine(*b, first.combiner, rowMax, v);
    }
    Type sumType = sum.getType();
    Type corrType = correctionType(sumType);
    Type diffType = differenceType(maxType, corrType);
    Value zero = arith::ConstantOp::create(*b, loc, b->getZeroAttr(corrType));
    Value rowEmpty = isEmpty(rowMax);
    // A rank's share: against m_b <= m (>= under a min) the factor is at
    // most 1.
    auto share = [&](Value m, Value s) -> Value {
      Value factor = correctionFactor(*k, rowMax, m, diffType, corrType);
      Value sWide = toFloat(s, corrType);
      return arith::SelectOp::create(
          *b, loc, isEmpty(m),
          arith::SelectOp::create(*b, loc, rowEmpty, sWide, zero),
          arith::MulFOp::create(*b, loc, sWide, factor));
    };
    Value total;
    if (butterflies) {
      total = share(m, s);
      for (int64_t off = layout.cluster / 2; off >= 1; off /= 2)
        total = arith::AddFOp::create(*b, loc, total,
                                      shuffleXor(*b, loc, total, off));
    } else {
      for (auto [mb, sb] : llvm::zip(maxes, sums)) {
        Value term = share(mb, sb);
        total = total ? arith::AddFOp::create(*b, loc, total, term).getResult()
                      : term;
      }
    }
    total = toFloat(total, sumType);
    setReduction(first, initial, rowMax);
    noteWritten(firstOp);
    // Before the sum's value: the ops between include its output's fill.
    between(rowScalars[firstRoot]);
    Value secondInitial =
        read(secondOp.getDpsInitOperand(0)->get(), Access::RowScalar)[0];
    setReduction(second, secondInitial, total);
    noteWritten(secondOp);
  }

  /// A streamed row's max `plans[i]` and sum `plans[j]` (layout.chunks >
  /// 1): a loop over the row's chunks in which each thread takes its
  /// vectors of the chunk, their max m_c, the ops between against the
  /// running max m = max(m, m_c), and the sum's shares, s = s exp(k (m -
  /// m_old)) + Σ shares (emitPair's correction, per chunk; a running max
  /// that was the neutral drops the sum it had, which counts only in a row
  /// without a value). After the loop the block combines the threads'
  /// pairs as emitPair combines blocks'. False where the shares have no
  /// exp(k (m - v)) form.
  bool emitStreamPair(size_t i, size_t j, ArrayRef<Value> partials,
                      Value rowLane) {
    const OpPlan &first = plans[i], &second = plans[j];
    hoisted.clear();
    linalg::GenericOp firstOp = first.op, secondOp = second.op;
    Value firstInit = firstOp.getDpsInitOperand(0)->get();
    Value firstRoot = rootOf(firstInit);
    Value initial = read(firstInit, Access::RowScalar)[0];
    Value neutral = arith::ConstantOp::create(*b, loc, first.neutral);
    Type maxType = neutral.getType();
    Type sumType = second.narrowSum ? Type(b->getF32Type())
                                    : second.combiner->getResult(0).getType();
    Type corrType = correctionType(sumType);
    Type diffType = differenceType(maxType, corrType);
    auto isEmpty = [&](Value m) {
      return arith::CmpFOp::create(*b, loc, arith::CmpFPredicate::OEQ, m,
                                   neutral);
    };
    Value zero = arith::ConstantOp::create(*b, loc, b->getZeroAttr(sumType));
    // What the loop's chunks load and emit lives in the loop: the maps
    // are restored after it.
    auto savedRows = rowValues;
    auto savedVectors = vectorValues;
    auto savedScalars = rowScalars;
    auto savedBases = baseValues;
    auto savedReciprocals = reciprocals;
    auto savedFlat = flatViews;
    int64_t vectors = length / layout.vec;
    bool whole = layout.chunks * layout.vectors * layout.threads == vectors;
    auto loop = scf::ForOp::create(
        *b, loc, cIndex(*b, loc, 0), cIndex(*b, loc, layout.chunks),
        cIndex(*b, loc, 1), ValueRange{neutral, zero});
    std::optional<double> k;
    {
      OpBuilder::InsertionGuard guard(*b);
      b->setInsertionPointToStart(loop.getBody());
      Value c = loop.getInductionVar();
      Value mOld = loop.getRegionIterArgs()[0];
      Value sOld = loop.getRegionIterArgs()[1];
      starts.clear();
      inRow.clear();
      Value chunk0 = arith::MulIOp::create(
          *b, loc, c, cIndex(*b, loc, layout.vectors * layout.threads));
      for (int64_t v = 0; v < layout.vectors; ++v) {
        Value index = arith::AddIOp::create(
            *b, loc, arith::AddIOp::create(*b, loc, chunk0, rowLane),
            cIndex(*b, loc, v * layout.threads));
        starts.push_back(
            arith::MulIOp::create(*b, loc, index, cIndex(*b, loc, layout.vec)));
        inRow.push_back(
            whole ? Value()
                  : arith::CmpIOp::create(*b, loc, arith::CmpIPredicate::ult,
                                          index, cIndex(*b, loc, vectors))
                        .getResult());
      }
      SmallVector<Value> maxShares;
      Value part = threadTotal(first, &maxShares);
      SmallVector<Value> reduced = reducedValues(first, maxShares);
      Value mNew = combine(*b, first.combiner, mOld, part);
      rowScalars[firstRoot] = mNew;
      uniform.insert(mNew);
      for (size_t q = i + 1; q < j; ++q)
        emit(plans[q], Value());
      hoisted.clear();
      SmallVector<Value> shares;
      Value sharePart = threadTotal(second, &shares);
      bool isMax = isa<arith::MaximumFOp>(first.combiner);
      if (llvm::all_of(reduced, [](Value v) { return bool(v); }))
        k = mlir::tcc::commonExpExponent(shares, mNew, reduced);
      if (!k || (isMax ? *k > 0 : *k < 0)) {
        k.reset();
        scf::YieldOp::create(*b, loc, ValueRange{mOld, sOld});
      } else {
        Value factor = correctionFactor(*k, mNew, mOld, diffType, corrType);
        Value kept = toFloat(
            arith::MulFOp::create(*b, loc, toFloat(sOld, corrType), factor),
            sumType);
        Value sum = arith::AddFOp::create(
            *b, loc,
            arith::SelectOp::create(*b, loc, isEmpty(mOld), zero, kept),
            sharePart);
        scf::YieldOp::create(*b, loc, ValueRange{mNew, sum});
      }
    }
    rowValues = savedRows;
    vectorValues = savedVectors;
    rowScalars = savedScalars;
    baseValues = savedBases;
    reciprocals = savedReciprocals;
    flatViews = savedFlat;
    hoisted.clear();
    starts.clear();
    inRow.clear();
    if (!k)
      return false;
    // The block's threads' pairs, as emitPair combines blocks' (a share
    // against the row's max m is at most 1).
    Value mThread = loop.getResult(0), sThread = loop.getResult(1);
    Value rowMax = acrossBlock(first, mThread, partials[i]);
    Value factor = correctionFactor(*k, rowMax, mThread, diffType, corrType);
    Value share = arith::SelectOp::create(
        *b, loc, isEmpty(mThread),
        arith::SelectOp::create(*b, loc, isEmpty(rowMax), sThread, zero),
        toFloat(
            arith::MulFOp::create(*b, loc, toFloat(sThread, corrType), factor),
            sumType));
    Value total = acrossBlock(second, share, partials[j]);
    setReduction(first, initial, rowMax);
    noteWritten(firstOp);
    // The per-row ops between (the sum's fill) against the row's max.
    for (size_t q = i + 1; q < j; ++q)
      if (plans[q].inner != length)
        emit(plans[q], Value());
    Value secondInitial =
        read(secondOp.getDpsInitOperand(0)->get(), Access::RowScalar)[0];
    setReduction(second, secondInitial, total);
    noteWritten(secondOp);
    return true;
  }

  /// A whole reduction: each row's value (its threads agree on it; rows
  /// past the end count nothing), combined over the block's rows by
  /// shuffles and, across warps, shared memory; the block's first thread
  /// writes the block's partial.
  void emitWhole(const OpPlan &plan, Value shared, Value partials, Value tid,
                 Value block) {
    hoisted.clear();
    Value neutral = arith::ConstantOp::create(*b, loc, plan.neutral);
    Value part = body(plan, -1, neutral);
    Value partNeutral = neutral;
    if (plan.narrowSum) {
      part = narrowed(part, neutral);
      partNeutral =
          arith::ConstantOp::create(*b, loc, b->getF32FloatAttr(-0.0f));
    }
    if (rowExists)
      part = arith::SelectOp::create(*b, loc, rowExists, part, partNeutral);
    int64_t blockThreads = layout.threads * layout.rowsPerBlock;
    Value total = part;
    if (layout.rowsPerBlock == 1) {
      // One row a block: its threads hold its value.
    } else if (blockThreads % kWarp == 0) {
      // Lanes `threads` apart hold different rows' values.
      for (int64_t off = kWarp / 2; off >= layout.threads; off /= 2)
        total =
            combine(*b, plan.combiner, total, shuffleXor(*b, loc, total, off));
      if (blockThreads > kWarp)
        total = throughShared(plan.combiner, total, shared, tid, kWarp,
                              blockThreads / kWarp);
    } else {
      // The only block, of fewer rows than a warp's lanes take.
      total = throughShared(plan.combiner, total, shared, tid, layout.threads,
                            layout.rowsPerBlock);
    }
    Value first = arith::CmpIOp::create(*b, loc, arith::CmpIPredicate::eq, tid,
                                        cIndex(*b, loc, 0));
    // The blocks of a row's cluster agree on its value: the first writes
    // the cluster's partial (a row's: one row a cluster).
    if (rank)
      first = arith::AndIOp::create(
          *b, loc, first,
          arith::CmpIOp::create(*b, loc, arith::CmpIPredicate::eq, rank,
                                cIndex(*b, loc, 0)));
    Value at = rank ? row : block;
    guarded(first, [&] {
      memref::StoreOp::create(*b, loc, total, partials, ValueRange{at});
    });
  }

  /// The shared memory a whole reduction's block combination needs, or 0.
  int64_t wholeSharedSize() const {
    int64_t blockThreads = layout.threads * layout.rowsPerBlock;
    if (layout.rowsPerBlock == 1)
      return 0;
    if (blockThreads % kWarp == 0)
      return blockThreads > kWarp ? blockThreads / kWarp : 0;
    return layout.rowsPerBlock;
  }

  /// After the launch: the partials of whole reduction `plan` combined into
  /// its output, as a reduction of its own.
  void combinePartials(const OpPlan &plan, Value partials) {
    MLIRContext *ctx = b->getContext();
    linalg::GenericOp op = plan.op;
    Value out = op.getDpsInitOperand(0)->get();
    int64_t rank = cast<MemRefType>(out.getType()).getRank();
    SmallVector<AffineExpr> zeros(rank, getAffineConstantExpr(0, ctx));
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(1, ctx),
                                   AffineMap::get(1, 0, zeros, ctx)};
    Operation *combiner = plan.combiner;
    bool narrow = plan.narrowSum;
    linalg::GenericOp::create(
        *b, loc, ValueRange{partials}, ValueRange{out}, maps,
        {utils::IteratorType::reduction},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value v = args[0];
          if (narrow)
            v = arith::ExtFOp::create(nb, l, args[1].getType(), v);
          linalg::YieldOp::create(nb, l, combine(nb, combiner, args[1], v));
        });
  }

  /// A fence of the GPU's memory at device scope (`syncScope`).
  void deviceFence() {
    LLVM::FenceOp::create(*b, loc, LLVM::AtomicOrdering::acq_rel,
                          syncScope.empty() ? StringRef()
                                            : StringRef(syncScope));
  }

  /// In the launch, after the blocks wrote their partials: the last block
  /// to finish combines each whole reduction's partials into its output
  /// and runs the single-value ops `after` (a mean's division), so that
  /// the reductions cost no launches of their own. Each block's first
  /// thread, once the block's writes are done (the barrier, then a fence),
  /// adds one to `counter`; the one that reads `parts - 1` was the last
  /// (the fence after the add makes every block's writes visible to it).
  /// `flag` tells the block's threads. The partials are combined in the
  /// same order on every run (no atomics on values).
  void finishWhole(ArrayRef<std::pair<const OpPlan *, Value>> wholes,
                   ArrayRef<BlockArgument> shared, Value flag, Value counter,
                   int64_t parts, Value tid, int64_t blockThreads,
                   ArrayRef<linalg::GenericOp> after) {
    Value zero = cIndex(*b, loc, 0);
    Value first =
        arith::CmpIOp::create(*b, loc, arith::CmpIPredicate::eq, tid, zero);
    // The block's writes (its partial, and its rows, which a single-value
    // op after the reductions may read) are done.
    gpu::BarrierOp::create(*b, loc);
    // Not over clusters (generate): a cluster's blocks would need its
    // barrier before its first block counts for them.
    assert(!rank && "the last block finishes only rows without clusters");
    Value last; // none: the only block, or a launch of its own
    if (counter) {
      guarded(first, [&] {
        deviceFence();
        Value old = memref::AtomicRMWOp::create(
            *b, loc, arith::AtomicRMWKind::addi,
            arith::ConstantOp::create(*b, loc, b->getI32IntegerAttr(1)),
            counter, ValueRange{});
        Value isLast = arith::CmpIOp::create(
            *b, loc, arith::CmpIPredicate::eq, old,
            arith::ConstantOp::create(*b, loc,
                                      b->getI32IntegerAttr(parts - 1)));
        deviceFence();
        memref::StoreOp::create(
            *b, loc, arith::ExtUIOp::create(*b, loc, b->getI32Type(), isLast),
            flag, ValueRange{zero});
      });
      gpu::BarrierOp::create(*b, loc);
      last = arith::CmpIOp::create(
          *b, loc, arith::CmpIPredicate::ne,
          memref::LoadOp::create(*b, loc, flag, ValueRange{zero}),
          arith::ConstantOp::create(*b, loc, b->getI32IntegerAttr(0)));
    }
    // The block's threads share the partials when it has whole warps (it
    // has unless it is the only block); else its first thread takes all.
    bool together = blockThreads % kWarp == 0;
    guarded(last, [&] {
      for (size_t i = 0; i < wholes.size(); ++i) {
        const OpPlan &plan = *wholes[i].first;
        Value partials = wholes[i].second;
        // In the accumulator's type: a narrowed sum's f32 partials widen
        // first (as many as there are blocks; a block's rows were few).
        Value neutral = arith::ConstantOp::create(*b, loc, plan.neutral);
        auto loop = scf::ForOp::create(
            *b, loc, together ? tid : zero, cIndex(*b, loc, parts),
            cIndex(*b, loc, together ? blockThreads : 1), ValueRange{neutral});
        {
          OpBuilder::InsertionGuard guard(*b);
          b->setInsertionPointToStart(loop.getBody());
          Value v = memref::LoadOp::create(*b, loc, partials,
                                           ValueRange{loop.getInductionVar()});
          if (v.getType() != neutral.getType())
            v = arith::ExtFOp::create(*b, loc, neutral.getType(), v);
          scf::YieldOp::create(
              *b, loc,
              combine(*b, plan.combiner, loop.getRegionIterArgs()[0], v));
        }
        Value total = loop.getResult(0);
        if (together) {
          total = warpReduce(*b, loc, plan.combiner, total);
          if (blockThreads > kWarp)
            total = throughShared(plan.combiner, total, shared[i], tid, kWarp,
                                  blockThreads / kWarp);
        }
        guarded(first, [&] {
          linalg::GenericOp op = plan.op;
          Value out = op.getDpsInitOperand(0)->get();
          SmallVector<Value> at(cast<MemRefType>(out.getType()).getRank(),
                                zero);
          Value old = memref::LoadOp::create(*b, loc, out, at);
          memref::StoreOp::create(
              *b, loc, combine(*b, plan.combiner, old, total), out, at);
        });
      }
      // Then, in program order, the single-value ops after the reductions.
      guarded(first, [&] {
        for (linalg::GenericOp o : after)
          b->clone(*o.getOperation());
      });
    });
  }

  /// After row launch `rows` (over clusters, or with more partials than its
  /// last block would combine): one block combines the whole
  /// reductions' partials (one a row or block) into their outputs and runs the
  /// single-value ops after them (finishWhole, without a count); the fills
  /// of those outputs, which nothing before reads, run in it first (its
  /// first thread, which then reads them).
  void finishInLaunch(gpu::LaunchOp rows,
                      llvm::DenseMap<Operation *, Value> &partialsOf,
                      int64_t parts) {
    MLIRContext *ctx = rows.getContext();
    SmallVector<linalg::GenericOp> after, fills;
    for (linalg::GenericOp o : outside) {
      if (movesAfter(o) || plans.back().op->isBeforeInBlock(o)) {
        after.push_back(o);
        continue;
      }
      bool fill =
          o->isBeforeInBlock(rows) &&
          llvm::none_of(o.getDpsInputs(),
                        [](Value v) { return isa<ShapedType>(v.getType()); }) &&
          llvm::all_of(o.getDpsInits(),
                       [&](Value v) { return wholeRoots.contains(rootOf(v)); });
      if (fill)
        fills.push_back(o);
    }
    // At the end: what the ops after it use is defined by then.
    b->setInsertionPoint(rows->getBlock()->getTerminator());
    auto workgroup =
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    SmallVector<std::pair<const OpPlan *, Value>> wholes;
    SmallVector<Type> attributions;
    int64_t threads = finishThreadsFor(parts);
    for (const OpPlan &p : plans)
      if (p.whole) {
        wholes.push_back({&p, partialsOf[p.op]});
        attributions.push_back(MemRefType::get(
            {threads / kWarp}, p.combiner->getResult(0).getType(),
            MemRefLayoutAttrInterface(), workgroup));
      }
    Value one = cIndex(*b, loc, 1);
    auto fin = gpu::LaunchOp::create(
        *b, loc, one, one, one, cIndex(*b, loc, threads), one, one, nullptr,
        nullptr, ValueRange{}, attributions);
    Block &body = fin.getBody().front();
    b->setInsertionPointToEnd(&body);
    auto end = gpu::TerminatorOp::create(*b, loc);
    b->setInsertionPoint(end);
    launchOp = fin;
    rank = Value();
    Value tid = fin.getThreadIds().x;
    guarded(arith::CmpIOp::create(*b, loc, arith::CmpIPredicate::eq, tid,
                                  cIndex(*b, loc, 0)),
            [&] {
              for (linalg::GenericOp o : fills)
                b->clone(*o.getOperation());
            });
    finishWhole(wholes, fin.getWorkgroupAttributions(), Value(), Value(), parts,
                tid, threads, after);
    for (linalg::GenericOp o : after)
      o.erase();
    for (linalg::GenericOp o : fills)
      o.erase();
  }

  /// Writes what the ops left in buffers outside the kernel, once.
  void store() {
    for (auto [root, view] : written) {
      Value f = flat(view);
      Type elem = cast<MemRefType>(f.getType()).getElementType();
      auto rs = rowScalars.find(root);
      if (rs != rowScalars.end()) {
        Value first = arith::CmpIOp::create(*b, loc, arith::CmpIPredicate::eq,
                                            lane, cIndex(*b, loc, 0));
        if (rowExists)
          first = arith::AndIOp::create(*b, loc, first, rowExists);
        if (rank)
          first = arith::AndIOp::create(
              *b, loc, first,
              arith::CmpIOp::create(*b, loc, arith::CmpIPredicate::eq, rank,
                                    cIndex(*b, loc, 0)));
        guarded(first, [&] {
          storeAt(rs->second, f, row);
        });
        continue;
      }
      SmallVector<Value> &values = rowValues[root];
      Value rowScaled =
          arith::MulIOp::create(*b, loc, row, cIndex(*b, loc, length));
      int64_t vec = layout.vec;
      for (auto [i, start] : llvm::enumerate(starts)) {
        Value valid = inRow[i];
        if (rowExists)
          valid = valid ? arith::AndIOp::create(*b, loc, valid, rowExists)
                              .getResult()
                        : rowExists;
        Value at = offset(rowScaled, start);
        ArrayRef<Value> part = ArrayRef(values).slice(i * vec, vec);
        guarded(valid, [&] {
          if (!byteSized(elem)) {
            for (int64_t u = 0; u < vec; ++u) {
              Value pos =
                  u ? arith::AddIOp::create(*b, loc, at, cIndex(*b, loc, u))
                          .getResult()
                    : at;
              storeAt(part[u], f, pos);
            }
            return;
          }
          Value v = vector::FromElementsOp::create(
              *b, loc, VectorType::get({vec}, elem), part);
          vector::StoreOp::create(*b, loc, v, f, ValueRange{at},
                                  /*nontemporal=*/false, alignment(elem));
        });
      }
    }
  }

  /// Builds the launch; false (with the function half rewritten: the
  /// caller restores it) where a streamed row's sum turns out not to have
  /// the form its running pair needs.
  bool generate(func::FuncOp func) {
    loc = func.getLoc();
    MLIRContext *ctx = func.getContext();
    auto workgroup =
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    // Per warp partial results of each reduction, when a row has warps.
    // The type a reduction's partial values combine in (f32 for a
    // narrowed sum).
    auto partTypeOf = [&](const OpPlan &p) {
      return p.narrowSum ? Type(Float32Type::get(ctx))
                         : p.combiner->getResult(0).getType();
    };
    SmallVector<Type> attributions;
    if (layout.threads > kWarp)
      for (const OpPlan &p : plans)
        if (p.combiner && !p.whole)
          attributions.push_back(
              MemRefType::get({layout.threads / kWarp}, partTypeOf(p),
                              MemRefLayoutAttrInterface(), workgroup));

    // A slot for each reduction's block total, read across a row's cluster.
    unsigned firstClusterSlot = attributions.size();
    if (layout.cluster > 1)
      for (const OpPlan &p : plans)
        if (p.combiner && !p.whole)
          attributions.push_back(MemRefType::get(
              {1}, partTypeOf(p), MemRefLayoutAttrInterface(), workgroup));

    // A whole reduction's partials (one a block) and the shared memory
    // that combines its block's rows.
    int64_t blocks =
        (rows + layout.rowsPerBlock - 1) / layout.rowsPerBlock * layout.cluster;
    unsigned firstWholeShared = attributions.size();
    int64_t wholeShared = wholeSharedSize();
    if (wholeShared)
      for (const OpPlan &p : plans)
        if (p.whole)
          attributions.push_back(MemRefType::get({wholeShared}, partTypeOf(p),
                                                 MemRefLayoutAttrInterface(),
                                                 workgroup));

    // The last block to finish combines the whole reductions' partials
    // (shared memory for its warps' values) and runs the single-value ops
    // after them; a flag tells the block's threads it is the last. Not
    // when its threads would take more than kMostPartials each: their
    // loads, few in flight, would then cost more than launches of their
    // own (a reduction of the partials, split over blocks, then the
    // single-value ops), as they run where there are that many. Nor over
    // clusters: a cluster's first block, waiting for its count (two fences
    // and an atomic), delays the next cluster's start on its processors;
    // cross-entropy over 131072 values' row kernel took 109 us against 103
    // (H200, session 40), more than the three launches it saved.
    int64_t blockThreads = layout.threads * layout.rowsPerBlock;
    // A partial a block, or a cluster (its first block writes the row's).
    int64_t parts = blocks / layout.cluster;
    bool finishHere =
        lastBlock && layout.cluster == 1 &&
        llvm::any_of(plans, [](const OpPlan &p) { return p.whole; }) &&
        parts <= kMostPartials * blockThreads;
    // Otherwise (over clusters, or more partials than the last block's
    // threads take), a launch of one block after the row launch does the
    // same: its fills, the combination and the single-value ops, in place
    // of a fill launch, a reduction launch for each, and launches for the
    // ops after (cross-entropy over 131072 f32 values: one launch of about
    // 4 us in place of four of 4-5 us each, timed one by one; over 1025
    // rows of 1000, whose blocks of 64 threads finish 1024 partials at
    // most, 2 launches in place of 5).
    bool finishAfter =
        lastBlock && !finishHere &&
        llvm::any_of(plans, [](const OpPlan &p) { return p.whole; }) &&
        parts <= kMostPartials * kMostFinishThreads;
    unsigned firstFinishShared = attributions.size();
    bool finishWarps =
        finishHere && blockThreads % kWarp == 0 && blockThreads > kWarp;
    if (finishWarps)
      for (const OpPlan &p : plans)
        if (p.whole)
          attributions.push_back(MemRefType::get(
              {blockThreads / kWarp}, p.combiner->getResult(0).getType(),
              MemRefLayoutAttrInterface(), workgroup));
    unsigned flagAt = attributions.size();
    if (finishHere && parts > 1)
      attributions.push_back(MemRefType::get({1}, IntegerType::get(ctx, 32),
                                             MemRefLayoutAttrInterface(),
                                             workgroup));

    // After the last op: every view the ops use is defined by then. With
    // the last block finishing, at the end: the single-value ops after the
    // last op join the launch, and what they use is defined by then.
    OpBuilder builder(ctx);
    b = &builder;
    if (finishHere)
      b->setInsertionPoint(func.getBody().front().getTerminator());
    else
      b->setInsertionPointAfter(plans.back().op);
    llvm::DenseMap<Operation *, Value> partialsOf;
    for (const OpPlan &p : plans)
      if (p.whole)
        partialsOf[p.op] = memref::AllocOp::create(
            *b, loc, MemRefType::get({parts}, partTypeOf(p)));
    // The blocks count themselves in on `counter`, zeroed before the
    // launch (with the outputs' fills: one serial launch).
    Value counter;
    if (finishHere && parts > 1) {
      counter = memref::AllocOp::create(
          *b, loc, MemRefType::get({}, IntegerType::get(ctx, 32)));
      linalg::FillOp::create(*b, loc,
                             ValueRange{arith::ConstantOp::create(
                                 *b, loc, b->getI32IntegerAttr(0))},
                             ValueRange{counter});
    }
    Value one = cIndex(*b, loc, 1);
    Value clusterX =
        layout.cluster > 1 ? cIndex(*b, loc, layout.cluster) : Value();
    auto launch = gpu::LaunchOp::create(
        *b, loc, cIndex(*b, loc, blocks), one, one,
        cIndex(*b, loc, layout.threads * layout.rowsPerBlock), one, one,
        nullptr, nullptr, ValueRange{}, attributions, TypeRange{}, clusterX,
        clusterX ? one : Value(), clusterX ? one : Value());
    Block &launchBody = launch.getBody().front();
    // The builder leaves out the cluster ids and sizes that a launch with
    // clusters has after the block sizes (as the parser makes them).
    if (clusterX)
      for (unsigned i = 0; i < 6; ++i)
        launchBody.insertArgument(12 + i, b->getIndexType(), loc);
    b->setInsertionPointToEnd(&launchBody);
    auto end = gpu::TerminatorOp::create(*b, loc);
    b->setInsertionPoint(end);
    launchOp = launch;
    uniform.clear();
    reciprocals.clear();

    Value tid = launch.getThreadIds().x, block = launch.getBlockIds().x;
    rowExists = Value();
    rank = Value();
    // The thread's place among its row's threads.
    Value rowLane = tid;
    if (layout.cluster > 1) {
      // Clusters span consecutive blocks: block = row * cluster + rank.
      Value c = cIndex(*b, loc, layout.cluster);
      lane = tid;
      row = arith::DivUIOp::create(*b, loc, block, c);
      rank = arith::RemUIOp::create(*b, loc, block, c);
      rowLane = arith::AddIOp::create(
          *b, loc,
          arith::MulIOp::create(*b, loc, rank, cIndex(*b, loc, layout.threads)),
          tid);
    } else if (layout.rowsPerBlock == 1) {
      lane = tid;
      row = block;
    } else {
      Value t = cIndex(*b, loc, layout.threads);
      lane = arith::RemUIOp::create(*b, loc, tid, t);
      rowLane = lane;
      row = arith::AddIOp::create(
          *b, loc,
          arith::MulIOp::create(*b, loc, block,
                                cIndex(*b, loc, layout.rowsPerBlock)),
          arith::DivUIOp::create(*b, loc, tid, t));
      if (rows % layout.rowsPerBlock != 0) {
        // Rows past the end compute the last row again (so that every lane
        // joins the shuffles) and write nothing.
        Value last = cIndex(*b, loc, rows - 1);
        rowExists = arith::CmpIOp::create(*b, loc, arith::CmpIPredicate::ule,
                                          row, last);
        row = arith::MinUIOp::create(*b, loc, row, last);
      }
    }
    starts.clear();
    inRow.clear();
    int64_t vectors = length / layout.vec;
    for (int64_t i = 0; i < (layout.chunks > 1 ? 0 : layout.vectors); ++i) {
      Value index = arith::AddIOp::create(
          *b, loc, rowLane, cIndex(*b, loc, i * layout.rowThreads()));
      starts.push_back(
          arith::MulIOp::create(*b, loc, index, cIndex(*b, loc, layout.vec)));
      inRow.push_back(
          (i + 1) * layout.rowThreads() <= vectors
              ? Value()
              : arith::CmpIOp::create(*b, loc, arith::CmpIPredicate::ult, index,
                                      cIndex(*b, loc, vectors))
                    .getResult());
    }
    rowValues.clear();
    vectorValues.clear();
    rowScalars.clear();
    scalars.clear();
    baseValues.clear();
    written.clear();
    flatViews.clear();
    ArrayRef<BlockArgument> wg = launch.getWorkgroupAttributions();
    clusterSlots.clear();
    if (layout.cluster > 1) {
      unsigned next = firstClusterSlot;
      for (const OpPlan &p : plans)
        if (p.combiner && !p.whole)
          clusterSlots[p.op] = wg[next++];
    }
    // Each reduction's per-warp slots.
    SmallVector<Value> warpSlots(plans.size());
    unsigned nextPartials = 0, nextWhole = firstWholeShared;
    for (auto [i, p] : llvm::enumerate(plans))
      if (p.combiner && !p.whole && layout.threads > kWarp)
        warpSlots[i] = wg[nextPartials++];
    for (size_t i = 0; i < plans.size(); ++i) {
      const OpPlan &plan = plans[i];
      if (plan.whole) {
        emitWhole(plan, wholeShared ? Value(wg[nextWhole++]) : Value(),
                  partialsOf[plan.op], tid, block);
        continue;
      }
      if (streamPair && streamPair->first == i) {
        if (!emitStreamPair(i, streamPair->second, warpSlots, rowLane))
          return false;
        i = streamPair->second;
        continue;
      }
      if (std::optional<size_t> j = pairedSum(i)) {
        emitPair(i, *j, warpSlots);
        i = *j;
        continue;
      }
      emit(plan, warpSlots[i]);
    }
    store();
    // No block leaves while another of its cluster may still read its
    // shared memory.
    if (!clusterSlots.empty())
      clusterBarrier();
    if (!finishHere && finishAfter) {
      finishInLaunch(launch, partialsOf, parts);
    } else if (!finishHere) {
      b->setInsertionPointAfter(launch);
      for (const OpPlan &plan : plans)
        if (plan.whole)
          combinePartials(plan, partialsOf[plan.op]);
      // What reads the whole reductions' outputs that planned ops before it
      // wrote follows the launch, in program order (what stood after it
      // stays).
      for (linalg::GenericOp o : outside)
        if (movesAfter(o))
          o->moveBefore(b->getInsertionBlock(), b->getInsertionPoint());
    } else {
      // What follows the whole reductions in program order: the ops that
      // read their outputs (moved after the launch) and those standing
      // after the last planned op.
      SmallVector<linalg::GenericOp> after;
      for (linalg::GenericOp o : outside)
        if (movesAfter(o) || plans.back().op->isBeforeInBlock(o))
          after.push_back(o);
      SmallVector<std::pair<const OpPlan *, Value>> wholes;
      for (const OpPlan &p : plans)
        if (p.whole)
          wholes.push_back({&p, partialsOf[p.op]});
      finishWhole(wholes,
                  finishWarps ? wg.slice(firstFinishShared, wholes.size())
                              : ArrayRef<BlockArgument>(),
                  counter ? Value(wg[flagAt]) : Value(), counter, parts, tid,
                  layout.threads * layout.rowsPerBlock, after);
      for (linalg::GenericOp o : after)
        o.erase();
    }
    for (OpPlan &plan : llvm::reverse(plans))
      plan.op.erase();
    // The kernel-local buffers now live in registers.
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation &op : llvm::make_early_inc_range(
               llvm::reverse(func.getBody().front()))) {
        if (!op.use_empty() || op.hasTrait<OpTrait::IsTerminator>() ||
            &op == launch.getOperation())
          continue;
        if (isa<memref::AllocOp>(op) || isMemoryEffectFree(&op)) {
          op.erase();
          changed = true;
        }
      }
    }
    b = nullptr;
    return true;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr("tcc.kernel") || func.isExternal() ||
        !func.getBody().hasOneBlock())
      return;
    if (!analyse(func))
      return;
    if (!streamPair) {
      generate(func);
      return;
    }
    // A streamed row is tried on a copy of the body: where its sum has no
    // exp(k (m - v)) form, the rows span clusters as before.
    func::FuncOp backup = func.clone();
    if (generate(func)) {
      backup.erase();
      return;
    }
    b = nullptr;
    func.getBody().getBlocks().clear();
    func.getBody().takeBody(backup.getBody());
    backup.erase();
    bool stream = streamRows;
    streamRows = false;
    if (analyse(func))
      generate(func);
    streamRows = stream;
  }
};

} // namespace
