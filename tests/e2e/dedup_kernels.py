#!/usr/bin/env python3
"""Repeated blocks compile to one kernel each, with the results still right.

A small CNN repeats a residual block (conv + bias → relu → add its input)
three times on the same shapes with different weights, then a block that
differs only in its stride. tcc-dedup-kernels must merge the repetitions
(each launches the same kernel) and keep the block that differs apart; the model runs on the host against
NumPy in float64 (seed printed; --seed fixes it). The same model in f16 is
compiled for sm_90a, compile only: the conv template, built per kernel,
must be one device function launched by the three blocks.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2elib as L  # noqa: E402

N, C, H, W = 2, 8, 12, 12
REPEATS = 3


def model_json(dt):
    conv = lambda ins, y, **a: {'op': 'conv2d', 'inputs': ins, 'outputs': [y], 'attrs': a}
    nodes = []
    h = 'x'
    for i in range(REPEATS):
        nodes += [conv([h, 'w%d' % i, 'b%d' % i], 'c%d' % i, pads=[1, 1, 1, 1]),
                  {'op': 'relu', 'inputs': ['c%d' % i], 'outputs': ['r%d' % i]},
                  {'op': 'add', 'inputs': ['r%d' % i, h], 'outputs': ['h%d' % i]}]
        h = 'h%d' % i
    nodes += [conv([h, 'ws', 'bs'], 'cs', strides=[2, 2], pads=[1, 1, 1, 1]),
              {'op': 'relu', 'inputs': ['cs'], 'outputs': ['rs']},
              {'op': 'constant', 'inputs': [], 'outputs': ['half'],
               'attrs': {'dtype': dt, 'value': 0.5}},
              {'op': 'constant', 'inputs': [], 'outputs': ['quarter'],
               'attrs': {'dtype': dt, 'value': 0.25}},
              {'op': 'global_avg_pool2d', 'inputs': ['rs'], 'outputs': ['g']},
              {'op': 'mul', 'inputs': ['g', 'half'], 'outputs': ['y']},
              {'op': 'mul', 'inputs': ['g', 'quarter'], 'outputs': ['z']}]
    inputs = [{'name': 'x', 'dtype': dt, 'shape': [N, C, H, W]}]
    for w in ['%d' % i for i in range(REPEATS)] + ['s']:
        inputs += [{'name': 'w' + w, 'dtype': dt, 'shape': [C, C, 3, 3]},
                   {'name': 'b' + w, 'dtype': dt, 'shape': [C]}]
    return {'format': 'tcc-model', 'version': 1, 'name': 'dedup_' + dt,
            'inputs': inputs, 'nodes': nodes, 'outputs': ['y', 'z', h]}


def reference(v):
    h = v['x']
    for i in range(REPEATS):
        h = np.maximum(L.conv2d(h, v['w%d' % i], v['b%d' % i], pads=(1, 1, 1, 1)), 0) + h
    rs = np.maximum(L.conv2d(h, v['ws'], v['bs'], strides=(2, 2), pads=(1, 1, 1, 1)), 0)
    g = rs.mean(axis=(2, 3), keepdims=True)
    return {'y': g * 0.5, 'z': g * 0.25, 'h%d' % (REPEATS - 1): h}


def kernels_and_launches(tcc, bundle):
    manifest = json.loads(subprocess.run([tcc, 'inspect', bundle], check=True,
                                         capture_output=True, text=True).stdout)
    launched = [l['kernel'] for l in manifest['launches'] if 'kernel' in l]
    return [k['name'] for k in manifest['kernels']], launched


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--tcc', required=True)
    parser.add_argument('--seed', type=int)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), 'little')
    print('seed', seed)
    rng = np.random.default_rng(seed)
    ok = True
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, 'dedup_f32.json')
        bundle = os.path.join(work, 'dedup_f32.tccb')
        with open(path, 'w') as f:
            json.dump(model_json('f32'), f)
        subprocess.run([args.tcc, 'compile', path, '-o', bundle], check=True)
        kernels, launched = kernels_and_launches(args.tcc, bundle)
        # The three blocks launch one kernel, three times in a row; the
        # strided block and each scaling have kernels of their own.
        blocks = launched[:REPEATS]
        merged = len(set(blocks)) == 1
        distinct = len(set(launched)) == len(launched) - (REPEATS - 1)
        every = set(range(len(kernels))) == set(launched)
        print('%s dedup_f32: %d kernel(s) for %d launch(es) %s' %
              ('PASS' if merged and distinct and every else 'FAIL', len(kernels),
               len(launched), [kernels[k] for k in launched]))
        ok &= merged and distinct and every

        values = {'x': rng.standard_normal((N, C, H, W))}
        for w in ['%d' % i for i in range(REPEATS)] + ['s']:
            values['w' + w] = rng.normal(0, 0.15, (C, C, 3, 3))
            values['b' + w] = rng.normal(0, 0.1, C)
        values = {k: v.astype(np.float32) for k, v in values.items()}
        cmd = [args.tcc, 'run', bundle, '--output-dir', work]
        for name, value in values.items():
            npy = os.path.join(work, name + '.npy')
            np.save(npy, value)
            cmd += ['--input', '%s=%s' % (name, npy)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        refs = reference({k: v.astype(np.float64) for k, v in values.items()})
        for name, ref in refs.items():
            got = np.load(os.path.join(work, name + '.npy')).astype(np.float64)
            # f32 sums of 72 products per conv, three blocks deep: a few
            # hundred f32 ulps of the values' size.
            tol = L.Tol(1e-5, 1e-5 * float(np.abs(ref).max()))
            close, err, detail = L.compare(got, ref, tol)
            print('%s dedup_f32 %s: max abs error %.3g %s' %
                  ('PASS' if close else 'FAIL', name, err, detail))
            ok &= close

        # The GPU form: the conv template is built per kernel, once.
        path = os.path.join(work, 'dedup_f16.json')
        gpu = os.path.join(work, 'dedup_f16.tccb')
        with open(path, 'w') as f:
            json.dump(model_json('f16'), f)
        p = subprocess.run([args.tcc, 'compile', path, '-o', gpu, '--target', 'sm_90a'],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print('FAIL dedup_f16 sm_90a: compile failed: %s' % p.stderr.strip())
            ok = False
        else:
            gkernels, glaunched = kernels_and_launches(args.tcc, gpu)
            # The implicit-GEMM template (mma.sync or wgmma): one device
            # function for the three blocks, launched three times, and one
            # for the strided block.
            mma = sorted(glaunched.count(i) for i, k in enumerate(gkernels)
                         if k.endswith(('_conv_mma', '_conv_wgmma')))
            good = mma == [1, REPEATS]
            print('%s dedup_f16 sm_90a: %d kernel(s) for %d launch(es), conv template '
                  'launches %s' % ('PASS' if good else 'FAIL', len(gkernels),
                                   len(glaunched), mma))
            ok &= good
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
