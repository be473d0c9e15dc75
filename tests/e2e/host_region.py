#!/usr/bin/env python3
"""Region groups on the host: small CNN blocks fused, against NumPy.

Each model (a MobileNetV2 inverted residual, a ResNet bottleneck with its
residual add, conv + max pool + dilated conv, depthwise + pointwise with
stride 2; odd sizes such as 9x13 and 17x13) is compiled for the host with
--region-fusion=auto and =off, and auto with --conv-layout=nhwc. The auto
bundles must have region groups (`tcc inspect`: region_groups), auto launch
fewer kernels than off, and some region kernel run over a grid of several
tile ranges; all three bundles run on fresh random inputs (seed printed; --seed fixes it) and are
compared with a float64 NumPy reference (e2elib's conv2d and pool2d), and
with each other.

Tolerance. f32: each output sums at most 16 * 9 = 144 products per layer,
three or four layers deep; f32 summation in any order is within
144 * 2^-24 ~ 1e-5 of the terms' magnitude per layer, so 4e-5 of the
output's largest magnitude (plus 1e-5 relative) holds with margin, while a
wrong halo, pad or stride is off by O(1) of the output's scale. f16: tcc
rounds every op's result to f16 (accumulating in f32); the reference rounds
at the same points, so the two differ by a rounding flip of an intermediate
near a tie and its propagation: 4 f16 ulps (2^-8) of the largest magnitude.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2elib as L  # noqa: E402


def conv(ins, y, **a):
    return {'op': 'conv2d', 'inputs': ins, 'outputs': [y], 'attrs': a}


def op(kind, ins, y, **a):
    return {'op': kind, 'inputs': ins, 'outputs': [y], 'attrs': a}


# Each model: input shape, weights {name: shape}, nodes, and the reference
# (a function of the values and a rounding function r applied after each op).
def inverted_residual():
    # Narrow enough that the host model prefers one kernel (three 10 us
    # launches against the halo recomputation).
    c, e = 4, 12
    shapes = {'x': [1, c, 9, 13], 'w1': [e, c, 1, 1], 'b1': [e], 'w2': [e, 1, 3, 3],
              'b2': [e], 'w3': [c, e, 1, 1], 'b3': [c]}
    nodes = [conv(['x', 'w1', 'b1'], 'c1'), op('clamp', ['c1'], 'a1', min=0.0, max=6.0),
             conv(['a1', 'w2', 'b2'], 'c2', pads=[1, 1, 1, 1], groups=e),
             op('clamp', ['c2'], 'a2', min=0.0, max=6.0),
             conv(['a2', 'w3', 'b3'], 'c3'), op('add', ['c3', 'x'], 'y')]

    def ref(v, r):
        a1 = r(np.clip(r(L.conv2d(v['x'], v['w1'], v['b1'])), 0, 6))
        a2 = r(np.clip(r(L.conv2d(a1, v['w2'], v['b2'], pads=(1, 1, 1, 1), groups=e)), 0, 6))
        return r(r(L.conv2d(a2, v['w3'], v['b3'])) + v['x'])
    return shapes, nodes, ref


def bottleneck():
    c, m = 16, 8
    shapes = {'x': [1, c, 11, 9], 'w1': [m, c, 1, 1], 'b1': [m], 'w2': [m, m, 3, 3],
              'b2': [m], 'w3': [c, m, 1, 1], 'b3': [c]}
    nodes = [conv(['x', 'w1', 'b1'], 'c1'), op('relu', ['c1'], 'a1'),
             conv(['a1', 'w2', 'b2'], 'c2', pads=[1, 1, 1, 1], strides=[2, 2]),
             op('relu', ['c2'], 'a2'), conv(['a2', 'w3', 'b3'], 'c3'),
             conv(['x', 'wd', 'bd'], 'd', strides=[2, 2]),
             op('add', ['c3', 'd'], 's'), op('relu', ['s'], 'y')]
    shapes.update({'wd': [c, c, 1, 1], 'bd': [c]})

    def ref(v, r):
        a1 = r(np.maximum(r(L.conv2d(v['x'], v['w1'], v['b1'])), 0))
        a2 = r(np.maximum(r(L.conv2d(a1, v['w2'], v['b2'], strides=(2, 2),
                                     pads=(1, 1, 1, 1))), 0))
        c3 = r(L.conv2d(a2, v['w3'], v['b3']))
        d = r(L.conv2d(v['x'], v['wd'], v['bd'], strides=(2, 2)))
        return r(np.maximum(r(c3 + d), 0))
    return shapes, nodes, ref


def conv_pool():
    shapes = {'x': [1, 3, 17, 13], 'w1': [8, 3, 3, 3], 'b1': [8], 'w2': [8, 8, 3, 3],
              'b2': [8]}
    nodes = [conv(['x', 'w1', 'b1'], 'c1', pads=[1, 1, 1, 1]), op('relu', ['c1'], 'a1'),
             op('max_pool2d', ['a1'], 'p', kernel=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             conv(['p', 'w2', 'b2'], 'c2', pads=[2, 2, 2, 2], dilations=[2, 2]),
             op('relu', ['c2'], 'y')]

    def ref(v, r):
        a1 = r(np.maximum(r(L.conv2d(v['x'], v['w1'], v['b1'], pads=(1, 1, 1, 1))), 0))
        p = r(L.pool2d(a1, 'max', (3, 3), (2, 2), (1, 1, 1, 1)))
        return r(np.maximum(r(L.conv2d(p, v['w2'], v['b2'], pads=(2, 2, 2, 2),
                                       dilations=(2, 2))), 0))
    return shapes, nodes, ref


def depthwise_pointwise():
    c, o = 16, 24
    shapes = {'x': [2, c, 15, 15], 'w1': [c, 1, 3, 3], 'b1': [c], 'w2': [o, c, 1, 1],
              'b2': [o]}
    nodes = [conv(['x', 'w1', 'b1'], 'c1', pads=[1, 1, 1, 1], strides=[2, 2], groups=c),
             op('relu', ['c1'], 'a1'), conv(['a1', 'w2', 'b2'], 'c2'),
             op('relu', ['c2'], 'y')]

    def ref(v, r):
        a1 = r(np.maximum(r(L.conv2d(v['x'], v['w1'], v['b1'], strides=(2, 2),
                                     pads=(1, 1, 1, 1), groups=c)), 0))
        return r(np.maximum(r(L.conv2d(a1, v['w2'], v['b2'])), 0))
    return shapes, nodes, ref


MODELS = {'inverted_residual': inverted_residual, 'bottleneck': bottleneck,
          'conv_pool': conv_pool, 'depthwise_pointwise': depthwise_pointwise}


def model_json(name, dt, shapes, nodes):
    inputs = [{'name': k, 'dtype': dt, 'shape': s} for k, s in shapes.items()]
    return {'format': 'tcc-model', 'version': 1, 'name': '%s_%s' % (name, dt),
            'inputs': inputs, 'nodes': nodes, 'outputs': ['y']}


def inspect(tcc, bundle):
    """Launches, region groups, and the grids the region kernels launch with."""
    m = json.loads(subprocess.run([tcc, 'inspect', bundle], check=True,
                                  capture_output=True, text=True).stdout)
    launches = [x for x in m['launches'] if 'kernel' in x]
    grids = [x['grid'] for x in launches if m['kernels'][x['kernel']].get('kind') == 'region']
    return len(launches), m.get('region_groups', []), grids


def run(tcc, bundle, values, dt, work, tag):
    out = os.path.join(work, tag)
    os.makedirs(out, exist_ok=True)
    cmd = [tcc, 'run', bundle, '--output-dir', out]
    for k, v in values.items():
        npy = os.path.join(work, k + '.npy')
        np.save(npy, v.astype(np.float16 if dt == 'f16' else np.float32))
        cmd += ['--input', '%s=%s' % (k, npy)]
    t = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return np.load(os.path.join(out, 'y.npy')).astype(np.float64), time.time() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--seed', type=int)
    ap.add_argument('models', nargs='*')
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), 'little')
    print('seed', seed)
    rng = np.random.default_rng(seed)
    ok = True
    split = False  # some region kernel's tiles run on several threads
    with tempfile.TemporaryDirectory() as work:
        for name in args.models or list(MODELS):
            shapes, nodes, ref = MODELS[name]()
            for dt in ('f32', 'f16'):
                tag = '%s_%s' % (name, dt)
                path = os.path.join(work, tag + '.json')
                with open(path, 'w') as f:
                    json.dump(model_json(name, dt, shapes, nodes), f)
                bundles, launches = {}, {}
                # 'nhwc': auto with channels-last convolutions (the host's
                # region kernels take either layout; transposes at the edges
                # launch kernels of their own, so no launch count is compared).
                modes = ('auto', 'off', 'nhwc')
                for mode in modes:
                    bundles[mode] = os.path.join(work, '%s_%s.tccb' % (tag, mode))
                    flags = (['--region-fusion=auto', '--conv-layout=nhwc'] if mode == 'nhwc'
                             else ['--region-fusion=' + mode])
                    p = subprocess.run([args.tcc, 'compile', path, '--target', 'host', '-o',
                                        bundles[mode]] + flags,
                                       capture_output=True, text=True)
                    if p.returncode != 0:
                        print('FAIL %s %s: compile: %s' % (tag, mode, p.stderr.strip()))
                        ok = False
                        break
                    launches[mode], groups, grids = inspect(args.tcc, bundles[mode])
                    if mode == 'auto':
                        auto_groups, auto_grids = groups, grids
                        split |= any(g > 1 for g in grids)
                    if mode == 'nhwc':
                        nhwc_groups = groups
                else:
                    fused = (bool(auto_groups) and bool(nhwc_groups) and
                             launches['auto'] < launches['off'])
                    print('%s %s: %d region group(s) (nhwc %d), launches auto %d, off %d, '
                          'region grids %s' % ('PASS' if fused else 'FAIL', tag,
                                               len(auto_groups), len(nhwc_groups),
                                               launches['auto'], launches['off'], auto_grids))
                    ok &= fused
                    values = {}
                    for k, s in shapes.items():
                        scale = 1.0 if k == 'x' else 1.0 / np.sqrt(np.prod(s[1:]) or 1)
                        values[k] = L.rnd(dt, rng.normal(0, scale, s))
                    r = (lambda a: L.rnd('f16', a)) if dt == 'f16' else (lambda a: a)
                    want = ref(values, r)
                    got = {}
                    for mode in modes:
                        got[mode], secs = run(args.tcc, bundles[mode], values, dt, work,
                                              mode)
                        big = float(np.abs(want).max())
                        tol = (L.Tol(1e-5, 4e-5 * big) if dt == 'f32'
                               else L.Tol(2.0 ** -8, 2.0 ** -8 * big))
                        close, err, detail = L.compare(got[mode], want, tol)
                        print('%s %s %s vs NumPy: max abs error %.3g (of %.3g) %s' %
                              ('PASS' if close else 'FAIL', tag, mode, err, big, detail))
                        ok &= close
                    close, err, detail = L.compare(got['auto'], got['off'], tol)
                    print('%s %s auto vs off: max abs difference %.3g %s' %
                          ('PASS' if close else 'FAIL', tag, err, detail))
                    ok &= close
                    continue
                ok = False
    if not args.models:
        # conv_pool's and depthwise_pointwise's groups have several tiles
        # (rows of tiles, batch 2): tcc-host-region-grid must split them.
        print('%s a region kernel runs its tiles over a grid' % ('PASS' if split else 'FAIL'))
        ok &= split
    print('PASS' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
