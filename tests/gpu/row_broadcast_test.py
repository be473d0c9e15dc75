#!/usr/bin/env python3
"""Reduction chains over rows of a [B, H, L, S] tensor that read tensors
broadcast along the leading axes, as users write them around attention's
scores or a norm:

    row_broadcast_test.py check TCC [--ptxas PTXAS]
    row_broadcast_test.py record TCC --out DIR
    row_broadcast_test.py replay RUNTIME_TCC --dir DIR

Forms: softmax of scores plus an additive padding mask [B, 1, 1, S] (0 or
-inf, a batch's rows fully masked), of scores selected by a bool mask [B, 1,
1, S], log-softmax of scores scaled per head ([1, H, 1, 1], slopes), softmax
of scores plus a bias [1, H, L, S] shared by the batch, and a norm whose
scale is per head and position ([1, H, 1, S]) and whose shift is per batch
([B, 1, 1, 1]); a causal mask built [L, S] from iotas, applied before
softmax (-inf) or after it (0); cross-entropy with 1-D targets [R] and an ignore_index
(its [R, 1] losses reshaped to [R], masked, and their sum divided by the
kept count); f32, f16 and bf16; rows of 7 (several a block), 1001, 3001
and 50257 (a cluster of blocks a row).

tcc-gpu-row-fusion reads such a tensor at the row's own offset (the row
index taken apart over B, H, L), so each chain is one row kernel.

`check` (no GPU): each compiles for sm_90 to one kernel launch (`tcc
inspect`; the loss two: its row kernel and the finish launch), ptxas
assembles it without spills, and the model on the host (small B, H, L)
matches this script's NumPy reference. `record` writes
sm_90 bundles; `replay` runs them on a GPU with fresh inputs against a
float64 reference that rounds each primitive to the dtype as the format
says. Tolerance (relative to the row's values, |ref| + 1e-3 max|ref|; the
norm's, which may cancel, to max|ref|): 64
ulps of f32 (exponents up to ~30 carry their ulps into exp; sums add
sqrt(n)), plus 4 ulps of a 16-bit dtype (a sum in another order rounds to
its neighbour, and each op after it with it).
"""
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'e2e'))
import e2elib as L  # noqa: E402

# (name, form, dtype, [B, H, L, S]) on the GPU; the host takes L = 2.
CASES = [
    ('padmask_add_f16_1001', 'padmask_add', 'f16', [2, 4, 24, 1001]),
    ('padmask_add_f32_7', 'padmask_add', 'f32', [3, 4, 40, 7]),
    ('padmask_select_bf16_3001', 'padmask_select', 'bf16', [2, 3, 16, 3001]),
    ('padmask_select_f16_50257', 'padmask_select', 'f16', [2, 2, 3, 50257]),
    ('head_scale_f32_3001', 'head_scale', 'f32', [2, 5, 8, 3001]),
    ('head_scale_bf16_7', 'head_scale', 'bf16', [2, 3, 30, 7]),
    ('shared_bias_f16_1001', 'shared_bias', 'f16', [3, 2, 16, 1001]),
    ('shared_bias_f32_50257', 'shared_bias', 'f32', [2, 2, 2, 50257]),
    ('head_norm_bf16_1001', 'head_norm', 'bf16', [2, 3, 16, 1001]),
    ('head_norm_f32_3001', 'head_norm', 'f32', [2, 2, 8, 3001]),
    # A causal mask built [L, S] from iotas (not the scores' shape), before
    # softmax (-inf) or after it (0): recomputed in the row kernel, not
    # written and read (ten launches before session 56).
    ('causal_iota_f16_1001', 'causal_iota', 'f16', [2, 4, 24, 1001]),
    ('causal_iota_bf16_50257', 'causal_iota', 'bf16', [1, 2, 3, 50257]),
    ('post_iota_f32_3001', 'post_iota', 'f32', [2, 3, 8, 3001]),
    # Cross-entropy over [B * H * L, S] logits with 1-D targets and an
    # ignore_index: the chain's [R, 1] losses reshaped to the targets' [R],
    # masked, summed and divided by the kept count in the row kernel's
    # launch and its finish launch.
    ('ce_flat_targets_f32_1001', 'ce_flat_targets', 'f32', [1, 1, 3000, 1001]),
    ('ce_flat_targets_bf16_32000', 'ce_flat_targets', 'bf16', [1, 1, 64, 32000]),
    # A single row: the sums over the one target fold to reshapes (4
    # launches before session 46).
    ('ce_flat_targets_f32_1x50257', 'ce_flat_targets', 'f32', [1, 1, 1, 50257]),
]
IGNORE = -100


