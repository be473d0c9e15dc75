#!/usr/bin/env python3
"""Reduction chains that the row kernels leave, as users write them: along
an axis that is not the last (softmax over the channels of NCHW scores, over
axis 1 or -2, a norm over axis 1 with a per-channel scale, a plain sum over
the middle axis, softmax with positions dropped by a bool mask, columns
dropping all of them), over H and W of NHWC (a mean), and along rows longer
than a cluster of blocks holds:

    column_chains_test.py check TCC [--ptxas PTXAS]
    column_chains_test.py record TCC --out DIR
    column_chains_test.py replay RUNTIME_TCC --dir DIR

tcc-gpu-column-chains makes each one GPU launch: lanes take consecutive
columns, warps slices of a column; few columns split their positions over
blocks too, and rows too long for the row kernels (over 262144 values)
split over blocks: two launches (partials, results). Shapes with column counts that are not
multiples of 32 (the last tile's lanes past the end), chains of 21 to 3001
positions (one warp a column to 32), f32, f16 and bf16.

`check` (no GPU): each compiles for sm_90 to one launch (`tcc inspect`),
ptxas assembles it without spills, and the model on the host (a smaller
shape) matches this script's NumPy reference. `record` writes sm_90
bundles; `replay` runs them on a GPU with fresh inputs against a float64
reference that rounds each primitive to the dtype as the format says.
Tolerance (e2elib.chain_tolerance, relative to |ref| + 1e-3 max|ref| along
the chain's axis; the norm's, which may cancel, to max|ref|): 64 ulps of
f32 plus 4 ulps of a 16-bit dtype.
"""
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'e2e'))
import e2elib as L  # noqa: E402

# (name, form, dtype, shape, axis) on the GPU; `check` runs the host on
# SMALL[name]'s shape.
CASES = [
    ('softmax_ax1_f32_1000x300', 'softmax', 'f32', [4, 1000, 300], 1),
    ('softmax_nchw_f16_21', 'softmax', 'f16', [2, 21, 40, 96], 1),
    ('log_softmax_axm2_bf16_777', 'log_softmax', 'bf16', [6, 777, 130], -2),
    ('log_softmax_ax0_f32_5000', 'log_softmax', 'f32', [5000, 40], 0),
    ('rms_ax1_f32_512', 'rms', 'f32', [3, 512, 200], 1),
    ('rms_ax1_f16_3001', 'rms', 'f16', [2, 3001, 64], 1),
    ('sum_ax1_bf16_3001', 'sum', 'bf16', [16, 3001, 64], 1),
    ('masked_softmax_ax1_f32_2000', 'masked_softmax', 'f32', [3, 2000, 100], 1),
    ('masked_softmax_axm2_f16_777', 'masked_softmax', 'f16', [5, 777, 48], -2),
    # Rows longer than a cluster of blocks holds (262144): split over blocks,
    # a launch a reduction (the max and the sum of exponentials paired) and
    # one for the results.
    ('softmax_rows_f32_300007', 'softmax', 'f32', [3, 300007], -1),
    ('log_softmax_rows_bf16_524288', 'log_softmax', 'bf16', [2, 524288], -1),
    ('rms_rows_f16_400001', 'rms', 'f16', [2, 400001], -1),
    ('masked_softmax_rows_f32_2m', 'masked_softmax', 'f32', [2, 1 << 21], -1),
    ('sum_rows_bf16_300000', 'sum', 'bf16', [4, 300000], -1),
    # A mean over H and W of NHWC (global average pooling): the two loops
    # one chain of H·W positions.
    ('gap_nhwc_f16_14x14', 'gap', 'f16', [32, 14, 14, 512], [1, 2]),
    ('gap_nhwc_f32_64x64', 'gap', 'f32', [2, 64, 64, 64], [1, 2]),
]
# Launches a case takes (1 unless named): two where the columns' blocks
# would leave most of the GPU idle (their positions split into parts over
# blocks: a launch of partials, one for the results), as for long rows.
LAUNCHES = {name: 2 for name, *_ in CASES if '_rows_' in name}
LAUNCHES.update({'log_softmax_ax0_f32_5000': 2, 'rms_ax1_f16_3001': 2,
                 'sum_ax1_bf16_3001': 2, 'gap_nhwc_f32_64x64': 2})
SMALL = {
    'softmax_ax1_f32_1000x300': [2, 100, 40],
    'softmax_nchw_f16_21': [1, 21, 4, 40],
    'log_softmax_axm2_bf16_777': [2, 77, 33],
    'log_softmax_ax0_f32_5000': [300, 40],
    'rms_ax1_f32_512': [2, 64, 40],
    'rms_ax1_f16_3001': [1, 301, 40],
    'sum_ax1_bf16_3001': [2, 301, 40],
    'masked_softmax_ax1_f32_2000': [2, 200, 40],
    'masked_softmax_axm2_f16_777': [2, 77, 33],
    'softmax_rows_f32_300007': [2, 3001],
    'log_softmax_rows_bf16_524288': [2, 5003],
    'rms_rows_f16_400001': [2, 4001],
    'masked_softmax_rows_f32_2m': [3, 3001],
    'sum_rows_bf16_300000': [2, 3000],
    'gap_nhwc_f16_14x14': [2, 7, 7, 64],
    'gap_nhwc_f32_64x64': [2, 9, 5, 40],
}


