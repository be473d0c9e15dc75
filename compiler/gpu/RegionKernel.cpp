//===- RegionKernel.cpp - a chain of convolutions as one kernel -----------===//
//
// The block of output tile (ty, tx) of image z:
//
//   copy the chain input's tile (with every member's halo) into buffer A:
//     cp.async of 16-byte chunks, zero-filled outside the image
//   for each member i (reads tile i, writes tile i + 1):
//     barrier
//     conv: for each round (a roundM x roundN block of the member's GEMM):
//             k-slabs of the weight through a cp.async pipeline; each warp
//             ldmatrix-gathers its A rows from tile i (a row address per
//             lane: the output pixel's window origin plus the tap's offset)
//             and mma.syncs into f32 registers; then the epilogue
//     depthwise / pool: a thread per (pixel, 8 channels), taps unrolled
//     epilogue: bias, residual, activation; zero where the position is
//       outside member i's output image; store to tile i + 1 in shared
//       memory (the last member: to the output, inside the image only)
//
// Shared tiles are pixel-major (channels-last) with a row of the channels
// padded to the mma k (16) plus one 16-byte chunk: an odd number of chunks a
// row, so the 8 pixel rows an ldmatrix phase reads hit 8 bank groups. The
// padding channels hold zeros (the weight slab's too), so a k-step past the
// channels adds nothing.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/RegionKernel.h"
#include "compiler/gpu/TemplateUtils.h"
#include "passes/RegionAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;

