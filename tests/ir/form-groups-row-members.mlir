// RUN: tcc-opt %s --split-input-file --tcc-form-groups=row-members=true | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-form-groups | FileCheck %s --check-prefix=HOST

// Cross-entropy as the canonicaliser leaves it: the target's logit gathered
// (one a row), its index check, the log-softmax chain on the gathered value,
// and the mean over the rows. With row members the chain's group takes the
// gather, the check and the mean: one kernel reads the logits and targets
// once. Without (the host), four groups.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: %[[G:.*]]:2 = tcc.group "chain" -> tensor<i32>, tensor<1x1xf32> {
// CHECK:   tcc.take_along_axis
// CHECK:   tcc.index_check
// CHECK:   tcc.chain
// CHECK:   tcc.reduce_mean
// CHECK: }
// CHECK-NOT: tcc.group
// CHECK: return %[[G]]#1, %[[G]]#0
// HOST-LABEL: func.func @cross_entropy
// HOST: tcc.group "take_along_axis"
// HOST: tcc.group "index_check"
// HOST: tcc.group "chain"
// HOST: tcc.group "reduce_mean"
func.func @cross_entropy(%x: tensor<6x7xf32>, %t: tensor<6x1xi64>) -> (tensor<1x1xf32>, tensor<i32>) {
  %p = tcc.take_along_axis %x, %t {axis = 1 : i64} : tensor<6x7xf32>, tensor<6x1xi64> -> tensor<6x1xf32>
  %c = tcc.index_check %t {bound = 7 : i64} : tensor<6x1xi64> -> tensor<i32>
  %l = tcc.chain attributes {axis = 1 : i64} -> tensor<6x1xf32> {
    %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %d = tcc.sub %x, %m : tensor<6x7xf32>, tensor<6x1xf32> -> tensor<6x7xf32>
    %e = tcc.exp %d : tensor<6x7xf32>
    %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %g = tcc.log %s : tensor<6x1xf32>
    %a = tcc.sub %p, %m : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>
    %b = tcc.sub %a, %g : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>
    %n = tcc.neg %b : tensor<6x1xf32>
    tcc.yield %n : tensor<6x1xf32>
  }
  %y = tcc.reduce_mean %l {axes = array<i64: 0>, keepdims = true} : tensor<6x1xf32> -> tensor<1x1xf32>
  return %y, %c : tensor<1x1xf32>, tensor<i32>
}

// -----

// Two values a row gathered ([6, 2] indices): not one value a row, so the
// gather and its check keep their kernels; a mean over the chain's whole
// [6, 7] result is not a reduction of per-row values: it keeps its own.
// CHECK-LABEL: func.func @not_row_members
// CHECK: tcc.group "take_along_axis"
// CHECK: tcc.group "index_check"
// CHECK: tcc.group "chain"
// CHECK-NOT: tcc.reduce_mean
// CHECK: tcc.yield
// CHECK: tcc.group "reduce_mean"
func.func @not_row_members(%x: tensor<6x7xf32>, %t: tensor<6x2xi64>) -> (tensor<6x2xf32>, tensor<i32>, tensor<1x1xf32>) {
  %p = tcc.take_along_axis %x, %t {axis = 1 : i64} : tensor<6x7xf32>, tensor<6x2xi64> -> tensor<6x2xf32>
  %c = tcc.index_check %t {bound = 7 : i64} : tensor<6x2xi64> -> tensor<i32>
  %l = tcc.chain attributes {axis = 1 : i64} -> tensor<6x7xf32> {
    %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %d = tcc.sub %x, %m : tensor<6x7xf32>, tensor<6x1xf32> -> tensor<6x7xf32>
    %e = tcc.exp %d : tensor<6x7xf32>
    %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %q = tcc.div %e, %s : tensor<6x7xf32>, tensor<6x1xf32> -> tensor<6x7xf32>
    tcc.yield %q : tensor<6x7xf32>
  }
  %y = tcc.reduce_mean %l {axes = array<i64: 0, 1>, keepdims = true} : tensor<6x7xf32> -> tensor<1x1xf32>
  return %p, %c, %y : tensor<6x2xf32>, tensor<i32>, tensor<1x1xf32>
}

// -----

