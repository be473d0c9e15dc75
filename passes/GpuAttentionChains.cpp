//===- GpuAttentionChains.cpp - keep the chains the attention kernel takes ===//
//
// On GPU targets a chain that reaches into matmuls (attention's Q·Kᵀ and
// P·V) is worth one kernel only if the fused attention template computes
// it; anything else would run its matmuls as plain loops. Such a chain is
// dissolved: its ops go back into the function, where tcc-form-chains can
// form the chain again without the matmuls, which then get the GEMM
// template. A chain the template takes is marked `tcc.attention`, so that
// tcc-form-groups gives it a kernel of its own: the template reads Q, K and
// V from memory, wherever they come from (model inputs, or the projections
// of a transformer layer), and computes nothing else. The transposes that
// bring Q, K and V from a projection's [B, L, H, D] to [B, H, L, D] (and the
// result back) move into the chain: the template reads and writes the
// untransposed tensors with strides, as long as the head dim stays
// innermost (16-byte rows). A
// dissolved chain gets a remark, "attention not fused: <why>", which
// `tcc compile --explain` prints.
//
//===----------------------------------------------------------------------===//
#include "passes/AttentionMatch.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <functional>
#include <optional>
#include <string>

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUATTENTIONCHAINS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

/// Moves the reshapes and broadcasts that repeat K and V over query heads
/// (GQA) into the chain, so that its kernel reads K and V as they are.
void takeRepeats(mlir::tcc::ChainOp chain, ArrayRef<Operation *> ops) {
  Block &body = chain.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  IRMapping copies;
  for (Operation *op : ops) {
    // K and V may share their repeat (the same ops listed twice).
    if (op->getBlock() == &body || copies.contains(op->getResult(0)))
      continue;
    Operation *copy = b.clone(*op, copies);
    op->getResult(0).replaceUsesWithIf(copy->getResult(0), [&](OpOperand &use) {
      return chain->isProperAncestor(use.getOwner());
    });
  }
  for (Operation *op : llvm::reverse(ops))
    if (op->getBlock() != &body && op->use_empty())
      op->erase();
}

/// Clones into the chain the positional values (masks of iotas and
/// constants) it reads from outside: CSE shares one causal mask between the
/// layers of a model, and the attention match wants its positions inside.
void pullPositions(mlir::tcc::ChainOp chain) {
  Block &body = chain.getBody().front();
  Block *outer = chain->getBlock();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  IRMapping copies;
  std::function<Value(Value)> copy = [&](Value v) -> Value {
    if (Value c = copies.lookupOrNull(v))
      return c;
    Operation *op = v.getDefiningOp();
    for (Value o : op->getOperands())
      copy(o);
    b.clone(*op, copies);
    return copies.lookup(v);
  };
  body.walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      Operation *def = v.getDefiningOp();
      if (def && def->getBlock() == outer && mlir::tcc::isPositional(v, outer))
        use.set(copy(v));
    }
  });
}

/// Scores Q·Kt where Kt is a transpose of a tensor from outside the chain
/// whose last axis is the head dim (K [.., Lk, D] with the last two axes
/// swapped, or a projection's [B, Lk, H, D] by perm [0, 2, 3, 1]), not
/// repeated over heads: they become matmul(Q, K, transpose_b), K the same
/// tensor less the swap (itself, or a transpose keeping the head dim last,
/// which tcc-gpu-attention-chains then reads with strides), so that the
/// template reads K as it is, with no transposed copy. Returns whether it
/// rewrote them.
bool foldKTranspose(const mlir::tcc::AttentionMatch &m) {
  auto t = m.k.getDefiningOp<mlir::tcc::TransposeOp>();
  auto qk = m.scores.getDefiningOp<mlir::tcc::MatmulOp>();
  if (!m.kTransposed || !t || qk.getB() != m.k)
    return false;
  SmallVector<int64_t> perm(t.getPerm());
  int64_t r = perm.size();
  if (r < 2 || perm[r - 2] != r - 1)
    return false;
  std::swap(perm[r - 2], perm[r - 1]);
  Value k = t.getInput();
  if (!llvm::equal(perm, llvm::seq<int64_t>(0, r))) {
    OpBuilder b(t);
    auto shape = llvm::to_vector(t.getType().getShape());
    std::swap(shape[r - 2], shape[r - 1]);
    k = mlir::tcc::TransposeOp::create(
        b, t.getLoc(), RankedTensorType::get(shape, t.getType().getElementType()),
        k, perm);
  }
  qk.getBMutable().assign(k);
  qk.setTransposeB(true);
  if (t->use_empty())
    t->erase();
  return true;
}