namespace tcc::gpu {

using Kind = RegionMember::Kind;
using Activation = RegionMember::Activation;

std::array<int64_t, 3> RegionProblem::inShape(size_t i) const {
  return i == 0 ? std::array<int64_t, 3>{h, w, c} : outShape(i - 1);
}

std::array<int64_t, 3> RegionProblem::outShape(size_t i) const {
  std::array<int64_t, 3> in = inShape(i);
  const RegionMember &m = members[i];
  int64_t oh = (in[0] + m.padTop + m.padBottom - m.dilationH * (m.kh - 1) - 1) /
                   m.strideH +
               1;
  int64_t ow = (in[1] + m.padLeft + m.padRight - m.dilationW * (m.kw - 1) - 1) /
                   m.strideW +
               1;
  return {oh, ow, m.kind == Kind::Conv ? m.outChannels : in[2]};
}

namespace {

int64_t pad16(int64_t c) { return ceilDiv(c, 16) * 16; }

/// The row stride (elements) of a shared tile of `c` channels: the channels
/// padded to the mma k, plus one chunk so that the row has an odd number of
/// 16-byte chunks.
int64_t rowStride(int64_t c) { return pad16(c) + 8; }

/// How a convolution member's GEMM (M = output tile pixels, N = output
/// channels, K = taps x channels padded to 16) spreads over the warps: in
/// rounds of roundM x roundN, a warp owning jm x jn mma tiles (16 x 8) of
/// one; the weight slab of a round (roundN x kStage) streams through
/// `stages` shared buffers.
struct GemmPlan {
  int64_t warpsM = 1, warpsN = 1, jm = 1, jn = 2, kStage = 16, stages = 2;
  int64_t roundM() const { return warpsM * jm * 16; }
  int64_t roundN() const { return warpsN * jn * 8; }
  int64_t slabBytes(int64_t eb) const {
    return stages * roundN() * kStage * eb;
  }
};

GemmPlan chooseGemmPlan(int64_t m, int64_t n, int64_t kPadded, int64_t warps,
                        int64_t stages) {
  int64_t mTiles = ceilDiv(m, 16), nTiles = ceilDiv(n, 8);
  GemmPlan best;
  double bestCost = std::numeric_limits<double>::max();
  for (int64_t wn = 1; wn <= warps; wn *= 2)
    for (int64_t jm : {1, 2, 4})
      for (int64_t jn : {2, 4, 8}) {
        // At most 64 f32 accumulators a thread, and a 256-row weight slab.
        if (jm * jn > 16 || wn * jn * 8 > 256)
          continue;
        int64_t wm = warps / wn;
        int64_t rounds = ceilDiv(mTiles, wm * jm) * ceilDiv(nTiles, wn * jn);
        // A warp's serial work a k-step: its mmas, its fragment loads and a
        // barrier's worth, every round.
        double cost = double(rounds) * (jm * jn + jm + jn / 2.0 + 4.0);
        if (cost < bestCost) {
          bestCost = cost;
          best.warpsM = wm;
          best.warpsN = wn;
          best.jm = jm;
          best.jn = jn;
        }
      }
  best.kStage = kPadded % 32 == 0 ? 32 : 16;
  // Stages past the k-slabs would hold nothing.
  int64_t kTiles = kPadded / best.kStage;
  best.stages =
      stages > 0 ? std::clamp<int64_t>(stages, 2, std::max<int64_t>(2, kTiles))
                 : (kTiles >= 2 ? 3 : 2);
  return best;
}

/// Everything the builder and the checks derive from the problem: the
/// tiles, where each lives in shared memory and the convolutions' plans.
struct Plan {
  std::vector<RegionTile> tiles;
  /// Image shape [h, w, c] of tile t.
  std::vector<std::array<int64_t, 3>> shapes;
  /// Byte offset in shared memory of tile t (t < members: the last
  /// member's output goes to global memory).
  std::vector<int64_t> tileOffset;
  std::vector<GemmPlan> gemm; ///< per member (convolutions only)
  /// Whether the chain input's tile keeps its buffer for the members that
  /// add it as their residual (their tiles lie inside it), instead of their
  /// epilogues reading global memory.
  bool inputKept = false;
  /// Parameters in shared memory, per member: byte offsets of the weights
  /// (a depthwise convolution's always, as [C][taps]; a convolution's when
  /// resident) and of the bias (always), -1 for none; a resident
  /// convolution's weight rows (output channels, padded to its rounds) and
  /// row stride in elements (taps x channels padded to 16, plus one 16-byte
  /// chunk: an odd chunk count, so ldmatrix's 8 rows hit distinct bank
  /// groups).
  std::vector<int64_t> weightOffset, biasOffset, weightRows, weightStride;
  /// A streamed convolution's weight pipeline (GemmPlan::slabBytes), -1
  /// for other members: one shared by all of them, or one each with
  /// RegionSchedule::prefetch.
  std::vector<int64_t> stagingOffset;
  /// The depthwise members' weights transposed to [taps][C] (one buffer,
  /// each member's in turn; -1: none).
  int64_t dwOffset = -1;
  int64_t total = 0;
};

int64_t bytesOf(Type t) { return t.getIntOrFloatBitWidth() / 8; }

/// Whether `dst` lies inside `src` at a fixed offset (the same scale), so
/// that a member reads its residual from `src`'s shared tile.
bool tileCovers(const RegionTile &src, const RegionTile &dst) {
  for (int a = 0; a < 2; ++a) {
    int64_t d = dst.offset[a] - src.offset[a];
    if (src.scale[a] != dst.scale[a] || d < 0 || d + dst.size[a] > src.size[a])
      return false;
  }
  return true;
}

Plan planOf(const RegionProblem &p, const RegionSchedule &s) {
  Plan plan;
  plan.tiles = regionTiles(p, s);
  size_t nm = p.members.size();
  for (size_t t = 0; t <= nm; ++t)
    plan.shapes.push_back(p.inShape(t));
  int64_t eb = bytesOf(p.type);
  auto tileBytes = [&](size_t t) {
    return plan.tiles[t].size[0] * plan.tiles[t].size[1] *
           rowStride(plan.shapes[t][2]) * eb;
  };
  auto align16 = [](int64_t bytes) { return ceilDiv(bytes, 16) * 16; };
  // Tiles a later member adds as its residual keep a buffer of their own;
  // the others alternate between two.
  std::vector<bool> kept(nm + 1, false);
  bool readsInput = false;
  plan.inputKept = true;
  for (size_t i = 0; i < nm; ++i) {
    int64_t r = p.members[i].residualFrom;
    if (r >= 1)
      kept[r] = true;
    if (r == 0) {
      readsInput = true;
      plan.inputKept &= tileCovers(plan.tiles[0], plan.tiles[i + 1]);
    }
  }
  plan.inputKept &= readsInput;
  kept[0] = plan.inputKept;
  std::vector<int64_t> bufferOf(nm, 0), bufferBytes;
  int64_t scratch[2] = {-1, -1};
  int next = 0;
  for (size_t t = 0; t < nm; ++t) {
    if (kept[t]) {
      bufferOf[t] = bufferBytes.size();
      bufferBytes.push_back(tileBytes(t));
      continue;
    }
    if (scratch[next] < 0) {
      scratch[next] = bufferBytes.size();
      bufferBytes.push_back(0);
    }
    bufferOf[t] = scratch[next];
    bufferBytes[bufferOf[t]] = std::max(bufferBytes[bufferOf[t]], tileBytes(t));
    next ^= 1;
  }
  std::vector<int64_t> bufferOffset;
  int64_t off = 0;
  for (int64_t bytes : bufferBytes) {
    bufferOffset.push_back(off);
    off += bytes;
  }
  for (size_t t = 0; t < nm; ++t)
    plan.tileOffset.push_back(bufferOffset[bufferOf[t]]);
  plan.gemm.resize(nm);
  for (size_t i = 0; i < nm; ++i) {
    const RegionMember &m = p.members[i];
    if (m.kind == Kind::Conv) {
      const RegionTile &out = plan.tiles[i + 1];
      plan.gemm[i] = chooseGemmPlan(out.size[0] * out.size[1], m.outChannels,
                                    m.kh * m.kw * pad16(plan.shapes[i][2]),
                                    s.warps, s.stages);
    }
  }
  plan.weightOffset.assign(nm, -1);
  plan.biasOffset.assign(nm, -1);
  plan.weightRows.assign(nm, 0);
  plan.weightStride.assign(nm, 0);
  plan.stagingOffset.assign(nm, -1);
  for (size_t i = 0; i < nm; ++i) {
    const RegionMember &m = p.members[i];
    int64_t c = plan.shapes[i][2];
    if (m.kind == Kind::Conv && s.resident) {
      const GemmPlan &g = plan.gemm[i];
      int64_t rows = ceilDiv(m.outChannels, g.roundN()) * g.roundN();
      int64_t stride = m.kh * m.kw * pad16(c) + 8;
      plan.weightOffset[i] = off;
      plan.weightRows[i] = rows;
      plan.weightStride[i] = stride;
      off += rows * stride * eb;
    } else if (m.kind == Kind::Depthwise) {
      plan.weightOffset[i] = off;
      off += align16(m.kh * m.kw * c * eb);
    }
    if (m.bias) {
      plan.biasOffset[i] = off;
      off += align16(plan.shapes[i + 1][2] * eb);
    }
  }
  int64_t dwBytes = 0;
  for (size_t i = 0; i < nm; ++i)
    if (p.members[i].kind == Kind::Depthwise)
      dwBytes = std::max(dwBytes, align16(p.members[i].kh * p.members[i].kw *
                                          plan.shapes[i][2] * eb));
  if (dwBytes) {
    plan.dwOffset = off;
    off += dwBytes;
  }
  if (!s.resident) {
    int64_t shared = off, sharedBytes = 0;
    for (size_t i = 0; i < nm; ++i) {
      if (p.members[i].kind != Kind::Conv)
        continue;
      int64_t bytes = plan.gemm[i].slabBytes(eb);
      if (s.prefetch) {
        plan.stagingOffset[i] = off;
        off += bytes;
      } else {
        plan.stagingOffset[i] = shared;
        sharedBytes = std::max(sharedBytes, bytes);
      }
    }
    if (!s.prefetch)
      off += sharedBytes;
  }
  plan.total = off;
  return plan;
}

bool isHalf(Type t) { return t && (t.isF16() || t.isBF16()); }

/// regionKernelSupports without the target's shared memory limit.
bool regionShapeValid(const RegionProblem &p, const RegionSchedule &s,
                      std::string &why) {
  auto fail = [&](const std::string &msg) {
    why = "region kernel: " + msg;
    return false;
  };
  if (!isHalf(p.type))
    return fail("tensors must be f16 or bf16");
  if (p.members.empty())
    return fail("no members");
  for (int64_t v : {p.n, p.h, p.w, p.c})
    if (v < 1 || v > (int64_t(1) << 24))
      return fail("input sizes must be in [1, 2^24]");
  if (p.n > 65535)
    return fail("batch above 65535 (the grid's z limit)");
  if (p.c % 8)
    return fail("channels must be multiples of 8 (16-byte rows), input has " +
                std::to_string(p.c));
  for (int64_t v : {s.tileH, s.tileW})
    if (v < 1 || v > 256)
      return fail("tile sizes must be in [1, 256]");
  if (s.warps < 1 || s.warps > 16 || !llvm::isPowerOf2_64(s.warps))
    return fail("warps must be a power of two in [1, 16]");
  if (s.stages < 0 || s.stages > 16)
    return fail("stages must be in [0, 16] (0: the plan's)");
  for (size_t i = 0; i < p.members.size(); ++i) {
    const RegionMember &m = p.members[i];
    std::string at = "member " + std::to_string(i) + ": ";
    for (int64_t v :
         {m.kh, m.kw, m.strideH, m.strideW, m.dilationH, m.dilationW})
      if (v < 1 || v > 64)
        return fail(at + "kernel sizes, strides and dilations must be in "
                         "[1, 64]");
    for (int64_t v : {m.padTop, m.padLeft, m.padBottom, m.padRight})
      if (v < 0 || v > 64)
        return fail(at + "pads must be in [0, 64]");
    if (m.kind != Kind::Conv && m.kh * m.kw > 64)
      return fail(at + "more than 64 taps (unrolled on CUDA cores)");
    if (m.kind == Kind::Conv && (m.outChannels < 8 || m.outChannels % 8 ||
                                 m.outChannels > (int64_t(1) << 16)))
      return fail(at + "output channels must be a multiple of 8 in "
                       "[8, 2^16]");
    if (m.kind == Kind::AvgPool && (m.dilationH != 1 || m.dilationW != 1))
      return fail(at + "average pools have no dilation");
    // Every window of a max pool (an average pool without the padding in
    // its divisor) must hold an image position.
    if ((m.kind == Kind::MaxPool ||
         (m.kind == Kind::AvgPool && !m.countIncludePad)) &&
        (std::max(m.padTop, m.padBottom) > (m.kh - 1) * m.dilationH ||
         std::max(m.padLeft, m.padRight) > (m.kw - 1) * m.dilationW))
      return fail(at + "a pool's pads must be smaller than its window");
    std::array<int64_t, 3> out = p.outShape(i);
    if (out[0] < 1 || out[1] < 1)
      return fail(at + "empty output");
    if (m.residualFrom < -1 || m.residualFrom > int64_t(i))
      return fail(at + "the residual must be the chain input or an earlier "
                       "member's output");
    if (m.residualFrom >= 0 && p.inShape(m.residualFrom) != out)
      return fail(at + "the residual's shape differs from the output's");
  }
  std::vector<RegionTile> tiles = regionTiles(p, s);
  for (size_t i = 0; i < p.members.size(); ++i) {
    int64_t r = p.members[i].residualFrom;
    if (r < 1)
      continue;
    // A member's residual is read from its shared tile: the consumer's
    // tile must lie inside it at a fixed offset.
    if (!tileCovers(tiles[r], tiles[i + 1]))
      return fail("member " + std::to_string(i) +
                  ": the residual's tile does not cover the output's (a "
                  "stride between them)");
  }
  std::array<int64_t, 3> last = p.outShape(p.members.size() - 1);
  if (ceilDiv(last[0], s.tileH) * ceilDiv(last[1], s.tileW) >
      (int64_t(1) << 31) - 1)
    return fail("too many tiles for one grid");
  for (const RegionTile &t : tiles)
    if (t.size[0] * t.size[1] > (int64_t(1) << 20))
      return fail("a member's tile exceeds 2^20 pixels");
  return true;
}

class RegionBuilder : TemplateBuilder {
public:
  RegionBuilder(OpBuilder &b, Location loc, const RegionProblem &p,
                const RegionSchedule &s, const Plan &plan)
      : TemplateBuilder(b, loc), p(p), s(s), plan(plan), threads(32 * s.warps),
        eb(bytesOf(p.type)) {}