// ONNX's SoftmaxCrossEntropyLoss as imported: [N] targets reshaped to
// [N, 1] for the gather. The gather takes the reshape in (a view in its
// kernel), and the chain takes both: one group.
// CHECK-LABEL: func.func @onnx_targets
// CHECK: tcc.group "chain"
// CHECK-NEXT: tcc.reshape
// CHECK-NEXT: tcc.take_along_axis
// CHECK-NEXT: tcc.index_check
// CHECK: tcc.reduce_mean
// CHECK-NOT: tcc.group
func.func @onnx_targets(%x: tensor<6x7xf32>, %t: tensor<6xi64>) -> (tensor<f32>, tensor<i32>) {
  %r = tcc.reshape %t : tensor<6xi64> -> tensor<6x1xi64>
  %p = tcc.take_along_axis %x, %r {axis = 1 : i64} : tensor<6x7xf32>, tensor<6x1xi64> -> tensor<6x1xf32>
  %c = tcc.index_check %r {bound = 7 : i64} : tensor<6x1xi64> -> tensor<i32>
  %l = tcc.chain attributes {axis = 1 : i64} -> tensor<6x1xf32> {
    %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %d = tcc.sub %x, %m : tensor<6x7xf32>, tensor<6x1xf32> -> tensor<6x7xf32>
    %e = tcc.exp %d : tensor<6x7xf32>
    %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %g = tcc.log %s : tensor<6x1xf32>
    %a = tcc.sub %p, %m : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>
    %b = tcc.sub %a, %g : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>
    %n = tcc.neg %b : tensor<6x1xf32>
    tcc.yield %n : tensor<6x1xf32>
  }
  %y = tcc.reduce_mean %l {axes = array<i64: 0, 1>, keepdims = false} : tensor<6x1xf32> -> tensor<f32>
  return %y, %c : tensor<f32>, tensor<i32>
}

// -----

// A row gather no chain takes keeps its index check apart (together they
// would make one long row of the gather's kernel).
// CHECK-LABEL: func.func @lone_row_gather
// CHECK: tcc.group "take_along_axis"
// CHECK-NOT: tcc.index_check
// CHECK: tcc.yield
// CHECK: tcc.group "index_check"
func.func @lone_row_gather(%x: tensor<6x7xf32>, %t: tensor<6x1xi64>) -> (tensor<6x1xf32>, tensor<i32>) {
  %p = tcc.take_along_axis %x, %t {axis = 1 : i64} : tensor<6x7xf32>, tensor<6x1xi64> -> tensor<6x1xf32>
  %c = tcc.index_check %t {bound = 7 : i64} : tensor<6x1xi64> -> tensor<i32>
  return %p, %c : tensor<6x1xf32>, tensor<i32>
}

// -----

// SoftmaxCrossEntropyLoss with ignore_index (-100, as PyTorch exports it):
// the kept entries' mask and the targets sent to class 0 are per-row
// elementwise ops that the gather takes in; the loss's select, the count of
// kept entries, both sums and the division of the two totals (which the
// row kernel's last block computes) join the chain: one group.
// CHECK-LABEL: func.func @ignore_index
// CHECK: tcc.group "chain"
// CHECK-DAG: tcc.not_equal
// CHECK-DAG: tcc.take_along_axis
// CHECK-DAG: tcc.index_check
// CHECK: tcc.chain
// CHECK-COUNT-2: tcc.reduce_sum {{.*}} -> tensor<f32>
// CHECK: tcc.div
// CHECK: tcc.yield
// CHECK-NOT: tcc.group
func.func @ignore_index(%x: tensor<6x7xf32>, %t: tensor<6xi64>) -> (tensor<f32>, tensor<i32>) {
  %r = tcc.reshape %t : tensor<6xi64> -> tensor<6x1xi64>
  %ign = tcc.constant {value = -100 : i64} : tensor<i64>
  %zi = tcc.constant {value = 0 : i64} : tensor<i64>
  %keep = tcc.not_equal %r, %ign : tensor<6x1xi64>, tensor<i64> -> tensor<6x1xi1>
  %safe = tcc.select %keep, %r, %zi : tensor<6x1xi1>, tensor<6x1xi64>, tensor<i64> -> tensor<6x1xi64>
  %p = tcc.take_along_axis %x, %safe {axis = 1 : i64} : tensor<6x7xf32>, tensor<6x1xi64> -> tensor<6x1xf32>
  %c = tcc.index_check %safe {bound = 7 : i64} : tensor<6x1xi64> -> tensor<i32>
  %l = tcc.chain attributes {axis = 1 : i64} -> tensor<6x1xf32> {
    %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %d = tcc.sub %x, %m : tensor<6x7xf32>, tensor<6x1xf32> -> tensor<6x7xf32>
    %e = tcc.exp %d : tensor<6x7xf32>
    %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %g = tcc.log %s : tensor<6x1xf32>
    %a = tcc.sub %p, %m : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>
    %b = tcc.sub %a, %g : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>
    %n = tcc.neg %b : tensor<6x1xf32>
    tcc.yield %n : tensor<6x1xf32>
  }
  %zf = tcc.constant {value = 0.0 : f32} : tensor<f32>
  %of = tcc.constant {value = 1.0 : f32} : tensor<f32>
  %loss = tcc.select %keep, %l, %zf : tensor<6x1xi1>, tensor<6x1xf32>, tensor<f32> -> tensor<6x1xf32>
  %w = tcc.select %keep, %of, %zf : tensor<6x1xi1>, tensor<f32>, tensor<f32> -> tensor<6x1xf32>
  %total = tcc.reduce_sum %loss {axes = array<i64: 0, 1>, keepdims = false} : tensor<6x1xf32> -> tensor<f32>
  %count = tcc.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : tensor<6x1xf32> -> tensor<f32>
  %y = tcc.div %total, %count : tensor<f32>, tensor<f32> -> tensor<f32>
  return %y, %c : tensor<f32>, tensor<i32>
}

