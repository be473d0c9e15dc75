//===- Passes.td - tcc passes ------------------------------*- tablegen -*-===//
#ifndef TCC_PASSES_TD
#define TCC_PASSES_TD

include "mlir/Pass/PassBase.td"

def TccFormChains : Pass<"tcc-form-chains", "func::FuncOp"> {
  let summary = "Wrap each reduction chain along one axis in a tcc.chain";
  let description = [{
    Finds reductions over one axis of one shape where a later reduction, or
    a matmul contracting that axis, reads an earlier reduction's result
    through elementwise ops (softmax, log-softmax, log-sum-exp, layer and
    RMS norm, cross-entropy, attention's max → sum → P·V), by dataflow on
    primitives. Each maximal chain becomes one `tcc.chain {axis}` holding
    the reductions, the elementwise ops after them that stay in the chain's
    shape, and a prologue of ops read only by the chain (elementwise ops, or
    a matmul producing the reduced tensor such as q·kᵀ). Matmuls join only
    when batched like the chain (per-head operands, as in attention): a
    weight shared by every row stays a GEMM kernel. With
    `unbatched-attention`, 2-D matmuls join a 2-D chain when it holds both
    of attention's with softmax's exp between them (single-head attention,
    [L, D]). With `remark-unfused-attention`, attention whose head size is
    over `max-matmul-extent` (its Q·Kᵀ and P·V stay GEMMs) gets a remark
    "attention not fused: head size N is over MAX, the largest the
    attention templates take". Its results are the
    values used outside. A member that would read a chain value through ops
    left outside (a cycle) is left out.
  }];
  let options = [
    Option<"maxMatmulExtent", "max-matmul-extent", "int64_t",
           /*default=*/"256",
           "Largest contraction of a producer matmul, and largest free "
           "extent of a consumer matmul, that a chain takes in (larger "
           "ones stay GEMM kernels)">,
    Option<"unbatchedAttention", "unbatched-attention", "bool",
           /*default=*/"false",
           "Let matmuls of 2-D operands join a chain over a 2-D space when "
           "both of attention's are there (scores produced by one, P.V "
           "contracting the keys in another, softmax's exp between them): "
           "single-head attention [L, D] for the GPU attention templates. "
           "A 2-D matmul alone (a linear layer before or after a softmax) "
           "stays out">,
    Option<"remarkUnfusedAttention", "remark-unfused-attention", "bool",
           /*default=*/"false",
           "Emit a remark \"attention not fused: head size N is over "
           "MAX, ...\" when a chain with softmax's exp leaves out attention's "
           "Q.K^T or P.V only because the head size is over "
           "max-matmul-extent (GPU targets that fuse attention: tcc compile "
           "--explain prints it)">
  ];
  let dependentDialects = ["::mlir::tcc::TccDialect"];
}

def TccFormGroups : Pass<"tcc-form-groups", "func::FuncOp"> {
  let summary = "Wrap the ops of each future kernel in a tcc.group";
  let description = [{
    Decides what becomes one kernel, for every target: chains of elementwise
    and data-movement ops fuse into one group; a reduction takes in the
    elementwise ops that only feed it; heavy ops (matmul, convolution,
    pooling, gathers, top-k) take in the elementwise ops that only consume
    them. With `row-members` (GPU targets, whose row kernels compute them
    beside the chain: tcc-gpu-row-fusion), a reduction chain also takes in
    the gathers of one value a row it reads, their index checks, and the
    reductions of its per-row results to one value (a loss's mean).
  }];
  let options = [
    Option<"rowMembers", "row-members", "bool", /*default=*/"false",
           "Chains take in their per-row gathers, index checks and whole "
           "reductions of per-row results">
  ];
  let dependentDialects = ["::mlir::tcc::TccDialect"];
}

def TccOutlineGroups : Pass<"tcc-outline-groups", "ModuleOp"> {
  let summary = "Turn each tcc.group into a kernel function and a call";
  let description = [{
    Each `tcc.group` in a function marked `tcc.entry` becomes a private
    `func.func` marked `tcc.kernel` (captured values become arguments, in
    order of first use), and the group becomes a `func.call` to it. The entry
    function is then the launch sequence the bundle writer reads.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def TccViewKernels : Pass<"tcc-view-kernels", "ModuleOp"> {
  let summary = "Reshapes of kernel arguments launch nothing";
  let description = [{
    After tcc-outline-groups. A kernel result that is its argument through
    `tcc.reshape`s alone (a flatten before a classifier, a flat view
    reshaped back; alone in its kernel, or beside the kernel's other
    results) only copies bytes in their order. It moves into a kernel of
    its own, marked `tcc.view` (a kernel of one argument and one such
    result is marked where it is), which launches nothing: the bundle
    writer gives its result the argument's buffer. The kernel it came from
    loses the result, and an argument nothing else reads; one left without
    results is erased. Not where the caller returns the result (a model
    output or an init result has a buffer of its own), nor in a kernel
    called more than once or storing into a concat (`tcc.out_slice`).
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def TccConcatInPlace : Pass<"tcc-concat-in-place", "ModuleOp"> {
  let summary = "Convolutions store into the channel concat that reads them";
  let description = [{
    After tcc-outline-groups, on targets whose convolution templates store
    into a slice of a wider buffer (NVIDIA sm_80 and later). A call in the
    entry function to a kernel that is only a channel concat (last axis,
    NHWC) of its arguments, each the one-use result of a kernel that is a
    channels-last f16/bf16 convolution (groups 1) with at most a residual
    add and a ReLU after it: each such kernel gets
    `tcc.out_slice = array<i64: offset, channels>` (it stores its result
    into channels [offset, offset + its channels) of pixels `channels`
    apart), the concat's kernel `tcc.concat_in_place` (it launches nothing;
    the bundle writer gives its result and its inputs one buffer). A
    convolution whose result other kernels read too returns it twice (its
    own buffer, then the concat's channels; the template stores both). An
    input that is a depth to space of a convolution's one-use result
    (reshape, transpose (0, 1, 3, 2, 4, 5), reshape: a sub-pixel
    up-convolution's interleave) moves into that convolution's kernel, whose
    template stores each pixel where the interleave puts it. All inputs or
    none; offsets, the concat's channels and a shuffled input's channels
    multiples of 8 (the templates' 16-byte stores), each kernel called once.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def TccDedupKernels : Pass<"tcc-dedup-kernels", "ModuleOp"> {
  let summary = "Merge kernel functions that are equal but for their name";
  let description = [{
    After tcc-outline-groups, repeated blocks of a model are kernel
    functions with identical bodies. Of each class of `tcc.kernel` functions
    equal but for their symbol name (function type, argument, result and
    function attributes such as `tcc.kind`, and the body op for op with its
    attributes and types; locations are not compared), the first in the
    module stays and every reference to the others (the launch sequences'
    calls) is pointed at it; the others are erased. Code generation then
    compiles each distinct kernel once.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def TccLowerToLinalg : Pass<"tcc-lower-to-linalg", "func::FuncOp"> {
  let summary = "Lower tcc ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Target-independent lowering of every tcc op. f16, bf16 and f8 arithmetic
    computes in f32 and rounds each op's result to its dtype; reductions and
    contractions accumulate in f32 (i32/i64 for integers). The output uses
    only ops that one-shot bufferization and the host and GPU code generators
    handle.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::bufferization::BufferizationDialect"
  ];
}

def TccHostRegionTiles : Pass<"tcc-host-region-tiles", "func::FuncOp"> {
  let summary = "A host region kernel as a loop over its output tiles";
  let description = [{
    On a kernel function of kind "region" (a chain of convolutions and max
    pools with their epilogues, region::isHostChain), on tensors: lowers the
    convolutions (groups 1 or depthwise) and max pools to linalg generics
    reading an explicit tensor.pad of their input, the other ops through the
    tcc-to-linalg patterns, then tiles the kernel's result over batch (1) and
    H x W (the group's `tcc.region_plan` tile, else `tile-h` x `tile-w`) and
    fuses every producer into the tile loop
    (scf::tileConsumerAndFuseProducersUsingSCF): each member is computed per
    tile over the halo its consumer needs, intermediates stay per tile. Marks
    the function `tcc.region_tiles` for tcc-host-region-grid.
  }];
  let options = [
    Option<"tileH", "tile-h", "int64_t", /*default=*/"8",
           "Output tile rows when the group has no plan">,
    Option<"tileW", "tile-w", "int64_t", /*default=*/"8",
           "Output tile columns when the group has no plan">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def TccHostRegionGrid : Pass<"tcc-host-region-grid", "func::FuncOp"> {
  let summary = "A host region kernel's tile loop split over the grid";
  let description = [{
    After tcc-partition-grid, on a function marked `tcc.region_tiles`: the
    outermost loop of its tile loop nest with more than one iteration runs
    iterations [begin, end) (the arguments tcc-partition-grid appended), and
    `tcc.grid` becomes its trip count, so the runtime's threads compute
    disjoint output tiles.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TccPartitionGrid : Pass<"tcc-partition-grid", "func::FuncOp"> {
  let summary = "Split a bufferized kernel's work into a grid of row ranges";
  let description = [{
    On a kernel function (`tcc.kernel`) after bufferization: appends two
    `index` arguments, `begin` and `end`, and sets `tcc.grid = N`, so that a
    call with [begin, end) computes rows begin..end-1 of one loop dimension
    and calls on disjoint ranges may run at once. Every linalg op that writes
    a kernel argument is restricted to the range along a parallel loop
    dimension that reaches each of its operands as a plain index; ops that
    write only kernel-local buffers run whole in every call. The choice is
    refused (grid 1, the whole range ignored) when a restricted op's output
    is read along another dimension, when an op writes a view of an
    argument, when the kernel holds ops other than linalg, allocations and
    views, or when the work is below `min-work` iterations.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"32768",
           "Smallest iteration count worth splitting">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def TccMapToGpu : Pass<"tcc-map-to-gpu", "func::FuncOp"> {
  let summary = "Turn a bufferized kernel's loops into gpu.launch ops";
  let description = [{
    Runs on kernel functions (`tcc.kernel`) whose linalg ops have become
    loops. Each top-level `scf.parallel` becomes one `gpu.launch` over its
    iterations flattened into one dimension (the innermost loop dimension
    varies fastest across threads, so neighbouring threads touch neighbouring
    elements): blocks of `block-size` threads, each thread computing one
    iteration after a bounds check. Any other top-level op that reads or
    writes memory (a loop of a whole-tensor reduction, a store) runs in a
    launch of one thread. Allocations, constants and views stay outside;
    the pure ops a launch uses are sunk into it, so that after
    `gpu-kernel-outlining` a kernel's operands are buffers only.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block of a parallel loop's launch">,
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"16",
           "Bytes of the narrowest element type a thread handles at once, "
           "in consecutive iterations of the innermost loop (1: one "
           "iteration a thread)">,
    Option<"vectorAccesses", "vector-accesses", "bool", /*default=*/"true",
           "A thread's contiguous run of accesses as one aligned vector "
           "load or store where that is proven (false: the clones' "
           "scalar accesses, left to LLVM's load-store vectorizer)">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def TccGpuColumnChains : Pass<"tcc-gpu-column-chains", "func::FuncOp"> {
  let summary = "A chain along a non-innermost axis as one GPU launch, and "
                "rows too long for a row kernel split over blocks";
  let description = [{
    Runs on bufferized kernel functions (`tcc.kernel`) after
    tcc-gpu-row-fusion, on kernels that are one reduction chain along one
    loop: every op a `linalg.generic` over the chain's loops (elementwise,
    or reducing the chain's loop) or over its columns (the chain's loop of
    extent 1), with fills and views of unit dims.

    A chain along a loop that is not the innermost (softmax over the
    channels of [N, C, H, W], over axis 1 of [B, L, D]) becomes one
    `gpu.launch` in which a column (the positions along the chain's loop
    at fixed other loops) belongs to one lane of one to 32 warps: the
    lanes of a warp take consecutive columns (coalesced reads), the warps
    of a column consecutive slices of it. A reduction is one pass over the
    slice from the combiner's neutral element; the warps' partial values
    meet in shared memory and are combined, in warp order, with the
    output's initial value. A max (or min) and the float sum after it
    whose shares are exp(k·(max - v))·h (softmax, log-softmax) are one
    pass: the running sum is scaled by exp(k·(m_new - m_old)) where the
    running max moves. Elementwise values are recomputed where they are
    read, from the inputs, so nothing but the kernel's results is
    written: a softmax reads its input twice and writes once, where the
    generic mapping ran a launch per op with the intermediates in memory.
    Columns too few to fill the GPU split their positions into parts over
    blocks too, run as long rows are (below).

    A chain along the innermost loop that tcc-gpu-row-fusion left (rows
    longer than a cluster of blocks holds) of at least `min-row-length`
    positions is split over blocks: a launch for each reduction (or
    paired max and sum) in which the blocks of a row each reduce a part of
    it to a partial value, and a last launch that writes the results,
    each launch combining the partials of the reductions before it.
  }];
  let options = [
    Option<"minColumns", "min-columns", "int64_t", /*default=*/"32",
           "The fewest consecutive columns (the innermost loops' extent) "
           "a chain needs to be taken">,
    Option<"minRowLength", "min-row-length", "int64_t", /*default=*/"16384",
           "The shortest row (a chain along the innermost loop) split over "
           "blocks, where tcc-gpu-row-fusion left it">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TccGpuRowReductions : Pass<"tcc-gpu-row-reductions", "func::FuncOp"> {
  let summary = "Reduce along contiguous rows with cooperating GPU threads";
  let description = [{
    Runs on bufferized kernel functions (`tcc.kernel`) before their linalg
    ops become loops. A `linalg.generic` with one output that it combines
    with one arith op (add, mul, max, min, and, or, xor), whose reduction
    dimensions are its innermost loops and which every input reads along the
    innermost one contiguously (loops of extent 1 left out of both: the
    rows of [N, 1] summed are one row), becomes a `gpu.launch` in which the threads
    of a warp (short rows) or of a block (long rows) share one output
    element: each accumulates a strided part of the row, coalesced with its
    neighbours, from the combiner's neutral element; the partial values are
    combined by warp shuffles (and shared memory across the warps of a
    block), then with the output's initial value. The combination order
    differs from a sequential loop's, as on any parallel machine.
    A reduction whose reduced loops are not innermost (a mean over H and W
    of [N, H, W, C]) gets its parallel loops moved outermost instead, so
    that the generic mapping gives each output element a thread.
  }];
  let options = [
    Option<"blockRowLength", "block-row-length", "int64_t",
           /*default=*/"1024",
           "Rows at least this long get a block of threads, shorter a warp">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TccGpuAttentionChains : Pass<"tcc-gpu-attention-chains", "func::FuncOp"> {
  let summary = "Dissolve chains with matmuls the GPU attention kernel does not take";
  let description = [{
    On GPU targets, after tcc-form-chains has formed chains that include
    attention's matmuls: a chain that is attention the fused attention
    template computes (passes/AttentionMatch.h: Q·Kᵀ, score changes of
    positions and constants, softmax, P·V, bf16 or f16, head size 64 or
    128, Q, K and V from outside the chain; masks of positions computed
    outside are cloned in first) stays, marked
    `tcc.attention` (tcc-form-groups then gives it a kernel of its own); any
    other chain holding a matmul is dissolved into the function, so that
    tcc-form-chains, run again without matmuls, forms it anew and the
    matmuls get the GEMM template.
  }];
}

def TccFormAttention : Pass<"tcc-form-attention", "func::FuncOp"> {
  let summary = "Replace each planned attention chain by tcc.attention";
  let description = [{
    A chain marked `tcc.attention` that has a plan (`tcc.attention_plan`,
    tcc-gpu-attention-plan) becomes one `tcc.attention` op carrying the
    plan: Q, K, V and the captured tensors as operands (the layout
    transposes and the GQA repeats folded into strides and `kv_heads` as
    passes/AttentionMatch.h matches them), the mask's linear constraints
    and the score change as regions of scalar code the templates
    instantiate per score (ir/TccOps.td). The compiler runs it right after
    tcc-gpu-attention-chains and tcc-gpu-attention-plan: the passes after it
    see attention as this op (tcc-form-groups gives it a kernel alone),
    and GpuCodegen builds the planned templates from it, matching nothing
    again. A planned chain that does not match as attention (changed after
    it was planned) is an error; a marked chain without a plan (no
    template takes it: tcc-gpu-attention-plan said why in a remark) stays
    a chain and runs as generic loops.
  }];
  let dependentDialects = ["::mlir::tcc::TccDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TccGpuRowFusion : Pass<"tcc-gpu-row-fusion", "func::FuncOp"> {
  let summary = "Run a kernel of row-wise ops as one GPU launch, the row in registers";
  let description = [{
    Runs on bufferized kernel functions (`tcc.kernel`) before their linalg
    ops become loops. When every linalg op of a kernel works row by row (its
    leading parallel loops walk the same rows, the rest a row of one length,
    or nothing: a per-row value) and there is at least one reduction along
    the row (softmax, a norm: the rows and the length come from the
    reductions), the kernel becomes one `gpu.launch` in which a group of
    threads owns a row: a warp or less for short rows (several rows a
    block), a block for long ones. Every op places the row's positions on
    the same threads, a 16-byte vector of them at a time, so the row and
    every kernel-local buffer stay in registers: each input row is read
    from memory once and each output written once. Reductions combine by
    shuffles and, across warps, through shared memory. With `max-cluster`,
    a row longer than a block of 1024 threads holds (32 values a thread)
    spans the blocks of a cluster, which combine their reductions through
    distributed shared memory. Reductions of per-row values to one value
    (a loss's mean, an index check) run in the launch too: each block
    writes its partial, and the last block to finish (a counter, zeroed
    before the launch) combines them, in a fixed order, and runs the
    single-value ops that follow (a mean's division). A buffer shared
    across rows, a write every group would make, a row longer than that,
    or any other op leaves the kernel to the other GPU passes.
  }];
  let options = [
    Option<"valuesPerThread", "values-per-thread", "int64_t", /*default=*/"0",
           "Row values a thread holds (at most 64): fewer threads a row, "
           "more loads in flight each; 0 chooses (16, at most 4 on rows "
           "shorter than that)">,
    Option<"maxCluster", "max-cluster", "int64_t", /*default=*/"1",
           "Blocks of a cluster a row may span (NVIDIA sm_90 and later: "
           "rows longer than a block's registers hold, the reductions "
           "combined through distributed shared memory); 1: none">,
    Option<"clusterThreads", "cluster-threads", "int64_t", /*default=*/"256",
           "Threads a block of a row's cluster has at least (256, 512 or "
           "1024: twice as many where a cluster of 8 such blocks cannot "
           "hold the row)">,
    Option<"syncScope", "sync-scope", "std::string", /*default=*/"\"\"",
           "LLVM's name of the GPU's device scope for the fences of the "
           "last block's count (\"device\" on NVPTX, \"agent\" on AMDGPU; "
           "empty: the system's, always correct, slower)">,
    Option<"lastBlock", "last-block", "bool", /*default=*/"true",
           "Reductions of per-row values finish in the launch's last block "
           "(rows of one block or fewer); false: the partials are combined "
           "after the launch, and the single-value ops after them run as "
           "launches of their own">,
    Option<"pairRounds", "pair-rounds", "bool", /*default=*/"true",
           "Over a row's cluster, a max and the sum of exponentials after "
           "it (softmax's) combine in one round of (max, sum) pairs, each "
           "block's sum corrected by its max; false: a round each">,
    Option<"streamRows", "stream-rows", "bool", /*default=*/"false",
           "A kernel that writes no rows and whose row values only a max "
           "and the sum of exponentials after it read (a loss) streams a "
           "row longer than a block's registers hold through one block, "
           "chunk by chunk, each thread keeping a running (max, sum) pair, "
           "instead of spanning a cluster or a block of 1024 threads (rows "
           "read in vectors of 4 or more; tcc compile turns it on)">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def TccGpuOccupancy : Pass<"tcc-gpu-occupancy", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Ask ptxas for full residency of large-block generic kernels";
  let description = [{
    After outlining, on NVIDIA targets: every kernel whose known block
    size has at least 256 threads and no residency request of its own gets
    `nvvm.minctasm` (PTX `.minnctapersm`) so that ptxas fits as many of its
    blocks on a multiprocessor as the thread limit allows. The generic
    kernels (elementwise ops, row kernels) are bound by memory, where the
    bytes in flight scale with resident threads: left alone, ptxas gave
    layer norm's 512-thread row kernel 36 registers, which leaves 3 blocks
    a multiprocessor instead of 4. By default, kernels with math that
    lowers to sequences with temporaries (exp, log, tanh: softmax) are left
    alone, as they spill when held to the registers of full residency, and
    so are kernels whose values loaded in straight-line code need more
    registers than full residency leaves (16 scalar loads a thread: layer
    norm over rows not a multiple of 4). Template kernels (GEMM, attention) are built after this pass and choose
    their own residency.
  }];
  let options = [
    Option<"blocksPerSm", "blocks-per-sm", "int64_t", /*default=*/"0",
           "0: as many blocks as threads-per-sm allows; N > 0: N blocks "
           "(capped by threads-per-sm); -1: no request">,
    Option<"threadsPerSm", "threads-per-sm", "int64_t", /*default=*/"2048",
           "Resident threads a multiprocessor holds (2048 on sm_80/sm_90)">
  ];
}

def TccGpuAlignGlobals
    : Pass<"tcc-gpu-align-globals", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Give every device global an explicit 16-byte alignment";
  let description = [{
    After lowering to the LLVM dialect, every `llvm.mlir.global` of a GPU
    module (workgroup arrays above all) whose alignment is absent or below
    16 bytes gets 16. LLVM assumes an unaligned global larger than 16 bytes
    starts at 16 bytes and merges loads from it into 16-byte vectors, while
    the NVPTX printer places it at its element's alignment: a row kernel's
    second per-warp partial array started at byte 40 and its `ld.shared.v4`
    faulted (misaligned address). With the alignment explicit, what LLVM
    assumes is what the code object declares. The cost is at most 12 bytes
    of padding per array.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TccHostCheckedAlloc : Pass<"tcc-host-checked-alloc", "::mlir::ModuleOp"> {
  let summary = "Turn a failed scratch allocation of a host kernel into an error";
  let description = [{
    After lowering host kernels to the LLVM dialect: every call to `malloc`
    or `aligned_alloc` (kernel scratch, from memref.alloc) is followed by a
    null check. On null, the kernel stores the requested size into the
    exported i64 `tcc_scratch_failure` (atomically, the largest failed
    request wins) and returns. The runtime reads that symbol after each
    launch and fails the run with "could not allocate N bytes of scratch
    memory" instead of the process dying on a write through null.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TccGpuL2Policy : Pass<"tcc-gpu-l2-policy", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Load the rows of memory-bound row kernels with L2 evict_last";
  let description = [{
    After lowering to the LLVM and NVVM dialects, on NVIDIA targets: in
    every kernel that tcc-gpu-occupancy judged a memory-bound stream (it
    carries `nvvm.minctasm`) and that reduces across its block (it has a
    barrier), each 16-byte load becomes `ld.global.L2::cache_hint` with an
    `L2::evict_last` policy (inline PTX: neither the LLVM nor the NVVM
    dialect has a load with a cache policy). Measured on the H200 over
    16384x8192 bf16: RMS norm 0.1333 -> 0.1292 ms, torch.compile's kernel
    (which loads the same way) 0.1293, layer norm 0.1329 -> 0.1324; softmax
    lost 0.5% with it and is not selected (it has no residency request).
    Hints that evict the input early (`evict_first`, `L1::no_allocate`,
    `.nc`, streaming stores) all made RMS norm 4-5% slower.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TccGpuGridDependency
    : Pass<"tcc-gpu-grid-dependency", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Let each kernel launch while the kernel before it runs";
  let description = [{
    After lowering to the LLVM and NVVM dialects, on NVIDIA targets from
    sm_90 (programmatic dependent launch): every kernel `llvm.func` begins,
    after its leading allocas, with `griddepcontrol.wait` (it blocks until
    the grids it depends on have finished and their writes are visible),
    and is marked `tcc.grid_dependency`. The runtime launches a marked
    kernel that directly follows another kernel with CUDA's programmatic
    stream serialization: its blocks start as the previous kernel's last
    block exits, without waiting for that grid's completion to travel back
    through the stream (docs/architecture.md, "Grid dependency control"). Since every kernel waits before it touches
    memory, a kernel's grid ends only after its predecessor's, and the
    order of the whole stream is kept. The instructions are inline PTX with
    a memory clobber: the NVVM intrinsics are modelled as touching no memory,
    which would let loads move above the wait. A kernel that is already
    marked is left alone. With `early-trigger`, the wait is followed by
    `griddepcontrol.launch_dependents`: the next kernel may launch once
    every block of this one has started, and its blocks then crowd onto the
    multiprocessors that free up first (on the H200, U-Net 0.99 ms against
    0.77 serial, NASNet-A Large 5.10 against 4.65); without it, the next
    kernel launches as the last block exits (U-Net 0.755, NASNet 4.50,
    GoogLeNet 0.316 against 0.354 serial).
  }];
  let options = [
    Option<"earlyTrigger", "early-trigger", "bool", /*default=*/"false",
           "Trigger the next kernel's launch right after the wait">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TccFuseElementwise : Pass<"tcc-fuse-elementwise", "func::FuncOp"> {
  let summary = "Fuse clusters of elementwise linalg.generic ops in one step";
  let description = [{
    After lowering to linalg: all-parallel generics on tensors that read
    each other's values through permutations (the same element), or that
    share an iteration domain, become one generic per cluster, built in one
    step (each member's body cloned once), whose results are the values read
    outside. A value read twice stays in registers instead of a temporary
    buffer. A value read by an op outside the cluster closes the cluster
    there, so the fused op comes before every use of its results. A generic
    whose only use is a consumer that cannot join (a reduction) stays out:
    pairwise elementwise fusion makes it that consumer's prologue. Linear in
    the number of ops, where pairwise fusion of an N-op chain copies O(N^2)
    ops. First, a tensor.extract of an element-wise generic's result inside
    a parallel generic (a concat, a slice, a gather reading it) becomes the
    producer's body at that element (bodies of at most 64 ops); a generic
    that reads only kernel arguments that way may join a cluster (RoPE's
    rotate_half, a concat of a negated slice, then the products and the
    sum: one loop). After the clusters, a small generic computed from loop indices
    and scalars alone (a causal mask of iotas, [L, L]) that another generic
    reads through a broadcast (scores [B, H, L, L]) is recomputed in that
    reader (cloned first if it has other readers): the reader no longer
    reads an operand of another shape, so a masked softmax stays one row
    kernel.
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"1000",
           "Largest number of scalar ops in a fused body: a cluster is "
           "closed when it reaches this (LLVM's code generation is "
           "super-linear in the size of one basic block)">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def TccPrivateInits : Pass<"tcc-private-inits", "func::FuncOp"> {
  let summary = "Give every destination-passing op its own fill or empty init";
  let description = [{
    Before one-shot bufferization: when ops start from the same filled (or
    empty) tensor, as two matmuls from one zero fill after CSE, each gets a
    clone of its own. Shared, empty-tensor elimination places the fill in
    one op's destination buffer, and the other op can then read that buffer
    after the first wrote it: with MLIR 22, the second output of such a
    kernel held the first product.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TccChainFusion : Pass<"tcc-chain-fusion", "func::FuncOp"> {
  let summary = "Rewrite reduction chains into rolling or split-K forms";
  let description = [{
    On each `tcc.chain` (after tcc-form-chains): derives, from the chain's
    scalar ops, how each reduction's accumulator is corrected when an
    earlier running value changes (passes/ChainAlgebra.h), then rewrites the
    reductions so that the axis is read in chunks: `rolling` (an scf.for
    over chunks carrying running values and accumulators, one pass) or
    `splitk` (all chunks reduced at once along a new leading dimension,
    then a combine step). The ops after the reductions read the final
    values unchanged. A chain whose corrections cannot be derived is left
    as it is, with a warning naming the op and the failed condition.
    docs/fusion.md states the rules and the cost model.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"auto\"",
           "auto (cost model), off, rolling or splitk">,
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"0",
           "Elements of a chunk along the axis (0: chosen; 256 for "
           "rolling)">,
    Option<"minRows", "min-rows", "int64_t", /*default=*/"64",
           "auto: rows (the chain's other dimensions) from which rolling "
           "is chosen over split-K">,
    Option<"parallelism", "parallelism", "int64_t", /*default=*/"256",
           "auto split-K: rows × chunks to aim for">,
    Option<"matmulChainsOnly", "matmul-chains-only", "bool",
           /*default=*/"false",
           "auto: fuse only chains holding a matmul (attention), where "
           "chunks keep the scores in cache; on the host the unfused row "
           "kernel of softmax and norms is faster (docs/fusion.md)">
  ];
  let dependentDialects = ["::mlir::tcc::TccDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TccExpandPrecisionPlans
    : Pass<"tcc-expand-precision-plans", "func::FuncOp"> {
  let summary = "Write a planned matmul out as the quantized matmuls it "
                "stands for";
  let description = [{
    Each tcc.planned_matmul becomes, per precision of its plan, the row
    blocks of A and the column blocks of B rounded to that precision (f16,
    f8 and i8 scaled per block by its largest magnitude first), a tcc.matmul
    of them accumulating in f32 (i32 for i8), the scales multiplied back,
    and a select of each tile's precision by its code (docs/precision.md).
    With `tile-kernels` (sm_90a), a precision the wgmma template takes
    becomes a tcc.tile_matmul instead: only its tiles computed, the scales
    in the GEMM's epilogue.
  }];
  let options = [
    Option<"tileKernels", "tile-kernels", "bool", "false",
           "Emit tcc.tile_matmul for the precisions the wgmma template takes">,
  ];
  let dependentDialects = ["::mlir::tcc::TccDialect"];
}

def TccBatchReshapes : Pass<"tcc-batch-reshapes", "func::FuncOp"> {
  let summary = "Move reshapes of batch axes out of matmul chains";
  let description = [{
    A batch reshape keeps the last two axes and regroups the ones before
    (both sides of rank 3 or more): [B*H, L, S] <-> [B, H, L, S]. Merges move
    towards the outputs past element-wise ops, keepdims reductions over the
    last two axes and matmuls whose left operand is the merge
    (f(merge(x), y) -> merge(f(x, split(y)))); splits move towards the inputs
    past such ops when they are the op's one use, and past transposes that
    keep the batch axes, where those ops lead to a matmul or to a merge the
    split cancels, or the split is read by matmuls only (an operand's view:
    K transposed for torch.bmm), and each reads its batch axes once (a split after P·V,
    whose way up meets the softmax's values read twice, stays: the
    attention op writes through it). Operands broadcast along every batch axis (rank 2 or
    less, or batch axes of 1) stay as they are; an op with an operand
    broadcast along some batch axes stays where it is, and so does a merge
    of a broadcast (K and V repeated over grouped heads, which the attention
    match reads as written). Reshape pairs fold.
    Attention written over flattened heads (torch.bmm) becomes one chain
    over [B, H] whose Q, K and V are reshapes of the inputs. A reshape that
    keeps only the last axis ([B, H, L, S] as [B*H*L, S]: a flat view of
    rows) moves towards the outputs past element-wise ops and keepdims
    reductions over the last axis (other operands with its rows reshaped,
    broadcast ones as they are) where every way down from it ends at the
    reshape back and one such leads to a matmul's left operand (P of P V,
    through element-wise ops): it folds with the reshape back, and a softmax written over a flat view of
    attention's scores runs over [B, H, L, S].
  }];
  let dependentDialects = ["::mlir::tcc::TccDialect"];
}

def TccFoldBatchNorm : Pass<"tcc-fold-batch-norm", "func::FuncOp"> {
  let summary = "Fold inference batch norms into the convolution before them";
  let description = [{
    batch_norm(conv2d(x, w, b)) becomes conv2d(x, w * s[o], (b - mean) * s +
    beta) with s = scale * rsqrt(var + eps), when the convolution's result
    feeds only the batch norm (NCHW, or an `nhwc` convolution whose result
    is transposed back to NCHW for the batch norm). The new weight and bias
    are tcc ops on the params, computed in f32 for f16/bf16 and rounded once
    to the weight's type (docs/numerics.md).
  }];
  let dependentDialects = ["::mlir::tcc::TccDialect"];
}

def TccConvLayout : Pass<"tcc-conv-layout", "func::FuncOp"> {
  let summary = "Channels-last convolutions, their transposes moved to the "
                "graph's edges";
  let description = [{
    Rewrites NCHW conv2d to the `nhwc` form: the input transposed NCHW ->
    NHWC, the weight OIHW -> OHWI (a tcc.transpose of the weight value, a
    computation on params), the result transposed back. Then general rules
    move transposes towards the outputs, where pairs cancel: a transpose
    passes through elementwise ops (another operand transposed the same way
    loses its transpose, a broadcast param such as [1, C, 1, 1] becomes
    [1, 1, 1, C] by a reshape), concat (the axis permuted), pad, slice,
    keepdims reductions and gathers with a rank-1 index (nearest resize);
    a max/avg/global-average pool of an NHWC tensor transposed to NCHW
    becomes the `nhwc` pool; a batch norm of a transposed tensor becomes
    elementwise ops with per-channel coefficients. Finally a transpose that
    keeps the order of its non-unit axes ([N, 1, 1, C] -> [N, C, 1, 1]) is
    a reshape. Transposes remain at the inputs, the outputs and before ops
    that cannot take NHWC (a reshape mixing axes, a matmul).
    `layout`: nhwc (every conv2d), nchw (nothing) or auto: the convolutions
    that run on tensor cores (`tensor-cores`: NVIDIA from sm_80; f16, bf16,
    and f32 with `allow-tf32`; convUsesTensorCores in passes/ConvLayout.h).
  }];
  let options = [
    Option<"layout", "layout", "std::string", /*default=*/"\"auto\"",
           "auto, nhwc or nchw">,
    Option<"tensorCores", "tensor-cores", "bool", /*default=*/"false",
           "auto: the target runs convolutions on tensor cores">,
    Option<"allowTf32", "allow-tf32", "bool", /*default=*/"false",
           "auto: f32 convolutions may use tf32 tensor cores">
  ];
  let dependentDialects = ["::mlir::tcc::TccDialect"];
}

def TccHoistParamComputations
    : Pass<"tcc-hoist-param-computations", "ModuleOp"> {
  let summary = "Move computations on params alone into a load-time init "
                "function";
  let description = [{
    In the function marked `tcc.entry`, finds the ops whose operands are
    params (arguments with `tcc.kind = "param"`), constants, or results of
    such ops (weight transposes, casts, batch-norm folding on weights), and
    moves them into a new function marked `tcc.init`, which the runtime runs
    once when the model loads. The init function takes the params it reads
    (each argument has `tcc.param`, the entry argument's index) and returns
    the values the entry function still needs ("derived params"); those
    become new entry arguments with `tcc.kind = "derived"` and `tcc.derived`,
    the init result's index. Not moved: ops that make more elements than
    their largest param operand (broadcasts: a derived param would cost more
    memory than recomputing it), sources alone (constants, iota) and
    run-time checks (index_check). A reshape of a raw param is a view: the
    entry function reads it as an argument with `tcc.kind = "view"` and
    `tcc.view_of`, the param's argument index, which the bundle binds to the
    param's own buffer (no kernel, no copy). Constants and views an init op
    needs are cloned into it.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def TccAnnotateRegions : Pass<"tcc-annotate-regions", "func::FuncOp"> {
  let summary = "Record each region group member's tile, halo and FLOPs";
  let description = [{
    Region fusion (AFusion): ops carrying `tcc.region_group = N` form group
    N (a connected subgraph of convolutions, pools, element-wise ops and
    channel concats in one block). For output tiles of `tile` (HxW) of the
    group's outputs, each member gets `tcc.region =
    #tcc.region_tile<out = [h, w], in = [h, w], halo = [h, w], flops = F,
    executed = E>`: walking backwards, a member's output tile is the most
    its in-group readers need, its input tile (out - 1) * stride + (k - 1)
    * dilation + 1 clamped to the input, its halo max(0, in - out *
    stride); `flops` over its whole result, `executed` when every tile
    computes its own (passes/RegionAnalysis.h). A group that is not one
    (a member that is no region op, members not connected) is an error at
    the member.
  }];
  let options = [
    Option<"tile", "tile", "std::string", /*default=*/"\"8x8\"",
           "The output tile of each group without a tcc.region_plan (whose "
           "tile is used), HxW, both positive">
  ];
  let dependentDialects = ["::mlir::tcc::TccDialect"];
}

def TccRegionFusion : Pass<"tcc-region-fusion", "func::FuncOp"> {
  let summary = "Choose region groups (AFusion) by a cost model and a "
                "backtracking search";
  let description = [{
    Region fusion (AFusion): partitions the function's region ops
    (convolutions, pools, element-wise ops and channel concats on rank-4
    tensors, passes/RegionAnalysis.h) into groups, each to run as one kernel
    computing an output tile per block through the chain. A greedy
    agglomeration gives the first grouping to beat; the search then visits
    the ops in block order; each starts a group or joins one or more groups
    whose results it reads (merging them). A group is legal when it stays
    acyclic once contracted, the region analysis takes it, it has two or
    more convolutions and pools and fits the target's shared memory and
    `max-members`. Groupings are
    scored by passes/RegionCostModel.h (summed predicted time of the groups
    and of the ops left unfused, at each group's cheapest tile among
    `tiles`); the search prunes by the best complete grouping so far with an
    admissible lower bound and memoises the rest of the search per frontier
    state, stopping at `max-states` states or `budget-ms` (then the best
    grouping found is kept). Results: each group of two or more members gets
    `tcc.region_group = N` (numbered in block order of first members) on
    its members and `tcc.region_plan = #tcc.region_plan<...>` (tile,
    predicted and unfused time, shared memory) on its last member, which is
    one of the group's outputs. Ops left unfused are unmarked. Any marks
    from before are replaced. `mode=off` removes the marks and does nothing
    else. With `remarks`, a remark per group and one per function.

    Alternatives (for ranking the model against measurements,
    bench/region_rank.py): with `alternatives=N out=FILE`, the function named
    `function` is searched and marked as with mode=auto, and N distinct
    legal groupings of it are written to FILE with their predicted times
    and per-kernel features (launches, bytes, FLOPs). With `force=FILE[:ID]`
    the alternative ID of such a file is applied instead of searching, each
    group checked as the search checks it (a member the file names that the
    function lacks, a member in two groups, an illegal group or a cyclic
    grouping is an error); the function the file names gets the groups,
    other functions none.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"auto\"",
           "auto (search) or off">,
    Option<"target", "target", "std::string", /*default=*/"\"sm_90a\"",
           "The cost model's constants: h200 (sm_90, sm_90a) or a100 "
           "(sm_80)">,
    Option<"budgetMs", "budget-ms", "int64_t", /*default=*/"20000",
           "Wall-clock limit of the search per function, milliseconds">,
    Option<"maxStates", "max-states", "int64_t", /*default=*/"2000000",
           "Limit on the states the search visits per function (a "
           "deterministic stop)">,
    Option<"maxMembers", "max-members", "int64_t", /*default=*/"8",
           "The most members a group may have">,
    ListOption<"tiles", "tiles", "int64_t",
               "Output tile sizes tried per group, every pair of them as height "
               "and width (default: on GPU targets 1,2,4,7,8,14,16,28,32, "
               "the region template's; on the host the squares of 4, 8, "
               "16 and 32)">,
    Option<"allowTf32", "allow-tf32", "bool", /*default=*/"false",
           "f32 convolutions run on tf32 tensor cores">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "A remark per group chosen and one per function">,
    Option<"force", "force", "std::string", /*default=*/"\"\"",
           "Apply the grouping of an alternatives file (written by `out`) "
           "instead of searching: FILE or FILE:ID">,
    Option<"alternatives", "alternatives", "int64_t", /*default=*/"0",
           "With `out`: how many distinct legal groupings to write (the "
           "search's, the greedy one, all unfused and random perturbations)">,
    Option<"seed", "seed", "int64_t", /*default=*/"1",
           "The seed of the alternatives' perturbations">,
    Option<"out", "out", "std::string", /*default=*/"\"\"",
           "Where to write the alternatives (JSON)">,
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "The function whose alternatives `out` holds (one file, one "
           "function); others are searched as with mode=auto">
  ];
  let dependentDialects = ["::mlir::tcc::TccDialect"];
}

#endif // TCC_PASSES_TD

def TccPromoteAccumulators : Pass<"tcc-promote-accumulators", "func::FuncOp"> {
  let summary = "Keep a reduction loop's accumulator in a register";
  let description = [{
    After linalg becomes loops, a reduction reads and writes its output
    element at every iteration (`load acc[i]; ...; store acc[i]` in an
    scf.for whose indices `i` do not change in the loop). Code generation
    cannot keep that element in a register: it cannot prove that the other
    buffers the loop reads do not overlap it, so every iteration made a
    round trip through memory (on the GPU a dependent global load and store:
    a 3×3 depthwise convolution took 20–48 µs, a global average pool 14).
    This pass carries the element through the loop (an iter_arg), loads it
    once before and stores it once after, innermost loops first so that a
    nest of reduction loops is promoted level by level.

    It relies on tcc's buffer invariant: two different buffers a kernel
    receives (function arguments) or allocates never overlap (the memory
    plan gives buffers alive at the same launch disjoint bytes). Views
    (subview, casts, reshapes) are traced to their root buffer; a loop that
    touches the accumulator's root anywhere else, or holds an op whose
    memory effects are unknown, is left alone.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}
