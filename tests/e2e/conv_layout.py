#!/usr/bin/env python3
"""Channels-last convolutions (tcc-conv-layout) and batch-norm folding, on the
host, against NumPy.

A small CNN with every op the layout rules move transposes through (conv with
bias, batch norm folded into it, a grouped conv, relu, max pool with ceil_mode, a residual add,
a depthwise conv, clamp, 1x1 and dilated convs, hardswish and sigmoid written
with scalar constants, concat on channels, a batch norm with no conv before it,
avg pool without the padding in the divisor, a squeeze-excite style multiply by
a [N, C, 1, 1] tensor, global average pool, flatten, linear; avg pool with
ceil_mode and the padding in the divisor), odd sizes and asymmetric pads,
in f32 and f16, compiled with --conv-layout=nhwc and --conv-layout=nchw. Both
must match the float64 reference; the nhwc compile must keep transposes at the
graph's edges only: after the input, before the feature-map outputs, and on
the weights (a computation on params).

Tolerance: tcc rounds every op's result to the model's dtype and folds batch
norm into the weights (one rounding of w * s instead of one of the batch
norm's result), so it differs from the exact (float64) result by the rounding
of some 15 ops in sequence. The reference is computed twice, exactly and with
each op's result rounded to the dtype; tcc may be off by twice their distance
(where it rounds differs) plus 8 ulps of the dtype relative to the output's
largest magnitude (summation order, the folded weights). A wrong layout or a
dropped batch norm is off by O(1) of the output's scale.

usage: conv_layout.py --tcc TCC
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2elib as L  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument('--tcc', required=True)
args = ap.parse_args()

results = []


def report(name, ok, detail=''):
    results.append(ok)
    print('%s %s%s' % ('PASS' if ok else 'FAIL', name, (': ' + detail) if detail else ''),
          flush=True)


N, H, W = 2, 13, 11
rng = np.random.default_rng(7)


def make_params(dt):
    """Params rounded to dt, as float64."""
    def w(*shape, std):
        return L.rnd(dt, rng.normal(0, std, shape))

    def bn(c):
        return {'scale': L.rnd(dt, rng.uniform(0.5, 1.5, c)),
                'bias': L.rnd(dt, rng.normal(0, 0.1, c)),
                'mean': L.rnd(dt, rng.normal(0, 0.1, c)),
                'var': L.rnd(dt, rng.uniform(0.5, 1.5, c))}
    p = {'conv1.w': w(8, 3, 3, 3, std=0.3), 'conv1.b': w(8, std=0.1),
         'conv2.w': w(8, 4, 3, 3, std=0.2), 'dw.w': w(8, 1, 3, 3, std=0.3),
         'pw.w': w(6, 8, 1, 1, std=0.3), 'pw.b': w(6, std=0.1),
         'dil.w': w(4, 8, 3, 3, std=0.15), 'fc.w': w(5, 10, std=0.3), 'fc.b': w(5, std=0.1)}
    for name, c in (('bn1', 8), ('bn2', 8), ('bn3', 8), ('bn4', 10)):
        for k, v in bn(c).items():
            p['%s.%s' % (name, k)] = v
    return p


def model_json(dt):
    bn = lambda name, x, y: {'op': 'batch_norm', 'inputs': [x] + ['%s.%s' % (name, k) for k in
                                                               ('scale', 'bias', 'mean', 'var')],
                             'outputs': [y], 'attrs': {'eps': 1e-5}}
    conv = lambda ins, y, **a: {'op': 'conv2d', 'inputs': ins, 'outputs': [y], 'attrs': a}
    const = lambda y, v: {'op': 'constant', 'inputs': [], 'outputs': [y],
                          'attrs': {'dtype': dt, 'value': v}}
    nodes = [
        conv(['x', 'conv1.w', 'conv1.b'], 'c1', pads=[1, 0, 2, 1]), bn('bn1', 'c1', 'b1'),
        {'op': 'relu', 'inputs': ['b1'], 'outputs': ['r1']},
        {'op': 'max_pool2d', 'inputs': ['r1'], 'outputs': ['p1'],
         'attrs': {'kernel': [3, 3], 'strides': [2, 2], 'pads': [1, 1, 1, 1], 'ceil_mode': True}},
        conv(['p1', 'conv2.w'], 'c2', pads=[1, 1, 1, 1], groups=2), bn('bn2', 'c2', 'b2'),
        {'op': 'add', 'inputs': ['b2', 'p1'], 'outputs': ['s2']},
        {'op': 'relu', 'inputs': ['s2'], 'outputs': ['feat']},
        {'op': 'avg_pool2d', 'inputs': ['feat'], 'outputs': ['pooled'],
         'attrs': {'kernel': [3, 2], 'strides': [2, 2], 'pads': [1, 1, 1, 0], 'ceil_mode': True,
                   'count_include_pad': True}},
        conv(['feat', 'dw.w'], 'c3', strides=[2, 2], pads=[1, 1, 1, 1], groups=8),
        bn('bn3', 'c3', 'b3'),
        {'op': 'clamp', 'inputs': ['b3'], 'outputs': ['d'], 'attrs': {'min': 0.0, 'max': 6.0}},
        conv(['d', 'pw.w', 'pw.b'], 'a'),
        const('three', 3.0), const('six', 6.0),
        {'op': 'add', 'inputs': ['a', 'three'], 'outputs': ['a3']},
        {'op': 'clamp', 'inputs': ['a3'], 'outputs': ['a3c'], 'attrs': {'min': 0.0, 'max': 6.0}},
        {'op': 'mul', 'inputs': ['a', 'a3c'], 'outputs': ['am']},
        {'op': 'div', 'inputs': ['am', 'six'], 'outputs': ['hs']},
        conv(['d', 'dil.w'], 'c5', pads=[2, 2, 2, 2], dilations=[2, 2]),
        {'op': 'sigmoid', 'inputs': ['c5'], 'outputs': ['sg']},
        {'op': 'concat', 'inputs': ['hs', 'sg'], 'outputs': ['cat'], 'attrs': {'axis': 1}},
        bn('bn4', 'cat', 'b4'),
        {'op': 'avg_pool2d', 'inputs': ['b4'], 'outputs': ['ap'],
         'attrs': {'kernel': [2, 2], 'strides': [1, 1], 'pads': [1, 1, 1, 1],
                   'count_include_pad': False}},
        {'op': 'global_avg_pool2d', 'inputs': ['ap'], 'outputs': ['g']},
        {'op': 'sigmoid', 'inputs': ['g'], 'outputs': ['gate']},
        {'op': 'mul', 'inputs': ['ap', 'gate'], 'outputs': ['se']},
        {'op': 'global_avg_pool2d', 'inputs': ['se'], 'outputs': ['g2']},
        {'op': 'reshape', 'inputs': ['g2'], 'outputs': ['flat'], 'attrs': {'shape': [N, 10]}},
        {'op': 'linear', 'inputs': ['flat', 'fc.w', 'fc.b'], 'outputs': ['logits']},
    ]
    params = make_params(dt)
    return {'format': 'tcc-model', 'version': 1, 'name': 'conv_layout_' + dt,
            'inputs': [{'name': 'x', 'dtype': dt, 'shape': [N, 3, H, W]}],
            'params': [{'name': k, 'dtype': dt, 'shape': list(v.shape),
                        'init': {'file': 'params_%s.safetensors' % dt, 'tensor': k}}
                       for k, v in params.items()],
            'nodes': nodes, 'outputs': ['logits', 'feat', 'pooled']}, params


def reference(p, x, r):
    """The model in float64; r rounds each op's result (identity: exact)."""
    def bn(name, v):
        sh = (1, -1, 1, 1)
        g = lambda k: p['%s.%s' % (name, k)].reshape(sh)
        return r((v - g('mean')) / np.sqrt(g('var') + 1e-5) * g('scale') + g('bias'))
    sig = lambda v: 1 / (1 + np.exp(-v))
    c1 = r(L.conv2d(x, p['conv1.w'], p['conv1.b'], pads=(1, 0, 2, 1)))
    r1 = np.maximum(bn('bn1', c1), 0)
    p1 = r(L.pool2d(r1, 'max', (3, 3), (2, 2), (1, 1, 1, 1), ceil_mode=True))
    c2 = r(L.conv2d(p1, p['conv2.w'], None, pads=(1, 1, 1, 1), groups=2))
    feat = np.maximum(r(bn('bn2', c2) + p1), 0)
    c3 = r(L.conv2d(feat, p['dw.w'], None, (2, 2), (1, 1, 1, 1), groups=8))
    d = np.clip(bn('bn3', c3), 0, 6)
    a = r(L.conv2d(d, p['pw.w'], p['pw.b']))
    hs = r(r(a * np.clip(r(a + 3), 0, 6)) / 6)
    sg = r(sig(r(L.conv2d(d, p['dil.w'], None, pads=(2, 2, 2, 2), dilations=(2, 2)))))
    b4 = bn('bn4', np.concatenate([hs, sg], axis=1))
    ap = r(L.pool2d(b4, 'avg', (2, 2), (1, 1), (1, 1, 1, 1), count_include_pad=False))
    gate = r(sig(r(ap.mean(axis=(2, 3), keepdims=True))))
    se = r(ap * gate)
    flat = r(se.mean(axis=(2, 3)))
    logits = r(r(flat @ p['fc.w'].T) + p['fc.b'])
    pooled = r(L.pool2d(feat, 'avg', (3, 2), (2, 2), (1, 1, 1, 0), ceil_mode=True))
    return {'logits': logits, 'feat': feat, 'pooled': pooled}


