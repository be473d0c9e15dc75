//===- Passes.td - passes that consult the GPU templates ---*- tablegen -*-===//
//
// Passes that ask the kernel templates of compiler/gpu (what they support,
// which schedule they choose) live beside them: passes/ does not depend on
// the templates.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_COMPILER_GPU_PASSES_TD
#define TCC_COMPILER_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TccGpuAttentionPlan : Pass<"tcc-gpu-attention-plan", "func::FuncOp"> {
  let summary = "Choose the template and schedule of each attention chain";
  let description = [{
    For every chain marked `tcc.attention` (tcc-gpu-attention-chains), the
    attention problem (compiler/gpu/AttentionPlan.h) is given to the
    templates: f32 takes the SIMT template; bf16 and f16 the split-K decode
    pair for few query rows against many keys, else wgmma where the target
    has it and the template takes the problem, else mma.sync. The choice is
    set on the chain as `tcc.attention_plan` (tcc-form-attention then
    forms the op that carries it), one of the typed attributes
    `#tcc.mma_attention`, `#tcc.mma_decode`, `#tcc.wgmma_attention`,
    `#tcc.simt_attention` carrying the template's schedule; GpuCodegen builds
    what it says. A chain that already has a plan (given by hand) is
    checked instead: a plan the templates cannot build is an error. With
    `schedule` (the user's --schedule), the plan is then changed as it says
    (another template, some of its fields) and checked: one the templates
    cannot build is an error naming why. A chain
    no template takes keeps no plan and runs as generic loops, with a remark
    "attention not fused: REASON" (tcc compile --explain).
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"sm_90\"",
           "The code target (tcc compile --target)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"",
           "A user schedule for every attention chain: the JSON object of "
           "--schedule's \"attention\" entry (docs/cli.md)">,
  ];
  // The problem is built from a tcc.attention op formed for the while,
  // whose regions hold arith, math and tensor ops.
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TccGpuTensorMapArgs
    : Pass<"tcc-gpu-tensor-map-args", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Pass a kernel's TMA descriptors by value, as grid constants";
  let description = [{
    After lowering to the LLVM dialect, the arguments of a kernel
    `llvm.func` listed in its `tcc.tensor_maps` attribute (argument
    indices, set by a template that copies tiles with the tensor memory
    accelerator) become 128-byte aggregates passed by value and kept in
    parameter space: `llvm.byval = !llvm.array<128 x i8>`, `llvm.align =
    64` and `nvvm.grid_constant`. The NVPTX back end then declares them
    `.param .align 64 .b8 [128]` and hands `cp.async.bulk.tensor` their
    generic address (`cvta.param`), as a `__grid_constant__ CUtensorMap`;
    the runtime encodes the maps and passes them at launch (manifest
    `tensor_maps`, docs/bundle-format.md). The conversion to the LLVM
    dialect drops `llvm.byval` from `gpu.func` arguments and refuses
    `nvvm.grid_constant` there, hence a pass after it. The attribute is
    removed; a listed argument that is not an `!llvm.ptr`, or an index out
    of range, is an error.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

#endif // TCC_COMPILER_GPU_PASSES_TD
