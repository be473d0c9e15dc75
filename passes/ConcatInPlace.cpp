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
// U-Net's decoder concats the encoder's result, which its pool reads too,
// with an up-convolution's result interleaved (depth to space). The first
// convolution stores its result twice (its kernel returns it twice: its own
// buffer for the pool, the concat's channels), which costs a write where the
// copy cost a read, a write and a launch; the interleave moves into the
// second convolution's kernel, whose template stores each output pixel
// where the interleave would have put it.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "ir/TccOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
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

/// A concat input: the concat kernel's argument it reads, and the depth to
/// space (a sub-pixel up-convolution's interleave) it goes through first,
/// if any.
struct ConcatInput {
  BlockArgument arg;
  std::optional<DepthToSpace> d2s;
};

/// The concat kernel `f` returns: a channel (last axis) concat of distinct
/// arguments, each read directly or through a depth to space, nothing
/// else. Null otherwise.
ConcatOp channelConcatKernel(func::FuncOp f, SmallVector<ConcatInput> &inputs) {
  if (f.getNumResults() != 1 || f.getBody().getBlocks().size() != 1)
    return nullptr;
  Block &body = f.getBody().front();
  auto concat = body.getTerminator()->getOperand(0).getDefiningOp<ConcatOp>();
  if (!concat || concat->getNextNode() != body.getTerminator())
    return nullptr;
  auto type = cast<RankedTensorType>(concat.getType());
  if (!type.hasStaticShape() || concat.getAxis() != type.getRank() - 1)
    return nullptr;
  llvm::SmallDenseSet<Value> seen;
  size_t ops = 2;
  for (Value v : concat.getInputs()) {
    ConcatInput in;
    in.arg = dyn_cast<BlockArgument>(v);
    if (!in.arg) {
      in.d2s = matchDepthToSpace(v);
      if (!in.d2s || !v.hasOneUse() || !in.d2s->input.hasOneUse())
        return nullptr;
      in.arg = dyn_cast<BlockArgument>(in.d2s->input);
      ops += 3;
    }
    if (!in.arg || in.arg.getOwner() != &body || !seen.insert(in.arg).second)
      return nullptr;
    inputs.push_back(in);
  }
  // Nothing but the concat and the depth-to-space chains.
  return body.getOperations().size() == ops ? concat : nullptr;
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

  /// How a producing convolution stores its channels of the concat.
  enum class Store {
    Slice,    ///< its result is only the concat's input
    Copy,     ///< other kernels read it too: stored twice
    Shuffled, ///< through a depth to space, moved into its kernel
  };
  struct Producer {
    func::CallOp call;
    func::FuncOp kernel;
    int64_t offset;
    Store store;
    unsigned input; ///< the concat's input
  };

  /// Marks `call`'s concat and its producers when every input qualifies.
  void inPlace(func::CallOp call, SymbolTable &symbols, ModuleOp module) {
    auto f = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!f || !f->hasAttr("tcc.kernel") || !onlyCall(f, module))
      return;
    SmallVector<ConcatInput> inputs;
    ConcatOp concat = channelConcatKernel(f, inputs);
    if (!concat)
      return;
    int64_t stride = cast<RankedTensorType>(concat.getType()).getShape().back();
    if (stride % 8 != 0)
      return;
    SmallVector<Producer> producers;
    llvm::SmallDenseSet<Operation *> seen;
    int64_t offset = 0;
    for (auto [i, in] : llvm::enumerate(inputs)) {
      Value v = call.getOperand(in.arg.getArgNumber());
      auto producer = v.getDefiningOp<func::CallOp>();
      if (!producer || producer->getNumResults() != 1 ||
          !seen.insert(producer).second)
        return;
      auto g = symbols.lookup<func::FuncOp>(producer.getCallee());
      if (!g || !g->hasAttr("tcc.kernel") || !onlyCall(g, module) ||
          !isSliceableConv(g) || offset % 8 != 0)
        return;
      int64_t width = cast<RankedTensorType>(concat.getInputs()[i].getType())
                          .getShape()
                          .back();
      Store store = v.hasOneUse() ? Store::Slice : Store::Copy;
      if (in.d2s) {
        // The templates store up to 8 channels of a pixel at once.
        if (!v.hasOneUse() || width % 8 != 0)
          return;
        store = Store::Shuffled;
      }
      producers.push_back({producer, g, offset, store, unsigned(i)});
      offset += width;
    }
    MLIRContext *ctx = module.getContext();
    for (Producer &p : producers) {
      p.kernel->setAttr("tcc.out_slice",
                        DenseI64ArrayAttr::get(ctx, {p.offset, stride}));
      if (p.store == Store::Shuffled)
        moveDepthToSpace(p, *inputs[p.input].d2s, f);
      else if (p.store == Store::Copy)
        storeTwice(p, call, inputs[p.input].arg.getArgNumber());
    }
    f->setAttr("tcc.concat_in_place", UnitAttr::get(ctx));
  }

  /// The depth to space `d2s` of concat kernel `f` moves to the end of the
  /// producer's kernel, which then returns (and stores) its result
  /// pixel-shuffled.
  static void moveDepthToSpace(Producer &p, DepthToSpace &d2s, func::FuncOp f) {
    Operation *ret = p.kernel.getBody().front().getTerminator();
    OpBuilder b(ret);
    IRMapping map;
    map.map(d2s.input, ret->getOperand(0));
    Value shuffled;
    for (Operation *op : d2s.ops)
      shuffled = b.clone(*op, map)->getResult(0);
    ret->setOperand(0, shuffled);
    Type type = shuffled.getType();
    p.kernel.setFunctionType(FunctionType::get(
        p.kernel.getContext(), p.kernel.getArgumentTypes(), {type}));
    p.call.getResult(0).setType(type);
    auto arg = cast<BlockArgument>(d2s.input);
    arg.setType(type);
    d2s.ops[2]->getResult(0).replaceAllUsesWith(arg);
    for (Operation *op : llvm::reverse(d2s.ops))
      op->erase();
    f.setFunctionType(FunctionType::get(f.getContext(),
                                        f.getBody().front().getArgumentTypes(),
                                        f.getResultTypes()));
  }

  /// The producer's kernel returns its result twice: the first for the
  /// other readers, the second (the concat's channels) for operand
  /// `operand` of the concat's call.
  static void storeTwice(Producer &p, func::CallOp concatCall,
                         unsigned operand) {
    Operation *ret = p.kernel.getBody().front().getTerminator();
    Value v = ret->getOperand(0);
    ret->setOperands({v, v});
    Type type = v.getType();
    p.kernel.setFunctionType(FunctionType::get(
        p.kernel.getContext(), p.kernel.getArgumentTypes(), {type, type}));
    OpBuilder b(p.call);
    auto twice =
        func::CallOp::create(b, p.call.getLoc(), p.call.getCalleeAttr(),
                             TypeRange{type, type}, p.call.getOperands());
    twice->setAttrs(p.call->getAttrs());
    concatCall->setOperand(operand, twice.getResult(1));
    p.call.getResult(0).replaceAllUsesWith(twice.getResult(0));
    p.call.erase();
    p.call = twice;
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
