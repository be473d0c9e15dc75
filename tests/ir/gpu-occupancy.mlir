// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(tcc-gpu-occupancy))' | FileCheck %s
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(tcc-gpu-occupancy{blocks-per-sm=2}))' | FileCheck %s --check-prefix=TWO
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(tcc-gpu-occupancy{blocks-per-sm=-1}))' | FileCheck %s --check-prefix=NONE
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(tcc-gpu-occupancy{blocks-per-sm=3}))' | FileCheck %s --check-prefix=THREE

// A 512-thread kernel asks for 4 blocks (2048 threads); with blocks-per-sm=2
// for 2; with -1 for nothing.
// CHECK-LABEL: gpu.func @rows
// CHECK-SAME: nvvm.minctasm = 4 : i32
// TWO-LABEL: gpu.func @rows
// TWO-SAME: nvvm.minctasm = 2 : i32
// NONE-LABEL: gpu.func @rows
// NONE-NOT: minctasm
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @rows(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 512, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// Small blocks, kernels without a known block size, and a request already
// made are left alone.
// NONE-LABEL: gpu.func @small
// CHECK-LABEL: gpu.func @small
// CHECK-NOT: minctasm
// CHECK-LABEL: gpu.func @unknown
// CHECK-NOT: minctasm
// CHECK-LABEL: gpu.func @own
// CHECK-SAME: nvvm.minctasm = 1 : i32
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @small(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
    gpu.func @unknown(%a: memref<4xf32>) kernel {
      gpu.return
    }
    gpu.func @own(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, nvvm.minctasm = 1 : i32} {
      gpu.return
    }
  }
}

// -----

// A 256 x 2 block counts 512 threads.
// CHECK-LABEL: gpu.func @two_d
// CHECK-SAME: nvvm.minctasm = 4 : i32
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @two_d(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 256, 2, 1>} {
      gpu.return
    }
  }
}

// -----

// exp lowers with temporaries: full residency would spill (softmax), so the
// default leaves the kernel alone; rsqrt is one instruction. An explicit
// blocks-per-sm applies to both.
// CHECK-LABEL: gpu.func @with_exp
// CHECK-NOT: minctasm
// CHECK-LABEL: gpu.func @with_rsqrt
// CHECK-SAME: nvvm.minctasm = 4 : i32
// TWO-LABEL: gpu.func @with_exp
// TWO-SAME: nvvm.minctasm = 2 : i32
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @with_exp(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 512, 1, 1>} {
      %c0 = arith.constant 0 : index
      %x = memref.load %a[%c0] : memref<4xf32>
      %e = math.exp %x : f32
      memref.store %e, %a[%c0] : memref<4xf32>
      gpu.return
    }
    gpu.func @with_rsqrt(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 512, 1, 1>} {
      %c0 = arith.constant 0 : index
      %x = memref.load %a[%c0] : memref<4xf32>
      %e = math.rsqrt %x : f32
      memref.store %e, %a[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

// A kernel whose blocks synchronise a cluster (a long row spread over its
// blocks, up to 32 values a thread) asks for half the multiprocessor's
// threads: 4 blocks of 256, 64 registers a thread, not full residency's 32.
// CHECK-LABEL: gpu.func @cluster_rows
// CHECK-SAME: nvvm.minctasm = 4 : i32
// TWO-LABEL: gpu.func @cluster_rows
// TWO-SAME: nvvm.minctasm = 2 : i32
// NONE-LABEL: gpu.func @cluster_rows
// NONE-NOT: minctasm
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @cluster_rows(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      nvvm.cluster.arrive {aligned}
      nvvm.cluster.wait {aligned}
      gpu.return
    }
  }
}

// -----

// The same with exp (softmax, cross-entropy over long rows) keeps ptxas's
// choice by default: held to 64 registers ptxas takes all of them where it
// needs 32 to 54, and fewer blocks fit.
// CHECK-LABEL: gpu.func @cluster_rows_exp
// CHECK-NOT: minctasm
// TWO-LABEL: gpu.func @cluster_rows_exp
// TWO-SAME: nvvm.minctasm = 2 : i32
// NONE-LABEL: gpu.func @cluster_rows_exp
// NONE-NOT: minctasm
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @cluster_rows_exp(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %v = memref.load %a[%c0] : memref<4xf32>
      %e = math.exp %v : f32
      nvvm.cluster.arrive {aligned}
      nvvm.cluster.wait {aligned}
      memref.store %e, %a[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

// A schedule's residency is taken as given, above half the
// multiprocessor too: 3 blocks of 512.
// THREE-LABEL: gpu.func @cluster_512
// THREE-SAME: nvvm.minctasm = 3 : i32
// TWO-LABEL: gpu.func @cluster_512
// TWO-SAME: nvvm.minctasm = 2 : i32
// CHECK-LABEL: gpu.func @cluster_512
// CHECK-SAME: nvvm.minctasm = 2 : i32
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @cluster_512(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 512, 1, 1>} {
      nvvm.cluster.arrive {aligned}
      nvvm.cluster.wait {aligned}
      gpu.return
    }
  }
}