def node(op, inputs, output, **attrs):
    n = {'op': op, 'inputs': inputs, 'outputs': [output]}
    if attrs:
        n['attrs'] = attrs
    return n


def operand_shape(form, shape):
    b, h, l, s = shape
    return {'padmask_add': [b, 1, 1, s], 'padmask_select': [b, 1, 1, s],
            'head_scale': [1, h, 1, 1], 'shared_bias': [1, h, l, s],
            'head_norm': [1, h, 1, s]}[form]


def make_model(form, dt, shape):
    if form == 'ce_flat_targets':
        return ce_model(dt, shape)
    if form in ('causal_iota', 'post_iota'):
        return iota_model(form, dt, shape)
    inputs = [{'name': 'x', 'dtype': dt, 'shape': shape},
              {'name': 'a', 'dtype': 'bool' if form == 'padmask_select' else dt,
               'shape': operand_shape(form, shape)}]
    if form in ('padmask_add', 'shared_bias'):
        nodes = [node('add', ['x', 'a'], 's'), node('softmax', ['s'], 'y', axis=-1)]
    elif form == 'padmask_select':
        nodes = [node('constant', [], 'ninf', dtype=dt, shape=[], value='-inf'),
                 node('select', ['a', 'x', 'ninf'], 's'),
                 node('softmax', ['s'], 'y', axis=-1)]
    elif form == 'head_scale':
        nodes = [node('mul', ['x', 'a'], 's'), node('log_softmax', ['s'], 'y', axis=-1)]
    elif form == 'head_norm':
        inputs.append({'name': 'c', 'dtype': dt, 'shape': [shape[0], 1, 1, 1]})
        nodes = [node('reduce_mean', ['x'], 'm', axes=[-1], keepdims=True),
                 node('sub', ['x', 'm'], 'd'), node('mul', ['d', 'd'], 'd2'),
                 node('reduce_mean', ['d2'], 'v', axes=[-1], keepdims=True),
                 node('constant', [], 'eps', dtype=dt, shape=[], value=1e-5),
                 node('add', ['v', 'eps'], 've'), node('rsqrt', ['ve'], 'rs'),
                 node('mul', ['d', 'rs'], 'n'), node('mul', ['n', 'a'], 'na'),
                 node('add', ['na', 'c'], 'y')]
    else:
        raise ValueError(form)
    return {'format': 'tcc-model', 'version': 1, 'name': form, 'inputs': inputs,
            'params': [], 'nodes': nodes, 'outputs': ['y']}


def iota_model(form, dt, shape):
    l, s = shape[2], shape[3]
    nodes = [node('iota', [], 'r', dtype='i32', shape=[l, s], axis=0),
             node('iota', [], 'c', dtype='i32', shape=[l, s], axis=1),
             node('greater_equal', ['r', 'c'], 'keep')]
    if form == 'causal_iota':
        nodes += [node('constant', [], 'ninf', dtype=dt, shape=[], value='-inf'),
                  node('select', ['keep', 'x', 'ninf'], 's'),
                  node('softmax', ['s'], 'y', axis=-1)]
    else:
        nodes += [node('softmax', ['x'], 'p', axis=-1),
                  node('constant', [], 'zero', dtype=dt, shape=[], value=0.0),
                  node('select', ['keep', 'p', 'zero'], 'y')]
    return {'format': 'tcc-model', 'version': 1, 'name': form,
            'inputs': [{'name': 'x', 'dtype': dt, 'shape': shape}],
            'params': [], 'nodes': nodes, 'outputs': ['y']}


