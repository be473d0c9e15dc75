#!/usr/bin/env python3
"""tcc against its peers, on the GPU machine, in one run (compiles nothing).

    python3 bench/gpu_bench.py --tcc BUILD/runtime/tcc [--carry .carry/bench] [--out DIR]
                               [--only NAME,...] [--deadline S] [--no-compile] [--no-peers]

For every case of the carry folder's manifest.json (written by bench/models.py):

1. correctness: inputs made here from a fixed seed, `tcc run` on them, and a
   float64 reference of the format's semantics (bf16 chains round after each
   primitive, as the format says); every element must lie within a tolerance
   argued from the dtype (see `check`), and the normwise relative error is
   reported as well;
2. speed: `tcc bench --json` (device events, median), with and without
   --cuda-graph, and the peers timed the same way in the same process run:
   cuBLAS through torch.matmul per precision, torch eager and torch.compile'd
   softmax / log_softmax / layer_norm / rms_norm / cross-entropy / the
   elementwise chain, and a device-to-device copy for the bandwidth ceiling.

Prints a table and writes DIR/bench.json and DIR/bench-table.md. Needs numpy;
torch for the peers and for fast references on the GPU (without torch, e.g.
on the build machine with host bundles from models.py --small --target host,
references run in NumPy and the peers are left out).
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'e2e'))
import e2elib as L  # noqa: E402  (the format's dtypes and its documented generator)

try:
    import torch
except ImportError:
    torch = None

SEED = 20261130


# --- array operations: torch float64 on the GPU, else NumPy --------------------

class NumpyOps:
    """The few float64 operations the references need, in NumPy."""
    name = 'numpy'

    def randn(self, shape, seed):
        return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32).astype(np.float64)

    def asarray(self, a):
        return np.asarray(a, dtype=np.float64)

    def to_numpy(self, x):
        return np.asarray(x)

    def round(self, dt, x):
        """x computed exactly, rounded to f32 (the format computes narrow
        types in f32) and then to dt: what a primitive on dt returns."""
        return L.narrow(dt, x)

    def amax(self, x):
        return x.max(axis=-1, keepdims=True)

    def sum(self, x):
        return x.sum(axis=-1, keepdims=True)

    def mean(self, x):
        return x.mean(axis=-1, keepdims=True)

    exp, sqrt, abs = staticmethod(np.exp), staticmethod(np.sqrt), staticmethod(np.abs)
    log = staticmethod(np.log)

    def matmul(self, a, b):
        return a @ b

    def take_rows(self, x, idx):
        """x[i, idx[i, 0]] as [rows, 1] (idx: int64 NumPy)."""
        return np.take_along_axis(x, idx, axis=1)

    def isnan(self, x):
        return np.isnan(x)

    def size(self, x):
        return x.size

    def item(self, x):
        return float(x)


class TorchOps(NumpyOps):
    """The same in torch, float64 on the GPU: the references of 16384x8192
    chains and 8192^3 products take milliseconds instead of minutes."""
    name = 'torch-cuda-f64'

    def randn(self, shape, seed):
        g = torch.Generator(device='cuda').manual_seed(seed)
        return torch.randn(shape, generator=g, device='cuda', dtype=torch.float32).double()

    def asarray(self, a):
        return torch.as_tensor(np.asarray(a, dtype=np.float64)).cuda()

    def to_numpy(self, x):
        return x.cpu().numpy()

    def round(self, dt, x):
        t = {'f32': torch.float32, 'f16': torch.float16, 'bf16': torch.bfloat16,
             'f8e4m3': torch.float8_e4m3fn}[dt]
        # f64 -> f32 -> dt, both round to nearest even: the same as L.narrow.
        return x.float().to(t).double()

    def amax(self, x):
        return x.amax(dim=-1, keepdim=True)

    def sum(self, x):
        return x.sum(dim=-1, keepdim=True)

    def mean(self, x):
        return x.mean(dim=-1, keepdim=True)

    def exp(self, x):
        return torch.exp(x)

    def sqrt(self, x):
        return torch.sqrt(x)

    def log(self, x):
        return torch.log(x)

    def abs(self, x):
        return torch.abs(x)

    def take_rows(self, x, idx):
        return torch.gather(x, 1, torch.as_tensor(idx).cuda())

    def isnan(self, x):
        return torch.isnan(x)

    def size(self, x):
        return x.numel()

    def item(self, x):
        return float(x.item())


# --- cases: inputs, reference, tolerance ----------------------------------------

def mkn(case):
    """A gemm case's (M, K, N): 'mkn' when odd, else the square 'n'."""
    return tuple(case.get('mkn') or (case['n'],) * 3)


