#!/usr/bin/env python3
"""Precision plans (--precision-plan, docs/precision.md) on the host.

    precision_plan.py --tcc TCC [--cases N] [--keep DIR]

Random matmuls (odd sizes, f32/bf16/f16 operands, either operand
transposed, a batch, B a param) under random plans (tile sizes that do and
do not divide the output, any mix of f32, bf16, f16, f8e4m3, f8e5m2 and
i8 tiles) run with `tcc run --target host` on fresh random inputs, against a
NumPy emulation of the plan's semantics: each block scaled and rounded
exactly as the document says (in f32, as tcc computes), the products of the
rounded values summed in float64. tcc sums in f32: the bound is a few f32
ulps times sqrt(K) of the sum of |products| (the e2e matmul bound), the two
scale multiplications' roundings, and two ulps of the result dtype. A plan
must change the result where it says (an all-f32 plan against an all-f8
one). Then every refusal a plan file can get: exit status 1 and one line
naming the problem.
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

PRECISIONS = ('f32', 'bf16', 'f16', 'f8e4m3', 'f8e5m2', 'i8')
QMAX = {'f16': 65504.0, 'f8e4m3': 448.0, 'f8e5m2': 57344.0, 'i8': 127.0}


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def block_scale(x, axis, tile, qmax):
    """f32 scales of x's blocks of `tile` along `axis` (-2 or -1), spread
    over that axis, shaped like x with the other of the last two axes 1."""
    other = -1 if axis == -2 else -2
    amax = np.max(np.abs(x), axis=other, keepdims=True)
    n = x.shape[axis]
    out = np.empty_like(amax)
    for s in range(0, n, tile):
        idx = [slice(None)] * amax.ndim
        idx[axis] = slice(s, min(n, s + tile))
        idx = tuple(idx)
        m = np.max(amax[idx], axis=axis, keepdims=True)
        out[idx] = np.broadcast_to(m, amax[idx].shape)
    s = (out / np.float32(qmax)).astype(np.float32)
    return np.where(out > 0, s, np.float32(1)).astype(np.float32)


def quantize(x32, p, s):
    """x (f32) divided by its scales (f32) and rounded to p, as float64."""
    q = (x32 / s).astype(np.float32) if s is not None else x32
    if p == 'i8':
        return np.clip(np.floor((q + np.float32(0.5)).astype(np.float32)), -127, 127
                       ).astype(np.float64)
    return L.rnd(p, q.astype(np.float64))


def emulate(a, b, ta, tb, plan, out_dt):
    """(reference, allowed error) of the planned matmul, float64."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    tm, tn = plan['tile']
    precisions, tiles = plan['precisions'], np.array(plan['tiles'])
    per = {}
    for i, p in enumerate(precisions):
        if not (tiles == i).any():
            continue
        sa = sb = None
        if p in QMAX:
            sa = block_scale(a32, -1 if ta else -2, tm, QMAX[p])
            sb = block_scale(b32, -2 if tb else -1, tn, QMAX[p])
        qa, qb = quantize(a32, p, sa), quantize(b32, p, sb)
        A = np.swapaxes(qa, -1, -2) if ta else qa
        B = np.swapaxes(qb, -1, -2) if tb else qb
        prod = A @ B
        mag = np.abs(A) @ np.abs(B)
        k = A.shape[-1]
        if p in QMAX:
            ra = np.swapaxes(sa, -1, -2) if ta else sa      # [.., M, 1]
            rb = np.swapaxes(sb, -1, -2) if tb else sb      # [.., 1, N]
            scale = ra.astype(np.float64) * rb.astype(np.float64)
            prod, mag = prod * scale, mag * scale
        # f32 sums (exact for i8's integers, but its i32 -> f32 conversion
        # and the scales round), two scale roundings, the output's rounding.
        allowed = (4 * np.sqrt(k) + 8) * 2.0**-24 * mag
        per[i] = (prod, allowed)
    m, n = per[next(iter(per))][0].shape[-2:]
    code = np.repeat(np.repeat(tiles, tm, axis=0), tn, axis=1)[:m, :n]
    ref = np.zeros(np.broadcast_shapes(*(v[0].shape for v in per.values())))
    allowed = np.zeros_like(ref)
    for i, (prod, al) in per.items():
        ref = np.where(code == i, prod, ref)
        allowed = np.where(code == i, al, allowed)
    eps = {'f32': 2.0**-24, 'bf16': 2.0**-8, 'f16': 2.0**-11}[out_dt]
    # The output's rounding: two ulps, or one spacing of its subnormals.
    return ref, allowed + 2 * eps * np.abs(ref) + L.tiny(out_dt)


def model(name, dt, ashape, bshape, ta, tb, b_param=None):
    inputs = [{'name': 'a', 'dtype': dt, 'shape': ashape}]
    params = []
    if b_param is None:
        inputs.append({'name': 'b', 'dtype': dt, 'shape': bshape})
    else:
        params.append({'name': 'b', 'dtype': dt, 'shape': bshape,
                       'init': {'random': 'normal', 'std': 1.0, 'seed': b_param}})
    return {'format': 'tcc-model', 'version': 1, 'name': name, 'inputs': inputs,
            'params': params,
            'nodes': [{'op': 'matmul', 'inputs': ['a', 'b'], 'outputs': ['c'], 'name': 'mm',
                       'attrs': {'transpose_a': ta, 'transpose_b': tb}}],
            'outputs': ['c']}


