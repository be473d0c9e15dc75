// RUN: tcc-opt %s --split-input-file --tcc-outline-groups --tcc-dedup-kernels | FileCheck %s

// Two repetitions of a block (conv → relu, at different nodes: their
// locations differ) outline to equal kernels: the first stays and both
// calls launch it. A third conv differs in one attribute (its stride) and a
// scale differs in one constant: each keeps a kernel of its own.
// CHECK-LABEL: func.func @main
// CHECK: %[[C0:.*]] = call @k0_conv2d(
// CHECK: %[[S0:.*]] = call @k1_elementwise(%[[C0]])
// CHECK: %[[C1:.*]] = call @k0_conv2d(%[[S0]],
// CHECK: %[[S1:.*]] = call @k3_elementwise(%[[C1]])
// CHECK: %[[C2:.*]] = call @k4_conv2d(%[[S1]],
// CHECK: return %[[C2]]
// CHECK-NOT: func.func private @k2_
// CHECK: func.func private @k0_conv2d
// CHECK-SAME: tcc.kernel
// CHECK: tcc.conv2d
// CHECK-SAME: strides = array<i64: 1, 1>
// CHECK: tcc.relu
// CHECK: func.func private @k1_elementwise
// CHECK: value = 5.000000e-01
// CHECK-NOT: func.func private @k2_
// CHECK: func.func private @k3_elementwise
// CHECK: value = 2.500000e-01
// CHECK: func.func private @k4_conv2d
// CHECK: strides = array<i64: 2, 2>
// CHECK-NOT: func.func
func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x4x4xf32> attributes {tcc.entry} {
  %0 = tcc.group "conv2d" -> tensor<1x4x8x8xf32> {
    %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32> loc("conv_a")
    %r = tcc.relu %c : tensor<1x4x8x8xf32> loc("relu_a")
    tcc.yield %r : tensor<1x4x8x8xf32>
  }
  %1 = tcc.group "elementwise" -> tensor<1x4x8x8xf32> {
    %k = tcc.constant {value = 0.5 : f32} : tensor<f32>
    %m = tcc.mul %0, %k : tensor<1x4x8x8xf32>, tensor<f32> -> tensor<1x4x8x8xf32>
    tcc.yield %m : tensor<1x4x8x8xf32>
  }
  %2 = tcc.group "conv2d" -> tensor<1x4x8x8xf32> {
    %c = tcc.conv2d %1, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32> loc("conv_b")
    %r = tcc.relu %c : tensor<1x4x8x8xf32> loc("relu_b")
    tcc.yield %r : tensor<1x4x8x8xf32>
  }
  %3 = tcc.group "elementwise" -> tensor<1x4x8x8xf32> {
    %k = tcc.constant {value = 0.25 : f32} : tensor<f32>
    %m = tcc.mul %2, %k : tensor<1x4x8x8xf32>, tensor<f32> -> tensor<1x4x8x8xf32>
    tcc.yield %m : tensor<1x4x8x8xf32>
  }
  %4 = tcc.group "conv2d" -> tensor<1x4x4x4xf32> {
    %c = tcc.conv2d %3, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x4x4xf32>
    %r = tcc.relu %c : tensor<1x4x4x4xf32>
    tcc.yield %r : tensor<1x4x4x4xf32>
  }
  return %4 : tensor<1x4x4x4xf32>
}

// -----

// Equal bodies of different kinds stay apart (tcc.kind selects templates),
// as do equal ops on different types and the same ops with their operands
// swapped. Kernels the init sequence and the entry share are merged across
// them.
// CHECK-LABEL: func.func @main(
// CHECK: call @k0_elementwise(
// CHECK: call @k1_broadcast(
// CHECK: call @k2_elementwise(
// CHECK: call @k3_elementwise(
// CHECK: call @k0_elementwise(
// CHECK-LABEL: func.func @main_init(
// CHECK: call @k0_elementwise(
// CHECK-DAG: func.func private @k0_elementwise
// CHECK-DAG: func.func private @k1_broadcast
// CHECK-DAG: func.func private @k2_elementwise
// CHECK-DAG: func.func private @k3_elementwise
// CHECK-NOT: func.func private @k4_
// CHECK-NOT: func.func private @k5_
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf16>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf32>) attributes {tcc.entry} {
  %0 = tcc.group "elementwise" -> tensor<4xf32> {
    %e = tcc.exp %a : tensor<4xf32>
    %s = tcc.sub %e, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tcc.yield %s : tensor<4xf32>
  }
  %1 = tcc.group "broadcast" -> tensor<4xf32> {
    %e = tcc.exp %a : tensor<4xf32>
    %s = tcc.sub %e, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tcc.yield %s : tensor<4xf32>
  }
  %2 = tcc.group "elementwise" -> tensor<4xf16> {
    %e = tcc.exp %c : tensor<4xf16>
    %s = tcc.sub %e, %c : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
    tcc.yield %s : tensor<4xf16>
  }
  %3 = tcc.group "elementwise" -> tensor<4xf32> {
    %e = tcc.exp %a : tensor<4xf32>
    %s = tcc.sub %b, %e : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tcc.yield %s : tensor<4xf32>
  }
  %4 = tcc.group "elementwise" -> tensor<4xf32> {
    %e = tcc.exp %b : tensor<4xf32>
    %s = tcc.sub %e, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tcc.yield %s : tensor<4xf32>
  }
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf32>
}
func.func @main_init(%p: tensor<4xf32>, %q: tensor<4xf32>) -> tensor<4xf32> attributes {tcc.init} {
  %0 = tcc.group "elementwise" -> tensor<4xf32> {
    %e = tcc.exp %p : tensor<4xf32>
    %s = tcc.sub %e, %q : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    tcc.yield %s : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Functions that are not kernels are left alone, equal or not.
// CHECK-LABEL: func.func private @f
// CHECK-LABEL: func.func private @g
func.func private @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tcc.neg %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @g(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tcc.neg %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
