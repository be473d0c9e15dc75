//===- TemplateUtils.cpp - helpers the GPU kernel templates share ---------===//
#include "compiler/gpu/TemplateUtils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

using namespace mlir;

namespace tcc::gpu {

LogicalResult passTensorMapsByValue(Operation *root) {
  MLIRContext *ctx = root->getContext();
  Builder b(ctx);
  // The map is read through its parameter's generic address (cvta.param),
  // which CUDA allows for a __grid_constant__ parameter: the driver copies
  // it at launch, so the runtime needs no device memory for maps.
  Type mapType = LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), 128);
  WalkResult r = root->walk([&](LLVM::LLVMFuncOp func) {
    auto maps = func->getAttrOfType<DenseI64ArrayAttr>(kTensorMapsAttr);
    if (!maps)
      return WalkResult::advance();
    for (int64_t i : maps.asArrayRef()) {
      if (i < 0 || i >= int64_t(func.getNumArguments()) ||
          !isa<LLVM::LLVMPointerType>(func.getArgument(i).getType())) {
        func.emitError() << kTensorMapsAttr << ": argument " << i
                         << " is not a pointer argument of the kernel";
        return WalkResult::interrupt();
      }
      func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(mapType));
      func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                      b.getI64IntegerAttr(64));
      func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                      b.getUnitAttr());
    }
    func->removeAttr(kTensorMapsAttr);
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

void loadTemplateDialects(MLIRContext *ctx) {
  ctx->getOrLoadDialect<arith::ArithDialect>();
  ctx->getOrLoadDialect<memref::MemRefDialect>();
  ctx->getOrLoadDialect<LLVM::LLVMDialect>();
  ctx->getOrLoadDialect<NVVM::NVVMDialect>();
  ctx->getOrLoadDialect<nvgpu::NVGPUDialect>();
  ctx->getOrLoadDialect<scf::SCFDialect>();
  ctx->getOrLoadDialect<vector::VectorDialect>();
}

mlir::gpu::GPUFuncOp createKernelFunc(OpBuilder &b,
                                      mlir::gpu::GPUModuleOp module,
                                      StringRef name, TypeRange args,
                                      int64_t threads) {
  b.setInsertionPointToEnd(module.getBody());
  auto func = mlir::gpu::GPUFuncOp::create(b, module.getLoc(), name,
                                           b.getFunctionType(args, {}));
  func->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(),
                b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

Value TemplateBuilder::swizzle(Value r, Value c, int64_t cpr) {
  if (cpr >= 8)
    return add(mul(r, cpr), bxor(c, band(r, 7)));
  Value lin = add(mul(r, cpr), c);
  Value line = arith::ShRUIOp::create(b, loc, lin, cst(3));
  return bxor(lin, band(line, 7));
}

std::pair<Value, Value> TemplateBuilder::groupedTile(Value pid, int64_t tilesM,
                                                     int64_t tilesN) {
  int64_t group = std::min<int64_t>(8, tilesM);
  Value groupId = div(pid, group * tilesN);
  Value firstM = mul(groupId, group);
  Value inGroup = rem(pid, group * tilesN);
  Value groupRows = arith::MinUIOp::create(
      b, loc, arith::SubIOp::create(b, loc, cst(tilesM), firstM), cst(group));
  Value pidM = add(firstM, arith::RemUIOp::create(b, loc, inGroup, groupRows));
  Value pidN = arith::DivUIOp::create(b, loc, inGroup, groupRows);
  return {pidM, pidN};
}

void TemplateBuilder::whenTrue(Value cond, llvm::function_ref<void()> body) {
  if (!cond)
    return body();
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  body();
}

Value TemplateBuilder::dynamicSharedMemory() {
  auto wg = mlir::gpu::AddressSpaceAttr::get(
      b.getContext(), mlir::gpu::GPUDialect::getWorkgroupAddressSpace());
  return mlir::gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), wg));
}

Value TemplateBuilder::sharedView(Value raw, int64_t elems, Type elemT,
                                  int64_t byteOff) {
  Attribute wg = cast<MemRefType>(raw.getType()).getMemorySpace();
  return memref::ViewOp::create(
      b, loc, MemRefType::get({elems}, elemT, MemRefLayoutAttrInterface(), wg),
      raw, cst(byteOff), ValueRange{});
}

void TemplateBuilder::ptx(StringRef text, StringRef cons, ValueRange args) {
  std::string c = cons.str();
  c += c.empty() ? "~{memory}" : ",~{memory}";
  LLVM::InlineAsmOp::create(b, loc, Type(), args, b.getStringAttr(text),
                            b.getStringAttr(c), b.getUnitAttr(), UnitAttr(),
                            LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(),
                            ArrayAttr());
}

void TemplateBuilder::waitParity(Value bar, Value parity) {
  ptx("{\n.reg .pred done;\nWAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
      "@!done bra WAIT;\n}",
      "r,r", ValueRange{bar, parity});
}

Value TemplateBuilder::commitGroup() {
  return nvgpu::DeviceAsyncCreateGroupOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), ValueRange{});
}

Value TemplateBuilder::mmaBf16(Value aFrag, Value bFrag, Value acc) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto regs = [&](Value v, int64_t n) {
    Value words =
        vector::BitCastOp::create(b, loc, VectorType::get({n, 1}, i32), v);
    SmallVector<Value> out;
    for (int64_t i = 0; i < n; ++i)
      out.push_back(
          vector::ExtractOp::create(b, loc, words, ArrayRef<int64_t>{i, 0}));
    return out;
  };
  SmallVector<Value> cRegs;
  for (int64_t i = 0; i < 4; ++i)
    cRegs.push_back(vector::ExtractOp::create(b, loc, acc,
                                              ArrayRef<int64_t>{i / 2, i % 2}));
  auto resT =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  Value d = NVVM::MmaOp::create(
      b, loc, resT, regs(aFrag, 4), regs(bFrag, 2), cRegs,
      ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> e;
  for (int64_t i = 0; i < 4; ++i)
    e.push_back(LLVM::ExtractValueOp::create(b, loc, d, ArrayRef<int64_t>{i}));
  return vector::FromElementsOp::create(b, loc, VectorType::get({2, 2}, f32),
                                        e);
}

Value TemplateBuilder::roundToTf32(Value frag) {
  auto vt = cast<VectorType>(frag.getType());
  auto flat = VectorType::get({vt.getNumElements()}, vt.getElementType());
  Value v = vector::ShapeCastOp::create(b, loc, flat, frag);
  SmallVector<Value> e;
  for (int64_t i = 0; i < flat.getNumElements(); ++i) {
    Value x = vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i});
    auto cvt = NVVM::ConvertFloatToTF32Op::create(b, loc, b.getI32Type(), x);
    cvt.setRnd(NVVM::FPRoundingMode::RNA);
    e.push_back(arith::BitcastOp::create(b, loc, b.getF32Type(), cvt));
  }
  return vector::ShapeCastOp::create(
      b, loc, vt, vector::FromElementsOp::create(b, loc, flat, e));
}

} // namespace tcc::gpu