def activation_transposes(mlir):
    """tcc.transpose ops whose operand is not a weight: weights are [O, ...]
    with O != N here, activations start with the batch N."""
    return [l.strip() for l in mlir.splitlines()
            if 'tcc.transpose' in l and re.search(r':\s*tensor<%dx' % N, l)]


def check(work, dt):
    model, params = model_json(dt)
    L.write_safetensors(os.path.join(work, 'params_%s.safetensors' % dt),
                        {k: (dt, v) for k, v in params.items()})
    path = os.path.join(work, 'model_%s.json' % dt)
    with open(path, 'w') as f:
        json.dump(model, f)
    x = L.rnd(dt, rng.uniform(-1, 1, (N, 3, H, W)))
    xin = os.path.join(work, 'x_%s.npy' % dt)
    np.save(xin, L.to_npy(dt, x))
    exact = reference(params, x, lambda v: v)
    rounded = reference(params, x, lambda v: L.narrow(dt, v))
    for layout in ('nhwc', 'nchw'):
        name = '%s %s' % (dt, layout)
        rc, out, err = L.run_tcc([args.tcc, 'compile', path, '--emit', 'mlir', '-o',
                                  os.path.join(work, 'm.mlir'), '--conv-layout=' + layout])
        if rc != 0:
            report(name + ' compile', False, L.first_line(err))
            continue
        with open(os.path.join(work, 'm.mlir')) as f:
            mlir = f.read()
        ts = activation_transposes(mlir)
        if layout == 'nhwc':
            # The input to NHWC, the two feature maps back to NCHW: nothing
            # else (the logits come from [N, 1, 1, C]: a reshape).
            nhwc_ops = mlir.count('nhwc')
            report(name + ' transposes at the edges', len(ts) == 3 and nhwc_ops == 10,
                   '%d activation transposes, %d nhwc ops%s' % (
                       len(ts), nhwc_ops, '' if len(ts) == 3 else ': ' + '; '.join(ts)))
        else:
            report(name + ' no layout change', not ts and 'nhwc' not in mlir,
                   '%d transposes' % len(ts))
        outdir = os.path.join(work, 'out_%s_%s' % (dt, layout))
        rc, _, err = L.run_tcc([args.tcc, 'run', path, '--input', 'x=' + xin,
                                '--output-dir', outdir, '--conv-layout=' + layout])
        if rc != 0:
            report(name + ' run', False, L.first_line(err))
            continue
        for out_name in ('logits', 'feat', 'pooled'):
            got = L.from_npy(dt, np.load(os.path.join(outdir, out_name + '.npy')))
            ref = exact[out_name]
            gap = float(np.abs(exact[out_name] - rounded[out_name]).max())
            allowed = 2 * gap + 8 * L.eps(dt) * float(np.abs(ref).max())
            ok, maxerr, detail = L.compare(got, ref, L.Tol(0.0, allowed))
            report('%s %s' % (name, out_name), ok,
                   'max|err| %.3g, allowed %.3g%s' % (maxerr, allowed,
                                                      '' if ok else ' -- ' + detail))


