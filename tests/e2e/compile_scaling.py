#!/usr/bin/env python3
"""Compile time of long graphs, and their results against NumPy.

Real exported models have tens of thousands of nodes; compiling must stay
about linear in their number. Two generated models, each of N ops:

- `chain`: one long elementwise chain (unary ops such as tanh, sigmoid, exp,
  abs, neg; add/sub/mul/maximum with params and constants) that forks side
  branches and merges them again, adds skip connections to values far back,
  and returns a few intermediate values besides its end;
- `wide`: many independent short chains from the same input, each an output.
- `adds`: a straight chain of adds of params (where each fused loop is
  largest).

The test compiles both at N and 4N ops (--sizes) and fails when the larger
takes more than --max-seconds of CPU time, or more than --max-growth times
the smaller (linear growth is 4x, quadratic 16x); the times are printed. Each model then
runs on random inputs (seed printed; E2E_SEED fixes it) and is compared with
a float64 NumPy evaluation of the same graph.

`--write DIR` only writes the models (for profiling: tcc compile
DIR/chain-20000.json -o x.tccb --mlir-timing).
"""
import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as L  # noqa: E402

SHAPE = [8, 32]


class Builder:
    """Nodes appended in order, with a float64 evaluator of each value."""

    def __init__(self, name):
        self.m = {'format': 'tcc-model', 'version': 1, 'name': name,
                  'inputs': [], 'params': [], 'nodes': [], 'outputs': []}
        self.fns = []      # (out, fn(env) -> value) in node order
        self.count = 0

    def input(self, name, shape):
        self.m['inputs'].append({'name': name, 'dtype': 'f32', 'shape': shape})
        return name

    def param(self, values):
        name = 'p%d' % len(self.m['params'])
        values = L.rnd('f32', values)
        self.m['params'].append({'name': name, 'dtype': 'f32', 'shape': [len(values)],
                                 'init': {'value': [float(v) for v in values]}})
        self.fns.append((name, lambda env, v=values: v))
        return name

    def op(self, op, inputs, fn, attrs=None):
        self.count += 1
        out = 'v%d' % self.count
        node = {'op': op, 'inputs': list(inputs), 'outputs': [out]}
        if attrs:
            node['attrs'] = attrs
        self.m['nodes'].append(node)
        # Every op rounds its result to f32, as the format says.
        self.fns.append((out, lambda env, i=tuple(inputs): L.rnd('f32', fn(*[env[n] for n in i]))))
        return out

    def const(self, value):
        value = float(L.rnd('f32', value))
        return self.op('constant', [], lambda: np.float64(value),
                       {'dtype': 'f32', 'shape': [], 'value': value})

    def evaluate(self, feeds):
        env = dict(feeds)
        for name, fn in self.fns:
            env[name] = fn(env)
        return {o: env[o] for o in self.m['outputs']}


UNARY = {
    'tanh': np.tanh,
    'sigmoid': L.sigmoid,
    'neg': np.negative,
    'abs': np.abs,
    'exp': np.exp,
}
BINARY = {'add': np.add, 'sub': np.subtract, 'mul': np.multiply, 'maximum': np.maximum}


class Chain:
    """A value under construction with a bound on its magnitude, so that the
    generator only applies exp where it cannot overflow and squashes with
    tanh before values grow large."""

    def __init__(self, b, rng, consts, params):
        self.b, self.rng, self.consts, self.params = b, rng, consts, params

    def step(self, v, bound, others):
        """One op on v; `others` are earlier (value, bound) pairs to merge with."""
        b, r = self.b, self.rng
        k = r.random()
        if bound > 4:
            return b.op('tanh', [v], np.tanh), 1.0
        if k < 0.35:
            name = r.choice(['tanh', 'sigmoid', 'neg', 'abs'] + (['exp'] if bound <= 2 else []))
            nb = {'tanh': 1.0, 'sigmoid': 1.0, 'exp': float(np.exp(bound))}.get(name, bound)
            return b.op(name, [v], UNARY[name]), nb
        if k < 0.75:
            name = r.choice(['add', 'sub', 'mul', 'maximum'])
            if r.random() < 0.5:
                w, wb = r.choice(self.params), 1.0
            else:
                w, wb = r.choice(self.consts)
            nb = bound * wb if name == 'mul' else max(bound, wb) if name == 'maximum' \
                else bound + wb
            return b.op(name, [v, w], BINARY[name]), nb
        if others:
            w, wb = r.choice(others)
            name = r.choice(['add', 'maximum', 'sub'])
            return b.op(name, [v, w], BINARY[name]), (max(bound, wb) if name == 'maximum'
                                                     else bound + wb)
        return b.op('tanh', [v], np.tanh), 1.0