  void build(Block &entry);

private:
  void loadInput();
  /// A 16-byte cp.async of src[srcIdx...] to dstView[dst...]; zeros
  /// (reading src[0]) where `ok` is false, when given.
  void asyncCopy(Value dstView, Value dst, Value src, Value srcIdx, Value ok);
  /// Copies every member's bias and depthwise weights (and, resident, the
  /// convolutions' weights) to shared memory: cp.async, one group.
  void loadParams();
  /// Member i's weight pipeline (a streamed convolution).
  Value stagingView(size_t i);
  /// k-slab kt of member i's weight rows [n0, n0 + roundN) into stage
  /// `stage` of its pipeline (cp.async, zeros past the channels).
  void copySlab(size_t i, Value n0, Value kt, Value stage);
  /// RegionSchedule::prefetch: the first round's first stages - 1 slabs of
  /// every convolution member, a commit group each.
  void prefetchSlabs();
  int64_t kTilesOf(size_t i) const {
    const RegionMember &m = p.members[i];
    return m.kh * m.kw * pad16(plan.shapes[i][2]) / plan.gemm[i].kStage;
  }
  void convMember(size_t i);
  void simtMember(size_t i);
  /// Stores zeros in the padding channels [C, pad16(C)) of tile t.
  void zeroPadChannels(size_t t);
  /// Bias, residual and activation of member i on `vals` (f32, `len`
  /// channels from `n` at pixel (py, px) of its output tile, inside the
  /// output image when `inside`), zeroed outside the image, then stored to
  /// the member's output tile or, for the last member, the output (inside
  /// the image only).
  void finish(size_t i, Value vals, Value py, Value px, Value n, Value inside);

  /// Tile t's first row and column in its image (signed, as index).
  Value origin(size_t t, int axis) {
    const RegionTile &tile = plan.tiles[t];
    return add(mul(axis == 0 ? ty0 : tx0, tile.scale[axis]),
               cst(tile.offset[axis]));
  }
  /// Whether (y, x) lies in tile t's image.
  Value inImage(size_t t, Value y, Value x) {
    return land(ult(y, plan.shapes[t][0]), ult(x, plan.shapes[t][1]));
  }
  Value tileView(size_t t, int64_t lanes) {
    int64_t elems = plan.tiles[t].size[0] * plan.tiles[t].size[1] *
                    rowStride(plan.shapes[t][2]);
    Type elemT = lanes == 1 ? p.type : VectorType::get({lanes}, p.type);
    return sharedView(raw, elems / lanes, elemT, plan.tileOffset[t]);
  }
  Value zeros(int64_t len, Type t) {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(VectorType::get({len}, t), b.getZeroAttr(t)));
  }
  Value splatF32(int64_t len, double v) {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(VectorType::get({len}, b.getF32Type()),
                               float(v)));
  }
  Value extF32(Value v) {
    auto vt = cast<VectorType>(v.getType());
    return arith::ExtFOp::create(
        b, loc, VectorType::get(vt.getShape(), b.getF32Type()), v);
  }
  /// A loop `for (x = tid; x < count; x += threads)` around body(x).
  void threadLoop(int64_t count, llvm::function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, tid, cst(count), cst(threads));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  /// threadLoop unrolled when each thread runs it at most 8 times, so that
  /// the iterations' loads are in flight together.
  void unrolledThreadLoop(int64_t count, llvm::function_ref<void(Value)> body) {
    if (ceilDiv(count, threads) > 8)
      return threadLoop(count, body);
    for (int64_t q = 0; q < ceilDiv(count, threads); ++q) {
      Value idx = add(tid, q * threads);
      whenTrue((q + 1) * threads > count ? ult(idx, count) : Value(),
               [&] { body(idx); });
    }
  }
  Value mma(Value a, Value bFrag, Value acc) {
    if (p.type.isBF16())
      return mmaBf16(a, bFrag, acc);
    return nvgpu::MmaSyncOp::create(b, loc, a, bFrag, acc,
                                    ArrayRef<int64_t>{16, 8, 16}, false);
  }

