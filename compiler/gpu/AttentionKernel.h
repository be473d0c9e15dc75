//===- AttentionKernel.h - the fused attention kernel template -*- C++ -*-===//
//
// Builds one `gpu.func` computing O = softmax(mod(Q x K^T)) x V in the manner
// of FlashAttention-2, for sm_80 and sm_90, with MLIR's gpu/nvgpu/nvvm/vector/
// scf/arith/memref builders:
//   - a block per (query tile of blockQ rows, query head, batch); the Q tile
//     is copied to shared memory once;
//   - a loop over key tiles of blockKV keys, K and V travelling through a
//     multi-stage cp.async pipeline into XOR-swizzled shared memory;
//   - S = Q K^T and O += P V with mma.sync m16n8k16 (bf16 or f16 operands,
//     f32 accumulation), the online softmax in registers, P turned into the
//     A fragment of the P V mma without a shared-memory round trip; f32
//     operands as 3xTF32 (each split into two tf32 values, three m16n8k8
//     MMAs a product; a plan's choice, f32's default being SimtAttention);
//   - the chain-specific parts (score modification, mask, the softmax
//     algebra) come in as hooks.
// Every size is static (baked into the kernel), and so are the strides of Q,
// K, V and O: a tensor laid out [B, L, H, D] is read where it lies.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_ATTENTIONKERNEL_H
#define TCC_COMPILER_GPU_ATTENTIONKERNEL_H

#include "compiler/gpu/MatmulKernel.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <string>

