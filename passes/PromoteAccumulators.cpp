//===- PromoteAccumulators.cpp - reduction accumulators in registers ------===//
//
// See the pass description in Passes.td. The rewrite, for one scf.for:
//
//   scf.for %k { %a = load %m[%i]; ...; store %v, %m[%i] }
// becomes
//   %a0 = load %m[%i]
//   %r = scf.for %k iter_args(%a = %a0) { ...; yield %v }
//   store %r, %m[%i]
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCPROMOTEACCUMULATORS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

/// The buffer `v` is a view of: a block argument or an allocation, through
/// the ops that only reinterpret their source.
Value rootBuffer(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      v = view.getViewSource();
      continue;
    }
    if (auto cast = dyn_cast<memref::CastOp>(def)) {
      v = cast.getSource();
      continue;
    }
    break;
  }
  return v;
}

/// The memrefs `op` reads or writes; false when its effects are not known
/// per value (then the loop is left alone).
bool accessedBuffers(Operation *op, SmallVectorImpl<Value> &buffers) {
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() || isPure(op);
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  for (const MemoryEffects::EffectInstance &e : effects) {
    // Allocation and freeing of a thread's own scratch do not touch other
    // buffers' bytes.
    if (isa<MemoryEffects::Allocate, MemoryEffects::Free>(e.getEffect()))
      continue;
    Value v = e.getValue();
    if (!v || !isa<MemRefType>(v.getType()))
      return false;
    buffers.push_back(v);
  }
  return true;
}

/// Promotes one accumulator of `loop`, if it has one; returns the new loop
/// or null.
scf::ForOp promoteOne(scf::ForOp loop, RewriterBase &rewriter) {
  Block *body = loop.getBody();
  for (Operation &op : body->without_terminator()) {
    auto load = dyn_cast<memref::LoadOp>(&op);
    if (!load)
      continue;
    Value mem = load.getMemRef();
    if (!loop.isDefinedOutsideOfLoop(mem) ||
        !llvm::all_of(load.getIndices(),
                      [&](Value i) { return loop.isDefinedOutsideOfLoop(i); }))
      continue;
    // The store of the same element, later in the same block.
    memref::StoreOp store;
    for (Operation *o = load->getNextNode(); o; o = o->getNextNode()) {
      auto s = dyn_cast<memref::StoreOp>(o);
      if (s && s.getMemRef() == mem && s.getIndices() == load.getIndices()) {
        store = s;
        break;
      }
    }
    if (!store)
      continue;
    // Nothing else in the loop may touch the accumulator's buffer, and
    // every op must say what it touches.
    Value root = rootBuffer(mem);
    bool safe = true;
    loop.getBody()->walk([&](Operation *o) {
      if (o == load.getOperation() || o == store.getOperation())
        return WalkResult::advance();
      SmallVector<Value> buffers;
      if (!accessedBuffers(o, buffers)) {
        safe = false;
        return WalkResult::interrupt();
      }
      for (Value b : buffers)
        if (rootBuffer(b) == root) {
          safe = false;
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (!safe)
      continue;

    rewriter.setInsertionPoint(loop);
    Value init =
        memref::LoadOp::create(rewriter, load.getLoc(), mem, load.getIndices());
    Value stored = store.getValueToStore();
    FailureOr<LoopLikeOpInterface> grown =
        cast<LoopLikeOpInterface>(loop.getOperation())
            .replaceWithAdditionalYields(
                rewriter, init, /*replaceInitOperandUsesInLoop=*/false,
                [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
                  return SmallVector<Value>{stored};
                });
    if (failed(grown))
      return nullptr;
    auto next = cast<scf::ForOp>(grown->getOperation());
    rewriter.replaceOp(load, next.getRegionIterArgs().back());
    rewriter.setInsertionPointAfter(next);
    memref::StoreOp::create(rewriter, store.getLoc(), next.getResults().back(),
                            mem, store.getIndices());
    rewriter.eraseOp(store);
    return next;
  }
  return nullptr;
}

struct TccPromoteAccumulators
    : mlir::tcc::impl::TccPromoteAccumulatorsBase<TccPromoteAccumulators> {
  void runOnOperation() override {
    // Post-order: inner loops first, so that the load and store an inner
    // promotion leaves around its loop become the outer loop's candidates.
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops)
      while (loop)
        loop = promoteOne(loop, rewriter);
  }
};

} // namespace
