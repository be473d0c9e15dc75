// RUN: tcc-opt %s --split-input-file --tcc-annotate-regions | FileCheck %s

// Expected values derived by hand. Per axis: in = (out - 1) * stride +
// (k - 1) * dilation + 1 clamped to the input, halo = max(0, in - out *
// stride); tiles = ceil(H / 8) * ceil(W / 8) * N over the group's outputs;
// flops = N * C * H * W * per element (conv 2 * Cin/groups * kh * kw, pool
// kh * kw, element-wise 1, concat 0); executed = tiles * out_h * out_w * C *
// per element.

// Two stacked 3x3 stride-1 pad-1 convs, 1x4x32x32: tiles 4 * 4 = 16; per
// element 2 * 4 * 9 = 72, flops 4 * 32 * 32 * 72 = 294912.
// %1: out 8, in 7 + 2 + 1 = 10, halo 10 - 8 = 2, executed 16 * 64 * 4 * 72
// = 294912.
// %0: out 10, in 9 + 2 + 1 = 12, halo 2, executed 16 * 100 * 4 * 72 = 460800.
// CHECK-LABEL: func.func @stacked_3x3
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [10, 10], in = [12, 12], halo = [2, 2], flops = 294912, executed = 460800>
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [10, 10], halo = [2, 2], flops = 294912, executed = 294912>
func.func @stacked_3x3(%x: tensor<1x4x32x32xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x32x32xf32> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x32x32xf32>
  %1 = tcc.conv2d %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x32x32xf32>
  return %1 : tensor<1x4x32x32xf32>
}

// -----

// A 3x3 stride-2 pad-1 conv, 1x4x32x32 -> 1x8x16x16: tiles 2 * 2 = 4; out 8,
// in 7 * 2 + 2 + 1 = 17, halo 17 - 16 = 1; per element 72, flops 8 * 16 *
// 16 * 72 = 147456, executed 4 * 64 * 8 * 72 = 147456.
// CHECK-LABEL: func.func @stride_2
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [17, 17], halo = [1, 1], flops = 147456, executed = 147456>
func.func @stride_2(%x: tensor<1x4x32x32xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x16x16xf32> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 3 : i64} : tensor<1x4x32x32xf32>, tensor<8x4x3x3xf32> -> tensor<1x8x16x16xf32>
  return %0 : tensor<1x8x16x16xf32>
}

// -----

// A relu, then a 3x3 dilation-2 pad-2 conv, 1x4x32x32: tiles 16.
// conv: out 8, in 7 + 2 * 2 + 1 = 12, halo 4; flops 4 * 1024 * 72 = 294912,
// executed 16 * 64 * 4 * 72 = 294912.
// relu passes the tile through: out = in = 12, halo 0; flops 4096,
// executed 16 * 144 * 4 = 9216.
// CHECK-LABEL: func.func @dilation_2
// CHECK: tcc.relu {{.*}}tcc.region = #tcc.region_tile<out = [12, 12], in = [12, 12], halo = [0, 0], flops = 4096, executed = 9216>
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [12, 12], halo = [4, 4], flops = 294912, executed = 294912>
func.func @dilation_2(%x: tensor<1x4x32x32xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x32x32xf32> {
  %0 = tcc.relu %x {tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>
  %1 = tcc.conv2d %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x32x32xf32>
  return %1 : tensor<1x4x32x32xf32>
}

// -----

// ResNet stem, NCHW: 7x7 stride-2 pad-3 conv 1x3x64x64 -> 1x8x32x32, then a
// 3x3 stride-2 pad-1 max pool -> 1x8x16x16: tiles 2 * 2 = 4.
// pool: out 8, in 7 * 2 + 2 + 1 = 17, halo 17 - 16 = 1; per element 9,
// flops 8 * 256 * 9 = 18432, executed 4 * 64 * 8 * 9 = 18432.
// conv: out 17, in 16 * 2 + 6 + 1 = 39, halo 39 - 34 = 5; per element
// 2 * 3 * 49 = 294, flops 8 * 1024 * 294 = 2408448, executed 4 * 289 * 8 *
// 294 = 2718912.
// CHECK-LABEL: func.func @resnet_stem
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [17, 17], in = [39, 39], halo = [5, 5], flops = 2408448, executed = 2718912>
// CHECK: tcc.max_pool2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [17, 17], halo = [1, 1], flops = 18432, executed = 18432>
func.func @resnet_stem(%x: tensor<1x3x64x64xf32>, %w: tensor<8x3x7x7xf32>) -> tensor<1x8x16x16xf32> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x3x64x64xf32>, tensor<8x3x7x7xf32> -> tensor<1x8x32x32xf32>
  %1 = tcc.max_pool2d %0 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, tcc.region_group = 0 : i64} : tensor<1x8x32x32xf32> -> tensor<1x8x16x16xf32>
  return %1 : tensor<1x8x16x16xf32>
}

