#!/usr/bin/env python3
"""End-to-end tests of every operator of the tcc model format against NumPy.

For each op, models with fresh random shapes (odd sizes, broadcasting, rank
0..4), attributes and inputs are written, run with `tcc run`, and the outputs
compared with references written here from the format's text. The seed comes
from --seed, else $E2E_SEED, else is drawn fresh; it is printed first so that
any failure can be reproduced (`--seed N --only OP`).

Reference semantics for f16/bf16/f8: an op computes in f32 from the rounded
inputs and rounds its result to the dtype (round to nearest even); so does a
composite (softmax, log_softmax, layer_norm, rms_norm): its chain in f32, its
result rounded once.

Output: one line per case, "PASS|FAIL op dtype shapes maxerr=...", then
"N passed, M failed". A failing case's single-case model and inputs are kept
under --keep (default ./e2e-failures) with the command that reproduces it.
"""
import argparse
import concurrent.futures
import json
import math
import os
import pickle
import secrets
import shutil
import sys
import tempfile
import threading
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as L  # noqa: E402
from e2elib import EXACT, FLOATS, INTS, NARROW, ftol, narrow, rnd  # noqa: E402

STD_FLOATS = ('f64', 'f32', 'f16', 'bf16')
NUMERIC = STD_FLOATS + INTS
EVERY = FLOATS + INTS + ('bool',)
I64_MAX = 2**63 - 1


# --- cases and models ---------------------------------------------------------

