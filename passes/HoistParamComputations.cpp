//===- HoistParamComputations.cpp - params-only work runs once at load ----===//
//
// Weight preprocessing (layout transposes, batch norm folded into conv
// weights, casts) depends on params alone, so its results are the same on
// every run. This pass moves it out of the entry function into an init
// function that the runtime runs once after filling the params; the entry
// function reads the results ("derived params") as arguments. Both functions
// are grouped, outlined and compiled alike, so the init kernels come from
// the same code generation as the others.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCHOISTPARAMCOMPUTATIONS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

/// What a value of the entry function is, as far as hoisting goes.
enum class Origin {
  Run,    ///< Depends on an input (or is not a tcc value): per run.
  Source, ///< A constant or iota: free to clone, nothing to hoist.
  Param,  ///< A param argument, or a reshape (a view) of one.
  Hoisted ///< Computed from params and sources by a hoisted op.
};

/// Elements a derived param may have beyond those it is made from.
constexpr int64_t kSmallDerived = 1 << 14;

int64_t numElements(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() ? t.getNumElements() : -1;
}

/// Ops that may run at load: tcc ops without regions or side effects, whose
/// results are static tensors. index_check's count is a run-time status.
bool mayHoist(Operation &op) {
  if (!isa_and_nonnull<TccDialect>(op.getDialect()) ||
      op.getNumRegions() != 0 || op.getNumResults() == 0 || !isPure(&op) ||
      isa<IndexCheckOp>(op))
    return false;
  return llvm::all_of(op.getResults(),
                      [](Value r) { return numElements(r) >= 0; });
}

