// RUN: tcc-opt %s --split-input-file --tcc-region-fusion=mode=on -verify-diagnostics
// RUN: not tcc-opt %s --split-input-file --tcc-region-fusion=target=sm_86 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not tcc-opt %s --split-input-file --tcc-region-fusion=max-members=1 2>&1 | FileCheck %s --check-prefix=MEMBERS
// RUN: not tcc-opt %s --split-input-file "--tcc-region-fusion=tiles=8,0" 2>&1 | FileCheck %s --check-prefix=TILES
// RUN: tcc-opt %s --split-input-file --tcc-region-fusion=remarks=true 2>&1 | FileCheck %s --check-prefix=REMARK

// TARGET: error: tcc-region-fusion: no cost model for target 'sm_86' (known: h200 (sm_90, sm_90a), a100 (sm_80), host)
// MEMBERS: error: tcc-region-fusion: max-members must be at least 2
// TILES: error: tcc-region-fusion: tile 0 is not positive
// REMARK: remark: region fusion on h200: 0 region groups (0 of 2 region ops); predicted 66.92 us against 66.92 us unfused; 2 states, search complete

// expected-error @+1 {{tcc-region-fusion: unknown mode 'on' (known: auto, off)}}
func.func @pools(%x: tensor<1x128x128x2048xf16>) -> tensor<1x128x128x2048xf16> {
  %0 = tcc.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, nhwc} : tensor<1x128x128x2048xf16> -> tensor<1x128x128x2048xf16>
  %1 = tcc.max_pool2d %0 {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, nhwc} : tensor<1x128x128x2048xf16> -> tensor<1x128x128x2048xf16>
  return %1 : tensor<1x128x128x2048xf16>
}