def plan_file(path, node, tile, precisions, tiles):
    with open(path, 'w') as f:
        json.dump({'format': 'tcc-precision-plan', 'version': 1,
                   'matmuls': [{'node': node, 'tile': tile, 'precisions': precisions,
                                'tiles': tiles}]}, f)


def run_case(args, d, rng, i):
    dt = rng.choice(['f32', 'bf16', 'f16'])
    m, k, n = (int(rng.integers(1, 200)) for _ in range(3))
    ta, tb = bool(rng.integers(2)), bool(rng.integers(2))
    batch = [int(rng.integers(2, 4))] if rng.integers(4) == 0 else []
    ashape = batch + ([k, m] if ta else [m, k])
    bshape = [n, k] if tb else [k, n]
    b_param = int(rng.integers(1000)) if rng.integers(3) == 0 else None
    tm = int(rng.choice([16, 32, 50, 64, 128, 256]))
    tn = int(rng.choice([16, 32, 64, 100, 128]))
    gm, gn = -(-m // tm), -(-n // tn)
    names = list(rng.permutation(PRECISIONS)[:int(rng.integers(1, 7))])
    tiles = rng.integers(0, len(names), (gm, gn)).tolist()
    name = 'case%d' % i
    path = os.path.join(d, name + '.json')
    with open(path, 'w') as f:
        json.dump(model(name, str(dt), ashape, bshape, ta, tb, b_param), f)
    plan = os.path.join(d, name + '.plan.json')
    plan_file(plan, 'mm' if i % 2 else '/nodes/0', [tm, tn], names, tiles)
    a = L.rnd(str(dt), rng.standard_normal(ashape) * rng.choice([1e-3, 1.0, 30.0]))
    files = ['--input', 'a=' + os.path.join(d, 'a.npy')]
    np.save(os.path.join(d, 'a.npy'), L.to_npy(str(dt), a))
    if b_param is None:
        b = L.rnd(str(dt), rng.standard_normal(bshape))
        np.save(os.path.join(d, 'b.npy'), L.to_npy(str(dt), b))
        files += ['--input', 'b=' + os.path.join(d, 'b.npy')]
    else:
        b = L.rnd(str(dt), L.random_init({'random': 'normal', 'std': 1.0, 'seed': b_param},
                                         int(np.prod(bshape))).reshape(bshape))
    out = os.path.join(d, name + '-out')
    rc, _, err = run(args.tcc, 'run', path, '--target', 'host', '--precision-plan', plan,
                     '--output-dir', out, *files)
    desc = '%s %s a%s%s b%s%s tile %dx%d %s' % (name, dt, ashape, 'ᵀ' if ta else '', bshape,
                                                'ᵀ' if tb else '', tm, tn, names)
    if rc:
        return False, '%s: tcc run: %s' % (desc, L.first_line(err))
    got = L.from_npy(str(dt), np.load(os.path.join(out, 'c.npy')))
    ref, allowed = emulate(a, b, ta, tb, {'tile': [tm, tn], 'precisions': names,
                                          'tiles': tiles}, str(dt))
    err = np.abs(got - ref)
    bad = ~(err <= allowed)
    if bad.any():
        j = np.unravel_index(np.argmax(np.where(bad, err / np.maximum(allowed, 1e-300), 0)),
                             ref.shape)
        return False, '%s: %d of %d off, worst at %s: got %r want %r (allowed %.3g)' % (
            desc, bad.sum(), ref.size, list(j), got[j], ref[j], allowed[j])
    return True, desc


def refusals(args, d):
    """Each bad plan: exit status 1, one line naming the problem."""
    path = os.path.join(d, 'r.json')
    with open(path, 'w') as f:
        json.dump(model('r', 'f32', [300, 40], [40, 257], False, False), f)
    ipath = os.path.join(d, 'ri.json')
    with open(ipath, 'w') as f:
        m = model('ri', 'i8', [64, 32], [32, 64], False, False)
        m['nodes'][0]['attrs']['out_dtype'] = 'i32'
        json.dump(m, f)
    ok_entry = {'node': 'mm', 'tile': [128, 128], 'precisions': ['bf16', 'f8e4m3'],
                'tiles': [[0, 1, 0], [1, 0, 1], [0, 0, 1]]}

    def plan(entries, **top):
        j = {'format': 'tcc-precision-plan', 'version': 1, 'matmuls': entries}
        j.update(top)
        return j

    cases = [
        ('not JSON', 'not json', 'a precision plan is a JSON object'),
        ('wrong format', plan([ok_entry], format='x'), 'not a precision plan'),
        ('unknown key', plan([ok_entry], extra=1), 'unknown key "extra"'),
        ('no matmul', plan([dict(ok_entry, node='/nodes/7')]),
         '"/nodes/7" names no matmul of the model (its matmuls: /nodes/0)'),
        ('twice', plan([ok_entry, ok_entry]), 'is planned twice'),
        ('unknown precision', plan([dict(ok_entry, precisions=['bf16', 'fp4'])]),
         'unknown precision "fp4" (known: f32, bf16, f16, f8e4m3, f8e5m2, i8)'),
        ('listed twice', plan([dict(ok_entry, precisions=['bf16', 'bf16'])]),
         'precision "bf16" is listed twice'),
        ('grid rows', plan([dict(ok_entry, tiles=[[0, 1, 0], [1, 0, 1]])]),
         '"tiles" must be 3 rows of 3 codes: the output [300, 257] in tiles of 128 x 128 is 3 x 3'),
        ('grid columns', plan([dict(ok_entry, tiles=[[0, 1], [1, 0], [0, 0]])]),
         'tiles[0] must hold 3 codes'),
        ('code', plan([dict(ok_entry, tiles=[[0, 1, 0], [1, 2, 1], [0, 0, 1]])]),
         'tiles[1][1] = 2 is not an index into "precisions" (0 to 1)'),
        ('tile', plan([dict(ok_entry, tile=[0, 128])]), '"tile" must be [rows, columns]'),
        ('both', plan([dict(ok_entry, precision='bf16')]),
         '"precision" (every tile\'s) or "precisions" and "tiles", not both'),
        ('integer matmul', plan([{'node': 'mm', 'tile': [64, 64], 'precision': 'i8'}]),
         'is not a matmul of float operands'),
    ]
    failures = 0
    for what, content, expect in cases:
        p = os.path.join(d, 'bad.plan.json')
        with open(p, 'w') as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        target = ipath if what == 'integer matmul' else path
        rc, out, err = run(args.tcc, 'compile', target, '--target', 'host', '--precision-plan', p,
                           '-o', os.path.join(d, 'bad.tccb'))
        lines = err.strip().splitlines()
        if rc != 1 or len(lines) != 1 or expect not in lines[0]:
            print('FAILED refusal (%s): rc %d, expected one line with %r, got %r'
                  % (what, rc, expect, err.strip()))
            failures += 1
    # A missing file, too.
    rc, _, err = run(args.tcc, 'compile', path, '--target', 'host', '--precision-plan',
                     os.path.join(d, 'none.json'), '-o', os.path.join(d, 'bad.tccb'))
    if rc != 1 or len(err.strip().splitlines()) != 1:
        print('FAILED refusal (missing file): rc %d, %r' % (rc, err.strip()))
        failures += 1
    print('%d refusals checked, %d failed' % (len(cases) + 1, failures))
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--cases', type=int, default=24)
    args = ap.parse_args()
    seed = int(os.environ.get('TCC_TEST_SEED', int.from_bytes(os.urandom(4), 'little')))
    print('random cases from seed %d (TCC_TEST_SEED repeats it)' % seed)
    rng = np.random.default_rng(seed)
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for i in range(args.cases):
            ok, what = run_case(args, d, rng, i)
            print(('ok   ' if ok else 'FAIL ') + what)
            failures += not ok
        # The plan decides: the same inputs under all-f32 and all-f8e4m3
        # plans differ by about f8's rounding, and all-f32 matches f32.
        path = os.path.join(d, 'w.json')
        with open(path, 'w') as f:
            json.dump(model('w', 'f32', [130, 96], [96, 70], False, False), f)
        a = rng.standard_normal((130, 96)).astype(np.float32)
        b = rng.standard_normal((96, 70)).astype(np.float32)
        np.save(os.path.join(d, 'a.npy'), a)
        np.save(os.path.join(d, 'b.npy'), b)
        errs = {}
        for p in ('f32', 'f8e4m3'):
            pf = os.path.join(d, p + '.plan.json')
            with open(pf, 'w') as f:
                json.dump({'format': 'tcc-precision-plan', 'version': 1,
                           'matmuls': [{'node': 'mm', 'tile': [64, 64], 'precision': p}]}, f)
            out = os.path.join(d, p + '-out')
            rc, _, err = run(args.tcc, 'run', path, '--target', 'host', '--precision-plan', pf,
                             '--output-dir', out, '--input', 'a=' + os.path.join(d, 'a.npy'),
                             '--input', 'b=' + os.path.join(d, 'b.npy'))
            if rc:
                print('FAIL uniform %s: %s' % (p, L.first_line(err)))
                failures += 1
                continue
            ref = a.astype(np.float64) @ b.astype(np.float64)
            errs[p] = np.abs(np.load(os.path.join(out, 'c.npy')) - ref).max() / np.abs(ref).max()
        if len(errs) == 2 and not (errs['f32'] < 1e-5 < 1e-3 < errs['f8e4m3'] < 0.1):
            print('FAIL uniform plans: relative errors %s' % errs)
            failures += 1
        else:
            print('ok   uniform plans: relative errors %s' % errs)
        failures += refusals(args, d)
    print('%s' % ('all passed' if not failures else '%d failed' % failures))
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