  const RegionProblem &p;
  const RegionSchedule &s;
  const Plan &plan;
  int64_t threads, eb;
  Value input, output;
  SmallVector<Value> weights, biases; // per member (null: none)
  Value raw;
  Value tid, lane, warp, img, ty0, tx0;
  Value token;
  /// Commit groups prefetchSlabs made (newer than the input's).
  int64_t prefetchGroups = 0;
};

void RegionBuilder::loadInput() {
  const RegionTile &tile = plan.tiles[0];
  int64_t iw = tile.size[1], c = p.c, stride = rowStride(c);
  int64_t cpr = pad16(c) / 8;
  Value view = tileView(0, 1);
  Value oy = origin(0, 0), ox = origin(0, 1);
  threadLoop(tile.size[0] * iw * cpr, [&](Value idx) {
    Value pix = div(idx, cpr), ch = rem(idx, cpr);
    Value y = add(oy, div(pix, iw)), x = add(ox, rem(pix, iw));
    Value ok = inImage(0, y, x);
    if (c % 16)
      ok = land(ok, ult(ch, c / 8));
    Value src =
        add(mul(add(mul(add(mul(img, p.h), y), p.w), x), c), mul(ch, 8));
    asyncCopy(view, add(mul(pix, stride), mul(ch, 8)), input, src, ok);
  });
  token = commitGroup();
}

void RegionBuilder::asyncCopy(Value dstView, Value dst, Value src, Value srcIdx,
                              Value ok) {
  nvgpu::DeviceAsyncCopyOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), dstView,
      ValueRange{dst}, src,
      ValueRange{ok ? select(ok, srcIdx, cst(0)) : srcIdx}, b.getIndexAttr(8),
      ok ? select(ok, cst(8), cst(0)) : Value(), b.getUnitAttr());
}

void RegionBuilder::loadParams() {
  for (size_t i = 0; i < p.members.size(); ++i) {
    const RegionMember &m = p.members[i];
    int64_t c = plan.shapes[i][2], taps = m.kh * m.kw;
    if (m.kind == Kind::Conv && s.resident) {
      // Row n: output channel n's taps x channels (padded to 16: zeros),
      // rows past the channels zero.
      int64_t cp = pad16(c), cpr = taps * cp / 8, rows = plan.weightRows[i];
      int64_t o = m.outChannels, stride = plan.weightStride[i];
      Value view = sharedView(raw, rows * stride, p.type, plan.weightOffset[i]);
      threadLoop(rows * cpr, [&](Value idx) {
        Value n = div(idx, cpr), kc = mul(rem(idx, cpr), 8);
        Value tap = div(kc, cp), ch = rem(kc, cp);
        Value ok =
            land(rows > o ? ult(n, o) : Value(), c % 16 ? ult(ch, c) : Value());
        asyncCopy(view, add(mul(n, stride), kc), weights[i],
                  add(mul(n, taps * c), add(mul(tap, c), ch)), ok);
      });
    } else if (m.kind == Kind::Depthwise) {
      // As stored, [C][taps]: whole 16-byte chunks (C is a multiple of 8).
      Value view = sharedView(raw, taps * c, p.type, plan.weightOffset[i]);
      threadLoop(taps * c / 8, [&](Value idx) {
        asyncCopy(view, mul(idx, 8), weights[i], mul(idx, 8), Value());
      });
    }
    if (m.bias) {
      int64_t o = plan.shapes[i + 1][2];
      Value view = sharedView(raw, o, p.type, plan.biasOffset[i]);
      threadLoop(o / 8, [&](Value idx) {
        asyncCopy(view, mul(idx, 8), biases[i], mul(idx, 8), Value());
      });
    }
  }
  token = commitGroup();
}

Value RegionBuilder::stagingView(size_t i) {
  const GemmPlan &g = plan.gemm[i];
  return sharedView(raw, g.stages * g.roundN() * g.kStage, p.type,
                    plan.stagingOffset[i]);
}

void RegionBuilder::copySlab(size_t i, Value n0, Value kt, Value stage) {
  const RegionMember &m = p.members[i];
  const GemmPlan &g = plan.gemm[i];
  int64_t cin = plan.shapes[i][2], o = m.outChannels, taps = m.kh * m.kw;
  int64_t cp = pad16(cin), roundN = g.roundN(), cpr = g.kStage / 8;
  int64_t chunks = roundN * cpr;
  bool needN = o % roundN != 0, needC = cin % 16 != 0;
  Value view = stagingView(i);
  for (int64_t q = 0; q < ceilDiv(chunks, threads); ++q) {
    Value idx = add(tid, q * threads);
    whenTrue(chunks % threads ? ult(idx, chunks) : Value(), [&] {
      Value row = div(idx, cpr), c = rem(idx, cpr);
      Value n = add(n0, row);
      Value kc = add(mul(kt, g.kStage), mul(c, 8));
      Value tap = div(kc, cp), ch = rem(kc, cp);
      Value ok =
          land(needN ? ult(n, o) : Value(), needC ? ult(ch, cin) : Value());
      Value src = add(mul(n, taps * cin), add(mul(tap, cin), ch));
      Value dst =
          add(mul(stage, roundN * g.kStage), mul(swizzle(row, c, cpr), 8));
      asyncCopy(view, dst, weights[i], src, ok);
    });
  }
}

void RegionBuilder::prefetchSlabs() {
  for (size_t i = 0; i < p.members.size(); ++i) {
    if (p.members[i].kind != Kind::Conv)
      continue;
    const GemmPlan &g = plan.gemm[i];
    int64_t kTiles = kTilesOf(i);
    for (int64_t st = 0; st + 1 < g.stages && st < kTiles; ++st)
      copySlab(i, cst(0), cst(st), cst(st));
    token = commitGroup();
    ++prefetchGroups;
  }
}