def ce_model(dt, shape):
    r, c = shape[0] * shape[1] * shape[2], shape[3]
    f = 'f32'
    nodes = [node('log_softmax', ['x'], 'lp', axis=-1),
             node('constant', [], 'ign', dtype='i64', shape=[], value=IGNORE),
             node('not_equal', ['a', 'ign'], 'keep'),
             node('constant', [], 'zi', dtype='i64', shape=[], value=0),
             node('select', ['keep', 'a', 'zi'], 'ts'),
             node('reshape', ['ts'], 't2', shape=[r, 1]),
             node('take_along_axis', ['lp', 't2'], 'p', axis=1),
             node('reshape', ['p'], 'p1', shape=[r]),
             node('cast', ['p1'], 'pf', to=f), node('neg', ['pf'], 'nll'),
             node('constant', [], 'zf', dtype=f, shape=[], value=0.0),
             node('select', ['keep', 'nll', 'zf'], 'nm'),
             node('reduce_sum', ['nm'], 'tot', axes=[0], keepdims=False),
             node('cast', ['keep'], 'kf', to=f),
             node('reduce_sum', ['kf'], 'cnt', axes=[0], keepdims=False),
             node('div', ['tot', 'cnt'], 'y')]
    return {'format': 'tcc-model', 'version': 1, 'name': 'ce_flat_targets',
            'inputs': [{'name': 'x', 'dtype': dt, 'shape': [r, c]},
                       {'name': 'a', 'dtype': 'i64', 'shape': [r]}],
            'params': [], 'nodes': nodes, 'outputs': ['y']}


