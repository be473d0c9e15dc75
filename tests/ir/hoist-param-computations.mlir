// RUN: tcc-opt %s --split-input-file --tcc-hoist-param-computations | FileCheck %s

// A weight transposed, scaled by a constant and by another param, then
// reshaped, feeds a matmul: all of it moves to @main_init, which returns the
// reshaped weight; @main reads it as a derived argument. The bias is used
// raw (the add) and derived (exp): the raw param stays an argument of both.
// A broadcast of a param to more than 2^14 elements, more than the param:
// it stays per run, and so do the ops on it. A reshape of a raw param is a view: an
// argument bound to the param's own buffer (tcc.view_of), no kernel.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:[^:]*]]: tensor<5x24xf32> {{.*}}, %[[W:[^:]*]]: tensor<2x8x24xf32> {tcc.kind = "param", tcc.name = "w"},
// CHECK-SAME: %[[S:[^:]*]]: tensor<24x2x8xf32> {tcc.kind = "param", tcc.name = "s"},
// CHECK-SAME: %[[B:[^:]*]]: tensor<16xf32> {tcc.kind = "param", tcc.name = "b"},
// CHECK-SAME: %[[C:[^:]*]]: tensor<2x8xf32> {tcc.kind = "param", tcc.name = "c"},
// CHECK-SAME: %[[CV:[^:]*]]: tensor<16xf32> {tcc.kind = "view", tcc.view_of = 4 : i64},
// CHECK-SAME: %[[D0:[^:]*]]: tensor<24x16xf32> {tcc.derived = 0 : i64, tcc.kind = "derived"},
// CHECK-SAME: %[[D1:[^:]*]]: tensor<16xf32> {tcc.derived = 1 : i64, tcc.kind = "derived"})
// CHECK-NOT: tcc.transpose
// CHECK: %[[M:.*]] = tcc.matmul %[[X]], %[[D0]]
// CHECK: %[[Y:.*]] = tcc.add %[[M]], %[[B]]
// CHECK: %[[Z:.*]] = tcc.mul %[[Y]], %[[D1]]
// CHECK: %[[BB:.*]] = tcc.broadcast_to %[[B]] : tensor<16xf32> -> tensor<1025x16xf32>
// CHECK: %[[BN:.*]] = tcc.neg %[[BB]]
// CHECK-NOT: tcc.reshape
// CHECK: tcc.add %[[BN]], %[[CV]]
// CHECK: return
// CHECK-LABEL: func.func @main_init
// CHECK-SAME: (%[[IW:[^:]*]]: tensor<2x8x24xf32> {tcc.name = "w", tcc.param = 1 : i64},
// CHECK-SAME: %[[IS:[^:]*]]: tensor<24x2x8xf32> {tcc.name = "s", tcc.param = 2 : i64},
// CHECK-SAME: %[[IB:[^:]*]]: tensor<16xf32> {tcc.name = "b", tcc.param = 3 : i64})
// CHECK-SAME: -> (tensor<24x16xf32>, tensor<16xf32>)
// CHECK-SAME: attributes {tcc.init}
// CHECK: %[[T:.*]] = tcc.transpose %[[IW]]
// CHECK: %[[K:.*]] = tcc.constant
// CHECK: %[[TK:.*]] = tcc.mul %[[T]], %[[K]]
// CHECK: %[[TS:.*]] = tcc.mul %[[TK]], %[[IS]]
// CHECK: %[[R:.*]] = tcc.reshape %[[TS]] : tensor<24x2x8xf32> -> tensor<24x16xf32>
// CHECK: %[[E:.*]] = tcc.exp %[[IB]]
// CHECK: return %[[R]], %[[E]]
func.func @main(%x: tensor<5x24xf32> {tcc.kind = "input", tcc.name = "x"},
                %w: tensor<2x8x24xf32> {tcc.kind = "param", tcc.name = "w"},
                %s: tensor<24x2x8xf32> {tcc.kind = "param", tcc.name = "s"},
                %b: tensor<16xf32> {tcc.kind = "param", tcc.name = "b"},
                %c: tensor<2x8xf32> {tcc.kind = "param", tcc.name = "c"})
    -> (tensor<5x16xf32>, tensor<5x16xf32>, tensor<1025x16xf32>) attributes {tcc.entry} {
  %t = tcc.transpose %w {perm = array<i64: 2, 0, 1>} : tensor<2x8x24xf32> -> tensor<24x2x8xf32>
  %k = tcc.constant {value = 0.5 : f32} : tensor<24x2x8xf32>
  %tk = tcc.mul %t, %k : tensor<24x2x8xf32>, tensor<24x2x8xf32> -> tensor<24x2x8xf32>
  %ts = tcc.mul %tk, %s : tensor<24x2x8xf32>, tensor<24x2x8xf32> -> tensor<24x2x8xf32>
  %r = tcc.reshape %ts : tensor<24x2x8xf32> -> tensor<24x16xf32>
  %m = tcc.matmul %x, %r : tensor<5x24xf32>, tensor<24x16xf32> -> tensor<5x16xf32>
  %y = tcc.add %m, %b : tensor<5x16xf32>, tensor<16xf32> -> tensor<5x16xf32>
  %e = tcc.exp %b : tensor<16xf32>
  %z = tcc.mul %y, %e : tensor<5x16xf32>, tensor<16xf32> -> tensor<5x16xf32>
  %bb = tcc.broadcast_to %b : tensor<16xf32> -> tensor<1025x16xf32>
  %bn = tcc.neg %bb : tensor<1025x16xf32>
  %cv = tcc.reshape %c : tensor<2x8xf32> -> tensor<16xf32>
  %v = tcc.add %bn, %cv : tensor<1025x16xf32>, tensor<16xf32> -> tensor<1025x16xf32>
  return %y, %z, %v : tensor<5x16xf32>, tensor<5x16xf32>, tensor<1025x16xf32>
}

