//===- OutlineGroups.cpp - tcc.group → kernel function + call -------------===//
//
// After this pass the entry function is a launch sequence: calls to kernel
// functions, in order, on whole tensors. Code generation then works on each
// kernel function alone, and the bundle writer reads the sequence.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCOUTLINEGROUPS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

/// Values defined outside `region` and used inside, in order of first use.
llvm::SetVector<Value> capturedValues(Region &region) {
  llvm::SetVector<Value> captured;
  region.walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (!region.isAncestor(v.getParentRegion()))
        captured.insert(v);
  });
  return captured;
}

func::FuncOp outline(GroupOp group, StringRef name, OpBuilder &moduleBuilder) {
  llvm::SetVector<Value> captured = capturedValues(group.getBody());
  auto type = FunctionType::get(group.getContext(),
                                ValueRange(captured.getArrayRef()).getTypes(),
                                group.getResultTypes());
  auto func = func::FuncOp::create(moduleBuilder, group.getLoc(), name, type);
  func.setPrivate();
  func->setAttr("tcc.kernel", UnitAttr::get(group.getContext()));
  func->setAttr("tcc.kind", group.getKindAttr());
  Block *entry = func.addEntryBlock();
  IRMapping map;
  for (auto [v, arg] : llvm::zip(captured, entry->getArguments()))
    map.map(v, arg);
  OpBuilder b = OpBuilder::atBlockEnd(entry);
  for (Operation &op : group.getBody().front().without_terminator())
    b.clone(op, map);
  auto yield = cast<YieldOp>(group.getBody().front().getTerminator());
  SmallVector<Value> results;
  for (Value v : yield.getValues())
    results.push_back(map.lookupOrDefault(v));
  func::ReturnOp::create(b, yield.getLoc(), results);

  OpBuilder callBuilder(group);
  auto call = func::CallOp::create(callBuilder, group.getLoc(), func,
                                   ValueRange(captured.getArrayRef()));
  group.replaceAllUsesWith(call.getResults());
  group.erase();
  return func;
}

struct TccOutlineGroups
    : mlir::tcc::impl::TccOutlineGroupsBase<TccOutlineGroups> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
    int index = 0;
    for (auto entry : llvm::to_vector(module.getOps<func::FuncOp>())) {
      // The init function (tcc-hoist-param-computations) is a launch
      // sequence too, run once at load.
      if (!entry->hasAttr("tcc.entry") && !entry->hasAttr("tcc.init"))
        continue;
      for (auto group : llvm::to_vector(entry.getOps<GroupOp>())) {
        std::string name =
            "k" + std::to_string(index++) + "_" + group.getKind().str();
        func::FuncOp kernel = outline(group, name, moduleBuilder);
        // Renames on a clash with a symbol already in the module.
        symbols.insert(kernel);
      }
    }
  }
};

} // namespace