def make_inputs(form, dt, shape, rng):
    b, h, l, s = shape
    if form == 'ce_flat_targets':
        r = b * h * l
        t = rng.integers(0, s, r)
        t[rng.random(r) < 0.2] = IGNORE
        return {'x': L.rnd(dt, 3.0 * rng.standard_normal((r, s))), 'a': t}
    vals = {'x': L.rnd(dt, 3.0 * rng.standard_normal(shape))}
    if form in ('causal_iota', 'post_iota'):
        return vals
    a_shape = operand_shape(form, shape)
    if form.startswith('padmask'):
        # Batch b keeps a prefix of the keys, the last batch none (its rows
        # are NaN, as PyTorch's): a padding mask.
        keep = np.zeros(a_shape, dtype=bool)
        for i in range(b - 1):
            keep[i, ..., :max(1, s - (s * (i + 1)) // (b + 1))] = True
        if form == 'padmask_select':
            vals['a'] = keep
        else:
            vals['a'] = L.rnd(dt, np.where(keep, 0.0, -np.inf))
    elif form == 'head_scale':
        vals['a'] = L.rnd(dt, 2.0 ** (-np.arange(1, h + 1, dtype=np.float64))
                          .reshape(a_shape) * 8)
    else:
        vals['a'] = L.rnd(dt, 1.0 + 0.5 * rng.standard_normal(a_shape))
    if form == 'head_norm':
        vals['c'] = L.rnd(dt, rng.standard_normal([b, 1, 1, 1]))
    return vals


def reference(form, dt, vals):
    """float64, each primitive rounded to the dtype."""
    def r(v):
        return L.narrow(dt, v)
    x, a = vals['x'], vals.get('a')
    # The composites compute in f32 over f16 and bf16, rounding once.
    cr = L.composite_rounding(dt, r)
    with np.errstate(invalid='ignore', divide='ignore', over='ignore'):
        if form in ('padmask_add', 'shared_bias'):
            return L.softmax(r(x + a), **cr)
        if form == 'padmask_select':
            return L.softmax(np.where(a, x, -np.inf), **cr)
        if form in ('causal_iota', 'post_iota'):
            keep = np.greater_equal.outer(np.arange(x.shape[2]), np.arange(x.shape[3]))
            if form == 'causal_iota':
                return L.softmax(np.where(keep, x, -np.inf), **cr)
            return np.where(keep, L.softmax(x, **cr), 0.0)
        if form == 'head_scale':
            return L.log_softmax(r(x * a), **cr)
        if form == 'ce_flat_targets':
            lp = L.log_softmax(x, **cr)
            keep = a != IGNORE
            picked = lp[np.flatnonzero(keep), a[keep]]
            return np.array([-picked.sum() / keep.sum()])
        if form == 'head_norm':
            m = r(x.mean(-1, keepdims=True))
            d = r(x - m)
            v = r(r(d * d).mean(-1, keepdims=True))
            rs = r(1.0 / np.sqrt(r(v + L.rnd(dt, 1e-5))))
            return r(r(r(d * rs) * a) + vals['c'])
    raise ValueError(form)


def error(form, got, ref):
    """(max error relative to the row's scale, entries where NaN or inf
    differ). A norm's output, n * a + c, cancels where c meets -n * a: its
    error is relative to the row's largest value."""
    finite = np.where(np.isfinite(ref), np.abs(ref), 0)
    floor = 1.0 if form == 'head_norm' else 1e-3
    scale = np.abs(ref) + floor * np.max(finite, axis=-1, keepdims=True)
    special = ~np.isfinite(ref) | ~np.isfinite(got)
    bad = special & ~((np.isnan(ref) & np.isnan(got)) | (ref == got))
    with np.errstate(invalid='ignore', divide='ignore'):
        rel = np.where(special, 0.0, np.abs(got - ref) / np.where(scale > 0, scale, 1))
    return float(rel.max()), int(bad.sum())


def run(*args):
    return L.run_tcc(list(args))


def compare(name, form, dt, got, ref):
    err, bad = error(form, got.reshape(ref.shape), ref)
    if bad:
        return '%s: %d NaN/inf entries differ from the reference' % (name, bad), err
    if not err <= L.chain_tolerance(dt):
        return '%s: error %.3g over the tolerance %.3g' % (name, err, L.chain_tolerance(dt)), err
    return None, err


def check(args):
    failures = []
    rng = np.random.default_rng()
    with tempfile.TemporaryDirectory() as d:
        for name, form, dt, shape in CASES:
            before = len(failures)
            path = os.path.join(d, name + '.json')
            L.write_json(path, make_model(form, dt, shape))
            # A loss's division waits for every row: the finish launch.
            want = 2 if form == 'ce_flat_targets' else 1
            compiled, found = L.gpu_kernel_failures(args.tcc, args.ptxas, path, d, name, want)
            failures += found
            if not compiled:
                continue
            # The host, two rows a head.
            small = [shape[0], shape[1], 2, shape[3]]
            model = make_model(form, dt, small)
            L.write_json(path, model)
            bundle = os.path.join(d, name + '.host.tccb')
            rc, _, err = run(args.tcc, 'compile', path, '--target', 'host', '-o', bundle)
            if rc:
                failures.append('%s host: %s' % (name, L.first_line(err)))
                continue
            vals = make_inputs(form, dt, small, rng)
            got, err = L.run_bundle(args.tcc, bundle, L.save_inputs(d, name, model, vals), d)
            if err:
                failures.append('%s host: %s' % (name, err))
                continue
            msg, _ = compare(name + ' host', form, dt, got, reference(form, dt, vals))
            if msg:
                failures.append(msg)
            print('%s %s' % ('ok' if len(failures) == before else 'FAIL', name))
    L.report(failures, '%d chains reading broadcast tensors: one launch each, host correct'
             % len(CASES))


def record(args):
    os.makedirs(args.out, exist_ok=True)
    manifest = []
    for name, form, dt, shape in CASES:
        path = os.path.join(args.out, name + '.json')
        L.write_json(path, make_model(form, dt, shape))
        rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90', '-o',
                         os.path.join(args.out, name + '.tccb'))
        if rc:
            print('FAILED: %s: %s' % (name, L.first_line(err)))
            sys.exit(1)
        manifest.append({'name': name, 'form': form, 'dtype': dt, 'shape': shape})
    L.write_manifest(args.out, manifest)
    print('recorded %d chains' % len(manifest))


def replay(args):
    manifest = L.read_manifest(args.dir)
    rng = np.random.default_rng()
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for c in manifest:
            name, form, dt, shape = c['name'], c['form'], c['dtype'], c['shape']
            model = json.load(open(os.path.join(args.dir, name + '.json')))
            vals = make_inputs(form, dt, shape, rng)
            got, err = L.run_bundle(args.tcc, os.path.join(args.dir, name + '.tccb'),
                                  L.save_inputs(d, name, model, vals), d)
            if err:
                failures.append('%s: %s' % (name, err))
                continue
            msg, e = compare(name, form, dt, got, reference(form, dt, vals))
            if msg:
                failures.append(msg)
            print('%-28s error %.3g (tolerance %.3g)' % (name, e, L.chain_tolerance(dt)))
    L.report(failures, '%d chains reading broadcast tensors correct on the GPU' % len(manifest))


def main():
    L.gpu_test_main({'check': check, 'record': record, 'replay': replay})


if __name__ == '__main__':
    main()