// -----

// A derived param that is an output is returned as the derived argument (the
// bundle copies it); an index_check on params is a run-time status and stays.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x6xf32> {tcc.kind = "param"}
// CHECK-SAME: %[[I:[^:]*]]: tensor<3xi32> {tcc.kind = "param"}
// CHECK-SAME: %[[D:[^:]*]]: tensor<6x4xf32> {tcc.derived = 0 : i64, tcc.kind = "derived"}
// CHECK: tcc.index_check %[[I]]
// CHECK: return %[[D]]
// CHECK-LABEL: func.func @main_init
// CHECK: tcc.transpose
// CHECK-NOT: tcc.index_check
func.func @main(%w: tensor<4x6xf32> {tcc.kind = "param"},
                %i: tensor<3xi32> {tcc.kind = "param"})
    -> (tensor<6x4xf32>, tensor<i32>) attributes {tcc.entry} {
  %t = tcc.transpose %w {perm = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
  %n = tcc.index_check %i {bound = 4 : i64} : tensor<3xi32> -> tensor<i32>
  return %t, %n : tensor<6x4xf32>, tensor<i32>
}

// -----

// Nothing on params alone but views (a reshape of a reshape is a view of the
// param itself) and a source: no init function.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[W:[^:]*]]: tensor<2x2xf32> {tcc.kind = "param"}
// CHECK-SAME: %[[V:[^:]*]]: tensor<4xf32> {tcc.kind = "view", tcc.view_of = 1 : i64}
// CHECK-NOT: tcc.derived
// CHECK-NOT: tcc.reshape
// CHECK: tcc.add %{{.*}}, %[[V]]
// CHECK-NOT: func.func @main_init
func.func @main(%x: tensor<4xf32> {tcc.kind = "input"},
                %w: tensor<2x2xf32> {tcc.kind = "param"}) -> tensor<4xf32>
    attributes {tcc.entry} {
  %u = tcc.reshape %w : tensor<2x2xf32> -> tensor<1x4xf32>
  %v = tcc.reshape %u : tensor<1x4xf32> -> tensor<4xf32>
  %k = tcc.constant {value = 2.0 : f32} : tensor<4xf32>
  %a = tcc.add %x, %v : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %m = tcc.mul %a, %k : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %m : tensor<4xf32>
}

// -----

// A small broadcast of a param (a bias repeated per phase) is derived at
// load: 4 x 16 elements cost less than a kernel per run.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[D:[^:]*]]: tensor<64xf32> {tcc.derived = 0 : i64, tcc.kind = "derived"}
// CHECK-NOT: tcc.broadcast_to
// CHECK: tcc.add %{{.*}}, %[[D]]
// CHECK-LABEL: func.func @main_init
// CHECK: tcc.broadcast_to %{{.*}} : tensor<1x16xf32> -> tensor<4x16xf32>
// CHECK: tcc.reshape %{{.*}} : tensor<4x16xf32> -> tensor<64xf32>
func.func @main(%x: tensor<3x64xf32> {tcc.kind = "input"},
                %b: tensor<16xf32> {tcc.kind = "param"}) -> tensor<3x64xf32>
    attributes {tcc.entry} {
  %r = tcc.reshape %b : tensor<16xf32> -> tensor<1x16xf32>
  %t = tcc.broadcast_to %r : tensor<1x16xf32> -> tensor<4x16xf32>
  %f = tcc.reshape %t : tensor<4x16xf32> -> tensor<64xf32>
  %a = tcc.add %x, %f : tensor<3x64xf32>, tensor<64xf32> -> tensor<3x64xf32>
  return %a : tensor<3x64xf32>
}

// -----

// Per-head slopes kept as a param times distances of positions (ALiBi):
// a param spread over positions is not derived at load, however small,
// since its consumer computes each element from the param as cheaply (the
// fused attention kernel reads the slopes themselves).
// CHECK-LABEL: func.func @main
// CHECK-NOT: tcc.derived
// CHECK: tcc.mul %{{.*}}, %arg1
// CHECK-NOT: func.func @main_init
func.func @main(%s: tensor<1x4x8x8xf32> {tcc.kind = "input"},
                %slopes: tensor<1x4x1x1xf32> {tcc.kind = "param"}) -> tensor<1x4x8x8xf32>
    attributes {tcc.entry} {
  %r = tcc.iota {axis = 0 : i64} : tensor<8x8xi32>
  %c = tcc.iota {axis = 1 : i64} : tensor<8x8xi32>
  %d = tcc.sub %r, %c : tensor<8x8xi32>, tensor<8x8xi32> -> tensor<8x8xi32>
  %a = tcc.abs %d : tensor<8x8xi32>
  %f = tcc.cast %a {to = f32} : tensor<8x8xi32> -> tensor<8x8xf32>
  %b = tcc.mul %f, %slopes : tensor<8x8xf32>, tensor<1x4x1x1xf32> -> tensor<1x4x8x8xf32>
  %y = tcc.sub %s, %b : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}