def node(op, inputs, output, **attrs):
    return {'op': op, 'inputs': inputs, 'outputs': [output], 'attrs': attrs}


def scale_shape(shape, axis):
    """A per-position scale along the chain's axis, broadcast elsewhere."""
    return [n if i == axis % len(shape) else 1 for i, n in enumerate(shape)]


def make_model(form, dt, shape, axis):
    inputs = [{'name': 'x', 'dtype': dt, 'shape': shape}]
    if form in ('softmax', 'log_softmax'):
        nodes = [node(form, ['x'], 'y', axis=axis)]
    elif form == 'masked_softmax':
        # Positions dropped by a bool input, as -inf.
        inputs.append({'name': 'keep', 'dtype': 'bool', 'shape': shape})
        nodes = [node('constant', [], 'neg', dtype=dt, shape=[], value='-inf'),
                 node('select', ['keep', 'x', 'neg'], 's'),
                 node('softmax', ['s'], 'y', axis=axis)]
    elif form == 'rms':
        # x * rsqrt(mean(x * x) + eps) * g, g a per-position input.
        inputs.append({'name': 'g', 'dtype': dt, 'shape': scale_shape(shape, axis)})
        nodes = [node('mul', ['x', 'x'], 'sq'),
                 node('reduce_mean', ['sq'], 'ms', axes=[axis], keepdims=True),
                 node('constant', [], 'eps', dtype=dt, shape=[], value=1e-5),
                 node('add', ['ms', 'eps'], 'v'), node('rsqrt', ['v'], 'r'),
                 node('mul', ['x', 'r'], 'n'), node('mul', ['n', 'g'], 'y')]
    elif form == 'gap':
        nodes = [node('reduce_mean', ['x'], 'y', axes=list(axis), keepdims=True)]
    else:
        nodes = [node('reduce_sum', ['x'], 'y', axes=[axis], keepdims=False)]
    return {'format': 'tcc-model', 'version': 1, 'name': 'column_' + form,
            'inputs': inputs, 'params': [], 'nodes': nodes, 'outputs': ['y']}


def make_inputs(form, dt, shape, axis, rng):
    vals = {'x': L.rnd(dt, 3.0 * rng.standard_normal(shape))}
    if form == 'rms':
        vals['g'] = L.rnd(dt, 1.0 + 0.5 * rng.standard_normal(scale_shape(shape, axis)))
    if form == 'masked_softmax':
        # Each column keeps its positions from a random cut on: the slices
        # (and warps) before it hold only -inf, the running max starts
        # there; a few columns keep nothing (NaN, as unfused) or all.
        a = axis % len(shape)
        n = shape[a]
        cshape = [1 if i == a else k for i, k in enumerate(shape)]
        cut = rng.integers(0, n, size=cshape)
        cut = np.where(rng.random(cshape) < 0.05, n, cut)
        cut = np.where(rng.random(cshape) < 0.05, 0, cut)
        pos = np.arange(n).reshape([n if i == a else 1 for i in range(len(shape))])
        vals['keep'] = np.broadcast_to(pos >= cut, shape).copy()
    return vals


def axis_of(axis):
    """An axis, or several (a JSON list) as NumPy's tuple."""
    return tuple(axis) if isinstance(axis, (list, tuple)) else axis


def reference(form, dt, vals, axis):
    """float64, each primitive rounded to the dtype (sums in f64, as the
    format's accumulation in f32 or wider is exact enough here)."""
    r = lambda v: L.rnd(dt, v)  # noqa: E731
    x = vals['x']
    axis = axis_of(axis)
    if form == 'gap':
        n = int(np.prod([x.shape[a] for a in axis]))
        return r(x.sum(axis=axis, keepdims=True) / n)
    if form == 'masked_softmax':
        x = np.where(vals['keep'], x, -np.inf)
        form = 'softmax'
    # The composites compute in f32 over narrow dtypes and round once.
    cr = L.composite_rounding(dt, r)
    if form == 'softmax':
        return L.softmax(x, axis, **cr)
    if form == 'log_softmax':
        return L.log_softmax(x, axis, **cr)
    if form == 'rms':
        ms = r(r(x * x).sum(axis=axis, keepdims=True) / x.shape[axis])
        return r(r(x * r(1 / np.sqrt(r(ms + r(1e-5))))) * vals['g'])
    return r(x.sum(axis=axis))


