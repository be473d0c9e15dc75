#!/usr/bin/env python3
"""Kernel grouping as `tcc inspect` shows it, with the results still right.

An elementwise chain (broadcasts, a mask from iota comparisons, a select, a
cast) must be one kernel; a reduction takes its elementwise prologue and
epilogue into the same kernel; a reduction chain (softmax, layer norm, RMS
norm, plain attention from q·kᵀ to P·V) is one kernel. Each model also runs,
against NumPy, on fresh random inputs (seed printed), so a grouping that
breaks the numbers fails.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import e2elib as L  # noqa: E402
import models as M  # noqa: E402

CHAIN = {
    'format': 'tcc-model', 'version': 1, 'name': 'chain',
    'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [33, 65]},
               {'name': 'b', 'dtype': 'f32', 'shape': [65]}],
    'nodes': [
        {'op': 'add', 'inputs': ['x', 'b'], 'outputs': ['t0']},
        {'op': 'tanh', 'inputs': ['t0'], 'outputs': ['t1']},
        {'op': 'constant', 'outputs': ['two'],
         'attrs': {'dtype': 'f32', 'shape': [], 'value': 2.0}},
        {'op': 'mul', 'inputs': ['t1', 'two'], 'outputs': ['t2']},
        {'op': 'iota', 'outputs': ['r'], 'attrs': {'dtype': 'i32', 'shape': [33, 65], 'axis': 0}},
        {'op': 'iota', 'outputs': ['c'], 'attrs': {'dtype': 'i32', 'shape': [33, 65], 'axis': 1}},
        {'op': 'greater_equal', 'inputs': ['r', 'c'], 'outputs': ['keep']},
        {'op': 'select', 'inputs': ['keep', 't2', 'x'], 'outputs': ['t3']},
        {'op': 'cast', 'inputs': ['t3'], 'outputs': ['y'], 'attrs': {'to': 'f64'}},
    ],
    'outputs': ['y'],
}


def chain_ref(x, b):
    t2 = np.tanh(x + b) * np.float32(2)
    r, c = np.indices(x.shape)
    return np.where(r >= c, t2, x).astype(np.float64)


REDUCE = {
    'format': 'tcc-model', 'version': 1, 'name': 'reduce',
    'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [31, 129]}],
    'nodes': [
        {'op': 'abs', 'inputs': ['x'], 'outputs': ['a']},
        {'op': 'sqrt', 'inputs': ['a'], 'outputs': ['s']},
        {'op': 'reduce_sum', 'inputs': ['s'], 'outputs': ['t'], 'attrs': {'axes': [1]}},
        {'op': 'neg', 'inputs': ['t'], 'outputs': ['y']},
    ],
    'outputs': ['y'],
}


def reduce_ref(x):
    return -np.sqrt(np.abs(x)).astype(np.float64).sum(1)


RMS_NORM = {
    'format': 'tcc-model', 'version': 1, 'name': 'rms_norm',
    'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [24, 96]},
               {'name': 'g', 'dtype': 'f32', 'shape': [96]}],
    'nodes': [{'op': 'rms_norm', 'inputs': ['x', 'g'], 'outputs': ['y'],
               'attrs': {'axis': -1, 'eps': 1e-6}}],
    'outputs': ['y'],
}


def example(name):
    with open(os.path.join(ROOT, 'examples', name + '.json')) as f:
        return json.load(f)


def check(tcc, work, model, kernels, inputs, ref, tol, out='y'):
    """Compiles `model`, counts its kernels and launches, runs it on `inputs`
    and compares output `out` with `ref`: within relative `tol` when it is a
    number, else through L.compare with the Tol `tol`."""
    path = os.path.join(work, model['name'] + '.json')
    bundle = os.path.join(work, model['name'] + '.tccb')
    with open(path, 'w') as f:
        json.dump(model, f)
    subprocess.run([tcc, 'compile', path, '-o', bundle], check=True)
    manifest = json.loads(subprocess.run([tcc, 'inspect', bundle], check=True,
                                         capture_output=True, text=True).stdout)
    # Per-run work only: kernels that the init launches alone use (work on
    # params, run once at load) are not part of a run.
    launched = [l for l in manifest['launches'] if 'kernel' in l]
    run_kernels = {l['kernel'] for l in launched}
    args = [tcc, 'run', bundle, '--output-dir', work]
    for name, value in inputs.items():
        npy = os.path.join(work, name + '.npy')
        np.save(npy, value)
        args += ['--input', '%s=%s' % (name, npy)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = np.load(os.path.join(work, out + '.npy')).astype(np.float64)
    if isinstance(tol, float):
        err = float(np.max(np.abs(got - ref) / (np.abs(ref) + 1e-30)))
        close = err <= tol
    else:
        close, err, _ = L.compare(got, ref, tol)
    ok = len(run_kernels) == kernels and len(launched) == kernels and close
    print('%s %s: %d kernel(s), %d launch(es) (want %d), max %s error %.3g' %
          ('PASS' if ok else 'FAIL', model['name'], len(run_kernels),
           len(launched), kernels, 'relative' if isinstance(tol, float) else 'absolute', err))
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--tcc', required=True)
    parser.add_argument('--seed', type=int)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), 'little')
    print('seed', seed)
    rng = np.random.default_rng(seed)
    results = []
    with tempfile.TemporaryDirectory() as work:
        x = rng.standard_normal((33, 65)).astype(np.float32)
        b = rng.standard_normal(65).astype(np.float32)
        # f32 tanh and mul, each rounded once: a few f32 ulps.
        results.append(check(args.tcc, work, CHAIN, 1, {'x': x, 'b': b},
                             chain_ref(x, b), 4 * 2.0 ** -23))
        x = rng.standard_normal((31, 129)).astype(np.float32)
        # f32 sqrt per element, sum accumulated in f64, one final rounding.
        results.append(check(args.tcc, work, REDUCE, 1, {'x': x}, reduce_ref(x),
                             4 * 2.0 ** -23))
        # Reduction chains: one kernel each, checked with the e2e-models
        # references and tolerances (docs there).
        x = rng.standard_normal((8, 1000)).astype(np.float32)
        _, y, tol = M.ref_softmax({'x': x.astype(np.float64)})['y']
        results.append(check(args.tcc, work, example('softmax'), 1, {'x': x}, y, tol))
        # The example's params are ones and zeros (fill initialisers).
        x = rng.standard_normal((8, 64, 256)).astype(np.float32)
        _, y, tol = M.ref_layer_norm({'x': x.astype(np.float64), 'weight': np.ones(256),
                                      'bias': np.zeros(256)})['y']
        results.append(check(args.tcc, work, example('layer_norm'), 1, {'x': x}, y, tol))
        x = rng.standard_normal((24, 96)).astype(np.float32)
        g = rng.standard_normal(96).astype(np.float32)
        y = L.rms_norm(x.astype(np.float64), g.astype(np.float64), -1, 1e-6)
        # mean of 96 squares, rsqrt and two products in f32: a few ulps of
        # sqrt(K), like layer norm's tolerance in e2e-models.
        results.append(check(args.tcc, work, RMS_NORM, 1, {'x': x, 'g': g}, y,
                             L.ftol('f32', 16 + 4 * 96 ** 0.5, np.abs(y) + 1)))
        env = {n: L.rnd('bf16', rng.standard_normal((1, 4, 128, 64))) for n in 'qkv'}
        _, o, tol = M.ref_attention(env)['o']
        # tcc run converts the f32 files to bf16 exactly (they are bf16 values).
        results.append(check(args.tcc, work, example('attention'), 1,
                             {n: v.astype(np.float32) for n, v in env.items()}, o, tol,
                             out='o'))
    passed = sum(results)
    print('%d passed, %d failed' % (passed, len(results) - passed))
    return 0 if all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