// -----

// MobileNet block, NHWC: depthwise 3x3 pad-1 conv (groups 8) on 1x16x16x8,
// a per-channel bias add (tensor<8> broadcast), relu, 1x1 conv 8 -> 16.
// Tiles 2 * 2 = 4.
// 1x1 conv: out 8, in 8, halo 0; per element 2 * 8 = 16, flops 16 * 256 * 16
// = 65536, executed 4 * 64 * 16 * 16 = 65536.
// relu, add: out = in = 8; flops 8 * 256 = 2048, executed 4 * 64 * 8 = 2048.
// depthwise: out 8, in 10, halo 2; per element 2 * 1 * 9 = 18, flops 2048 *
// 18 = 36864, executed 4 * 64 * 8 * 18 = 36864.
// CHECK-LABEL: func.func @mobilenet_nhwc
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [10, 10], halo = [2, 2], flops = 36864, executed = 36864>
// CHECK: tcc.add {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [8, 8], halo = [0, 0], flops = 2048, executed = 2048>
// CHECK: tcc.relu {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [8, 8], halo = [0, 0], flops = 2048, executed = 2048>
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [8, 8], halo = [0, 0], flops = 65536, executed = 65536>
func.func @mobilenet_nhwc(%x: tensor<1x16x16x8xf32>, %dw: tensor<8x3x3x1xf32>, %b: tensor<8xf32>, %pw: tensor<16x1x1x8xf32>) -> tensor<1x16x16x16xf32> {
  %0 = tcc.conv2d %x, %dw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 8 : i64, nhwc, tcc.region_group = 1 : i64} : tensor<1x16x16x8xf32>, tensor<8x3x3x1xf32> -> tensor<1x16x16x8xf32>
  %1 = tcc.add %0, %b {tcc.region_group = 1 : i64} : tensor<1x16x16x8xf32>, tensor<8xf32> -> tensor<1x16x16x8xf32>
  %2 = tcc.relu %1 {tcc.region_group = 1 : i64} : tensor<1x16x16x8xf32>
  %3 = tcc.conv2d %2, %pw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 1 : i64} : tensor<1x16x16x8xf32>, tensor<16x1x1x8xf32> -> tensor<1x16x16x16xf32>
  return %3 : tensor<1x16x16x16xf32>
}

// -----