// -----

// The values a thread loads must fit the full residency's registers with
// 16 to spare: four 16-byte loads (16 registers) fit 32, so @vectors asks
// for 8 blocks of 256; sixteen scalar loads (2 registers each, the last
// under a guard: 33) do not, so @scalars keeps ptxas's choice (layer norm
// over rows of 4097 spilled 36 bytes held to 32). A load in a loop reuses
// its registers, and shared memory is not counted. A schedule's
// blocks_per_sm is taken as given.
// CHECK-LABEL: gpu.func @vectors
// CHECK-SAME: nvvm.minctasm = 8 : i32
// CHECK-LABEL: gpu.func @scalars
// CHECK-NOT: minctasm
// CHECK-LABEL: gpu.func @looped
// CHECK-SAME: nvvm.minctasm = 8 : i32
// TWO-LABEL: gpu.func @scalars
// TWO-SAME: nvvm.minctasm = 2 : i32
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @vectors(%a: memref<4096xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1024 : index
      %c2 = arith.constant 2048 : index
      %c3 = arith.constant 3072 : index
      %0 = vector.load %a[%c0] : memref<4096xf32>, vector<4xf32>
      %1 = vector.load %a[%c1] : memref<4096xf32>, vector<4xf32>
      %2 = vector.load %a[%c2] : memref<4096xf32>, vector<4xf32>
      %3 = vector.load %a[%c3] : memref<4096xf32>, vector<4xf32>
      gpu.return
    }
    gpu.func @scalars(%a: memref<4097xf32>, %w: memref<4xf32, #gpu.address_space<workgroup>>, %p: i1) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %0 = vector.load %a[%c0] : memref<4097xf32>, vector<1xf32>
      %1 = vector.load %a[%c0] : memref<4097xf32>, vector<1xf32>
      %2 = vector.load %a[%c0] : memref<4097xf32>, vector<1xf32>
      %3 = vector.load %a[%c0] : memref<4097xf32>, vector<1xf32>
      %4 = vector.load %a[%c0] : memref<4097xf32>, vector<1xf32>
      %5 = vector.load %a[%c0] : memref<4097xf32>, vector<1xf32>
      %6 = vector.load %a[%c0] : memref<4097xf32>, vector<1xf32>
      %7 = vector.load %a[%c0] : memref<4097xf32>, vector<1xf32>
      %8 = memref.load %a[%c0] : memref<4097xf32>
      %9 = memref.load %a[%c0] : memref<4097xf32>
      %10 = memref.load %a[%c0] : memref<4097xf32>
      %11 = memref.load %a[%c0] : memref<4097xf32>
      %12 = memref.load %a[%c0] : memref<4097xf32>
      %13 = memref.load %a[%c0] : memref<4097xf32>
      %14 = memref.load %a[%c0] : memref<4097xf32>
      %15 = scf.if %p -> (f32) {
        %l = memref.load %a[%c0] : memref<4097xf32>
        scf.yield %l : f32
      } else {
        %z = arith.constant 0.0 : f32
        scf.yield %z : f32
      }
      %16 = memref.load %w[%c0] : memref<4xf32, #gpu.address_space<workgroup>>
      gpu.return
    }
    gpu.func @looped(%a: memref<4097xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      scf.for %i = %c0 to %c64 step %c1 {
        %0 = memref.load %a[%i] : memref<4097xf32>
        %1 = memref.load %a[%i] : memref<4097xf32>
        %2 = memref.load %a[%i] : memref<4097xf32>
        %3 = memref.load %a[%i] : memref<4097xf32>
        %4 = memref.load %a[%i] : memref<4097xf32>
        %5 = memref.load %a[%i] : memref<4097xf32>
        %6 = memref.load %a[%i] : memref<4097xf32>
        %7 = memref.load %a[%i] : memref<4097xf32>
        %8 = memref.load %a[%i] : memref<4097xf32>
      }
      gpu.return
    }
  }
}
