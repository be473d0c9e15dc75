// RUN: tcc-opt %s --split-input-file --verify-diagnostics --tcc-annotate-regions

// A matmul is no region op.
func.func @matmul(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %m: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  // expected-error @+1 {{region group 0: 'tcc.matmul' is not a region op (convolution, pool, element-wise op or channel concat on rank-4 tensors)}}
  %1 = tcc.matmul %0, %m {tcc.region_group = 0 : i64} : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  return %1 : tensor<1x4x8x8xf32>
}

// -----

// Two convs that share no value are not one group.
func.func @disconnected(%x: tensor<1x4x8x8xf32>, %y: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 2 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  // expected-error @+1 {{region group 2: 'tcc.conv2d' is not connected to the group's first member 'tcc.conv2d'}}
  %1 = tcc.conv2d %y, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 2 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  return %0, %1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// -----

// An NHWC conv reading an NCHW one needs a transpose between them.
func.func @layouts(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %v: tensor<4x3x3x8xf32>) -> tensor<1x2x6x4xf32> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  // expected-error @+1 {{region group 0: 'tcc.conv2d' (NHWC) reads 'tcc.conv2d' (NCHW) in one region group}}
  %1 = tcc.conv2d %0, %v {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 0 : i64} : tensor<1x4x8x8xf32>, tensor<4x3x3x8xf32> -> tensor<1x2x6x4xf32>
  return %1 : tensor<1x2x6x4xf32>
}

// -----

// A member feeding a convolution's weight is not spatial data.
func.func @weight(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %0 = tcc.relu %w {tcc.region_group = 0 : i64} : tensor<4x4x3x3xf32>
  // expected-error @+1 {{region group 0: 'tcc.conv2d' reads its weights or bias from 'tcc.relu' of its region group}}
  %1 = tcc.conv2d %x, %0 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  return %1 : tensor<1x4x8x8xf32>
}

// -----

// Outputs of different extents would need two tile grids.
func.func @outputs(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>) {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  // expected-error @+1 {{region group 0: region group outputs differ in batch or spatial extent: 1x4x4 and 1x8x8 (NxHxW)}}
  %1 = tcc.max_pool2d %0 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false, tcc.region_group = 0 : i64} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return %0, %1 : tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>
}

// -----

// Element-wise ops alone have no spatial axes to tile.
func.func @pointwise_only(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{region group 0: region group has no convolution, pool or channel concat to tell its spatial axes}}
  %0 = tcc.relu %x {tcc.region_group = 0 : i64} : tensor<1x4x8x8xf32>
  %1 = tcc.neg %0 {tcc.region_group = 0 : i64} : tensor<1x4x8x8xf32>
  return %1 : tensor<1x4x8x8xf32>
}

// -----

func.func @not_integer(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{tcc.region_group must be an integer}}
  %0 = tcc.relu %x {tcc.region_group = "a"} : tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}