def make_inputs(ops, case):
    """Named float64 inputs, already rounded to the input dtype."""
    dt = case['dtype']
    if case['kind'] == 'gemm':
        m, k, n = mkn(case)
        bshape = (n, k) if case.get('trans_b') else (k, n)
        if dt == 'i8':
            rng = np.random.default_rng(SEED)
            return {'a': ops.asarray(rng.integers(-128, 128, (m, k))),
                    'b': ops.asarray(rng.integers(-128, 128, bshape))}
        return {'a': ops.round(dt, ops.randn((m, k), SEED)),
                'b': ops.round(dt, ops.randn(bshape, SEED + 1))}
    ins = {'x': ops.round(dt, ops.randn(tuple(case['shape']), SEED + 2))}
    if case['kind'] == 'cross_entropy':
        ins['t'] = targets(case)
    return ins


def targets(case):
    """cross_entropy's class indices, int64 [rows, 1] (NumPy)."""
    rows, cols = case['shape']
    return np.random.default_rng(SEED + 3).integers(0, cols, (rows, 1), dtype=np.int64)


def param_values(ops, case):
    """The params' values by the format's documented random recipe."""
    cols = case['shape'][-1]
    return {k: ops.asarray(L.rnd(case['dtype'], L.random_init(init, cols)))
            for k, init in case.get('params', {}).items()}


EPS = {'f32': 2.0**-23, 'f16': 2.0**-10, 'bf16': 2.0**-7}  # ulp spacing, relative


