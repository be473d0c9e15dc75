#!/usr/bin/env python3
"""Reduction chains in their fused forms (docs/fusion.md) against float64 NumPy.

Each model is run with --fusion=off, rolling and splitk on the host, on fresh
random inputs (the seed is printed; E2E_SEED or --seed fixes it), for f32 and
bf16 and axis lengths 1000 and 3001 (neither a multiple of the chunk: the
rolling form ends on a shorter chunk, split-K on a remainder chunk). The row
model holds softmax, log-softmax, log-sum-exp, layer norm, RMS norm and a
cross-entropy; the attention model plain, causal, ALiBi, softcapped, x30
scaled and masked (with P then zeroed where the mask drops keys, or times
the mask), and biased (a bias input) attention with grouped K/V heads
(GQA). Rows include scores scaled x30, rows of -1e30 (uniform
softmax), rows of -inf (NaN, as unfused and as NumPy), rows whose first
60% are -inf (chunks with no finite element before the first that has one),
and rows of -1e30 and -inf only (chunks of -inf beside one whose max is
-1e30).

Tolerances: c (2^-24 for f32, 2^-8 for bf16: half an ulp, one rounding) times
the number of roundings on the path (K) plus the amplification of exp, which
turns an absolute error e of its argument into a relative error e: the
argument x - max is rounded relative to |x - max|, attention scores relative
to |s| (A below). Where the result is a cancellation (layer norm's x - mean,
log-probabilities), the bound is relative to the size of the terms.

A chain the algebra cannot correct (a sum of tanh(x - max)) must be refused
with a warning naming the op, and still compute the right result.
"""
import argparse
import concurrent.futures
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

MODES = ('off', 'rolling', 'splitk')
NEG = -1e30


class Graph:
    """A model under construction: nodes appended in order."""

    def __init__(self, name, dt):
        self.dt = dt
        self.m = {'format': 'tcc-model', 'version': 1, 'name': name,
                  'inputs': [], 'params': [], 'nodes': [], 'outputs': []}
        self.count = 0

    def input(self, name, shape, dt=None):
        self.m['inputs'].append({'name': name, 'dtype': dt or self.dt, 'shape': list(shape)})
        return name

    def op(self, op, *inputs, **attrs):
        self.count += 1
        out = '%s%d' % (op, self.count)
        self.m['nodes'].append({'op': op, 'inputs': list(inputs), 'outputs': [out],
                                'attrs': attrs})
        return out

    def const(self, value, dt=None):
        return self.op('constant', dtype=dt or self.dt, shape=[], value=value)

    def output(self, name, value):
        # Renames the node that computed `value` (read by no other node).
        for node in self.m['nodes']:
            if node['outputs'] == [value]:
                node['outputs'] = [name]
        self.m['outputs'].append(name)


def rows_model(dt, n):
    g = Graph('rows', dt)
    x = g.input('x', [3, 16, n])
    gamma, beta = g.input('gamma', [n]), g.input('beta', [n])
    t = g.input('t', [3, 16, n])
    g.output('softmax', g.op('softmax', x, axis=-1))
    g.output('log_softmax', g.op('log_softmax', x, axis=-1))
    g.output('layer_norm', g.op('layer_norm', x, gamma, beta, axis=-1))
    g.output('rms_norm', g.op('rms_norm', x, gamma, axis=-1))
    m = g.op('reduce_max', x, axes=[-1], keepdims=True)
    z = g.op('sub', x, m)
    s = g.op('reduce_sum', g.op('exp', z), axes=[-1], keepdims=True)
    ls = g.op('log', s)
    g.output('lse', g.op('add', m, ls))
    # Log-sum-exp written without keepdims: the max reshaped back for the
    # subtraction, and read as it is for the final + max.
    m1 = g.op('reduce_max', x, axes=[-1], keepdims=False)
    z1 = g.op('sub', x, g.op('reshape', m1, shape=[3, 16, 1]))
    s1 = g.op('reduce_sum', g.op('exp', z1), axes=[-1], keepdims=False)
    g.output('lse_flat', g.op('add', m1, g.op('log', s1)))
    ce = g.op('reduce_sum', g.op('mul', t, g.op('sub', z, ls)), axes=[-1], keepdims=True)
    g.output('cross_entropy', g.op('neg', ce))
    return g.m