def setup(b, rng, width):
    consts = []
    for c in (0.5, -0.75, 0.25, 1.0):
        consts.append((b.const(c), abs(c)))
    params = [b.param(rng_values(rng, width)) for _ in range(8)]
    return consts, params


def rng_values(rng, n):
    return np.array([rng.uniform(-1.0, 1.0) for _ in range(n)])


def chain_model(n, seed=1):
    """One long chain of n ops with forks, merges, skips and a few outputs."""
    rng = random.Random(seed)
    b = Builder('chain%d' % n)
    x = b.input('x', SHAPE)
    consts, params = setup(b, rng, SHAPE[-1])
    ch = Chain(b, rng, consts, params)
    v, bound = x, 2.0
    history = [(x, 2.0)]
    side = None          # an open side branch: (value, bound, ops left)
    outs = []
    while b.count < n or side is not None:
        if side is None and b.count < n - 40 and rng.random() < 0.02:
            side = (v, bound, rng.randint(2, 30))
        if side is not None:
            sv, sb, left = side
            sv, sb = ch.step(sv, sb, [])
            side = (sv, sb, left - 1) if left > 1 else None
            if side is None:        # merge the branch back
                v = b.op('add', [v, sv], np.add)
                bound += sb
            continue
        far = history[-200:-20] if len(history) > 40 else []
        v, bound = ch.step(v, bound, far)
        history.append((v, bound))
        if b.count < n and b.count >= (len(outs) + 1) * n // 5:
            outs.append(v)
    b.m['outputs'] = outs + [v]
    return b


def wide_model(n, length=5, seed=2):
    """n // length independent chains of `length` ops from x, each an output."""
    rng = random.Random(seed)
    b = Builder('wide%d' % n)
    x = b.input('x', SHAPE)
    consts, params = setup(b, rng, SHAPE[-1])
    ch = Chain(b, rng, consts, params)
    outs = []
    while b.count + length <= n:
        v, bound = x, 2.0
        for _ in range(length):
            v, bound = ch.step(v, bound, [])
        outs.append(v)
    b.m['outputs'] = outs
    return b


def adds_model(n, seed=3):
    """A straight chain of n adds of params (the shape of the original
    report); small values, so nothing overflows."""
    rng = random.Random(seed)
    b = Builder('adds%d' % n)
    v = b.input('x', SHAPE)
    params = [b.param(np.array([rng.uniform(-1e-3, 1e-3) for _ in range(SHAPE[-1])]))
              for _ in range(8)]
    while b.count < n:
        v = b.op('add', [v, rng.choice(params)], np.add)
    b.m['outputs'] = [v]
    return b


MODELS = {'chain': chain_model, 'wide': wide_model, 'adds': adds_model}