def reference(ops, case, ins, exact=False):
    """(reference, rtol, atol, scale) for |got - ref| <= rtol*(|ref| + scale) + atol;
    with exact=True the reference is the plain float64 math, no rounding.

    Why these tolerances:
    - matmul accumulates in f32: at most a few f32 ulps times sqrt(K) of
      sum|a||b| apart from the exact sum (the e2e tests' bound), then the
      output rounds once: tcc and the reference may round a value near a
      boundary to its two neighbours (two ulps of a narrow dtype allowed, as
      the e2e tests allow; four f32 ulps for f32). With --allow-tf32
      the inputs lose all but 10 fraction bits (2^-10 relative each when
      truncated): the product errors have random signs, so their sum stays
      within a few 2^-9 * sqrt(sum (ab)^2) (six of them allowed).
    - the bf16 chains follow the format: each primitive computes in f32 and
      rounds to bf16. tcc's f32 arithmetic (exp, reduction order) differs
      from the float64 reference by a few f32 ulps, which can move a rounding
      to the neighbouring bf16 value: one bf16 ulp per rounded step on the
      path to the output (the steps are counted below). layer_norm's final
      `+ beta` cancels, so its bound is relative to |y*gamma| + |beta|.
    - neg is exact.
    """
    kind, dt = case['kind'], case['dtype']
    r = (lambda v: v) if exact else (lambda v: ops.round(dt, v))  # noqa: E731
    if kind == 'gemm':
        a, b = ins['a'], ins['b']
        if case.get('trans_b'):
            b = b.T
        k = a.shape[-1]
        prod = ops.matmul(a, b)
        if dt == 'i8':
            # i8 x i8 sums exactly in i32 (|sum| <= 128^2 K fits): exact,
            # and float64 holds it exactly too.
            return prod, 0.0, 0.0, 0.0
        # f8 products are exact in f32; the sum is f32's as for 16-bit
        # operands, then rounded to the output dtype.
        dt = case.get('out_dtype', dt)
        sum_ab = ops.matmul(ops.abs(a), ops.abs(b))
        atol = (4 * math.sqrt(k) + 4) * EPS['f32'] * sum_ab
        if case['tf32']:
            atol = atol + 6 * 2.0**-9 * ops.sqrt(ops.matmul(a * a, b * b))
        return r(prod), 2 * EPS[dt] if dt != 'f32' else 4 * EPS['f32'], atol, 0.0
    x = ins['x']
    p = param_values(ops, case)
    # Outputs in f16's subnormal range (softmax over rows of 32768: about
    # 3e-5) keep an absolute spacing of 2^-24: one such unit, for two
    # roundings of half of one; bf16 and f32 share f32's range.
    tiny = 2.0**-24 if dt == 'f16' else 2.0**-133
    if kind == 'softmax':   # sub, exp, sum, div (max is exact)
        # Rounding exp's argument t = x - max (the reference rounds it to
        # dt; tcc keeps it in f32) moves exp(t) by |t| units of dt's
        # rounding, not one: |ref| * |t| / 4 more in the bound's scale.
        t = r(x - ops.amax(x))
        e = r(ops.exp(t))
        ref = r(e / r(ops.sum(e)))
        return ref, 4 * EPS[dt], tiny, ops.abs(ref) * ops.abs(t) / 4
    if kind == 'log_softmax':  # sub, exp, sum, log, sub (max is exact)
        # The last sub cancels where t is near log(sum) (a row's largest
        # value when the others are far below it): its bound is relative to
        # its operands, |t| + log(sum), and the log's own error, a few ulps
        # of 1 (the sum's rounding, which another summation order moves).
        t = r(x - ops.amax(x))
        ls = r(ops.log(r(ops.sum(r(ops.exp(t))))))
        return r(t - ls), 4 * EPS[dt], tiny, ops.abs(t) + ops.abs(ls) + 1.0
    if kind == 'layer_norm':  # mean, sub, mul, mean, add, rsqrt, mul, mul, add
        eps = float(L.rnd(dt, case['eps']))
        # x - mean cancels where x is near the mean: the mean's rounding
        # (a few ulps of mean |x|, moved by the summation order) carries
        # through the scale, so the bound also holds mean|x| * inv * |gamma|.
        m = r(ops.mean(x))
        d = r(x - m)
        v = r(ops.mean(r(d * d)))
        inv = r(1.0 / ops.sqrt(r(v + eps)))
        yg = r(r(d * inv) * p['gamma'])
        return r(yg + p['beta']), 9 * EPS[dt], tiny, (
            ops.abs(yg) + ops.abs(p['beta']) + ops.mean(ops.abs(x)) * inv * ops.abs(p['gamma']))
    if kind == 'rms_norm':  # mul, mean, add, rsqrt, mul, mul
        eps = float(L.rnd(dt, case['eps']))
        inv = r(1.0 / ops.sqrt(r(ops.mean(r(x * x)) + eps)))
        return r(r(x * inv) * p['weight']), 6 * EPS[dt], tiny, 0.0
    if kind == 'silu_plus1':  # f32 steps (a few f32 ulps), one rounding to bf16
        r32 = (lambda v: v) if exact else (lambda v: ops.round('f32', v))  # noqa: E731
        s = r32(1.0 / (1.0 + ops.exp(-x)))
        return r(r32(r32(x * s) + 1.0)), EPS[dt] + 16 * EPS['f32'], tiny, 0.0
    if kind == 'neg':
        return -x, 0.0, 0.0, 0.0
    if kind == 'cross_entropy':
        # log_softmax as above, the target's entry (exact), neg (exact), and
        # the mean over the rows in f32, rounded once: every loss is
        # positive, so the entries' relative bounds hold for the mean, plus
        # one rounding of the mean.
        t = r(x - ops.amax(x))
        lsm = r(t - r(ops.log(r(ops.sum(r(ops.exp(t)))))))
        picked = ops.take_rows(lsm, ins['t'])
        return r((-picked).mean().reshape(1, 1)), 6 * EPS[dt], tiny, 0.0
    raise ValueError('unknown kind ' + kind)


