//===- ViewKernels.cpp - reshapes of kernel arguments launch nothing -----===//
//
// A flatten before a classifier's matmul, or a reshape back after a softmax
// computed over a flat view, outlines to a kernel of its own when nothing
// fuses it with a neighbour, or rides along as one more result of the
// kernel that reads the same argument. Either way it only copies: its
// result has the argument's bytes in the same order.
//
// Each such result becomes a kernel of its own marked `tcc.view` (the
// reshapes of one argument, nothing else), which launches nothing: the
// bundle writer gives its result the argument's buffer. The kernel it came
// from loses the result (and an argument nothing else reads); one left with
// no result is gone. A result that its caller returns (a model output or an
// init result, which have buffers of their own) stays where it is.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "ir/TccOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCVIEWKERNELS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

/// The argument of `body` that `v` is reached from through reshapes alone,
/// or null.
BlockArgument viewedArgument(Value v, Block &body) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == &body ? arg : BlockArgument();
}

struct TccViewKernels : mlir::tcc::impl::TccViewKernelsBase<TccViewKernels> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::CallOp> calls;
    for (auto caller : module.getOps<func::FuncOp>())
      if (!caller->hasAttr("tcc.kernel") && !caller.isExternal())
        for (auto call : caller.getBody().front().getOps<func::CallOp>())
          calls.push_back(call);
    for (func::CallOp call : calls)
      splitViews(call, symbols, module);
  }

  /// Moves the results of `call`'s kernel that are reshapes of an argument
  /// (and that the caller does not return) into view kernels of their own.
  void splitViews(func::CallOp call, SymbolTable &symbols, ModuleOp module) {
    auto f = symbols.lookup<func::FuncOp>(call.getCallee());
    // Not a convolution storing into a concat's channels (its results map
    // to the concat's buffer), nor a kernel with result attributes.
    if (!f || !f->hasAttr("tcc.kernel") || f->hasAttr("tcc.view") ||
        f->hasAttr("tcc.out_slice") || f.getResAttrsAttr() ||
        !f.getBody().hasOneBlock() || !onlyCall(f, module))
      return;
    Block &body = f.getBody().front();
    Operation *ret = body.getTerminator();
    llvm::BitVector views(f.getNumResults());
    for (auto [i, v] : llvm::enumerate(ret->getOperands()))
      views[i] = viewedArgument(v, body) &&
                 llvm::none_of(call.getResult(i).getUsers(), [](Operation *u) {
                   return isa<func::ReturnOp>(u);
                 });
    if (views.none())
      return;
    MLIRContext *ctx = &getContext();
    // A kernel of one argument and one result, its reshapes: a view itself.
    if (views.all() && f.getNumResults() == 1 && f.getNumArguments() == 1) {
      f->setAttr("tcc.view", UnitAttr::get(ctx));
      return;
    }
    OpBuilder b(call);
    b.setInsertionPointAfter(call);
    for (int i : views.set_bits()) {
      Value v = ret->getOperand(i);
      BlockArgument arg = viewedArgument(v, body);
      call.getResult(i).replaceAllUsesWith(viewCall(
          b, symbols, f, v, arg, call.getOperand(arg.getArgNumber()), i));
    }
    // The kernel without them: results, then the reshapes and arguments
    // nothing reads any more.
    ret->eraseOperands(views);
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isa<ReshapeOp>(op) && op.use_empty())
        op.erase();
    llvm::BitVector unusedArgs(f.getNumArguments());
    for (BlockArgument a : body.getArguments())
      unusedArgs[a.getArgNumber()] = a.use_empty();
    if (ret->getNumOperands() == 0) {
      call.erase();
      symbols.erase(f);
      return;
    }
    (void)f.eraseArguments(unusedArgs);
    f.setFunctionType(FunctionType::get(ctx, body.getArgumentTypes(),
                                        ret->getOperandTypes()));
    SmallVector<Value> operands;
    for (auto [j, operand] : llvm::enumerate(call.getOperands()))
      if (!unusedArgs[j])
        operands.push_back(operand);
    b.setInsertionPoint(call);
    auto narrowed = func::CallOp::create(b, call.getLoc(), f, operands);
    narrowed->setDiscardableAttrs(call->getDiscardableAttrDictionary());
    unsigned next = 0;
    for (auto [i, r] : llvm::enumerate(call.getResults()))
      if (!views[i])
        r.replaceAllUsesWith(narrowed.getResult(next++));
    call.erase();
  }

  /// A call, at `b`, of a new view kernel computing `v` (reshapes of `arg`
  /// in `f`) from `operand`.
  Value viewCall(OpBuilder &b, SymbolTable &symbols, func::FuncOp f, Value v,
                 BlockArgument arg, Value operand, unsigned result) {
    MLIRContext *ctx = &getContext();
    OpBuilder detached(ctx);
    auto view = func::FuncOp::create(
        detached, f.getLoc(),
        (f.getSymName() + "_view" + std::to_string(result)).str(),
        FunctionType::get(ctx, {arg.getType()}, {v.getType()}));
    view.setPrivate();
    view->setAttr("tcc.kernel", UnitAttr::get(ctx));
    view->setAttr("tcc.kind", StringAttr::get(ctx, "elementwise"));
    view->setAttr("tcc.view", UnitAttr::get(ctx));
    Block *entry = view.addEntryBlock();
    OpBuilder vb = OpBuilder::atBlockEnd(entry);
    SmallVector<ReshapeOp> chain;
    for (Value x = v; auto reshape = x.getDefiningOp<ReshapeOp>();
         x = reshape.getInput())
      chain.push_back(reshape);
    IRMapping map;
    map.map(arg, entry->getArgument(0));
    // Without a region group's mark: the view launches nothing of the group.
    for (ReshapeOp reshape : llvm::reverse(chain))
      vb.clone(*reshape, map)->removeAttr("tcc.region_group");
    func::ReturnOp::create(vb, f.getLoc(), map.lookupOrDefault(v));
    // After `f`, renamed if a kernel has its name already.
    symbols.insert(view, std::next(Block::iterator(f)));
    return func::CallOp::create(b, f.getLoc(), view, operand).getResult(0);
  }

  /// Whether the only use of `f` in `module` is one call.
  static bool onlyCall(func::FuncOp f, ModuleOp module) {
    std::optional<SymbolTable::UseRange> uses = f.getSymbolUses(module);
    return uses && llvm::hasSingleElement(*uses) &&
           isa<func::CallOp>(uses->begin()->getUser());
  }
};

} // namespace
