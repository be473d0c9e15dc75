#!/usr/bin/env python3
"""The f32 SIMT attention kernel run without a GPU.

    simt_interp_test.py TCC_SIMT_GEN

For each case, tcc-simt-gen builds the kernel of compiler/gpu/SimtAttention.cpp
(generic MLIR); a lockstep interpreter runs it block by block, each SSA value
an array over the block's threads (scf.if with a per-thread condition masks
the stores of each side; gpu.shuffle permutes lanes), on random inputs, and
the output must match a float64 NumPy reference within the f32 bound of
tests/gpu/attention_test.py, (32 + 2 sqrt(Lk)) units of 2^-24 of max|O|,
with NaN exactly where every score of a row is -inf under the NaN policy.
Shared memory starts as NaN (a read of a value never written shows), and
every access is checked against the barriers: a thread reading or
overwriting another thread's shared value with no barrier between them is
a race, which lockstep execution would otherwise hide. A cp.async copy
(nvgpu.device_async_copy) lands only when its thread waits for its group
(device_async_wait), as a write of that thread then; any access to its
bytes before that is a race too.

What the interpreter cannot see: timing, and ex2.approx's error (it computes
2^x in f32). The GPU replay (attention_test.py) checks those.
"""
import json
import re
import struct
import subprocess
import sys

import numpy as np

OP_RE = re.compile(r'^\s*(?:(%\w+)(?::(\d+))? = )?"([\w.]+)"\((.*?)\)(.*)$')


class Op:
    def __init__(self, name, results, operands, rest):
        self.name, self.results, self.operands, self.rest = name, results, operands, rest
        self.regions = []  # (block argument names, ops)


def parse(lines, i=0):
    """The ops from lines[i] to the end of their region, and where it ends."""
    ops = []
    while i < len(lines):
        s = lines[i].strip()
        if s.startswith('})') or s.startswith('}, {'):
            return ops, i
        m = OP_RE.match(lines[i])
        i += 1
        if not m:
            continue
        res, nres, name, operands, rest = m.groups()
        results = [] if not res else [res] if not nres else \
            ['%s#%d' % (res, k) for k in range(int(nres))]
        op = Op(name, results, [o.strip() for o in operands.split(',') if o.strip()], rest)
        if rest.rstrip().endswith('({'):
            while True:
                args, header = [], ''
                if lines[i].strip().startswith('^bb'):
                    header = lines[i]
                    args = re.findall(r'(%\w+):', header)
                    i += 1
                body, i = parse(lines, i)
                op.regions.append((args, body, header))
                s = lines[i].strip()
                op.rest += ' ' + s
                i += 1
                if not s.startswith('}, {'):
                    break
        ops.append(op)
    return ops, i


MEMREF_RE = re.compile(r'(%\w+): memref<([\dx]+)x\w+(?:, strided<\[([-\d, ]+)\]>)?>')


def memref_strides(header):
    """The element strides of each memref argument of a region header
    (`^bb0(%a: memref<2x3xf32, strided<[8, 1]>>, ...)`; identity: packed)."""
    out = {}
    for name, dims, strides in MEMREF_RE.findall(header):
        shape = [int(x) for x in dims.split('x')]
        if strides:
            out[name] = [int(x) for x in strides.split(',')]
        else:
            out[name] = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    return out


def constant(op):
    flag = re.search(r'value = (true|false)\}>', op.rest)
    if flag:
        return np.bool_(flag.group(1) == 'true')
    text, ty = re.search(r'value = (.*?) : ([\w<>x]+)\}>', op.rest).groups()
    if text.startswith('dense<'):
        n = int(re.search(r'vector<(\d+)x', ty).group(1))
        return np.full(n, float(text[6:-1]), np.float32)
    if text.startswith('0x'):
        return np.float32(struct.unpack('>f', bytes.fromhex(text[2:]))[0])
    if ty == 'f32':
        return np.float32(float(text))
    return np.int64(int(text))


