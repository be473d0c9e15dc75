//===- AttentionMatch.h - plain attention recognised in a chain -*- C++ -*-===//
//
// A reduction chain that is attention written the plain way: scores
// S = Q·Kᵀ, elementwise changes of S that depend only on S, constants,
// positions (scale, masks built from iota comparisons, ALiBi-like biases of
// positions, softcap) and captured tensors (values from outside the chain
// that broadcast to the scores' shape: a bias, a boolean mask, per-head
// slopes), softmax along the keys, and P·V, with softmax as users write it:
// exp(s - max s) (or exp(s)) normalised by its sum before P·V or after it
// (a quotient or a product by the reciprocal, float casts between).
// Recognising it lets a GPU target compute the whole chain with the fused
// attention template, which needs the changes as scalar code (reading a
// captured tensor at the score's batch, head, query and key) and the mask
// as linear constraints where it is one of positions (so that whole tiles
// are skipped or left unmasked).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_ATTENTIONMATCH_H
#define TCC_PASSES_ATTENTIONMATCH_H

#include "ir/TccOps.h"

#include "mlir/IR/Builders.h"

#include <optional>
#include <string>

namespace mlir::tcc {

/// Marks a chain that the GPU attention template computes
/// (tcc-gpu-attention-chains): tcc-form-groups gives it a kernel alone.
constexpr llvm::StringLiteral kAttentionAttrName = "tcc.attention";

/// Marks a chain tcc-form-chains formed without its attention's Q·Kᵀ or
/// P·V (a head size over the templates' largest) after a remark saying so:
/// tcc-gpu-attention-chains dissolves it without a second remark.
constexpr llvm::StringLiteral kAttentionExplainedAttrName =
    "tcc.attention_explained";

/// The template and schedule tcc-gpu-attention-plan chose for a marked
/// chain (compiler/gpu/AttentionPlan.h), kept on the tcc.attention op.
constexpr llvm::StringLiteral kAttentionPlanAttrName = "tcc.attention_plan";

/// Positions (q, k) kept by a mask: a * q + b * k + c >= 0.
struct LinearConstraint {
  int64_t a = 0, b = 0, c = 0;
};

struct AttentionMatch {
  ChainOp chain;
  /// Q [.., Lq, D], K [.., Lk, D], V [.., Lk, Dv]: values from outside the
  /// chain, with the same leading (batch, head) dimensions.
  Value q, k, v;
  /// K is given transposed, [.., D, Lk]: the scores are matmul(Q, K)
  /// without transpose_b.
  bool kTransposed = false;
  /// Leading dimensions as (batch, heads): [B, H, ..] or [H, ..] or none.
  /// K and V may have fewer heads (`kvHeads`, dividing `heads`) when the
  /// model repeats them (GQA, MQA): `kvOps` are the reshapes and broadcasts
  /// that do, from `k` and `v` to the matmuls' operands.
  int64_t batch = 1, heads = 1, kvHeads = 1, lq = 0, lk = 0, headDim = 0;
  /// V's head size, and the result's: headDim but where the model sums
  /// values of another size than the scores' (DeepSeek's MLA: 192 and 128).
  int64_t valueDim = 0;
  SmallVector<Operation *> kvOps;
  /// GQA written with the query heads as two axes: Q [B, Hkv, G, Lq, D]
  /// and the scores [B, Hkv, G, Lq, Lk], K and V [B, Hkv, 1, Lk, D] (or
  /// [B, 1, 1, Lk, D], MQA) broadcast by the matmuls. Then `groups` is G,
  /// `heads` Hkv·G, and head h is (h / G, h % G) on those axes: the op
  /// reads Q, K, V and writes its result through strides of rank 4. 0
  /// otherwise (scores of rank 2 to 4).
  int64_t groups = 0;
  /// How `q`, `k`, `v` and the chain's result lie in memory: a model that
  /// keeps them [B, L, H, D] transposes them to attention's [B, H, L, D]
  /// (and the result back) in the chain (`layoutOps`: tcc-gpu-attention-
  /// chains moves such transposes in), and `q`, `k`, `v` and the result are
  /// the untransposed tensors, read and written with these element strides
  /// of attention's axes (Q [.., Lq, D], K as the scores read it, V
  /// [.., Lk, D], the result [.., Lq, D]). Empty: packed.
  SmallVector<int64_t> qStrides, kStrides, vStrides, oStrides;
  /// Per attention axis of Q, K and V, the axis of `q`, `k`, `v` it is
  /// (the layout transpose's permutation); empty: the same axis.
  SmallVector<int64_t> qAxes, kAxes, vAxes;
  SmallVector<Operation *> layoutOps;
  Type elemType; ///< bf16, f16 or f32, of Q, K, V and the result
  /// The changes of the scores, in order (the mask's select left out when
  /// `mask` holds it), from S (`scores`) to softmax's input.
  SmallVector<Operation *> mods;
  /// The tensors from outside the chain that `mods` read, in order of first
  /// use: each broadcasts to the scores' shape (NumPy rules, aligned at the
  /// last axis), so that a [B, 1, 1, Lk] mask is read once per key column
  /// and [1, H, 1, 1] slopes once per head.
  SmallVector<Value> captured;
  /// Values the changes read that are reshapes, adding or dropping axes of
  /// size 1, of a tensor from outside (a padding mask [B, L] made
  /// [B, 1, 1, L], document ids [L] made [L, 1] and [1, L]): the tensor is
  /// captured (in `captured`) and read at the reshape's indices, so that the
  /// reshape costs no copy of its own. Keyed by the reshape's result.
  llvm::DenseMap<Value, Value> capturedViews;
  Value scores, softmaxInput;
  /// The exponent is this factor times softmax's input less its max
  /// (exp(c · (s - max s)), a temperature written after the shift): the
  /// softmax of the changed scores times it. 1 otherwise.
  double expFactor = 1.0;
  /// The mask as constraints (empty: no mask, or one applied in `mods`),
  /// and the selects that applied it in the model, innermost first.
  SmallVector<LinearConstraint> mask;
  SmallVector<Operation *> maskSelects;
  /// A positive factor when the changes are only S * scale (or S / 1/scale).
  std::optional<double> scale;
  /// A boolean value of captured tensors, of size 1 on the query axis, where
  /// false makes the changed score -inf for every query (a padding mask
  /// applied with -inf); null: none. `keyMaskPerHead`: it varies by head.
  Value keyMask;
  bool keyMaskPerHead = false;
  /// The changes are `scale` and the key mask's select only: a template
  /// may apply the mask per key on the scaled scores, with no score code.
  bool keyMaskAlone = false;
  /// Whether a score can become -inf (a row of them gives NaN).
  bool maskedToInfinity = false;

