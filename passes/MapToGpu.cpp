//===- MapToGpu.cpp - a bufferized kernel's loops as gpu.launch ops -------===//
//
// The generic GPU mapping: it is correct for every kernel the linalg lowering
// produces and fast for elementwise work. Each parallel loop nest becomes one
// launch with a thread per iteration; reductions keep their serial inner
// loops in each thread. Kernels that deserve better (matmul, row reductions)
// get templates instead, before this pass would see them.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCMAPTOGPU
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

/// Ops that stay in the kernel function: buffers and what describes them.
/// Launches read them as operands or sink them.
bool staysOutside(Operation *op) {
  if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp>(op))
    return true;
  return op->getNumRegions() == 0 && isMemoryEffectFree(op);
}

/// What a launch is better off computing itself than receiving: everything
/// pure, so that its operands are buffers only.
bool sinkable(Operation *op) {
  return op->getNumRegions() == 0 && isMemoryEffectFree(op);
}

/// Clones into `launch` the pure ops whose results it uses from outside,
/// transitively, so that only buffers are left to capture.
/// (sinkOperationsIntoLaunchOp refuses a view whose source is an
/// allocation.)
void sinkInto(gpu::LaunchOp launch) {
  Region &body = launch.getBody();
  OpBuilder b = OpBuilder::atBlockBegin(&body.front());
  bool changed = true;
  while (changed) {
    changed = false;
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(body, captured);
    for (Value v : captured) {
      Operation *def = v.getDefiningOp();
      if (!def || !sinkable(def))
        continue;
      // At the very start: what this clone needs is cloned later, before it.
      b.setInsertionPointToStart(&body.front());
      Operation *clone = b.clone(*def);
      for (auto [from, to] : llvm::zip(def->getResults(), clone->getResults()))
        replaceAllUsesInRegionWith(from, to, body);
      changed = true;
    }
  }
}

/// A buffer a thread allocates for itself (a row's scratch in top-k)
/// becomes stack memory, allocated once at the kernel's start: a device
/// cannot malloc, and an alloca in a loop would grow the stack each time.
void privatizeAllocations(gpu::LaunchOp launch) {
  Block &entry = launch.getBody().front();
  SmallVector<memref::AllocOp> allocs;
  launch.walk([&](memref::AllocOp alloc) {
    if (alloc.getType().hasStaticShape() && alloc->getNumOperands() == 0)
      allocs.push_back(alloc);
  });
  for (memref::AllocOp alloc : allocs) {
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    auto stack = memref::AllocaOp::create(b, alloc.getLoc(), alloc.getType(),
                                          alloc.getAlignmentAttr());
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    alloc.replaceAllUsesWith(stack.getResult());
    alloc.erase();
  }
}

/// Tells LLVM that the buffers a launch captures are 16-byte aligned (the
/// arena's are 64, the runtime refuses others), so it can merge accesses.
void assumeAligned(gpu::LaunchOp launch) {
  Region &body = launch.getBody();
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(body, captured);
  OpBuilder b = OpBuilder::atBlockBegin(&body.front());
  for (Value v : captured) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.getLayout().isIdentity())
      continue;
    auto aligned = memref::AssumeAlignmentOp::create(b, v.getLoc(), v, 16);
    v.replaceUsesWithIf(aligned.getResult(), [&](OpOperand &use) {
      return use.getOwner() != aligned &&
             body.isAncestor(use.getOwner()->getParentRegion());
    });
  }
}

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// Creates a launch of `grid` blocks of `block` threads before `at`, with an
/// empty body ending in gpu.terminator.
gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, int64_t grid,
                           int64_t block) {
  Value one = indexConst(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, indexConst(b, loc, grid), one,
                                      one, indexConst(b, loc, block), one, one);
  Block &body = launch.getBody().front();
  if (body.empty() || !body.back().hasTrait<OpTrait::IsTerminator>()) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&body);
    gpu::TerminatorOp::create(b, loc);
  }
  return launch;
}

struct TccMapToGpu : mlir::tcc::impl::TccMapToGpuBase<TccMapToGpu> {
  using Base::Base;

