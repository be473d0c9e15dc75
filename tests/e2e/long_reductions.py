#!/usr/bin/env python3
"""Sums over long rows stay within rounding of the exact result.

A sequential f32 running sum loses about log2(n) bits (2^25 ones sum to 2^24);
tcc accumulates float sums in f64, so each result below must be within two
roundings of the f64 reference: 2 ulps of f32 (2^-22 relative). Softmax also
carries the rounding of x - max in f32, which exp turns into a relative error
of |x - max| * 2^-24, as in any f32 softmax. Fresh random inputs each run; the
seed is printed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(tcc, model, inputs, work):
    path = os.path.join(work, model['name'] + '.json')
    with open(path, 'w') as f:
        json.dump(model, f)
    args = [tcc, 'run', path, '--output-dir', work]
    for name, value in inputs.items():
        npy = os.path.join(work, name + '.in.npy')
        np.save(npy, value)
        args += ['--input', '%s=%s' % (name, npy)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def model(name, shape, op, attrs):
    return {'format': 'tcc-model', 'version': 1, 'name': name,
            'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': shape}],
            'nodes': [{'op': op, 'inputs': ['x'], 'outputs': ['y'],
                       'attrs': attrs}],
            'outputs': ['y']}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--tcc', required=True)
    parser.add_argument('--seed', type=int)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), 'little')
    print('seed', seed)
    rng = np.random.default_rng(seed)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as work:
        n = 1 << 22
        cases = [
            ('sum_uniform', [2, n], 'reduce_sum', {'axes': [1]},
             rng.random((2, n), dtype=np.float32),
             lambda x: x.astype(np.float64).sum(1),
             lambda x: 2.0 ** -22),
            ('mean_ones', [1 << 25], 'reduce_mean', {},
             np.ones(1 << 25, np.float32), lambda x: np.float64(1.0),
             lambda x: 2.0 ** -22),
            ('softmax_long', [2, 1 << 20], 'softmax', {'axis': -1},
             (4 * rng.standard_normal((2, 1 << 20))).astype(np.float32),
             lambda x: (lambda e: e / e.sum(-1, keepdims=True))(
                 np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))),
             lambda x: 2.0 ** -22 + np.abs(x - x.max(-1, keepdims=True)) * 2.0 ** -24),
        ]
        for name, shape, op, attrs, x, ref, tol in cases:
            run(args.tcc, model(name, shape, op, attrs), {'x': x}, work)
            got = np.load(os.path.join(work, 'y.npy')).astype(np.float64)
            want = np.asarray(ref(x))
            err = np.abs(got - want) / np.abs(want)
            rel = np.max(err)
            ok = bool(np.all(err <= tol(x)))
            print('%s %s max relative error %.3g' % ('PASS' if ok else 'FAIL', name, rel))
            passed += ok
            failed += not ok
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