// -----

// What the row kernel cannot place stays out of the chain's group: an
// argmax (a value and an index, not one combiner), and an op of a whole
// reduction's result (l - mean(l): the mean exists only after the launch).
// CHECK-LABEL: func.func @not_in_the_row_kernel
// CHECK: tcc.group "chain"
// CHECK-NOT: tcc.argmax
// CHECK: tcc.reduce_mean
// CHECK-NOT: tcc.sub %{{.*}}, %{{.*}} : tensor<6x1xf32>, tensor<1x1xf32>
// CHECK: tcc.yield
// CHECK: tcc.group "argmax"
// CHECK: tcc.group "elementwise"
// CHECK-NEXT: tcc.sub %{{.*}}, %{{.*}} : tensor<6x1xf32>, tensor<1x1xf32>
func.func @not_in_the_row_kernel(%x: tensor<6x7xf32>) -> (tensor<1x1xi64>, tensor<6x1xf32>) {
  %l = tcc.chain attributes {axis = 1 : i64} -> tensor<6x1xf32> {
    %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %d = tcc.sub %x, %m : tensor<6x7xf32>, tensor<6x1xf32> -> tensor<6x7xf32>
    %e = tcc.exp %d : tensor<6x7xf32>
    %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    tcc.yield %s : tensor<6x1xf32>
  }
  %a = tcc.argmax %l {axis = 0 : i64, keepdims = true} : tensor<6x1xf32> -> tensor<1x1xi64>
  %y = tcc.reduce_mean %l {axes = array<i64: 0, 1>, keepdims = true} : tensor<6x1xf32> -> tensor<1x1xf32>
  %c = tcc.sub %l, %y : tensor<6x1xf32>, tensor<1x1xf32> -> tensor<6x1xf32>
  return %a, %c : tensor<1x1xi64>, tensor<6x1xf32>
}

// -----

// SoftmaxCrossEntropyLoss with class weights and ignore_index: the lookup
// of each row's weight (a gather from the 1-D weights at the targets)
// joins the logits' gather's group, so the chain takes both; the weighted
// loss's sum, the weights' sum and their division join the chain.
// CHECK-LABEL: func.func @weighted
// CHECK: tcc.group "chain"
// CHECK-DAG: tcc.take_along_axis
// CHECK-DAG: tcc.gather
// CHECK-DAG: tcc.index_check
// CHECK: tcc.chain
// CHECK-COUNT-2: tcc.reduce_sum {{.*}} -> tensor<f32>
// CHECK: tcc.div
// CHECK: tcc.yield
// CHECK-NOT: tcc.group
func.func @weighted(%x: tensor<6x7xf32>, %t: tensor<6xi64>, %w: tensor<7xf32>) -> (tensor<f32>, tensor<i32>) {
  %r = tcc.reshape %t : tensor<6xi64> -> tensor<6x1xi64>
  %ign = tcc.constant {value = -100 : i64} : tensor<i64>
  %zi = tcc.constant {value = 0 : i64} : tensor<i64>
  %keep = tcc.not_equal %r, %ign : tensor<6x1xi64>, tensor<i64> -> tensor<6x1xi1>
  %safe = tcc.select %keep, %r, %zi : tensor<6x1xi1>, tensor<6x1xi64>, tensor<i64> -> tensor<6x1xi64>
  %p = tcc.take_along_axis %x, %safe {axis = 1 : i64} : tensor<6x7xf32>, tensor<6x1xi64> -> tensor<6x1xf32>
  %c = tcc.index_check %safe {bound = 7 : i64} : tensor<6x1xi64> -> tensor<i32>
  %wt = tcc.gather %w, %safe {axis = 0 : i64} : tensor<7xf32>, tensor<6x1xi64> -> tensor<6x1xf32>
  %zf = tcc.constant {value = 0.0 : f32} : tensor<f32>
  %kw = tcc.select %keep, %wt, %zf : tensor<6x1xi1>, tensor<6x1xf32>, tensor<f32> -> tensor<6x1xf32>
  %l = tcc.chain attributes {axis = 1 : i64} -> tensor<6x1xf32> {
    %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %d = tcc.sub %x, %m : tensor<6x7xf32>, tensor<6x1xf32> -> tensor<6x7xf32>
    %e = tcc.exp %d : tensor<6x7xf32>
    %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %g = tcc.log %s : tensor<6x1xf32>
    %a = tcc.sub %p, %m : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>
    %b = tcc.sub %a, %g : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>
    %n = tcc.neg %b : tensor<6x1xf32>
    %nw = tcc.mul %n, %wt : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>
    %k = tcc.select %keep, %nw, %zf : tensor<6x1xi1>, tensor<6x1xf32>, tensor<f32> -> tensor<6x1xf32>
    tcc.yield %k : tensor<6x1xf32>
  }
  %total = tcc.reduce_sum %l {axes = array<i64: 0, 1>, keepdims = false} : tensor<6x1xf32> -> tensor<f32>
  %wsum = tcc.reduce_sum %kw {axes = array<i64: 0, 1>, keepdims = false} : tensor<6x1xf32> -> tensor<f32>
  %y = tcc.div %total, %wsum : tensor<f32>, tensor<f32> -> tensor<f32>
  return %y, %c : tensor<f32>, tensor<i32>
}