namespace tcc::gpu {

/// One linear constraint of an attention mask: the pair (query q, key k) is
/// kept iff a*q + b*k + c >= 0. Causal: {1, -1, 0}; a sliding window of w
/// keys: causal plus {-1, 1, w - 1}; keys below P only: {0, -1, P - 1}.
struct MaskConstraint {
  int64_t a = 0, b = 0, c = 0;
};

/// What a query row whose every score is masked produces.
enum class MaskedRowPolicy {
  Zero, ///< zeros (what FlashAttention-2 and SDPA's flash backend give)
  NaN,  ///< NaN (what an unfused softmax over all -inf gives)
};

/// Modifies one f32 score. `batch`, `head` (the query head), `q` and `k` are
/// i32 values (q and k may lie past lq and lk in a tail tile, and decode's
/// padding rows past the last head: their scores are dropped); `captured` are
/// the kernel's arguments for AttentionProblem::captured, or, for a tensor a
/// template stages through shared memory, its element at this score. The hook
/// builds ops at the builder's insertion point (once per score element of a
/// thread, inside the key loop: keep it cheap; ops on `batch`/`head` alone are
/// hoisted by LLVM).
using ScoreModFn = std::function<mlir::Value(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value score,
    mlir::Value batch, mlir::Value head, mlir::Value q, mlir::Value k,
    mlir::ValueRange captured)>;
/// Whether key `k` (i32) is kept for every query row of (batch, head) (i32),
/// as an i1: where false, the changed score is -inf whatever the row (a
/// padding mask applied with -inf). `captured` as for ScoreModFn.
using KeyKeepFn = std::function<mlir::Value(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value batch, mlir::Value head,
    mlir::Value k, mlir::ValueRange captured)>;
/// The online softmax's correction factor for accumulators built against
/// running value `oldRun` when the running value becomes `newRun`
/// (softmax: exp(oldRun - newRun)). `oldRun` may be -inf (nothing seen yet);
/// `newRun` is always finite.
using CorrectionFn =
    std::function<mlir::Value(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value oldRun, mlir::Value newRun)>;
/// The contribution of score `s` against running value `run` (softmax:
/// exp(s - run)). `s` may be -inf (masked); `run` is always finite.
using ContributionFn = std::function<mlir::Value(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value s, mlir::Value run)>;

/// One attention problem: Q [batch, headsQ, lq, headDim], K [batch, headsKV,
/// lk, headDim], V [batch, headsKV, lk, dimV()], O [batch, headsQ, lq,
/// dimV()] (the logical shapes; each may lie in memory with any strides,
/// below).
/// Query head h reads key/value head h / (headsQ / headsKV) (GQA/MQA).
struct AttentionProblem {
  int64_t batch = 1, headsQ = 1, headsKV = 1;
  int64_t lq = 0, lk = 0, headDim = 0;
  /// V's and O's head size where it is not headDim (DeepSeek's MLA scores
  /// over 192 and sums values of 128); 0: headDim. Read it by dimV().
  int64_t valueDim = 0;
  int64_t dimV() const { return valueDim ? valueDim : headDim; }
  /// Q, K, V and O: bf16 or f16 (f32 in this template as 3xTF32, prefill
  /// only; the SIMT template takes every dtype).
  mlir::Type elemType;
  /// K is given transposed: [batch, headsKV, headDim, lk] (lk a multiple of
  /// 8, so that its rows are 16-byte aligned).
  bool kTransposed = false;
  /// Element strides of Q, K, V and O in memory, one per axis of the shapes
  /// above ([batch, heads, rows, headDim]; K given transposed: [batch,
  /// headsKV, headDim, lk]); empty: packed row-major. The last is 1; the
  /// others, times the element size, multiples of 16 bytes (the kernels copy
  /// rows in 16-byte chunks); those of axes of size 1 are ignored. A model
  /// that keeps Q as [B, L, H, D] and transposes it for attention hands the
  /// template the untransposed tensor: strides [L*H*D, D, H*D, 1]. O's must
  /// not overlap.
  llvm::SmallVector<int64_t, 4> qStrides, kStrides, vStrides, oStrides;
  /// Where Q, K and V start in their buffers (elements; with strides only):
  /// a view of a larger tensor, such as a third of a packed QKV
  /// projection. Their bytes are multiples of 16 for the 16-byte copies.
  int64_t qOffset = 0, kOffset = 0, vOffset = 0;
  /// Multiplies Q K^T before scoreMod (usually 1/sqrt(headDim)).
  double scale = 1.0;
  /// Applied to each scaled score; null: none.
  ScoreModFn scoreMod;
  /// The ops scoreMod builds per score, constants left out (a measure of
  /// the registers the score code holds live).
  int64_t scoreModOps = 0;
  /// Tensors scoreMod reads (a bias, a mask, slopes): memref types (static
  /// shapes, identity layout), passed to every kernel that applies scoreMod
  /// after its usual arguments, in this order.
  llvm::SmallVector<mlir::Type, 2> captured;
  /// Per captured tensor, whether scoreMod reads it through a view (the
  /// model reshaped it: its own last axes are not the scores', whatever
  /// their sizes; capturedIsPlane). Empty: none is.
  llvm::SmallVector<bool, 2> capturedView;
  /// The mask: a conjunction of linear constraints (empty: keep all).
  llvm::SmallVector<MaskConstraint, 2> mask;
  /// Keys dropped for every row, read from captured tensors (null: none):
  /// a key tile that keeps none of its keys is skipped at run time.
  /// `keyKeepPerHead`: keyKeep reads the head index.
  KeyKeepFn keyKeep;
  bool keyKeepPerHead = false;
  /// keyKeep is the whole mask (scoreMod leaves it out): scores of keys it
  /// drops become -inf in the tiles it does not skip.
  bool keyKeepApply = false;
  MaskedRowPolicy maskedRows = MaskedRowPolicy::Zero;
  /// The softmax algebra; null: softmax's (exp2 with log2(e) folded into the
  /// scale when scoreMod is null too). The running value is the row max.
  CorrectionFn correction;
  ContributionFn contribution;
};

/// The tiling: a block of `warps` warps owns blockQ query rows (each warp
/// blockQ / warps rows, a multiple of 16) and steps over the keys by
/// blockKV, with `stages` shared-memory buffers of K and V in flight.
struct AttentionSchedule {
  int64_t blockQ = 128, blockKV = 64, warps = 4, stages = 2;
};

/// The tensors of an attention problem.
enum class AttentionOperand { Q, K, V, O };

/// The logical shape of `which` in `p` (K given transposed: [batch, headsKV,
/// headDim, lk]).
llvm::SmallVector<int64_t, 4> attentionOperandShape(const AttentionProblem &p,
                                                    AttentionOperand which);
/// The strides of `which` in `p`: packed row-major when p leaves them
/// empty; an axis of size 1 takes the extent of the axes inside it (so that
/// a packed tensor has the packed strides whatever it was given there).
llvm::SmallVector<int64_t, 4> attentionOperandStrides(const AttentionProblem &p,
                                                      AttentionOperand which);
/// Where `which` starts in its buffer, in elements (O: 0).
int64_t attentionOperandOffset(const AttentionProblem &p,
                               AttentionOperand which);
/// The memref type of `which` as the kernels take it: its logical shape with
/// its strides and offset (the identity layout when packed).
mlir::MemRefType attentionOperandType(const AttentionProblem &p,
                                      AttentionOperand which);
/// Whether p's strides are ones the templates can take: four per tensor
/// (or none), positive, the innermost 1, the others multiples of 16 bytes
/// (unless `alignedRows` is false: the SIMT template's element-by-element
/// copies), O's elements apart. When not, `why` says why.
bool attentionStridesValid(const AttentionProblem &p, std::string &why,
                           bool alignedRows = true);

/// Builds 2^x for an f32 `x` with the GPU's approximate unit (ex2.approx.ftz:
/// about 2 ulp; 2^-inf = 0, 2^+inf = +inf), for hooks that need exp: e^x is
/// 2^(x * log2(e)).
mlir::Value buildExp2Approx(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value x);

/// Picks a schedule for `p` on `target`.
AttentionSchedule chooseAttentionSchedule(const AttentionProblem &p,
                                          const ::tcc::TargetDesc &target);

/// Whether buildAttentionKernel handles `p`; when not, `why` says why.
bool attentionKernelSupports(const AttentionProblem &p, std::string &why);

/// Whether `s` is a valid schedule for `p`; when not, `why` says why.
bool attentionScheduleValid(const AttentionProblem &p,
                            const AttentionSchedule &s,
                            const ::tcc::TargetDesc &target, std::string &why);

/// Appends `gpu.func @name(%q, %k, %v, %o, captured...) kernel` to `module`.
/// Q, K, V and O are memrefs of attentionOperandType (the static shapes and
/// strides in AttentionProblem), each 16-byte aligned. The kernel reads
/// `gpu.dynamic_shared_memory` of KernelLaunch::sharedBytes bytes (above 48
/// KiB: the launcher must raise the function's dynamic shared memory limit).
/// Fails (with a diagnostic at the module) when the problem or the schedule is
/// not supported.
mlir::FailureOr<KernelLaunch>
buildAttentionKernel(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                     llvm::StringRef name, const AttentionProblem &p,
                     const AttentionSchedule &s);

/// The split-K decode form of attention: few query rows against a long key
/// axis. The partial kernel runs a block per (key chunk, key/value head,
/// batch) holding every query row that reads that head (headsQ / headsKV
/// heads x lq rows, at most 16: one m16 MMA tile), so K and V are read once
/// per group; its warps split each key tile between them, and the block
/// writes its chunk's unnormalised O (f32), running value m and sum l per
/// row to scratch. The combine kernel merges the chunks of a row with the
/// problem's correction and divides.
struct DecodeSchedule {
  int64_t blockKV = 64, warps = 4, stages = 3;
  /// Key tiles a block (chunk) reads.
  int64_t chunkTiles = 4;
};

/// The kernels of the decode form and their scratch buffers. With one chunk
/// the partial kernel writes O itself: no combine, no scratch (combine's
/// grid and the byte counts stay 0).
struct DecodeKernels {
  KernelLaunch partial, combine;
  int64_t chunks = 0;
  bool single() const { return chunks == 1; }
  /// Scratch: partial O [batch * headsKV, chunks, rows, headDim] f32 and
  /// (m, l) [batch * headsKV, chunks, rows, 2] f32.
  uint64_t partialOBytes = 0, partialStatsBytes = 0;
};

/// The query rows a decode block packs: headsQ / headsKV x lq.
/// Whether captured tensor `i` holds a full [lq, lk] plane of scores (a
/// bias): its last two axes are lq and lk, and it is read as such.
bool capturedIsPlane(const AttentionProblem &p, size_t i);

int64_t decodeRows(const AttentionProblem &p);

/// Whether `p` should take the decode form: at most 16 packed rows (a
/// prefill block of 64 or more query rows would leave most rows idle and
/// read K and V once per query head) and at least 512 keys (8 key tiles,
/// so that splitting the keys pays for the second launch).
bool preferDecode(const AttentionProblem &p);

/// Picks a decode schedule for `p` on `target`: chunks enough for a wave of
/// the blocks the multiprocessors hold at once, each at least 4 key tiles;
/// one chunk (no combine) where the (batch, head) pairs nearly fill a wave.
DecodeSchedule chooseDecodeSchedule(const AttentionProblem &p,
                                    const ::tcc::TargetDesc &target);

/// Whether `s` is a valid decode schedule for `p`; when not, `why` says why.
bool decodeScheduleValid(const AttentionProblem &p, const DecodeSchedule &s,
                         const ::tcc::TargetDesc &target, std::string &why);

/// Appends `gpu.func @partialName(%q, %k, %v, %partO, %partStats,
/// captured...) kernel` and `gpu.func @combineName(%partO, %partStats, %o)
/// kernel` to `module`; with one chunk, only `gpu.func @partialName(%q, %k,
/// %v, %o, captured...) kernel`.
/// Q and O are passed as for buildAttentionKernel. Where their strides
/// allow, the partial kernel views Q as [batch, headsKV, rows, headDim] and
/// the combine O as [batch * headsKV, rows, headDim] (the same memory);
/// otherwise they index the 4-D tensors (row r of a key/value head's group:
/// query head kvHead * headsQ / headsKV + r / lq, query row r % lq). Fails
/// (with a diagnostic at the module) when the problem or the schedule is not
/// supported.
mlir::FailureOr<DecodeKernels>
buildDecodeKernels(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                   llvm::StringRef partialName, llvm::StringRef combineName,
                   const AttentionProblem &p, const DecodeSchedule &s);

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_ATTENTIONKERNEL_H
