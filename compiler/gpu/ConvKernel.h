//===- ConvKernel.h - the tensor-core implicit-GEMM convolution -*- C++ -*-===//
//
// A channels-last convolution (tcc.conv2d {nhwc}, groups 1) as the GEMM
//   C[m][o] = sum_k A[m][k] * W[o][k]
// with m = (image, oy, ox) an output pixel, k = (ky, kx, channel) a window
// element and A gathered from the input on the fly: the GEMM template of
// MatmulKernel.h with its A copy replaced by the gather (GemmGather) and a
// bias and ReLU in its epilogue. The weight [O, KH, KW, C] is B stored
// [N][K], and C [N*OH*OW, O] row-major is the NHWC output.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_CONVKERNEL_H
#define TCC_COMPILER_GPU_CONVKERNEL_H

#include "compiler/gpu/MatmulKernel.h"
#include "compiler/gpu/WgmmaKernel.h"

#include <optional>
#include <vector>

namespace tcc::gpu {

/// One convolution: input [n, h, w, c], weight [o, kh, kw, c], optional bias
/// [o], output [n, outH(), outW(), o]. Pads are top, left, bottom, right.
struct ConvProblem {
  int64_t n = 1, h = 1, w = 1, c = 1, o = 1, kh = 1, kw = 1;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t groups = 1;
  /// Input and weight: bf16 or f16 (mma.sync m16n8k16), or f32 with
  /// allowTf32 (m16n8k8 tf32); accumulation is f32.
  mlir::Type inType, weightType;
  mlir::Type biasType; ///< null: no bias
  mlir::Type outType;  ///< f32, bf16 or f16
  /// A tensor of the output's shape added before the ReLU (a residual
  /// connection); null: none.
  mlir::Type residualType;
  bool relu = false;
  bool allowTf32 = false;
  /// The output is channels [outOffset, outOffset + o) of pixels outStride
  /// channels apart (a channel concat written in place); 0: its own buffer.
  int64_t outStride = 0, outOffset = 0;
  /// With relu: also store the value before the ReLU (GemmEpilogue).
  bool rawOut = false;
  /// Also store the output, whole, to a second buffer (GemmEpilogue): the
  /// slice of a concat other kernels read as well.
  bool copyOut = false;
  /// The output pixel-shuffled (depth to space, GemmEpilogue): output
  /// channel (r_h, r_w, c) of pixel (y, x) stored as channel c of pixel
  /// (y * shuffleH + r_h, x * shuffleW + r_w); 1, 1: none.
  int64_t shuffleH = 1, shuffleW = 1;

  int64_t outH() const {
    return (h + padTop + padBottom - dilationH * (kh - 1) - 1) / strideH + 1;
  }
  int64_t outW() const {
    return (w + padLeft + padRight - dilationW * (kw - 1) - 1) / strideW + 1;
  }
};

/// The GEMM view of `p` (M output pixels, N = O, K = KH*KW*C, B the weight
/// stored [N][K]) and its epilogue (bias, residual, ReLU).
MatmulProblem convGemm(const ConvProblem &p);
GemmEpilogue convEpilogue(const ConvProblem &p);

/// The tiling of the GEMM view (tileM output pixels x tileN output channels,
/// stepping over the window by tileK).
using ConvSchedule = MatmulSchedule;

/// Whether `p`'s sizes, strides, dilations and pads are sane and its output
/// not empty (shared by the convolution templates); `why` says what is not.
bool convWindowValid(const ConvProblem &p, std::string &why);

/// Whether buildConvKernel handles `p`; when not, `why` says why in a line.
bool convKernelSupports(const ConvProblem &p, std::string &why);

/// Whether `s` is a valid schedule for `p` on `target`.
bool convScheduleValid(const ConvProblem &p, const ConvSchedule &s,
                       const ::tcc::TargetDesc &target, std::string &why);

/// A heuristic schedule for `p` on `target`.
ConvSchedule chooseConvSchedule(const ConvProblem &p,
                                const ::tcc::TargetDesc &target);

/// Appends `gpu.func @name(%input, %weight, [%bias,] %out) kernel` to
/// `module`: identity-layout memrefs (the input 1-D, the weight
/// [1, O, KH*KW*C], the bias [O], the output [1, N*OH*OW, O]), each 16-byte
/// aligned. Fails with a diagnostic at the module when `p` or `s` is not
/// supported.
mlir::FailureOr<KernelLaunch> buildConvKernel(mlir::OpBuilder &b,
                                              mlir::gpu::GPUModuleOp module,
                                              llvm::StringRef name,
                                              const ConvProblem &p,
                                              const ConvSchedule &s);

/// On sm_90a, a schedule of the wgmma template for `p` (A gathered as
/// here) when it takes p and its tiles alone fill the multiprocessors; none:
/// the mma.sync template, which can split K, serves p better.
std::optional<WgmmaSchedule>
chooseWgmmaConvSchedule(const ConvProblem &p, const ::tcc::TargetDesc &target,
                        bool tma = true);

/// Whether buildWgmmaConvKernel takes `p` with `s` on `target` (f32 only as
/// tf32); `why` says why not.
bool wgmmaConvScheduleValid(const ConvProblem &p, const WgmmaSchedule &s,
                            const ::tcc::TargetDesc &target, std::string &why);

/// The convolution templates' schedule spaces for `p` on `target`, as the
/// matmul ones (wgmmaScheduleSpace, matmulScheduleSpace): wgmma's knobs
/// and its TMA copies (`tma`) that wgmmaConvScheduleValid accepts, and the
/// mma.sync template's that convScheduleValid accepts. A tuning record
/// names a point of them; tuning searches them.
std::vector<WgmmaSchedule>
wgmmaConvScheduleSpace(const ConvProblem &p, const ::tcc::TargetDesc &target);
std::vector<ConvSchedule> convScheduleSpace(const ConvProblem &p,
                                            const ::tcc::TargetDesc &target);

/// buildConvKernel on the wgmma template (sm_90a) with schedule `s`: the
/// same arguments and results.
mlir::FailureOr<KernelLaunch>
buildWgmmaConvKernel(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                     llvm::StringRef name, const ConvProblem &p,
                     const WgmmaSchedule &s);

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_CONVKERNEL_H
