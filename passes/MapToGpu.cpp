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

/// Clones a parallel loop's body once per iteration a thread takes
/// (`maps[u]`: the innermost induction variable is i + u, i a multiple of
/// the count P), op by op so that neighbouring elements' accesses sit side
/// by side. Where the P iterations' accesses are contiguous, and aligned by
/// proof, it emits one vector access instead of P scalar ones: a load or
/// store whose last index is the innermost variable plus a multiple of P
/// and whose other indices do not depend on it, into a buffer defined
/// outside the loop whose innermost stride is 1 and whose offset and other
/// strides are multiples of P (every buffer's base is 16-byte aligned: the
/// runtime refuses others). LLVM's load-store vectorizer cannot always prove
/// this itself: from the index arithmetic of the P clones it split 16-byte
/// runs into 2 + 2 + 4 + 8 bytes (RoPE's broadcast cos and sin). An scf.if
/// whose condition is the same for the P iterations (a comparison of the
/// innermost variable plus k with a bound c, c - k a multiple of P: a
/// concat's split along the last axis at a multiple of P) stays one scf.if
/// around the P clones of its regions, so its accesses vectorize too.
class Unroller {
public:
  Unroller(OpBuilder &b, scf::ParallelOp loop, MutableArrayRef<IRMapping> maps,
           bool contiguous)
      : b(b), loop(loop), maps(maps), iv(loop.getInductionVars().back()),
        p(int64_t(maps.size())), contiguous(contiguous && maps.size() > 1) {}

  void cloneBlock(Block &block) {
    for (Operation &op : block.without_terminator())
      cloneOp(op);
  }

private:
  void cloneOp(Operation &op) {
    if (contiguous) {
      if (auto load = dyn_cast<memref::LoadOp>(op); load && vectorLoad(load))
        return;
      if (auto store = dyn_cast<memref::StoreOp>(op);
          store && vectorStore(store))
        return;
      if (auto ifOp = dyn_cast<scf::IfOp>(op); ifOp && uniformIf(ifOp))
        return;
    }
    for (IRMapping &map : maps)
      b.clone(op, map);
  }

  /// Whether `v` (of the body) depends on the innermost variable.
  bool dependsOnIv(Value v) {
    if (v == iv)
      return true;
    Operation *def = v.getDefiningOp();
    if (!def || !loop->isProperAncestor(def))
      return false;
    if (auto it = depends.find(v); it != depends.end())
      return it->second;
    bool d = def->getNumRegions() != 0 ||
             llvm::any_of(def->getOperands(),
                          [&](Value o) { return dependsOnIv(o); });
    depends[v] = d;
    return d;
  }

  /// k where `v` is the innermost variable plus the constant k.
  std::optional<int64_t> ivOffset(Value v) {
    if (v == iv)
      return 0;
    Operation *def = v.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (auto add = dyn_cast<arith::AddIOp>(def)) {
      if (std::optional<int64_t> c = getConstantIntValue(add.getRhs()))
        if (std::optional<int64_t> k = ivOffset(add.getLhs()))
          return *k + *c;
      if (std::optional<int64_t> c = getConstantIntValue(add.getLhs()))
        if (std::optional<int64_t> k = ivOffset(add.getRhs()))
          return *k + *c;
    }
    if (auto sub = dyn_cast<arith::SubIOp>(def))
      if (std::optional<int64_t> c = getConstantIntValue(sub.getRhs()))
        if (std::optional<int64_t> k = ivOffset(sub.getLhs()))
          return *k - *c;
    if (auto apply = dyn_cast<affine::AffineApplyOp>(def)) {
      AffineMap map = apply.getAffineMap();
      if (map.getNumResults() != 1 || map.getNumInputs() != 1)
        return std::nullopt;
      // d0 or d0 + c (simplified maps keep the constant on the right).
      AffineExpr e = map.getResult(0), d0 = b.getAffineDimExpr(0);
      int64_t c = 0;
      if (auto sum = dyn_cast<AffineBinaryOpExpr>(e);
          sum && sum.getKind() == AffineExprKind::Add && sum.getLHS() == d0)
        if (auto cst = dyn_cast<AffineConstantExpr>(sum.getRHS())) {
          c = cst.getValue();
          e = d0;
        }
      if (e != d0)
        return std::nullopt;
      if (std::optional<int64_t> k = ivOffset(apply.getMapOperands()[0]))
        return *k + c;
    }
    return std::nullopt;
  }