/// `v`'s value when every element of it is one number computed from
/// constants alone (a scale such as sqrt(1 / sqrt(D)), as exporters write
/// it), each op's result rounded to its element type as the model computes
/// it; nullopt otherwise. `depth` bounds the walk.
std::optional<double> uniformValue(Value v, int depth = 0) {
  Operation *op = v.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!op || !type || depth > 16)
    return std::nullopt;
  auto rounded = [&](double x) -> std::optional<double> {
    auto ft = dyn_cast<FloatType>(type.getElementType());
    if (!ft || !std::isfinite(x))
      return std::nullopt;
    APFloat f(x);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return f.convertToDouble();
  };
  if (auto c = dyn_cast<mlir::tcc::ConstantOp>(op)) {
    if (auto f = dyn_cast<FloatAttr>(c.getValue()))
      return f.getValueAsDouble();
    if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
      return double(i.getValue().getSExtValue());
    return std::nullopt;
  }
  if (isa<mlir::tcc::ReshapeOp, mlir::tcc::BroadcastToOp>(op))
    return uniformValue(op->getOperand(0), depth + 1);
  if (isa<mlir::tcc::CastOp, mlir::tcc::SqrtOp, mlir::tcc::RsqrtOp,
          mlir::tcc::ReciprocalOp, mlir::tcc::NegOp>(op)) {
    std::optional<double> x = uniformValue(op->getOperand(0), depth + 1);
    if (!x)
      return std::nullopt;
    if (isa<mlir::tcc::CastOp>(op))
      return rounded(*x);
    if (isa<mlir::tcc::NegOp>(op))
      return rounded(-*x);
    if (isa<mlir::tcc::ReciprocalOp>(op))
      return rounded(1.0 / *x);
    if (*x < 0)
      return std::nullopt;
    return rounded(isa<mlir::tcc::SqrtOp>(op) ? std::sqrt(*x)
                                              : 1.0 / std::sqrt(*x));
  }
  if (isa<mlir::tcc::MulOp, mlir::tcc::DivOp, mlir::tcc::AddOp,
          mlir::tcc::SubOp>(op)) {
    std::optional<double> x = uniformValue(op->getOperand(0), depth + 1);
    std::optional<double> y = uniformValue(op->getOperand(1), depth + 1);
    if (!x || !y)
      return std::nullopt;
    if (isa<mlir::tcc::MulOp>(op))
      return rounded(*x * *y);
    if (isa<mlir::tcc::DivOp>(op))
      return rounded(*x / *y);
    return rounded(isa<mlir::tcc::AddOp>(op) ? *x + *y : *x - *y);
  }
  return std::nullopt;
}

/// Whether `f`, a factor of Q or K (Q [.., Lq, D], K as the scores read
/// it), is one number per matrix of the scores: of size 1 on its last two
/// axes and broadcasting to the scores' leading axes, so that scaling the
/// operand by it scales the scores by it (a scalar, or one per head).
bool scalesScores(Value f, RankedTensorType scores) {
  auto t = dyn_cast<RankedTensorType>(f.getType());
  if (!t || !t.hasStaticShape() || t.getRank() > scores.getRank())
    return false;
  int64_t off = scores.getRank() - t.getRank();
  for (int64_t i = 0; i < t.getRank(); ++i) {
    int64_t d = t.getDimSize(i), s = scores.getDimSize(i + off);
    if (i + off >= scores.getRank() - 2 ? d != 1 : d != 1 && d != s)
      return false;
  }
  return true;
}