def py(v):
    """JSON-ready Python values from NumPy scalars and arrays."""
    if isinstance(v, dict):
        return {k: py(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [py(x) for x in v]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    return v


class Case:
    """One independent subgraph: its inputs, nodes, and expected outputs."""

    def __init__(self, op, dtype, desc=None):
        self.op, self.dtype, self.desc = op, dtype, desc
        self.inputs = []   # (name, dtype, values)
        self.nodes = []
        self.outputs = []  # (name, dtype, reference, Tol)
        self.error = None  # expected message: the run must exit 1 saying it

    def inp(self, name, dt, values):
        v = np.asarray(values)
        # The file must hold exactly the values the reference uses.
        if dt in INTS:
            lo, hi = L.INT_RANGE[dt]
            assert v.size == 0 or (v.min() >= lo and v.max() <= hi), (self.op, name, dt)
        elif dt in FLOATS:
            assert np.array_equal(rnd(dt, v), v, equal_nan=True), (self.op, name, dt)
        self.inputs.append((name, dt, v))
        return name

    def node(self, op, ins, outs, attrs=None):
        """attrs entries that are None are left out (the format's default)."""
        a = {k: v for k, v in (attrs or {}).items() if v is not None}
        self.nodes.append({'op': op, 'inputs': list(ins), 'outputs': list(outs),
                           'attrs': py(a)})
        if self.desc is None:
            shapes = ','.join(str(list(np.shape(v))).replace(' ', '') for _, _, v in self.inputs)
            self.desc = shapes + (' ' + json.dumps(py(a), separators=(',', ':')) if a else '')
        return outs[0] if len(outs) == 1 else outs

    def out(self, name, dt, ref, tol=EXACT):
        self.outputs.append((name, dt, np.asarray(ref), tol))


def build_model(cases, name):
    """One model holding every case, names prefixed by the case's index."""
    inputs, nodes, outputs, feeds = [], [], [], {}
    for k, c in enumerate(cases):
        pre = 'c%d_' % k if len(cases) > 1 else ''
        for n, dt, v in c.inputs:
            inputs.append({'name': pre + n, 'dtype': dt, 'shape': list(v.shape)})
            feeds[pre + n] = (dt, v)
        for nd in c.nodes:
            nodes.append(dict(nd, inputs=[pre + i for i in nd['inputs']],
                              outputs=[pre + o for o in nd['outputs']]))
        outputs += [pre + o[0] for o in c.outputs]
    model = {'format': 'tcc-model', 'version': 1, 'name': name, 'inputs': inputs,
             'params': [], 'nodes': nodes, 'outputs': outputs}
    return model, feeds


def write_model(cases, d, name):
    """Writes model.json and the inputs as .npy; returns the tcc run command
    (without the tcc path and output directory)."""
    model, feeds = build_model(cases, name)
    with open(os.path.join(d, 'model.json'), 'w') as f:
        json.dump(model, f, indent=1)
    args = ['run', os.path.join(d, 'model.json')]
    for n, (dt, v) in feeds.items():
        p = os.path.join(d, n + '.npy')
        np.save(p, L.to_npy(dt, v))
        args += ['--input', '%s=%s' % (n, p)]
    return args


def check_outputs(case, pre, outdir):
    """(ok, maxerr, detail) of a case whose run succeeded."""
    maxerr, details = 0.0, []
    for n, dt, ref, tol in case.outputs:
        p = os.path.join(outdir, pre + n + '.npy')
        if not os.path.exists(p):
            return False, float('inf'), 'output %s not written' % n
        a = np.load(p)
        if a.dtype != L.NPY_DTYPE[dt]:
            return False, float('inf'), 'output %s has npy dtype %s, expected %s' % (
                n, a.dtype.str, L.NPY_DTYPE[dt].str)
        ok, err, detail = L.compare(L.from_npy(dt, a), ref, tol)
        maxerr = max(maxerr, err)
        if not ok:
            details.append('%s: %s' % (n, detail))
    return not details, maxerr, '; '.join(details)


class TccUnavailable(Exception):
    """tcc could not be started at all (missing, not executable, being
    relinked): no case can say anything, so the run stops."""


class Recorded(Exception):
    """A batch compiled for --record: it runs later, with --replay."""


class Runner:
    def __init__(self, tcc, workdir, keep, target=None, record=None, compile_args=()):
        self.tcc, self.workdir, self.keep = tcc, workdir, keep
        self.target, self.record = target, record
        self.compile_args = list(compile_args)
        self.lock = threading.Lock()
        self.passed = self.failed = 0
        self.kept = 0
        self.recorded = []

    def report(self, case, ok, maxerr, detail, repro=None):
        with self.lock:
            if ok:
                self.passed += 1
            else:
                self.failed += 1
            line = '%s %s %s %s maxerr=%.3g' % ('PASS' if ok else 'FAIL', case.op, case.dtype,
                                                case.desc, maxerr)
            if not ok:
                line += ' -- ' + detail
                if repro:
                    line += ' [repro: %s]' % repro
            print(line, flush=True)

    def keep_failure(self, case):
        """Writes the single-case model and its inputs; returns the command."""
        with self.lock:
            self.kept += 1
            d = os.path.join(self.keep, '%s-%s-%d' % (case.op, case.dtype.replace('->', '-'),
                                                      self.kept))
        os.makedirs(d, exist_ok=True)
        args = write_model([case], d, case.op)
        cmd = ' '.join([self.tcc] + args + ['--output-dir', os.path.join(d, 'out')])
        with open(os.path.join(d, 'README'), 'w') as f:
            f.write('%s %s %s\n%s\n' % (case.op, case.dtype, case.desc, cmd))
        return cmd

    def run(self, cases, name):
        """Runs cases as one model: (exit status, stderr, output dir, prefixes)."""
        d = tempfile.mkdtemp(dir=self.workdir)
        args = write_model(cases, d, name)
        outdir = os.path.join(d, 'out')
        pres = ['c%d_' % k if len(cases) > 1 else '' for k in range(len(cases))]
        if self.target:
            # Compiled for the target first; the run is of the bundle.
            bundle = os.path.join(d, 'model.tccb')
            rc, _, err = L.run_tcc([self.tcc, 'compile', args[1], '-o', bundle,
                                    '--target', self.target] + self.compile_args)
            if rc == L.CANNOT_RUN:
                raise TccUnavailable(err)
            if rc != 0:
                return rc, err, outdir, pres, d
            args = ['run', bundle] + args[2:]
            if self.record:
                rel = [os.path.relpath(a, self.workdir) if os.path.isabs(a) else a
                       for a in args]
                rel = [a.split('=', 1)[0] + '=' + os.path.relpath(a.split('=', 1)[1], self.workdir)
                       if '=' in a and os.path.isabs(a.split('=', 1)[1]) else a for a in rel]
                with self.lock:
                    self.recorded.append((cases, rel, os.path.relpath(outdir, self.workdir)))
                raise Recorded()
        rc, _, err = L.run_tcc([self.tcc] + args + ['--output-dir', outdir])
        if rc == L.CANNOT_RUN:
            raise TccUnavailable(err)
        return rc, err, outdir, pres, d

    def single(self, case):
        try:
            rc, err, outdir, pres, d = self.run([case], case.op)
        except Recorded:
            return
        if case.error is not None:
            ok = rc == 1 and case.error in err
            detail = '' if ok else 'expected exit 1 and "%s", got exit %d: %s' % (
                case.error, rc, L.first_line(err))
            res = (ok, 0.0, detail)
        elif rc != 0:
            res = (False, float('inf'), 'tcc run exit %d: %s' % (rc, L.first_line(err)))
        else:
            res = check_outputs(case, '', outdir)
        shutil.rmtree(d, ignore_errors=True)
        self.report(case, *res, repro=None if res[0] else self.keep_failure(case))

    def batch(self, cases, name):
        """Runs cases together; when the run itself fails, reruns each alone
        so that the failure is pinned on the case(s) that cause it."""
        if len(cases) == 1 or any(c.error is not None for c in cases):
            for c in cases:
                self.single(c)
            return
        try:
            rc, err, outdir, pres, d = self.run(cases, name)
        except Recorded:
            return
        if rc != 0:
            shutil.rmtree(d, ignore_errors=True)
            before = self.failed
            for c in cases:
                self.single(c)
            if self.failed == before:
                batch = Case(name, 'batch', '%d cases' % len(cases))
                self.report(batch, False, float('inf'),
                            'the cases pass alone but their joint model fails: exit %d: %s' % (
                                rc, L.first_line(err)))
            return
        for c, pre in zip(cases, pres):
            res = check_outputs(c, pre, outdir)
            self.report(c, *res, repro=None if res[0] else self.keep_failure(c))
        shutil.rmtree(d, ignore_errors=True)


# --- random shapes and values -------------------------------------------------

DIMS = (1, 1, 2, 3, 4, 5, 7, 8, 16, 33, 127)
# --odd: innermost lengths that no vector width divides (and 1 and 3), so
# that rows start at every alignment.
ODD_ROWS = (1, 3, 1001, 3001, 5003)


class Gen:
    """Random choices for one op's cases; `budget` bounds tensor sizes.
    With `odd`, every shape of rank >= 1 ends in one of ODD_ROWS."""

    def __init__(self, rng, quick, force=None, odd=False):
        self.rng, self.quick, self.odd = rng, quick, odd
        self.budget = 8192 if odd else 2048 if quick else 16384
        self.force = force or {}

    def forced(self, **force):
        """The same stream with some choices fixed (the edge cases)."""
        return Gen(self.rng, self.quick, force, self.odd)

    def opt(self, key, choose):
        """force[key] if given, else choose()."""
        return self.force[key] if key in self.force else choose()

    def coin(self, p=0.5):
        return bool(self.rng.random() < p)

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def int(self, lo, hi):
        return int(self.rng.integers(lo, hi, endpoint=True))

    def shape(self, rank=None, budget=None, min_rank=0, max_rank=4):
        rank = self.int(min_rank, max_rank) if rank is None else rank
        left = budget or self.budget
        s = []
        if self.odd and rank:
            s.append(self.pick([d for d in ODD_ROWS if d <= left]))
            left //= s[0]
            rank -= 1
        for _ in range(rank):
            d = self.pick([d for d in DIMS if d <= left])
            s.append(d)
            left //= d
        if self.odd:
            s = s[1:] + s[:1]   # the odd length innermost
        else:
            self.rng.shuffle(s)
        return s

    def bshapes(self, out, n=2):
        """n shapes that broadcast together to (at most) out."""
        if self.coin(0.35):
            return [list(out) for _ in range(n)]
        res = []
        for _ in range(n):
            drop = self.int(0, len(out)) if self.coin(0.4) else 0
            res.append([d if self.coin(0.7) else 1 for d in out[drop:]])
        return res

    def axis(self, rank):
        """An axis, written negative half the time."""
        a = self.int(0, rank - 1)
        return a - rank if self.coin() else a

    def normal(self, dt, shape, std=1.0, mean=0.0):
        v = mean + std * np.asarray(self.rng.standard_normal(size=tuple(shape)))
        return rnd(dt, v)

    def uniform(self, dt, shape, lo, hi):
        return rnd(dt, np.asarray(self.rng.uniform(lo, hi, size=tuple(shape))))

    def ints(self, shape, lo, hi):
        return np.asarray(self.rng.integers(lo, hi, size=tuple(shape), dtype=np.int64,
                                            endpoint=True))

    def bools(self, shape):
        return np.asarray(self.rng.random(size=tuple(shape)) < 0.5)

    def values(self, dt, shape, std=1.0):
        """Generic inputs: floats N(0, std), ints over a good part of their
        range, random bools."""
        if dt == 'bool':
            return self.bools(shape)
        if dt in INTS:
            lo, hi = {'i8': (-128, 127), 'i32': (-2**31, 2**31 - 1), 'i64': (-2**63, I64_MAX)}[dt]
            return self.ints(shape, lo, hi)
        return self.normal(dt, shape, std)

    def ties(self, dt, shape):
        """Values from a small set, so that equal elements are common."""
        v = self.ints(shape, -4, 4)
        return v if dt in INTS else rnd(dt, v * 0.25)

    def inject(self, v, value=np.nan, frac=0.05):
        """Sets a few random elements to `value` (floats only)."""
        v = np.array(v, dtype=np.float64)
        if v.size:
            v[np.asarray(self.rng.random(v.shape) < frac)] = value
        return v


def rounding(dt):
    """The rounding of an op's result in dtype dt (a composite's too: it
    computes in f32 over narrow dtypes and rounds once); f32 and f64 are
    referenced exactly."""
    return (lambda v: narrow(dt, v)) if dt in NARROW else (lambda v: v)


def amax(v):
    v = np.asarray(v, dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(np.abs(v).max()) if v.size else 0.0


# --- elementwise ----------------------------------------------------------------

# op: (reference, sampler(g, dt, shape), tolerance(dt, x, ref) or None for exact)
def _rel(ulps, scale=0.0):
    return lambda dt, x, ref: ftol(dt, ulps, scale)


def _abs_x(ulps):
    return lambda dt, x, ref: ftol(dt, ulps, amax(x))


def near_quarters(g, dt, s):
    """Integers, halves and quarters, sometimes nudged off them: floor and
    ceil at and next to their steps."""
    return rnd(dt, g.ints(s, -40, 40) * 0.25 + g.uniform('f64', s, -0.01, 0.01) * g.int(0, 1))


UNARY = {
    'neg': (np.negative, lambda g, dt, s: g.inject(g.normal(dt, s, 3)), None),
    'abs': (np.abs, lambda g, dt, s: g.inject(g.normal(dt, s, 3)), None),
    # exp/log/tanh/...: libm or polynomial differences of a few f32 ulp, then
    # the output rounding (ftol adds one ulp of the narrow dtype).
    'exp': (np.exp, lambda g, dt, s: g.uniform(dt, s, -5, 5), _rel(16)),
    'log': (np.log, lambda g, dt, s: g.uniform(dt, s, 0.01, 10), _rel(16, 1.0)),
    # sqrt and division are correctly rounded in IEEE arithmetic.
    'sqrt': (np.sqrt, lambda g, dt, s: g.uniform(dt, s, 0, 10), _rel(2)),
    'rsqrt': (lambda x: 1 / np.sqrt(x), lambda g, dt, s: g.uniform(dt, s, 0.01, 10), _rel(4)),
    'reciprocal': (lambda x: 1 / x,
                   lambda g, dt, s: rnd(dt, g.uniform('f64', s, 0.1, 10) * g.pick([-1, 1])), _rel(2)),
    'tanh': (np.tanh, lambda g, dt, s: g.normal(dt, s, 3), _rel(16, 1.0)),
    'sigmoid': (L.sigmoid, lambda g, dt, s: g.normal(dt, s, 3), _rel(16, 1.0)),
    # silu/gelu of large negative x are differences of nearly equal terms:
    # their error is absolute, relative to |x|.
    'silu': (lambda x: x * L.sigmoid(x), lambda g, dt, s: g.normal(dt, s, 3), _abs_x(16)),
    'erf': (L.erf, lambda g, dt, s: g.normal(dt, s, 2), _rel(16, 1.0)),
    'floor': (np.floor, lambda g, dt, s: near_quarters(g, dt, s), None),
    'ceil': (np.ceil, lambda g, dt, s: near_quarters(g, dt, s), None),
    'relu': (lambda x: np.where(np.isnan(x), x, np.maximum(x, 0)),
             lambda g, dt, s: g.inject(g.normal(dt, s, 3)), None),
}


def gen_unary(op):
    ref, sample, tol = UNARY[op]

    def gen(g, dt):
        c = Case(op, dt)
        s = g.shape()
        if dt in INTS:
            lo = -127 if dt == 'i8' else -2**31 + 1 if dt == 'i32' else -2**62
            x = g.ints(s, lo, -lo)
            c.node(op, [c.inp('x', dt, x)], ['y'])
            c.out('y', dt, ref(x))
            return c
        x = sample(g, dt, s)
        c.node(op, [c.inp('x', dt, x)], ['y'])
        with np.errstate(all='ignore'):
            r = ref(x)
        c.out('y', dt, narrow(dt, r), EXACT if tol is None else tol(dt, x, r))
        return c
    return gen


def gen_gelu(g, dt):
    c = Case('gelu', dt)
    x = g.normal(dt, g.shape(), 3)
    approx = g.pick([None, 'none', 'tanh'])
    c.node('gelu', [c.inp('x', dt, x)], ['y'], {'approximate': approx})
    r = L.gelu(x, approx or 'none')
    c.out('y', dt, narrow(dt, r), ftol(dt, 16, amax(x)))
    return c


def gen_clamp(g, dt):
    c = Case('clamp', dt)
    s = g.shape()
    if dt in INTS:
        x = g.ints(s, -100, 100)
        lo, hi = sorted([g.int(-60, 60), g.int(-60, 60)])
    else:
        x = g.inject(g.normal(dt, s, 3))
        lo, hi = sorted([g.int(-12, 12) * 0.25, g.int(-12, 12) * 0.25])
    lo = lo if g.coin(0.8) else None
    hi = hi if g.coin(0.8) else None
    c.node('clamp', [c.inp('x', dt, x)], ['y'], {'min': lo, 'max': hi})
    r = x
    if lo is not None:
        r = np.where(np.isnan(r), r, np.maximum(r, lo)) if dt not in INTS else np.maximum(r, lo)
    if hi is not None:
        r = np.where(np.isnan(r), r, np.minimum(r, hi)) if dt not in INTS else np.minimum(r, hi)
    c.out('y', dt, r)
    return c


def int_div(a, b):
    """Integer division truncating toward zero (C, ONNX), exact for i64."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


BIN_INT_RANGE = {  # operand ranges that keep the exact result in range
    'add': {'i8': 60, 'i32': 2**30, 'i64': 2**62},
    'sub': {'i8': 60, 'i32': 2**30, 'i64': 2**62},
    'mul': {'i8': 11, 'i32': 40000, 'i64': 2**31},
    'div': {'i8': 127, 'i32': 2**31 - 1, 'i64': 2**62},
    'maximum': {'i8': 128, 'i32': 2**31, 'i64': 2**63},
    'minimum': {'i8': 128, 'i32': 2**31, 'i64': 2**63},
}


def gen_binary(op):
    def gen(g, dt):
        c = Case(op, dt)
        sa, sb = g.bshapes(g.shape())
        if dt in INTS:
            if op == 'pow':
                lo, hi, emax = {'i8': (-3, 3, 4), 'i32': (-9, 9, 6), 'i64': (-40, 40, 10)}[dt]
                a, b = g.ints(sa, lo, hi), g.ints(sb, 0, emax)
                r = np.power(a, b)
            else:
                m = BIN_INT_RANGE[op][dt]
                a = g.ints(sa, -m, m - 1)
                b = g.ints(sb, -m, m - 1)
                if op == 'div':
                    b = g.ints(sb, 1, min(m, g.pick([7, 1000, m]))) * np.where(g.bools(sb), 1, -1)
                r = {'add': np.add, 'sub': np.subtract, 'mul': np.multiply, 'div': int_div,
                     'maximum': np.maximum, 'minimum': np.minimum}[op](a, b)
            c.node(op, [c.inp('a', dt, a), c.inp('b', dt, b)], ['y'])
            c.out('y', dt, r)
            return c
        # f8 operands stay where sums and products are finite in f8.
        std = (3.0 if op == 'mul' else 30.0) if dt.startswith('f8') else 2.0
        a, b = g.normal(dt, sa, std), g.normal(dt, sb, std)
        tol = ftol(dt, 2)
        if op == 'div':
            b = rnd(dt, np.where(np.abs(b) < 0.1, 0.5, b))
        if op in ('maximum', 'minimum'):
            a, b = g.inject(a), g.inject(b)   # NaN wins, as in PyTorch
            if g.coin():
                b = rnd(dt, np.where(g.bools(sb), b, a.flat[0] if a.size else 0))
            tol = EXACT
        if op == 'pow':
            if g.coin():   # negative bases with integer exponents
                a = rnd(dt, g.uniform('f64', sa, 0.3, 3) * np.where(g.bools(sa), 1, -1))
                b = rnd(dt, g.ints(sb, -3, 3))
            else:
                a, b = g.uniform(dt, sa, 0.1, 4), g.uniform(dt, sb, -2, 2)
            # pow's error grows with |y log x| (the exponent's magnitude).
            tol = ftol(dt, 16 * (1 + np.abs(b * np.log(np.abs(a)))))
        c.node(op, [c.inp('a', dt, a), c.inp('b', dt, b)], ['y'])
        with np.errstate(all='ignore'):
            r = {'add': np.add, 'sub': np.subtract, 'mul': np.multiply, 'div': np.divide,
                 'maximum': np.maximum, 'minimum': np.minimum, 'pow': np.power}[op](a, b)
        c.out('y', dt, narrow(dt, r), tol)
        return c
    return gen


CMP = {'equal': np.equal, 'not_equal': np.not_equal, 'less': np.less,
       'less_equal': np.less_equal, 'greater': np.greater, 'greater_equal': np.greater_equal}


def gen_compare(op):
    def gen(g, dt):
        c = Case(op, dt)
        sa, sb = g.bshapes(g.shape())
        if dt == 'bool':
            a, b = g.bools(sa), g.bools(sb)
        elif dt == 'i64' and g.coin():
            # Neighbours above 2^53 differ only in the low bits: a compare
            # through doubles would call them equal.
            a, b = 2**60 + g.ints(sa, 0, 2), 2**60 + g.ints(sb, 0, 2)
        else:
            a, b = g.ties(dt, sa), g.ties(dt, sb)
            if dt not in INTS:
                a, b = g.inject(a), g.inject(b)
        c.node(op, [c.inp('a', dt, a), c.inp('b', dt, b)], ['y'])
        with np.errstate(invalid='ignore'):
            c.out('y', 'bool', CMP[op](a, b))
        return c
    return gen


def gen_logical(op):
    def gen(g, dt):
        c = Case(op, 'bool')
        if op == 'not':
            a = g.bools(g.shape())
            c.node(op, [c.inp('a', 'bool', a)], ['y'])
            c.out('y', 'bool', ~a)
            return c
        sa, sb = g.bshapes(g.shape())
        a, b = g.bools(sa), g.bools(sb)
        c.node(op, [c.inp('a', 'bool', a), c.inp('b', 'bool', b)], ['y'])
        c.out('y', 'bool', (a & b) if op == 'and' else (a | b))
        return c
    return gen


def gen_select(g, dt):
    c = Case('select', dt)
    sc, sa, sb = g.bshapes(g.shape(), 3)
    cond, a, b = g.bools(sc), g.values(dt, sa), g.values(dt, sb)
    c.node('select', [c.inp('cond', 'bool', cond), c.inp('a', dt, a), c.inp('b', dt, b)], ['y'])
    c.out('y', dt, np.where(cond, a, b))
    return c


# --- casts ------------------------------------------------------------------------

_FMAX = {'f64': 1.7e308, 'f32': 3.4e38, 'f16': 65504.0, 'bf16': 3.38e38,
         'f8e4m3': 448.0, 'f8e5m2': 57344.0}


def cast_values(g, src, dst, n):
    """Inputs for a cast whose result the format defines: floats to ints
    within the int's range (truncation), everything else freely, with
    overflow to f8 (saturates) and to f16 (infinity) where src can hold it."""
    if src == 'bool':
        return g.bools([n])
    if src in INTS:
        lo, hi = L.INT_RANGE[src]
        if dst in INTS:
            lo, hi = max(lo, L.INT_RANGE[dst][0]), min(hi, L.INT_RANGE[dst][1])
        elif dst in NARROW:
            lo, hi = max(lo, -int(_FMAX[dst])), min(hi, int(_FMAX[dst]))
            if src == 'i64':   # exact in f64, so the reference rounds once
                lo, hi = max(lo, -2**53), min(hi, 2**53)
        mag = np.exp2(g.uniform('f64', [n], 0, math.log2(hi) - 1e-3))
        v = np.floor(mag).astype(np.int64) * np.where(g.bools([n]), 1, -1)
        v = np.clip(v, lo, hi)
        v[:n // 4] = g.ints([n // 4], -5, 5)
        return v
    sign = np.where(g.bools([n]), 1.0, -1.0)
    if dst in INTS:
        lim = min(float(L.INT_RANGE[dst][1]), _FMAX[src])
        mag = np.exp2(g.uniform('f64', [n], -4, math.log2(lim)))
        v = rnd(src, sign * mag)
        # Keep what truncates into range (rounding to src may have crossed it);
        # the bounds are powers of two, exact in float.
        half = 2.0 ** ({'i8': 8, 'i32': 32, 'i64': 64}[dst] - 1)
        v = np.where((np.trunc(v) >= -half) & (np.trunc(v) < half), v, 0.5)
        return rnd(src, v)
    if dst == 'bool':
        v = g.inject(g.inject(g.normal(src, [n]), 0.0, 0.3), -0.0, 0.1)
        return g.inject(v, np.nan, 0.05)
    # float -> float: magnitudes across dst's range and a little beyond,
    # including its subnormals.
    top = math.log2(min(_FMAX[src], _FMAX[dst] * 4))
    bottom = math.log2(L.tiny(dst)) - 1 if dst in NARROW else -30
    bottom = max(bottom, math.log2(L.tiny(src)))
    v = sign * np.exp2(g.uniform('f64', [n], bottom, top))
    specials = [0.0, -0.0, np.nan, 1.0, -2.5]
    if 'f8e4m3' not in (src, dst):   # f8e4m3 has no infinity to give or take
        specials += [np.inf, -np.inf]
    v[:len(specials)] = specials
    return rnd(src, v)


def cast_ref(x, src, dst):
    if dst == 'bool':
        return x != 0                        # NaN != 0: true, as in PyTorch
    if src == 'bool':
        x = x.astype(np.int64)
    if dst in INTS:
        return np.trunc(x).astype(np.int64) if src in FLOATS else x.astype(np.int64)
    if src == 'i64' and dst in ('f32', 'f64'):
        # int64 -> float: the C conversion rounds to nearest even exactly.
        return x.astype(np.float32 if dst == 'f32' else np.float64).astype(np.float64)
    return rnd(dst, np.asarray(x, dtype=np.float64))


def gen_casts(g, quick):
    cases = []
    kinds = ('f32', 'f16', 'bf16', 'f8e4m3', 'i32', 'bool') if g.odd else EVERY
    for src in kinds:
        for dst in kinds:
            n = g.pick([d for d in ODD_ROWS if d >= 16]) if g.odd else g.int(16, 64) if quick else g.int(16, 2048)
            x = cast_values(g, src, dst, n)
            c = Case('cast', '%s->%s' % (src, dst))
            c.node('cast', [c.inp('x', src, x)], ['y'], {'to': dst})
            c.out('y', dst, cast_ref(x, src, dst))
            cases.append(c)
    return cases


# --- sources ------------------------------------------------------------------------

def gen_constant(g, dt):
    c = Case('constant', dt)
    s = g.shape(max_rank=3)
    if dt == 'bool':
        value = g.coin()
    elif dt in INTS:
        value = g.int(*L.INT_RANGE[dt]) if g.coin() else g.int(-100, 100)
    elif g.coin(0.3):
        value = g.int(-20, 20)              # an integer literal for a float
    else:
        value = round(float(g.rng.standard_normal()) * 10, 3)
    c.node('constant', [], ['y'], {'dtype': dt, 'shape': s, 'value': value})
    ref = np.full(s, value) if dt in INTS + ('bool',) else np.full(s, rnd(dt, float(value)))
    c.out('y', dt, ref)
    return c


def gen_iota(g, dt):
    c = Case('iota', dt)
    s = g.shape(min_rank=1)
    ax = g.axis(len(s))
    c.node('iota', [], ['y'], {'dtype': dt, 'shape': s, 'axis': ax})
    idx = np.indices(s)[ax]
    c.out('y', dt, idx if dt in INTS else rnd(dt, idx))
    return c


# --- reductions -------------------------------------------------------------------

def reduce_attrs(g, rank):
    """(axes attr or None, keepdims attr or None, numpy axes)."""
    if rank == 0 or g.coin(0.2):
        axes = None
        np_axes = tuple(range(rank))
    else:
        chosen = sorted(set(g.int(0, rank - 1) for _ in range(g.int(1, rank))))
        axes = [a - rank if g.coin() else a for a in chosen]
        g.rng.shuffle(axes)
        np_axes = tuple(chosen)
    keep = g.pick([None, False, True])
    return axes, keep, np_axes


def gen_reduce(op):
    def gen(g, dt):
        c = Case(op, dt)
        s = g.shape()
        axes, keep, ax = reduce_attrs(g, len(s))
        kd = bool(keep)
        count = int(np.prod([s[a] for a in ax])) if ax else 1
        if dt in INTS:
            if op == 'reduce_sum':
                # Values whose sums fit the dtype.
                lim = {'i8': 127, 'i32': 2**31 - 1, 'i64': I64_MAX}[dt]
                m = max(1, lim // max(count, 1))
                x = g.ints(s, -min(m, 2**40), min(m, 2**40))
            else:
                x = g.values(dt, s)
            f = {'reduce_sum': np.sum, 'reduce_max': np.max, 'reduce_min': np.min}[op]
            c.node(op, [c.inp('x', dt, x)], ['y'], {'axes': axes, 'keepdims': keep})
            c.out('y', dt, f(x, axis=ax, keepdims=kd))
            return c
        x = g.normal(dt, s, 2)
        if op in ('reduce_max', 'reduce_min') and g.coin(0.3):
            x = g.inject(x, np.nan, 0.02)   # NaN propagates
        c.node(op, [c.inp('x', dt, x)], ['y'], {'axes': axes, 'keepdims': keep})
        if op in ('reduce_max', 'reduce_min'):
            f = np.max if op == 'reduce_max' else np.min
            c.out('y', dt, f(x, axis=ax, keepdims=kd))
            return c
        r = np.sum(x, axis=ax, keepdims=kd)
        scale = np.sum(np.abs(x), axis=ax, keepdims=kd)
        if op == 'reduce_mean':
            r, scale = r / count, scale / count
        # Summation error: a few ulp times sqrt(count), relative to sum |x|.
        c.out('y', dt, narrow(dt, r), ftol(dt, 4 * math.sqrt(count) + 4, scale))
        return c
    return gen


def edge_reduce_inf_nan(g, dt):
    """reduce_max of an all -inf row is -inf, of a row with NaN is NaN;
    likewise reduce_min with +inf."""
    cases = []
    for op, inf in (('reduce_max', -np.inf), ('reduce_min', np.inf)):
        n = g.pick([1, 3, 7, 33])
        x = g.normal(dt, [5, n])
        x[0, :] = inf
        x[1, g.int(0, n - 1)] = np.nan
        x[2, :] = inf
        x[2, g.int(0, n - 1)] = 1.5
        x[3, g.int(0, n - 1)] = inf
        c = Case(op, dt, '[5,%d] inf/NaN rows' % n)
        c.node(op, [c.inp('x', dt, x)], ['y'], {'axes': [1]})
        c.out('y', dt, (np.max if op == 'reduce_max' else np.min)(x, axis=1))
        cases.append(c)
    return cases


def edge_zero_size(g, dt):
    """Empty tensors: elementwise ops keep the empty shape, a sum over an
    empty axis is 0."""
    c = Case('add', dt, '[0,3]+[3]')
    a, b = g.normal(dt, [0, 3]), g.normal(dt, [3])
    c.node('add', [c.inp('a', dt, a), c.inp('b', dt, b)], ['y'])
    c.out('y', dt, a + b)
    d = Case('reduce_sum', dt, '[2,0] axes=[1]')
    x = g.normal(dt, [2, 0])
    d.node('reduce_sum', [d.inp('x', dt, x)], ['y'], {'axes': [1]})
    d.out('y', dt, np.zeros([2]))
    e = Case('slice', dt, '[4,5] starts=[3] ends=[1] (empty)')
    x = g.normal(dt, [4, 5])
    e.node('slice', [e.inp('x', dt, x)], ['y'], {'starts': [3], 'ends': [1], 'axes': [0]})
    e.out('y', dt, x[3:1])
    return [c, d, e]


def gen_topk(g, dt):
    c = Case('topk', dt)
    s = g.shape(min_rank=1)
    ax = g.axis(len(s)) if g.coin(0.7) else None
    a = -1 if ax is None else ax
    n = s[a]
    k = g.pick([1, n, g.int(1, n)])
    largest = g.pick([None, True, False])
    x = g.ties(dt, s) if g.coin() else g.values(dt, s)
    c.node('topk', [c.inp('x', dt, x)], ['v', 'i'], {'k': k, 'axis': ax, 'largest': largest})
    xm = np.moveaxis(x, a, -1)
    # A stable sort keeps ties in index order: lower index first.
    key = -xm.astype(np.float64) if largest in (None, True) else xm.astype(np.float64)
    if dt in INTS:
        key = xm.astype(object) * (-1 if largest in (None, True) else 1)
        order = np.argsort(key, axis=-1, kind='stable')
    else:
        order = np.argsort(key, axis=-1, kind='stable')
    idx = order[..., :k]
    vals = np.take_along_axis(xm, idx, axis=-1)
    c.out('v', dt, np.moveaxis(vals, -1, a))
    c.out('i', 'i64', np.moveaxis(idx, -1, a))
    return c


def gen_arg(op):
    def gen(g, dt):
        c = Case(op, dt)
        s = g.shape(min_rank=1)
        ax = g.axis(len(s))
        keep = g.coin()
        x = g.ties(dt, s) if g.coin() else g.values(dt, s)
        c.node(op, [c.inp('x', dt, x)], ['y'], {'axis': ax, 'keepdims': keep})
        f = np.argmax if op == 'argmax' else np.argmin    # first index on ties
        r = f(x, axis=ax)
        c.out('y', 'i64', np.expand_dims(r, ax) if keep else r)
        return c
    return gen


# --- matmul -----------------------------------------------------------------------

def gen_matmul(g, dt):
    c = Case('matmul', dt)
    m, k, n = (g.pick([1, 2, 3, 7, 16, 33, 64]) for _ in range(3))
    if g.odd:
        # GEMM edges: tiles that do not divide, rows not a multiple of 16 bytes.
        m, k, n = (g.pick(d) for d in ([65, 77], [1001, 2003], [3, 33]))
        m, n = (m, n) if g.coin() else (n, m)
    elif not g.quick and g.coin(0.3):
        k = g.pick([127, 256, 300])
    batch = g.shape(max_rank=2, budget=8)
    ba, bb = g.bshapes(batch)
    ta, tb = g.pick([None, False, True]), g.pick([None, False, True])
    # Now and then a vector operand, as NumPy's matmul takes it (the
    # project's documented extension of the format): [K] @ [..., K, N].
    vec_a, vec_b = g.coin(0.1), g.coin(0.1)
    out_dt = None
    if dt in ('bf16', 'f16') and g.coin():
        out_dt = 'f32'
    if dt == 'i8':
        out_dt = 'i32'
    if dt in INTS:
        lim = {'i8': 127, 'i32': 1000, 'i64': 10**6}[dt]
        a, b = g.ints(ba + [m, k], -lim, lim), g.ints(bb + [k, n], -lim, lim)
    else:
        a, b = g.normal(dt, ba + [m, k]), g.normal(dt, bb + [k, n])
    if vec_a:
        a, ta = a.reshape(-1, k)[0], None
    if vec_b:
        b, tb = b.reshape(-1, k, n)[0, :, 0], None
    at = np.swapaxes(a, -1, -2) if ta else a
    bt = np.swapaxes(b, -1, -2) if tb else b
    c.node('matmul', [c.inp('a', dt, at), c.inp('b', dt, bt)], ['y'],
           {'transpose_a': ta, 'transpose_b': tb, 'out_dtype': out_dt})
    if dt in INTS:
        c.out('y', out_dt or dt, np.matmul(a, b))
        return c
    r = np.matmul(a, b)
    scale = np.matmul(np.abs(a), np.abs(b))
    # Dot products accumulate in f32 (f64): a few ulp times sqrt(K) of sum |a||b|.
    ulps = 4 * math.sqrt(k) + 4
    od = out_dt or dt
    c.out('y', od, narrow(od, r), ftol(od, ulps, scale))
    return c


# --- data movement ------------------------------------------------------------------

def gen_reshape(g, dt):
    c = Case('reshape', dt)
    s = g.shape()
    n = int(np.prod(s))
    # A new factorisation of n, sometimes with -1 in it.
    fac = []
    left = n
    for d in (2, 3, 5, 7, 11, 127, 33, 4):
        while left % d == 0 and g.coin(0.6):
            fac.append(d)
            left //= d
    fac.append(left)
    g.rng.shuffle(fac)
    new = [d for d in fac if d != 1 or g.coin(0.3)]
    if int(np.prod(new)) != n:
        new.append(n // int(np.prod(new)))
    attr = list(new)
    if attr and g.coin(0.5):
        attr[g.int(0, len(attr) - 1)] = -1
    x = g.values(dt, s)
    c.node('reshape', [c.inp('x', dt, x)], ['y'], {'shape': attr})
    c.out('y', dt, x.reshape(new))
    return c


def gen_transpose(g, dt):
    c = Case('transpose', dt)
    s = g.shape()
    perm = list(g.rng.permutation(len(s)))
    x = g.values(dt, s)
    c.node('transpose', [c.inp('x', dt, x)], ['y'], {'perm': perm})
    c.out('y', dt, np.transpose(x, perm))
    return c


def gen_broadcast_to(g, dt):
    c = Case('broadcast_to', dt)
    target = g.shape()
    s = g.bshapes(target, 1)[0]
    x = g.values(dt, s)
    c.node('broadcast_to', [c.inp('x', dt, x)], ['y'], {'shape': target})
    c.out('y', dt, np.broadcast_to(x, target))
    return c


def gen_concat(g, dt):
    c = Case('concat', dt)
    s = g.shape(min_rank=1)
    ax = g.axis(len(s))
    xs = []
    for i in range(g.int(1, 4)):
        si = list(s)
        si[ax] = g.pick([1, 2, 3, 7, 16] + ([0] if not g.quick else []))
        xs.append(g.values(dt, si))
    names = [c.inp('x%d' % i, dt, x) for i, x in enumerate(xs)]
    c.node('concat', names, ['y'], {'axis': ax})
    c.out('y', dt, np.concatenate(xs, axis=ax))
    return c


def slice_indices(n, start, end, step):
    """ONNX Slice on one axis of size n: negative starts/ends count from the
    end, then starts clamp to [0, n] ([0, n-1] stepping backwards) and ends to
    [0, n] ([-1, n-1] stepping backwards)."""
    if start < 0:
        start += n
    if end < 0:
        end += n
    if step > 0:
        start, end = min(max(start, 0), n), min(max(end, 0), n)
    else:
        start, end = min(max(start, 0), n - 1), min(max(end, -1), n - 1)
    count = max(0, -(-(end - start) // step))
    return [start + i * step for i in range(count)]


def slice_bounds(g, n, step):
    """start and end of a non-empty ONNX slice of an axis of size n, written
    in the ways users write them: negative from the end, or past the end
    (clamped), or as INT64_MIN/MAX."""
    i0, i1 = sorted([g.int(0, n - 1), g.int(0, n - 1)])
    if g.coin(0.25):
        # Any values at all (clamping does the work), redrawn until non-empty.
        while True:
            start = g.pick([g.int(-n - 2, n + 2), 0, -1, I64_MAX, -I64_MAX])
            end = g.pick([g.int(-n - 2, n + 2), n, -n - 1, I64_MAX, -I64_MAX - 1])
            if slice_indices(n, start, end, step):
                return start, end
    if step > 0:
        start = g.pick([i0, i0 - n] + ([-I64_MAX, -n - 5] if i0 == 0 else []))
        end = g.pick([i1 + 1] + ([i1 + 1 - n] if i1 + 1 < n else [I64_MAX, n + 5]))
    else:
        start = g.pick([i1, i1 - n] + ([I64_MAX, n + 5] if i1 == n - 1 else []))
        end = g.pick([i0 - 1, i0 - 1 - n] if i0 > 0 else [-n - 1, -n - 5, -I64_MAX - 1])
    return start, end


def gen_slice(g, dt):
    c = Case('slice', dt)
    s = g.shape(min_rank=1)
    r = len(s)
    chosen = sorted(set(g.int(0, r - 1) for _ in range(g.int(1, r))))
    use_axes = g.coin(0.7) or len(chosen) != r
    if use_axes:
        g.rng.shuffle(chosen)        # axes may come in any order
    else:
        chosen = list(range(r))
    starts, ends, steps = [], [], []
    idx = [list(range(d)) for d in s]
    for a in chosen:
        n = s[a]
        step = g.pick([1, 1, 2, 3, -1, -2, -3])
        start, end = slice_bounds(g, n, step)
        starts.append(start)
        ends.append(end)
        steps.append(step)
        idx[a] = slice_indices(n, start, end, step)
    axes = [a - r if g.coin() else a for a in chosen] if use_axes else None
    x = g.values(dt, s)
    c.node('slice', [c.inp('x', dt, x)], ['y'],
           {'starts': starts, 'ends': ends, 'axes': axes,
            'steps': steps if any(st != 1 for st in steps) or g.coin() else None})
    c.out('y', dt, x[np.ix_(*[np.asarray(i, dtype=np.intp) for i in idx])])
    return c


def gen_pad(g, dt):
    c = Case('pad', dt)
    s = g.shape(max_rank=4, budget=g.budget // 4)
    r = len(s)
    pads = [g.pick([0, 0, 1, 2, 3]) for _ in range(2 * r)]
    if dt == 'bool':
        value = None
    elif dt in INTS:
        value = g.pick([None, g.int(-100, 100)])
    else:
        value = g.pick([None, float(rnd(dt, round(float(g.rng.standard_normal()) * 4, 2)))])
    x = g.values(dt, s)
    c.node('pad', [c.inp('x', dt, x)], ['y'], {'pads': pads, 'value': value})
    ref = np.pad(x, [(pads[i], pads[i + r]) for i in range(r)], constant_values=value or 0) if r else x
    c.out('y', dt, ref)
    return c


def gen_gather(g, dt):
    c = Case('gather', dt)
    ds = g.shape(min_rank=1, budget=g.budget // 8)
    ax = g.axis(len(ds))
    n = ds[ax]
    ishape = g.shape(max_rank=3, budget=64)
    idt = g.pick(['i32', 'i64'])
    idx = g.ints(ishape, -n, n - 1)            # negative counts from the end
    x = g.values(dt, ds)
    c.node('gather', [c.inp('x', dt, x), c.inp('idx', idt, idx)], ['y'], {'axis': ax})
    c.out('y', dt, np.take(x, np.where(idx < 0, idx + n, idx), axis=ax))
    return c


def gen_take_along_axis(g, dt):
    c = Case('take_along_axis', dt)
    ds = g.shape(min_rank=1, budget=g.budget // 4)
    ax = g.axis(len(ds))
    n = ds[ax]
    ish = list(ds)
    ish[ax] = g.pick([1, 2, 5, 7])
    idt = g.pick(['i32', 'i64'])
    idx = g.ints(ish, -n, n - 1)
    x = g.values(dt, ds)
    c.node('take_along_axis', [c.inp('x', dt, x), c.inp('idx', idt, idx)], ['y'], {'axis': ax})
    c.out('y', dt, np.take_along_axis(x, np.where(idx < 0, idx + n, idx), axis=ax))
    return c


def edge_index_errors(g, dt):
    """An index out of range is a run-time error naming the node."""
    cases = []
    for op in ('gather', 'take_along_axis'):
        n = g.pick([1, 3, 7])
        x = g.normal('f32', [n, 4])
        idx = g.ints([5, 4] if op == 'take_along_axis' else [5], -n, n - 1)
        idx[g.int(0, 4)] = g.pick([n, -n - 1, n + 100])
        c = Case(op, 'f32', 'index out of range')
        c.node('neg', [c.inp('x', 'f32', x)], ['nx'])
        c.node(op, ['nx', c.inp('idx', 'i64', idx)], ['y'], {'axis': 0})
        c.out('y', 'f32', np.zeros(0))
        c.error = 'index out of range in /nodes/1' + (' (gather)' if op == 'gather' else '')
        cases.append(c)
    return cases


def edge_cross_entropy(g, dt):
    """Cross-entropy as users write it: log_softmax, the target's entry
    (one index a row), neg, and the mean or sum over the rows (GPU targets
    run it all in the chain's launch); and a target out of range, which the
    fused kernel must still report."""
    cases = []
    for red in ('reduce_mean', 'reduce_sum', 'error', 'ignore', 'reduce_mean'):
        rows, n = g.pick([1, 5, 130, 1001]), g.pick([2, 7, 33, 100, 1001])
        if len(cases) == 4:
            # A vocabulary's length: a cluster of blocks a row on GPUs.
            rows, n = g.pick([1, 3, 7]), g.pick([50257, 131072, 256000])
        x = g.normal(dt, [rows, n], 3)
        t = g.ints([rows, 1], -n, n - 1)
        if red == 'error':
            t[g.int(0, rows - 1), 0] = g.pick([n, -n - 1])
        if red == 'ignore':
            cases.append(cross_entropy_ignore(g, dt, x, t))
            continue
        c = Case('take_along_axis', dt, 'cross-entropy %s [%d,%d]' % (red, rows, n))
        c.node('log_softmax', [c.inp('x', dt, x)], ['lp'], {'axis': -1})
        c.node('take_along_axis', ['lp', c.inp('t', 'i64', t)], ['p'], {'axis': 1})
        c.node('neg', ['p'], ['nl'])
        c.node('reduce_sum' if red == 'error' else red, ['nl'], ['y'],
               {'axes': [0], 'keepdims': True})
        if red == 'error':
            c.out('y', dt, np.zeros(0))
            c.error = 'index out of range in /nodes/1'
            cases.append(c)
            continue
        nl = -np.take_along_axis(L.log_softmax(x, -1, out=rounding(dt)),
                                 np.where(t < 0, t + n, t), axis=1)
        y = np.sum(nl, axis=0, keepdims=True)
        scale = np.sum(np.abs(nl)) + rows
        if red == 'reduce_mean':
            y, scale = y / rows, scale / rows
        # Each row's loss within a log_softmax's bound (|lp| + 1), summed;
        # plus the sum's own rounding.
        c.out('y', dt, narrow(dt, y),
              ftol(dt, 16 + 4 * math.sqrt(n) + 4 * math.sqrt(rows), scale, 4, scale))
        cases.append(c)
    return cases


def cross_entropy_ignore(g, dt, x, t):
    """PyTorch's default cross-entropy as its ONNX export spells it: rows
    whose target is -100 are ignored (their index sent to 0, their loss 0),
    and the mean divides by the rows kept (none kept: 0 / 0, NaN)."""
    rows, n = x.shape
    t = np.where(t < 0, t + n, t)
    t[g.ints([rows, 1], 0, 3) == 0] = -100
    c = Case('take_along_axis', dt, 'cross-entropy ignore_index [%d,%d]' % (rows, n))
    c.node('constant', [], ['ign'], {'dtype': 'i64', 'shape': [], 'value': -100})
    c.node('constant', [], ['zi'], {'dtype': 'i64', 'shape': [], 'value': 0})
    c.node('constant', [], ['zf'], {'dtype': dt, 'shape': [], 'value': 0.0})
    c.node('constant', [], ['one'], {'dtype': dt, 'shape': [], 'value': 1.0})
    c.node('not_equal', [c.inp('t', 'i64', t), 'ign'], ['keep'])
    c.node('select', ['keep', 't', 'zi'], ['safe'])
    c.node('log_softmax', [c.inp('x', dt, x)], ['lp'], {'axis': -1})
    c.node('take_along_axis', ['lp', 'safe'], ['p'], {'axis': 1})
    c.node('neg', ['p'], ['nl'])
    c.node('select', ['keep', 'nl', 'zf'], ['kl'])
    c.node('select', ['keep', 'one', 'zf'], ['w'])
    c.node('reduce_sum', ['kl'], ['total'], {'axes': [0, 1], 'keepdims': False})
    c.node('reduce_sum', ['w'], ['count'], {'axes': [0, 1], 'keepdims': False})
    c.node('div', ['total', 'count'], ['y'])
    keep = t != -100
    nl = -np.take_along_axis(L.log_softmax(x, -1, out=rounding(dt)), np.where(keep, t, 0),
                            axis=1)
    kept = int(keep.sum())
    with np.errstate(invalid='ignore', divide='ignore'):
        y = np.sum(np.where(keep, nl, 0)) / np.float64(kept)
    scale = (np.sum(np.abs(np.where(keep, nl, 0))) + kept) / max(kept, 1)
    # As edge_cross_entropy's mean: each kept row's loss within a
    # log_softmax's bound, summed, and the sums' rounding.
    c.out('y', dt, narrow(dt, np.asarray(y)),
          ftol(dt, 16 + 4 * math.sqrt(n) + 4 * math.sqrt(rows), scale, 4, scale))
    return c


# --- convolution and pooling ------------------------------------------------------

def conv_tol(dt, x, w, b, ref_fn, taps):
    scale = ref_fn(np.abs(x), np.abs(w), None if b is None else np.abs(b))
    return ftol(dt, 4 * math.sqrt(taps) + 4, scale)


def gen_conv2d(g, dt):
    c = Case('conv2d', dt)
    groups = g.opt('groups', lambda: g.pick([1, 1, 2, 3]))
    cg, og = g.opt('cg', lambda: g.pick([1, 2, 3])), g.opt('og', lambda: g.pick([1, 2, 4]))
    if g.coin(0.2) and 'cg' not in g.force:
        cg = 1                                 # depthwise
    kh, kw = g.opt('kernel', lambda: (g.pick([1, 2, 3, 5]), g.pick([1, 2, 3])))
    sh, sw = g.opt('strides', lambda: (g.pick([1, 2, 3]), g.pick([1, 2])))
    dh, dw = g.opt('dilations', lambda: (g.pick([1, 2]), g.pick([1, 2])))
    pads = g.opt('pads', lambda: [g.int(0, 2) for _ in range(4)])
    h = max(1, dh * (kh - 1) + 1 - pads[0] - pads[2]) + g.int(0, 12)
    w_ = max(1, dw * (kw - 1) + 1 - pads[1] - pads[3]) + g.int(0, 12)
    n = g.pick([1, 2])
    x = g.normal(dt, [n, groups * cg, h, w_])
    w = g.normal(dt, [groups * og, cg, kh, kw], 0.5)
    b = g.normal(dt, [groups * og]) if g.coin() else None
    attrs = {'strides': [sh, sw] if (sh, sw) != (1, 1) or g.coin() else None,
             'pads': pads if any(pads) or g.coin() else None,
             'dilations': [dh, dw] if (dh, dw) != (1, 1) or g.coin() else None,
             'groups': groups if groups != 1 or g.coin() else None}
    ins = [c.inp('x', dt, x), c.inp('w', dt, w)] + ([c.inp('b', dt, b)] if b is not None else [])
    c.node('conv2d', ins, ['y'], attrs)

    def f(x_, w__, b_):
        return L.conv2d(x_, w__, b_, (sh, sw), pads, (dh, dw), groups)
    c.out('y', dt, narrow(dt, f(x, w, b)), conv_tol(dt, x, w, b, f, cg * kh * kw))
    return c


def gen_conv_transpose2d(g, dt):
    c = Case('conv_transpose2d', dt)
    groups = g.opt('groups', lambda: g.pick([1, 1, 2, 3]))
    cg, og = g.opt('cg', lambda: g.pick([1, 2, 3])), g.opt('og', lambda: g.pick([1, 2, 3]))
    kh, kw = g.opt('kernel', lambda: (g.pick([1, 2, 3, 4]), g.pick([1, 2, 3])))
    sh, sw = g.opt('strides', lambda: (g.pick([1, 2, 3]), g.pick([1, 2])))
    dh, dw = g.opt('dilations', lambda: (g.pick([1, 2]), g.pick([1, 2])))
    op = g.opt('output_padding', lambda: [g.int(0, max(sh, dh) - 1), g.int(0, max(sw, dw) - 1)])
    h, w_ = g.int(1, 9), g.int(1, 9)
    # Pads may not crop the whole output.
    fh = (h - 1) * sh + dh * (kh - 1) + 1 + op[0]
    fw = (w_ - 1) * sw + dw * (kw - 1) + 1 + op[1]
    ph, pw = min(2, (fh - 1) // 2), min(2, (fw - 1) // 2)
    pads = g.opt('pads', lambda: [g.int(0, ph), g.int(0, pw), g.int(0, ph), g.int(0, pw)])
    n = g.pick([1, 2])
    x = g.normal(dt, [n, groups * cg, h, w_])
    w = g.normal(dt, [groups * cg, og, kh, kw], 0.5)
    b = g.normal(dt, [groups * og]) if g.coin() else None
    attrs = {'strides': [sh, sw], 'pads': pads if any(pads) or g.coin() else None,
             'dilations': [dh, dw] if (dh, dw) != (1, 1) or g.coin() else None,
             'output_padding': op if any(op) or g.coin() else None,
             'groups': groups if groups != 1 or g.coin() else None}
    ins = [c.inp('x', dt, x), c.inp('w', dt, w)] + ([c.inp('b', dt, b)] if b is not None else [])
    c.node('conv_transpose2d', ins, ['y'], attrs)

    def f(x_, w__, b_):
        return L.conv_transpose2d(x_, w__, b_, (sh, sw), pads, (dh, dw), op, groups)
    c.out('y', dt, narrow(dt, f(x, w, b)), conv_tol(dt, x, w, b, f, cg * kh * kw))
    return c


def gen_pool(op):
    def gen(g, dt):
        c = Case(op, dt)
        kh, kw = g.opt('kernel', lambda: (g.pick([1, 2, 3, 4]), g.pick([1, 2, 3, 5])))
        strides = g.opt('strides', lambda: [g.pick([1, 2, 3]), g.pick([1, 2, 3])]
                        if g.coin(0.6) else None)
        # Pads of at most half the kernel, as PyTorch requires (and tcc).
        pads = g.opt('pads', lambda: [g.int(0, kh // 2), g.int(0, kw // 2),
                                      g.int(0, kh // 2), g.int(0, kw // 2)])
        ceil = g.opt('ceil_mode', lambda: g.pick([None, False, True]))
        cip = None
        if op == 'avg_pool2d':
            cip = g.opt('count_include_pad', lambda: g.pick([None, False, True]))
        h, w = kh + g.int(0, 12), kw + g.int(0, 12)
        x = g.normal(dt, [g.pick([1, 2]), g.pick([1, 3, 4]), h, w])
        c.node(op, [c.inp('x', dt, x)], ['y'],
               {'kernel': [kh, kw], 'strides': strides, 'pads': pads if any(pads) or g.coin() else None,
                'ceil_mode': ceil, 'count_include_pad': cip})
        kind = 'max' if op == 'max_pool2d' else 'avg'
        r = L.pool2d(x, kind, (kh, kw), strides, pads, bool(ceil), cip in (None, True))
        if kind == 'max':
            c.out('y', dt, r)
        else:
            scale = L.pool2d(np.abs(x), kind, (kh, kw), strides, pads, bool(ceil), cip in (None, True))
            c.out('y', dt, narrow(dt, r), ftol(dt, 4 * math.sqrt(kh * kw) + 4, scale))
        return c
    return gen


def gen_global_avg_pool2d(g, dt):
    c = Case('global_avg_pool2d', dt)
    s = [g.pick([1, 2]), g.pick([1, 3, 8])] + g.shape(2, budget=g.budget // 16)
    x = g.normal(dt, s)
    c.node('global_avg_pool2d', [c.inp('x', dt, x)], ['y'])
    r = x.mean(axis=(2, 3), keepdims=True)
    scale = np.abs(x).mean(axis=(2, 3), keepdims=True)
    c.out('y', dt, narrow(dt, r), ftol(dt, 4 * math.sqrt(s[2] * s[3]) + 4, scale))
    return c


def gen_batch_norm(g, dt):
    c = Case('batch_norm', dt)
    s = [g.pick([1, 2, 3]), g.pick([1, 3, 7])] + g.shape(max_rank=2, budget=g.budget // 32)
    ch = s[1]
    x = g.normal(dt, s, 2)
    sc, bi, mu = g.normal(dt, [ch]), g.normal(dt, [ch]), g.normal(dt, [ch])
    var = g.uniform(dt, [ch], 0.1, 3)
    eps_ = g.pick([None, 1e-3])
    names = [c.inp(n, dt, v) for n, v in
             (('x', x), ('scale', sc), ('bias', bi), ('mean', mu), ('var', var))]
    c.node('batch_norm', names, ['y'], {'eps': eps_})
    e = 1e-5 if eps_ is None else eps_
    shp = [1, ch] + [1] * (len(s) - 2)
    inv = 1 / np.sqrt(var + e)
    r = (x - mu.reshape(shp)) * (inv * sc).reshape(shp) + bi.reshape(shp)
    scale = ((np.abs(x) + np.abs(mu).reshape(shp)) * np.abs(inv * sc).reshape(shp) +
             np.abs(bi).reshape(shp))
    # A primitive: computed in f32, rounded once.
    c.out('y', dt, narrow(dt, r), ftol(dt, 8, scale))
    return c


# --- composites ------------------------------------------------------------------

def chain_tol(dt, n, scale, store_ulps):
    """A composite chain: f32 (f64) error a few ulp times sqrt of the reduced
    count, relative to the chain's scale; a narrow type's result rounded once
    more (the store ulps). The ulps below were measured when the narrow
    chains rounded after each primitive: on thousands of random rows with
    n = 1..1000, that per-step result and the exact result rounded once
    differed by at most half of what is allowed."""
    return ftol(dt, 16 + 4 * math.sqrt(n), scale, store_ulps, scale)


def softmax_tol(op, dt, n, ref):
    """softmax: outputs in [0, 1], off by <= 0.7 ulp relative to |p| + 1/4.
    log_softmax: t - lse, off by <= 1 ulp relative to |ref| + 1."""
    if op == 'softmax':
        return chain_tol(dt, n, 0.25, 2)
    return chain_tol(dt, n, np.abs(np.where(np.isfinite(ref), ref, 0)) + 1, 2)


def gen_softmax(op):
    def gen(g, dt):
        c = Case(op, dt)
        s = g.shape(min_rank=1)
        ax = g.axis(len(s)) if g.coin(0.7) else None
        a = -1 if ax is None else ax
        x = g.normal(dt, s, 3)
        c.node(op, [c.inp('x', dt, x)], ['y'], {'axis': ax})
        f = L.softmax if op == 'softmax' else L.log_softmax
        r = f(x, a, out=rounding(dt))
        c.out('y', dt, r, softmax_tol(op, dt, s[a], r))
        return c
    return gen


def edge_softmax_inf(g, dt):
    """Masked softmax rows: -inf entries give 0, an all -inf row gives NaN
    (the format's chain computes -inf - -inf), a NaN row gives NaN."""
    n = g.pick([3, 7, 33, 127])
    x = g.normal(dt, [6, n], 3)
    x[0, :] = -np.inf
    x[1, g.ints([n // 2], 0, n - 1)] = -np.inf
    x[2, :] = -np.inf
    x[2, g.int(0, n - 1)] = 0.5
    x[3, g.int(0, n - 1)] = np.nan
    x[4] = np.where(np.arange(n) > g.int(0, n - 1), -np.inf, x[4])   # causal-like
    # Rows longer than a block's registers hold (GPU targets: a cluster of
    # blocks a row, or none past 8 blocks' worth), a -inf entry in each.
    m = g.pick([32769, 50257, 131072, 200003, 300001])
    long_x = g.normal(dt, [3, m], 3)
    long_x[:, g.int(0, m - 1)] = -np.inf
    cases = []
    rows = [(x, n, '-inf/NaN rows'), (long_x, m, 'long rows')]
    if dt == 'f16':
        # Sums of exponentials past 65504, f16's largest value: the chain
        # in f16 would give 0 and -inf; the composite sums in f32.
        rows.append((g.normal(dt, [2, 70001], 0.01), 70001, 'f16 sums past 65504'))
    for x, n, what in rows:
        for op in ('softmax', 'log_softmax'):
            c = Case(op, dt, '[%d,%d] %s' % (x.shape[0], n, what))
            c.node(op, [c.inp('x', dt, x)], ['y'], {'axis': -1})
            f = L.softmax if op == 'softmax' else L.log_softmax
            r = f(x, -1, out=rounding(dt))
            c.out('y', dt, r, softmax_tol(op, dt, n, r))
            cases.append(c)
    return cases


def gen_norm(op):
    def gen(g, dt):
        c = Case(op, dt)
        s = g.opt('shape', lambda: g.shape(min_rank=1))
        r = len(s)
        ax = g.opt('axis', lambda: g.pick([None, -1, -1, g.int(-r, r - 1)] if r > 1 else [None, -1, 0]))
        a = (-1 if ax is None else ax) % r
        nshape = s[a:]
        x = g.normal(dt, s, 2, mean=g.pick([0.0, 1.0]))
        ins = [c.inp('x', dt, x)]
        gamma = beta = None
        nin = g.int(1, 3 if op == 'layer_norm' else 2)
        if nin >= 2:
            gamma = g.normal(dt, nshape, 1, 1)
            ins.append(c.inp('gamma', dt, gamma))
        if nin >= 3:
            beta = g.normal(dt, nshape)
            ins.append(c.inp('beta', dt, beta))
        eps_ = g.pick([None, 1e-3, 1e-5])
        c.node(op, ins, ['y'], {'axis': ax, 'eps': eps_})
        n = int(np.prod(nshape))
        axes = tuple(range(a, r))
        # The chain adds eps as a constant of the type it computes in (f32
        # over narrow dtypes).
        e = float(rnd('f32' if dt in NARROW else dt,
                      (1e-5 if op == 'layer_norm' else 1e-6) if eps_ is None else eps_))
        if op == 'layer_norm':
            ref = L.layer_norm(x, gamma, beta, a, e, out=rounding(dt))
            # The mean is rounded at its own size: an error of ulp(m) / sigma
            # in normalised units (<= 3 ulps measured, with the scale below).
            m = np.abs(x.mean(axis=axes, keepdims=True))
            sd = np.sqrt(x.var(axis=axes, keepdims=True) + e)
            g_ = 1 if gamma is None else np.abs(gamma)
            c.out('y', dt, ref, chain_tol(dt, n, np.abs(ref) + 1 + g_ * m / sd, 4))
        else:
            ref = L.rms_norm(x, gamma, a, e, out=rounding(dt))
            c.out('y', dt, ref, chain_tol(dt, n, np.abs(ref) + 1, 2))
        return c
    return gen


def gen_linear(g, dt):
    c = Case('linear', dt)
    fin, fout = g.pick([1, 3, 16, 33, 64]), g.pick([1, 5, 16, 33])
    if g.odd:
        fin, fout = g.pick([1001, 3001]), g.pick([5, 33, 65])
    lead = g.shape(min_rank=1, max_rank=3, budget=16 if g.odd else 64)
    x = g.normal(dt, lead + [fin])
    w = g.normal(dt, [fout, fin], 1 / math.sqrt(fin))
    b = g.normal(dt, [fout]) if g.coin() else None
    ins = [c.inp('x', dt, x), c.inp('w', dt, w)] + ([c.inp('b', dt, b)] if b is not None else [])
    c.node('linear', ins, ['y'])
    rd = rounding(dt)
    mm = x @ w.T
    r = rd(mm)
    scale = np.abs(x) @ np.abs(w).T
    if b is not None:
        r = rd(r + b)
        scale = scale + np.abs(b)
    # matmul then add, each rounding: two ulps of the product's size.
    c.out('y', dt, r, ftol(dt, 4 * math.sqrt(fin) + 4, scale, 2, np.abs(mm) + np.abs(r)))
    return c


# --- the op table -------------------------------------------------------------------

def _ops():
    t = {}
    for op in UNARY:
        dts = STD_FLOATS + INTS if op in ('neg', 'abs', 'relu') else STD_FLOATS
        t[op] = (gen_unary(op), dts)
    t['gelu'] = (gen_gelu, STD_FLOATS)
    t['clamp'] = (gen_clamp, NUMERIC)
    for op in ('add', 'sub', 'mul', 'div', 'maximum', 'minimum', 'pow'):
        extra = ('f8e4m3', 'f8e5m2') if op in ('add', 'mul', 'maximum') else ()
        t[op] = (gen_binary(op), NUMERIC + extra)
    for op in CMP:
        t[op] = (gen_compare(op), NUMERIC + (('bool',) if op in ('equal', 'not_equal') else ()))
    for op in ('and', 'or', 'not'):
        t[op] = (gen_logical(op), ('bool',))
    t['select'] = (gen_select, EVERY)
    t['cast'] = (None, ())
    t['constant'] = (gen_constant, EVERY)
    t['iota'] = (gen_iota, NUMERIC)
    for op in ('reduce_sum', 'reduce_max', 'reduce_min'):
        t[op] = (gen_reduce(op), NUMERIC)
    t['reduce_mean'] = (gen_reduce('reduce_mean'), STD_FLOATS)
    t['topk'] = (gen_topk, NUMERIC)
    t['argmax'] = (gen_arg('argmax'), NUMERIC)
    t['argmin'] = (gen_arg('argmin'), NUMERIC)
    t['matmul'] = (gen_matmul, NUMERIC)
    for op, f in (('reshape', gen_reshape), ('transpose', gen_transpose),
                  ('broadcast_to', gen_broadcast_to), ('concat', gen_concat),
                  ('slice', gen_slice), ('pad', gen_pad), ('gather', gen_gather),
                  ('take_along_axis', gen_take_along_axis)):
        t[op] = (f, EVERY)
    t['conv2d'] = (gen_conv2d, STD_FLOATS)
    t['conv_transpose2d'] = (gen_conv_transpose2d, STD_FLOATS)
    t['max_pool2d'] = (gen_pool('max_pool2d'), STD_FLOATS)
    t['avg_pool2d'] = (gen_pool('avg_pool2d'), STD_FLOATS)
    t['global_avg_pool2d'] = (gen_global_avg_pool2d, STD_FLOATS)
    t['batch_norm'] = (gen_batch_norm, STD_FLOATS)
    t['softmax'] = (gen_softmax('softmax'), STD_FLOATS)
    t['log_softmax'] = (gen_softmax('log_softmax'), STD_FLOATS)
    t['layer_norm'] = (gen_norm('layer_norm'), STD_FLOATS)
    t['rms_norm'] = (gen_norm('rms_norm'), STD_FLOATS)
    t['linear'] = (gen_linear, STD_FLOATS)
    return t


OPS = _ops()

def edge_conv(g, dt):
    """Grouped, strided, dilated, asymmetrically padded; and depthwise."""
    return [gen_conv2d(g.forced(groups=2, cg=3, og=2, kernel=(3, 2), strides=(2, 3),
                                dilations=(2, 1), pads=[1, 0, 2, 1]), dt),
            gen_conv2d(g.forced(groups=4, cg=1, og=1, kernel=(3, 3), strides=(1, 1),
                                dilations=(1, 1), pads=[1, 1, 1, 1]), dt)]


def edge_conv_transpose(g, dt):
    return [gen_conv_transpose2d(g.forced(groups=2, cg=2, og=3, kernel=(3, 2), strides=(2, 3),
                                          dilations=(2, 1), output_padding=[1, 2],
                                          pads=[1, 0, 0, 1]), dt)]


def edge_pools(g, dt):
    """ceil_mode with a partial last window, with and without the pads in
    the average's divisor."""
    cases = [gen_pool('max_pool2d')(g.forced(kernel=(3, 2), strides=[2, 2], pads=[1, 1, 0, 0],
                                             ceil_mode=True), dt)]
    for cip in (False, True):
        cases.append(gen_pool('avg_pool2d')(g.forced(kernel=(3, 3), strides=[2, 2],
                                                     pads=[1, 0, 1, 1], ceil_mode=True,
                                                     count_include_pad=cip), dt))
    return cases


def edge_layer_norm(g, dt):
    """Normalisation over the last two and last three axes."""
    return [gen_norm('layer_norm')(g.forced(shape=[3, 5, 7], axis=-2), dt),
            gen_norm('layer_norm')(g.forced(shape=[2, 3, 4, 5], axis=-3), dt),
            gen_norm('rms_norm')(g.forced(shape=[4, 3, 33], axis=-2), dt),
            # Rows longer than a block's registers hold (GPU: a cluster).
            gen_norm('layer_norm')(g.forced(shape=[3, g.pick([50257, 131072])], axis=-1), dt),
            gen_norm('rms_norm')(g.forced(shape=[2, g.pick([65537, 200003])], axis=-1), dt)] + \
        norms_past_range(g, dt)


def norms_past_range(g, dt):
    """Norms of values whose squares pass f16's 65504 (activations of a
    few hundred): the composite computes in f32, where the chain in f16
    would give 0 throughout."""
    if dt != 'f16':
        return []
    cases = []
    for op, n in (('layer_norm', 257), ('rms_norm', 3001)):
        x = g.normal(dt, [3, n], 1000.0, mean=g.pick([0.0, 500.0]))
        c = Case(op, dt, '[3,%d] values near 1000' % n)
        c.node(op, [c.inp('x', dt, x)], ['y'], {'axis': -1})
        if op == 'layer_norm':
            ref = L.layer_norm(x, None, None, -1, float(rnd('f32', 1e-5)), out=rounding(dt))
            # The mean's f32 rounding, relative to the spread (mean / sd).
            m = np.abs(x.mean(axis=-1, keepdims=True))
            sd = np.sqrt(x.var(axis=-1, keepdims=True))
            c.out('y', dt, ref, chain_tol(dt, n, np.abs(ref) + 1 + m / sd, 4))
        else:
            ref = L.rms_norm(x, None, -1, float(rnd('f32', 1e-6)), out=rounding(dt))
            c.out('y', dt, ref, chain_tol(dt, n, np.abs(ref) + 1, 2))
        cases.append(c)
    return cases


def edge_slice(g, dt):
    """The slices users write most: a prefix, a reversal to the start
    (INT64_MIN end), a suffix with a clamped end, every other row."""
    cases = []
    for starts, ends, steps in (([0], [4], None), ([-1], [-2**63], [-1]),
                                ([3], [I64_MAX], None), ([0, 1], [I64_MAX, -1], [2, 1])):
        x = g.normal(dt, [9, 5])
        c = Case('slice', dt)
        axes = [0, 1][:len(starts)]
        c.node('slice', [c.inp('x', dt, x)], ['y'],
               {'starts': starts, 'ends': ends, 'axes': axes, 'steps': steps})
        idx = [list(range(9)), list(range(5))]
        for a, st, en, sp in zip(axes, starts, ends, steps or [1] * len(starts)):
            idx[a] = slice_indices(x.shape[a], st, en, sp)
        c.out('y', dt, x[np.ix_(*[np.asarray(i, dtype=np.intp) for i in idx])])
        cases.append(c)
    return cases


# Edge cases the format names, each run with every dtype listed.
EDGES = {
    'slice': (edge_slice, ('f32',)),
    'conv2d': (edge_conv, ('f32', 'bf16')),
    'conv_transpose2d': (edge_conv_transpose, ('f32', 'bf16')),
    'avg_pool2d': (edge_pools, ('f32', 'bf16')),
    'layer_norm': (edge_layer_norm, ('f32', 'bf16', 'f16')),
    'reduce_max': (edge_reduce_inf_nan, STD_FLOATS),
    'softmax': (edge_softmax_inf, STD_FLOATS),
    'gather': (edge_index_errors, ('f32',)),
    'take_along_axis': (edge_cross_entropy, STD_FLOATS),
    'add': (edge_zero_size, ('f32',)),
}


ODD_DTYPES = ('f32', 'f16', 'bf16')


def at_odd_offset(g, case):
    """The case with each input of rank >= 1 read at an element offset that
    is not a multiple of 16 bytes: the model takes a wider input and slices
    the case's input from position `skip` of its last axis."""
    nodes, inputs = [], []
    for name, dt, v in case.inputs:
        if v.ndim == 0 or v.shape[-1] == 0:
            inputs.append((name, dt, v))
            continue
        skip = g.pick([1, 3])
        lead = g.values(dt, v.shape[:-1] + (skip,)) if dt != 'bool' else g.bools(v.shape[:-1] + (skip,))
        wide = np.concatenate([np.asarray(lead, dtype=v.dtype), v], axis=-1)
        inputs.append((name + '_wide', dt, wide))
        nodes.append({'op': 'slice', 'inputs': [name + '_wide'], 'outputs': [name],
                      'attrs': {'starts': [skip], 'ends': [I64_MAX], 'axes': [v.ndim - 1]}})
    case.inputs = inputs
    case.nodes = nodes + case.nodes
    case.desc += ' @offset'
    return case


def cases_for_odd(op, g):
    """--odd: the op's float dtypes among f32/f16/bf16 (else its own), each
    on rows of ODD_ROWS, once as given and once read at an odd offset."""
    if op == 'cast':
        return [at_odd_offset(g, c) if i % 2 else c
                for i, c in enumerate(gen_casts(g, True))]
    gen, dts = OPS[op]
    dts = [d for d in dts if d in ODD_DTYPES] or list(dts)
    cases = []
    for dt in dts:
        cases.append(gen(g, dt))
        cases.append(at_odd_offset(g, gen(g, dt)))
    return cases


def cases_for(op, g, quick):
    """The cases of one op: every allowed dtype at least once."""
    if g.odd:
        return cases_for_odd(op, g)
    if op == 'cast':
        return gen_casts(g, quick)
    gen, dts = OPS[op]
    reps = 1 if quick else 3
    cases = [gen(g, dt) for dt in dts for _ in range(reps)]
    if quick and len(dts) < 3:
        cases += [gen(g, g.pick(dts)) for _ in range(2)]
    if op in EDGES:
        edge, edts = EDGES[op]
        for dt in edts:
            cases += edge(g, dt)
    return cases


def _f32_if_exact(v):
    a = np.asarray(v)
    if a.dtype == np.float64 and a.size > 16:
        b = a.astype(np.float32)
        if np.array_equal(b.astype(np.float64), a, equal_nan=True):
            return b
    return v


def _f32_up(v):
    """A tolerance in f32, never below the f64 one."""
    a = np.asarray(v)
    if a.dtype != np.float64 or a.size <= 16:
        return v
    b = a.astype(np.float32)
    return np.where(b.astype(np.float64) < a, np.nextafter(b, np.float32(np.inf)), b)


def compact(cases):
    """Cases as --record stores them (the carry to a GPU machine is small):
    no inputs (the .npy files hold them), references in f32 where that is
    exact, tolerances rounded up to f32."""
    out = []
    for c in cases:
        c = pickle.loads(pickle.dumps(c))
        c.inputs = []
        c.outputs = [(n, dt, _f32_if_exact(r), L.Tol(_f32_up(t.rtol), _f32_up(t.atol))
                      if isinstance(t, L.Tol) else t) for n, dt, r, t in c.outputs]
        out.append(c)
    return out


def replay(tcc, root, jobs):
    """Runs the bundles --record compiled under `root` and checks them."""
    with open(os.path.join(root, 'cases.pkl'), 'rb') as f:
        recorded = pickle.load(f)
    runner = Runner(tcc, root, os.path.join(root, 'failures'))

    def one(item):
        cases, args, outdir = item
        args = [os.path.join(root, a) if a.endswith('.tccb') else a for a in args]
        args = [a.split('=', 1)[0] + '=' + os.path.join(root, a.split('=', 1)[1])
                if a.endswith('.npy') else a for a in args]
        outdir = os.path.join(root, outdir)
        rc, _, err = L.run_tcc([tcc] + args + ['--output-dir', outdir])
        if rc == L.CANNOT_RUN:
            raise TccUnavailable(err)
        pres = ['c%d_' % k if len(cases) > 1 else '' for k in range(len(cases))]
        for c, pre in zip(cases, pres):
            if c.error is not None:
                ok = rc == 1 and c.error in err
                res = (ok, 0.0, '' if ok else 'expected exit 1 and "%s", got exit %d: %s' % (
                    c.error, rc, L.first_line(err)))
            elif rc != 0:
                res = (False, float('inf'), 'tcc run exit %d: %s' % (rc, L.first_line(err)))
            else:
                res = check_outputs(c, pre, outdir)
            runner.report(c, *res, repro=None if res[0] else ' '.join(args))

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            for f in [ex.submit(one, item) for item in recorded]:
                f.result()
    except TccUnavailable as e:
        print('stopped: %s' % e, file=sys.stderr)
        return 2
    print('%d passed, %d failed' % (runner.passed, runner.failed))
    return 1 if runner.failed else 0


def chunks(cases, size):
    normal = [c for c in cases if c.error is None]
    errors = [c for c in cases if c.error is not None]
    out = [normal[i:i + size] for i in range(0, len(normal), size)]
    return out + [[c] for c in errors]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--tcc', default=os.environ.get('TCC', 'tcc'), help='the tcc binary')
    ap.add_argument('--only', action='append', help='test only this op (repeatable)')
    ap.add_argument('--quick', action='store_true', help='a bounded number of small cases per op')
    ap.add_argument('--odd', action='store_true',
                    help='rows of 1, 3, 1001, 3001, 5003 elements in f32/f16/bf16, '
                         'and inputs read at offsets that are not 16-byte aligned')
    ap.add_argument('--seed', type=int, help='default: $E2E_SEED, else fresh')
    ap.add_argument('--jobs', type=int, default=2, help='models run at once')
    ap.add_argument('--batch', type=int, default=24, help='cases per model')
    ap.add_argument('--keep', default='e2e-failures', help='where failing cases are written')
    ap.add_argument('--list', action='store_true', help='list the ops and exit')
    ap.add_argument('--target', help='compile for this target (e.g. sm_90), then run the bundle')
    ap.add_argument('--compile-arg', action='append', default=[],
                    help='with --target: an extra argument for tcc compile (repeatable)')
    ap.add_argument('--skip-without-device', action='store_true',
                    help='with --target: exit 77 (skipped) when no such device is here')
    ap.add_argument('--record', metavar='DIR',
                    help='with --target: compile the bundles under DIR and stop; '
                         'compile-time results are checked now, the rest by --replay DIR')
    ap.add_argument('--replay', metavar='DIR',
                    help='run and check the bundles --record wrote (e.g. on a GPU machine '
                         'with the runtime-only tcc)')
    ap.add_argument('--dry-run', metavar='DIR',
                    help='write the models and inputs under DIR instead of running them')
    args = ap.parse_args()

    if args.list:
        print(' '.join(OPS))
        return 0
    if args.replay:
        return replay(os.path.abspath(shutil.which(args.tcc) or args.tcc),
                      os.path.abspath(args.replay), args.jobs)
    if args.record and not args.target:
        print('--record needs --target', file=sys.stderr)
        return 2
    seed = args.seed
    if seed is None and os.environ.get('E2E_SEED'):
        seed = int(os.environ['E2E_SEED'])
    if seed is None:
        seed = secrets.randbits(32)
    np.seterr(all='ignore')   # overflow to inf and NaN are intended inputs
    print('e2e seed %d (reproduce with --seed %d or E2E_SEED=%d)' % (seed, seed, seed), flush=True)

    ops = args.only or list(OPS)
    unknown = [o for o in ops if o not in OPS]
    if unknown:
        print('unknown op(s): %s; known: %s' % (' '.join(unknown), ' '.join(OPS)), file=sys.stderr)
        return 2
    if args.dry_run:
        n = 0
        for op in ops:
            g = Gen(np.random.default_rng([seed, zlib.crc32(op.encode())]), args.quick,
                    odd=args.odd)
            for i, b in enumerate(chunks(cases_for(op, g, args.quick), args.batch)):
                d = os.path.join(args.dry_run, '%s_%d' % (op, i))
                os.makedirs(d, exist_ok=True)
                write_model(b, d, op)
                n += len(b)
        print('%d cases written under %s' % (n, args.dry_run))
        return 0
    tcc = shutil.which(args.tcc) or args.tcc
    if not os.path.exists(tcc):
        print('tcc not found: %s' % args.tcc, file=sys.stderr)
        return 2
    tcc = os.path.abspath(tcc)
    keep = os.path.abspath(args.keep)
    # Only a directory this script made (it holds the marker) is cleared.
    marker = os.path.join(keep, '.optest-failures')
    if os.path.isdir(keep) and os.listdir(keep) and not os.path.exists(marker):
        print('--keep %s exists and was not made by optest.py' % keep, file=sys.stderr)
        return 2
    shutil.rmtree(keep, ignore_errors=True)
    os.makedirs(keep)
    open(marker, 'w').close()

    if args.target and args.skip_without_device and not args.record:
        probe = tempfile.mkdtemp(prefix='tcc-probe-')
        try:
            why = L.device_missing(tcc, args.target, probe)
        finally:
            shutil.rmtree(probe, ignore_errors=True)
        if why:
            print('skipped: no %s device here (%s)' % (args.target, why))
            return L.SKIP
    if args.record:
        work = os.path.abspath(args.record)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    else:
        work = tempfile.mkdtemp(prefix='tcc-e2e-')
    runner = Runner(tcc, work, keep, args.target, args.record, args.compile_arg)
    batches = []
    for op in ops:
        # Each op draws from its own stream, so --only reproduces its cases.
        g = Gen(np.random.default_rng([seed, zlib.crc32(op.encode())]), args.quick,
                    odd=args.odd)
        for i, b in enumerate(chunks(cases_for(op, g, args.quick), args.batch)):
            batches.append((b, '%s_%d' % (op, i)))
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            futures = [ex.submit(runner.batch, b, n) for b, n in batches]
            try:
                for f in futures:
                    f.result()
            except TccUnavailable as e:
                for f in futures:
                    f.cancel()
                print('stopped: %s' % e, file=sys.stderr)
                return 2
    finally:
        if not args.record:
            shutil.rmtree(work, ignore_errors=True)
    if args.record:
        with open(os.path.join(work, 'cases.pkl'), 'wb') as f:
            pickle.dump([(compact(cs), a, o) for cs, a, o in runner.recorded], f)
        print('%d batches recorded under %s; %d checked at compile time: %d passed, %d failed'
              % (len(runner.recorded), work, runner.passed + runner.failed, runner.passed,
                 runner.failed))
        return 1 if runner.failed else 0
    print('%d passed, %d failed' % (runner.passed, runner.failed))
    return 1 if runner.failed else 0


if __name__ == '__main__':
    sys.exit(main())
