#!/usr/bin/env python3
"""ONNX import: small models built with onnx.helper, compiled and run with
`tcc run model.onnx` on the host, compared with NumPy references written from
the ONNX operator specs (fresh random inputs each run; E2E_SEED fixes them).
Malformed models must fail with exit status 1 and one line naming the node,
its op type and the reason.

usage: onnx_import.py --tcc TCC
Exits 77 (ctest's skip) when python3-onnx is missing or tcc was built
without ONNX support.
"""
import argparse
import json
import os
import re
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2elib as L  # noqa: E402
from e2elib import Tol  # noqa: E402

try:
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper as oh
    from onnx import numpy_helper as nh
except ImportError:
    print('SKIP: python3-onnx is not installed (apt-get install python3-onnx)')
    sys.exit(L.SKIP)

ap = argparse.ArgumentParser()
ap.add_argument('--tcc', required=True)
args = ap.parse_args()
TCC = args.tcc

seed = int(os.environ.get('E2E_SEED', np.random.SeedSequence().entropy % 2**32))
print('seed', seed, '(E2E_SEED=%d reproduces)' % seed, flush=True)
rng = np.random.default_rng(seed)

U32 = 2.0**-24  # unit roundoff of f32
passed = failed = 0


def report(ok, what, detail=''):
    global passed, failed
    print(('PASS ' if ok else 'FAIL ') + what + ('' if ok else ': ' + detail), flush=True)
    passed += ok
    failed += not ok


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def vi(name, arr_or_shape, elem=None):
    """A value info: an array's shape and element type (f32 for a shape)."""
    shape = arr_or_shape.shape if hasattr(arr_or_shape, 'shape') else arr_or_shape
    if elem is None:
        elem = {np.dtype(np.int64): TP.INT64, np.dtype(np.int32): TP.INT32,
                np.dtype(np.bool_): TP.BOOL, np.dtype(np.float16): TP.FLOAT16}.get(
                    getattr(arr_or_shape, 'dtype', None), TP.FLOAT)
    return oh.make_tensor_value_info(name, elem, None if shape is None else list(shape))


def model(nodes, inputs, outputs, inits=(), opset=13, extra_inputs=()):
    """inputs: {name: array}; outputs: names; inits: TensorProtos or
    {name: array}."""
    if isinstance(inits, dict):
        inits = [nh.from_array(v, k) for k, v in inits.items()]
    g = oh.make_graph(nodes, 'g', [vi(k, v) for k, v in inputs.items()] + list(extra_inputs),
                      [vi(o, None) for o in outputs], list(inits))
    return oh.make_model(g, opset_imports=[oh.make_opsetid('', opset)])


def lin_tol(absref, terms):
    """A sum of `terms` f32 products in any order: |err| <= terms * u * sum|products|
    (plus one rounding of the result); absref is that sum of magnitudes."""
    return Tol(2 * U32, (terms + 2) * U32 * absref + 2.0**-126)


def elem_tol(ulps=4, scale=0.0):
    """Elementwise f32 ops: a few ulps of the result (transcendentals are not
    correctly rounded), plus the size of cancelled terms."""
    return Tol(ulps * U32 * 2, ulps * U32 * 2 * np.asarray(scale) + 2.0**-126)


def fname(name):
    return re.sub(r'\W+', '_', name)


def run_model(name, m, inputs, d, extra=()):
    name = fname(name)
    path = os.path.join(d, name + '.onnx')
    onnx.save(m, path)
    in_args = []
    for k, v in inputs.items():
        p = os.path.join(d, name + '.' + k + '.npy')
        np.save(p, v)
        in_args += ['--input', '%s=%s' % (k, p)]
    out = os.path.join(d, name + '.out')
    rc, _, err = L.run_tcc([TCC, 'run', path, '--output-dir', out] + in_args + list(extra))
    return rc, err, out


def check(name, m, inputs, refs, d, extra=()):
    """refs: {output: (reference float64 array, Tol)}."""
    rc, err, out = run_model(name, m, inputs, d, extra)
    if rc != 0:
        return report(False, name, 'exit %d: %s' % (rc, L.first_line(err)))
    for o, (ref, tol) in refs.items():
        got = np.load(os.path.join(out, o + '.npy')).astype(np.float64)
        ok, maxerr, detail = L.compare(got, np.asarray(ref, dtype=np.float64), tol)
        if not ok:
            return report(False, name, '%s: %s' % (o, detail))
    report(True, name)


def expect_error(name, path_or_model, d, needles, extra=()):
    """Exit 1 with exactly one line on stderr containing every needle."""
    if isinstance(path_or_model, str):
        path = path_or_model
    else:
        path = os.path.join(d, fname(name) + '.onnx')
        onnx.save(path_or_model, path)
    rc, out, err = L.run_tcc([TCC, 'compile', path, '-o', os.path.join(d, fname(name) + '.tccb')]
                             + list(extra))
    lines = [l for l in err.splitlines() if l.strip()]
    ok = rc == 1 and len(lines) == 1 and all(n in lines[0] for n in needles)
    report(ok, 'error: ' + name + (' -> ' + lines[0] if ok else ''),
           'exit %d, stderr %r, wanted one line with %r' % (rc, err, needles))


# --- references from the ONNX specs -----------------------------------------

def one_attention_launch(m, name, gpus, what, d):
    """Compiles model `m` for each GPU target and checks (tcc inspect) that
    it runs as one launch, of an attention template kernel."""
    path = os.path.join(d, name + '.onnx')
    onnx.save(m, path)
    for gpu in gpus:
        bundle = os.path.join(d, '%s_%s.tccb' % (name, gpu))
        rc, _, err = L.run_tcc([TCC, 'compile', path, '--target', gpu, '-o', bundle])
        launched = []
        if rc == 0:
            rc, out, err = L.run_tcc([TCC, 'inspect', bundle])
            info = json.loads(out) if rc == 0 else {'kernels': [], 'launches': []}
            launched = [info['kernels'][la['kernel']]['symbol'] for la in info['launches']]
        report(len(launched) == 1 and '_attn' in launched[0],
               '%s is one attention launch on %s' % (what, gpu),
               'exit %d, launches %s: %s' % (rc, launched, L.first_line(err)))


def same_pads(size, kernel, strides, dilations, upper):
    """auto_pad SAME_*: output ceil(in / stride); the odd pad goes at the end
    (SAME_UPPER) or the beginning (SAME_LOWER)."""
    begin, end = [], []
    for n, k, s, dl in zip(size, kernel, strides, dilations):
        out = -(-n // s)
        total = max(0, (out - 1) * s + (k - 1) * dl + 1 - n)
        small, big = total // 2, total - total // 2
        begin.append(small if upper else big)
        end.append(big if upper else small)
    return begin + end


def conv_ref(x, w, b, **kw):
    ref = L.conv2d(x.astype(np.float64), w.astype(np.float64), b, **kw)
    absref = L.conv2d(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)),
                      None if b is None else np.abs(b), **kw)
    terms = w.shape[1] * w.shape[2] * w.shape[3] + (b is not None)
    return ref, lin_tol(absref, terms)


def bn_ref(x, s, b, m, v, eps):
    sh = (1, -1) + (1,) * (x.ndim - 2)
    return (x - m.reshape(sh)) / np.sqrt(v.reshape(sh) + eps) * s.reshape(sh) + b.reshape(sh)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def f64(*a):
    return [np.asarray(v, dtype=np.float64) for v in a]


