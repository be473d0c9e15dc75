//===- DedupKernels.cpp - one kernel function per distinct body -----------===//
//
// Models repeat their blocks (ResNet's bottlenecks, DenseNet's layers,
// NASNet's cells), and after outlining each repetition is a kernel function
// of its own. Code generation compiles every kernel function, so identical
// ones cost LLVM time again and again: NASNet-A Large outlines 565 kernels of
// which 96 are distinct. This pass keeps the first of each class of kernels
// equal but for their symbol name and points every reference at it.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCDEDUPKERNELS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

/// The function's attributes (function type, argument and result
/// attributes, visibility, tcc.kind, ...) without its name.
DictionaryAttr attributesWithoutName(func::FuncOp f) {
  NamedAttrList attrs(f->getAttrDictionary());
  attrs.erase(SymbolTable::getSymbolAttrName());
  return attrs.getDictionary(f.getContext());
}

/// A hash of what kernelsEqual compares: equal kernels hash equal. Each op's
/// name, attributes, properties and result types are in, and its operands as
/// the order in which their values first appear (arguments, then results and
/// block arguments in walk order): kernels of the same ops wired differently
/// (a repeated pattern of a generated graph) land in different buckets, so
/// the pairwise check stays rare.
llvm::hash_code kernelHash(func::FuncOp f) {
  llvm::hash_code hash = hash_value(attributesWithoutName(f));
  llvm::DenseMap<Value, unsigned> order;
  auto number = [&](Value v) {
    return llvm::hash_value(order.try_emplace(v, order.size()).first->second);
  };
  for (BlockArgument arg : f.getArguments())
    number(arg);
  f.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    hash = llvm::hash_combine(
        hash, OperationEquivalence::computeHash(
                  op, number, number, OperationEquivalence::IgnoreLocations));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          hash = llvm::hash_combine(hash, number(arg), arg.getType());
  });
  return hash;
}

/// Whether `a` and `b` compute the same thing: equal attributes but for the
/// name, and bodies equal op for op (operands mapped through the
/// correspondence of arguments and results). Locations are not compared: they
/// name the model's nodes, which differ between repetitions.
bool kernelsEqual(func::FuncOp a, func::FuncOp b) {
  return attributesWithoutName(a) == attributesWithoutName(b) &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.getBody(), &b.getBody(), OperationEquivalence::IgnoreLocations);
}

struct TccDedupKernels : mlir::tcc::impl::TccDedupKernelsBase<TccDedupKernels> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Kernels by hash, in module order: the first of each class stays, so
    // the kept names are those outlining gave the first occurrences.
    llvm::MapVector<llvm::hash_code, SmallVector<func::FuncOp, 1>> classes;
    llvm::DenseMap<StringAttr, FlatSymbolRefAttr> replacement;
    SmallVector<func::FuncOp> erase;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (!f->hasAttr("tcc.kernel") || f.isExternal())
        continue;
      SmallVector<func::FuncOp, 1> &kept = classes[kernelHash(f)];
      auto same = llvm::find_if(
          kept, [&](func::FuncOp k) { return kernelsEqual(k, f); });
      if (same == kept.end()) {
        kept.push_back(f);
        continue;
      }
      replacement[f.getSymNameAttr()] =
          FlatSymbolRefAttr::get(same->getSymNameAttr());
      erase.push_back(f);
    }
    if (erase.empty())
      return;
    // One walk rewrites every reference (the launch sequences' calls, and
    // any other use of a kernel's symbol) instead of one walk per kernel.
    AttrTypeReplacer replacer;
    replacer.addReplacement(
        [&](FlatSymbolRefAttr ref) -> std::optional<Attribute> {
          auto it = replacement.find(ref.getAttr());
          if (it == replacement.end())
            return std::nullopt;
          return it->second;
        });
    replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false,
                                          /*replaceTypes=*/false);
    for (func::FuncOp f : erase)
      f.erase();
  }
};

} // namespace