def check(ops, got, ref, rtol, atol, scale, exact):
    """Elementwise bound, NaN-free; returns (ok, worst err/allowed, normwise
    relative error against the exact float64 result, detail)."""
    if tuple(got.shape) != tuple(ref.shape):
        return False, float('inf'), float('inf'), 'shape %s, expected %s' % (
            list(got.shape), list(ref.shape))
    nans = ops.item(ops.isnan(got).sum())
    err = ops.abs(got - ref)
    allowed = rtol * (ops.abs(ref) + scale) + atol
    if rtol == 0 and not hasattr(atol, 'shape') and atol == 0:
        worst = 0.0 if ops.item(err.max()) == 0 else float('inf')
        bad = ops.item((err > 0).sum())
    else:
        worst = ops.item((err / allowed).max())
        bad = ops.item((err > allowed).sum())
    d = got - exact
    rel = ops.item(ops.sqrt((d * d).sum()) / ops.sqrt((exact * exact).sum()))
    ok = nans == 0 and bad == 0
    detail = '' if ok else '%d NaN, %d of %d elements outside the bound' % (
        nans, bad, ops.size(err))
    return ok, worst, rel, detail


# --- tcc -------------------------------------------------------------------------

def run_cmd(args, timeout):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return -9, 'timed out after %d s' % timeout


def npy_for(dt, v):
    """How tcc run takes a dt input: bf16 and f8 values as exact float32."""
    if dt == 'i8':
        return v.astype(np.int8)
    return v.astype(np.float16 if dt == 'f16' else np.float32)


def tcc_correctness(args, ops, case, work):
    ins = make_inputs(ops, case)
    files = []
    for name, v in ins.items():
        path = os.path.join(work, name + '.npy')
        np.save(path, v if name == 't' else npy_for(case['dtype'], ops.to_numpy(v)))
        files += ['--input', '%s=%s' % (name, path)]
    outdir = os.path.join(work, 'out')
    t0 = time.time()
    rc, log = run_cmd([args.tcc, 'run', os.path.join(args.carry, case['bundle']),
                       '--output-dir', outdir] + files, args.case_timeout)
    run_s = time.time() - t0
    if rc != 0:
        return {'correct': False, 'detail': 'tcc run failed (%d): %s' % (rc, log.strip()[-400:])}
    outs = [f for f in os.listdir(outdir) if f.endswith('.npy')]
    got = ops.asarray(np.load(os.path.join(outdir, outs[0])))
    ref, rtol, atol, scale = reference(ops, case, ins)
    exact = reference(ops, case, ins, exact=True)[0]
    ok, worst, rel, detail = check(ops, got, ref, rtol, atol, scale, exact)
    return {'correct': ok, 'worst_err_over_allowed': worst, 'rel_err_vs_f64': rel,
            'detail': detail, 'tcc_run_s': round(run_s, 2)}


def tcc_bench(args, bundle, warmup, iters, graph, extra=()):
    with tempfile.NamedTemporaryFile(suffix='.json') as f:
        cmd = [args.tcc, 'bench', bundle, '--warmup', str(warmup), '--iters', str(iters),
               '--json', f.name] + (['--cuda-graph'] if graph else []) + list(extra)
        rc, log = run_cmd(cmd, args.case_timeout)
        if rc != 0:
            return None, log.strip()[-300:]
        with open(f.name) as jf:
            return json.load(jf), ''


BUDGET_MS = 500.0   # device time for one measurement of a fast case
SLOW_MS = 400.0     # a run this slow (a generic kernel) is timed once
GRAPH_MS = 2.0      # below this, launch overheads matter: time a CUDA graph too


