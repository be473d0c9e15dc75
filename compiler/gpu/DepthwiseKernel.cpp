//===- DepthwiseKernel.cpp - channels-last depthwise convolution ----------===//
#include "compiler/gpu/DepthwiseKernel.h"
#include "compiler/gpu/TemplateUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace tcc::gpu {
namespace {

constexpr int64_t kThreads = 256;

int64_t bytesOf(Type t) { return t.getIntOrFloatBitWidth() / 8; }

/// Channels a thread takes: one 16-byte vector of the input when C allows.
int64_t vectorOf(const DepthwiseProblem &p) {
  int64_t v = 16 / bytesOf(p.inType);
  while (v > 1 && p.c % v)
    v /= 2;
  return v;
}

/// How blocks split the work: a block takes up to 32 channel groups (a
/// warp's 16-byte vectors side by side) of `pixels` output pixels, so that
/// it stages only those channels' weights.
struct DepthwiseTiling {
  int64_t groups, groupsPerBlock, chunks, pixelsPerBlock, blocks;
  int64_t taps, sharedBytes;
};

DepthwiseTiling tilingOf(const DepthwiseProblem &p) {
  DepthwiseTiling t;
  int64_t vec = vectorOf(p);
  t.groups = p.c / vec;
  t.groupsPerBlock = std::min<int64_t>(t.groups, 32);
  t.chunks = ceilDiv(t.groups, t.groupsPerBlock);
  t.pixelsPerBlock = kThreads / t.groupsPerBlock;
  t.blocks = ceilDiv(p.n * p.outH() * p.outW(), t.pixelsPerBlock) * t.chunks;
  t.taps = p.kh * p.kw;
  t.sharedBytes = t.taps * t.groupsPerBlock * vec * bytesOf(p.weightType);
  return t;
}

class DepthwiseBuilder : TemplateBuilder {
public:
  DepthwiseBuilder(OpBuilder &b, Location loc, const DepthwiseProblem &p)
      : TemplateBuilder(b, loc), p(p), vec(vectorOf(p)) {}

  void build(Value in, Value weight, Value bias, Value out) {
    int64_t oh = p.outH(), ow = p.outW();
    DepthwiseTiling t = tilingOf(p);
    int64_t rowElems = t.groupsPerBlock * vec; // a tap's staged weights
    Value tid = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
    Value blk = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
    Value chunk = rem(blk, t.chunks);
    // The chunk's weights, tap-major, in shared memory: [c][kh*kw] in
    // global memory gives a thread its 8 channels' weight of one tap as 8
    // scalar loads 2*kh*kw bytes apart, a warp's load instruction touching
    // 32 lines; NASNet's 5x5 layers spent 15 us on that alone (session 28).
    // The chunk's channels are contiguous rows there: coalesced reads.
    Value staged =
        sharedView(dynamicSharedMemory(), t.taps * rowElems, p.weightType, 0);
    {
      Value firstElem = mul(chunk, rowElems * t.taps);
      int64_t all = p.c * t.taps, chunkElems = rowElems * t.taps;
      for (int64_t e0 = 0; e0 < chunkElems; e0 += kThreads) {
        Value e = add(tid, e0);
        Value flat = add(firstElem, e);
        // Past the last chunk's channels (or the chunk): element 0, never
        // read back by a thread of a channel that exists.
        Value ok = land(ult(e, chunkElems), ult(flat, all));
        flat = select(ok, flat, cst(0));
        Value w = memref::LoadOp::create(
            b, loc, weight, ValueRange{div(flat, t.taps), rem(flat, t.taps)});
        // Past the chunk (the last round only): no store, another thread
        // has that element.
        OpBuilder::InsertionGuard sg(b);
        if (e0 + kThreads > chunkElems) {
          auto inChunk = scf::IfOp::create(b, loc, ult(e, chunkElems), false);
          b.setInsertionPointToStart(inChunk.thenBlock());
        }
        memref::StoreOp::create(
            b, loc, w, staged,
            ValueRange{add(mul(rem(e, t.taps), rowElems), div(e, t.taps))});
      }
      mlir::gpu::BarrierOp::create(b, loc);
    }
    Value g = rem(tid, t.groupsPerBlock), pl = div(tid, t.groupsPerBlock);
    Value pix = add(mul(div(blk, t.chunks), t.pixelsPerBlock), pl);
    Value cg = add(mul(chunk, t.groupsPerBlock), g);
    Value active =
        land(land(ult(pl, t.pixelsPerBlock), ult(pix, p.n * oh * ow)),
             ult(cg, t.groups));
    auto guard = scf::IfOp::create(b, loc, active, false);
    OpBuilder::InsertionGuard ig(b);
    b.setInsertionPointToStart(guard.thenBlock());
    // Channel group fastest: a warp reads 32 neighbouring 16-byte vectors.
    Value ox = rem(pix, ow), rest = div(pix, ow);
    Value oy = rem(rest, oh), img = div(rest, oh);
    Value c0 = mul(cg, vec);
    Type f32 = b.getF32Type();
    VectorType accT = VectorType::get({vec}, f32);
    VectorType inT = VectorType::get({vec}, p.inType);
    Value acc = arith::ConstantOp::create(b, loc,
                                          DenseElementsAttr::get(accT, 0.0f));
    Value zeroIn = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(inT, b.getZeroAttr(p.inType)));
    llvm::Align inAlign(vec * bytesOf(p.inType));
    // Rows and columns of the window, as signed offsets from the origin.
    Value iy0 = arith::SubIOp::create(b, loc, mul(oy, p.strideH),
                                      cst(p.padTop));
    Value ix0 = arith::SubIOp::create(b, loc, mul(ox, p.strideW),
                                      cst(p.padLeft));
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      Value iy = add(iy0, ky * p.dilationH);
      // Unsigned compare: a negative row wraps above h.
      Value rowOk = ult(iy, p.h);
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        Value ix = add(ix0, kx * p.dilationW);
        Value ok = land(rowOk, ult(ix, p.w));
        // Out of the input: read element 0 (always there) and drop it.
        Value off = add(mul(add(mul(add(mul(img, p.h), iy), p.w), ix), p.c),
                        c0);
        off = select(ok, off, cst(0));
        Value v = vector::LoadOp::create(b, loc, inT, in, ValueRange{off},
                                         false, inAlign);
        v = select(ok, v, zeroIn);
        Value vf = p.inType.isF32() ? v : arith::ExtFOp::create(b, loc, accT, v);
        // The weights of this tap for the group's channels, one vector.
        Value wv = vector::LoadOp::create(
            b, loc, VectorType::get({vec}, p.weightType), staged,
            ValueRange{add(mul(g, vec), (ky * p.kw + kx) * rowElems)}, false,
            llvm::Align(vec * bytesOf(p.weightType)));
        if (!p.weightType.isF32())
          wv = arith::ExtFOp::create(b, loc, accT, wv);
        acc = math::FmaOp::create(b, loc, vf, wv, acc);
      }
    }
    if (p.biasType) {
      SmallVector<Value> bs;
      for (int64_t i = 0; i < vec; ++i)
        bs.push_back(
            memref::LoadOp::create(b, loc, bias, ValueRange{add(c0, i)}));
      Value bv = vector::FromElementsOp::create(
          b, loc, VectorType::get({vec}, p.biasType), bs);
      if (!p.biasType.isF32())
        bv = arith::ExtFOp::create(b, loc, accT, bv);
      acc = arith::AddFOp::create(b, loc, acc, bv);
    }
    auto splat = [&](double v) {
      return arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(accT, float(v)));
    };
    std::optional<double> lo = p.clampMin;
    if (p.relu)
      lo = std::max(lo.value_or(0.0), 0.0);
    if (lo)
      acc = arith::MaximumFOp::create(b, loc, acc, splat(*lo));
    if (p.clampMax)
      acc = arith::MinimumFOp::create(b, loc, acc, splat(*p.clampMax));
    if (!p.outType.isF32())
      acc = arith::TruncFOp::create(b, loc, VectorType::get({vec}, p.outType),
                                    acc);
    Value outOff = add(mul(pix, p.c), c0);
    vector::StoreOp::create(b, loc, acc, out, ValueRange{outOff}, false,
                            llvm::Align(vec * bytesOf(p.outType)));
  }