def error(form, got, ref, axis):
    """(max error relative to the chain's scale, entries where NaN or inf
    differ)."""
    finite = np.where(np.isfinite(ref), np.abs(ref), 0)
    axis = axis_of(axis)
    if form in ('sum', 'gap'):
        scale = np.abs(ref) + 1e-3 * finite.max()
    else:
        floor = 1.0 if form == 'rms' else 1e-3
        scale = np.abs(ref) + floor * np.max(finite, axis=axis, keepdims=True)
    special = ~np.isfinite(ref) | ~np.isfinite(got)
    bad = special & ~((np.isnan(ref) & np.isnan(got)) | (ref == got))
    with np.errstate(invalid='ignore', divide='ignore'):
        rel = np.where(special, 0.0, np.abs(got - ref) / np.where(scale > 0, scale, 1))
    return float(rel.max()), int(bad.sum())


def tolerance(form, dt, n):
    # A plain sum of n 16-bit values rounds once at the end, but its
    # reference and the kernel add in different orders: sqrt(n) ulps of f32.
    tol = L.chain_tolerance(dt)
    return tol + (np.sqrt(n) * L.eps('f32') if form in ('sum', 'gap') else 0)


def compare(name, form, dt, got, ref, axis):
    err, bad = error(form, got.reshape(ref.shape), ref, axis)
    tol = tolerance(form, dt, ref.size)
    if bad:
        return '%s: %d NaN or inf entries differ' % (name, bad), err
    if err > tol:
        return '%s: error %.3g over the tolerance %.3g' % (name, err, tol), err
    return None, err


def check(args):
    failures = []
    rng = np.random.default_rng()
    with tempfile.TemporaryDirectory() as d:
        for name, form, dt, shape, axis in CASES:
            before = len(failures)
            path = os.path.join(d, name + '.json')
            L.write_json(path, make_model(form, dt, shape, axis))
            compiled, found = L.gpu_kernel_failures(args.tcc, args.ptxas, path, d, name,
                                                    LAUNCHES.get(name, 1))
            failures += found
            if not compiled:
                continue
            small = SMALL[name]
            model = make_model(form, dt, small, axis)
            L.write_json(path, model)
            bundle = os.path.join(d, name + '.host.tccb')
            rc, _, err = L.run_tcc([args.tcc, 'compile', path, '--target', 'host', '-o',
                                    bundle])
            if rc:
                failures.append('%s host: %s' % (name, L.first_line(err)))
                continue
            vals = make_inputs(form, dt, small, axis, rng)
            got, err = L.run_bundle(args.tcc, bundle, L.save_inputs(d, name, model, vals), d)
            if err:
                failures.append('%s host: %s' % (name, err))
                continue
            msg, _ = compare(name + ' host', form, dt, got, reference(form, dt, vals, axis),
                             axis)
            if msg:
                failures.append(msg)
            print('%s %s' % ('ok' if len(failures) == before else 'FAIL', name))
    L.report(failures, '%d chains along one axis: their launches each, host correct'
             % len(CASES))


def record(args):
    os.makedirs(args.out, exist_ok=True)
    manifest = []
    for name, form, dt, shape, axis in CASES:
        path = os.path.join(args.out, name + '.json')
        L.write_json(path, make_model(form, dt, shape, axis))
        rc, _, err = L.run_tcc([args.tcc, 'compile', path, '--target', 'sm_90', '-o',
                                os.path.join(args.out, name + '.tccb')])
        if rc:
            print('FAILED: %s: %s' % (name, L.first_line(err)))
            sys.exit(1)
        manifest.append({'name': name, 'form': form, 'dtype': dt, 'shape': shape,
                         'axis': axis})
    L.write_manifest(args.out, manifest)
    print('recorded %d chains' % len(manifest))


def replay(args):
    manifest = L.read_manifest(args.dir)
    rng = np.random.default_rng()
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for c in manifest:
            name, form, dt, shape, axis = (c[k] for k in ('name', 'form', 'dtype', 'shape',
                                                          'axis'))
            model = json.load(open(os.path.join(args.dir, name + '.json')))
            vals = make_inputs(form, dt, shape, axis, rng)
            got, err = L.run_bundle(args.tcc, os.path.join(args.dir, name + '.tccb'),
                                    L.save_inputs(d, name, model, vals), d)
            if err:
                failures.append('%s: %s' % (name, err))
                continue
            ref = reference(form, dt, vals, axis)
            msg, e = compare(name, form, dt, got, ref, axis)
            if msg:
                failures.append(msg)
            print('%-28s error %.3g (tolerance %.3g)' % (name, e, tolerance(form, dt, ref.size)))
    L.report(failures, '%d chains correct on the GPU' % len(manifest))


def main():
    L.gpu_test_main({'check': check, 'record': record, 'replay': replay})


if __name__ == '__main__':
    main()