with tempfile.TemporaryDirectory() as d:
    # Probe: a tcc without ONNX support says so; skip rather than fail.
    probe = model([oh.make_node('Relu', ['x'], ['y'])], {'x': rand(2)}, ['y'])
    rc, err, _ = run_model('probe', probe, {'x': rand(2)}, d)
    if rc != 0 and 'without ONNX support' in err:
        print('SKIP: ' + L.first_line(err))
        sys.exit(L.SKIP)

    # --- Conv ---
    x, w, b = rand(2, 3, 9, 9), rand(4, 3, 3, 3), rand(4)
    ref, tol = conv_ref(x, w, b, pads=(1, 1, 1, 1))
    check('conv pads=1 bias', model(
        [oh.make_node('Conv', ['x', 'w', 'b'], ['y'], pads=[1, 1, 1, 1], kernel_shape=[3, 3])],
        {'x': x}, ['y'], {'w': w, 'b': b}), {'x': x}, {'y': (ref, tol)}, d)

    x, w = rand(1, 6, 11, 10), rand(6, 2, 3, 3)
    ref, tol = conv_ref(x, w, None, strides=(2, 1), pads=(1, 0, 2, 1), dilations=(2, 2), groups=3)
    check('conv groups=3 strides=2x1 dilations=2 asymmetric pads', model(
        [oh.make_node('Conv', ['x', 'w'], ['y'], group=3, strides=[2, 1], dilations=[2, 2],
                      pads=[1, 0, 2, 1])], {'x': x}, ['y'], {'w': w}),
        {'x': x}, {'y': (ref, tol)}, d)

    for mode in ('SAME_UPPER', 'SAME_LOWER'):
        # Odd total pads on both axes, so that UPPER and LOWER differ.
        x, w, b = rand(1, 4, 8, 7), rand(4, 1, 3, 2), rand(4)
        pads = same_pads((8, 7), (3, 2), (2, 2), (1, 1), mode == 'SAME_UPPER')
        ref, tol = conv_ref(x, w, b, strides=(2, 2), pads=pads, groups=4)
        check('conv depthwise auto_pad=%s stride 2' % mode, model(
            [oh.make_node('Conv', ['x', 'w', 'b'], ['y'], group=4, strides=[2, 2], auto_pad=mode)],
            {'x': x}, ['y'], {'w': w, 'b': b}), {'x': x}, {'y': (ref, tol)}, d)

    x, w = rand(1, 3, 8, 8), rand(5, 3, 3, 3)
    ref, tol = conv_ref(x, w, None, strides=(2, 2))
    check('conv auto_pad=VALID', model(
        [oh.make_node('Conv', ['x', 'w'], ['y'], strides=[2, 2], auto_pad='VALID')],
        {'x': x}, ['y'], {'w': w}), {'x': x}, {'y': (ref, tol)}, d)

    # --- pools ---
    x = rand(2, 3, 9, 8)
    xd = x.astype(np.float64)
    exact = Tol()
    check('MaxPool 3x3 stride 2 pads 1', model(
        [oh.make_node('MaxPool', ['x'], ['y'], kernel_shape=[3, 3], strides=[2, 2],
                      pads=[1, 1, 1, 1])], {'x': x}, ['y']),
        {'x': x}, {'y': (L.pool2d(xd, 'max', (3, 3), (2, 2), (1, 1, 1, 1)), exact)}, d)
    check('MaxPool default strides (1) ceil_mode', model(
        [oh.make_node('MaxPool', ['x'], ['y'], kernel_shape=[2, 3], ceil_mode=1)],
        {'x': x}, ['y']),
        {'x': x}, {'y': (L.pool2d(xd, 'max', (2, 3), (1, 1), ceil_mode=True), exact)}, d)
    pads = same_pads((9, 8), (3, 3), (2, 2), (1, 1), True)
    check('MaxPool auto_pad=SAME_UPPER', model(
        [oh.make_node('MaxPool', ['x'], ['y'], kernel_shape=[3, 3], strides=[2, 2],
                      auto_pad='SAME_UPPER')], {'x': x}, ['y']),
        {'x': x}, {'y': (L.pool2d(xd, 'max', (3, 3), (2, 2), pads), exact)}, d)
    avg_tol = elem_tol(12, L.pool2d(np.abs(xd), 'avg', (3, 3), (2, 2), (1, 1, 1, 1)))
    for cip in (0, 1):
        check('AveragePool pads 1 count_include_pad=%d' % cip, model(
            [oh.make_node('AveragePool', ['x'], ['y'], kernel_shape=[3, 3], strides=[2, 2],
                          pads=[1, 1, 1, 1], count_include_pad=cip)], {'x': x}, ['y']),
            {'x': x}, {'y': (L.pool2d(xd, 'avg', (3, 3), (2, 2), (1, 1, 1, 1),
                                      count_include_pad=bool(cip)), avg_tol)}, d)
    check('GlobalAveragePool', model(
        [oh.make_node('GlobalAveragePool', ['x'], ['y'])], {'x': x}, ['y']),
        {'x': x}, {'y': (xd.mean(axis=(2, 3), keepdims=True),
                         elem_tol(80, np.abs(xd).mean(axis=(2, 3), keepdims=True)))}, d)

    # --- BatchNormalization, activations ---
    x = rand(2, 5, 4, 3)
    s, bb, m, v = rand(5), rand(5), rand(5), (np.abs(rand(5)) + 0.5).astype(np.float32)
    ref = bn_ref(*f64(x, s, bb, m, v), 1e-3)
    check('BatchNormalization eps=1e-3', model(
        [oh.make_node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], ['y'], epsilon=1e-3)],
        {'x': x}, ['y'], {'s': s, 'b': bb, 'm': m, 'v': v}),
        {'x': x}, {'y': (ref, elem_tol(8, np.abs(ref) + 4 * np.abs(f64(x)[0]) + 4))}, d)

    x = (rand(3, 7) * 4).astype(np.float32)
    xd = x.astype(np.float64)
    acts = [('Relu', np.maximum(xd, 0), 0), ('Sigmoid', sigmoid(xd), 8),
            ('Tanh', np.tanh(xd), 8), ('Erf', L.erf(xd), 8),
            ('HardSwish', xd * np.clip(xd / 6 + 0.5, 0, 1), 8)]
    for op, ref, ulps in acts:
        check(op, model([oh.make_node(op, ['x'], ['y'])], {'x': x}, ['y']),
              {'x': x}, {'y': (ref, elem_tol(ulps, 1e-6) if ulps else Tol())}, d)
    check('Clip min/max from initializers, and max only', model(
        [oh.make_node('Clip', ['x', 'lo', 'hi'], ['y']),
         oh.make_node('Clip', ['x', '', 'hi'], ['z'])], {'x': x}, ['y', 'z'],
        {'lo': np.array(-1.5, np.float32), 'hi': np.array(2.25, np.float32)}),
        {'x': x}, {'y': (np.clip(xd, -1.5, 2.25), Tol()), 'z': (np.minimum(xd, 2.25), Tol())}, d)

    # --- broadcast arithmetic ---
    a, c = rand(2, 3, 4), rand(3, 1)
    c = np.where(np.abs(c) < 0.1, 0.5, c).astype(np.float32)
    ad, cd = f64(a, c)
    for op, fn in (('Add', np.add), ('Sub', np.subtract), ('Mul', np.multiply),
                   ('Div', np.divide)):
        check(op + ' broadcast [2,3,4] by [3,1]', model(
            [oh.make_node(op, ['a', 'c'], ['y'])], {'a': a, 'c': c}, ['y']),
            {'a': a, 'c': c}, {'y': (fn(ad, cd), elem_tol(1, np.abs(ad) + np.abs(cd)))}, d)

    # --- Gemm / MatMul ---
    for ta, tb, alpha, beta, cshape in ((0, 0, 1.0, 1.0, None), (1, 1, 0.5, 2.0, (5,)),
                                       (0, 1, 1.0, 0.25, (3, 5)), (1, 0, 2.0, 1.0, (1, 5))):
        A = rand(4, 3) if ta else rand(3, 4)
        B = rand(5, 4) if tb else rand(4, 5)
        Ad, Bd = f64(A.T if ta else A, B.T if tb else B)
        ref = alpha * Ad @ Bd
        absref = abs(alpha) * np.abs(Ad) @ np.abs(Bd)
        ins = ['A', 'B']
        inits = {'B': B}
        if cshape:
            C = rand(*cshape)
            ref = ref + beta * C.astype(np.float64)
            absref = absref + abs(beta) * np.abs(C.astype(np.float64))
            ins.append('C')
            inits['C'] = C
        check('Gemm transA=%d transB=%d alpha=%g beta=%g C=%s' % (ta, tb, alpha, beta, cshape),
              model([oh.make_node('Gemm', ins, ['y'], transA=ta, transB=tb, alpha=alpha,
                                  beta=beta)], {'A': A}, ['y'], inits),
              {'A': A}, {'y': (ref, lin_tol(absref, 6))}, d)
    a, bm, vec = rand(2, 3, 4), rand(4, 5), rand(4)
    ad, bd, vd = f64(a, bm, vec)
    check('MatMul batched and rank-1', model(
        [oh.make_node('MatMul', ['a', 'b'], ['y']), oh.make_node('MatMul', ['v', 'b'], ['z'])],
        {'a': a, 'v': vec}, ['y', 'z'], {'b': bm}),
        {'a': a, 'v': vec}, {'y': (ad @ bd, lin_tol(np.abs(ad) @ np.abs(bd), 4)),
                             'z': (vd @ bd, lin_tol(np.abs(vd) @ np.abs(bd), 4))}, d)

    # --- shapes ---
    x = rand(2, 3, 4, 5)
    xd = x.astype(np.float64)
    check('Reshape 0 copies, -1 infers; Flatten; Transpose', model(
        [oh.make_node('Reshape', ['x', 's1'], ['r1']),
         oh.make_node('Reshape', ['x', 's2'], ['r2']),
         oh.make_node('Flatten', ['x'], ['f1'], axis=2),
         oh.make_node('Flatten', ['x'], ['f0'], axis=0),
         oh.make_node('Flatten', ['x'], ['fm'], axis=-1),
         oh.make_node('Flatten', ['x'], ['fd']),
         oh.make_node('Transpose', ['x'], ['t1'], perm=[0, 2, 3, 1]),
         oh.make_node('Transpose', ['x'], ['t2'])],
        {'x': x}, ['r1', 'r2', 'f1', 'f0', 'fm', 'fd', 't1', 't2'],
        {'s1': np.array([0, -1], np.int64), 's2': np.array([-1, 0, 2, 0], np.int64)}),
        {'x': x}, {'r1': (xd.reshape(2, 60), Tol()), 'r2': (xd.reshape(4, 3, 2, 5), Tol()),
                   'f1': (xd.reshape(6, 20), Tol()), 'f0': (xd.reshape(1, 120), Tol()),
                   'fm': (xd.reshape(24, 5), Tol()), 'fd': (xd.reshape(2, 60), Tol()),
                   't1': (xd.transpose(0, 2, 3, 1), Tol()), 't2': (xd.transpose(), Tol())}, d)
    x = (rand(2, 5, 3) * 3).astype(np.float32)
    xd = x.astype(np.float64)
    check('Softmax axis=1 and default (-1)', model(
        [oh.make_node('Softmax', ['x'], ['y'], axis=1), oh.make_node('Softmax', ['x'], ['z'])],
        {'x': x}, ['y', 'z']),
        {'x': x}, {'y': (softmax(xd, 1), elem_tol(32, 1e-7)),
                   'z': (softmax(xd, -1), elem_tol(32, 1e-7))}, d)
    a, bq, cq = rand(2, 1, 3), rand(2, 4, 3), rand(2, 2, 3)
    check('Concat axis=1; Identity; Constant (tensor, value_float, value_ints)', model(
        [oh.make_node('Identity', ['a'], ['ai']),
         oh.make_node('Concat', ['ai', 'b', 'c'], ['y'], axis=-2),
         oh.make_node('Constant', [], ['k'], value=nh.from_array(
             np.arange(3, dtype=np.float32), 'k')),
         oh.make_node('Constant', [], ['half'], value_float=0.5),
         oh.make_node('Constant', [], ['shp'], value_ints=[3, 2]),
         oh.make_node('Add', ['a', 'k'], ['ak']),
         oh.make_node('Mul', ['ak', 'half'], ['akh']),
         oh.make_node('Reshape', ['akh', 'shp'], ['z'])],
        {'a': a, 'b': bq, 'c': cq}, ['y', 'z']),
        {'a': a, 'b': bq, 'c': cq},
        {'y': (np.concatenate(f64(a, bq, cq), axis=1), Tol()),
         'z': (((a.astype(np.float64) + np.arange(3)) * 0.5).reshape(3, 2),
               elem_tol(2, np.abs(a).reshape(3, 2) + 3))}, d)

    # --- a residual CNN block ---
    x = rand(1, 8, 10, 10)
    w1, w2 = (rand(8, 8, 3, 3) * 0.2).astype(np.float32), (rand(8, 8, 3, 3) * 0.2).astype(np.float32)
    bn = [(rand(8), rand(8), rand(8), (np.abs(rand(8)) + 0.5).astype(np.float32)) for _ in range(2)]
    fcw, fcb = rand(10, 8), rand(10)
    nodes = [oh.make_node('Conv', ['x', 'w1'], ['c1'], pads=[1, 1, 1, 1]),
             oh.make_node('BatchNormalization', ['c1', 's1', 'b1', 'm1', 'v1'], ['n1']),
             oh.make_node('Relu', ['n1'], ['r1']),
             oh.make_node('Conv', ['r1', 'w2'], ['c2'], pads=[1, 1, 1, 1]),
             oh.make_node('BatchNormalization', ['c2', 's2', 'b2', 'm2', 'v2'], ['n2']),
             oh.make_node('Add', ['n2', 'x'], ['sum']),
             oh.make_node('Relu', ['sum'], ['r2']),
             oh.make_node('GlobalAveragePool', ['r2'], ['p']),
             oh.make_node('Flatten', ['p'], ['f']),
             oh.make_node('Gemm', ['f', 'fcw', 'fcb'], ['y'], transB=1)]
    inits = {'w1': w1, 'w2': w2, 'fcw': fcw, 'fcb': fcb}
    for i, (s_, b_, m_, v_) in enumerate(bn, 1):
        inits.update({'s%d' % i: s_, 'b%d' % i: b_, 'm%d' % i: m_, 'v%d' % i: v_})
    xd = x.astype(np.float64)
    h = np.maximum(bn_ref(L.conv2d(xd, w1.astype(np.float64), pads=(1, 1, 1, 1)),
                          *f64(*bn[0]), 1e-5), 0)
    h = bn_ref(L.conv2d(h, w2.astype(np.float64), pads=(1, 1, 1, 1)), *f64(*bn[1]), 1e-5)
    h = np.maximum(h + xd, 0).mean(axis=(2, 3))
    ref = h @ fcw.T.astype(np.float64) + fcb
    # Two 72-term convolutions feed a 100-term mean and an 8-term product;
    # bound the error relative to the magnitudes, with the norm scales.
    scale = (np.abs(h) @ np.abs(fcw.T.astype(np.float64)) + np.abs(fcb)) * 50
    check('residual block: conv-bn-relu-conv-bn-add-relu-gap-flatten-gemm',
          model(nodes, {'x': x}, ['y'], inits), {'x': x}, {'y': (ref, lin_tol(scale, 200))}, d)

    # --- more ops: Slice, Gather, Pad, LayerNormalization, ReduceMean ---
    x = rand(4, 6, 5)
    xd = x.astype(np.float64)
    big = np.iinfo(np.int64).max
    check('Slice (negative, INT64_MAX end, steps) and Gather', model(
        [oh.make_node('Slice', ['x', 'st', 'en', 'ax', 'sp'], ['y']),
         oh.make_node('Gather', ['x', 'idx'], ['z'], axis=1)],
        {'x': x}, ['y', 'z'],
        {'st': np.array([-1, 1], np.int64), 'en': np.array([-big, big], np.int64),
         'ax': np.array([1, 2], np.int64), 'sp': np.array([-2, 2], np.int64),
         'idx': np.array([[0, 5], [-1, 2]], np.int64)}),
        {'x': x}, {'y': (xd[:, ::-2][:, :, 1::2], Tol()),
                   'z': (np.take(xd, [[0, 5], [5, 2]], axis=1), Tol())}, d)
    # Split (torch's chunk and split, a fused QKV projection's three parts):
    # sizes as an input, equal parts, and opset 18's num_outputs
    # (ceil-sized parts, the last smaller).
    check('Split with sizes (opset 13)', model(
        [oh.make_node('Split', ['x', 'sz'], ['a', 'b', 'c'], axis=1)], {'x': x},
        ['a', 'b', 'c'], {'sz': np.array([1, 3, 2], np.int64)}),
        {'x': x}, {'a': (xd[:, :1], Tol()), 'b': (xd[:, 1:4], Tol()), 'c': (xd[:, 4:], Tol())}, d)
    check('Split with sizes, a negative axis', model(
        [oh.make_node('Split', ['x', 'sz'], ['a', 'b'], axis=-1)], {'x': x},
        ['a', 'b'], {'sz': np.array([2, 3], np.int64)}),
        {'x': x}, {'a': (xd[..., :2], Tol()), 'b': (xd[..., 2:], Tol())}, d)
    check('Split into equal parts', model(
        [oh.make_node('Split', ['x'], ['a', 'b', 'c'], axis=1)], {'x': x}, ['a', 'b', 'c']),
        {'x': x}, {k: (xd[:, 2 * i:2 * i + 2], Tol()) for i, k in enumerate('abc')}, d)
    check('Split by num_outputs (opset 18)', model(
        [oh.make_node('Split', ['x'], ['a', 'b'], axis=2, num_outputs=2)], {'x': x},
        ['a', 'b'], opset=18),
        {'x': x}, {'a': (xd[..., :3], Tol()), 'b': (xd[..., 3:], Tol())}, d)
    expect_error('Split sizes that miss the axis', model(
        [oh.make_node('Split', ['x', 'sz'], ['a', 'b'], axis=1)], {'x': x}, ['a', 'b'],
        {'sz': np.array([2, 3], np.int64)}), d,
        ['Split', 'split sizes add up to 5, not the axis\' 6'])
    check('Pad constant (opset 13)', model(
        [oh.make_node('Pad', ['x', 'pads', 'cv'], ['y'])], {'x': x}, ['y'],
        {'pads': np.array([0, 1, 2, 1, 0, 3], np.int64), 'cv': np.array(1.5, np.float32)}),
        {'x': x}, {'y': (np.pad(xd, ((0, 1), (1, 0), (2, 3)), constant_values=1.5), Tol())}, d)
    check('Pad with axes (opset 18)', model(
        [oh.make_node('Pad', ['x', 'pads', '', 'axes'], ['y'])], {'x': x}, ['y'],
        {'pads': np.array([2, 1], np.int64), 'axes': np.array([-1], np.int64)}, opset=18),
        {'x': x}, {'y': (np.pad(xd, ((0, 0), (0, 0), (2, 1))), Tol())}, d)
    g_, b_ = rand(6, 5), rand(5)
    mu = xd.mean(axis=(1, 2), keepdims=True)
    var = ((xd - mu) ** 2).mean(axis=(1, 2), keepdims=True)
    ln = (xd - mu) / np.sqrt(var + 1e-5) * g_ + b_
    check('LayerNormalization axis=1 (opset 17)', model(
        [oh.make_node('LayerNormalization', ['x', 'g', 'b'], ['y'], axis=1)], {'x': x}, ['y'],
        {'g': g_, 'b': b_}, opset=17),
        {'x': x}, {'y': (ln, elem_tol(64, np.abs(ln) + np.abs(g_) * 4 + np.abs(b_)))}, d)
    rm_tol = elem_tol(16, np.abs(xd).mean(axis=1, keepdims=True))
    check('ReduceMean axes attribute (opset 13)', model(
        [oh.make_node('ReduceMean', ['x'], ['y'], axes=[1])], {'x': x}, ['y']),
        {'x': x}, {'y': (xd.mean(axis=1, keepdims=True), rm_tol)}, d)
    check('ReduceMean axes input (opset 18)', model(
        [oh.make_node('ReduceMean', ['x', 'ax'], ['y'], keepdims=1)], {'x': x}, ['y'],
        {'ax': np.array([1], np.int64)}, opset=18),
        {'x': x}, {'y': (xd.mean(axis=1, keepdims=True), rm_tol)}, d)

    # --- ConvTranspose, Resize (nearest), Squeeze/Unsqueeze, Shape ---
    x, bt = rand(1, 4, 5, 6), rand(6)
    wt = rand(4, 3, 3, 3)
    ref = L.conv_transpose2d(*f64(x, wt), None, strides=(2, 2), pads=(1, 0, 1, 1),
                             output_padding=(1, 0), groups=2)
    wt2 = rand(4, 3, 3, 3)
    ref2 = L.conv_transpose2d(*f64(x, wt2), bt[:3].astype(np.float64))
    absr = L.conv_transpose2d(*f64(np.abs(x), np.abs(wt)), strides=(2, 2), pads=(1, 0, 1, 1),
                              output_padding=(1, 0), groups=2)
    absr2 = L.conv_transpose2d(*f64(np.abs(x), np.abs(wt2)), np.abs(bt[:3]).astype(np.float64))
    check('ConvTranspose groups=2 strides=2 pads output_padding; with bias', model(
        [oh.make_node('ConvTranspose', ['x', 'w'], ['y'], group=2, strides=[2, 2],
                      pads=[1, 0, 1, 1], output_padding=[1, 0]),
         oh.make_node('ConvTranspose', ['x', 'w2', 'b'], ['z'])],
        {'x': x}, ['y', 'z'], {'w': wt, 'w2': wt2, 'b': bt[:3]}),
        {'x': x}, {'y': (ref, lin_tol(absr, 40)), 'z': (ref2, lin_tol(absr2, 40))}, d)

    x = rand(1, 2, 3, 4)
    xd = x.astype(np.float64)

    def nearest_idx(n, m, scale, ctm, mode):
        idx = []
        for o in range(m):
            src = {'asymmetric': o / scale, 'half_pixel': (o + 0.5) / scale - 0.5,
                   'align_corners': o * (n - 1) / (m - 1) if m > 1 else 0.0}[ctm]
            f = np.floor(src)
            k = {'floor': f, 'round_prefer_floor': f if src - f == 0.5 else np.round(src),
                 'round_prefer_ceil': f + 1 if src - f == 0.5 else np.round(src)}[mode]
            idx.append(int(min(max(k, 0), n - 1)))
        return idx
    up = np.repeat(np.repeat(xd, 2, axis=2), 2, axis=3)
    hi = nearest_idx(3, 5, 5 / 3, 'half_pixel', 'round_prefer_floor')
    wi = nearest_idx(4, 7, 7 / 4, 'half_pixel', 'round_prefer_floor')
    ai = nearest_idx(4, 6, 1.5, 'align_corners', 'round_prefer_ceil')
    check('Resize nearest: scales 2 (asymmetric, floor), sizes (half_pixel), align_corners', model(
        [oh.make_node('Resize', ['x', '', 'sc'], ['y'], mode='nearest',
                      coordinate_transformation_mode='asymmetric', nearest_mode='floor'),
         oh.make_node('Resize', ['x', '', '', 'sz'], ['z'], mode='nearest'),
         oh.make_node('Resize', ['x', '', 'sc2'], ['u'], mode='nearest',
                      coordinate_transformation_mode='align_corners',
                      nearest_mode='round_prefer_ceil')],
        {'x': x}, ['y', 'z', 'u'],
        {'sc': np.array([1, 1, 2, 2], np.float32), 'sz': np.array([1, 2, 5, 7], np.int64),
         'sc2': np.array([1, 1, 1, 1.5], np.float32)}),
        {'x': x}, {'y': (up, Tol()), 'z': (xd[:, :, hi][:, :, :, wi], Tol()),
                   'u': (xd[:, :, :, ai], Tol())}, d)

    x, yv = rand(3, 1, 4, 1), rand(2, 2)
    xd = x.astype(np.float64)
    check('Squeeze (axes input and all size-1), Unsqueeze, Shape feeding Reshape', model(
        [oh.make_node('Squeeze', ['x', 'ax'], ['s1']),
         oh.make_node('Squeeze', ['x'], ['s2']),
         oh.make_node('Unsqueeze', ['s2', 'ux'], ['u']),
         oh.make_node('Shape', ['x'], ['shp'], start=1),
         oh.make_node('Reshape', ['y', 'shp'], ['r'])],
        {'x': x, 'y': yv}, ['s1', 's2', 'u', 'r'],
        {'ax': np.array([-1], np.int64), 'ux': np.array([0, -1], np.int64)}, opset=15),
        {'x': x, 'y': yv}, {'s1': (xd.reshape(3, 1, 4), Tol()), 's2': (xd.reshape(3, 4), Tol()),
                             'u': (xd.reshape(1, 3, 4, 1), Tol()),
                             'r': (yv.reshape(1, 4, 1), Tol())}, d)

    # The flatten exporters write: x.view(x.size(0), -1) as shape arithmetic.
    x = rand(2, 3, 4)
    check('shape arithmetic folded (Shape, Gather, Unsqueeze, Mul, Concat) into Reshape', model(
        [oh.make_node('Shape', ['x'], ['s']),
         oh.make_node('Gather', ['s', 'zero'], ['n'], axis=0),
         oh.make_node('Gather', ['s', 'one'], ['c']),
         oh.make_node('Mul', ['c', 'two'], ['c2']),
         oh.make_node('Unsqueeze', ['n', 'ax0'], ['n1']),
         oh.make_node('Unsqueeze', ['c2', 'ax0'], ['c1']),
         oh.make_node('Concat', ['n1', 'c1', 'minus1'], ['shape'], axis=0),
         oh.make_node('Reshape', ['x', 'shape'], ['y'])],
        {'x': x}, ['y'],
        {'zero': np.array(0, np.int64), 'one': np.array(-2, np.int64),
         'two': np.array(2, np.int64), 'ax0': np.array([0], np.int64),
         'minus1': np.array([-1], np.int64)}),
        {'x': x}, {'y': (x.astype(np.float64).reshape(2, 6, 2), Tol())}, d)

    # Shape arithmetic as newer exporters write it around Reshape, Expand and
    # Slice: Slice of a shape (forwards and backwards), Split, integer Div
    # (truncating), Mod (the divisor's sign), Min, Max, Neg, Abs, Range,
    # Expand and Reshape of a list, comparisons, Not, And and Where. Each
    # folds to a constant, so the op reading it sees one.
    x, z, w = rand(6, 4, 10), rand(1, 1, 10), rand(1)
    xd = x.astype(np.float64)
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    big = np.iinfo(np.int64)
    check('shape arithmetic folded (Slice, Split, Div, Mod, Min, Max, Neg, Abs, Range, '
          'Expand, Reshape, Less, Not, And, Where)', model(
        [oh.make_node('Shape', ['x'], ['s']),
         oh.make_node('Slice', ['s', 'm2', 'imax'], ['tail']),
         oh.make_node('Gather', ['tail', 'zero'], ['t0']),
         oh.make_node('Gather', ['tail', 'one'], ['t1']),
         oh.make_node('Mul', ['t0', 't1'], ['t01']),
         oh.make_node('Gather', ['s', 'zero'], ['n']),
         oh.make_node('Reshape', ['n', 'one1'], ['n1']),
         oh.make_node('Unsqueeze', ['t01', 'ax0'], ['t011']),
         oh.make_node('Concat', ['n1', 't011'], ['shape1'], axis=0),
         oh.make_node('Reshape', ['x', 'shape1'], ['y1']),
         oh.make_node('Slice', ['s', 'm1', 'imin', 'ax0', 'm11'], ['rev']),
         oh.make_node('Reshape', ['x', 'rev'], ['y2']),
         oh.make_node('Add', ['n', 'two'], ['n2']),
         oh.make_node('Div', ['n2', 'three'], ['q']),
         oh.make_node('Mul', ['q', 'three'], ['q3']),
         oh.make_node('Neg', ['seven'], ['m7']),
         oh.make_node('Mod', ['m7', 'four'], ['r1']),
         oh.make_node('Mod', ['m7', 'four'], ['rf'], fmod=1),
         oh.make_node('Abs', ['rf'], ['ra']),
         oh.make_node('Mul', ['r1', 'twenty'], ['r20']),
         oh.make_node('Min', ['five', 'two'], ['mn']),
         oh.make_node('Max', ['mn', 'ra'], ['mx']),
         oh.make_node('Concat', ['q3', 'r20', 'mx'], ['shape3'], axis=0),
         oh.make_node('Expand', ['w', 'shape3'], ['y3']),
         oh.make_node('Split', ['s', 'parts'], ['s0', 's12'], axis=0),
         oh.make_node('Expand', ['one', 'two1'], ['ones']),
         oh.make_node('Concat', ['s0', 'ones', 's12'], ['shape4'], axis=0),
         oh.make_node('Reshape', ['x', 'shape4'], ['y4']),
         oh.make_node('Range', ['one', 'five', 'two'], ['starts']),
         oh.make_node('Slice', ['x', 'starts', 'ends', 'axes12'], ['y5']),
         oh.make_node('Less', ['s', 'fives'], ['small']),
         oh.make_node('Not', ['small'], ['large']),
         oh.make_node('And', ['large', 'keep'], ['cond']),
         oh.make_node('Where', ['cond', 's', 'one'], ['shape6']),
         oh.make_node('Expand', ['z', 'shape6'], ['y6'])],
        {'x': x, 'z': z, 'w': w}, ['y1', 'y2', 'y3', 'y4', 'y5', 'y6'],
        {'m2': i64(-2), 'imax': i64(big.max), 'zero': np.array(0, np.int64),
         'one': np.array(1, np.int64), 'one1': i64(1), 'ax0': i64(0), 'm1': i64(-1),
         'imin': i64(big.min), 'm11': i64(-1), 'two': np.array(2, np.int64),
         'three': i64(3), 'seven': i64(7), 'four': i64(4),
         'twenty': i64(20), 'five': np.array(5, np.int64), 'parts': i64(1, 2),
         'two1': i64(2), 'ends': i64(5, 9), 'axes12': i64(1, 2), 'fives': i64(5, 5, 5),
         'keep': np.array([True, True, True])}),
        {'x': x, 'z': z, 'w': w},
        {'y1': (xd.reshape(6, 40), Tol()), 'y2': (xd.reshape(10, 4, 6), Tol()),
         'y3': (np.broadcast_to(w.astype(np.float64), (6, 20, 3)), Tol()), 'y4': (xd.reshape(6, 1, 1, 4, 10), Tol()),
         'y5': (xd[:, 1:5, 3:9], Tol()),
         'y6': (np.broadcast_to(z.astype(np.float64), (6, 1, 10)), Tol())}, d)
    expect_error('integer division by zero in shape arithmetic', model(
        [oh.make_node('Shape', ['x'], ['s']),
         oh.make_node('Div', ['s', 'zero'], ['q']),
         oh.make_node('Reshape', ['x', 'q'], ['y'])],
        {'x': rand(2, 3)}, ['y'], {'zero': i64(0)}), d, ['(Div)', 'division by zero'])

    # Shape over an empty range (start past end: no dims), found by fuzz-onnx:
    # concatenated with -1 it flattens.
    x = rand(2, 3, 4)
    check('Shape with an empty range, Concat, Reshape', model(
        [oh.make_node('Shape', ['x'], ['e'], start=2, end=1),
         oh.make_node('Concat', ['e', 'minus1'], ['shape'], axis=0),
         oh.make_node('Reshape', ['x', 'shape'], ['y'])],
        {'x': x}, ['y'], {'minus1': np.array([-1], np.int64)}),
        {'x': x}, {'y': (x.astype(np.float64).reshape(24), Tol())}, d)

    # --- initializers: typed fields, f16, external data ---
    x = rand(3, 4)
    wv = rand(3, 4)
    typed = [oh.make_tensor('w', TP.FLOAT, [3, 4], wv.flatten().tolist()),
             oh.make_tensor('shp', TP.INT64, [1], [12])]
    check('typed-field initializers (float_data, int64_data)', model(
        [oh.make_node('Add', ['x', 'w'], ['s']), oh.make_node('Reshape', ['s', 'shp'], ['y'])],
        {'x': x}, ['y'], typed),
        {'x': x}, {'y': ((x.astype(np.float64) + wv).reshape(12),
                         elem_tol(1, np.abs(x) .reshape(12) + np.abs(wv).reshape(12)))}, d)
    xh, wh = rand(2, 5).astype(np.float16), rand(2, 5).astype(np.float16)
    mh = oh.make_model(oh.make_graph(
        [oh.make_node('Mul', ['x', 'w'], ['y'])], 'g', [vi('x', xh, TP.FLOAT16)],
        [vi('y', None, TP.FLOAT16)],
        [oh.make_tensor('w', TP.FLOAT16, [2, 5], wh.flatten().tolist())]),
        opset_imports=[oh.make_opsetid('', 13)])
    check('f16 input and int32_data f16 initializer', mh, {'x': xh},
          {'y': (L.rnd('f16', xh.astype(np.float64) * wh), Tol(2.0**-11, 2.0**-24))}, d)

    x = rand(2, 3, 6, 6)
    w = rand(4, 3, 3, 3)
    ext = model([oh.make_node('Conv', ['x', 'w'], ['y'], pads=[1, 1, 1, 1])],
                {'x': x}, ['y'], {'w': w})
    ext_dir = os.path.join(d, 'ext')
    os.makedirs(ext_dir)
    onnx.save_model(ext, os.path.join(ext_dir, 'ext.onnx'), save_as_external_data=True,
                    all_tensors_to_one_file=True, location='weights.bin', size_threshold=0)
    ref, tol = conv_ref(x, w, None, pads=(1, 1, 1, 1))
    np.save(os.path.join(d, 'ext_x.npy'), x)
    rc, _, err = L.run_tcc([TCC, 'run', os.path.join(ext_dir, 'ext.onnx'), '--input',
                            'x=' + os.path.join(d, 'ext_x.npy'), '--output-dir',
                            os.path.join(d, 'ext.out')])
    if rc != 0:
        report(False, 'external data initializer', L.first_line(err))
    else:
        ok, _, detail = L.compare(np.load(os.path.join(d, 'ext.out', 'y.npy')).astype(
            np.float64), ref, tol)
        report(ok, 'external data initializer', detail)
    os.rename(os.path.join(ext_dir, 'weights.bin'), os.path.join(ext_dir, 'moved.bin'))
    expect_error('external data file missing', os.path.join(ext_dir, 'ext.onnx'), d,
                 ['initializer "w"', 'weights.bin', 'no such file'])
    with open(os.path.join(ext_dir, 'weights.bin'), 'wb') as f:
        f.write(b'\0' * 20)
    expect_error('external data file too short', os.path.join(ext_dir, 'ext.onnx'), d,
                 ['initializer "w"', 'too few'])

    # --- --input-shape ---
    x = rand(3, 2, 5, 7)
    w = rand(4, 2, 1, 1)
    sym = oh.make_model(oh.make_graph(
        [oh.make_node('Conv', ['x', 'w'], ['y'])], 'g',
        [oh.make_tensor_value_info('x', TP.FLOAT, ['N', 2, 'H', 'W'])],
        [vi('y', None)], [nh.from_array(w, 'w')]), opset_imports=[oh.make_opsetid('', 13)])
    ref, tol = conv_ref(x, w, None)
    check('--input-shape fixes symbolic dims', sym, {'x': x}, {'y': (ref, tol)}, d,
          extra=['--input-shape', 'x=3x2x5x7'])
    expect_error('symbolic dims without --input-shape', sym, d,
                 ['graph input "x"', 'symbolic ("N")', '--input-shape'])
    expect_error('--input-shape conflicting with a fixed dim', sym, d,
                 ['graph input "x"', 'dimension 1 is 2', 'gives 3'],
                 extra=['--input-shape', 'x=3x3x5x7'])
    expect_error('--input-shape of the wrong rank', sym, d, ['rank 4', 'rank 2'],
                 extra=['--input-shape', 'x=3x2'])
    expect_error('--input-shape naming no input', sym, d, ['"w"', 'not a graph input'],
                 extra=['--input-shape', 'w=4x2x1x1'])
    expect_error('--input-shape garbage', sym, d, ['--input-shape', 'x=1xAx3'],
                 extra=['--input-shape', 'x=1xAx3'])

    # --- masks and losses: comparisons, Where, Trilu, Expand, GatherElements,
    # ReduceSum/Max/Min, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ---
    a, b = rand(3, 4), rand(3, 4)
    ad, bd = f64(a, b)
    check('Less, GreaterOrEqual, Not, And, Equal and Where', model(
        [oh.make_node('Less', ['a', 'b'], ['lt']),
         oh.make_node('GreaterOrEqual', ['a', 'z'], ['ge']),
         oh.make_node('Not', ['ge'], ['neg']),
         oh.make_node('And', ['lt', 'neg'], ['both']),
         oh.make_node('Equal', ['a', 'a'], ['eq']),
         oh.make_node('Where', ['both', 'a', 'b'], ['y'])],
        {'a': a, 'b': b}, ['y', 'eq'], {'z': np.array(0.0, np.float32)}),
        {'a': a, 'b': b}, {'y': (np.where((ad < bd) & ~(ad >= 0), ad, bd), Tol()),
                           'eq': (np.ones((3, 4)), Tol())}, d)
    x = rand(2, 4, 5)
    xd = x.astype(np.float64)
    check('Trilu upper k=1 and lower k=-1 (with Expand)', model(
        [oh.make_node('Trilu', ['x', 'k1'], ['u'], upper=1),
         oh.make_node('Trilu', ['x', 'km'], ['l'], upper=0),
         oh.make_node('Expand', ['c', 'shape'], ['e'])],
        {'x': x}, ['u', 'l', 'e'],
        {'k1': np.array(1, np.int64), 'km': np.array(-1, np.int64), 'c': rand(4, 1),
         'shape': np.array([2, 1, 3], np.int64)}),
        {'x': x}, {'u': (np.triu(xd, 1), Tol()), 'l': (np.tril(xd, -1), Tol())}, d)
    ones = np.ones((6, 6), bool)
    s = rand(6, 6)
    check('a causal mask as PyTorch exports it: Trilu of a constant, Not, Where', model(
        [oh.make_node('Trilu', ['ones'], ['tri'], upper=0),
         oh.make_node('Not', ['tri'], ['masked']),
         oh.make_node('Where', ['masked', 'ninf', 's'], ['y'])],
        {'s': s}, ['y'], {'ones': ones, 'ninf': np.array(-np.inf, np.float32)}),
        {'s': s}, {'y': (np.where(np.tril(ones), s.astype(np.float64), -np.inf), Tol())}, d)
    # Attention as torch.onnx.export writes it (a module computing
    # softmax(q k^T / 8 + masks) v): K transposed, the causal mask from a
    # Trilu of ones, a boolean padding mask input unsqueezed to
    # [B, 1, 1, L], both applied with Where; the compiler fuses it into one
    # attention kernel (on GPU targets) from these ops.
    att_b, att_h, att_l, att_d = 2, 3, 9, 8
    q, k, v = (rand(att_b, att_h, att_l, att_d) for _ in range(3))
    pad = np.ones((att_b, att_l), bool)
    pad[1, 6:] = False
    causal = np.tril(np.ones((att_l, att_l), bool))
    sc = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) * 0.125
    sc = np.where(causal, sc, -np.inf)
    sc = np.where(pad[:, None, None, :], sc, -np.inf)
    p_ = np.exp(sc - sc.max(-1, keepdims=True))
    att = (p_ / p_.sum(-1, keepdims=True)) @ v.astype(np.float64)
    check('attention as exported: Transpose, MatMul, Mul, Trilu mask, padding mask, Where, '
          'Softmax, MatMul', model(
              [oh.make_node('Transpose', ['k'], ['kt'], perm=[0, 1, 3, 2]),
               oh.make_node('MatMul', ['q', 'kt'], ['s0']),
               oh.make_node('Mul', ['s0', 'scale'], ['s1']),
               oh.make_node('Trilu', ['ones'], ['tri'], upper=0),
               oh.make_node('Not', ['tri'], ['future']),
               oh.make_node('Where', ['future', 'ninf', 's1'], ['s2']),
               oh.make_node('Unsqueeze', ['pad', 'axes'], ['pad4']),
               oh.make_node('Not', ['pad4'], ['gone']),
               oh.make_node('Where', ['gone', 'ninf', 's2'], ['s3']),
               oh.make_node('Softmax', ['s3'], ['p'], axis=-1),
               oh.make_node('MatMul', ['p', 'v'], ['o'])],
              {'q': q, 'k': k, 'v': v, 'pad': pad}, ['o'],
              {'scale': np.array(0.125, np.float32), 'ones': np.ones((att_l, att_l), bool),
               'ninf': np.array(-np.inf, np.float32), 'axes': np.array([1, 2], np.int64)}),
          {'q': q, 'k': k, 'v': v, 'pad': pad},
          {'o': (att, lin_tol(np.abs(v).max() * 4, 2 * att_l * att_d))}, d)
    # Attention as PyTorch's scaled_dot_product_attention exports it: Q and
    # K^T each scaled by sqrt(1/sqrt(D)) (computed from a constant), the
    # boolean mask turned into an additive 0/-inf tensor. On a GPU target
    # the scalings move onto the scores: one attention kernel, no kernel
    # scaling Q or K (tcc inspect).
    half = np.float32(np.sqrt(np.float32(1) / np.sqrt(np.float32(att_d))))
    sc = (q * half).astype(np.float64) @ np.swapaxes((k * half).astype(np.float64), -1, -2)
    sc = np.where(pad[:, None, None, :], sc, -np.inf)
    p_ = np.exp(sc - sc.max(-1, keepdims=True))
    att = (p_ / p_.sum(-1, keepdims=True)) @ v.astype(np.float64)
    sdpa = model(
        [oh.make_node('Sqrt', ['dim'], ['sd']),
         oh.make_node('Div', ['one', 'sd'], ['scale']),
         oh.make_node('Sqrt', ['scale'], ['half']),
         oh.make_node('Mul', ['q', 'half'], ['qs']),
         oh.make_node('Transpose', ['k'], ['kt'], perm=[0, 1, 3, 2]),
         oh.make_node('Mul', ['kt', 'half'], ['ks']),
         oh.make_node('MatMul', ['qs', 'ks'], ['s0']),
         oh.make_node('Unsqueeze', ['pad', 'axes'], ['pad4']),
         oh.make_node('Where', ['pad4', 'zero', 'ninf'], ['bias']),
         oh.make_node('Add', ['s0', 'bias'], ['s1']),
         oh.make_node('Softmax', ['s1'], ['p'], axis=-1),
         oh.make_node('MatMul', ['p', 'v'], ['o'])],
        {'q': q, 'k': k, 'v': v, 'pad': pad}, ['o'],
        {'dim': np.array(att_d, np.float32), 'one': np.array(1, np.float32),
         'zero': np.array(0, np.float32), 'ninf': np.array(-np.inf, np.float32),
         'axes': np.array([1, 2], np.int64)})
    check('attention as SDPA exports it: Q and K^T scaled by sqrt(1/sqrt(D)), an additive '
          'mask from a boolean one', sdpa, {'q': q, 'k': k, 'v': v, 'pad': pad},
          {'o': (att, lin_tol(np.abs(v).max() * 4, 2 * att_l * att_d))}, d)
    one_attention_launch(sdpa, 'sdpa_export', ('sm_90a', 'gfx942'),
                         'SDPA-exported attention', d)
    # SDPA with is_causal=True as PyTorch 2's exporter writes it: the scale
    # from Slice(Shape(q)), the mask a Trilu of ones expanded to
    # Concat(Slice(Shape(q)), Slice(Shape(k))), turned additive by Equal and
    # Where. The shape arithmetic folds; one attention launch.
    big = np.iinfo(np.int64)
    sc = (q * half).astype(np.float64) @ np.swapaxes((k * half).astype(np.float64), -1, -2)
    sc = np.where(causal, sc, -np.inf)
    p_ = np.exp(sc - sc.max(-1, keepdims=True))
    att = (p_ / p_.sum(-1, keepdims=True)) @ v.astype(np.float64)
    causal_sdpa = model(
        [oh.make_node('Shape', ['q'], ['qs']),
         oh.make_node('Slice', ['qs', 'm1', 'imax'], ['dl']),
         oh.make_node('Cast', ['dl'], ['dim'], to=TP.FLOAT),
         oh.make_node('Sqrt', ['dim'], ['sd']),
         oh.make_node('Div', ['one', 'sd'], ['scale']),
         oh.make_node('Sqrt', ['scale'], ['half']),
         oh.make_node('Mul', ['q', 'half'], ['qh']),
         oh.make_node('Transpose', ['k'], ['kt'], perm=[0, 1, 3, 2]),
         oh.make_node('Mul', ['kt', 'half'], ['ks']),
         oh.make_node('MatMul', ['qh', 'ks'], ['s0']),
         oh.make_node('Shape', ['k'], ['ks_']),
         oh.make_node('Slice', ['qs', 'm2', 'm1'], ['lq']),
         oh.make_node('Slice', ['ks_', 'm2', 'm1'], ['lk']),
         oh.make_node('Concat', ['lq', 'lk'], ['size'], axis=0),
         oh.make_node('Expand', ['one', 'size'], ['ones']),
         oh.make_node('Trilu', ['ones'], ['tri'], upper=0),
         oh.make_node('Equal', ['tri', 'zero'], ['off']),
         oh.make_node('Where', ['off', 'ninf', 'zero'], ['bias']),
         oh.make_node('Add', ['s0', 'bias'], ['s1']),
         oh.make_node('Softmax', ['s1'], ['p'], axis=-1),
         oh.make_node('MatMul', ['p', 'v'], ['o'])],
        {'q': q, 'k': k, 'v': v}, ['o'],
        {'one': np.array(1, np.float32), 'zero': np.array(0, np.float32),
         'ninf': np.array(-np.inf, np.float32), 'm1': np.array([-1], np.int64),
         'm2': np.array([-2], np.int64), 'imax': np.array([big.max], np.int64)}, opset=17)
    check('attention as SDPA is_causal exports it (PyTorch 2): shape arithmetic by Slice, '
          'the mask a Trilu of expanded ones', causal_sdpa, {'q': q, 'k': k, 'v': v},
          {'o': (att, lin_tol(np.abs(v).max() * 4, 2 * att_l * att_d))}, d)
    one_attention_launch(causal_sdpa, 'sdpa_causal_export', ('sm_90a', 'sm_90', 'gfx942'),
                         'SDPA is_causal-exported attention', d)
    # UINT8 (PyTorch 1.x's masks): the Annotated Transformer's
    # subsequent_mask, triu(ones, 1).type(torch.uint8) == 0, applied with
    # Where; a Cast to UINT8 wraps modulo 256 (a float's integer part
    # first); arithmetic on UINT8 and a UINT8 graph output are refused.
    sc = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) * 0.125
    sc = np.where(causal, sc, -1e9)
    p_ = np.exp(sc - sc.max(-1, keepdims=True))
    att = (p_ / p_.sum(-1, keepdims=True)) @ v.astype(np.float64)
    u8mask = model(
        [oh.make_node('Trilu', ['ones', 'one'], ['tri'], upper=1),
         oh.make_node('Cast', ['tri'], ['tu8'], to=TP.UINT8),
         oh.make_node('Equal', ['tu8', 'zero8'], ['keep']),
         oh.make_node('Unsqueeze', ['keep', 'ax01'], ['keep4']),
         oh.make_node('Transpose', ['k'], ['kt'], perm=[0, 1, 3, 2]),
         oh.make_node('MatMul', ['q', 'kt'], ['s0']),
         oh.make_node('Mul', ['s0', 'scale'], ['s1']),
         oh.make_node('Where', ['keep4', 's1', 'big'], ['s2']),
         oh.make_node('Softmax', ['s2'], ['p'], axis=-1),
         oh.make_node('MatMul', ['p', 'v'], ['o'])],
        {'q': q, 'k': k, 'v': v}, ['o'],
        [nh.from_array(np.ones((att_l, att_l), np.float32), 'ones'),
         nh.from_array(np.array(1, np.int64), 'one'),
         oh.make_tensor('zero8', TP.UINT8, [], [0]),
         nh.from_array(np.array([0, 1], np.int64), 'ax01'),
         nh.from_array(np.array(0.125, np.float32), 'scale'),
         nh.from_array(np.array(-1e9, np.float32), 'big')])
    check('UINT8 mask (the Annotated Transformer: triu(ones, 1) as uint8, == 0, Where)',
          u8mask, {'q': q, 'k': k, 'v': v},
          {'o': (att, lin_tol(np.abs(v).max() * 4, 2 * att_l * att_d))}, d)
    xs8 = np.array([-1.5, 300.7, 255.0, 3.2, -256.9, 0.0], np.float32)
    check('Cast to UINT8 wraps modulo 256 (floats truncated first)', model(
        [oh.make_node('Cast', ['x'], ['u'], to=TP.UINT8),
         oh.make_node('Cast', ['u'], ['y'], to=TP.FLOAT)], {'x': xs8}, ['y']),
        {'x': xs8}, {'y': (np.trunc(xs8.astype(np.float64)) % 256, Tol())}, d)
    expect_error('arithmetic on UINT8', model(
        [oh.make_node('Cast', ['x'], ['u'], to=TP.UINT8),
         oh.make_node('Add', ['u', 'u'], ['w']),
         oh.make_node('Cast', ['w'], ['y'], to=TP.FLOAT)], {'x': xs8}, ['y']),
        d, ['(Add)', 'UINT8 operands'])
    expect_error('UINT8 graph output', model(
        [oh.make_node('Cast', ['x'], ['y'], to=TP.UINT8)], {'x': xs8}, ['y']),
        d, ['"y" is UINT8'])
    # nn.MultiheadAttention exported by the installed PyTorch (if any): its
    # packed projection cut at Slice bounds computed by Div from Shape, a
    # causal float mask; against PyTorch on the CPU in float64.
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.manual_seed(int(rng.integers(2**31)))
        mha = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
        xm = torch.randn(2, 11, 32)
        causal_m = torch.triu(torch.full((11, 11), float('-inf')), 1)

        class SelfAttention(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = mha

            def forward(self, x, m):
                return self.mha(x, x, x, attn_mask=m, need_weights=False)[0]

        path = os.path.join(d, 'mha_export.onnx')
        with torch.no_grad():
            torch.onnx.export(SelfAttention(), (xm, causal_m), path, input_names=['x', 'm'],
                              output_names=['y'], opset_version=17)
        with torch.no_grad():
            mha64 = mha.double()
            ref = mha64(xm.double(), xm.double(), xm.double(), attn_mask=causal_m.double(),
                        need_weights=False)[0].numpy()
        absref = np.abs(ref).max() + np.abs(xm.numpy()).max() * 32
        check('nn.MultiheadAttention as PyTorch exports it (Slice bounds from Div of Shape)',
              onnx.load(path), {'x': xm.numpy(), 'm': causal_m.numpy()},
              {'y': (ref, lin_tol(absref, 4 * 32 + 11))}, d)
        # On the GPU its heads, [L, B·H, D] from the packed projection,
        # are read over [B, H, L, D] (tcc-batch-reshapes) as views of the
        # projection: no copy between the projections and attention.
        bundle = os.path.join(d, 'mha_export.tccb')
        rc, _, err = L.run_tcc([TCC, 'compile', path, '--target', 'sm_90a', '-o', bundle])
        launched = []
        if rc == 0:
            rc, out, err = L.run_tcc([TCC, 'inspect', bundle])
            info = json.loads(out) if rc == 0 else {'kernels': [], 'launches': []}
            launched = [info['kernels'][la['kernel']]['symbol'] for la in info['launches']]
        kinds = ['attn' if '_attn' in s_ else 'matmul' if '_matmul' in s_ else 'other'
                 for s_ in launched]
        report(kinds == ['other', 'matmul', 'attn', 'matmul', 'other'],
               'nn.MultiheadAttention on sm_90a: a transpose, the projection, attention '
               'reading its views, the output projection, a transpose',
               'exit %d, launches %s: %s' % (rc, launched, L.first_line(err)))
    # Einsum: matmul-like equations of one or two operands (batch, free,
    # contracted and summed-away indices, an ellipsis, implicit output),
    # checked against np.einsum; attention written with einsum (K read as
    # [B, L, H, D], the layout of a projection) is one attention launch.
    ea, eb = rand(2, 3, 4, 5), rand(2, 3, 6, 5)
    ec, ed = rand(4, 7), rand(7, 3)
    ee = rand(2, 6, 3, 5)
    f64e = lambda eq, *xs: np.einsum(eq, *[x.astype(np.float64) for x in xs])  # noqa: E731
    einsums = [('bhid,bhjd->bhij', (ea, eb)), ('ij,jk', (ec, ed)), ('ij,jk->ki', (ec, ed)),
               ('...id,...jd->...ij', (ea, eb)), ('bhid->bdhi', (ea,)), ('ij->i', (ec,)),
               ('i,j->ij', (ec[0], ed[:, 0])), ('bhid,bjhd->bhij', (ea, ee)),
               ('bhid,bhjd->bh', (ea, eb)), ('bhik,bhjd->bhij', (ea, eb))]
    for k, (eq, xs) in enumerate(einsums):
        names = ['x%d' % i for i in range(len(xs))]
        ref = f64e(eq, *xs)
        absref = np.einsum(eq, *[np.abs(x.astype(np.float64)) for x in xs])
        terms = int(np.max(np.einsum(eq, *[np.ones(x.shape) for x in xs])))
        check('Einsum %s' % eq, model(
            [oh.make_node('Einsum', names, ['y'], equation=eq)],
            dict(zip(names, xs)), ['y'], opset=13),
            dict(zip(names, xs)), {'y': (ref, lin_tol(absref, terms + 8))}, d)
    expect_error('Einsum with a diagonal', model(
        [oh.make_node('Einsum', ['x'], ['y'], equation='ii->i')], {'x': rand(3, 3)}, ['y']),
        d, ['(Einsum)', "index 'i' repeats"])
    expect_error('Einsum of three operands', model(
        [oh.make_node('Einsum', ['x', 'y', 'z'], ['o'], equation='i,i,i->i')],
        {'x': rand(3), 'y': rand(3), 'z': rand(3)}, ['o']),
        d, ['(Einsum)', '3 operands'])
    eq_k = rand(att_b, att_l, att_h, att_d)
    sc = np.einsum('bhid,bjhd->bhij', q.astype(np.float64), eq_k.astype(np.float64)) * 0.125
    p_ = np.exp(sc - sc.max(-1, keepdims=True))
    att = (p_ / p_.sum(-1, keepdims=True)) @ v.astype(np.float64)
    ein = model(
        [oh.make_node('Einsum', ['q', 'k'], ['s0'], equation='bhid,bjhd->bhij'),
         oh.make_node('Mul', ['s0', 'scale'], ['s1']),
         oh.make_node('Softmax', ['s1'], ['p'], axis=-1),
         oh.make_node('Einsum', ['p', 'v'], ['o'], equation='bhij,bhjd->bhid')],
        {'q': q, 'k': eq_k, 'v': v}, ['o'], {'scale': np.array(0.125, np.float32)}, opset=13)
    check('attention written with Einsum (K [B, L, H, D])', ein, {'q': q, 'k': eq_k, 'v': v},
          {'o': (att, lin_tol(np.abs(v).max() * 4, 2 * att_l * att_d))}, d)
    one_attention_launch(ein, 'einsum_attention', ('sm_90a', 'sm_90', 'gfx942'),
                         'attention written with Einsum', d)
    # GPT-2's attention as exported: the fused projection's output Split in
    # three, each reshaped to heads and transposed (K to [B, H, D, L]), the
    # result transposed back and merged. On a GPU target the slices, reshapes
    # and transposes are views the attention kernel reads through: one launch.
    gb, gl, gh, gd = 2, 33, 2, 16
    qkv = rand(gb, gl, 3 * gh * gd)
    parts = np.split(qkv.astype(np.float64), 3, axis=2)
    qh, kh, vh = (np.swapaxes(t.reshape(gb, gl, gh, gd), 1, 2) for t in parts)
    sc = qh @ np.swapaxes(kh, -1, -2) * 0.25
    p_ = np.exp(sc - sc.max(-1, keepdims=True))
    gpt = np.swapaxes((p_ / p_.sum(-1, keepdims=True)) @ vh, 1, 2).reshape(gb, gl, gh * gd)
    heads = np.array([gb, gl, gh, gd], np.int64)
    gpt2 = model(
        [oh.make_node('Split', ['qkv', 'sizes'], ['q0', 'k0', 'v0'], axis=2),
         oh.make_node('Reshape', ['q0', 'heads'], ['q1']),
         oh.make_node('Reshape', ['k0', 'heads'], ['k1']),
         oh.make_node('Reshape', ['v0', 'heads'], ['v1']),
         oh.make_node('Transpose', ['q1'], ['qh'], perm=[0, 2, 1, 3]),
         oh.make_node('Transpose', ['k1'], ['kt'], perm=[0, 2, 3, 1]),
         oh.make_node('Transpose', ['v1'], ['vh'], perm=[0, 2, 1, 3]),
         oh.make_node('MatMul', ['qh', 'kt'], ['s0']),
         oh.make_node('Mul', ['s0', 'scale'], ['s1']),
         oh.make_node('Softmax', ['s1'], ['p'], axis=-1),
         oh.make_node('MatMul', ['p', 'vh'], ['oh']),
         oh.make_node('Transpose', ['oh'], ['o1'], perm=[0, 2, 1, 3]),
         oh.make_node('Reshape', ['o1', 'merged'], ['o'])],
        {'qkv': qkv}, ['o'],
        {'sizes': np.array([gh * gd] * 3, np.int64), 'heads': heads,
         'scale': np.array(0.25, np.float32),
         'merged': np.array([gb, gl, gh * gd], np.int64)})
    check('attention as GPT-2 exports it: a fused QKV projection Split in three',
          gpt2, {'qkv': qkv}, {'o': (gpt, lin_tol(np.abs(qkv).max() * 4, 2 * gl * gd))}, d)
    one_attention_launch(gpt2, 'gpt2_attention', ('sm_90a', 'sm_90', 'gfx942'),
                         'GPT-2-exported attention (Split QKV)', d)
    # GQA as Hugging Face writes it (repeat_kv: K and V unsqueezed, expanded
    # over 2 query heads each and reshaped; then k.transpose(2, 3)), the
    # causal mask a full(-inf).triu(1) constant added, softmax in f32, as
    # torch.onnx.export (PyTorch 1.13) writes it: Expand's shape computed
    # by ConstantOfShape, Mul, Equal and Where on constants (folded), the
    # mask a Trilu of a constant. One attention launch on GPU targets.
    ab, hkv, grp, al, ad = 1, 2, 2, 12, 8
    q, k, v = rand(ab, hkv * grp, al, ad), rand(ab, hkv, al, ad), rand(ab, hkv, al, ad)
    kr, vr = (np.repeat(t.astype(np.float64), grp, axis=1) for t in (k, v))
    sc = q.astype(np.float64) @ np.swapaxes(kr, -1, -2) / np.sqrt(ad)
    sc = sc + np.triu(np.full((al, al), -np.inf), 1)
    p_ = np.exp(sc - sc.max(-1, keepdims=True))
    gqa_ref = (p_ / p_.sum(-1, keepdims=True)) @ vr
    nodes, inits = [], {'ax2': np.array([2], np.int64), 'five': np.array([5], np.int64),
                        'minus1': np.array(-1, np.int64),
                        'want': np.array([ab, hkv, grp, al, ad], np.int64),
                        'merged': np.array([ab, hkv * grp, al, ad], np.int64),
                        'dim': np.array(ad, np.float32), 'half': np.array(0.5, np.float32),
                        'ninf': np.full((al, al), -np.inf, np.float32),
                        'diag': np.array(1, np.int64)}
    for t in 'kv':
        nodes += [oh.make_node('Unsqueeze', [t, 'ax2'], [t + '5']),
                  oh.make_node('ConstantOfShape', ['five'], [t + 'ones'],
                               value=nh.from_array(np.array([1], np.int64))),
                  oh.make_node('Mul', [t + 'ones', 'minus1'], [t + 'neg']),
                  oh.make_node('Equal', ['want', t + 'neg'], [t + 'eq']),
                  oh.make_node('Where', [t + 'eq', t + 'ones', 'want'], [t + 'shape']),
                  oh.make_node('Expand', [t + '5', t + 'shape'], [t + 'x']),
                  oh.make_node('Reshape', [t + 'x', 'merged'], [t + 'r'])]
    nodes += [oh.make_node('Transpose', ['kr'], ['kt'], perm=[0, 1, 3, 2]),
              oh.make_node('MatMul', ['q', 'kt'], ['s0']),
              oh.make_node('Pow', ['dim', 'half'], ['sd']),
              oh.make_node('Div', ['s0', 'sd'], ['s1']),
              oh.make_node('Trilu', ['ninf', 'diag'], ['tri'], upper=1),
              oh.make_node('Add', ['s1', 'tri'], ['s2']),
              oh.make_node('Softmax', ['s2'], ['p'], axis=-1),
              oh.make_node('MatMul', ['p', 'vr'], ['o'])]
    hf_gqa = model(nodes, {'q': q, 'k': k, 'v': v}, ['o'], inits, opset=14)
    check('GQA as PyTorch 1.13 exports repeat_kv: ConstantOfShape, Equal, Where folded into '
          "Expand's shape; a Trilu of a -inf constant", hf_gqa, {'q': q, 'k': k, 'v': v},
          {'o': (gqa_ref, lin_tol(np.abs(v).max() * 4, 2 * al * ad))}, d)
    one_attention_launch(hf_gqa, 'hf_gqa_export', ('sm_90a', 'sm_90', 'gfx942'),
                         'GQA exported as repeat_kv, K transposed after the repeat', d)
    # Attention over flattened heads as BART's torch.bmm code exports it: Q
    # scaled after its projection, each of Q, K, V viewed [B, L, H, D],
    # transposed and merged to [B*H, L, D]; bmm(q, k.transpose(1, 2)); the
    # scores viewed [B, H, L, S] to add the padding mask (finfo.min) and
    # merged back for the softmax; bmm with V, viewed back, heads merged.
    # tcc-batch-reshapes leaves one chain over [B, H]: one attention launch.
    bb, bh, bl, bd = 2, 3, 10, 8
    qp, kp, vp = (rand(bb, bl, bh * bd) for _ in range(3))
    keep = rng.random((bb, 1, 1, bl)) < 0.7
    keep[..., 0] = True
    amask = np.broadcast_to(np.where(keep, 0, np.finfo(np.float32).min),
                            (bb, 1, bl, bl)).astype(np.float32)
    scaling = np.float32(bd ** -0.5)

    def heads(t):
        return t.astype(np.float64).reshape(bb, bl, bh, bd).transpose(0, 2, 1, 3)
    sc = heads(qp * scaling) @ np.swapaxes(heads(kp), -1, -2) + amask
    p_ = np.exp(sc - sc.max(-1, keepdims=True))
    bart_ref = ((p_ / p_.sum(-1, keepdims=True)) @ heads(vp)).transpose(0, 2, 1, 3).reshape(
        bb, bl, bh * bd)
    nodes = [oh.make_node('Mul', ['qp', 'scaling'], ['qs'])]
    for t, src in (('q', 'qs'), ('k', 'kp'), ('v', 'vp')):
        nodes += [oh.make_node('Reshape', [src, 'split'], [t + '4']),
                  oh.make_node('Transpose', [t + '4'], [t + 'h'], perm=[0, 2, 1, 3]),
                  oh.make_node('Reshape', [t + 'h', 'flat'], [t + '3'])]
    nodes += [oh.make_node('Transpose', ['k3'], ['kt'], perm=[0, 2, 1]),
              oh.make_node('MatMul', ['q3', 'kt'], ['s']),
              oh.make_node('Reshape', ['s', 'scores4'], ['s4']),
              oh.make_node('Add', ['s4', 'mask'], ['sm']),
              oh.make_node('Reshape', ['sm', 'scores3'], ['s3']),
              oh.make_node('Softmax', ['s3'], ['p'], axis=-1),
              oh.make_node('MatMul', ['p', 'v3'], ['o3']),
              oh.make_node('Reshape', ['o3', 'out4'], ['o4']),
              oh.make_node('Transpose', ['o4'], ['ot'], perm=[0, 2, 1, 3]),
              oh.make_node('Reshape', ['ot', 'merged'], ['o'])]
    bart = model(nodes, {'qp': qp, 'kp': kp, 'vp': vp, 'mask': amask}, ['o'], {
        'scaling': np.array(scaling, np.float32),
        'split': np.array([bb, bl, bh, bd], np.int64),
        'flat': np.array([bb * bh, bl, bd], np.int64),
        'scores4': np.array([bb, bh, bl, bl], np.int64),
        'scores3': np.array([bb * bh, bl, bl], np.int64),
        'out4': np.array([bb, bh, bl, bd], np.int64),
        'merged': np.array([bb, bl, bh * bd], np.int64)}, opset=14)
    check('attention over flattened heads (BART: torch.bmm on [B*H, L, D], the scores viewed '
          '[B, H, L, S] for the mask)', bart, {'qp': qp, 'kp': kp, 'vp': vp, 'mask': amask},
          {'o': (bart_ref, lin_tol(np.abs(vp).max() * 4, 2 * bl * bd))}, d)
    one_attention_launch(bart, 'bart_flat_heads', ('sm_90a', 'sm_90', 'gfx942'),
                         'attention over flattened heads (BART)', d)
    # GPT-2's attention as torch.onnx.export (PyTorch 1.13) folds it: the
    # causal buffer's slice an initializer [1, 1, L, L] of bools, applied
    # with Where against finfo(f32).min; the scale a division by
    # ConstantOfShape's zeros plus Pow(64, 0.5). The triangle is read as the
    # positions it is (a linear mask whose tiles the kernel skips), and an
    # additive triu(-inf, 1) initializer [L, L] so too; one attention launch.
    gl2 = 40
    q, k, v = (rand(1, 2, gl2, 64) for _ in range(3))
    sc = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) / 8
    tri = np.tril(np.ones((gl2, gl2), bool))
    for name, masked, mask_nodes, mask_init in (
            ('gpt2_export_causal', np.where(tri, sc, np.finfo(np.float32).min),
             [oh.make_node('Where', ['causal', 's1', 'fmin'], ['s2'])],
             {'causal': tri.reshape(1, 1, gl2, gl2),
              'fmin': np.array(np.finfo(np.float32).min, np.float32)}),
            ('additive_triu_export', np.where(tri, sc, -np.inf),
             [oh.make_node('Add', ['s1', 'triu'], ['s2'])],
             {'triu': np.triu(np.full((gl2, gl2), -np.inf, np.float32), 1)})):
        p_ = np.exp(masked - masked.max(-1, keepdims=True))
        ref = (p_ / p_.sum(-1, keepdims=True)) @ v.astype(np.float64)
        m2 = model(
            [oh.make_node('Transpose', ['k'], ['kt'], perm=[0, 1, 3, 2]),
             oh.make_node('MatMul', ['q', 'kt'], ['s0']),
             oh.make_node('Pow', ['d', 'half'], ['sd']),
             oh.make_node('ConstantOfShape', ['none'], ['zero']),
             oh.make_node('Add', ['zero', 'sd'], ['div']),
             oh.make_node('Div', ['s0', 'div'], ['s1'])] + mask_nodes + [
             oh.make_node('Softmax', ['s2'], ['p'], axis=-1),
             oh.make_node('MatMul', ['p', 'v'], ['o'])],
            {'q': q, 'k': k, 'v': v}, ['o'],
            dict({'d': np.array(64, np.float32), 'half': np.array(0.5, np.float32),
                  'none': np.zeros(0, np.int64)}, **mask_init), opset=14)
        check('%s: a triangle initializer as positions' % name, m2, {'q': q, 'k': k, 'v': v},
              {'o': (ref, lin_tol(np.abs(v).max() * 4, 2 * gl2 * 64))}, d)
        one_attention_launch(m2, name, ('sm_90a', 'gfx942'), name, d)
        path = os.path.join(d, name + '.onnx')
        mlir = os.path.join(d, name + '.mlir')
        rc, _, err = L.run_tcc([TCC, 'compile', path, '--target', 'sm_90a', '--emit', 'mlir',
                                '-o', mlir])
        out = open(mlir).read() if rc == 0 else ''
        report(rc == 0 and 'mask = array<i64: 1, -1, 0>' in out and 'scale = 1.25' in out,
               '%s: the causal mask is linear constraints and the scale folded' % name,
               'exit %d: %s' % (rc, L.first_line(err)))
    # ConstantOfShape as a tensor (a float fill, and the default 0).
    check('ConstantOfShape: a filled tensor and the default zeros', model(
        [oh.make_node('ConstantOfShape', ['shape'], ['c'],
                      value=nh.from_array(np.array([-2.5], np.float32))),
         oh.make_node('ConstantOfShape', ['shape'], ['z']),
         oh.make_node('Add', ['x', 'c'], ['y']), oh.make_node('Add', ['x', 'z'], ['w'])],
        {'x': x}, ['y', 'w'], {'shape': np.array(x.shape, np.int64)}),
        {'x': x}, {'y': ((x + np.float32(-2.5)).astype(np.float64), Tol()), 'w': (xd, Tol())}, d)
    idx = rng.integers(-4, 4, (2, 3, 5)).astype(np.int64)
    check('GatherElements axis=1, negative indices', model(
        [oh.make_node('GatherElements', ['x', 'i'], ['y'], axis=1)], {'x': x, 'i': idx}, ['y']),
        {'x': x, 'i': idx},
        {'y': (np.take_along_axis(xd, np.where(idx < 0, idx + 4, idx), axis=1), Tol())}, d)
    bad = idx.copy()
    bad[1, 2, 3] = 4
    rc, err, _ = run_model('GatherElements out of range', model(
        [oh.make_node('GatherElements', ['x', 'i'], ['y'], axis=1, name='ge')],
        {'x': x, 'i': bad}, ['y']), {'x': x, 'i': bad}, d)
    report(rc == 1 and 'index out of range in node 0 "ge" (GatherElements)' in err,
           'GatherElements out of range fails the run', 'exit %d: %s' % (rc, err))
    sum_tol = elem_tol(16, np.abs(xd).sum(axis=(0, 2)))
    check('ReduceSum axes input (opset 13), ReduceMax attribute, ReduceMin input (opset 18)',
          model([oh.make_node('ReduceSum', ['x', 'ax'], ['s'], keepdims=0),
                 oh.make_node('ReduceMax', ['x', 'ax2'], ['mx']),
                 oh.make_node('ReduceMin', ['x'], ['mn'], keepdims=0)],
                {'x': x}, ['s', 'mx', 'mn'],
                {'ax': np.array([0, 2], np.int64), 'ax2': np.array([-1], np.int64)}, opset=18),
          {'x': x}, {'s': (xd.sum(axis=(0, 2)), sum_tol),
                     'mx': (xd.max(axis=-1, keepdims=True), Tol()), 'mn': (xd.min(), Tol())}, d)

    nll_ref = L.nll_loss

    def log_softmax(v):
        v = v - v.max(axis=1, keepdims=True)
        return v - np.log(np.exp(v).sum(axis=1, keepdims=True))
    for shape, reduction, weighted, ignore in (((9, 7), 'mean', False, None),
                                               ((9, 7), 'mean', True, 2),
                                               ((9, 7), 'mean', False, -100),
                                               ((4, 5, 3), 'none', True, None),
                                               ((4, 5, 3), 'sum', False, 1)):
        xs = rand(*shape) * 3
        t = rng.integers(0, shape[1], (shape[0],) + shape[2:]).astype(np.int64)
        if ignore is not None and ignore >= 0:
            t.flat[::3] = ignore
        w = (rng.random(shape[1]) + 0.5).astype(np.float32)
        lp = log_softmax(xs.astype(np.float64))
        ref = nll_ref(lp, t, w if weighted else None, ignore, reduction)
        attrs = {'reduction': reduction}
        if ignore is not None:
            attrs['ignore_index'] = ignore
        ins = ['x', 't'] + (['w'] if weighted else [])
        tol = elem_tol(64, np.abs(lp).max() + 1 + np.abs(ref))
        what = '%s %s%s%s' % (list(shape), reduction, ', weights' if weighted else '',
                              '' if ignore is None else ', ignore_index %d' % ignore)
        check('SoftmaxCrossEntropyLoss ' + what + ' (and its log_prob output)', model(
            [oh.make_node('SoftmaxCrossEntropyLoss', ins, ['y', 'lp'], **attrs)],
            {'x': xs, 't': t}, ['y', 'lp'], {'w': w} if weighted else {}),
            {'x': xs, 't': t}, {'y': (ref, tol), 'lp': (lp, elem_tol(16, np.abs(xs).max()))}, d)
        check('NegativeLogLikelihoodLoss ' + what, model(
            [oh.make_node('NegativeLogLikelihoodLoss', ['x'] + ins[1:], ['y'], **attrs)],
            {'x': lp.astype(np.float32), 't': t}, ['y'], {'w': w} if weighted else {}),
            {'x': lp.astype(np.float32), 't': t},
            {'y': (nll_ref(lp.astype(np.float32).astype(np.float64), t,
                           w if weighted else None, ignore, reduction), tol)}, d)
    # [N, C, d] scores with the loss alone as output: taken as [N·d, C] rows
    # (transposed, the class axis last).
    xs = rand(4, 5, 3) * 3
    t = rng.integers(0, 5, (4, 3)).astype(np.int64)
    t.flat[::4] = -100
    w = (rng.random(5) + 0.5).astype(np.float32)
    lp = log_softmax(xs.astype(np.float64))
    for weighted in (False, True):
        ref = nll_ref(lp, t, w if weighted else None, -100, 'mean')
        check('SoftmaxCrossEntropyLoss [4, 5, 3] mean, ignore_index -100%s (the loss alone)' % (
            ', weights' if weighted else ''), model(
            [oh.make_node('SoftmaxCrossEntropyLoss', ['x', 't'] + (['w'] if weighted else []),
                          ['y'], ignore_index=-100)],
            {'x': xs, 't': t}, ['y'], {'w': w} if weighted else {}),
            {'x': xs, 't': t}, {'y': (ref, elem_tol(64, np.abs(lp).max() + 1 + abs(ref)))}, d)
    # f16 with weights: the losses' sum (about 2e5) overflows f16, their
    # weighted mean does not; the importer sums in f32.
    xs = (rand(20000, 10) * 8).astype(np.float16)
    t = rng.integers(0, 10, (20000,)).astype(np.int64)
    w = (rng.random(10) + 0.5).astype(np.float16)
    ref = nll_ref(log_softmax(xs.astype(np.float64)), t, w)
    check('SoftmaxCrossEntropyLoss f16 [20000, 10] weighted mean (sums past f16\'s range)',
          model([oh.make_node('SoftmaxCrossEntropyLoss', ['x', 't', 'w'], ['y'])],
                {'x': xs, 't': t}, ['y'], {'w': w}),
          {'x': xs, 't': t}, {'y': (ref, Tol(2.0**-8, 2.0**-8))}, d)
    t = rng.integers(0, 7, (9,)).astype(np.int64)
    t[4] = 7
    xs = rand(9, 7)
    rc, err, _ = run_model('SoftmaxCrossEntropyLoss target out of range', model(
        [oh.make_node('SoftmaxCrossEntropyLoss', ['x', 't'], ['y'], name='ce')],
        {'x': xs, 't': t}, ['y']), {'x': xs, 't': t}, d)
    report(rc == 1 and 'index out of range in node 0 "ce" (SoftmaxCrossEntropyLoss)' in err,
           'SoftmaxCrossEntropyLoss target out of range fails the run', 'exit %d: %s' % (rc, err))
    expect_error('loss target of the wrong shape', model(
        [oh.make_node('SoftmaxCrossEntropyLoss', ['x', 't'], ['y'], name='ce')],
        {'x': rand(9, 7), 't': t[:5]}, ['y']), d,
        ['node 0 "ce" (SoftmaxCrossEntropyLoss)', "the target's shape [5] must be [9]"])
    expect_error('loss reduction unknown', model(
        [oh.make_node('NegativeLogLikelihoodLoss', ['x', 't'], ['y'], reduction='avg')],
        {'x': rand(9, 7), 't': t}, ['y']), d,
        ['(NegativeLogLikelihoodLoss)', 'reduction must be mean, sum or none, got "avg"'])

    # --- malformed models ---
    good = model([oh.make_node('Relu', ['x'], ['y'], name='act')], {'x': rand(2, 3)}, ['y'])
    data = good.SerializeToString()
    with open(os.path.join(d, 'trunc.onnx'), 'wb') as f:
        f.write(data[:len(data) * 2 // 3])
    expect_error('truncated protobuf', os.path.join(d, 'trunc.onnx'), d,
                 ['not a valid ONNX model'])
    with open(os.path.join(d, 'garbage.onnx'), 'wb') as f:
        f.write(bytes(rng.integers(0, 256, 300, dtype=np.uint8)) + b'\xff' * 9)
    expect_error('garbage bytes', os.path.join(d, 'garbage.onnx'), d, ['not a valid ONNX model'])
    expect_error('missing initializer', model(
        [oh.make_node('Conv', ['x', 'w'], ['y'], name='conv1')], {'x': rand(1, 3, 4, 4)}, ['y']),
        d, ['node 0 "conv1" (Conv)', 'input 1 "w"', 'not defined'])
    expect_error('dangling input (defined nowhere)', model(
        [oh.make_node('Relu', ['x'], ['r']), oh.make_node('Add', ['r', 'nope'], ['y'])],
        {'x': rand(3)}, ['y']), d, ['node 1 (Add)', 'input 1 "nope"', 'not defined'])
    expect_error('input used before its node', model(
        [oh.make_node('Relu', ['t'], ['y']), oh.make_node('Neg', ['x'], ['t'])],
        {'x': rand(3)}, ['y']), d,
        ['node 0 (Relu)', '"t" is produced by node 1 (Neg), which comes later',
         'topological order'])
    expect_error('two-node cycle', model(
        [oh.make_node('Add', ['x', 'b'], ['a'], name='n_add'),
         oh.make_node('Relu', ['a'], ['b'], name='n_relu')], {'x': rand(3)}, ['b']), d,
        ['node 0 "n_add" (Add)', 'input 1 "b" is produced by node 1 "n_relu" (Relu)', 'cycle'])
    expect_error('node reading its own output', model(
        [oh.make_node('Mul', ['x', 'm'], ['m'], name='loop')], {'x': rand(3)}, ['m']), d,
        ['node 0 "loop" (Mul)', '"m" is produced by this node itself', 'cycle'])
    expect_error('bad attribute type', model(
        [oh.make_node('Conv', ['x', 'w'], ['y'], name='c', group=1.0)], {'x': rand(1, 3, 4, 4)},
        ['y'], {'w': rand(2, 3, 1, 1)}), d,
        ['node 0 "c" (Conv)', 'attribute "group" must be INT, got FLOAT'])
    expect_error('unsupported op', model(
        [oh.make_node('Relu', ['x'], ['r']), oh.make_node('Celu', ['r'], ['y'], name='odd')],
        {'x': rand(3)}, ['y']), d, ['node 1 "odd" (Celu)', 'unsupported op'])
    expect_error('unsupported attribute', model(
        [oh.make_node('Relu', ['x'], ['y'], name='r', alpha=0.1)], {'x': rand(3)}, ['y']), d,
        ['node 0 "r" (Relu)', 'attribute "alpha" is not supported'])
    bad_dtype = oh.make_model(oh.make_graph(
        [oh.make_node('Relu', ['x'], ['y'])], 'g', [vi('x', (2,), TP.UINT8)],
        [vi('y', None, TP.UINT8)]), opset_imports=[oh.make_opsetid('', 13)])
    expect_error('unsupported dtype', bad_dtype, d, ['graph input "x"', 'unsupported dtype UINT8'])
    expect_error('operands that do not broadcast', model(
        [oh.make_node('Add', ['a', 'b'], ['y'], name='sum')], {'a': rand(2, 3), 'b': rand(4)},
        ['y']), d, ['node 0 "sum" (Add)', 'broadcast'])
    expect_error('MaxPool indices output', model(
        [oh.make_node('MaxPool', ['x'], ['y', 'i'], kernel_shape=[2, 2])],
        {'x': rand(1, 1, 4, 4)}, ['y']), d, ['(MaxPool)', 'output 1', 'not supported'])
    expect_error('computed Reshape shape', model(
        [oh.make_node('Reshape', ['x', 's'], ['y'])], {'x': rand(6), 's': rand(2)}, ['y']), d,
        ['(Reshape)', 'must be a constant'])
    expect_error('opset 11', model([oh.make_node('Relu', ['x'], ['y'])], {'x': rand(3)}, ['y'],
                                   opset=11), d, ['opset 11', '13 to 18'])
    bad_raw = nh.from_array(rand(2, 3), 'w')
    bad_raw.raw_data = bad_raw.raw_data[:-4]
    expect_error('initializer raw_data of the wrong size', model(
        [oh.make_node('Add', ['x', 'w'], ['y'])], {'x': rand(2, 3)}, ['y'], [bad_raw]), d,
        ['initializer "w"', 'raw_data holds 20 bytes, expected 24'])

print('%d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
