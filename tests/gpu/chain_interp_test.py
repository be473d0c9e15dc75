#!/usr/bin/env python3
"""Chains along one axis (tcc-gpu-column-chains) run without a GPU.

    chain_interp_test.py TCC

For each case, `tcc compile` prints the kernel function right after
tcc-gpu-column-chains (generic MLIR: memref arguments, scratch buffers, the
gpu.launch ops in order), and a lockstep interpreter runs it: each launch
block by block, every SSA value an array over the block's threads
(simt_interp_test.py's Block: scf.if masks each side's stores, gpu.shuffle
permutes lanes, shared memory starts as NaN and every access is checked
against the barriers, so a race between threads shows). Loops whose bounds
differ between threads (each thread's slice) run until the last thread's
ends, the others masked. The results must match column_chains_test.py's
float64 reference (each primitive rounded to the dtype) within its
tolerance, with NaN where the reference has NaN (columns every position of
which a mask drops).

The cases cover each mapping the pass chooses, at sizes the interpreter
runs in seconds: columns in one launch; few columns split into parts over
blocks (partials, then the results); rows too long for a row kernel split
over blocks; the max and the sum of exponentials in one pass (plain, under
a mask that empties whole warps, slices and columns), a norm, a sum, in f32,
f16 and bf16.

What the interpreter cannot see: timing, and the GPU's exp2 and log2
approximations (it computes them exactly). column_chains_test.py's replay
checks those on a GPU.
"""
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'simt'))
sys.path.insert(0, HERE)
import simt_interp_test as S  # noqa: E402
import column_chains_test as C  # noqa: E402

# (name, form, dtype, shape, axis, launches, paired): the launches and
# whether the max and the sum share a pass (a loop carrying both) pin the
# mapping; a pair is taken only where a thread's slice of a column holds
# 128 bytes or more (shorter ones are read again from L1).
CASES = [
    ('softmax_ax1_f32', 'softmax', 'f32', [2, 300, 80], 1, 1, True),
    ('masked_softmax_ax1_f32', 'masked_softmax', 'f32', [2, 700, 40], 1, 1, True),
    ('log_softmax_axm2_bf16', 'log_softmax', 'bf16', [3, 257, 33], -2, 1, False),
    ('softmax_few_f32', 'softmax', 'f32', [1, 8192, 32], 1, 2, True),
    ('log_softmax_ax0_f32', 'log_softmax', 'f32', [3000, 40], 0, 2, True),
    ('rms_few_f16', 'rms', 'f16', [2, 3001, 64], 1, 2, False),
    ('sum_few_bf16', 'sum', 'bf16', [2, 2050, 64], 1, 2, False),
    # Rows over 262144 values (shorter ones are the row kernels').
    ('softmax_rows_f32', 'softmax', 'f32', [1, 300007], -1, 2, True),
    ('masked_softmax_rows_f32', 'masked_softmax', 'f32', [2, 270000], -1, 2, True),
    ('log_softmax_rows_bf16', 'log_softmax', 'bf16', [1, 400000], -1, 2, True),
    ('rms_rows_f16', 'rms', 'f16', [1, 300001], -1, 2, False),
    ('sum_rows_bf16', 'sum', 'bf16', [3, 270000], -1, 2, False),
    # A mean over H and W of NHWC: one chain of H·W positions.
    ('gap_nhwc_f16', 'gap', 'f16', [4, 14, 14, 96], [1, 2], 1, False),
    ('gap_nhwc_f32_few', 'gap', 'f32', [2, 64, 64, 64], [1, 2], 2, False),
]

FLOATS = {'f64': np.float64, 'f32': np.float32, 'f16': np.float32, 'bf16': np.float32}
MEMREF_TYPE_RE = re.compile(r'memref<((?:\d+x)*)(\w+)')


def elem_dtype(t):
    if t == 'i1':
        return np.bool_
    if t in FLOATS:
        return FLOATS[t]
    return np.int64


def memref_type(text):
    """(shape, element type) of the first memref type in `text`."""
    dims, elt = MEMREF_TYPE_RE.search(text).groups()
    return [int(x) for x in dims.split('x') if x], elt


def contiguous(shape):
    return [int(np.prod(shape[i + 1:])) for i in range(len(shape))]


def constant(op):
    flag = re.search(r'value = (true|false)\}>', op.rest)
    if flag:
        return np.bool_(flag.group(1) == 'true')
    text, ty = re.search(r'value = (.*?) : (\w+)\}>', op.rest).groups()
    if ty in FLOATS:
        if text.startswith('0x'):
            bits = bytes.fromhex(text[2:])
            v = {8: lambda: struct.unpack('>d', bits)[0],
                 4: lambda: struct.unpack('>f', bits)[0],
                 2: lambda: (struct.unpack('>e', bits)[0] if ty == 'f16' else
                             struct.unpack('>f', bits + b'\0\0')[0])}[len(bits)]()
        else:
            v = float(text)
        return FLOATS[ty](v)
    return np.int64(int(text))