def compile_once(tcc, path, bundle, target, timeout):
    """(exit status, CPU seconds, wall seconds, stderr). CPU time (user +
    system of tcc) is what the bounds check: it does not grow when a busy
    CI machine shares its cores."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    rc, _, err = L.run_tcc([tcc, 'compile', path, '-o', bundle, '--target', target],
                           timeout=timeout)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rc, cpu, wall, err


def check_numbers(tcc, b, bundle, work, seed):
    rng = np.random.default_rng(seed)
    x = L.rnd('f32', rng.uniform(-2.0, 2.0, SHAPE))
    xin = os.path.join(work, 'x.npy')
    np.save(xin, L.to_npy('f32', x))
    outdir = os.path.join(work, 'out')
    rc, _, err = L.run_tcc([tcc, 'run', bundle, '--input', 'x=' + xin, '--output-dir', outdir])
    if rc != 0:
        return 'run failed: ' + L.first_line(err)
    ref = b.evaluate({'x': x})
    # Each op rounds once; the chain squashes often (tanh, sigmoid), so
    # errors do not pile up: a loose bound of a few thousand f32 ulps
    # catches any wrong op while allowing libm differences.
    tol = L.Tol(rtol=1e-4, atol=1e-5)
    for name in b.m['outputs']:
        got = L.from_npy('f32', np.load(os.path.join(outdir, name + '.npy')))
        ok, err_, detail = L.compare(got, ref[name], tol)
        if not ok:
            return 'output %s: %s' % (name, detail)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tcc')
    ap.add_argument('--target', default='host')
    ap.add_argument('--sizes', default='5000,20000',
                    help='two op counts: the small and the large model')
    ap.add_argument('--models', default='chain,wide,adds')
    ap.add_argument('--max-seconds', type=float, default=30.0,
                    help='the large model must compile within this')
    ap.add_argument('--max-growth', type=float, default=10.0,
                    help='large/small compile time must stay below this')
    ap.add_argument('--seed', type=int)
    ap.add_argument('--write', metavar='DIR', help='only write the models to DIR')
    ap.add_argument('--no-run', action='store_true', help='compile only')
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(',')]
    kinds = args.models.split(',')
    if args.write:
        os.makedirs(args.write, exist_ok=True)
        for kind in kinds:
            for n in sizes:
                path = os.path.join(args.write, '%s-%d.json' % (kind, n))
                with open(path, 'w') as f:
                    json.dump(MODELS[kind](n).m, f)
                print(path)
        return 0
    if not args.tcc:
        ap.error('--tcc is needed unless --write is given')
    seed = args.seed if args.seed is not None else int(os.environ.get('E2E_SEED', time.time_ns() % 2**31))
    print('seed %d' % seed)
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        for kind in kinds:
            times = []
            for n in sizes:
                b = MODELS[kind](n)
                path = os.path.join(work, '%s-%d.json' % (kind, n))
                with open(path, 'w') as f:
                    json.dump(b.m, f)
                bundle = os.path.join(work, '%s-%d.tccb' % (kind, n))
                limit = max(args.max_seconds * 4, 120)
                rc, secs, wall, err = compile_once(args.tcc, path, bundle, args.target, limit)
                times.append(secs)
                print('%-6s %6d ops: %.2f s CPU (%.2f s wall)' % (kind, n, secs, wall),
                      flush=True)
                if rc != 0:
                    print('FAIL %s-%d: compile: %s' % (kind, n, L.first_line(err)))
                    failures += 1
                    continue
                if args.no_run:
                    continue
                problem = check_numbers(args.tcc, b, bundle, work, seed)
                if problem:
                    print('FAIL %s-%d: %s' % (kind, n, problem))
                    failures += 1
            if len(times) == 2:
                growth = times[1] / max(times[0], 1e-3)
                print('%-6s growth %d -> %d ops: %.1fx' % (kind, sizes[0], sizes[1], growth))
                if times[1] > args.max_seconds:
                    print('FAIL %s: %d ops took %.1f s CPU (limit %.0f s)' %
                          (kind, sizes[1], times[1], args.max_seconds))
                    failures += 1
                if growth > args.max_growth:
                    print('FAIL %s: compile time grew %.1fx for %.0fx the ops (limit %.1fx)' %
                          (kind, growth, sizes[1] / sizes[0], args.max_growth))
                    failures += 1
    print('%d failure(s)' % failures)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
