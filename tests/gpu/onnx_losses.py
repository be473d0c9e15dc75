#!/usr/bin/env python3
"""ONNX SoftmaxCrossEntropyLoss models on a GPU: compiled here, run there.

    onnx_losses.py prepare --tcc build/compiler/tcc --dir DIR [--target sm_90a]
    onnx_losses.py check --tcc BUILD/runtime/tcc --dir DIR [--time]

`prepare` (needs python3-onnx) writes one bundle a case: mean, sum and none
reductions, class weights, ignore_index (-100 as PyTorch exports it, and a
class index), odd and vocabulary-length class counts (50257, 131072, 256000:
rows spanning a cluster of blocks on sm_90), [N, C, d] inputs, f32 and f16.
`check` regenerates each case's inputs from its seed, compares tcc's result
with a float64 reference within the dtype's bound (the exact result in the
output's dtype: an f16 sum past 65504 is inf), checks that a target out of
range is reported, and with --time times tcc (plain and CUDA graph) against
torch.compile of F.cross_entropy on the same inputs. Exit status 1 when a
case fails."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
import e2elib as L  # noqa: E402

# (shape, reduction, weighted, ignore_index, dtype)
CASES = [((100000, 7), 'mean', False, None, 'f32'), ((100000, 7), 'mean', False, -100, 'f32'),
         ((3001, 1001), 'mean', False, None, 'f16'), ((5003, 33), 'sum', True, 2, 'f32'),
         ((64, 10, 17), 'none', True, None, 'f32'), ((20000, 100), 'mean', True, None, 'f16'),
         ((3001, 1001), 'mean', False, -100, 'f16'), ((5003, 7), 'mean', True, -100, 'f32'),
         ((64, 10, 17), 'mean', False, -100, 'f32'), ((1, 5003), 'mean', False, -100, 'f32'),
         ((100000, 7), 'sum', False, -100, 'f16'), ((4096, 32000), 'mean', False, -100, 'f16'),
         ((2048, 50257), 'mean', False, -100, 'f16'), ((65536, 100), 'mean', False, -100, 'f32'),
         ((3, 256000), 'mean', False, -100, 'f32'), ((7, 131072), 'mean', False, None, 'f16'),
         ((512, 131072), 'mean', False, -100, 'f16')]


def reference(x, t, w, ignore, reduction):
    """ONNX's SoftmaxCrossEntropyLoss in float64 (class axis 1)."""
    return L.nll_loss(L.log_softmax(x.astype(np.float64), axis=1), t, w, ignore, reduction)


def data(i):
    shape, _, _, ignore, dt = CASES[i]
    rng = np.random.default_rng(100 + i)
    x = (rng.standard_normal(shape) * 3).astype(np.float16 if dt == 'f16' else np.float32)
    t = rng.integers(0, shape[1], (shape[0],) + shape[2:]).astype(np.int64)
    if ignore is not None:
        t.flat[::3 if ignore >= 0 else 5] = ignore
    w = (rng.random(shape[1]) + 0.5).astype(x.dtype)
    return x, t, w


def describe(i):
    shape, red, weighted, ignore, dt = CASES[i]
    return '%s %s %s%s%s' % (dt, list(shape), red, ' weighted' if weighted else '',
                             '' if ignore is None else ' ignore_index %d' % ignore)


def prepare(args):
    import onnx
    import onnx.numpy_helper
    from onnx import helper as oh, TensorProto as TP
    os.makedirs(args.dir, exist_ok=True)
    for i, (shape, red, weighted, ignore, dt) in enumerate(CASES):
        _, _, w = data(i)
        attrs = {'reduction': red}
        if ignore is not None:
            attrs['ignore_index'] = ignore
        el = TP.FLOAT16 if dt == 'f16' else TP.FLOAT
        g = oh.make_graph(
            [oh.make_node('SoftmaxCrossEntropyLoss', ['x', 't'] + (['w'] if weighted else []),
                          ['y'], **attrs)], 'loss',
            [oh.make_tensor_value_info('x', el, list(shape)),
             oh.make_tensor_value_info('t', TP.INT64, [shape[0]] + list(shape[2:]))],
            [oh.make_tensor_value_info('y', el, None)],
            [onnx.numpy_helper.from_array(w, 'w')] if weighted else [])
        path = os.path.join(args.dir, 'c%d.onnx' % i)
        onnx.save(oh.make_model(g, opset_imports=[oh.make_opsetid('', 13)]), path)
        subprocess.check_call([args.tcc, 'compile', path, '--target', args.target,
                               '-o', os.path.join(args.dir, 'c%d.tccb' % i)])
        os.remove(path)
    print('prepared %d cases in %s' % (len(CASES), args.dir))