def result_type(op):
    return re.search(r'-> (\w+)\s*$', op.rest.split('loc(')[0].strip()).group(1)


def width(ty):
    return 64 if ty == 'index' else int(ty[1:])


def as_int(x):
    x = np.asarray(x)
    if x.dtype == np.uint64:
        return x.view(np.int64)
    return x.astype(np.int64)


def low_bits(x, bits):
    return x if bits >= 64 else x & np.int64((1 << bits) - 1)


def uview(x):
    return np.ascontiguousarray(as_int(x)).view(np.uint64)


INT_OPS = ('arith.andi', 'arith.ori', 'arith.xori', 'arith.shrui', 'arith.shli',
           'arith.trunci', 'arith.extui', 'arith.bitcast', 'arith.cmpi', 'arith.fptoui',
           'arith.fptosi', 'math.roundeven')


def int_op(n, op, a):  # noqa: C901 (one case per op)
    if n == 'math.roundeven':
        return np.rint(a[0])
    if n in ('arith.fptoui', 'arith.fptosi'):
        return np.asarray(a[0]).astype(np.float64).astype(np.int64)
    if n == 'arith.cmpi':
        p = int(re.search(r'predicate = (\d+)', op.rest).group(1))
        if np.asarray(a[0]).dtype == bool:
            x, y = np.asarray(a[0]), np.asarray(a[1])
            return [x == y, x != y][p]
        x, y = (uview(v) for v in a[:2]) if p >= 6 else (as_int(v) for v in a[:2])
        return [x == y, x != y, x < y, x <= y, x > y, x >= y, x < y, x <= y, x > y,
                x >= y][p]
    if n in ('arith.andi', 'arith.ori', 'arith.xori'):
        if np.asarray(a[0]).dtype == bool:
            f = {'arith.andi': np.logical_and, 'arith.ori': np.logical_or,
                 'arith.xori': np.logical_xor}[n]
            return f(a[0], a[1])
        f = {'arith.andi': np.bitwise_and, 'arith.ori': np.bitwise_or,
             'arith.xori': np.bitwise_xor}[n]
        return f(as_int(a[0]), as_int(a[1]))
    t = result_type(op)
    if n == 'arith.shrui':
        return (uview(a[0]) >> uview(a[1])).view(np.int64)
    if n == 'arith.shli':
        return low_bits((uview(a[0]) << uview(a[1])).view(np.int64), width(t))
    if n == 'arith.trunci':
        if t == 'i1':
            return (as_int(a[0]) & 1).astype(bool)
        return low_bits(as_int(a[0]), width(t))
    if n == 'arith.extui':
        x = np.asarray(a[0])
        return x.astype(np.int64) if x.dtype == bool else as_int(x)
    # arith.bitcast
    x = np.asarray(a[0])
    if t == 'f64':
        return np.ascontiguousarray(as_int(x)).view(np.float64)
    if t == 'f32':
        return np.ascontiguousarray(as_int(x).astype(np.uint32)).view(np.float32)
    if t == 'bf16':
        return np.ascontiguousarray((as_int(x) << 16).astype(np.uint32)).view(np.float32)
    if t == 'f16':
        return np.ascontiguousarray(as_int(x).astype(np.uint16)).view(np.float16).astype(
            np.float32)
    if x.dtype == np.float64:
        return np.ascontiguousarray(x).view(np.int64)
    if x.dtype == np.float32 and t == 'i32':
        return np.ascontiguousarray(x).view(np.uint32).astype(np.int64)
    raise NotImplementedError('bitcast %s to %s' % (x.dtype, t))