void RegionBuilder::zeroPadChannels(size_t t) {
  int64_t c = plan.shapes[t][2];
  if (c % 16 == 0)
    return;
  int64_t stride = rowStride(c) / 8;
  Value vec = tileView(t, 8);
  Value z = zeros(8, p.type);
  threadLoop(plan.tiles[t].size[0] * plan.tiles[t].size[1], [&](Value pix) {
    memref::StoreOp::create(b, loc, z, vec,
                            ValueRange{add(mul(pix, stride), c / 8)});
  });
}

void RegionBuilder::finish(size_t i, Value vals, Value py, Value px, Value n,
                           Value inside) {
  const RegionMember &m = p.members[i];
  int64_t len = cast<VectorType>(vals.getType()).getNumElements();
  VectorType halfT = VectorType::get({len}, p.type);
  llvm::Align align(len * eb);
  bool last = i + 1 == p.members.size();
  size_t t = i + 1;
  Value y = add(origin(t, 0), py), x = add(origin(t, 1), px);
  if (m.bias) {
    // From shared memory, as a view of `len`-element vectors (n is a
    // multiple of len).
    Value bias = memref::LoadOp::create(
        b, loc,
        sharedView(raw, plan.shapes[t][2] / len, halfT, plan.biasOffset[i]),
        ValueRange{div(n, len)});
    vals = arith::AddFOp::create(b, loc, vals, extF32(bias));
  }
  if (m.residualFrom == 0 && !plan.inputKept) {
    // The chain input, from global memory (its shared tile is gone).
    Value off = add(mul(add(mul(add(mul(img, p.h), y), p.w), x), p.c), n);
    off = select(inside, off, cst(0));
    vals = arith::AddFOp::create(
        b, loc, vals,
        extF32(vector::LoadOp::create(b, loc, halfT, input, ValueRange{off},
                                      false, align)));
  } else if (m.residualFrom >= 0) {
    size_t r = m.residualFrom;
    const RegionTile &src = plan.tiles[r], &dst = plan.tiles[t];
    Value sy = add(py, dst.offset[0] - src.offset[0]);
    Value sx = add(px, dst.offset[1] - src.offset[1]);
    Value off = add(
        mul(add(mul(sy, src.size[1]), sx), rowStride(plan.shapes[r][2])), n);
    vals = arith::AddFOp::create(
        b, loc, vals,
        extF32(memref::LoadOp::create(b, loc, tileView(r, len),
                                      ValueRange{div(off, len)})));
  }
  if (m.activation != Activation::None)
    vals = arith::MaximumFOp::create(b, loc, vals, splatF32(len, 0.0));
  if (m.activation == Activation::Relu6)
    vals = arith::MinimumFOp::create(b, loc, vals, splatF32(len, 6.0));
  if (last) {
    std::array<int64_t, 3> out = plan.shapes[t];
    whenTrue(inside, [&] {
      Value off =
          add(mul(add(mul(add(mul(img, out[0]), y), out[1]), x), out[2]), n);
      vector::StoreOp::create(b, loc,
                              arith::TruncFOp::create(b, loc, halfT, vals),
                              output, ValueRange{off}, false, align);
    });
    return;
  }
  // The next member's padding: zero outside this member's image.
  vals = select(inside, vals, splatF32(len, 0.0));
  Value off = add(mul(add(mul(py, plan.tiles[t].size[1]), px),
                      rowStride(plan.shapes[t][2])),
                  n);
  memref::StoreOp::create(b, loc, arith::TruncFOp::create(b, loc, halfT, vals),
                          tileView(t, len), ValueRange{div(off, len)});
}

