//===- ConcatInPlace.cpp - convolutions write their channel concat ------===//
//
// An Inception module's or a fire module's branches end in convolutions
// whose only reader is a channel concat; unfused, the concat is one more
// launch that reads and writes every element again. Here each convolution's
// kernel is told to store its result into its channels of the concat's
// buffer instead (`tcc.out_slice`), and the concat's kernel, marked
// `tcc.concat_in_place`, launches nothing: the bundle writer gives the
// producers' results and the concat's one buffer. Only when every input of a
// concat is such a convolution: a concat copying part of its inputs would
// still be a launch.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "ir/TccOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCCONCATINPLACE
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

bool isSixteenBit(Type t) { return t.isF16() || t.isBF16(); }

/// Whether kernel `f` is a channels-last convolution of its arguments
/// (groups 1, f16/bf16 operands) followed at most by a residual add of an
/// argument and a ReLU, all it returns: what GpuCodegen's convolution
/// templates compute whole and can store into a slice of a wider buffer.
/// The size limits are the templates' (their gather's 32-bit offsets).
bool isSliceableConv(func::FuncOp f) {
  auto kind = f->getAttrOfType<StringAttr>("tcc.kind");
  if (!kind || kind.getValue() != "conv2d" || f.getNumResults() != 1 ||
      f->hasAttr("tcc.out_slice") || f.getBody().getBlocks().size() != 1)
    return false;
  Block &body = f.getBody().front();
  auto conv = dyn_cast<Conv2dOp>(body.front());
  if (!conv || !conv.getNhwc() || conv.getGroups() != 1)
    return false;
  auto isArg = [&](Value v) {
    return isa<BlockArgument>(v) && cast<BlockArgument>(v).getOwner() == &body;
  };
  if (!isArg(conv.getInput()) || !isArg(conv.getWeight()) ||
      (conv.getBias() && !isArg(conv.getBias())))
    return false;
  auto in = cast<RankedTensorType>(conv.getInput().getType());
  auto w = cast<RankedTensorType>(conv.getWeight().getType());
  auto out = cast<RankedTensorType>(conv.getType());
  if (!isSixteenBit(in.getElementType()) ||
      in.getElementType() != w.getElementType() || !in.hasStaticShape() ||
      !w.hasStaticShape() || !out.hasStaticShape())
    return false;
  int64_t n = in.getDimSize(0), h = in.getDimSize(1), wd = in.getDimSize(2),
          c = in.getDimSize(3), kh = w.getDimSize(1), kw = w.getDimSize(2);
  ArrayRef<int64_t> pads = conv.getPads(), dil = conv.getDilations();
  int64_t limit = int64_t(1) << 30;
  int64_t padded = (h + pads[0] + pads[2] + kh * dil[0]) *
                   (wd + pads[1] + pads[3] + kw * dil[1]);
  if (c < 1 || padded > limit / c || n > limit / padded / c ||
      out.getNumElements() / out.getDimSize(3) > limit || kh * kw > limit / c)
    return false;
  // The epilogue: [add of an argument] [relu], then the return.
  Value last = conv.getResult();
  Operation *op = conv->getNextNode();
  if (auto add = dyn_cast<AddOp>(op)) {
    Value other = add.getLhs() == last ? add.getRhs() : add.getLhs();
    if (!last.hasOneUse() || other == last || !isArg(other) ||
        other.getType() != last.getType())
      return false;
    last = add.getResult();
    op = op->getNextNode();
  }
  if (auto relu = dyn_cast<ReluOp>(op)) {
    if (!last.hasOneUse() || relu.getOperand() != last)
      return false;
    last = relu.getResult();
    op = op->getNextNode();
  }
  auto ret = dyn_cast<func::ReturnOp>(op);
  return ret && ret.getOperand(0) == last && last.hasOneUse();
}

/// The concat kernel `f` returns: a channel (last axis) concat of distinct
/// arguments, nothing else. Null otherwise.
ConcatOp channelConcatKernel(func::FuncOp f) {
  if (f.getNumResults() != 1 || f.getBody().getBlocks().size() != 1)
    return nullptr;
  Block &body = f.getBody().front();
  auto concat = dyn_cast<ConcatOp>(body.front());
  if (!concat || concat->getNextNode() != body.getTerminator() ||
      body.getTerminator()->getOperand(0) != concat.getResult())
    return nullptr;
  auto type = cast<RankedTensorType>(concat.getType());
  if (!type.hasStaticShape() || concat.getAxis() != type.getRank() - 1)
    return nullptr;
  llvm::SmallDenseSet<Value> seen;
  for (Value v : concat.getInputs())
    if (!isa<BlockArgument>(v) || !seen.insert(v).second)
      return nullptr;
  return concat;
}

struct TccConcatInPlace
    : mlir::tcc::impl::TccConcatInPlaceBase<TccConcatInPlace> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto entry : module.getOps<func::FuncOp>()) {
      if (!entry->hasAttr("tcc.entry"))
        continue;
      for (auto call : llvm::make_early_inc_range(
               entry.getBody().front().getOps<func::CallOp>()))
        inPlace(call, symbols, module);
    }
  }

  /// Marks `call`'s concat and its producers when every input qualifies.
  void inPlace(func::CallOp call, SymbolTable &symbols, ModuleOp module) {
    auto f = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!f || !f->hasAttr("tcc.kernel") || !onlyCall(f, module))
      return;
    ConcatOp concat = channelConcatKernel(f);
    if (!concat)
      return;
    int64_t stride = cast<RankedTensorType>(concat.getType()).getShape().back();
    if (stride % 8 != 0)
      return;
    SmallVector<std::pair<func::FuncOp, int64_t>> producers;
    int64_t offset = 0;
    for (Value in : concat.getInputs()) {
      Value v = call.getOperand(cast<BlockArgument>(in).getArgNumber());
      auto producer = v.getDefiningOp<func::CallOp>();
      if (!producer || !v.hasOneUse() || producer->getNumResults() != 1)
        return;
      auto g = symbols.lookup<func::FuncOp>(producer.getCallee());
      if (!g || !g->hasAttr("tcc.kernel") || !onlyCall(g, module) ||
          !isSliceableConv(g) || offset % 8 != 0)
        return;
      producers.push_back({g, offset});
      offset += cast<RankedTensorType>(in.getType()).getShape().back();
    }
    MLIRContext *ctx = module.getContext();
    for (auto [g, at] : producers)
      g->setAttr("tcc.out_slice", DenseI64ArrayAttr::get(ctx, {at, stride}));
    f->setAttr("tcc.concat_in_place", UnitAttr::get(ctx));
  }

  /// Whether one call in the module names `f` (outlining gives each group
  /// its own function; the attributes describe that call's buffers).
  static bool onlyCall(func::FuncOp f, ModuleOp module) {
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(f, module);
    return uses && llvm::hasSingleElement(*uses);
  }
};

} // namespace