class Grid(S.Block):
    """A thread block of a gpu.launch: its shared memory is the launch's
    workgroup buffers, one slot an element (held in float64)."""

    def __init__(self, threads, memory, shared):
        # shared: [(name, shape, element type)]
        self.layout, base = {}, 0
        for name, shape, elt in shared:
            self.layout[name] = (base, contiguous(shape), elem_dtype(elt))
            base += int(np.prod(shape))
        super().__init__(threads, memory, 4 * max(base, 1))
        self.shared = np.full(max(base, 1), np.nan, np.float64)

    def address(self, ref, idx):
        if ref[0] == 'shared':
            base, strides, _ = self.layout[ref[1]]
            at = base
            for st, i in zip(strides, idx):
                at = at + st * np.asarray(i)
            return self.shared, at
        return super().address(ref, idx)

    def op(self, op, env):  # noqa: C901 (one case per op)
        n = op.name
        a = [env[o] for o in op.operands]
        if n == 'arith.constant':
            return constant(op)
        if n == 'gpu.terminator':
            return None
        if n == 'arith.maximumf':
            return np.maximum(a[0], a[1])
        if n == 'arith.minimumf':
            return np.minimum(a[0], a[1])
        if n == 'arith.maxui':
            return np.maximum(a[0], a[1])
        if n == 'arith.minnumf':
            return np.fmin(a[0], a[1])
        if n == 'arith.maxnumf':
            return np.fmax(a[0], a[1])
        if n == 'math.tanh':
            return np.tanh(a[0])
        if n in ('arith.sitofp', 'arith.uitofp'):
            return np.asarray(a[0]).astype(FLOATS[result_type(op)])
        if n == 'arith.divf':
            with np.errstate(divide='ignore', invalid='ignore'):
                return np.divide(a[0], a[1])
        if n in ('arith.addf', 'arith.subf', 'arith.mulf'):
            f = {'arith.addf': np.add, 'arith.subf': np.subtract,
                 'arith.mulf': np.multiply}[n]
            with np.errstate(invalid='ignore', over='ignore'):
                return f(a[0], a[1])
        if n == 'math.exp':
            with np.errstate(over='ignore', invalid='ignore'):
                return np.exp(a[0])
        if n == 'math.log':
            with np.errstate(divide='ignore', invalid='ignore'):
                return np.log(a[0])
        if n == 'math.sqrt':
            with np.errstate(invalid='ignore'):
                return np.sqrt(a[0])
        if n == 'math.absf':
            return np.abs(a[0])
        if n == 'math.rsqrt':
            with np.errstate(divide='ignore', invalid='ignore'):
                return 1 / np.sqrt(a[0])
        if n == 'arith.extf':
            return np.asarray(a[0]).astype(FLOATS[result_type(op)])
        if n == 'arith.truncf':
            t = result_type(op)
            x = np.asarray(a[0]).astype(np.float32)
            return x if t == 'f32' else S.round_to(x, t)
        if n == 'arith.cmpf':
            x, y = np.asarray(a[0]), np.asarray(a[1])
            p = int(re.search(r'predicate = (\d+)', op.rest).group(1))
            unordered = np.isnan(x) | np.isnan(y)
            with np.errstate(invalid='ignore'):
                cmp = [None, x == y, x > y, x >= y, x < y, x <= y, x != y, None,
                       x == y, x > y, x >= y, x < y, x <= y, x != y][p] \
                    if p not in (0, 7, 14, 15) else None
            if p == 0:
                return np.zeros_like(unordered)
            if p == 15:
                return np.ones_like(unordered)
            if p == 7:
                return ~unordered
            if p == 14:
                return unordered
            return (cmp & ~unordered) if p < 8 else (cmp | unordered)
        # Integers (index, iN) are int64 arrays, iN's bits in the low N
        # (two's complement wraps as the hardware does); unsigned views for
        # logical shifts and unsigned comparisons.
        if n in INT_OPS:
            return int_op(n, op, a)
        if n == 'gpu.shuffle':
            v, valid = super().op(op, env)
            return [v, valid]
        if n == 'memref.load' and a[0][0] == 'shared':
            return super().op(op, env).astype(self.layout[a[0][1]][2])
        if n == 'scf.for':
            # Bounds may differ between threads: each runs its own, the
            # others masked, until the last is done.
            lo, hi, step = (np.broadcast_to(np.asarray(x, np.int64), (self.T,))
                            for x in a[:3])
            vals = list(a[3:])
            saved, k = self.active, 0
            while True:
                iv = lo + k * step
                live = saved & (iv < hi)
                if not live.any():
                    break
                self.active = live
                new = self.region(op.regions[0], env, [iv] + vals)
                vals = [np.where(live, x, y) for x, y in zip(new, vals)]
                k += 1
            self.active = saved
            return vals if len(op.results) > 1 else (vals[0] if vals else None)
        return super().op(op, env)