void RegionBuilder::convMember(size_t i) {
  const RegionMember &m = p.members[i];
  const GemmPlan &g = plan.gemm[i];
  const RegionTile &in = plan.tiles[i], &out = plan.tiles[i + 1];
  int64_t iw = in.size[1], ow = out.size[1];
  int64_t cin = plan.shapes[i][2], o = m.outChannels;
  int64_t inStride = rowStride(cin), cp = pad16(cin), taps = m.kh * m.kw;
  int64_t kTotal = taps * cp, kTiles = kTotal / g.kStage;
  int64_t bigM = out.size[0] * ow;
  int64_t mTiles = ceilDiv(bigM, 16), nTiles = o / 8;
  int64_t roundsM = ceilDiv(mTiles, g.warpsM * g.jm);
  int64_t roundsN = ceilDiv(nTiles, g.warpsN * g.jn);
  int64_t roundN = g.roundN(), kStage = g.kStage, cpr = kStage / 8;
  int64_t slabElems = roundN * kStage;
  Value param = s.resident ? Value() : stagingView(i);
  Value tileIn = tileView(i, 1);
  Value warpM = div(warp, g.warpsN), warpN = rem(warp, g.warpsN);
  Value l16 = band(lane, 15), lHi = div(lane, 16), l8 = band(lane, 7);
  Value lMid = band(div(lane, 8), 1);
  Type f32 = b.getF32Type();

  bool resident = s.resident;
  int64_t wStride = resident ? plan.weightStride[i] : 0;
  Value wView = resident ? sharedView(raw, plan.weightRows[i] * wStride, p.type,
                                      plan.weightOffset[i])
                         : Value();
  // Resident weights: the previous member's tile is complete; rounds then
  // share nothing but reads.
  if (resident)
    mlir::gpu::BarrierOp::create(b, loc);
  auto round =
      scf::ForOp::create(b, loc, cst(0), cst(roundsM * roundsN), cst(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(round.getBody());
  Value r = round.getInductionVar();
  // The previous round's (member's) reads of the weight slabs are done.
  if (!resident)
    mlir::gpu::BarrierOp::create(b, loc);
  Value mr = rem(r, roundsM), nr = div(r, roundsM);
  Value m0 = add(mul(mr, g.roundM()), mul(warpM, g.jm * 16));
  Value n0 = mul(nr, roundN);      // the slab's first output channel
  Value nw = mul(warpN, g.jn * 8); // the warp's first column in the slab

  // The window origin of each A row this lane addresses (rows past M read
  // pixel 0 and are dropped).
  SmallVector<Value> aBase;
  for (int64_t a = 0; a < g.jm; ++a) {
    Value row = add(m0, add(l16, a * 16));
    Value mc = select(ult(row, bigM), row, cst(0));
    Value py = div(mc, ow), px = rem(mc, ow);
    aBase.push_back(
        add(mul(add(mul(mul(py, m.strideH), iw), mul(px, m.strideW)), inStride),
            mul(lHi, 8)));
  }

  // The pipeline's first stages - 1 slabs, a commit group each; the first
  // round's were copied with the input tile (prefetch), its groups here
  // empty, so that the k-loop's waits count the same.
  Value laterRound =
      s.prefetch ? cmp(arith::CmpIPredicate::ne, r, cst(0)) : Value();
  for (int64_t st = 0; !resident && st + 1 < g.stages; ++st) {
    if (st < kTiles)
      whenTrue(laterRound, [&] { copySlab(i, n0, cst(st), cst(st)); });
    token = commitGroup();
  }
  Value zeroAcc = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(VectorType::get({2, 2}, f32), 0.0f));
  SmallVector<Value> init(g.jm * g.jn, zeroAcc);
  auto kLoop = scf::ForOp::create(b, loc, cst(0), cst(kTiles), cst(1), init);
  {
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value kt = kLoop.getInductionVar();
    // Slab kt has landed (and, for the first member, the input tile, an
    // older group); the barrier also retires the reads of slab kt - 1.
    if (!resident) {
      nvgpu::DeviceAsyncWaitOp::create(b, loc, token,
                                       b.getI32IntegerAttr(g.stages - 2));
      mlir::gpu::BarrierOp::create(b, loc);
    }
    Value stage = rem(kt, g.stages);
    Value slabBase = mul(stage, slabElems);
    SmallVector<Value> acc(kLoop.getRegionIterArgs());
    for (int64_t kk = 0; kk < kStage / 16; ++kk) {
      Value k = add(mul(kt, kStage), kk * 16);
      Value tap = div(k, cp), ch = rem(k, cp);
      Value ky = div(tap, m.kw), kx = rem(tap, m.kw);
      Value tapOff =
          add(mul(add(mul(mul(ky, m.dilationH), iw), mul(kx, m.dilationW)),
                  inStride),
              ch);
      SmallVector<Value> aFrag, bFrag;
      VectorType fragT = VectorType::get({4, 2}, p.type);
      for (int64_t a = 0; a < g.jm; ++a)
        aFrag.push_back(nvgpu::LdMatrixOp::create(
            b, loc, fragT, tileIn, ValueRange{add(aBase[a], tapOff)}, false,
            4));
      for (int64_t j = 0; j < g.jn / 2; ++j) {
        Value row = add(nw, add(add(mul(lHi, 8), l8), j * 16));
        Value off, src = param;
        if (resident) {
          off = add(mul(add(n0, row), wStride), add(k, mul(lMid, 8)));
          src = wView;
        } else {
          off = add(slabBase, mul(swizzle(row, add(lMid, kk * 2), cpr), 8));
        }
        Value pair = nvgpu::LdMatrixOp::create(b, loc, fragT, src,
                                               ValueRange{off}, false, 4);
        for (int64_t h = 0; h < 2; ++h)
          bFrag.push_back(vector::ExtractStridedSliceOp::create(
              b, loc, pair, ArrayRef<int64_t>{2 * h, 0},
              ArrayRef<int64_t>{2, 2}, ArrayRef<int64_t>{1, 1}));
      }
      if (kk == 0 && !resident) {
        // Slab kt + S - 1 into the stage read at kt - 1.
        Value next = add(kt, g.stages - 1);
        whenTrue(ult(next, kTiles),
                 [&] { copySlab(i, n0, next, rem(next, g.stages)); });
        commitGroup();
      }
      for (int64_t a = 0; a < g.jm; ++a)
        for (int64_t j = 0; j < g.jn; ++j) {
          int64_t jj = a % 2 ? g.jn - 1 - j : j;
          Value &c = acc[a * g.jn + jj];
          c = mma(aFrag[a], bFrag[jj], c);
        }
    }
    scf::YieldOp::create(b, loc, acc);
  }

  // Epilogue: lane holds rows lane/4 (+ 8) and columns 2 * (lane % 4) (+ 1)
  // of each 16 x 8 accumulator tile.
  Value rowBase = add(m0, div(lane, 4));
  Value colBase = add(add(n0, nw), mul(band(lane, 3), 2));
  bool needN = roundsN * roundN > o;
  size_t t = i + 1;
  Value oy = origin(t, 0), ox = origin(t, 1);
  for (int64_t a = 0; a < g.jm; ++a)
    for (int64_t j = 0; j < g.jn; ++j)
      for (int64_t h = 0; h < 2; ++h) {
        Value row = add(rowBase, a * 16 + h * 8);
        Value n = add(colBase, j * 8);
        Value valid = land(ult(row, bigM), needN ? ult(n, o) : Value());
        Value v = vector::ExtractOp::create(
            b, loc, kLoop.getResult(a * g.jn + j), ArrayRef<int64_t>{h});
        whenTrue(valid, [&] {
          Value py = div(row, ow), px = rem(row, ow);
          finish(i, v, py, px, n, inImage(t, add(oy, py), add(ox, px)));
        });
      }
}

void RegionBuilder::simtMember(size_t i) {
  const RegionMember &m = p.members[i];
  const RegionTile &in = plan.tiles[i], &out = plan.tiles[i + 1];
  int64_t iw = in.size[1], ow = out.size[1], c = plan.shapes[i][2];
  int64_t inStride = rowStride(c) / 8, groups = c / 8, taps = m.kh * m.kw;
  Type f32 = b.getF32Type();
  VectorType accT = VectorType::get({8}, f32);
  if (m.kind == Kind::Depthwise) {
    // The weight, [C][taps] as stored (loadParams), to [taps][C]: a tap's 8
    // channels become one 16-byte load. Consecutive lanes read consecutive
    // taps of one channel (2 bytes apart: few bank conflicts).
    Value from = sharedView(raw, taps * c, p.type, plan.weightOffset[i]);
    Value to = sharedView(raw, taps * groups, VectorType::get({8}, p.type),
                          plan.dwOffset);
    unrolledThreadLoop(taps * groups, [&](Value idx) {
      Value grp = div(idx, taps), tap = rem(idx, taps);
      SmallVector<Value> w;
      for (int64_t j = 0; j < 8; ++j)
        w.push_back(memref::LoadOp::create(
            b, loc, from,
            ValueRange{add(mul(add(mul(grp, 8), j), taps), tap)}));
      memref::StoreOp::create(b, loc,
                              vector::FromElementsOp::create(
                                  b, loc, VectorType::get({8}, p.type), w),
                              to, ValueRange{add(mul(tap, groups), grp)});
    });
    mlir::gpu::BarrierOp::create(b, loc);
  }
  Value tileIn = tileView(i, 8);
  Value wVec = m.kind == Kind::Depthwise
                   ? sharedView(raw, taps * groups,
                                VectorType::get({8}, p.type), plan.dwOffset)
                   : Value();
  size_t t = i + 1;
  Value iy0 = origin(i, 0), ix0 = origin(i, 1);
  Value oy = origin(t, 0), ox = origin(t, 1);
  threadLoop(out.size[0] * ow * groups, [&](Value idx) {
    Value grp = rem(idx, groups), pix = div(idx, groups);
    Value py = div(pix, ow), px = rem(pix, ow);
    Value acc = m.kind == Kind::MaxPool
                    ? splatF32(8, -std::numeric_limits<double>::infinity())
                    : splatF32(8, 0.0);
    Value count; // taps inside the image (an average pool's divisor)
    Value ry = mul(py, m.strideH), rx = mul(px, m.strideW);
    for (int64_t ky = 0; ky < m.kh; ++ky)
      for (int64_t kx = 0; kx < m.kw; ++kx) {
        Value ty = add(ry, ky * m.dilationH), tx = add(rx, kx * m.dilationW);
        Value v = extF32(memref::LoadOp::create(
            b, loc, tileIn,
            ValueRange{add(mul(add(mul(ty, iw), tx), inStride), grp)}));
        if (m.kind == Kind::Depthwise) {
          Value wv = extF32(memref::LoadOp::create(
              b, loc, wVec, ValueRange{add(grp, (ky * m.kw + kx) * groups)}));
          acc = math::FmaOp::create(b, loc, v, wv, acc);
          continue;
        }
        if (m.kind == Kind::AvgPool && m.countIncludePad) {
          acc = arith::AddFOp::create(b, loc, acc, v);
          continue;
        }
        // Padding is not an element of the window: the tile holds zeros
        // there, which a max (or an average over the image) must skip.
        Value ok = inImage(i, add(iy0, ty), add(ix0, tx));
        if (m.kind == Kind::MaxPool) {
          acc = select(ok, arith::MaximumFOp::create(b, loc, acc, v), acc);
        } else {
          acc = arith::AddFOp::create(b, loc, acc, v);
          Value one = select(ok, cstI32(1), cstI32(0));
          count = count ? arith::AddIOp::create(b, loc, count, one) : one;
        }
      }
    if (m.kind == Kind::AvgPool) {
      Value divisor =
          m.countIncludePad
              ? splatF32(8, double(taps))
              : vector::BroadcastOp::create(
                    b, loc, accT,
                    arith::UIToFPOp::create(
                        b, loc, f32,
                        arith::MaxUIOp::create(b, loc, count, cstI32(1))));
      acc = arith::DivFOp::create(b, loc, acc, divisor);
    }
    finish(i, acc, py, px, mul(grp, 8), inImage(t, add(oy, py), add(ox, px)));
  });
}

void RegionBuilder::build(Block &entry) {
  size_t nm = p.members.size();
  unsigned arg = 0;
  input = entry.getArgument(arg++);
  for (const RegionMember &m : p.members) {
    weights.push_back(m.kind == Kind::Conv || m.kind == Kind::Depthwise
                          ? entry.getArgument(arg++)
                          : Value());
    biases.push_back(m.bias ? entry.getArgument(arg++) : Value());
  }
  output = entry.getArgument(arg);

  std::array<int64_t, 3> last = plan.shapes[nm];
  int64_t tilesW = ceilDiv(last[1], s.tileW);
  tid = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
  lane = rem(tid, 32);
  warp = div(tid, 32);
  Value bid = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
  img = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::z);
  ty0 = mul(div(bid, tilesW), s.tileH);
  tx0 = mul(rem(bid, tilesW), s.tileW);
  raw = dynamicSharedMemory();

  // One group with the input tile and the parameters kept in shared memory;
  // then, with prefetch, a group per convolution's first slabs.
  loadInput();
  loadParams();
  if (s.resident) {
    // The members then read shared memory only.
    nvgpu::DeviceAsyncWaitOp::create(b, loc, token, b.getI32IntegerAttr(0));
  } else if (s.prefetch) {
    prefetchSlabs();
  }
  bool waited = s.resident;
  for (size_t i = 0; i < nm; ++i) {
    const RegionMember &m = p.members[i];
    // A convolution waits in its k-loop (the input's and the parameters'
    // copies are older than its slabs); a member on CUDA cores before any
    // convolution waits here, leaving the prefetched slabs in flight.
    if (m.kind != Kind::Conv && !waited)
      nvgpu::DeviceAsyncWaitOp::create(b, loc, token,
                                       b.getI32IntegerAttr(prefetchGroups));
    waited = true;
    if (m.kind != Kind::Conv)
      mlir::gpu::BarrierOp::create(b, loc);
    if (m.kind == Kind::Conv)
      convMember(i);
    else
      simtMember(i);
    if (i + 1 < nm)
      zeroPadChannels(i + 1);
  }
}

} // namespace