// -----

// Cross-entropy with 1-D targets [R] and an ignore_index, as a user writes
// it: the targets' mask and class in [R], reshaped to [R, 1] for the
// gather; the chain's [R, 1] losses reshaped back to [R], masked, summed,
// and divided by the count of kept targets. [R] and [R, 1] hold the same
// per-row values: one group takes the index ops, the gather, its check
// (which stands after the chain), both sums and the division.
// CHECK-LABEL: func.func @cross_entropy_flat_targets
// CHECK: %[[G:.*]]:2 = tcc.group "chain"
// CHECK:   tcc.not_equal
// CHECK:   tcc.take_along_axis
// CHECK:   tcc.chain
// CHECK:   tcc.index_check
// CHECK:   tcc.reduce_sum
// CHECK:   tcc.reduce_sum
// CHECK:   tcc.div
// CHECK: }
// CHECK-NOT: tcc.group
// HOST-LABEL: func.func @cross_entropy_flat_targets
// HOST-COUNT-5: tcc.group
func.func @cross_entropy_flat_targets(%x: tensor<6x7xf32>, %t: tensor<6xi64>) -> (tensor<f32>, tensor<i32>) {
  %ign = tcc.constant {value = -100 : i64} : tensor<i64>
  %keep = tcc.not_equal %t, %ign : tensor<6xi64>, tensor<i64> -> tensor<6xi1>
  %zi = tcc.constant {value = 0 : i64} : tensor<i64>
  %ts = tcc.select %keep, %t, %zi : tensor<6xi1>, tensor<6xi64>, tensor<i64> -> tensor<6xi64>
  %t2 = tcc.reshape %ts : tensor<6xi64> -> tensor<6x1xi64>
  %p = tcc.take_along_axis %x, %t2 {axis = 1 : i64} : tensor<6x7xf32>, tensor<6x1xi64> -> tensor<6x1xf32>
  %l = tcc.chain attributes {axis = 1 : i64} -> tensor<6x1xf32> {
    %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %d = tcc.sub %x, %m : tensor<6x7xf32>, tensor<6x1xf32> -> tensor<6x7xf32>
    %e = tcc.exp %d : tensor<6x7xf32>
    %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<6x7xf32> -> tensor<6x1xf32>
    %lg = tcc.log %s : tensor<6x1xf32>
    %a = tcc.sub %p, %m : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>
    %r = tcc.sub %a, %lg : tensor<6x1xf32>, tensor<6x1xf32> -> tensor<6x1xf32>
    tcc.yield %r : tensor<6x1xf32>
  }
  %c = tcc.index_check %t2 {bound = 7 : i64} : tensor<6x1xi64> -> tensor<i32>
  %flat = tcc.reshape %l : tensor<6x1xf32> -> tensor<6xf32>
  %n = tcc.neg %flat : tensor<6xf32>
  %zf = tcc.constant {value = 0.0 : f32} : tensor<f32>
  %nm = tcc.select %keep, %n, %zf : tensor<6xi1>, tensor<6xf32>, tensor<f32> -> tensor<6xf32>
  %tot = tcc.reduce_sum %nm {axes = array<i64: 0>, keepdims = false} : tensor<6xf32> -> tensor<f32>
  %kf = tcc.cast %keep : tensor<6xi1> -> tensor<6xf32>
  %cnt = tcc.reduce_sum %kf {axes = array<i64: 0>, keepdims = false} : tensor<6xf32> -> tensor<f32>
  %y = tcc.div %tot, %cnt : tensor<f32>, tensor<f32> -> tensor<f32>
  return %y, %c : tensor<f32>, tensor<i32>
}