def run_function(func, buffers):
    """Runs the kernel function `func` (generic MLIR ops) on `buffers` (its
    arguments, flat arrays in the memref types' layouts, written in
    place); returns the races found."""
    args, body, header = func.regions[0]
    memory = {}
    for name, x in zip(args, buffers):
        shape, _ = memref_type(header[header.index(name + ':'):])
        memory[name] = (x.reshape(-1), contiguous(shape))
    env = {name: ('global', name) for name in args}
    races = []
    for op in body:
        if op.name == 'func.return':
            break
        a = [env.get(o) for o in op.operands]
        if op.name == 'arith.constant':
            env[op.results[0]] = constant(op)
        elif op.name == 'memref.alloc':
            shape, elt = memref_type(op.rest)
            # Scratch starts as NaN: a partial never written shows.
            name = op.results[0]
            memory[name] = (np.full(int(np.prod(shape)), np.nan, elem_dtype(elt)),
                            contiguous(shape))
            env[name] = ('global', name)
        elif op.name in ('memref.expand_shape', 'memref.collapse_shape'):
            shape, _ = memref_type(op.rest.split('->')[-1])
            name = op.results[0]
            memory[name] = (memory[a[0][1]][0], contiguous(shape))
            env[name] = ('global', name)
        elif op.name == 'gpu.launch':
            grid = [int(v) for v in a[:3]]
            block = [int(v) for v in a[3:6]]
            bargs, bbody, bheader = op.regions[0]
            shared = []
            for name in bargs[12:]:
                shape, elt = memref_type(bheader[bheader.index(name + ':'):])
                shared.append((name, shape, elt))
            threads = int(np.prod(block))
            g = Grid(threads, memory, shared)
            tid = np.arange(threads, dtype=np.int64)
            tx, ty, tz = tid % block[0], tid // block[0] % block[1], \
                tid // (block[0] * block[1])
            for bz in range(grid[2]):
                for by in range(grid[1]):
                    for bx in range(grid[0]):
                        benv = dict(env)
                        values = [np.int64(bx), np.int64(by), np.int64(bz), tx, ty, tz] + \
                            [np.int64(v) for v in grid + block]
                        for name, v in zip(bargs, values):
                            benv[name] = v
                        for name, _, _ in shared:
                            benv[name] = ('shared', name)
                        g.run(bbody, benv, (bx, by, bz))
            races += g.races
        else:
            raise NotImplementedError('host op ' + op.name)
    return races


def kernel_ir(tcc, path):
    """The kernel function after tcc-gpu-column-chains (generic form), and
    the model inputs its arguments are, in order (@main's call of it)."""
    p = subprocess.run([tcc, 'compile', path, '--target', 'sm_90', '--emit', 'mlir',
                        '-o', os.devnull, '--mlir-print-ir-after-all',
                        '--mlir-print-op-generic'], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError('tcc compile: ' + p.stderr.strip().split('\n')[-1])
    dumps = p.stderr.split('// -----// IR Dump After ')
    found = [d for d in dumps if d.startswith('TccGpuColumnChains') and '"gpu.launch"' in d]
    if len(found) != 1:
        raise RuntimeError('%d kernels with launches after tcc-gpu-column-chains'
                           % len(found))
    text = found[0].split('\n', 1)[1]
    kernel = re.search(r'sym_name = "(\w+)"', text).group(1)
    module = [d for d in dumps if d.startswith('TccDedupKernels')][-1]
    main = module[module.index('sym_name = "main"'):]
    names = re.findall(r'tcc.name = "(\w+)"', module[:module.index('sym_name = "main"')]
                       .rsplit('"func.func"', 1)[-1])
    args = re.findall(r'(%\w+):', main.split('\n')[1])
    call = re.search(r'"func.call"\(([^)]*)\) <\{callee = @%s\}>' % kernel, main)
    order = [names[args.index(x.strip())] for x in call.group(1).split(',')]
    return text, order


def main():
    tcc = sys.argv[1]
    rng = np.random.default_rng()
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for name, form, dt, shape, axis, launches, paired in CASES:
            model = C.make_model(form, dt, shape, axis)
            path = os.path.join(d, name + '.json')
            C.L.write_json(path, model)
            try:
                text, order = kernel_ir(tcc, path)
            except RuntimeError as e:
                failures.append('%s: %s' % (name, e))
                continue
            ops, _ = S.parse(text.split('\n'))
            func = ops[0]
            got_launches = sum(op.name == 'gpu.launch' for op in func.regions[0][1])
            if got_launches != launches:
                failures.append('%s: %d launches, want %d' % (name, got_launches, launches))
            if bool(re.search(r'\}\) : \(index, index, index, f32, f64\) -> \(f32, f64\)',
                              text)) != paired:
                failures.append('%s: the max and the sum %s' % (
                    name, 'in separate passes' if paired else 'paired'))
            vals = C.make_inputs(form, dt, shape, axis, rng)
            buffers = [np.ascontiguousarray(vals[k], bool if vals[k].dtype == bool
                                            else np.float32) for k in order]
            ref = C.reference(form, dt, vals, axis)
            out = np.full(ref.shape, np.nan, np.float32)
            races = run_function(func, buffers + [out])
            msg, err = C.compare(name, form, dt, out, ref, axis)
            if races:
                failures.append('%s: %s' % (name, '; '.join(races)))
            if msg:
                failures.append(msg)
            print('%s %-24s %d launches, error %.3g (tolerance %.3g)' % (
                'ok' if not (msg or races) else 'FAIL', name, got_launches, err,
                C.tolerance(form, dt, ref.size)), flush=True)
    if failures:
        print('FAILED: ' + '; '.join(failures))
        sys.exit(1)
    print('%d chains run by the interpreter: launches as planned, results within bound'
          % len(CASES))


if __name__ == '__main__':
    main()