def tcc_speed(args, case, extra=()):
    """One probe run picks the iteration count, so that a measurement takes
    about BUDGET_MS of device time and a slow case costs one run. `extra`:
    more `tcc bench` arguments (--input NAME=FILE.npy of the inputs the
    timing depends on)."""
    bundle = os.path.join(args.carry, case['bundle'])
    probe, why = tcc_bench(args, bundle, 0, 1, False, extra)
    if probe is None:
        return {'error': why}
    t = probe['median_ms']
    res = {'probe_ms': t}
    if t > SLOW_MS:
        res.update(ms=t, iters=1)
        return res
    iters = int(min(200, max(5, BUDGET_MS / t)))
    warmup = max(2, iters // 10)
    plain, why = tcc_bench(args, bundle, warmup, iters, False, extra)
    if plain is None:
        return dict(res, error=why)
    res.update(ms=plain['median_ms'], p10_ms=plain['p10_ms'], p90_ms=plain['p90_ms'], iters=iters)
    if plain['median_ms'] < GRAPH_MS:
        graph, why = tcc_bench(args, bundle, warmup, iters, True, extra)
        if graph is None:
            res['graph_error'] = why
        else:
            res['graph_ms'] = graph['median_ms']
    return res


# --- peers -------------------------------------------------------------------------

def time_cuda(fn, budget_ms=BUDGET_MS):
    """Median of back-to-back runs, each between two CUDA events, with no
    cache flush in between: the way `tcc bench` times a bundle."""
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    t = s.elapsed_time(e)
    iters = int(min(200, max(5, budget_ms / max(t, 1e-3))))
    for _ in range(max(2, iters // 10)):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(iters)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return float(np.median([a.elapsed_time(b) for a, b in ev]))


def peers(args, case):
    """[(peer name, ms)] for a case; a peer that fails is reported, not fatal."""
    import torch.nn.functional as F
    g = torch.Generator(device='cuda').manual_seed(SEED)
    out = []

    def add(name, fn):
        try:
            out.append((name, time_cuda(fn)))
        except Exception as e:  # noqa: BLE001
            out.append((name, None))
            print('  peer %s failed: %s' % (name, str(e).splitlines()[0][:200]), flush=True)

    if case['kind'] == 'gemm' and case['dtype'] in ('f8e4m3', 'i8'):
        # cuBLAS's 8-bit GEMMs take B column-major: b [N, K] transposed.
        m, k, n = mkn(case)
        if case['dtype'] == 'i8':
            a = torch.randint(-128, 128, (m, k), device='cuda', generator=g, dtype=torch.int8)
            b = torch.randint(-128, 128, (n, k), device='cuda', generator=g, dtype=torch.int8)
            add('cuBLAS int8 (_int_mm)', lambda: torch._int_mm(a, b.t()))
        else:
            f8 = torch.float8_e4m3fn
            a = torch.randn(m, k, device='cuda', generator=g).to(f8)
            b = torch.randn(n, k, device='cuda', generator=g).to(f8)
            one = torch.ones((), device='cuda')
            add('cuBLAS fp8 (_scaled_mm)',
                lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                         out_dtype=torch.bfloat16))
        return out
    dt = {'bf16': torch.bfloat16, 'f16': torch.float16, 'f32': torch.float32}[case['dtype']]
    if case['kind'] == 'gemm':
        m, k, n = mkn(case)
        a = torch.randn(m, k, device='cuda', generator=g).to(dt)
        b = torch.randn(k, n, device='cuda', generator=g).to(dt)
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = case['tf32']
        try:
            add('cuBLAS ' + ('tf32' if case['tf32'] else case['dtype']), lambda: a @ b)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
        return out
    rows, cols = case['shape']
    x = torch.randn(rows, cols, device='cuda', generator=g).to(dt)
    w = (1 + 0.1 * torch.randn(cols, device='cuda', generator=g)).to(dt)
    bias = (0.1 * torch.randn(cols, device='cuda', generator=g)).to(dt)
    fns = {
        'softmax': lambda t: torch.softmax(t, dim=-1),
        'log_softmax': lambda t: torch.log_softmax(t, dim=-1),
        'layer_norm': lambda t: F.layer_norm(t, (cols,), w, bias, 1e-5),
        'rms_norm': lambda t: F.rms_norm(t, (cols,), w, 1e-6),
        'silu_plus1': lambda t: (t.float() * torch.sigmoid(t.float()) + 1).to(torch.bfloat16),
        'neg': lambda t: torch.neg(t),
    }
    if case['kind'] == 'cross_entropy':
        tgt = torch.as_tensor(targets(case)[:, 0]).cuda()
        fns['cross_entropy'] = lambda t: F.cross_entropy(t, tgt)
    fn = fns[case['kind']]
    if case['kind'] == 'neg':
        y = torch.empty_like(x)
        add('torch d2d copy', lambda: y.copy_(x))
    add('torch eager', lambda: fn(x))
    if not args.no_compile and case['kind'] != 'neg':
        try:
            # A fresh start each case: the cases share their functions' code
            # objects, and past dynamo's recompile limit (8) a compiled
            # function silently runs eagerly.
            torch._dynamo.reset()
            cf = torch.compile(fn, dynamic=False)
            t0 = time.time()
            cf(x)
            print('  torch.compile took %.1f s' % (time.time() - t0), flush=True)
            add('torch.compile', lambda: cf(x))
        except Exception as e:  # noqa: BLE001
            print('  torch.compile failed: %s' % str(e).splitlines()[0][:200], flush=True)
    return out


def copy_ceiling():
    x = torch.empty(1 << 30, device='cuda', dtype=torch.bfloat16)  # 2 GiB
    y = torch.empty_like(x)
    ms = time_cuda(lambda: y.copy_(x))
    del x, y
    return ms, 2 * (1 << 31)


# --- the table ------------------------------------------------------------------

def work_of(case):
    """(amount, unit): FLOPs of a matmul, else bytes read + written."""
    if case['kind'] == 'gemm':
        m, k, n = mkn(case)
        return 2.0 * m * k * n, 'TFLOP/s'
    rows, cols = case['shape']
    size = {'f32': 4, 'f16': 2, 'bf16': 2}[case.get('dtype', 'bf16')]
    if case['kind'] == 'cross_entropy':  # reads the logits, writes one value
        return float(rows * cols * size), 'GB/s'
    # Every other rowwise case reads x and writes y in x's dtype.
    return float(rows * cols * 2 * size), 'GB/s'


def rate(amount, unit, ms):
    if not ms:
        return None
    return amount / (ms * 1e-3) / (1e12 if unit == 'TFLOP/s' else 1e9)


def fmt(v, spec='%.3f'):
    return '-' if v is None else spec % v


def table(rows, ceiling):
    head = ('| case | tcc ms | tcc graph ms | peer | peer ms | tcc/peer | tcc rate | peer rate '
            '| correct (worst err/allowed, rel err vs f64) |')
    lines = [head, '|' + ' --- |' * 9]
    for r in rows:
        c = r['case']
        amount, unit = work_of(c)
        tcc = r.get('tcc', {})
        best = min([v for v in (tcc.get('ms'), tcc.get('graph_ms')) if v] or [None]) \
            if (tcc.get('ms') or tcc.get('graph_ms')) else None
        corr = r.get('correctness', {})
        if 'correct' not in corr:
            cstr = 'not run'
        else:
            cstr = '%s (%s, %s)' % ('yes' if corr['correct'] else 'NO',
                                    fmt(corr.get('worst_err_over_allowed'), '%.2g'),
                                    fmt(corr.get('rel_err_vs_f64'), '%.1e'))
        plist = r.get('peers') or [('-', None)]
        for i, (pname, pms) in enumerate(plist):
            first = i == 0
            lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
                c['name'] if first else '',
                fmt(tcc.get('ms')) if first else '',
                fmt(tcc.get('graph_ms')) if first else '',
                pname, fmt(pms), fmt(best / pms if best and pms else None, '%.2f'),
                (fmt(rate(amount, unit, best), '%.1f') + ' ' + unit) if first and best else '',
                (fmt(rate(amount, unit, pms), '%.1f') + ' ' + unit) if pms else '-',
                cstr if first else ''))
    if ceiling:
        lines.append('| d2d copy 2 GiB (ceiling) | | | torch copy_ | %.3f | | | %.1f GB/s | |' % (
            ceiling[0], ceiling[1] / ceiling[0] / 1e6))
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--tcc', required=True, help='the (runtime-only) tcc executable')
    ap.add_argument('--carry', default=os.path.join(ROOT, '.carry', 'bench'))
    ap.add_argument('--out', default=os.environ.get('OUT', os.path.join(ROOT, 'out')))
    ap.add_argument('--only', help='comma-separated case names')
    ap.add_argument('--deadline', type=float, default=480,
                    help='seconds; cases not started by then are reported as skipped')
    ap.add_argument('--case-timeout', type=int, default=120, help='seconds for one tcc command')
    ap.add_argument('--no-compile', action='store_true', help='leave out the torch.compile peers')
    ap.add_argument('--no-peers', action='store_true')
    args = ap.parse_args()
    start = time.time()

    with open(os.path.join(args.carry, 'manifest.json')) as f:
        manifest = json.load(f)
    cases = manifest['cases']
    if args.only:
        keep = args.only.split(',')
        cases = [c for c in cases if c['name'] in keep]
    gpu = torch is not None and torch.cuda.is_available()
    ops = TorchOps() if gpu else NumpyOps()
    use_peers = gpu and not args.no_peers
    env = {'device': torch.cuda.get_device_name() if gpu else 'none', 'torch': torch.__version__
           if torch else None, 'numpy': np.__version__, 'reference': ops.name,
           'target': manifest['target'], 'seed': SEED}
    print('environment:', json.dumps(env), flush=True)

    # Fast cases first, so that a slow generic kernel cannot crowd them out.
    order = {'neg': 0, 'silu_plus1': 1, 'softmax': 2, 'log_softmax': 3, 'rms_norm': 4,
             'layer_norm': 5, 'cross_entropy': 6}
    cases.sort(key=lambda c: (c['kind'] == 'gemm', c.get('n', 0),
                              c['dtype'] == 'f32', c.get('tf32', False), order.get(c['kind'], 9)))
    rows = []
    peer_cache = {}
    ceiling = None
    if use_peers:
        ceiling = copy_ceiling()
        print('d2d copy 2 GiB: %.3f ms, %.0f GB/s' % (ceiling[0], ceiling[1] / ceiling[0] / 1e6),
              flush=True)
    for case in cases:
        row = {'case': case}
        rows.append(row)
        if time.time() - start > args.deadline:
            row['skipped'] = 'deadline'
            print('%s: skipped (deadline of %.0f s reached)' % (case['name'], args.deadline))
            continue
        print('== %s  (%s)' % (case['name'], case['compile']), flush=True)
        work = tempfile.mkdtemp(prefix='tccbench-')
        try:
            row['correctness'] = tcc_correctness(args, ops, case, work)
        except Exception as e:  # noqa: BLE001
            row['correctness'] = {'correct': False, 'detail': 'checker failed: %s' % e}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print('  correctness:', json.dumps(row['correctness']), flush=True)
        extra = []
        if case['kind'] == 'cross_entropy':
            # Indices in range (random ones would be a run-time error).
            tfile = os.path.join(tempfile.mkdtemp(prefix='tccbench-'), 't.npy')
            np.save(tfile, targets(case))
            extra = ['--input', 't=' + tfile]
        row['tcc'] = tcc_speed(args, case, extra)
        print('  tcc bench:', json.dumps(row['tcc']), flush=True)
        if use_peers:
            # Variants of one problem (a schedule, a flag) share its peers.
            key = json.dumps({k: case.get(k) for k in ('kind', 'dtype', 'n', 'mkn', 'tf32', 'shape')})
            if key not in peer_cache:
                peer_cache[key] = peers(args, case)
            row['peers'] = peer_cache[key]
            print('  peers:', row['peers'], flush=True)
            torch.cuda.empty_cache()

    text = table(rows, ceiling)
    print()
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'bench-table.md'), 'w') as f:
        f.write('%s\n\n%s\n' % (json.dumps(env), text))
    with open(os.path.join(args.out, 'bench.json'), 'w') as f:
        json.dump({'environment': env, 'copy_ceiling_ms': ceiling[0] if ceiling else None,
                   'rows': rows}, f, indent=1, default=str)
    print('\n%d cases in %.0f s; wrote %s' % (len(rows), time.time() - start,
                                            os.path.join(args.out, 'bench.json')))
    bad = [r['case']['name'] for r in rows
           if not r.get('correctness', {}).get('correct') and 'skipped' not in r]
    if bad:
        print('NOT CORRECT:', ', '.join(bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