  /// One thread per iteration of `loop`, the iterations numbered row-major.
  LogicalResult mapParallel(scf::ParallelOp loop) {
    if (loop.getNumReductions() != 0)
      return wrapSerial({loop});
    SmallVector<int64_t> lbs, trips, steps;
    int64_t total = 1;
    for (auto [lb, ub, step] : llvm::zip(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      std::optional<int64_t> l = getConstantIntValue(lb),
                             u = getConstantIntValue(ub),
                             s = getConstantIntValue(step);
      if (!l || !u || !s || *s <= 0)
        return loop.emitError("a GPU kernel needs static loop bounds");
      int64_t trip = *u > *l ? (*u - *l + *s - 1) / *s : 0;
      lbs.push_back(*l);
      steps.push_back(*s);
      trips.push_back(trip);
      if (trip != 0 && total > (int64_t(1) << 50) / trip)
        return loop.emitError("loop nest too large for one GPU launch");
      total *= trip;
    }
    if (total == 0) {
      loop.erase();
      return success();
    }
    // Consecutive innermost iterations per thread.
    int64_t minBytes = 8;
    loop.walk([&](Operation *op) {
      Value buffer;
      if (auto load = dyn_cast<memref::LoadOp>(op))
        buffer = load.getMemRef();
      else if (auto store = dyn_cast<memref::StoreOp>(op))
        buffer = store.getMemRef();
      if (buffer)
        minBytes = std::min<int64_t>(
            minBytes,
            std::max<int64_t>(
                1, cast<MemRefType>(buffer.getType()).getElementTypeBitWidth() /
                       8));
    });
    int64_t perThread = std::clamp<int64_t>(vectorBytes / minBytes, 1, 8);
    while (perThread > 1 && trips.back() % perThread != 0)
      perThread /= 2;
    if (total < perThread * 4096)
      perThread = 1;
    trips.back() /= perThread;
    total /= perThread;
    int64_t block = std::min<int64_t>(blockSize, (total + 31) / 32 * 32);
    int64_t grid = (total + block - 1) / block;
    if (grid > std::numeric_limits<int32_t>::max())
      return loop.emitError("loop nest too large for one GPU launch");

    Location loc = loop.getLoc();
    OpBuilder b(loop);
    gpu::LaunchOp launch = createLaunch(b, loc, grid, block);
    b.setInsertionPoint(launch.getBody().front().getTerminator());
    Value linear = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                              indexConst(b, loc, block)),
        launch.getThreadIds().x);
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          linear, indexConst(b, loc, total));
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    // Delinearise, innermost dimension fastest.
    SmallVector<IRMapping> maps(perThread);
    Value rest = linear;
    for (int d = trips.size() - 1; d >= 0; --d) {
      Value trip = indexConst(b, loc, trips[d]);
      Value i = d == 0 ? rest : arith::RemUIOp::create(b, loc, rest, trip);
      if (d != 0)
        rest = arith::DivUIOp::create(b, loc, rest, trip);
      bool inner = d == int(trips.size()) - 1;
      int64_t scale = steps[d] * (inner ? perThread : 1);
      if (scale != 1)
        i = arith::MulIOp::create(b, loc, i, indexConst(b, loc, scale));
      if (lbs[d] != 0)
        i = arith::AddIOp::create(b, loc, i, indexConst(b, loc, lbs[d]));
      for (int64_t u = 0; u < perThread; ++u) {
        Value iu = i;
        if (inner && u != 0)
          iu = arith::AddIOp::create(b, loc, i,
                                     indexConst(b, loc, u * steps[d]));
        maps[u].map(loop.getInductionVars()[d], iu);
      }
    }
    // Op by op, each for every iteration of the thread: loads of
    // neighbouring elements end up side by side.
    for (Operation &op : loop.getBody()->without_terminator())
      for (IRMapping &map : maps)
        b.clone(op, map);
    loop.erase();
    return success();
  }

  /// Runs `ops` (consecutive) in a launch of one thread.
  LogicalResult wrapSerial(ArrayRef<Operation *> ops) {
    llvm::SmallPtrSet<Operation *, 8> inside(ops.begin(), ops.end());
    for (Operation *op : ops)
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (!inside.count(user) &&
              !inside.count(
                  ops.front()->getBlock()->findAncestorOpInBlock(*user)))
            return op->emitError("a value computed on the device is used "
                                 "outside its kernel");
    // After the last op, so that whatever the run reads is defined before.
    OpBuilder b(ops.front()->getContext());
    b.setInsertionPointAfter(ops.back());
    gpu::LaunchOp launch = createLaunch(b, ops.front()->getLoc(), 1, 1);
    Operation *end = launch.getBody().front().getTerminator();
    for (Operation *op : ops)
      op->moveBefore(end);
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr("tcc.kernel") || func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("a GPU kernel function must have one block");
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front().without_terminator())
      ops.push_back(&op);
    SmallVector<Operation *> serial;
    llvm::SmallPtrSet<Operation *, 16> inRun;
    auto flush = [&]() -> LogicalResult {
      if (serial.empty())
        return success();
      LogicalResult r = wrapSerial(serial);
      serial.clear();
      inRun.clear();
      return r;
    };
    for (Operation *op : ops) {
      // A pure op computing on what the serial run produces joins it.
      bool usesRun = llvm::any_of(op->getOperands(), [&](Value v) {
        return v.getDefiningOp() && inRun.count(v.getDefiningOp());
      });
      // Launches already made (row reductions) keep their place in the
      // order of memory effects: a serial run cannot extend across one.
      if (isa<gpu::LaunchOp>(op)) {
        if (failed(flush()))
          return signalPassFailure();
        continue;
      }
      if (!usesRun && staysOutside(op))
        continue;
      if (usesRun && staysOutside(op) &&
          !isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp>(op)) {
        serial.push_back(op);
        inRun.insert(op);
        continue;
      }
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
        if (failed(flush()) || failed(mapParallel(loop)))
          return signalPassFailure();
        continue;
      }
      serial.push_back(op);
      inRun.insert(op);
    }
    if (failed(flush()))
      return signalPassFailure();
    func.walk([](gpu::LaunchOp launch) {
      sinkInto(launch);
      privatizeAllocations(launch);
      assumeAligned(launch);
    });
  }
};

} // namespace