private:
  const DepthwiseProblem &p;
  int64_t vec;
};

bool isFloat(Type t) { return t && (t.isBF16() || t.isF16() || t.isF32()); }

} // namespace

bool depthwiseKernelSupports(const DepthwiseProblem &p, std::string &why) {
  auto fail = [&](const std::string &m) {
    why = "depthwise kernel: " + m;
    return false;
  };
  if (!isFloat(p.inType) || !isFloat(p.weightType) || !isFloat(p.outType) ||
      (p.biasType && !isFloat(p.biasType)))
    return fail("operands must be bf16, f16 or f32");
  if (p.groups != p.c || p.o != p.c)
    return fail("groups, input and output channels must be equal");
  if (p.residualType)
    return fail("no residual");
  std::string msg;
  if (!convWindowValid(p, msg))
    return fail(msg);
  // Fully unrolled taps.
  if (p.kh * p.kw > 64)
    return fail("more than 64 taps");
  if (p.n * p.h * p.w * p.c > (int64_t(1) << 40) ||
      p.n * p.outH() * p.outW() * p.c > (int64_t(1) << 40))
    return fail("too many elements");
  return true;
}

KernelLaunch buildDepthwiseKernel(OpBuilder &b, mlir::gpu::GPUModuleOp module,
                                  StringRef name, const DepthwiseProblem &p) {
  loadTemplateDialects(b.getContext());
  b.getContext()->getOrLoadDialect<math::MathDialect>();
  OpBuilder::InsertionGuard g(b);
  int64_t oh = p.outH(), ow = p.outW();
  SmallVector<Type> args = {
      MemRefType::get({p.n * p.h * p.w * p.c}, p.inType),
      MemRefType::get({p.c, p.kh * p.kw}, p.weightType)};
  if (p.biasType)
    args.push_back(MemRefType::get({p.c}, p.biasType));
  args.push_back(MemRefType::get({p.n * oh * ow * p.c}, p.outType));
  auto func = createKernelFunc(b, module, name, args, kThreads);
  Block &entry = func.getBody().front();
  Location loc = module.getLoc();
  DepthwiseBuilder(b, loc, p)
      .build(entry.getArgument(0), entry.getArgument(1),
             p.biasType ? entry.getArgument(2) : Value(),
             entry.getArguments().back());
  mlir::gpu::ReturnOp::create(b, loc);
  DepthwiseTiling t = tilingOf(p);
  KernelLaunch launch;
  launch.grid = {t.blocks, 1, 1};
  launch.block = {kThreads, 1, 1};
  launch.sharedBytes = t.sharedBytes;
  return launch;
}

} // namespace tcc::gpu
