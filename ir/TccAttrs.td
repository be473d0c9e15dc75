//===- TccAttrs.td - tcc attributes ------------------------*- tablegen -*-===//
//
// Decisions the compiler makes, kept in the IR as typed attributes so that
// passes set them, later passes and code generation read them, and lit tests
// check them through tcc-opt.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_ATTRS_TD
#define TCC_ATTRS_TD

include "ir/TccBase.td"

class Tcc_Attr<string name, string attrMnemonic> : AttrDef<Tcc_Dialect, name> {
  let mnemonic = attrMnemonic;
  let assemblyFormat = "`<` struct(params) `>`";
}

// The attention templates and their schedules (compiler/gpu: one attribute
// per template, its parameters the template's schedule), chosen by
// tcc-gpu-attention-plan for a chain marked `tcc.attention`.

def Tcc_MmaAttentionAttr : Tcc_Attr<"MmaAttention", "mma_attention"> {
  let summary = "the mma.sync attention template (sm_80 and later), prefill";
  let description = [{
    A block of `warps` warps owns `blockQ` query rows and steps over the keys
    by `blockKV`, with `stages` shared-memory buffers of K and V in flight
    (compiler/gpu/AttentionKernel.h, AttentionSchedule).
  }];
  let parameters = (ins "int64_t":$blockQ, "int64_t":$blockKV,
                        "int64_t":$warps, "int64_t":$stages);
}

def Tcc_MmaDecodeAttr : Tcc_Attr<"MmaDecode", "mma_decode"> {
  let summary = "the mma.sync split-K decode pair (partial and combine)";
  let description = [{
    A block per (key chunk of `chunkTiles` tiles of `blockKV` keys,
    key/value head, batch), `warps` warps splitting each tile, `stages`
    buffers (compiler/gpu/AttentionKernel.h, DecodeSchedule).
  }];
  let parameters = (ins "int64_t":$blockKV, "int64_t":$warps,
                        "int64_t":$stages, "int64_t":$chunkTiles);
}

def Tcc_WgmmaAttentionAttr : Tcc_Attr<"WgmmaAttention", "wgmma_attention"> {
  let summary = "the wgmma attention template (sm_90a), prefill";
  let description = [{
    `warpgroups` consumer warpgroups of 64 query rows each, key tiles of
    `blockKV`, `stages` buffers; `overlap`, `producer` and `pingpong` the
    template's loop schedules; `tma`: the producer copies K and V with the
    tensor memory accelerator (compiler/gpu/WgmmaAttention.h,
    WgmmaAttentionSchedule).
  }];
  let parameters = (ins "int64_t":$warpgroups, "int64_t":$blockKV,
                        "int64_t":$stages, "bool":$overlap, "bool":$producer,
                        "bool":$pingpong, "bool":$tma);
}

def Tcc_SimtAttentionAttr : Tcc_Attr<"SimtAttention", "simt_attention"> {
  let summary = "the f32 attention template on CUDA cores";
  let description = [{
    `blockQ` query rows and `blockKV` keys a step, a thread's register tile
    `tileRows` rows x `tileKeys` keys; `splitKV`: K and V have buffers of
    their own; `minBlocks`: blocks a multiprocessor must hold; `chunkTiles`
    > 0: the split-K decode pair, a block reading that many key tiles
    (compiler/gpu/SimtAttention.h, SimtAttentionSchedule).
  }];
  let parameters = (ins "int64_t":$blockQ, "int64_t":$blockKV,
                        "int64_t":$tileRows, "int64_t":$tileKeys,
                        "bool":$splitKV, "int64_t":$minBlocks,
                        "int64_t":$chunkTiles);
}

// Region fusion (AFusion): what tcc-annotate-regions derives for each member
// of a region group (passes/RegionAnalysis.h).

def Tcc_RegionTileAttr : Tcc_Attr<"RegionTile", "region_tile"> {
  let summary = "a region group member's tile, halo and FLOPs";
  let description = [{
    For one tile of the group's outputs: the member's output tile
    `out = [h, w]`, the input tile it reads `in = [h, w]` ((out - 1) *
    stride + (k - 1) * dilation + 1, clamped to the input), `halo = [h, w]`
    (max(0, in - out * stride): the rows and columns that neighbouring
    tiles read twice); `flops` over the member's whole output computed
    once, `executed` when every tile of the group computes its own tile
    (executed - flops is the halo's recomputation).
  }];
  let parameters = (ins "int64_t":$outH, "int64_t":$outW, "int64_t":$inH,
                        "int64_t":$inW, "int64_t":$haloH, "int64_t":$haloW,
                        "int64_t":$flops, "int64_t":$executed);
  let assemblyFormat = [{
    `<` `out` `=` `[` $outH `,` $outW `]` `,` `in` `=` `[` $inH `,` $inW `]`
    `,` `halo` `=` `[` $haloH `,` $haloW `]` `,` `flops` `=` $flops `,`
    `executed` `=` $executed `>`
  }];
}

def Tcc_RegionPlanAttr : Tcc_Attr<"RegionPlan", "region_plan"> {
  let summary = "a region group's chosen tile and predicted time";
  let description = [{
    Set by tcc-region-fusion on the last member (in block order) of each
    region group it chooses, an output of the group: every block of the
    group's kernel computes an output tile of `tile = [h, w]`;
    `predicted_ns` is the cost model's time of that kernel,
    `unfused_ns` the summed time of its members run unfused, `shared` the
    shared memory a block needs (bytes; passes/RegionCostModel.h). The
    members carry `tcc.region_group = N`.
  }];
  let parameters = (ins "int64_t":$tileH, "int64_t":$tileW,
                        "int64_t":$members, "int64_t":$predictedNs,
                        "int64_t":$unfusedNs, "int64_t":$shared);
  let assemblyFormat = [{
    `<` `tile` `=` `[` $tileH `,` $tileW `]` `,` `members` `=` $members `,`
    `predicted_ns` `=` $predictedNs `,` `unfused_ns` `=` $unfusedNs `,`
    `shared` `=` $shared `>`
  }];
}

def Tcc_PrecisionPlanAttr : Tcc_Attr<"PrecisionPlan", "precision_plan"> {
  let summary = "the precisions a planned matmul's output tiles compute in";
  let description = [{
    Platensor's tile-level precision (issue 16, docs/precision.md): the
    output C [.., M, N] of a `tcc.planned_matmul` is cut into tiles of
    `tile = [m, n]` (the last ones partial); its codes operand, [ceil(M/m),
    ceil(N/n)] i8, names each tile's precision by its index in
    `precisions` (f32, bf16, f16, f8E4M3FN, f8E5M2 or i8). The row block of
    A and the column block of B a tile reads are rounded to its precision;
    f16, f8 and i8 blocks are scaled first by their largest magnitude.
  }];
  let parameters = (ins "int64_t":$tileM, "int64_t":$tileN,
                        ArrayRefParameter<"::mlir::Type">:$precisions);
  let assemblyFormat = [{
    `<` `tile` `=` `[` $tileM `,` $tileN `]` `,` `precisions` `=` `[`
    $precisions `]` `>`
  }];
  let genVerifyDecl = 1;
}

#endif // TCC_ATTRS_TD