# Transposed convolutions in channels last: stride > 1 without dilation takes
# the sub-pixel form (one convolution over the s_h * s_w phases, interleaved),
# dilated ones the zero-insertion form. (kernel, strides, pads, dilations,
# output_padding, bias, weight as input): kernels shorter than, equal to and
# longer than the stride, pads that crop into a phase, output_padding,
# asymmetric everything, odd sizes.
TRANSPOSED = [
    ((2, 2), (2, 2), (0, 0, 0, 0), (1, 1), (0, 0), True, False),   # U-Net's
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), True, False),   # 2x up, pad 1
    ((4, 4), (2, 2), (1, 1, 1, 1), (1, 1), (0, 0), False, False),  # DCGAN's
    ((3, 2), (3, 2), (2, 0, 1, 1), (1, 1), (2, 1), True, True),
    ((1, 5), (2, 3), (0, 2, 0, 1), (1, 1), (1, 0), False, False),
    ((5, 3), (2, 1), (3, 1, 2, 0), (1, 1), (0, 0), True, False),
    ((3, 3), (2, 2), (1, 0, 0, 1), (2, 1), (1, 0), True, False),   # dilated
]


def check_transposed(work):
    dt = 'f32'
    for i, (k, s, pads, dil, opad, bias, w_input) in enumerate(TRANSPOSED):
        n, c, o, h, w = 2, 5, 3, 7, 6
        x = L.rnd(dt, rng.uniform(-1, 1, (n, c, h, w)))
        wt = L.rnd(dt, rng.normal(0, 0.4, (c, o) + k))
        b = L.rnd(dt, rng.normal(0, 0.1, o)) if bias else None
        ref = L.conv_transpose2d(x, wt, b, s, pads, dil, opad)
        params = {'w': wt} if not w_input else {}
        if bias:
            params['b'] = b
        inputs = [{'name': 'x', 'dtype': dt, 'shape': list(x.shape)}]
        if w_input:
            inputs.append({'name': 'w', 'dtype': dt, 'shape': list(wt.shape)})
        model = {'format': 'tcc-model', 'version': 1, 'name': 'up%d' % i, 'inputs': inputs,
                 'params': [{'name': name, 'dtype': dt, 'shape': list(v.shape),
                             'init': {'file': 'up%d.safetensors' % i, 'tensor': name}}
                            for name, v in params.items()],
                 'nodes': [{'op': 'conv_transpose2d',
                            'inputs': ['x', 'w'] + (['b'] if bias else []), 'outputs': ['y'],
                            'attrs': {'strides': list(s), 'pads': list(pads),
                                      'dilations': list(dil), 'output_padding': list(opad)}}],
                 'outputs': ['y']}
        if params:
            L.write_safetensors(os.path.join(work, 'up%d.safetensors' % i),
                                {name: (dt, v) for name, v in params.items()})
        path = os.path.join(work, 'up%d.json' % i)
        with open(path, 'w') as f:
            json.dump(model, f)
        feeds = ['--input', 'x=' + os.path.join(work, 'upx%d.npy' % i)]
        np.save(os.path.join(work, 'upx%d.npy' % i), L.to_npy(dt, x))
        if w_input:
            np.save(os.path.join(work, 'upw%d.npy' % i), L.to_npy(dt, wt))
            feeds += ['--input', 'w=' + os.path.join(work, 'upw%d.npy' % i)]
        name = 'conv_transpose2d k%s s%s pads%s d%s op%s' % (k, s, pads, dil, opad)
        rc, _, err = L.run_tcc([args.tcc, 'compile', path, '--emit', 'mlir', '-o',
                                os.path.join(work, 'up.mlir'), '--conv-layout=nhwc'])
        if rc != 0:
            report(name + ' compile', False, L.first_line(err))
            continue
        with open(os.path.join(work, 'up.mlir')) as f:
            mlir = f.read()
        # The sub-pixel form convolves over the phases: s_h * s_w * O
        # output channels.
        phases = dil == (1, 1)
        convs = re.findall(r'tcc\.conv2d .*-> tensor<\d+x\d+x\d+x(\d+)xf32>', mlir)
        wide = len(convs) == 1 and int(convs[0]) == s[0] * s[1] * o
        report(name + (' sub-pixel form' if phases else ' zero insertion'),
               'conv_transpose2d' not in mlir and wide == phases)
        outdir = os.path.join(work, 'up_out%d' % i)
        rc, _, err = L.run_tcc([args.tcc, 'run', path, '--output-dir', outdir,
                                '--conv-layout=nhwc'] + feeds)
        if rc != 0:
            report(name + ' run', False, L.first_line(err))
            continue
        got = L.from_npy(dt, np.load(os.path.join(outdir, 'y.npy')))
        # f32 with each output a sum of at most C * KH * KW products:
        # 64 ulps of the output's largest magnitude covers the summation
        # order; a wrong phase or tap is off by O(1).
        allowed = 64 * L.eps(dt) * float(np.abs(ref).max())
        ok, maxerr, detail = L.compare(got, ref, L.Tol(0.0, allowed))
        report(name, ok and got.shape == ref.shape,
               'max|err| %.3g, allowed %.3g%s' % (maxerr, allowed, '' if ok else ' -- ' + detail))


def main():
    with tempfile.TemporaryDirectory() as work:
        for dt in ('f32', 'f16'):
            check(work, dt)
        check_transposed(work)
        # The option is checked: one line, exit status 1.
        rc, _, err = L.run_tcc([args.tcc, 'compile', os.path.join(work, 'model_f32.json'),
                                '-o', os.path.join(work, 'b.tccb'), '--conv-layout=nwhc'])
        report('bad --conv-layout', rc == 1 and len(err.strip().splitlines()) == 1
               and 'nwhc' in err, L.first_line(err))
    print('%d passed, %d failed' % (sum(results), len(results) - sum(results)))
    return 0 if all(results) else 1


sys.exit(main())