def attention_model(dt, n, h=4, hkv=2, mq=16, d=32):
    g = Graph('attention', dt)
    q = g.input('q', [1, h, mq, d])
    k = g.input('k', [1, hkv, n, d])
    v = g.input('v', [1, hkv, n, d])
    mask = g.input('mask', [1, 1, mq, n], 'bool')
    slopes = g.input('slopes', [1, h, 1, 1])
    bias = g.input('bias', [1, h, mq, n])

    def heads(t):  # GQA: each K/V head serves h / hkv query heads
        t = g.op('reshape', t, shape=[1, hkv, 1, n, d])
        t = g.op('broadcast_to', t, shape=[1, hkv, h // hkv, n, d])
        return g.op('reshape', t, shape=[1, h, n, d])

    kk, vv = heads(k), heads(v)
    scale = 1.0 / np.sqrt(d)

    def attend(s):
        return g.op('matmul', g.op('softmax', s, axis=-1), vv)

    def scores(factor=1.0):
        return g.op('mul', g.op('matmul', q, kk, transpose_b=True), g.const(scale * factor))

    row = g.op('iota', dtype='i32', shape=[mq, n], axis=0)
    col = g.op('iota', dtype='i32', shape=[mq, n], axis=1)
    causal = g.op('greater_equal', g.op('add', row, g.const(n - mq, 'i32')), col)
    g.output('plain', attend(scores()))
    # Causal mask (iotas) and ALiBi bias (an iota times per-head slopes).
    dist = g.op('sub', g.op('iota', dtype=dt, shape=[mq, n], axis=1), g.const(float(n - 1)))
    biased = g.op('add', scores(), g.op('mul', slopes, dist))
    g.output('causal_alibi', attend(g.op('select', causal, biased, g.const(NEG))))
    cap = g.const(30.0)
    g.output('softcap', attend(g.op('mul', cap, g.op('tanh', g.op('div', scores(), cap)))))
    # Scores x30 with a -inf mask: a fully masked row, masked first chunks.
    ninf = g.op('log', g.const(0.0))  # JSON has no -inf
    g.output('x30_masked', attend(g.op('select', mask, scores(30.0), ninf)))

    # An additive bias given as an input (per head, query and key).
    g.output('biased', attend(g.op('add', scores(), bias)))
    return g.m


def refused_model(dt, n):
    """A sum of tanh(x - max): no factorization, so no fused form."""
    g = Graph('refused', dt)
    x = g.input('x', [16, n])
    m = g.op('reduce_max', x, axes=[-1], keepdims=True)
    s = g.op('reduce_sum', g.op('tanh', g.op('sub', x, m)), axes=[-1], keepdims=True)
    g.output('y', g.op('div', g.op('sub', x, m), s))
    return g.m


# ---------------------------------------------------------------- references

def c_of(dt):
    return 2.0 ** -24 if dt == 'f32' else 2.0 ** -8


def rows_inputs(rng, dt, n):
    x = rng.standard_normal((3, 16, n)) * 3
    x[1] *= 10                       # scores scaled x30 (std 30)
    x[2, 0] = NEG                    # a fully masked row, -1e30: uniform
    x[2, 1] = -np.inf                # -inf: NaN, as NumPy
    x[2, 2, :int(0.6 * n)] = -np.inf  # chunks with no finite element first
    x[2, 3, :int(0.6 * n)] = NEG
    # Rows of masked stand-ins and -inf only: a chunk whose max is -1e30
    # beside chunks of nothing but -inf, after it and before it (their
    # factor exp(0 - -1e30) overflows; their sums are 0): uniform over the
    # -1e30s.
    x[2, 4] = -np.inf
    x[2, 4, :int(0.1 * n)] = NEG
    x[2, 5] = -np.inf
    x[2, 5, int(0.6 * n):] = NEG
    t = rng.random((3, 16, n))
    t /= t.sum(-1, keepdims=True)
    ins = {'x': x, 'gamma': rng.standard_normal(n), 'beta': rng.standard_normal(n), 't': t}
    return {k: e2elib.rnd(dt, v) for k, v in ins.items()}


def rows_refs(ins, dt):
    x, gamma, beta, t = ins['x'], ins['gamma'], ins['beta'], ins['t']
    c, K = c_of(dt), 16.0
    with np.errstate(all='ignore'):
        m = x.max(-1, keepdims=True)
        z = x - m
        e = np.exp(z)
        s = e.sum(-1, keepdims=True)
        lsm = z - np.log(s)
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        r = 1.0 / np.sqrt(var + 1e-5)
        # x * x overflows f32 (and bf16) beyond 1.8e19, as tcc computes it.
        sq = x * x
        ms = np.where(sq > np.finfo(np.float32).max, np.inf, sq).mean(-1, keepdims=True)
        amp = np.where(np.isfinite(z), np.abs(z), 0.0)
        amax = amp.max(-1, keepdims=True)
        big = np.where(np.isfinite(x), np.abs(x), 0).max(-1, keepdims=True)
        std_scale = np.where(var > 0, (np.abs(x) + np.abs(mean)) * r, 1.0)
        refs = {
            'softmax': (e / s, e2elib.Tol(c * (K + 2 * amp), c * 1e-30)),
            'log_softmax': (lsm, e2elib.Tol(c * K, c * (K + amax + big))),
            'lse': (m + np.log(s), e2elib.Tol(c * K, c * (K + amax + big))),
            'lse_flat': ((m + np.log(s))[..., 0], e2elib.Tol(c * K, (c * (K + amax + big))[..., 0])),
            'layer_norm': ((x - mean) * r * gamma + beta,
                           e2elib.Tol(c * K, c * K * (std_scale * np.abs(gamma) + np.abs(beta)))),
            'rms_norm': (x / np.sqrt(ms + 1e-6) * gamma,
                         e2elib.Tol(c * K, c * K * np.abs(gamma) * 1e-3)),
            'cross_entropy': (-(t * lsm).sum(-1, keepdims=True),
                              e2elib.Tol(c * K, c * K * (K + amax + big))),
        }
    # A row of +-1e30 overflows f32 in (x - mean)^2 and x * x: the norms
    # of such rows are not compared (docs/fusion.md).
    huge = np.zeros(x.shape[:-1] + (1,), bool)
    huge[2, 0] = huge[2, 3] = huge[2, 4] = huge[2, 5] = True
    for name in ('layer_norm', 'rms_norm'):
        refs[name] += (huge,)
    return refs


# P changed after softmax (a model of its own each: an attention chain
# alone, as a layer computes it): zeroed where the mask drops keys (a "safe
# softmax": the fully masked row is zeros, not NaN), or multiplied by the
# mask as a float (that row stays NaN).
POST = {'x30_safe': lambda p, mask: np.where(mask, p, 0.0),
        'x30_times': lambda p, mask: p * mask}


def masked_softmax(g, n, h=4, hkv=2, mq=16, d=32):
    """Inputs q, k, v (grouped heads) and a bool mask; returns P (softmax of
    the scores times 30, -inf where the mask drops keys), the mask and V."""
    q = g.input('q', [1, h, mq, d])
    k = g.input('k', [1, hkv, n, d])
    v = g.input('v', [1, hkv, n, d])
    mask = g.input('mask', [1, 1, mq, n], 'bool')
    k, v = (g.op('reshape', g.op('broadcast_to', g.op('reshape', t, shape=[1, hkv, 1, n, d]),
                                 shape=[1, hkv, h // hkv, n, d]), shape=[1, h, n, d])
            for t in (k, v))
    s = g.op('mul', g.op('matmul', q, k, transpose_b=True), g.const(30.0 / np.sqrt(d)))
    return g.op('softmax', g.op('select', mask, s, g.const('-inf')), axis=-1), mask, v


def post_model(dt, n, name):
    g = Graph(name, dt)
    p, mask, v = masked_softmax(g, n)
    if name == 'x30_safe':
        p = g.op('select', mask, p, g.const(0.0))
    else:
        p = g.op('mul', p, g.op('cast', mask, to=dt))
    g.output(name, g.op('matmul', p, v))
    return g.m


def attention_inputs(rng, dt, n, h=4, hkv=2, mq=16, d=32):
    mask = rng.random((1, 1, mq, n)) < 0.7
    mask[0, 0, 0] = False                 # a fully masked row: NaN
    mask[0, 0, 1, :int(0.6 * n)] = False  # masked first chunks
    ins = {'q': rng.standard_normal((1, h, mq, d)), 'k': rng.standard_normal((1, hkv, n, d)),
           'v': rng.standard_normal((1, hkv, n, d)),
           'slopes': 2.0 ** -np.arange(1, h + 1).reshape(1, h, 1, 1),
           'bias': rng.standard_normal((1, h, mq, n)) * 2}
    ins = {k_: e2elib.rnd(dt, v) for k_, v in ins.items()}
    ins['mask'] = mask
    return ins


def attention_refs(ins, dt, n, h=4, hkv=2, mq=16, d=32):
    q, mask = ins['q'], ins['mask']
    k = np.repeat(ins['k'], h // hkv, axis=1)
    v = np.repeat(ins['v'], h // hkv, axis=1)
    c, K = c_of(dt), 64.0
    scale = 1.0 / np.sqrt(d)
    base = q @ k.transpose(0, 1, 3, 2)
    row = np.arange(mq)[:, None] + (n - mq)
    col = np.arange(n)[None, :]
    dist = (col - (n - 1)).astype(np.float64)
    vmax = np.abs(v).max()
    cases = {
        'x30_safe': np.where(mask, base * scale * 30.0, -np.inf),
        'x30_times': np.where(mask, base * scale * 30.0, -np.inf),
        'plain': base * scale,
        'causal_alibi': np.where(row >= col, base * scale + ins['slopes'] * dist, NEG),
        'softcap': 30.0 * np.tanh(base * scale / 30.0),
        'x30_masked': np.where(mask, base * scale * 30.0, -np.inf),
        'biased': base * scale + ins['bias'],
    }
    refs = {}
    with np.errstate(all='ignore'):
        for name, s in cases.items():
            m = s.max(-1, keepdims=True)
            p = np.exp(s - m)
            o = POST.get(name, lambda p, mask: p)(p / p.sum(-1, keepdims=True), mask) @ v
            fin = np.isfinite(s) & (s > NEG)
            # |s| counts the rounding of the scores (a product of two
            # vectors, its bias and scale added), |s - max| that of s - max.
            amp = np.where(fin, np.abs(s) + np.abs(s - m) + np.abs(base * scale), 0)
            amax = amp.max(-1, keepdims=True)
            refs[name] = (o, e2elib.Tol(c * (K + amax), c * (K + amax) * vmax))
    return refs


# ---------------------------------------------------------------- running

def run(tcc, path, mode, ins, dts, work):
    args = [tcc, 'run', path, '--fusion=' + mode, '--output-dir', work]
    for name, value in ins.items():
        npy = os.path.join(work, name + '.in.npy')
        np.save(npy, e2elib.to_npy(dts.get(name, 'bool'), value))
        args += ['--input', '%s=%s' % (name, npy)]
    rc, out, err = e2elib.run_tcc(args)
    return rc, err


def run_model(tcc, root, label, model, mode, ins, dts):
    """Writes `model` into its own folder under `root` and runs it there:
    (folder, exit status, stderr)."""
    work = os.path.join(root, label)
    os.makedirs(work)
    path = os.path.join(work, 'model.json')
    with open(path, 'w') as f:
        json.dump(model, f)
    rc, err = run(tcc, path, mode, ins, dts, work)
    return work, rc, err


def check(tcc, root, label, model, mode, ins, refs, dts, out_dt):
    work, rc, err = run_model(tcc, root, '%s-%s' % (label, mode), model, mode, ins, dts)
    lines = []
    if rc != 0:
        return ['FAIL %s %s: tcc exit %d: %s' % (label, mode, rc, e2elib.first_line(err))]
    if 'refused' in err:
        return ['FAIL %s %s: %s' % (label, mode, e2elib.first_line(err))]
    for name, (ref, tol, *skip) in refs.items():
        got = e2elib.from_npy(out_dt, np.load(os.path.join(work, name + '.npy')))
        if skip:
            got = np.where(skip[0], ref, got)
        ok, maxerr, detail = e2elib.compare(got, ref, tol)
        lines.append('%s %s %s %s max error %.3g %s' % (
            'PASS' if ok else 'FAIL', label, mode, name, maxerr, detail))
    return lines


def check_refused(tcc, root, rng):
    n = 1000
    model = refused_model('f32', n)
    x = e2elib.rnd('f32', rng.standard_normal((16, n)))
    work = os.path.join(root, 'refused')
    os.makedirs(work)
    path = os.path.join(work, 'model.json')
    with open(path, 'w') as f:
        json.dump(model, f)
    rc, err = run(tcc, path, 'rolling', {'x': x}, {'x': 'f32'}, work)
    if rc != 0:
        return ['FAIL refused: tcc exit %d: %s' % (rc, e2elib.first_line(err))]
    if 'chain fusion refused' not in err or "'tcc.tanh'" not in err:
        return ['FAIL refused: no warning naming tcc.tanh (stderr: %s)' % e2elib.first_line(err)]
    m = x.max(-1, keepdims=True)
    ref = (x - m) / np.tanh(x - m).sum(-1, keepdims=True)
    got = np.load(os.path.join(work, 'y.npy')).astype(np.float64)
    s = np.abs(np.tanh(x - m)).sum(-1, keepdims=True)
    tol = e2elib.Tol(2.0 ** -24 * 64, 2.0 ** -24 * 64 * np.abs(x - m) * s /
                     np.abs(np.tanh(x - m).sum(-1, keepdims=True)) ** 2)
    ok, maxerr, detail = e2elib.compare(got, ref, tol)
    return ['%s refused (warning: %s) max error %.3g %s' % (
        'PASS' if ok else 'FAIL', e2elib.first_line(err).split('warning: ')[-1], maxerr, detail)]


def check_shared_safe(tcc, root, rng):
    """A safe softmax (P zeroed where the mask drops keys) returned beside
    the plain one, sharing P: no attention match proves the zeroing covers
    every -inf, so chain fusion is refused with a warning, and the model's
    values come out in every mode: zeros on the fully masked row of the
    zeroed output, NaN on the plain one's."""
    dt, n = 'f32', 1000
    g = Graph('shared_safe', dt)
    p, mask, v = masked_softmax(g, n)
    g.output('x30_safe', g.op('matmul', g.op('select', mask, p, g.const(0.0)), v))
    g.output('x30_masked', g.op('matmul', p, v))
    full = attention_inputs(rng, dt, n)
    refs = attention_refs(full, dt, n)
    ins = {t: full[t] for t in ('q', 'k', 'v', 'mask')}
    dts = {'q': dt, 'k': dt, 'v': dt}
    lines = []
    for mode in MODES:
        work, rc, err = run_model(tcc, root, 'shared-safe-' + mode, g.m, mode, ins, dts)
        if rc != 0:
            return ['FAIL shared-safe %s: tcc exit %d: %s' % (mode, rc, e2elib.first_line(err))]
        if mode != 'off' and 'chain fusion refused: values after the row max' not in err:
            lines.append('FAIL shared-safe %s: no refusal (stderr: %s)' % (
                mode, e2elib.first_line(err)))
        for name in ('x30_safe', 'x30_masked'):
            ref, tol = refs[name]
            got = e2elib.from_npy(dt, np.load(os.path.join(work, name + '.npy')))
            ok, maxerr, detail = e2elib.compare(got, ref, tol)
            lines.append('%s shared-safe %s %s max error %.3g %s' % (
                'PASS' if ok else 'FAIL', mode, name, maxerr, detail))
    return lines


def check_positions(tcc, root, rng):
    """Key positions from an f16 iota past 2048 (a bias 0.25 * position,
    decode: one query row): the chunked forms count a chunk's positions
    from its start and must round each position to f16 once, as the model's
    iota does, not the chunk's start and the offset apart (which moved
    positions by up to the spacing: 0.36 of the output). Each mode against
    the unfused run: the same arithmetic in another order, within a few
    f16 roundings of the output (its values are means of V's, |v| <= 4)."""
    n, d = 5003, 8
    g = Graph('positions', 'f16')
    q, k, v = g.input('q', [1, 1, 1, d]), g.input('k', [1, 1, n, d]), g.input('v', [1, 1, n, d])
    s = g.op('mul', g.op('matmul', q, k, transpose_b=True), g.const(0.125))
    pos = g.op('mul', g.op('iota', dtype='f16', shape=[1, n], axis=1), g.const(0.25))
    g.output('o', g.op('matmul', g.op('softmax', g.op('add', s, pos), axis=-1), v))
    ins = {t: e2elib.rnd('f16', np.clip(rng.standard_normal(shape), -4, 4))
           for t, shape in (('q', (1, 1, 1, d)), ('k', (1, 1, n, d)), ('v', (1, 1, n, d)))}
    dts = {'q': 'f16', 'k': 'f16', 'v': 'f16'}
    outs, lines = {}, []
    for mode in MODES:
        work, rc, err = run_model(tcc, root, 'positions-' + mode, g.m, mode, ins, dts)
        if rc != 0:
            return ['FAIL positions %s: tcc exit %d: %s' % (mode, rc, e2elib.first_line(err))]
        outs[mode] = e2elib.from_npy('f16', np.load(os.path.join(work, 'o.npy')))
    for mode in MODES[1:]:
        err = np.abs(outs[mode] - outs['off']).max()
        ok = err <= 8 * 2.0 ** -11 * 4
        lines.append('%s positions %s against off: max difference %.3g' % (
            'PASS' if ok else 'FAIL', mode, err))
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--tcc', required=True)
    parser.add_argument('--seed', type=int)
    parser.add_argument('--jobs', type=int, default=2)
    args = parser.parse_args()
    seed = args.seed
    if seed is None:
        seed = int(os.environ.get('E2E_SEED', int.from_bytes(os.urandom(4), 'little')))
    print('seed', seed)
    rng = np.random.default_rng(seed)
    jobs = []
    # Both odd lengths in f32, the longer in bf16 (compile time).
    for dt, n in (('f32', 1000), ('f32', 3001), ('bf16', 3001)):
        if True:
            ins = rows_inputs(rng, dt, n)
            dts = {'x': dt, 'gamma': dt, 'beta': dt, 't': dt}
            jobs.append(('rows-%s-%d' % (dt, n), rows_model(dt, n), ins, rows_refs(ins, dt),
                         dts, dt))
            ins = attention_inputs(rng, dt, n)
            dts = {'q': dt, 'k': dt, 'v': dt, 'slopes': dt, 'bias': dt}
            refs = attention_refs(ins, dt, n)
            jobs.append(('attention-%s-%d' % (dt, n), attention_model(dt, n), ins,
                         {k_: r for k_, r in refs.items() if k_ not in POST}, dts, dt))
            sub = {k_: ins[k_] for k_ in ('q', 'k', 'v', 'mask')}
            # Two of the three (time): f32 over 1000 keys, bf16 over 3001.
            for name in POST if (dt, n) != ('f32', 3001) else ():
                jobs.append(('%s-%s-%d' % (name, dt, n), post_model(dt, n, name), sub,
                             {name: refs[name]}, dts, dt))
    failed = 0
    with tempfile.TemporaryDirectory() as root, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(check, args.tcc, root, label, model, mode, ins, refs, dts, dt)
                   for label, model, ins, refs, dts, dt in jobs for mode in MODES]
        futures.append(pool.submit(check_refused, args.tcc, root, rng))
        futures.append(pool.submit(check_positions, args.tcc, root, rng))
        futures.append(pool.submit(check_shared_safe, args.tcc, root, rng))
        for f in futures:
            for line in f.result():
                print(line)
                failed += line.startswith('FAIL')
    print('%d failed' % failed)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