/// Q or K scaled before Q·Kᵀ (`q * f`, `q / f`; PyTorch's SDPA
/// decomposition and its ONNX export scale both by sqrt(1/sqrt(D))) by a
/// factor that is one number per head (scalesScores): the matmul reads the
/// unscaled tensor and the scores are scaled instead, in the chain, where
/// the template folds a constant factor into its softmax and reads any
/// other as a captured tensor (a scaled copy of Q or K would cost a launch
/// and a round trip through memory). A factor computed from constants
/// becomes a constant of its value as the model rounds it. The product is
/// the model's up to the rounding of the scaled operand, which the kernel's
/// f32 scores no longer see. Returns whether it rewrote the matmul.
bool foldPrescales(mlir::tcc::ChainOp chain,
                   const mlir::tcc::AttentionMatch &m) {
  Block &body = chain.getBody().front();
  auto qk = m.scores.getDefiningOp<mlir::tcc::MatmulOp>();
  if (!qk || qk->getBlock() != &body)
    return false;
  auto st = cast<RankedTensorType>(m.scores.getType());
  struct Factor {
    bool divide;
    Value value;                 ///< a tensor read by the chain, or
    std::optional<double> known; ///< its value when known
  };
  SmallVector<Factor> factors;
  for (OpOperand *use : {&qk.getAMutable(), &qk.getBMutable()}) {
    Operation *op = use->get().getDefiningOp();
    if (!op || op->getBlock() == &body ||
        !isa<mlir::tcc::MulOp, mlir::tcc::DivOp>(op))
      continue;
    bool divide = isa<mlir::tcc::DivOp>(op);
    Value x = op->getOperand(0), f = op->getOperand(1);
    if (!scalesScores(f, st) && !divide)
      std::swap(x, f);
    // The factor must not widen the tensor (a broadcast) or change its type.
    if (!scalesScores(f, st) || x.getType() != use->get().getType() ||
        getElementTypeOrSelf(f.getType()) != st.getElementType())
      continue;
    std::optional<double> c = uniformValue(f);
    if (c && !std::isfinite(*c))
      c.reset();
    factors.push_back({divide, f, c});
    use->set(x);
    if (op->use_empty())
      op->erase();
  }
  if (factors.empty())
    return false;
  OpBuilder b(qk->getContext());
  b.setInsertionPointAfter(qk);
  Value s = m.scores;
  SmallVector<Operation *> scaled;
  for (const Factor &f : factors) {
    // A known factor in the scores' dtype: Q's (and K's), in which the
    // model computed it, so that it is exact.
    Value c = f.known ? mlir::tcc::ConstantOp::create(
                            b, qk.getLoc(),
                            RankedTensorType::get({}, st.getElementType()),
                            b.getFloatAttr(st.getElementType(), *f.known))
                      : f.value;
    Operation *op =
        f.divide
            ? mlir::tcc::DivOp::create(b, qk.getLoc(), st, s, c).getOperation()
            : mlir::tcc::MulOp::create(b, qk.getLoc(), st, s, c).getOperation();
    scaled.push_back(op);
    s = op->getResult(0);
  }
  Value scores = m.scores;
  scores.replaceAllUsesExcept(s, scaled.front());
  return true;
}

/// Masks added to the scores, s + select(c, 0, -inf) (or select(c, -inf,
/// 0)), as exporters write a boolean attention mask (PyTorch's SDPA turns
/// `attn_mask` into such a float tensor), become select(c, s, -inf): the
/// same scores (s + 0 = s, s + -inf = -inf for finite s), in the form the
/// attention match reads as a mask, so that the templates skip the tiles
/// it removes (a mask of positions or a key mask) rather than add a tensor
/// to every score.
void foldAdditiveMasks(mlir::tcc::ChainOp chain) {
  Block &body = chain.getBody().front();
  SmallVector<mlir::tcc::AddOp> adds;
  for (Operation &op : body)
    if (auto add = dyn_cast<mlir::tcc::AddOp>(op))
      adds.push_back(add);
  for (mlir::tcc::AddOp add : adds) {
    for (int side = 0; side < 2; ++side) {
      Value s = add->getOperand(side), m = add->getOperand(1 - side);
      auto select = m.getDefiningOp<mlir::tcc::SelectOp>();
      if (!select || !m.hasOneUse() || select->getBlock() != &body)
        continue;
      std::optional<double> t = uniformValue(select.getA());
      std::optional<double> f = uniformValue(select.getB());
      bool keepIfTrue = t && *t == 0 && f && std::isinf(*f) && *f < 0;
      bool keepIfFalse = f && *f == 0 && t && std::isinf(*t) && *t < 0;
      if (!keepIfTrue && !keepIfFalse)
        continue;
      OpBuilder b(add);
      Value cond = select.getCond();
      if (keepIfFalse)
        cond = mlir::tcc::NotOp::create(b, add.getLoc(), cond.getType(), cond);
      Value ninf = keepIfTrue ? select.getB() : select.getA();
      auto masked = mlir::tcc::SelectOp::create(b, add.getLoc(), add.getType(),
                                                cond, s, ninf);
      add.replaceAllUsesWith(masked.getResult());
      add->erase();
      if (select->use_empty())
        select->erase();
      break;
    }
  }
}