struct TccHoistParamComputations
    : mlir::tcc::impl::TccHoistParamComputationsBase<
          TccHoistParamComputations> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto entry : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (entry->hasAttr("tcc.entry") && !entry.isExternal())
        hoist(entry, symbols);
  }

  void hoist(func::FuncOp entry, SymbolTable &symbols) {
    Block &body = entry.getBody().front();
    llvm::DenseMap<Value, Origin> origin;
    auto originOf = [&](Value v) {
      auto it = origin.find(v);
      return it == origin.end() ? Origin::Run : it->second;
    };
    for (BlockArgument arg : entry.getArguments()) {
      auto kind =
          entry.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tcc.kind");
      if (kind && kind.getValue() == "param")
        origin[arg] = Origin::Param;
    }

    // Forward over the ops (the body is in order): an op is hoisted when
    // all its operands are params, sources or hoisted, at least one is not
    // a source, and it makes no more elements than its largest stored
    // operand (or few), so that a derived param never costs much more memory
    // than what it is made from (a large broadcast stays a per-run view of
    // its operand).
    SmallVector<Operation *> hoisted;
    // Sources computed from positions (iotas): ALiBi's distances, masks.
    llvm::DenseSet<Value> positional;
    for (Operation &op : body.without_terminator()) {
      if (!mayHoist(op))
        continue;
      if (op.getNumOperands() == 0) {
        for (Value r : op.getResults()) {
          origin[r] = Origin::Source;
          if (isa<IotaOp>(op))
            positional.insert(r);
        }
        continue;
      }
      int64_t largest = -1;
      bool onlyParams = true, anyHoisted = false, anyPositional = false;
      for (Value v : op.getOperands()) {
        Origin o = originOf(v);
        if (o == Origin::Run) {
          onlyParams = false;
          break;
        }
        anyPositional |= positional.contains(v);
        if (o == Origin::Source)
          continue;
        anyHoisted |= o == Origin::Hoisted;
        largest = std::max(largest, numElements(v));
      }
      if (!onlyParams)
        continue;
      if (largest < 0) {
        // Sources alone (a broadcast constant): a source too.
        for (Value r : op.getResults()) {
          origin[r] = Origin::Source;
          if (anyPositional)
            positional.insert(r);
        }
        continue;
      }
      // Small results may grow: a per-channel vector repeated a few times
      // (a transposed convolution's bias, once per output phase) costs a
      // few KB once and saves a kernel per run. Not a param spread over
      // positions (ALiBi's per-head slopes times distances): its consumer
      // computes each element from the param as cheaply as it would read
      // a stored plane, and a fused kernel (attention's) reads the param.
      if (llvm::any_of(op.getResults(), [&](Value r) {
            return numElements(r) >
                   (anyPositional ? largest : std::max(largest, kSmallDerived));
          }))
        continue;
      // A reshape of a raw param is a view: copying it at load would only
      // double the param's memory.
      if (isa<ReshapeOp>(op) && !anyHoisted) {
        origin[op.getResult(0)] = Origin::Param;
        continue;
      }
      for (Value r : op.getResults())
        origin[r] = Origin::Hoisted;
      hoisted.push_back(&op);
    }
    llvm::SmallPtrSet<Operation *, 16> hoistedSet(hoisted.begin(),
                                                  hoisted.end());
    MLIRContext *ctx = entry.getContext();
    auto i64 = [&](int64_t v) {
      return IntegerAttr::get(IntegerType::get(ctx, 64), v);
    };

    // A reshape of a param that a run reads is the param's own bytes: an
    // entry argument marked `tcc.view_of` the param, which the bundle binds
    // to the param's buffer, so no kernel copies it.
    for (Operation &op : body.without_terminator()) {
      auto reshape = dyn_cast<ReshapeOp>(op);
      if (!reshape || hoistedSet.count(&op) ||
          originOf(reshape.getResult()) != Origin::Param ||
          llvm::all_of(reshape->getUsers(), [&](Operation *user) {
            // A reshape of the view is a view of the param itself.
            return hoistedSet.count(user) || isa<ReshapeOp>(user);
          }))
        continue;
      Value root = reshape.getInput();
      while (!isa<BlockArgument>(root))
        root = root.getDefiningOp<ReshapeOp>().getInput();
      unsigned argNo = entry.getNumArguments();
      if (failed(entry.insertArgument(argNo, reshape.getType(), {},
                                      reshape.getLoc()))) {
        entry.emitError("cannot add a param view argument");
        return signalPassFailure();
      }
      entry.setArgAttr(argNo, "tcc.kind", StringAttr::get(ctx, "view"));
      entry.setArgAttr(argNo, "tcc.view_of",
                       i64(cast<BlockArgument>(root).getArgNumber()));
      reshape.getResult().replaceUsesWithIf(
          entry.getArgument(argNo),
          [&](OpOperand &use) { return !hoistedSet.count(use.getOwner()); });
    }
    if (hoisted.empty()) {
      eraseDead(body, originOf);
      return;
    }

    // The derived params: hoisted values that per-run ops or the return
    // read. The values that init needs from outside: param arguments.
    llvm::SetVector<Value> derived;
    for (Operation *op : hoisted)
      for (Value r : op->getResults())
        for (OpOperand &use : r.getUses())
          if (!hoistedSet.count(use.getOwner())) {
            derived.insert(r);
            break;
          }
    if (derived.empty()) {
      // Nothing per run reads them: dead code, left to the later passes.
      eraseDead(body, originOf);
      return;
    }

    // The init function: clones of the hoisted ops and of the sources and
    // param views they read, in body order.
    OpBuilder mb(entry);
    mb.setInsertionPointAfter(entry);
    auto init = func::FuncOp::create(mb, entry.getLoc(),
                                     (entry.getSymName() + "_init").str(),
                                     FunctionType::get(ctx, {}, {}));
    init->setAttr("tcc.init", UnitAttr::get(ctx));
    symbols.insert(init); // renamed on a clash
    Block *initBody = init.addEntryBlock();
    IRMapping map;
    SmallVector<Type> argTypes;
    SmallVector<unsigned> argOf;
    // Param arguments and views: mapped on demand.
    std::function<Value(Value)> mapped = [&](Value v) -> Value {
      if (Value m = map.lookupOrNull(v))
        return m;
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        Value a = initBody->addArgument(arg.getType(), arg.getLoc());
        argTypes.push_back(arg.getType());
        argOf.push_back(arg.getArgNumber());
        map.map(v, a);
        return a;
      }
      // A source or a reshape view of a param: cloned where first needed.
      Operation *def = v.getDefiningOp();
      for (Value operand : def->getOperands())
        mapped(operand);
      OpBuilder b = OpBuilder::atBlockEnd(initBody);
      b.clone(*def, map);
      return map.lookup(v);
    };
    for (Operation *op : hoisted) {
      for (Value operand : op->getOperands())
        if (originOf(operand) != Origin::Hoisted)
          mapped(operand);
      OpBuilder b = OpBuilder::atBlockEnd(initBody);
      b.clone(*op, map);
    }
    SmallVector<Value> results;
    SmallVector<Type> resultTypes;
    for (Value v : derived) {
      results.push_back(map.lookup(v));
      resultTypes.push_back(v.getType());
    }
    OpBuilder b = OpBuilder::atBlockEnd(initBody);
    func::ReturnOp::create(b, entry.getLoc(), results);
    init.setType(FunctionType::get(ctx, argTypes, resultTypes));
    for (auto [i, argNo] : llvm::enumerate(argOf)) {
      init.setArgAttr(i, "tcc.param", i64(argNo));
      if (auto name = entry.getArgAttr(argNo, "tcc.name"))
        init.setArgAttr(i, "tcc.name", name);
    }

    // The entry function reads the derived params as arguments.
    for (auto [i, d] : llvm::enumerate(derived)) {
      Value v = d;
      unsigned argNo = entry.getNumArguments();
      if (failed(entry.insertArgument(argNo, v.getType(), {}, v.getLoc()))) {
        entry.emitError("cannot add a derived param argument");
        return signalPassFailure();
      }
      entry.setArgAttr(argNo, "tcc.kind", StringAttr::get(ctx, "derived"));
      entry.setArgAttr(argNo, "tcc.derived", i64(i));
      v.replaceUsesWithIf(entry.getArgument(argNo), [&](OpOperand &use) {
        return !hoistedSet.count(use.getOwner());
      });
    }
    for (Operation *op : llvm::reverse(hoisted))
      op->erase();
    eraseDead(body, originOf);
  }

  /// Sources and views that nothing reads any more (the hoisted ops and the
  /// view arguments took their uses).
  template <typename OriginOf>
  static void eraseDead(Block &body, OriginOf &originOf) {
    // Last first, so that erasing a user frees its operands' producers.
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty() && mayHoist(*op) &&
          originOf(op->getResult(0)) != Origin::Run)
        op->erase();
  }
};

} // namespace