class Block:
    """One thread block, run in lockstep."""

    def __init__(self, threads, memory, shared_bytes):
        self.T = threads
        self.tid = np.arange(threads, dtype=np.int64)
        self.memory = memory  # global memref argument -> (flat array, strides)
        n = shared_bytes // 4
        self.shared = np.full(n, np.nan, np.float32)
        self.epoch = 0  # barriers passed
        self.w_epoch, self.w_tid = np.full(n, -1), np.full(n, -1)
        self.r_epoch, self.r_tid = np.full(n, -1), np.full(n, -1)  # -2: several readers
        self.pending = np.zeros(n, bool)  # the target of a cp.async not waited for
        self.groups, self.open = [], []  # committed and uncommitted cp.async copies
        self.races = []

    def run(self, ops, env, bid):
        self.bid = bid
        self.active = np.ones(self.T, bool)
        self.shared[:] = np.nan
        self.epoch += 1
        assert not self.groups and not self.open and not self.pending.any(), \
            'cp.async copies not waited for at the end of a block'
        self.ops(ops, env)

    def uniform(self, v):
        a = np.asarray(v)
        if a.ndim == 0:
            return a.item()
        assert (a == a.flat[0]).all(), 'a per-thread value where a uniform one is needed'
        return a.flat[0].item()

    def region(self, region, env, args):
        for n, a in zip(region[0], args):
            env[n] = a
        return self.ops(region[1], env)

    def ops(self, ops, env):
        for op in ops:
            r = self.op(op, env)
            if op.name in ('scf.yield', 'gpu.return'):
                return r
            if op.results:
                for n, v in zip(op.results, r if len(op.results) > 1 else [r]):
                    env[n] = v
        return None

    def address(self, ref, idx):
        if ref[0] == 'shared':
            return self.shared, ref[1] + idx[0]
        flat, strides = self.memory[ref[1]]
        at = 0
        for st, i in zip(strides, idx):
            at = at + st * np.asarray(i)
        return flat, at

    def race(self, what):
        if len(self.races) < 3:
            self.races.append('%s at barrier epoch %d of block %s' % (what, self.epoch, self.bid))

    def check_read(self, at, tids):
        if self.pending[at].any():
            self.race('a read of a cp.async target before its wait')
        bad = (self.w_epoch[at] == self.epoch) & (self.w_tid[at] != tids)
        if bad.any():
            self.race("a read of another thread's write")
        fresh = self.r_epoch[at] != self.epoch
        other = ~fresh & (self.r_tid[at] != tids)
        self.r_tid[at] = np.where(fresh, tids, np.where(other, -2, self.r_tid[at]))
        self.r_epoch[at] = self.epoch

    def check_write(self, at, tids, values):
        if self.pending[at].any():
            self.race('a write over a cp.async target before its wait')
        war = (self.r_epoch[at] == self.epoch) & (self.r_tid[at] != tids)
        waw = (self.w_epoch[at] == self.epoch) & (self.w_tid[at] != tids) & \
            (self.shared[at] != values)
        if war.any() or waw.any():
            self.race("a write over another thread's " + ('read' if war.any() else 'write'))
        self.w_epoch[at] = self.epoch
        self.w_tid[at] = tids

    def op(self, op, env):  # noqa: C901 (one case per op)
        n = op.name
        a = [env[o] for o in op.operands]
        if n == 'arith.constant':
            return constant(op)
        if n in ('arith.addi', 'arith.addf'):
            return a[0] + a[1]
        if n in ('arith.subi', 'arith.subf'):
            return a[0] - a[1]
        if n in ('arith.muli', 'arith.mulf'):
            with np.errstate(invalid='ignore'):  # 0 * inf: the NaN policy's rows
                return a[0] * a[1]
        if n == 'arith.divf':
            with np.errstate(divide='ignore', invalid='ignore'):
                return np.float32(a[0]) / np.float32(a[1])
        if n == 'arith.divui':
            return a[0] // a[1]
        if n == 'arith.remui':
            return a[0] % a[1]
        if n == 'arith.divsi':
            return np.fix(np.asarray(a[0]) / a[1]).astype(np.int64)
        if n == 'arith.remsi':
            x = np.asarray(a[0])
            return x - np.fix(x / a[1]).astype(np.int64) * a[1]
        if n == 'arith.xori':
            return np.logical_xor(a[0], a[1]) if np.asarray(a[0]).dtype == bool else a[0] ^ a[1]
        if n in ('arith.minui', 'arith.minsi'):
            return np.minimum(a[0], a[1])
        if n == 'arith.maxsi':
            return np.maximum(a[0], a[1])
        if n == 'arith.andi':
            return np.logical_and(a[0], a[1]) if np.asarray(a[0]).dtype == bool else a[0] & a[1]
        if n == 'arith.ori':
            return np.logical_or(a[0], a[1])
        if n == 'arith.maxnumf':
            return np.fmax(a[0], a[1])
        if n == 'arith.negf':
            return -a[0]
        if n == 'arith.index_cast':
            return a[0]
        if n == 'arith.extf':  # 16-bit values are held as f32 already
            return np.asarray(a[0], np.float32)
        if n == 'arith.truncf':
            return round_to(np.asarray(a[0], np.float32),
                            re.search(r'-> vector<\d+x(\w+)>', op.rest).group(1))
        if n == 'arith.sitofp':
            return np.asarray(a[0]).astype(np.float32)
        if n == 'arith.cmpi':
            x, y = np.asarray(a[0]), np.asarray(a[1])
            p = int(re.search(r'predicate = (\d+)', op.rest).group(1))
            return [x == y, x != y, x < y, x <= y, x > y, x >= y, x < y, x <= y, x > y, x >= y][p]
        if n == 'arith.cmpf':
            assert re.search(r'predicate = 1 ', op.rest), 'only oeq'
            return np.asarray(a[0]) == np.asarray(a[1])
        if n == 'arith.select':
            c, x, y = np.asarray(a[0]), np.asarray(a[1]), np.asarray(a[2])
            if c.ndim == 1 and max(x.ndim, y.ndim) == 2:
                c = c[:, None]
            return np.where(c, x, y)
        if n in ('llvm.intr.fma', 'vector.fma'):  # one rounding
            return (np.asarray(a[0], np.float64) * a[1] + np.asarray(a[2], np.float64)).astype(
                np.float32)
        if n == 'llvm.call_intrinsic' and 'llvm.nvvm.vote.any.sync' in op.rest:
            assert self.uniform(a[0]) == -1, 'a partial warp mask'
            flag = np.broadcast_to(np.asarray(a[1]), (self.T,)).reshape(-1, 32)
            return np.repeat(flag.any(axis=1), 32)
        if n == 'llvm.call_intrinsic' and 'llvm.amdgcn.ballot.i64' in op.rest:
            # AMD's wave of 64 (a block of 32: one wave, half its lanes):
            # the count of its lanes holding the flag stands for the mask
            # (compared with 0 only).
            assert self.active.all(), 'a ballot in a divergent branch'
            w = min(64, self.T)
            flag = np.broadcast_to(np.asarray(a[0]), (self.T,)).reshape(-1, w)
            return np.repeat(flag.sum(axis=1), w).astype(np.int64)
        if n == 'llvm.call_intrinsic' and 'llvm.amdgcn.ds.bpermute' in op.rest:
            # Lane addr / 4 of the thread's wave of 64 (AMD's opaque()).
            lane = np.broadcast_to(np.asarray(a[0]), (self.T,)) // 4
            v = np.broadcast_to(np.asarray(a[1]), (self.T,))
            return v[self.tid // 64 * 64 + lane % 64]
        if n == 'llvm.call_intrinsic':
            assert 'llvm.nvvm.ex2.approx' in op.rest or 'llvm.amdgcn.exp2' in op.rest, op.rest
            with np.errstate(over='ignore'):
                return np.exp2(np.asarray(a[0], np.float32))
        if n == 'llvm.inline_asm':  # the opaque mov and the nounroll pragma
            return a[0] if op.results else None
        if n == 'gpu.thread_id':
            return self.tid
        if n == 'gpu.block_id':
            return np.int64(self.bid['xyz'.index(re.search(r'dim (\w)', op.rest).group(1))])
        if n == 'gpu.barrier':
            self.epoch += 1
            return None
        if n == 'gpu.shuffle':
            assert 'xor' in op.rest
            v = np.broadcast_to(np.asarray(a[0]), (self.T,))
            return [v[self.tid ^ self.uniform(a[1])], np.ones(self.T, bool)]
        if n == 'nvgpu.device_async_copy':
            seg = [int(x) for x in re.search(r'operandSegmentSizes = array<i32: ([\d, ]+)>',
                                             op.rest).group(1).split(',')]
            width = int(re.search(r'dstElements = (\d+)', op.rest).group(1))
            dst, di = a[0], a[1:1 + seg[1]]
            src, si = a[1 + seg[1]], a[2 + seg[1]:2 + seg[1] + seg[3]]
            count = a[-1] if seg[4] else width
            sarr, sat = self.address(src, si)
            darr, dat = self.address(dst, di)
            live = self.active
            sat = np.broadcast_to(sat, (self.T,))[live][:, None] + np.arange(width)
            dat = np.broadcast_to(dat, (self.T,))[live][:, None] + np.arange(width)
            assert darr is self.shared and (sat >= 0).all() and (sat < sarr.size).all() and \
                (dat >= 0).all() and (dat < darr.size).all(), 'a cp.async out of bounds'
            keep = np.arange(width)[None, :] < np.broadcast_to(count, (self.T,))[live][:, None]
            val = np.where(keep, sarr[sat], np.float32(0))
            tids = np.repeat(self.tid[live], width).reshape(-1, width)
            # Against earlier accesses: reads by other threads since the last
            # barrier, copies not waited for (writes: when it lands).
            if ((self.r_epoch[dat] == self.epoch) & (self.r_tid[dat] != tids)).any():
                self.race("a cp.async over another thread's read")
            if self.pending[dat].any():
                self.race('a cp.async over a cp.async target before its wait')
            self.pending[dat] = True
            self.open.append((dat, tids, val))
            return None
        if n == 'nvgpu.device_async_create_group':
            self.groups.append(self.open)
            self.open = []
            return None
        if n == 'nvgpu.device_async_wait':
            keep = int(re.search(r'numGroups = (\d+)', op.rest).group(1))
            done = self.groups[:max(0, len(self.groups) - keep)]
            self.groups = self.groups[len(done):]
            for group in done:
                for dat, tids, val in group:
                    self.pending[dat] = False
                    self.check_write(dat, tids, val)
                    self.shared[dat] = val
            return None
        if n == 'gpu.dynamic_shared_memory':
            return ('raw',)
        if n == 'memref.view':
            return ('shared', self.uniform(a[1]) // 4)
        if n in ('vector.load', 'memref.load'):
            width = int(re.search(r'vector<(\d+)x(?:f32|f16|bf16)>', op.rest).group(1)) \
                if n == 'vector.load' else 1
            arr, at = self.address(a[0], a[1:])
            at = np.where(self.active, np.broadcast_to(at, (self.T,)), 0)
            assert (at >= 0).all() and (at + width <= arr.size).all(), 'a load out of bounds'
            at = at[:, None] + np.arange(width)
            if arr is self.shared:
                live = self.active
                self.check_read(at[live], np.repeat(self.tid[live], width).reshape(-1, width))
            return arr[at] if n == 'vector.load' else arr[at[:, 0]]
        if n == 'memref.store':  # K given transposed into shared memory, O's elements
            arr, at = self.address(a[1], a[2:])
            at = np.broadcast_to(at, (self.T,))[self.active][:, None]
            val = np.broadcast_to(np.asarray(a[0]), (self.T,))[self.active][:, None]
            assert (at >= 0).all() and (at < arr.size).all(), 'a store out of bounds'
            if arr is self.shared:
                self.check_write(at, self.tid[self.active][:, None], val)
            arr[at] = val
            return None
        if n == 'vector.store':
            width = int(re.search(r'vector<(\d+)x(?:f32|f16|bf16)>', op.rest).group(1))
            arr, at = self.address(a[1], a[2:])
            at = np.broadcast_to(at, (self.T,))[self.active][:, None] + np.arange(width)
            val = np.broadcast_to(np.asarray(a[0]), (self.T, width))[self.active]
            assert (at >= 0).all() and (at < arr.size).all(), 'a store out of bounds'
            if arr is self.shared:
                self.check_write(at, np.repeat(self.tid[self.active], width).reshape(-1, width),
                                 val)
            arr[at] = val
            return None
        if n == 'vector.extract':
            pos = int(re.search(r'static_position = array<i64: (\d+)>', op.rest).group(1))
            return np.asarray(a[0])[..., pos]
        if n == 'vector.broadcast':
            width = int(re.search(r'-> vector<(\d+)xf32>', op.rest).group(1))
            return np.repeat(np.broadcast_to(np.asarray(a[0]), (self.T,))[:, None], width, axis=1)
        if n == 'vector.from_elements':
            return np.stack([np.broadcast_to(x, (self.T,)) for x in a], axis=-1)
        if n in ('scf.yield', 'gpu.return'):
            return a
        if n == 'scf.for':
            lo, hi, step = (self.uniform(x) for x in a[:3])
            vals = list(a[3:])
            for iv in range(lo, hi, step):
                vals = self.region(op.regions[0], env, [np.int64(iv)] + vals)
            return vals if len(op.results) > 1 else (vals[0] if vals else None)
        if n == 'scf.if':
            c = np.broadcast_to(np.asarray(a[0]), (self.T,))
            saved = self.active
            has_else = len(op.regions) > 1 and op.regions[1][1]
            if not saved.any() or (c[saved] == c[saved][0]).all():
                take = bool(c[saved][0]) if saved.any() else True
                r = self.region(op.regions[0], env, []) if take else \
                    self.region(op.regions[1], env, []) if has_else else []
            else:
                self.active = saved & c
                r1 = self.region(op.regions[0], env, [])
                self.active = saved & ~c
                r2 = self.region(op.regions[1], env, []) if has_else else []
                self.active = saved
                r = []
                for x, y in zip(r1 or [], r2 or []):
                    x, y = np.asarray(x), np.asarray(y)
                    r.append(np.where(c[:, None] if max(x.ndim, y.ndim) == 2 else c, x, y))
            return r if len(op.results) > 1 else (r[0] if r else None)
        raise NotImplementedError(n)


def round_to(x, dtype):
    """f32 values `x` rounded to `dtype` (f16, bf16: to nearest even), held
    as f32."""
    if dtype == 'f16':
        with np.errstate(over='ignore'):
            return x.astype(np.float16).astype(np.float32)
    assert dtype == 'bf16', dtype
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    out = bits.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, out)


def run_func(func, launch, buffers, shared):
    """Runs gpu.func `func` over the grid of `launch` on `buffers` (its
    arguments: flat arrays laid out as the memref types' strides say, written
    in place); returns the races found."""
    assert func.name == 'gpu.func', func.name
    args, body, header = func.regions[0]
    strides = memref_strides(header)
    memory = {name: (x.reshape(-1), strides[name]) for name, x in zip(args, buffers)}
    for x in buffers:
        assert np.shares_memory(x.reshape(-1), x), 'a buffer that is not flat in memory'
    block = Block(launch['block'][0], memory, shared)
    gx, gy, gz = launch['grid']
    for bz in range(gz):
        for by in range(gy):
            for bx in range(gx):
                block.run(body, {n: ('global', n) for n in args}, (bx, by, bz))
    return block.races


def run_kernel(text, launch, inputs, o, q_shape):
    """Runs the kernel of generic-form module `text` on `inputs` (the buffers
    of q, k, v and the captured tensors) into buffer `o`, or the split-K
    form's partial kernel and then its combine; returns the races found.
    `q_shape`: O's shape (V's head size)."""
    ops, _ = parse(text.split('\n'))
    funcs = ops[0].regions[0][1][0].regions[0][1]
    if 'combine' not in launch:
        return run_func(funcs[0], launch, list(inputs[:3]) + [o] + list(inputs[3:]),
                        launch['shared'])
    # Scratch starts as NaN too: a partial result never written shows.
    # The partial results keep the head size rounded up to 4 (16-byte rows).
    b, h, lq, d = q_shape
    c = launch['chunks']
    part = np.full((b, h, c, lq, -(-d // 4) * 4), np.nan, np.float32)
    stats = np.full((b, h, c, lq, 2), np.nan, np.float32)
    races = run_func(funcs[0], launch, list(inputs[:3]) + [part, stats] + list(inputs[3:]),
                     launch['shared'])
    # The combine reads the scratch with batch and head merged.
    return races + run_func(funcs[1], launch['combine'], [part, stats, o], 0)


def strided(shape, strides, fill):
    """A flat buffer holding a tensor of `shape` at element `strides`, every
    element `fill`, and the tensor's view into it."""
    size = 1 + sum((n - 1) * st for n, st in zip(shape, strides))
    buf = np.full(size, fill, np.float32)
    view = np.lib.stride_tricks.as_strided(buf, shape, [4 * st for st in strides])
    return buf, view


def layout_strides(flags, which, shape):
    """The strides the case's flags give tensor `which` (q, k, v, o) of
    logical `shape` [B, H, rows, D]: --X-strides, else --layout (--o-layout
    for O) blhd (the [B, rows, H, D] tensor), else packed."""
    if '--%s-strides' % which in flags:
        return [int(x) for x in flags['--%s-strides' % which].split(',')]
    layout = flags.get('--o-layout' if which == 'o' and '--o-layout' in flags else '--layout',
                       'bhld')
    b, h, r, d = shape
    if layout == 'blhd':
        return [r * h * d, d, h * d, 1]
    return [h * r * d, r * d, d, 1]


def blocked_scores(q, k, block):
    """Q K^T as the kernel sums it in f32: over d in blocks of `block`, each
    a chain of FMAs from the first product, then added to the score (the
    products, exact in float64, and each sum rounded to f32)."""
    f32 = lambda x: x.astype(np.float32).astype(np.float64)  # noqa: E731
    d = q.shape[-1]
    s = np.zeros(q.shape[:-1] + k.shape[-2:-1])
    for d0 in range(0, d, block):
        part = None
        for e in range(d0, min(d0 + block, d)):
            prod = q[..., e, None] * k[..., None, :, e]
            part = f32(prod if part is None else part + prod)
        s = f32(s + part)
    return s


def reference(q, k, v, scale, keep, change, nan_rows, blocked=0):
    """float64 attention; `keep` (q, k) -> mask, `change` (s, h, q, k);
    `blocked`: on Q K^T summed as the kernel does in blocks of that many d
    (blocked_scores)."""
    g = q.shape[1] // k.shape[1]
    k = np.repeat(k, g, axis=1).astype(np.float64)
    v = np.repeat(v, g, axis=1).astype(np.float64)
    q = q.astype(np.float64)
    s = (blocked_scores(q, k, blocked) if blocked else q @ np.swapaxes(k, -1, -2)) * scale
    lq, lk = s.shape[-2:]
    r, c = np.arange(lq)[:, None], np.arange(lk)[None, :]
    h = np.arange(q.shape[1])[:, None, None]
    s = change(s, h, r, c)
    kept = keep(r, c) & np.ones_like(s, bool)
    s = np.where(kept, s, -np.inf)
    with np.errstate(invalid='ignore'):
        p = np.exp(s - s.max(-1, keepdims=True))
        o = p / p.sum(-1, keepdims=True) @ v
    if not nan_rows:
        o = np.where(kept.any(-1)[..., None], o, 0.0)
    return o


def alibi(hq):
    return lambda s, h, r, c: s + np.exp2(-8.0 * (h + 1) / hq) * (c - r)


def softcap(cap):
    return lambda s, h, r, c: cap * np.tanh(s / cap)


ALL = lambda r, c: np.ones(np.broadcast(r, c).shape, bool)  # noqa: E731
CAUSAL = lambda r, c: r >= c  # noqa: E731
SAME = lambda s, h, r, c: s  # noqa: E731


def RUNS(n):  # noqa: N802 (a mask, like CAUSAL)
    return lambda r, c: ((c // n) % 3 != 1) & (r >= 0)

# (flags, keep, change, NaN rows): small shapes (the interpreter is Python),
# odd lengths, both K/V buffer layouts, GQA, decode, head dims whose 16-byte
# chunks do not fill the key threads, every mask path (exact bounds, tiles
# skipped, rows with nothing kept), score code, the algebra callbacks.
CASES = [
    ('--lq 40 --lk 70 --d 16 --hq 2 --causal --schedule 16,32,1', CAUSAL, SAME, False),
    ('--lq 40 --lk 70 --d 16 --hq 2 --causal --schedule 16,32,0', CAUSAL, SAME, False),
    ('--lq 33 --lk 65 --d 20 --batch 2 --schedule 16,64,1', ALL, SAME, False),
    ('--lq 17 --lk 100 --d 80 --hq 2 --hkv 2 --schedule 16,128,0', ALL, SAME, False),
    ('--lq 70 --lk 70 --d 24 --causal --schedule 64,32,0', CAUSAL, SAME, False),
    # 128 query rows, 512 threads, K and V by cp.async (headDim 128's tiling).
    ('--lq 130 --lk 100 --d 16 --causal --schedule 128,64,1', CAUSAL, SAME, False),
    ('--lq 1 --lk 300 --d 32 --hq 4 --hkv 2', ALL, SAME, False),
    ('--lq 100 --lk 130 --d 16 --hq 2 --hkv 1 --causal --window 16 --schedule 16,32,1',
     lambda r, c: (r >= c) & (c - r + 15 >= 0), SAME, False),
    # Two slopes: the loop bounds are loose, whole tiles are skipped inside.
    ('--lq 100 --lk 230 --d 16 --mask 2,-1,0 --mask -1,1,20 --schedule 16,32,0',
     lambda r, c: (2 * r - c >= 0) & (c - r + 20 >= 0), SAME, False),
    ('--lq 100 --lk 230 --d 16 --mask 2,-1,0 --mask -1,1,20 --schedule 16,32,1',
     lambda r, c: (2 * r - c >= 0) & (c - r + 20 >= 0), SAME, False),
    ('--lq 20 --lk 50 --d 16 --mask 0,-1,-1 --schedule 16,32,1',
     lambda r, c: (c <= -1), SAME, False),
    ('--lq 20 --lk 50 --d 16 --mask 1,-1,-5 --masked-rows nan --schedule 16,32,1',
     lambda r, c: (r - c - 5 >= 0), SAME, True),
    ('--lq 50 --lk 90 --d 16 --hq 4 --alibi --causal --schedule 16,32,1', CAUSAL, alibi(4), False),
    ('--lq 50 --lk 90 --d 32 --softcap 5 --scale 1 --schedule 32,64,0', ALL, softcap(5.0), False),
    ('--lq 30 --lk 61 --d 16 --causal --algebra-callbacks --schedule 16,32,1', CAUSAL, SAME,
     False),
    # A key mask: runs of 40 dropped keys, whole 32-key tiles skipped at run
    # time (every warp votes on flags read a tile ahead); with causal and a
    # softcap. Rows 40-79 keep nothing causally allowed but keys they drop:
    # NaN under the NaN policy.
    ('--lq 70 --lk 250 --d 16 --hq 2 --key-runs 40 --schedule 16,32,1', RUNS(40), SAME, False),
    ('--lq 100 --lk 100 --d 16 --causal --key-runs 40 --masked-rows nan --schedule 16,32,0',
     lambda r, c: (r >= c) & RUNS(40)(r, c), SAME, True),
    ('--lq 40 --lk 130 --d 16 --softcap 5 --scale 1 --key-runs 30 --schedule 16,64,1', RUNS(30),
     softcap(5.0), False),
    # The split-K (decode) form: partial kernels over chunks of key tiles,
    # then the combine. GQA with a ragged last chunk; causal rows that leave
    # most chunks empty (m = -inf, l = 0); a key mask dropping a whole chunk;
    # rows keeping nothing (NaN through the combine); score code and the
    # algebra callbacks (the combine's correction); the chosen schedule.
    ('--lq 1 --lk 300 --d 32 --hq 4 --hkv 2 --schedule 16,32,1 --chunk-tiles 3', ALL, SAME,
     False),
    ('--lq 3 --lk 200 --d 16 --hq 2 --causal --schedule 16,32,0 --chunk-tiles 2', CAUSAL, SAME,
     False),
    ('--lq 5 --lk 250 --d 16 --hq 2 --key-runs 64 --schedule 16,32,1 --chunk-tiles 2', RUNS(64),
     SAME, False),
    ('--lq 20 --lk 100 --d 16 --mask 1,-1,-5 --masked-rows nan --schedule 16,32,1 '
     '--chunk-tiles 1', lambda r, c: (r - c - 5 >= 0), SAME, True),
    ('--lq 2 --lk 150 --d 16 --hq 2 --alibi --algebra-callbacks --schedule 16,32,1 '
     '--chunk-tiles 1', ALL, alibi(2), False),
    ('--lq 4 --lk 130 --d 24 --softcap 5 --scale 1 --schedule 16,32,0 --chunk-tiles 2', ALL,
     softcap(5.0), False),
    ('--lq 1 --lk 1100 --d 64 --hq 2', ALL, SAME, False),
    # Strided tensors: Q, K, V and O as [B, L, H, D] buffers (--layout
    # blhd), O alone, O's rows padded (the gaps must stay unwritten); the
    # split-K form with O's batch and head mergeable (lq 1) and not (the
    # combine then indexes the 4-D tensor).
    ('--lq 33 --lk 65 --d 20 --batch 2 --hq 4 --hkv 2 --causal --layout blhd '
     '--schedule 16,64,1', CAUSAL, SAME, False),
    ('--lq 17 --lk 40 --d 24 --hq 2 --o-layout blhd --o-strides 1,1000,28,1 '
     '--schedule 16,32,0', ALL, SAME, False),
    ('--lq 1 --lk 300 --d 32 --batch 2 --hq 4 --hkv 2 --layout blhd --schedule 16,32,1 '
     '--chunk-tiles 3', ALL, SAME, False),
    ('--lq 3 --lk 130 --d 20 --batch 2 --hq 2 --causal --layout blhd --schedule 16,32,0 '
     '--chunk-tiles 2', CAUSAL, SAME, False),
    # Register tiles other than 4 x 4 (--schedule's ROWS,KEYS): 8 x 4
    # (chooseSimtAttentionSchedule's at head dim 128, here at its own tile
    # sizes too) with odd lengths, masks (partial tiles, skipped tiles, rows
    # keeping nothing), GQA on strided tensors, a key mask, split-K decode;
    # 4 x 8 and 8 x 8 with score code.
    ('--lq 130 --lk 70 --d 128 --causal --schedule 128,64,1,8,4', CAUSAL, SAME, False),
    ('--lq 37 --lk 101 --d 20 --hq 2 --causal --schedule 32,32,1,8,4', CAUSAL, SAME, False),
    ('--lq 50 --lk 230 --d 16 --mask 2,-1,0 --mask -1,1,20 --schedule 32,32,0,8,4',
     lambda r, c: (2 * r - c >= 0) & (c - r + 20 >= 0), SAME, False),
    ('--lq 20 --lk 50 --d 16 --mask 1,-1,-5 --masked-rows nan --schedule 16,64,1,8,4',
     lambda r, c: (r - c - 5 >= 0), SAME, True),
    ('--lq 40 --lk 130 --d 24 --batch 2 --hq 4 --hkv 2 --layout blhd --schedule 32,64,1,8,4',
     ALL, SAME, False),
    ('--lq 70 --lk 250 --d 16 --hq 2 --key-runs 40 --schedule 16,64,0,8,4', RUNS(40), SAME,
     False),
    ('--lq 3 --lk 300 --d 32 --hq 4 --hkv 2 --schedule 16,64,1,8,4 --chunk-tiles 2', ALL, SAME,
     False),
    ('--lq 33 --lk 90 --d 16 --hq 2 --alibi --causal --schedule 16,64,0,4,8', CAUSAL, alibi(2),
     False),
    ('--lq 30 --lk 170 --d 24 --softcap 5 --scale 1 --schedule 16,128,1,8,8', ALL,
     softcap(5.0), False),
    # The AMD form (--chip gfx942, gfx90a: copies through registers, waves of
    # 64 lanes voting by ballot, v_exp_f32): prefill with masks, tiles
    # skipped by a key mask, GQA on strided tensors, the chosen schedules,
    # the split-K pair; f16 and bf16 inputs widened to f32 in the copies, O
    # rounded to the dtype.
    ('--lq 40 --lk 70 --d 16 --hq 2 --causal --schedule 16,64,1 --chip gfx942', CAUSAL, SAME,
     False),
    ('--lq 100 --lk 230 --d 16 --mask 2,-1,0 --mask -1,1,20 --schedule 32,32,0 --chip gfx942',
     lambda r, c: (2 * r - c >= 0) & (c - r + 20 >= 0), SAME, False),
    ('--lq 70 --lk 250 --d 16 --hq 2 --key-runs 40 --schedule 16,64,1 --chip gfx90a', RUNS(40),
     SAME, False),
    # 32 threads: one wave with half its lanes (head dim 256's tiles).
    ('--lq 40 --lk 200 --d 16 --causal --key-runs 30 --schedule 16,32,1 --chip gfx942',
     lambda r, c: (r >= c) & RUNS(30)(r, c), SAME, False),
    ('--lq 33 --lk 65 --d 20 --batch 2 --hq 4 --hkv 2 --causal --layout blhd --chip gfx942',
     CAUSAL, SAME, False),
    ('--lq 50 --lk 90 --d 32 --hq 4 --alibi --causal --chip gfx90a', CAUSAL, alibi(4), False),
    ('--lq 1 --lk 300 --d 32 --hq 4 --hkv 2 --chip gfx942', ALL, SAME, False),
    ('--lq 3 --lk 200 --d 16 --hq 2 --causal --key-runs 64 --masked-rows nan '
     '--schedule 16,64,1 --chunk-tiles 1 --chip gfx942',
     lambda r, c: (r >= c) & RUNS(64)(r, c), SAME, True),
    ('--lq 37 --lk 101 --d 24 --hq 2 --causal --type f16 --schedule 64,32,1,8,4 --chip gfx942',
     CAUSAL, SAME, False),
    ('--lq 30 --lk 70 --d 32 --hq 4 --hkv 2 --type bf16 --key-runs 30 --chip gfx90a', RUNS(30),
     SAME, False),
    ('--lq 2 --lk 300 --d 16 --hq 2 --type bf16 --schedule 16,64,0 --chunk-tiles 2 --chip gfx942',
     ALL, SAME, False),
    # K given transposed ([B, H, D, Lk]): 4 keys of one d a chunk, scattered
    # into K's rows; ragged key tiles, GQA, split-K.
    ('--lq 37 --lk 104 --d 20 --hq 2 --causal --k-transposed --schedule 16,64,1 --chip gfx942',
     CAUSAL, SAME, False),
    ('--lq 3 --lk 296 --d 32 --hq 4 --hkv 2 --type f16 --k-transposed --schedule 16,64,0 '
     '--chunk-tiles 2 --chip gfx90a', ALL, SAME, False),
]

# Rows of no whole 16-byte chunks (head sizes that are not multiples of 4)
# or not 16 bytes apart (strides): read and written element by element,
# computed on the head size rounded up to 4 with the padding zero; copies
# through registers also where cp.async would be (NVIDIA f32). Prefill with
# K and V apart and shared, a head size of 6, Q's rows 18 floats apart, O's
# rows padded (the gaps stay unwritten), the split-K pair, K given
# transposed, f16 on NVIDIA, and AMD's form in bf16.
CASES += [
    ('--lq 33 --lk 70 --d 18 --hq 2 --causal --schedule 16,32,1', CAUSAL, SAME, False),
    ('--lq 20 --lk 90 --d 6 --schedule 16,32,0', ALL, SAME, False),
    ('--lq 4 --lk 40 --d 16 --q-strides 1,64,18,1', ALL, SAME, False),
    ('--lq 17 --lk 40 --d 21 --hq 2 --o-layout blhd --o-strides 1,1000,23,1 '
     '--schedule 16,32,0', ALL, SAME, False),
    ('--lq 3 --lk 200 --d 18 --hq 2 --causal --schedule 16,32,0 --chunk-tiles 2', CAUSAL, SAME,
     False),
    ('--lq 37 --lk 104 --d 18 --hq 2 --causal --k-transposed --schedule 16,64,1', CAUSAL, SAME,
     False),
    # K given transposed with a key count that is not a multiple of 4: its
    # chunks read key by key (the last straddles lk).
    ('--lq 37 --lk 103 --d 18 --hq 2 --causal --k-transposed --schedule 16,64,1', CAUSAL, SAME,
     False),
    ('--lq 20 --lk 61 --d 16 --k-transposed --type f16 --schedule 16,32,1', ALL, SAME, False),
    ('--lq 3 --lk 301 --d 32 --hq 4 --hkv 2 --type bf16 --k-transposed --schedule 16,64,0 '
     '--chunk-tiles 2 --chip gfx942', ALL, SAME, False),
    ('--lq 37 --lk 101 --d 30 --hq 2 --causal --type f16 --schedule 64,32,1,8,4', CAUSAL, SAME,
     False),
    ('--lq 30 --lk 70 --d 14 --hq 4 --hkv 2 --type bf16 --key-runs 30 --chip gfx90a', RUNS(30),
     SAME, False),
    ('--lq 1 --lk 300 --d 13 --batch 2 --hq 4 --hkv 2 --layout blhd --type bf16 '
     '--schedule 16,32,1 --chunk-tiles 2 --chip gfx942', ALL, SAME, False),
]

# V of another head size than Q and K (DeepSeek's MLA and the like): O's
# chunks are V's, Q K^T's Q's; narrower and wider, K and V apart and
# shared, a head size of no whole chunk on either side, the layout blhd,
# the split-K pair, AMD's form in f16.
CASES += [
    ('--lq 37 --lk 101 --d 48 --dv 32 --hq 2 --causal --schedule 16,32,1', CAUSAL, SAME, False),
    ('--lq 20 --lk 90 --d 16 --dv 40 --schedule 16,32,0', ALL, SAME, False),
    ('--lq 33 --lk 70 --d 18 --dv 10 --hq 2 --hkv 1 --causal --schedule 16,32,1', CAUSAL, SAME,
     False),
    ('--lq 25 --lk 60 --d 12 --dv 20 --batch 2 --hq 2 --layout blhd --schedule 16,32,0', ALL,
     SAME, False),
    ('--lq 3 --lk 200 --d 24 --dv 16 --hq 4 --hkv 2 --causal --schedule 16,32,0 '
     '--chunk-tiles 2', CAUSAL, SAME, False),
    ('--lq 37 --lk 101 --d 32 --dv 16 --hq 2 --causal --type f16 --schedule 32,32,1 '
     '--chip gfx942', CAUSAL, SAME, False),
]

# Large scores (Q x 30), where the rounding of Q K^T dominates the error:
# checked against float64 softmax and P V of the scores summed in the
# kernel's order (blocked_scores, in blocks of the JSON's score_block: 8
# where registers allow, else 4). The scores being the kernel's own, what
# is left is the f32 softmax and P V, which with scores this large (few
# keys weigh) err by about 2-3.5 units of 2^-24 of max|O|: allowed 16. One
# FMA chain over d (the kernel before: 1.5-2.8x the error of SDPA's
# efficient backend on the GPU) errs by 30-260 units against this, blocks
# of 4 where the kernel takes 8 (or the reverse) by 24-125 (on these
# cases' inputs drawn first), so the order cannot quietly change. Their
# error against float64 itself is printed.
LARGE = [
    ('--lq 16 --lk 300 --d 256 --schedule 16,64,1', ALL, SAME, False),
    ('--lq 16 --lk 300 --d 256 --schedule 16,64,1,8,4', ALL, SAME, False),
    ('--lq 32 --lk 300 --d 100 --schedule 32,64,1,8,4', ALL, SAME, False),
    # minBlocks 8: 128 registers a thread, blocks of 4.
    ('--lq 32 --lk 300 --d 128 --schedule 32,64,1,8,4,8', ALL, SAME, False),
    ('--lq 32 --lk 300 --d 64 --schedule 32,64,1,4,4,8', ALL, SAME, False),
]

# Strides the templates must refuse (flags, the reason's words).
REFUSED = [
    ('--lq 4 --lk 40 --d 300', "head dim must be in [1, 256]"),
    ('--lq 4 --lk 40 --d 16 --dv 300', "V's head dim must be in [1, 256]"),
    ('--lq 4 --lk 40 --d 16 --k-strides 1,640,16,2', "K's strides must have the innermost 1"),
    ('--lq 4 --lk 40 --d 16 --hq 2 --o-strides 1,16,16,1', "O's strides overlap its elements"),
    ('--lq 4 --lk 40 --d 16 --hq 2 --hkv 2 --v-strides 1,0,16,1', "V's strides must be positive"),
]


def main():
    gen = sys.argv[1]
    failed = 0
    for flags, words in REFUSED:
        p = subprocess.run([gen] + flags.split(), capture_output=True, text=True)
        ok = p.returncode == 1 and words in p.stderr and len(p.stderr.strip().split('\n')) == 1
        failed += not ok
        print('%s %s: refused (%s)' % ('PASS' if ok else 'FAIL', flags, p.stderr.strip()))
    rng = np.random.default_rng(20261201)
    for n, (flags, keep, change, nan_rows) in enumerate(CASES + LARGE):
        large = n >= len(CASES)
        argv = flags.split()
        p = subprocess.run([gen] + argv, capture_output=True, text=True)
        if p.returncode:
            print('FAIL %s: tcc-simt-gen: %s' % (flags, p.stderr.strip()))
            failed += 1
            continue
        launch, text = p.stdout.split('\n', 1)
        launch = json.loads(launch)
        val = {f: argv[i + 1] for i, f in enumerate(argv) if f.startswith('--') and
               i + 1 < len(argv) and not argv[i + 1].startswith('--')}
        b, hq = int(val.get('--batch', 1)), int(val.get('--hq', 1))
        hkv, lq, lk, d = int(val.get('--hkv', 1)), int(val['--lq']), int(val['--lk']), int(val['--d'])
        dv = int(val.get('--dv', d))
        scale = float(np.float32(float(val['--scale']) if '--scale' in val else 1 / np.sqrt(d)))
        q = rng.standard_normal((b, hq, lq, d)).astype(np.float32)
        k = rng.standard_normal((b, hkv, lk, d)).astype(np.float32)
        v = rng.standard_normal((b, hkv, lk, dv)).astype(np.float32)
        if large:
            q *= 30
        # 16-bit inputs: values of the dtype (held as f32, as the kernel's
        # widened copies hold them); O is rounded to it, half a unit of
        # its last place of max|O| more.
        dtype = val.get('--type', 'f32')
        if dtype != 'f32':
            q, k, v = (round_to(x, dtype) for x in (q, k, v))
        # Each tensor in a buffer of its layout; O's starts as NaN (elements
        # never written show, and so do writes between O's elements).
        bufs = []
        for name, x in (('q', q), ('k', k), ('v', v)):
            if name == 'k' and '--k-transposed' in argv:  # [B, H, D, Lk]
                x = np.swapaxes(k, -1, -2)
            buf, view = strided(x.shape, layout_strides(val, name, x.shape), 0.0)
            view[...] = x
            bufs.append(buf)
        o_shape = q.shape[:-1] + (dv,)
        o_strides = layout_strides(val, 'o', o_shape)
        o_buf, o_view = strided(o_shape, o_strides, np.nan)
        races = run_kernel(text, launch, bufs, o_buf, o_shape)
        o = o_view.copy()
        written, _ = strided(o_shape, o_strides, 0.0)
        np.lib.stride_tricks.as_strided(written, o_shape, [4 * st for st in o_strides])[...] = 1
        if not np.isnan(o_buf[written == 0]).all():
            races.append('a write between the elements of O')
        ref = reference(q, k, v, scale, keep, change, nan_rows,
                        launch['score_block'] if large else 0)
        nan = np.isnan(ref)
        ulp = {'f32': 0.0, 'f16': 2.0 ** -11, 'bf16': 2.0 ** -8}[dtype]
        bound = (2.0 ** -24 * (16 if large else 32 + 2 * np.sqrt(lk)) + ulp) * (
            np.abs(ref[~nan]).max() if (~nan).any() else 1.0)
        same = (np.isnan(o) == nan).all()
        err = np.abs(o[~nan] - ref[~nan]).max() if same and (~nan).any() else 0.0 if same \
            else np.inf
        ok = same and err <= bound and not races
        failed += not ok
        if large:
            exact = reference(q, k, v, scale, keep, change, nan_rows)
            flags += ' (Q x 30, to f32 scores in blocks of %d; float64: %.3g)' % (
                launch['score_block'], np.abs(o - exact).max())
        print('%s %s (schedule %s): max error %.3g, allowed %.3g%s' % (
            'PASS' if ok else 'FAIL', flags, launch['schedule'], err, bound,
            '' if same else ', NaN where the reference has none or the reverse') +
            ''.join('; race: ' + r for r in races))
    print('%d failed' % failed)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