std::vector<RegionTile> regionTiles(const RegionProblem &p,
                                    const RegionSchedule &s) {
  size_t nm = p.members.size();
  std::vector<RegionTile> tiles(nm + 1);
  tiles[nm] = {{s.tileH, s.tileW}, {1, 1}, {0, 0}};
  for (size_t i = nm; i-- > 0;) {
    const RegionMember &m = p.members[i];
    const RegionTile &o = tiles[i + 1];
    std::array<int64_t, 2> k = {m.kh, m.kw}, st = {m.strideH, m.strideW},
                           d = {m.dilationH, m.dilationW},
                           pad = {m.padTop, m.padLeft};
    for (int a = 0; a < 2; ++a) {
      tiles[i].size[a] = (o.size[a] - 1) * st[a] + (k[a] - 1) * d[a] + 1;
      tiles[i].scale[a] = o.scale[a] * st[a];
      tiles[i].offset[a] = o.offset[a] * st[a] - pad[a];
    }
  }
  return tiles;
}

int64_t regionSharedBytes(const RegionProblem &p, const RegionSchedule &s) {
  return planOf(p, s).total;
}

bool regionKernelSupports(const RegionProblem &p, const RegionSchedule &s,
                          const ::tcc::TargetDesc &target, std::string &why) {
  if (!regionShapeValid(p, s, why))
    return false;
  if (!target.isNvidia() || !target.mmaSync || !target.cpAsync) {
    why = "region kernel: needs mma.sync and cp.async (sm_80 or later)";
    return false;
  }
  std::string limit;
  if (!sharedFits(regionSharedBytes(p, s), target, limit)) {
    why = "region kernel: the tiles need " +
          std::to_string(regionSharedBytes(p, s)) + " bytes, " + limit;
    return false;
  }
  return true;
}

