#!/usr/bin/env python3
"""A planned GEMM two ways on the GPU: the expansion (a whole GEMM per
precision and a select) and --precision-plan-tiles (each precision's tiles
alone, on the wgmma template). The second is experimental until this check
passes on a GPU (docs/precision.md).

    python3 bench/plan_tiles.py prepare --tcc BUILD/compiler/tcc --out DIR [--n N] [--target T]
    python3 bench/plan_tiles.py run --tcc RUNTIME_TCC --dir DIR

`prepare` writes an f32 GEMM [N, N] x [N, N]^T, plans whose tiles mix bf16,
f8e4m3 and i8 at random (and uniform bf16, f8e4m3 and i8 plans), compiles
each with and without --precision-plan-tiles, and saves the inputs. `run`
runs every bundle on the same inputs: each tiles bundle must match its
expansion (the same products, summed in another order: a few f32 ulps of
the sum of |products|), and times all of them with `tcc bench` (CUDA graph).
On the host (--target host) the flag changes nothing and the pairs are
equal: a dry run of the script.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=3600)
    return p.returncode, p.stdout, p.stderr


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    n = args.n
    model = {'format': 'tcc-model', 'version': 1, 'name': 'planned_gemm',
             'inputs': [{'name': 'a', 'dtype': 'f32', 'shape': [n, n]},
                        {'name': 'b', 'dtype': 'f32', 'shape': [n, n]}],
             'params': [],
             'nodes': [{'op': 'matmul', 'inputs': ['a', 'b'], 'outputs': ['c'], 'name': 'mm',
                        'attrs': {'transpose_b': True}}],
             'outputs': ['c']}
    path = os.path.join(args.out, 'planned_gemm.json')
    with open(path, 'w') as f:
        json.dump(model, f)
    g = -(-n // 128)
    rng = np.random.default_rng(7)
    plans = {'mixed': {'precisions': ['bf16', 'f8e4m3', 'i8'],
                       'tiles': rng.integers(0, 3, (g, g)).tolist()}}
    for p in ('bf16', 'f8e4m3', 'i8'):
        plans[p] = {'precision': p}
    cases = []
    for name, entry in plans.items():
        plan = os.path.join(args.out, name + '.plan.json')
        with open(plan, 'w') as f:
            json.dump({'format': 'tcc-precision-plan', 'version': 1,
                       'matmuls': [dict(entry, node='mm', tile=[128, 128])]}, f)
        for tiles in (False, True):
            bundle = '%s%s.tccb' % (name, '_tiles' if tiles else '')
            rc, _, err = run(args.tcc, 'compile', path, '--target', args.target,
                             '--precision-plan', plan, '-o', os.path.join(args.out, bundle),
                             *(['--precision-plan-tiles'] if tiles else []))
            if rc:
                sys.exit('compile %s: %s' % (bundle, err.strip()))
        cases.append(name)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    np.save(os.path.join(args.out, 'a.npy'), a)
    np.save(os.path.join(args.out, 'b.npy'), b)
    with open(os.path.join(args.out, 'plan-tiles.json'), 'w') as f:
        json.dump({'n': n, 'target': args.target, 'cases': cases}, f)
    print('prepared %d pairs in %s' % (len(cases), args.out))


def run_all(args):
    with open(os.path.join(args.dir, 'plan-tiles.json')) as f:
        man = json.load(f)
    ins = ['--input', 'a=' + os.path.join(args.dir, 'a.npy'),
           '--input', 'b=' + os.path.join(args.dir, 'b.npy')]
    a = np.load(os.path.join(args.dir, 'a.npy')).astype(np.float64)
    b = np.load(os.path.join(args.dir, 'b.npy')).astype(np.float64)
    mag = np.abs(a) @ np.abs(b).T
    k = a.shape[1]
    failed = 0
    with tempfile.TemporaryDirectory() as t:
        for name in man['cases']:
            outs, times = {}, {}
            for suffix in ('', '_tiles'):
                bundle = os.path.join(args.dir, name + suffix + '.tccb')
                od = os.path.join(t, name + suffix)
                rc, _, err = run(args.tcc, 'run', bundle, '--output-dir', od, *ins)
                if rc:
                    print('%s%s: run failed: %s' % (name, suffix, err.strip()[-300:]))
                    failed += 1
                    continue
                outs[suffix] = np.load(os.path.join(od, 'c.npy')).astype(np.float64)
                js = os.path.join(t, name + suffix + '.json')
                graph = ['--cuda-graph'] if man['target'] != 'host' else []
                rc, _, _ = run(args.tcc, 'bench', bundle, '--iters', '20', '--json', js,
                               *graph, *ins)
                if rc == 0:
                    with open(js) as f:
                        times[suffix] = json.load(f)['median_ms']
            if len(outs) == 2:
                # The same products summed in another order; the scales
                # multiply in the same order: a few f32 ulps of the sum of
                # |products| (times the scales, at most 1 relative).
                err = np.abs(outs[''] - outs['_tiles'])
                allowed = (4 * np.sqrt(k) + 8) * 2.0**-24 * mag
                ok = bool((err <= allowed).all())
                failed += not ok
                print('%-7s tiles vs expansion: %s (worst %.3g of allowed); ms expansion %s, '
                      'tiles %s' % (name, 'equal' if ok else 'DIFFERENT',
                                    float((err / allowed).max()), times.get(''),
                                    times.get('_tiles')))
    sys.exit(1 if failed else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('mode', choices=['prepare', 'run'])
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--out', default='.carry/plantiles')
    ap.add_argument('--dir', default='.carry/plantiles')
    ap.add_argument('--n', type=int, default=4096)
    ap.add_argument('--target', default='sm_90a')
    args = ap.parse_args()
    prepare(args) if args.mode == 'prepare' else run_all(args)


if __name__ == '__main__':
    main()
