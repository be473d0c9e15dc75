// Test kernels for the CUDA backend of libtccrt (tests/gpu). Lowered to PTX by
// make_ptx.py with mlir-opt; every kernel takes one pointer per buffer (the
// bare-pointer calling convention the bundle format specifies), and sizes are
// static, as the compiler's kernels are.
module attributes {gpu.container_module} {
  gpu.module @tcc_gpu_test {
    // c = a + b over 4099 elements: a 1-D grid with a partial last block.
    gpu.func @add_f32(%a: memref<4099xf32>, %b: memref<4099xf32>,
                      %c: memref<4099xf32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %n = arith.constant 4099 : index
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %x = memref.load %a[%i] : memref<4099xf32>
        %y = memref.load %b[%i] : memref<4099xf32>
        %s = arith.addf %x, %y : f32
        memref.store %s, %c[%i] : memref<4099xf32>
      }
      gpu.return
    }

    // c = a * b over 4099 elements.
    gpu.func @mul_f32(%a: memref<4099xf32>, %b: memref<4099xf32>,
                      %c: memref<4099xf32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %n = arith.constant 4099 : index
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %x = memref.load %a[%i] : memref<4099xf32>
        %y = memref.load %b[%i] : memref<4099xf32>
        %p = arith.mulf %x, %y : f32
        memref.store %p, %c[%i] : memref<4099xf32>
      }
      gpu.return
    }

    // out[z][j][i] = in[z][i][j]: x runs over columns, y over rows and z over
    // the batch, so a wrong grid or block dimension shows in the result.
    gpu.func @transpose_f32(%in: memref<3x67x131xf32>,
                            %out: memref<3x131x67xf32>) kernel {
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %bz = gpu.block_id z
      %dx = gpu.block_dim x
      %dy = gpu.block_dim y
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %x0 = arith.muli %bx, %dx : index
      %col = arith.addi %x0, %tx : index
      %y0 = arith.muli %by, %dy : index
      %row = arith.addi %y0, %ty : index
      %rows = arith.constant 67 : index
      %cols = arith.constant 131 : index
      %inr = arith.cmpi ult, %row, %rows : index
      %inc = arith.cmpi ult, %col, %cols : index
      %ok = arith.andi %inr, %inc : i1
      scf.if %ok {
        %v = memref.load %in[%bz, %row, %col] : memref<3x67x131xf32>
        memref.store %v, %out[%bz, %col, %row] : memref<3x131x67xf32>
      }
      gpu.return
    }

    // out[i] = data[idx[i]] over 777 indices; an index outside [0, 1000)
    // gives 0 and counts in status[0], as the compiler's run-time checks do.
    gpu.func @gather_f32(%data: memref<1000xf32>, %idx: memref<777xi32>,
                         %out: memref<777xf32>, %status: memref<1xi32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %n = arith.constant 777 : index
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %k = memref.load %idx[%i] : memref<777xi32>
        %zero = arith.constant 0 : i32
        %size = arith.constant 1000 : i32
        %ge = arith.cmpi sge, %k, %zero : i32
        %lt = arith.cmpi slt, %k, %size : i32
        %valid = arith.andi %ge, %lt : i1
        scf.if %valid {
          %kk = arith.index_cast %k : i32 to index
          %v = memref.load %data[%kk] : memref<1000xf32>
          memref.store %v, %out[%i] : memref<777xf32>
        } else {
          %fzero = arith.constant 0.0 : f32
          memref.store %fzero, %out[%i] : memref<777xf32>
          %one = arith.constant 1 : i32
          %c0 = arith.constant 0 : index
          %old = memref.atomic_rmw addi %one, %status[%c0]
              : (i32, memref<1xi32>) -> i32
        }
      }
      gpu.return
    }

    // out[b] = sum of x[256 b .. 256 b + 255]: a tree reduction in dynamic
    // shared memory (the launch's shared_bytes, at least 1024), 256 threads.
    gpu.func @block_sum_f32(%x: memref<8192xf32>, %out: memref<32xf32>) kernel {
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c128 = arith.constant 128 : index
      %c256 = arith.constant 256 : index
      %raw = gpu.dynamic_shared_memory
          : memref<?xi8, #gpu.address_space<workgroup>>
      %shm = memref.view %raw[%c0][]
          : memref<?xi8, #gpu.address_space<workgroup>>
            to memref<256xf32, #gpu.address_space<workgroup>>
      %base = arith.muli %bid, %c256 : index
      %i = arith.addi %base, %tid : index
      %v = memref.load %x[%i] : memref<8192xf32>
      memref.store %v, %shm[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      scf.for %k = %c0 to %c8 step %c1 {
        %stride = arith.shrui %c128, %k : index
        %active = arith.cmpi ult, %tid, %stride : index
        scf.if %active {
          %j = arith.addi %tid, %stride : index
          %p = memref.load %shm[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
          %q = memref.load %shm[%j] : memref<256xf32, #gpu.address_space<workgroup>>
          %s = arith.addf %p, %q : f32
          memref.store %s, %shm[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
        }
        gpu.barrier
      }
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %r = memref.load %shm[%c0] : memref<256xf32, #gpu.address_space<workgroup>>
        memref.store %r, %out[%bid] : memref<32xf32>
      }
      gpu.return
    }

    // CUDA only: begin (make_hsaco.py leaves this part out)
    // A TMA copy through a tensor map passed by value (the runtime appends
    // it after the pointers): block (bx, by), one thread, loads the 16x8 f32
    // box at (bx*16, by*8) of the map into shared memory and writes it to
    // out[by*8 + r][bx*16 + c], rows of nctaid.x*16 floats. Elements of the
    // box outside the map's dims arrive as zeros.
    llvm.mlir.global internal @tma_tile() {addr_space = 3 : i32, alignment = 128 : i64} : !llvm.array<128 x f32>
    llvm.mlir.global internal @tma_bar() {addr_space = 3 : i32, alignment = 8 : i64} : i64
    llvm.func @tma_tile_f32(%out: !llvm.ptr,
        %tmap: !llvm.ptr {llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant, llvm.align = 64 : i64})
        attributes {nvvm.kernel} {
      %tile = llvm.mlir.addressof @tma_tile : !llvm.ptr<3>
      %bar = llvm.mlir.addressof @tma_bar : !llvm.ptr<3>
      %bx = nvvm.read.ptx.sreg.ctaid.x : i32
      %by = nvvm.read.ptx.sreg.ctaid.y : i32
      %nbx = nvvm.read.ptx.sreg.nctaid.x : i32
      %c8 = llvm.mlir.constant(8 : i32) : i32
      %c16 = llvm.mlir.constant(16 : i32) : i32
      %bytes = llvm.mlir.constant(512 : i32) : i32
      %x = llvm.mul %bx, %c16 : i32
      %y = llvm.mul %by, %c8 : i32
      llvm.inline_asm has_side_effects asm_dialect = att
          "mbarrier.init.shared::cta.b64 [$0], 1;\0A\09fence.proxy.async.shared::cta;",
          "l" %bar : (!llvm.ptr<3>) -> ()
      llvm.inline_asm has_side_effects asm_dialect = att
          "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
          "l,r" %bar, %bytes : (!llvm.ptr<3>, i32) -> ()
      llvm.inline_asm has_side_effects asm_dialect = att
          "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
          "l,l,r,r,l" %tile, %tmap, %x, %y, %bar
          : (!llvm.ptr<3>, !llvm.ptr, i32, i32, !llvm.ptr<3>) -> ()
      llvm.inline_asm has_side_effects asm_dialect = att
          "{\0A\09.reg .pred done;\0A\09wait:\0A\09mbarrier.try_wait.parity.shared::cta.b64 done, [$0], 0;\0A\09@!done bra wait;\0A\09}",
          "l" %bar : (!llvm.ptr<3>) -> ()
      // Row pitch of out: nctaid.x * 16 floats.
      %pitch = llvm.mul %nbx, %c16 : i32
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %c128 = llvm.mlir.constant(128 : i32) : i32
      llvm.br ^loop(%c0 : i32)
    ^loop(%i: i32):
      %more = llvm.icmp "ult" %i, %c128 : i32
      llvm.cond_br %more, ^body, ^done
    ^body:
      %r = llvm.udiv %i, %c16 : i32
      %c = llvm.urem %i, %c16 : i32
      %src = llvm.getelementptr %tile[%i] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
      %v = llvm.load %src : !llvm.ptr<3> -> f32
      %row = llvm.add %y, %r : i32
      %col = llvm.add %x, %c : i32
      %rp = llvm.mul %row, %pitch : i32
      %idx = llvm.add %rp, %col : i32
      %idx64 = llvm.zext %idx : i32 to i64
      %dst = llvm.getelementptr %out[%idx64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      llvm.store %v, %dst : f32, !llvm.ptr
      %next = llvm.add %i, %c1 : i32
      llvm.br ^loop(%next : i32)
    ^done:
      llvm.return
    }
    // CUDA only: end
  }
}