/// Moves into the chain the transposes that give Q, K and V attention's
/// layout from one that keeps the head dim innermost ([B, L, H, D] to
/// [B, H, L, D]), and the one that gives its result back, so that the
/// kernel reads and writes the untransposed tensors with strides: no
/// transpose kernels and no copies between the projections and attention.
void pullLayouts(mlir::tcc::ChainOp chain, const mlir::tcc::AttentionMatch &m) {
  Block &body = chain.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  // Each transpose once: K and V (or Q and K) may be one tensor.
  llvm::SetVector<Operation *> layouts;
  for (Value v : {m.q, m.k, m.v})
    if (auto t = v.getDefiningOp<mlir::tcc::TransposeOp>();
        t && t->getBlock() != &body && mlir::tcc::isLayoutTranspose(t))
      layouts.insert(t);
  for (Operation *t : layouts) {
    Operation *copy = b.clone(*t);
    t->getResult(0).replaceUsesWithIf(copy->getResult(0), [&](OpOperand &use) {
      return chain->isProperAncestor(use.getOwner());
    });
    if (t->use_empty())
      t->erase();
  }
  // The result, when a transpose is its only use.
  Value result = chain->getResult(0);
  if (!result.hasOneUse())
    return;
  auto t = dyn_cast<mlir::tcc::TransposeOp>(*result.getUsers().begin());
  if (!t || !mlir::tcc::isLayoutTranspose(t))
    return;
  Operation *yield = body.getTerminator();
  b.setInsertionPoint(yield);
  IRMapping map;
  map.map(result, yield->getOperand(0));
  Operation *copy = b.clone(*t, map);
  yield->setOperand(0, copy->getResult(0));
  result.setType(t.getType());
  t.replaceAllUsesWith(result);
  t->erase();
}

struct TccGpuAttentionChains
    : mlir::tcc::impl::TccGpuAttentionChainsBase<TccGpuAttentionChains> {
  void runOnOperation() override {
    SmallVector<mlir::tcc::ChainOp> chains;
    getOperation().walk([&](mlir::tcc::ChainOp c) { chains.push_back(c); });
    for (mlir::tcc::ChainOp chain : chains) {
      Block &body = chain.getBody().front();
      if (llvm::none_of(body, [](Operation &op) {
            return isa<mlir::tcc::MatmulOp>(op);
          }))
        continue;
      foldAdditiveMasks(chain);
      pullPositions(chain);
      std::string why;
      std::optional<mlir::tcc::AttentionMatch> m =
          mlir::tcc::matchAttention(chain, why);
      if (m && foldPrescales(chain, *m))
        m = mlir::tcc::matchAttention(chain, why);
      if (m && foldKTranspose(*m))
        m = mlir::tcc::matchAttention(chain, why);
      // K given transposed, [.., D, Lk], with a key count whose rows are
      // not 16-byte aligned: the tensor-core templates refuse it (their
      // copies are 16-byte chunks of keys) and the SIMT template reads it
      // element by element (chooseAttentionPlan).
      // The head sizes the mma.sync template takes (multiples of 8 up to
      // 256, computed padded to 16; wgmma takes 64 and 128 of them), and the
      // SIMT template's (any up to 256, every dtype, computed padded to 4):
      // any other would leave a chain with matmuls to the generic loops.
      bool mmaHead = m && !m->elemType.isF32() && m->headDim >= 8 &&
                     m->headDim <= 256 && m->headDim % 8 == 0;
      bool simtHead = m && m->headDim >= 1 && m->headDim <= 256;
      if (mmaHead || simtHead) {
        takeRepeats(chain, m->kvOps);
        pullLayouts(chain, *m);
        chain->setAttr(mlir::tcc::kAttentionAttrName,
                       UnitAttr::get(chain.getContext()));
        continue;
      }
      auto yield = cast<mlir::tcc::YieldOp>(body.getTerminator());
      if (m)
        why = "head size " + std::to_string(m->headDim) +
              " has no attention template";
      // Why, for `tcc compile --explain`: at the node of the chain's result.
      Operation *result = yield.getOperand(0).getDefiningOp();
      mlir::emitRemark(result ? result->getLoc() : chain.getLoc())
          << "attention not fused: " << why;
      chain.replaceAllUsesWith(yield.getOperands());
      for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
        op.moveBefore(chain);
      chain.erase();
    }
  }
};

} // namespace