def run(tcc, bundle, inputs, out):
    cmd = [tcc, 'run', bundle, '--output-dir', out]
    for name, path in inputs:
        cmd += ['--input', '%s=%s' % (name, path)]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None


def check(args):
    work = tempfile.mkdtemp()
    bad, rows = 0, []
    for i, (shape, red, weighted, ignore, dt) in enumerate(CASES):
        bundle = os.path.join(args.dir, 'c%d.tccb' % i)
        x, t, w = data(i)
        xp, tp = os.path.join(work, 'x.npy'), os.path.join(work, 't.npy')
        np.save(xp, x)
        np.save(tp, t)
        r = run(args.tcc, bundle, [('x', xp), ('t', tp)], os.path.join(work, 'c%d' % i))
        if r is None or r.returncode:
            print('FAIL', describe(i), 'timed out' if r is None else r.stderr.strip()[:200])
            bad += 1
            continue
        got = np.load(os.path.join(work, 'c%d' % i, 'y.npy')).astype(np.float64)
        ref = np.asarray(reference(x, t, w if weighted else None, ignore, red))
        ref = ref.astype(x.dtype).astype(np.float64)
        if not np.isfinite(ref).all():
            ok, err, tol = bool(np.array_equal(got, ref, equal_nan=True)), float('nan'), 0.0
        else:
            err = float(np.abs(got - ref).max())
            tol = (2e-3 if dt == 'f16' else 2e-5) * (float(np.abs(ref).max()) + 1)
            ok = err <= tol
        bad += not ok
        print('PASS' if ok else 'FAIL', describe(i), 'err %.3g bound %.3g' % (err, tol), flush=True)
        if args.time and ok:
            rows.append(timing(args, bundle, x, t, w if weighted else None, red, ignore, xp, tp, i))
    x, t, _ = data(0)
    t[123] = 7
    np.save(os.path.join(work, 'bx.npy'), x)
    np.save(os.path.join(work, 'bt.npy'), t)
    r = run(args.tcc, os.path.join(args.dir, 'c0.tccb'),
            [('x', os.path.join(work, 'bx.npy')), ('t', os.path.join(work, 'bt.npy'))],
            os.path.join(work, 'bad'))
    ok = r is not None and r.returncode == 1 and 'index out of range' in r.stderr
    print('PASS' if ok else 'FAIL', 'a target out of range is reported')
    bad += not ok
    if rows:
        print('| case | tcc ms | tcc graph ms | compile ms | compile graph ms | tcc / compile |')
        print('| --- | ---: | ---: | ---: | ---: | ---: |')
        print('\n'.join(rows))
    print('%d failed' % bad)
    return 1 if bad else 0


def timing(args, bundle, x, t, w, red, ignore, xp, tp, i):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'bench'))
    import gpu_bench as G

    class A:
        tcc, case_timeout = args.tcc, 120
    tcc_ms = []
    for graph in (False, True):
        f, _ = G.tcc_bench(A, bundle, 20, 100, graph, ['--input', 'x=' + xp, '--input', 't=' + tp])
        tcc_ms.append(f['median_ms'] if f else float('nan'))
    xt, tt = torch.from_numpy(x).cuda(), torch.from_numpy(t).cuda()
    kw = dict(weight=None if w is None else torch.from_numpy(w).cuda(), reduction=red,
              ignore_index=-100 if ignore is None else ignore)
    peer = []
    for mode in ('default', 'reduce-overhead'):
        torch._dynamo.reset()
        fn = torch.compile(lambda a, b: F.cross_entropy(a, b, **kw), mode=mode)
        for _ in range(3):
            fn(xt, tt)
        peer.append(G.time_cuda(lambda: fn(xt, tt)))
    return '| %s | %.4f | %.4f | %.4f | %.4f | %.2f |' % (
        describe(i), tcc_ms[0], tcc_ms[1], peer[0], peer[1], min(tcc_ms) / min(peer))


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('mode', choices=['prepare', 'check'])
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--dir', required=True)
    ap.add_argument('--target', default='sm_90a')
    ap.add_argument('--time', action='store_true')
    a = ap.parse_args()
    sys.exit(prepare(a) if a.mode == 'prepare' else check(a))