  /// Whether the access `buffer[indices]` is one aligned run of P elements
  /// over the P iterations.
  bool contiguousAccess(Value buffer, ValueRange indices) {
    auto type = cast<MemRefType>(buffer.getType());
    Type elem = type.getElementType();
    unsigned bits = elem.isIntOrFloat() ? elem.getIntOrFloatBitWidth() : 0;
    // i1 and other sub-byte types are not stored one to a byte in vectors.
    if (type.getRank() == 0 || bits < 8 || !llvm::isPowerOf2_32(bits))
      return false;
    if (Operation *def = buffer.getDefiningOp();
        def && loop->isProperAncestor(def))
      return false;
    std::optional<int64_t> k = ivOffset(indices.back());
    if (!k || *k % p != 0)
      return false;
    if (llvm::any_of(indices.drop_back(),
                     [&](Value i) { return dependsOnIv(i); }))
      return false;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1 || ShapedType::isDynamic(offset) || offset % p)
      return false;
    for (int64_t d = 0; d + 1 < type.getRank(); ++d)
      if (type.getDimSize(d) != 1 &&
          (ShapedType::isDynamic(strides[d]) || strides[d] % p))
        return false;
    return true;
  }

  llvm::MaybeAlign alignment(Value buffer) {
    int64_t bytes =
        p * cast<MemRefType>(buffer.getType()).getElementTypeBitWidth() / 8;
    return llvm::Align(std::min<int64_t>(bytes, 16));
  }

  SmallVector<Value> mapped(ValueRange values, IRMapping &map) {
    return llvm::map_to_vector(values,
                               [&](Value v) { return map.lookupOrDefault(v); });
  }

  bool vectorLoad(memref::LoadOp load) {
    if (!contiguousAccess(load.getMemRef(), load.getIndices()))
      return false;
    Location loc = load.getLoc();
    auto type = VectorType::get({p}, load.getType());
    Value vec = vector::LoadOp::create(
        b, loc, type, maps[0].lookupOrDefault(load.getMemRef()),
        mapped(load.getIndices(), maps[0]), /*nontemporal=*/false,
        alignment(load.getMemRef()));
    for (int64_t u = 0; u < p; ++u)
      maps[u].map(load.getResult(),
                  vector::ExtractOp::create(b, loc, vec, ArrayRef<int64_t>{u})
                      .getResult());
    return true;
  }

  bool vectorStore(memref::StoreOp store) {
    if (!contiguousAccess(store.getMemRef(), store.getIndices()))
      return false;
    Location loc = store.getLoc();
    SmallVector<Value> elems;
    for (IRMapping &map : maps)
      elems.push_back(map.lookupOrDefault(store.getValue()));
    auto type = VectorType::get({p}, store.getValue().getType());
    Value vec = vector::FromElementsOp::create(b, loc, type, elems);
    vector::StoreOp::create(
        b, loc, vec, maps[0].lookupOrDefault(store.getMemRef()),
        mapped(store.getIndices(), maps[0]),
        /*nontemporal=*/false, alignment(store.getMemRef()));
    return true;
  }

  /// Whether the i1 `cond` is the same for the P iterations.
  bool uniform(Value cond) {
    if (!dependsOnIv(cond))
      return true;
    Operation *def = cond.getDefiningOp();
    if (isa_and_present<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(def))
      return uniform(def->getOperand(0)) && uniform(def->getOperand(1));
    auto cmp = dyn_cast_or_null<arith::CmpIOp>(def);
    if (!cmp)
      return false;
    arith::CmpIPredicate pred = cmp.getPredicate();
    Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
    using P = arith::CmpIPredicate;
    if (!getConstantIntValue(rhs)) {
      // c < x is x > c, and so on.
      std::swap(lhs, rhs);
      pred = pred == P::slt   ? P::sgt
             : pred == P::sgt ? P::slt
             : pred == P::sle ? P::sge
             : pred == P::sge ? P::sle
                              : pred;
    }
    std::optional<int64_t> c = getConstantIntValue(rhs), k = ivOffset(lhs);
    if (!c || !k)
      return false;
    // x = i + u + k against c, i a multiple of P and 0 <= u < P: x < c is
    // the same for every u when c - k is a multiple of P (x <= c when c + 1
    // - k is).
    int64_t bound = *c;
    if (pred == P::sle || pred == P::sgt)
      bound += 1;
    else if (pred != P::slt && pred != P::sge)
      return false;
    return (bound - *k) % p == 0;
  }

  bool uniformIf(scf::IfOp ifOp) {
    if (!uniform(ifOp.getCondition()))
      return false;
    SmallVector<Type> types;
    for (int64_t u = 0; u < p; ++u)
      llvm::append_range(types, ifOp.getResultTypes());
    bool withElse = !ifOp.getElseRegion().empty();
    auto fused = scf::IfOp::create(b, ifOp.getLoc(), types,
                                   maps[0].lookupOrDefault(ifOp.getCondition()),
                                   withElse);
    auto fill = [&](Block &from, Region &to) {
      OpBuilder::InsertionGuard g(b);
      Block &block = to.front();
      if (block.mightHaveTerminator())
        b.setInsertionPoint(block.getTerminator());
      else
        b.setInsertionPointToEnd(&block);
      cloneBlock(from);
      if (types.empty())
        return;
      SmallVector<Value> yielded;
      for (IRMapping &map : maps)
        llvm::append_range(yielded,
                           mapped(from.getTerminator()->getOperands(), map));
      scf::YieldOp::create(b, ifOp.getLoc(), yielded);
    };
    fill(ifOp.getThenRegion().front(), fused.getThenRegion());
    if (withElse)
      fill(ifOp.getElseRegion().front(), fused.getElseRegion());
    int64_t n = ifOp.getNumResults();
    for (int64_t u = 0; u < p; ++u)
      for (int64_t r = 0; r < n; ++r)
        maps[u].map(ifOp.getResult(r), fused.getResult(u * n + r));
    return true;
  }

  OpBuilder &b;
  scf::ParallelOp loop;
  MutableArrayRef<IRMapping> maps;
  Value iv;
  int64_t p;
  bool contiguous;
  DenseMap<Value, bool> depends;
};

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
    // neighbouring elements end up side by side, or become one vector
    // access where the iterations' elements are contiguous (Unroller).
    Unroller(b, loop, maps,
             vectorAccesses && steps.back() == 1 && lbs.back() % perThread == 0)
        .cloneBlock(*loop.getBody());
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