std::optional<RegionSchedule>
chooseRegionSchedule(const RegionProblem &p, const ::tcc::TargetDesc &target,
                     std::optional<std::array<int64_t, 2>> tile) {
  std::array<int64_t, 3> last = p.outShape(p.members.size() - 1);
  int64_t sms = target.multiprocessorsForHeuristics();
  std::optional<RegionSchedule> best;
  double bestCost = std::numeric_limits<double>::max();
  std::vector<int64_t> heights(mlir::tcc::region::kKernelTileSizes.begin(),
                               mlir::tcc::region::kKernelTileSizes.end());
  std::vector<int64_t> widths = heights;
  if (tile) {
    // The planned tile, clamped to the output as the plan's footprint is.
    heights = {
        std::clamp<int64_t>((*tile)[0], 1, std::max<int64_t>(1, last[0]))};
    widths = {
        std::clamp<int64_t>((*tile)[1], 1, std::max<int64_t>(1, last[1]))};
  }
  for (int64_t th : heights)
    for (int64_t tw : widths)
      // 4 warps: ptxas (CUDA 13.0) spills a word in some 8-warp chains at
      // 80 registers (mbv2_56_s2 with 1x7 tiles), which a schedule given
      // explicitly may still pick.
      for (int64_t warps : {4})
        for (int mode : {0, 1, 2}) {
          // 0: resident, 1: streamed, 2: streamed with prefetch.
          bool resident = mode == 0, prefetch = mode == 2;
          if (th > last[0] || tw > last[1])
            continue;
          RegionSchedule s{th, tw, warps, resident, prefetch};
          std::string why;
          if (!regionKernelSupports(p, s, target, why))
            continue;
          // Resident parameters delay a block's first MMA until every
          // weight has landed and take shared memory from other blocks: on
          // the H200 they won only with 14-pixel tiles in 47 KiB
          // (MobileNetV2 at 56x56, 11.2 against 12.5 us streamed) and lost
          // with tiles of 2-4 pixels (up to 1.2x slower) or over 80 KiB
          // (1.5x: ResNet-50's and U-Net's 3x3 chains; docs/performance.md,
          // session 20).
          if (resident && (th * tw < 8 || planOf(p, s).total > 48 * 1024))
            continue;
          // A block's work in multiply-adds: every member's whole tile (halos
          // included, GEMM rows rounded to the mma's 16, the CUDA-core
          // members at a sixteenth of the tensor cores' rate), plus a fixed
          // cost a block (the input tile's latency), a GEMM round (the
          // weight pipeline's fill and barriers; a tenth of it with the
          // weights resident, which a round only reads; half for the first
          // round of a prefetched pipeline, whose fill overlapped the input
          // tile's) and a CUDA-core member (its barrier).
          Plan plan = planOf(p, s);
          double work = 5e4;
          for (size_t i = 0; i < p.members.size(); ++i) {
            const RegionMember &m = p.members[i];
            const RegionTile &out = plan.tiles[i + 1];
            int64_t pix = out.size[0] * out.size[1];
            int64_t c = plan.shapes[i][2];
            if (m.kind == Kind::Conv) {
              const GemmPlan &g = plan.gemm[i];
              int64_t rounds = ceilDiv(ceilDiv(pix, 16), g.warpsM * g.jm) *
                               ceilDiv(m.outChannels / 8, g.warpsN * g.jn);
              work += double(ceilDiv(pix, 16) * 16) * m.outChannels * c * m.kh *
                          m.kw +
                      (resident ? 2e3 : 2e4) * rounds - (prefetch ? 1e4 : 0);
            } else {
              work += 16.0 * pix * c * m.kh * m.kw + 5e3;
            }
          }
          // Blocks a multiprocessor runs, how many at once (shared memory,
          // 16 warps), and how well they hide latency (8 warps and up).
          int64_t blocks = p.n * ceilDiv(last[0], th) * ceilDiv(last[1], tw);
          int64_t perSm = ceilDiv(blocks, sms);
          int64_t atOnce = std::min<int64_t>(
              {perSm, 16 / warps,
               std::max<int64_t>(1, target.maxSharedPerBlock / plan.total)});
          double eff = std::min(1.0, double(atOnce * warps) / 8.0);
          double cost = double(perSm) * work / eff;
          if (!best || cost < bestCost) {
            bestCost = cost;
            best = s;
          }
        }
  return best;
}

std::vector<RegionArg> regionKernelArgs(const RegionProblem &p) {
  std::vector<RegionArg> args;
  args.push_back({RegionArg::Role::Input, -1, {p.n, p.h, p.w, p.c}});
  for (size_t i = 0; i < p.members.size(); ++i) {
    const RegionMember &m = p.members[i];
    int64_t c = p.inShape(i)[2], o = p.outShape(i)[2];
    if (m.kind == Kind::Conv)
      args.push_back({RegionArg::Role::Weight, int64_t(i), {o, m.kh, m.kw, c}});
    else if (m.kind == Kind::Depthwise)
      args.push_back({RegionArg::Role::Weight, int64_t(i), {c, m.kh, m.kw, 1}});
    if (m.bias)
      args.push_back({RegionArg::Role::Bias, int64_t(i), {o}});
  }
  std::array<int64_t, 3> out = p.outShape(p.members.size() - 1);
  args.push_back({RegionArg::Role::Output, -1, {p.n, out[0], out[1], out[2]}});
  return args;
}

FailureOr<KernelLaunch>
buildRegionKernel(OpBuilder &b, mlir::gpu::GPUModuleOp module, StringRef name,
                  const RegionProblem &p, const RegionSchedule &s) {
  std::string why;
  if (!regionShapeValid(p, s, why))
    return module.emitError(why), failure();
  loadTemplateDialects(b.getContext());
  b.getContext()->getOrLoadDialect<math::MathDialect>();
  OpBuilder::InsertionGuard g(b);
  SmallVector<Type> types;
  for (const RegionArg &a : regionKernelArgs(p)) {
    int64_t elems = 1;
    for (int64_t d : a.shape)
      elems *= d;
    types.push_back(MemRefType::get({elems}, p.type));
  }
  int64_t threads = 32 * s.warps;
  auto func = createKernelFunc(b, module, name, types, threads);
  // Left alone, ptxas aims some chains at an occupancy tier (72 or 80
  // registers) and spills a few words to reach it; these grids have one or
  // two blocks a multiprocessor, so one block is all the occupancy asked.
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                b.getI32IntegerAttr(1));
  Plan plan = planOf(p, s);
  RegionBuilder(b, module.getLoc(), p, s, plan).build(func.getBody().front());
  mlir::gpu::ReturnOp::create(b, module.getLoc());
  std::array<int64_t, 3> last = plan.shapes.back();
  KernelLaunch launch;
  launch.grid = {ceilDiv(last[0], s.tileH) * ceilDiv(last[1], s.tileW), 1, p.n};
  launch.block = {threads, 1, 1};
  launch.sharedBytes = plan.total;
  return launch;
}

} // namespace tcc::gpu