// Residual block, NCHW 1x4x32x32: relu read by the conv path and by the add
// (the identity path). Tiles 16.
// add: out = in = 8; flops 4096, executed 16 * 64 * 4 = 4096.
// second conv: out 8, in 10, halo 2; flops 294912, executed 294912.
// first conv: out 10, in 12, halo 2; flops 294912, executed 16 * 100 * 4 *
// 72 = 460800.
// relu: max(12 for the conv, 8 for the add) = 12; flops 4096, executed
// 16 * 144 * 4 = 9216.
// CHECK-LABEL: func.func @residual
// CHECK: tcc.relu {{.*}}tcc.region = #tcc.region_tile<out = [12, 12], in = [12, 12], halo = [0, 0], flops = 4096, executed = 9216>
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [10, 10], in = [12, 12], halo = [2, 2], flops = 294912, executed = 460800>
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [10, 10], halo = [2, 2], flops = 294912, executed = 294912>
// CHECK: tcc.add {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [8, 8], halo = [0, 0], flops = 4096, executed = 4096>
func.func @residual(%x: tensor<1x4x32x32xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x32x32xf32> {
  %0 = tcc.relu %x {tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>
  %1 = tcc.conv2d %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x32x32xf32>
  %2 = tcc.conv2d %1, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x32x32xf32>
  %3 = tcc.add %2, %0 {tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>, tensor<1x4x32x32xf32> -> tensor<1x4x32x32xf32>
  return %3 : tensor<1x4x32x32xf32>
}

// -----

// Inception-style: relu read by a 1x1 and a 3x3 pad-1 branch, joined by a
// channel concat, NCHW 1x4x32x32 -> 1x8x32x32. Tiles 16.
// concat: out = in = 8, flops 0, executed 0.
// 1x1: out = in = 8, halo 0; per element 2 * 4 = 8, flops 4096 * 8 = 32768,
// executed 16 * 64 * 4 * 8 = 32768.
// 3x3: out 8, in 10, halo 2; flops 294912, executed 294912.
// relu: max(8, 10) = 10; flops 4096, executed 16 * 100 * 4 = 6400.
// CHECK-LABEL: func.func @inception
// CHECK: tcc.relu {{.*}}tcc.region = #tcc.region_tile<out = [10, 10], in = [10, 10], halo = [0, 0], flops = 4096, executed = 6400>
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [8, 8], halo = [0, 0], flops = 32768, executed = 32768>
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [10, 10], halo = [2, 2], flops = 294912, executed = 294912>
// CHECK: tcc.concat {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [8, 8], halo = [0, 0], flops = 0, executed = 0>
func.func @inception(%x: tensor<1x4x32x32xf32>, %w1: tensor<4x4x1x1xf32>, %w3: tensor<4x4x3x3xf32>) -> tensor<1x8x32x32xf32> {
  %0 = tcc.relu %x {tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>
  %1 = tcc.conv2d %0, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x32x32xf32>
  %2 = tcc.conv2d %0, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x32x32xf32>
  %3 = tcc.concat %1, %2 {axis = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>, tensor<1x4x32x32xf32> -> tensor<1x8x32x32xf32>
  return %3 : tensor<1x8x32x32xf32>
}

// -----

// DenseNet transition, batch 2: 1x1 conv then a 2x2 stride-2 average pool,
// 2x4x32x32 -> 2x4x16x16. Tiles 2 * 2 * 2 = 8.
// pool: out 8, in 7 * 2 + 1 + 1 = 16, halo 16 - 16 = 0; per element 4,
// flops 2 * 4 * 256 * 4 = 8192, executed 8 * 64 * 4 * 4 = 8192.
// conv: out = in = 16, halo 0; per element 8, flops 2 * 4 * 1024 * 8 =
// 65536, executed 8 * 256 * 4 * 8 = 65536 (no recomputation).
// CHECK-LABEL: func.func @densenet_transition
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [16, 16], in = [16, 16], halo = [0, 0], flops = 65536, executed = 65536>
// CHECK: tcc.avg_pool2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [16, 16], halo = [0, 0], flops = 8192, executed = 8192>
func.func @densenet_transition(%x: tensor<2x4x32x32xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<2x4x16x16xf32> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<2x4x32x32xf32>, tensor<4x4x1x1xf32> -> tensor<2x4x32x32xf32>
  %1 = tcc.avg_pool2d %0 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false, count_include_pad = false, tcc.region_group = 0 : i64} : tensor<2x4x32x32xf32> -> tensor<2x4x16x16xf32>
  return %1 : tensor<2x4x16x16xf32>
}

// -----

// Two groups in one function, and an op outside any group: each group is
// tiled over its own outputs, the op outside gets nothing.
// Group 0 (3x3 pad-1, 1x4x16x16, tiles 4): out 8, in 10, halo 2; flops
// 4 * 256 * 72 = 73728, executed 4 * 64 * 4 * 72 = 73728.
// Group 1 (3x3 stride-2 pad-1 max pool -> 1x4x8x8, tiles 1): out 8, in
// 7 * 2 + 3 = 17 clamped to 16, halo max(0, 16 - 16) = 0; flops 4 * 64 * 9
// = 2304, executed 1 * 64 * 4 * 9 = 2304.
// CHECK-LABEL: func.func @two_groups
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [10, 10], halo = [2, 2], flops = 73728, executed = 73728>
// CHECK: tcc.relu
// CHECK-NOT: tcc.region =
// CHECK: tcc.max_pool2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [16, 16], halo = [0, 0], flops = 2304, executed = 2304>
func.func @two_groups(%x: tensor<1x4x16x16xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x16x16xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x16x16xf32>
  %1 = tcc.relu %0 : tensor<1x4x16x16xf32>
  %2 = tcc.max_pool2d %1 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, tcc.region_group = 1 : i64} : tensor<1x4x16x16xf32> -> tensor<1x4x8x8xf32>
  return %2 : tensor<1x4x8x8xf32>
}

// -----

// A grouped conv (groups 2, 3x5 kernel) with per-axis strides [1, 2] and
// pads [1, 2, 1, 2]: 1x4x32x32 -> 1x8x32x16, tiles 4 * 2 = 8. H: out 8, in
// 7 + 2 + 1 = 10, halo 2; W: out 8, in 7 * 2 + 4 + 1 = 19, halo 19 - 16 =
// 3. Per element 2 * (4 / 2) * 15 = 60, flops 8 * 32 * 16 * 60 = 245760,
// executed 8 * 64 * 8 * 60 = 245760.
// CHECK-LABEL: func.func @grouped
// CHECK: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [8, 8], in = [10, 19], halo = [2, 3], flops = 245760, executed = 245760>
func.func @grouped(%x: tensor<1x4x32x32xf32>, %w: tensor<8x2x3x5xf32>) -> tensor<1x8x32x16xf32> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 2>, pads = array<i64: 1, 2, 1, 2>, dilations = array<i64: 1, 1>, groups = 2 : i64, tcc.region_group = 0 : i64} : tensor<1x4x32x32xf32>, tensor<8x2x3x5xf32> -> tensor<1x8x32x16xf32>
  return %0 : tensor<1x8x32x16xf32>
}