  /// The changed score of (batch, head, q, k) (i32) from S (f32), in f32.
  /// `capturedArgs` are memrefs of `captured` (their shapes, identity
  /// layout) in the same order; the indices may run past the ends (tail
  /// tiles, decode's padding rows, whose scores the caller drops), so the
  /// reads are clamped. An argument that is a tensor is read so too, by
  /// tensor.extract (tcc.attention's regions); one that is neither is the
  /// tensor's element at this score itself (a template staged its tile).
  Value buildScoreMod(OpBuilder &b, Location loc, Value score, Value batchIdx,
                      Value head, Value qIdx, Value kIdx,
                      ValueRange capturedArgs = {}) const;
  /// `keyMask` (i1) at (batch, head, k), as buildScoreMod reads captured
  /// tensors.
  Value buildKeyKeep(OpBuilder &b, Location loc, Value batchIdx, Value head,
                     Value kIdx, ValueRange capturedArgs) const;

  /// The chain as tcc.attention at `b`'s insertion point (the chain is left
  /// as it is). Q, K and V that are views the model cut from a larger
  /// tensor outside the chain (slices, reshapes, transposes: a packed QKV
  /// projection split in three) are read through them: the op takes the
  /// larger tensor with strides and an offset (readThroughViews), where the
  /// view keeps the head dim innermost and its rows 16-byte aligned. Its
  /// regions hold what buildScoreMod and buildKeyKeep build
  /// for tensor arguments (a captured tensor read by tensor.extract), the
  /// score region only where the templates take score code (no scale, or a
  /// scale beside a key mask applied alone).
  AttentionOp buildOp(OpBuilder &b) const;

private:
  /// `target`, a value of the chain computed from the score `score` (null
  /// when `target` does not depend on it), positions and captured tensors.
  Value buildValue(OpBuilder &b, Location loc, Value target, Value score,
                   Value batchIdx, Value head, Value qIdx, Value kIdx,
                   ValueRange capturedArgs) const;
};

/// `v`'s value when every element of it is one number computed from
/// constants alone (a scale such as sqrt(1 / sqrt(D)), as exporters write
/// it), each op's result rounded to its element type as the model computes
/// it; nullopt otherwise. `depth` bounds the walk.
std::optional<double> uniformValue(Value v, int depth = 0);

/// Q or K scaled before Q·Kᵀ (`q * f`, `q / f`) by a factor that is one
/// number per score matrix (a scalar or one per head, size 1 on its last
/// two axes): the matmul reads the unscaled tensor and the scores are
/// scaled in the chain instead (a constant if `uniformValue` knows it, else
/// a captured tensor). tcc-gpu-attention-plan applies it where a template
/// computes the folded chain (generic loops would compute the unscaled
/// scores in the model's dtype, which may overflow f16). Returns whether it
/// rewrote the matmul; the scaling ops it no longer reads go to `detached`.
/// Q or K viewed after the scaling (reshapes, transposes) by a factor that
/// is one number: the views are made again on the unscaled tensor, into
/// `created` (outermost first).
bool foldPrescales(ChainOp chain, const AttentionMatch &m,
                   SmallVectorImpl<Operation *> *detached = nullptr,
                   SmallVectorImpl<Operation *> *created = nullptr);

/// Scores Q·Kt where Kt is a transpose of a tensor from outside the chain
/// whose last axis is the head dim (K [.., Lk, D] with the last two axes
/// swapped, or a projection's [B, Lk, H, D] by perm [0, 2, 3, 1]), not
/// repeated over heads: they become matmul(Q, K, transpose_b), K the same
/// tensor less the swap (itself, or a transpose keeping the head dim last,
/// which the template reads with strides), so that the template reads K
/// as it is, with no transposed copy. Returns whether it rewrote them; a
/// transpose it made goes to `created`.
bool foldKTranspose(const AttentionMatch &m,
                    SmallVectorImpl<Operation *> *created = nullptr);

/// Moves into the chain the transposes that give Q, K and V attention's
/// layout from one that keeps the head dim innermost ([B, L, H, D] to
/// [B, H, L, D]), and the one that gives its result back, so that the
/// kernel reads and writes the untransposed tensors with strides: no
/// transpose kernels and no copies between the projections and attention.
/// The result's transpose moves in only where it is the result's one use.
void pullLayouts(ChainOp chain, const AttentionMatch &m);

/// An operand of attention as a view of a larger tensor: `base`, read
/// with element `strides` (one per attention axis) from `offset`.
struct AttentionOperandView {
  Value base;
  SmallVector<int64_t> strides;
  int64_t offset = 0;
};

/// `v` (attention's axes being `v`'s `axes`, or its own when empty; its
/// strides `strides`, empty when packed) read through the views (reshapes,
/// slices with positive steps, transposes) that made it from a tensor
/// outside `chain`, as far as the composed view keeps the innermost axis
/// contiguous and the others and the offset multiples of 16 bytes (the
/// templates copy rows in 16-byte chunks); `v` itself when none does.
AttentionOperandView readThroughViews(Value v, ArrayRef<int64_t> axes,
                                      ArrayRef<int64_t> strides, ChainOp chain);

/// `chain` as attention, or nullopt with the reason in `why`.
std::optional<AttentionMatch> matchAttention(ChainOp chain, std::string &why);

/// Whether `t` moves axes but keeps the last one last: a layout of Q, K, V
/// or attention's result that the templates read and write with strides.
bool isLayoutTranspose(TransposeOp t);

/// Row-major element strides of `shape`.
SmallVector<int64_t> packedStrides(ArrayRef<int64_t> shape);

/// The strides of `t`'s input axes in its packed result: the input written
/// through them is the result.
SmallVector<int64_t> stridesThroughTranspose(TransposeOp t);

/// Where remarks about attention chain `chain` go: the node of its result
/// (P·V or the division after it; under a layout transpose moved into the
/// chain, the node it transposes).
Location attentionResultLoc(ChainOp chain);

/// Whether `v` is computed in `block` from iotas and constants alone, by
/// scalar ops (a mask of positions).
bool isPositional(Value v, Block *block);

} // namespace mlir::tcc

#endif // TCC_PASSES_ATTENTIONMATCH_H
