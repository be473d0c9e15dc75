// RUN: tcc-opt %s --split-input-file --verify-diagnostics

// The verifier of tcc.attention: operand ranks and types, sizes, attribute
// shapes, and the regions' signatures.

// K of another rank.
func.func @rank(%q: tensor<1x4x128x64xbf16>, %k: tensor<4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{Q, K, V and the result must have one rank, 2 to 4}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// K in f16 beside bf16.
func.func @mixed_types(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{Q, K, V and the result must be all bf16, all f16 or all f32}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// 3 key/value heads for 4 query heads.
func.func @kv_heads(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{sizes must be positive, kv_heads dividing heads}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 3 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// Strides for two axes of a rank-4 Q.
func.func @strides(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{q_strides must be empty (packed) or one per axis (4)}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, q_strides = array<i64: 64, 1>, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// captured_views naming a tensor the op does not capture.
func.func @views(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{captured_views must name captured tensors by increasing index}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, captured_views = array<i64: 0>, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// A constraint of two numbers.
func.func @mask(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{mask must hold (a, b, c) triples}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, mask = array<i64: 1, -1>, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// A negative scale.
func.func @scale(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{scale must be positive and finite}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = -1.000000e+00 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// No score code and no scale.
func.func @no_scale(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{an empty 'score' needs a scale}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// A captured tensor the score block does not take.
func.func @score_args(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>, %c: tensor<1x4x1x1xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{'score' takes (f32, i32, i32, i32, i32, tensor<1x4x1x1xbf16>): the indices, then the captured tensors}}
  %0 = tcc.attention %q, %k, %v captures(%c : tensor<1x4x1x1xbf16>) attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  ^bb0(%s: f32, %b: i32, %h: i32, %i: i32, %j: i32):
    tcc.yield %s : f32
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// A score block yielding an index.
func.func @score_yield(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{'score' must yield one 'f32'}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  ^bb0(%s: f32, %b: i32, %h: i32, %i: i32, %j: i32):
    tcc.yield %b : i32
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// A key mask yielding an index.
func.func @keep_yield(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{'key_keep' must yield one 'i1'}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  ^bb0(%b: i32, %h: i32, %j: i32):
    tcc.yield %j : i32
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// A key mask flag without the key mask.
func.func @key_mask_alone(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{key_mask_per_head and key_mask_alone need 'key_keep'}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, key_mask_alone, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// A key mask applied alone, without its score code.
func.func @alone_no_score(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{key_mask_alone needs a scale and the change as 'score' too}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, key_mask_alone, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  ^bb0(%b: i32, %h: i32, %j: i32):
    %t = arith.constant true
    tcc.yield %t : i1
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// A 'score' block with no ops (no yield): an error, not a read past the end.
func.func @no_yield(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{'score' must yield one 'f32'}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  ^bb0(%s: f32, %b: i32, %h: i32, %i: i32, %j: i32):
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// The same in 'key_keep'.
func.func @no_yield_keep(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{'key_keep' must yield one 'i1'}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  ^bb0(%b: i32, %h: i32, %j: i32):
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// lq disagreeing with Q's rows.
func.func @lq_mismatch(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{Q must hold 1x4x7x64 elements (batch, heads, rows, columns), the last two axes when packed}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 7 : i64, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// k_transposed with K given [.., Lk, D] (Lk != D): K must be [.., D, Lk].
func.func @k_transposed_shape(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{K must hold 1x4x64x256 elements}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, k_transposed, kv_heads = 4 : i64, lk = 256 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// Sizes whose product overflows 64 bits.
func.func @huge(%q: tensor<128x64xf32>, %k: tensor<128x64xf32>, %v: tensor<128x64xf32>) -> tensor<128x64xf32> {
  // expected-error @+1 {{Q must hold}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4611686018427387904 : i64, kv_heads = 1 : i64, lk = 128 : i64, lq = 9223372036854775807 : i64, scale = 1.250000e-01 : f64} : tensor<128x64xf32>, tensor<128x64xf32>, tensor<128x64xf32> -> tensor<128x64xf32> score {
  } key_keep {
  }
  return %0 : tensor<128x64xf32>
}

// -----

// A negative stride.
func.func @negative_stride(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{o_strides must not be negative}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, o_strides = array<i64: 32768, 8192, -64, 1>, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// An offset without strides: a view is read through strides.
func.func @offset_packed(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{K's offset must be 0, or positive with strides}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, k_offset = 64 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// V, a third of a packed [1, 128, 3·256] tensor, starting past the second
// third: its last row would end beyond the tensor.
func.func @view_past_end(%qkv: tensor<1x128x768xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error @+1 {{V must hold the 1x4x128x64 elements its strides and offset reach}}
  %0 = tcc.attention %qkv, %qkv, %qkv attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, k_offset = 256 : i64, k_strides = array<i64: 98304, 64, 768, 1>, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, q_strides = array<i64: 98304, 64, 768, 1>, scale = 1.250000e-01 : f64, v_offset = 513 : i64, v_strides = array<i64: 98304, 64, 768, 1>} : tensor<1x128x768xbf16>, tensor<1x128x768xbf16>, tensor<1x128x768xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// The same view starting at the last third: valid, an operand of rank 3.
func.func @view_ok(%qkv: tensor<1x128x768xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.attention %qkv, %qkv, %qkv attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, k_offset = 256 : i64, k_strides = array<i64: 98304, 64, 768, 1>, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, q_strides = array<i64: 98304, 64, 768, 1>, scale = 1.250000e-01 : f64, v_offset = 512 : i64, v_strides = array<i64: 98304, 64, 768, 1>} : tensor<1x128x768xbf16>, tensor<1x128x768xbf16>, tensor<1x128x768xbf16> -> tensor<1x4x128x64xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// V of head size 128 where value_dim says 64.
func.func @value_dim(%q: tensor<1x4x128x192xbf16>, %k: tensor<1x4x128x192xbf16>, %v: tensor<1x4x128x128xbf16>) -> tensor<1x4x128x128xbf16> {
  // expected-error @+1 {{V must hold 1x4x128x64 elements (batch, heads, rows, columns), the last two axes when packed}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 192 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64, value_dim = 64 : i64} : tensor<1x4x128x192xbf16>, tensor<1x4x128x192xbf16>, tensor<1x4x128x128xbf16> -> tensor<1x4x128x128xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x128xbf16>
}

// -----

// V's head size not given: head_dim's.
func.func @value_dim_missing(%q: tensor<1x4x128x192xbf16>, %k: tensor<1x4x128x192xbf16>, %v: tensor<1x4x128x128xbf16>) -> tensor<1x4x128x128xbf16> {
  // expected-error @+1 {{V must hold 1x4x128x192 elements (batch, heads, rows, columns), the last two axes when packed}}
  %0 = tcc.attention %q, %k, %v attributes {batch = 1 : i64, head_dim = 192 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64} : tensor<1x4x128x192xbf16>, tensor<1x4x128x192xbf16>, tensor<1x4x128x128xbf16> -> tensor<1x4x128x128xbf16> score {
  } key_keep {
  }
  return %0 : tensor<1x4x128x128xbf16>
}
