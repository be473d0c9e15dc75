#!/usr/bin/env python3
"""A matmul's elementwise code after it, run in the GEMM template's epilogue.

    matmul_epilogue_test.py check TCC [--ptxas PTXAS] [--count N]
    matmul_epilogue_test.py record TCC --out DIR [--count N]
    matmul_epilogue_test.py replay RUNTIME_TCC --dir DIR

Random models: a matmul (f8e4m3, i8, bf16, f16 or f32 operands; odd sizes;
B stored either way; a batch sharing B) followed by what users write after
one: scales per row, per column (an input or a param) and per tensor, a
bias, an activation (ReLU, tanh, SiLU, GELU's tanh form
written out), a residual, a cast to bf16, f16 or f32.

`check` (here, no GPU): each compiles to the template's kernel alone for
sm_90a (wgmma) and sm_90 (mma.sync), `tcc inspect` shows it (a transpose of
B first where B is [K, N]), =false gives the epilogue a kernel of its own,
ptxas reports no spills (nor wgmmas serialised; on sm_90 at most 32 bytes,
see check), and the model on the host matches this script's NumPy
reference (so the reference states the model's semantics).
`record` writes sm_90a and sm_90 bundles and their inputs; `replay` runs
them on a GPU against the reference (float64 from the same inputs).

Tolerance: the GEMM's f32 sums (a few ulps times sqrt(K) of sum |a||b|;
for f8 on wgmma also the hardware's 14-bit sums within a promoted run)
and the model's own roundings (a 16-bit matmul result, the stored dtype,
which the fused code rounds once instead), carried through the code's
slope (bounded by the scales' magnitudes), plus 4 ulps of the stored dtype.
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
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'e2e'))
import e2elib as L  # noqa: E402

ACTS = ['none', 'relu', 'tanh', 'silu', 'gelu_tanh']
# Off by default until a GPU run has checked it (docs/cli.md).
ON = '--gpu-matmul-epilogues=true'


def draw(rng, i):
    """One random case: the model and what the reference needs."""
    dt = ['f8e4m3', 'i8', 'bf16', 'f16', 'f32'][i % 5]
    m = int(rng.choice([64, 130, 333, 1000]))
    n = int(rng.choice([64, 200, 517, 768]))
    k = int(rng.choice([64, 256, 1040])) if dt in ('f8e4m3', 'i8') else \
        int(rng.choice([64, 200, 520]))
    batch = int(rng.choice([0, 0, 3]))
    tb = bool(rng.integers(2)) or dt == 'f32'
    acc = 'i32' if dt == 'i8' else str(rng.choice(['f32', 'f32', 'bf16'])) \
        if dt != 'f32' else 'f32'
    lead = [batch] if batch else []
    c = dict(name='mme%d' % i, dt=dt, m=m, n=n, k=k, batch=batch, tb=tb, acc=acc)
    ins = [{'name': 'a', 'dtype': dt, 'shape': lead + [m, k]},
           {'name': 'b', 'dtype': dt, 'shape': [n, k] if tb else [k, n]}]
    params = []
    nodes = [{'op': 'matmul', 'inputs': ['a', 'b'], 'outputs': ['x0'],
              'attrs': {'transpose_b': tb, 'out_dtype': acc}}]
    ct = 'i32' if acc == 'i32' else acc  # the running dtype
    steps = []
    cur = 'x0'

    def node(op, inputs, attrs=None):
        nonlocal cur
        out = 'x%d' % len(nodes)
        nodes.append({'op': op, 'inputs': inputs, 'outputs': [out], 'attrs': attrs or {}})
        cur = out
    if ct != 'f32':
        node('cast', [cur], {'to': 'f32'})
        steps.append(('cast', 'f32'))
        ct = 'f32'
    if rng.integers(2):
        ins.append({'name': 'rs', 'dtype': 'f32', 'shape': lead + [m, 1]})
        node('mul', [cur, 'rs'])
        steps.append(('mul', 'rs'))
    if rng.integers(2):
        shape = [n] if rng.integers(2) else [1, n]
        if rng.integers(2):
            params.append({'name': 'cs', 'dtype': 'f32', 'shape': shape,
                           'init': {'random': 'uniform', 'low': 0.5, 'high': 1.5,
                                    'seed': int(rng.integers(1 << 30))}})
        else:
            ins.append({'name': 'cs', 'dtype': 'f32', 'shape': shape})
        node('mul', [cur, 'cs'])
        steps.append(('mul', 'cs'))
    if rng.integers(2):
        nodes.append({'op': 'constant', 'inputs': [], 'outputs': ['ts'],
                      'attrs': {'dtype': 'f32', 'shape': [], 'value': 0.125}})
        node('mul', [cur, 'ts'])
        steps.append(('scale', 0.125))
    if rng.integers(2):
        # (A bf16 bias cast to f32 is a kernel of its own today: the cast
        # of an input is grouped apart from the matmul.)
        ins.append({'name': 'bias', 'dtype': 'f32', 'shape': [n]})
        node('add', [cur, 'bias'])
        steps.append(('add', 'bias'))
    act = ACTS[int(rng.integers(len(ACTS)))]
    if act == 'relu':
        node('relu', [cur])
    elif act == 'tanh':
        node('tanh', [cur])
    elif act == 'silu':
        x = cur
        node('sigmoid', [x])
        node('mul', [x, cur])
    elif act == 'gelu_tanh':
        x = cur
        for name, v in (('g_half', 0.5), ('g_one', 1.0), ('g_c', 0.7978845608),
                        ('g_k', 0.044715)):
            nodes.append({'op': 'constant', 'inputs': [], 'outputs': [name],
                          'attrs': {'dtype': 'f32', 'shape': [], 'value': v}})
        node('mul', [x, x])
        node('mul', [cur, x])
        node('mul', [cur, 'g_k'])
        node('add', [x, cur])
        node('mul', [cur, 'g_c'])
        node('tanh', [cur])
        node('add', [cur, 'g_one'])
        node('mul', [cur, x])
        node('mul', [cur, 'g_half'])
    steps.append(('act', act))
    if rng.integers(3) == 0:
        ins.append({'name': 'res', 'dtype': 'f32', 'shape': lead + [m, n]})
        node('add', [cur, 'res'])
        steps.append(('add', 'res'))
    out = str(rng.choice(['f32', 'bf16', 'f16']))
    if len(nodes) == 1:
        out = 'bf16'  # some code after the matmul, always
    if out == acc and all(s[0] == 'cast' or s == ('act', 'none') for s in steps):
        # A widening cast and its exact way back fold away (tcc.cast's
        # folder): the matmul alone. Round to the other 16-bit dtype.
        out = 'f16' if acc == 'bf16' else 'bf16'
    if out != 'f32':
        node('cast', [cur], {'to': out})
    steps.append(('cast', out))
    nodes[-1]['outputs'] = ['y']
    c['out'] = out
    c['steps'] = steps
    c['model'] = {'format': 'tcc-model', 'version': 1, 'name': c['name'],
                  'inputs': ins, 'params': params, 'nodes': nodes, 'outputs': ['y']}
    return c


def make_inputs(c, rng):
    vals = {}
    for t in c['model']['inputs']:
        shape, dt = t['shape'], t['dtype']
        if dt == 'i8':
            v = rng.integers(-128, 128, shape).astype(np.int8)
        elif t['name'] in ('a', 'b'):
            v = L.rnd(dt, rng.standard_normal(shape)).astype(np.float32)
        elif t['name'] == 'rs':
            v = rng.uniform(0.5, 1.5, shape).astype(np.float32) / 64
        elif t['name'] == 'cs':
            v = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        else:
            v = L.rnd(dt, rng.standard_normal(shape)).astype(np.float32)
        vals[t['name']] = v
    for t in c['model']['params']:
        vals[t['name']] = L.random_init(t['init'], int(np.prod(t['shape']))).reshape(
            t['shape']).astype(np.float32)
    return vals


def reference(c, v):
    """float64 of the model's code, and the bound on its error."""
    a = v['a'].astype(np.float64)
    b = v['b'].astype(np.float64)
    bt = b.T if c['tb'] else b
    x = a @ bt
    mag = np.abs(a) @ np.abs(bt)
    if c['dt'] == 'i8':
        mag = np.zeros_like(mag)  # exact in i32
    if c['dt'] in ('f8e4m3', 'i8', 'bf16', 'f16', 'f32'):
        sum_err = (4 * np.sqrt(c['k']) + 8) * 2.0**-24 * mag
    if c['dt'] == 'f8e4m3':
        # Hopper's f8 wgmma keeps about 14 bits in its accumulator
        # (DeepSeek-V3's report); the template promotes each run of 1 (the
        # default) or 2 k-tiles (at most 8 wgmmas of k 32) to f32, so each
        # run's sum is off by at most 8 roundings of 2^-14 of its magnitude,
        # and the runs' together by 2^-11 of `mag`. (Measured on the H100,
        # session 41, runs of 2: 2^-12.4 at K 256, the same bits fused and
        # unfused.)
        sum_err = sum_err + 8 * 2.0**-14 * mag
    if c['dt'] == 'i8' and (x.max() > 2**24 or x.min() < -2**24):
        sum_err = sum_err + 2.0**-24 * np.abs(x)  # i32 to f32 conversion
    # The model rounds a 16-bit matmul result; the fused code does not.
    err = sum_err + (L.eps(c['acc']) * np.abs(x) if c['acc'] in ('bf16', 'f16') else 0)
    slope = np.ones_like(x)
    for kind, what in c['steps']:
        if kind == 'mul':
            s = v[what].astype(np.float64)
            x, err = x * s, err * np.abs(s)
        elif kind == 'scale':
            x, err = x * what, err * what
        elif kind == 'add':
            x = x + L.rnd('f32', v[what]).astype(np.float64)
        elif kind == 'act':
            if what == 'relu':
                x = np.maximum(x, 0)
            elif what == 'tanh':
                x = np.tanh(x)
            elif what == 'silu':
                slope = 1.1 * np.ones_like(x)
                x = x / (1 + np.exp(-x))
            elif what == 'gelu_tanh':
                slope = 1.13 * np.ones_like(x)
                x = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
            err = err * slope
    out = c['out']
    # f32 code: a few ulps of each intermediate; the store rounds once (the
    # model's own rounding of a 16-bit store: 1 ulp more).
    bound = err + 8 * 2.0**-24 * (np.abs(x) + 1) + 2 * L.eps(out) * np.abs(x) + L.tiny(out)
    return x, bound


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def save_inputs(d, c, vals):
    files = []
    for t in c['model']['inputs']:
        path = os.path.join(d, '%s.%s.npy' % (c['name'], t['name']))
        np.save(path, L.to_npy(t['dtype'], vals[t['name']]))
        files += ['--input', '%s=%s' % (t['name'], os.path.basename(path))]
    return files


def compare(c, got, vals):
    ref, bound = reference(c, vals)
    got = got.astype(np.float64)
    diff = np.abs(got - ref)
    bad = ~(diff <= bound)
    if c['out'] == 'f16':
        # Past f16's largest finite value (65504, rounding up from 65520) the
        # store gives inf, as the model's cast does; near it either.
        over = np.abs(ref) >= 65520 * (1 - 1e-3)
        bad &= ~(over & ((got == np.sign(ref) * np.inf) | (np.abs(ref) < 65520 * (1 + 1e-3))))
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, diff / bound, 0)), diff.shape)
        return '%d of %d off (worst at %s: got %g, want %g, allowed %g)' % (
            bad.sum(), bad.size, i, got[i], ref[i], bound[i])
    return None


def fail(msg):
    print('FAILED: ' + msg)
    sys.exit(1)


def check(args, rng, cases):
    with tempfile.TemporaryDirectory() as d:
        for c in cases:
            path = os.path.join(d, c['name'] + '.json')
            with open(path, 'w') as f:
                json.dump(c['model'], f)
            for target in ('sm_90a', 'sm_90'):
                bundle = os.path.join(d, '%s.%s.tccb' % (c['name'], target))
                ptx = os.path.join(d, '%s.%s.ptx' % (c['name'], target))
                rc, _, err = run(args.tcc, 'compile', path, '--target', target, ON, '-o', bundle)
                eight = c['dt'] in ('f8e4m3', 'i8')
                if target == 'sm_90' and eight:
                    continue  # 8-bit operands: wgmma (sm_90a) only
                if rc:
                    fail('%s %s: %s' % (c['name'], target, err.strip()))
                rc, _, err = run(args.tcc, 'compile', path, '--target', target, ON, '--emit', 'asm',
                                 '-o', ptx)
                man = json.loads(run(args.tcc, 'inspect', bundle)[1])
                names = [man['kernels'][x['kernel']]['name'] for x in man['launches']]
                # 8-bit operands: wgmma; the others whichever template the
                # heuristic picks for the shape.
                want = ('_wgmma',) if eight else ('_wgmma', '_mma')
                gemm = [x for x in names if x.endswith(want)]
                others = [x for x in names if not x.endswith(want + ('_transpose_b',
                                                                     '_splitk'))]
                if len(gemm) != 1 or others:
                    fail('%s %s: launches %s: the epilogue is not in the GEMM kernel'
                         % (c['name'], target, names))
                rc, _, _ = run(args.tcc, 'compile', path, '--target', target,
                               '--gpu-matmul-epilogues=false', '-o', bundle + '.off')
                man = json.loads(run(args.tcc, 'inspect', bundle + '.off')[1])
                if rc or len(man['launches']) <= len(names):
                    fail('%s %s: =false should add the epilogue\'s own kernel'
                         % (c['name'], target))
                if args.ptxas:
                    rc, _, err = run(args.ptxas, '-arch=' + target, '-v', ptx, '-o', os.devnull)
                    spills = [int(x) for x in re.findall(r'(\d+) bytes spill stores', err)]
                    if 'C7514' in err:
                        fail('%s %s: ptxas serialises the wgmmas (C7514)' % (c['name'], target))
                    # sm_90's mma.sync kernel leaves its register count to
                    # ptxas, whose occupancy target (80 for some shapes
                    # with a tanh epilogue) may spill a few words; a real
                    # spill of the epilogue's values is far more.
                    allowed = 32 if target == 'sm_90' else 0
                    if rc or any(x > allowed for x in spills):
                        fail('%s %s: ptxas rc %d, spills %s: %s' % (
                            c['name'], target, rc, spills, err.strip()[-200:]))
            vals = make_inputs(c, rng)
            files = save_inputs(d, c, vals)
            out = os.path.join(d, c['name'] + '-out')
            p = subprocess.run([args.tcc, 'run', path, '--target', 'host', '--output-dir', out]
                               + files, capture_output=True, text=True, cwd=d)
            if p.returncode:
                fail('%s on the host: %s' % (c['name'], p.stderr.strip()))
            got = L.from_npy(c['out'], np.load(os.path.join(out, 'y.npy')))
            why = compare(c, got, vals)
            if why:
                fail('%s on the host against the reference: %s' % (c['name'], why))
            print('ok %-6s %-6s %s' % (c['name'], c['dt'], ' '.join(
                '%s:%s' % s for s in c['steps'])))


def record(args, rng, cases):
    os.makedirs(args.out, exist_ok=True)
    for c in cases:
        path = os.path.join(args.out, c['name'] + '.json')
        with open(path, 'w') as f:
            json.dump(c['model'], f)
        c['bundles'] = []
        for target in ('sm_90a', 'sm_90'):
            if target == 'sm_90' and c['dt'] in ('f8e4m3', 'i8'):
                continue
            bundle = '%s.%s.tccb' % (c['name'], target)
            rc, _, err = run(args.tcc, 'compile', path, '--target', target, ON, '-o',
                             os.path.join(args.out, bundle))
            if rc:
                fail('%s %s: %s' % (c['name'], target, err.strip()))
            c['bundles'].append(bundle)
        c['files'] = save_inputs(args.out, c, make_inputs(c, rng))
    with open(os.path.join(args.out, 'cases.json'), 'w') as f:
        json.dump(cases, f)
    print('recorded %d cases in %s' % (len(cases), args.out))


def replay(args):
    with open(os.path.join(args.dir, 'cases.json')) as f:
        cases = json.load(f)
    failed = 0
    with tempfile.TemporaryDirectory() as t:
        for c in cases:
            vals = {}
            for i in range(0, len(c['files']), 2):
                name, file = c['files'][i + 1].split('=', 1)
                dt = next(x['dtype'] for x in c['model']['inputs'] if x['name'] == name)
                vals[name] = L.from_npy(dt, np.load(os.path.join(args.dir, file)))
            for p in c['model']['params']:
                vals[p['name']] = L.random_init(p['init'], int(np.prod(p['shape']))).reshape(
                    p['shape']).astype(np.float32)
            for bundle in c['bundles']:
                out = os.path.join(t, bundle)
                p = subprocess.run([args.tcc, 'run', os.path.abspath(os.path.join(
                    args.dir, bundle)), '--output-dir', out] + c['files'],
                    capture_output=True, text=True, cwd=args.dir)
                if p.returncode:
                    print('FAIL %s: %s' % (bundle, p.stderr.strip()[-300:]))
                    failed += 1
                    continue
                got = L.from_npy(c['out'], np.load(os.path.join(out, 'y.npy')))
                why = compare(c, got, vals)
                failed += bool(why)
                print('%s %s %s' % ('FAIL' if why else 'PASS', bundle, why or ''))
    print('%d of %d cases failed' % (failed, len(cases)))
    sys.exit(1 if failed else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('mode', choices=['check', 'record', 'replay'])
    ap.add_argument('tcc')
    ap.add_argument('--ptxas')
    ap.add_argument('--count', type=int, default=10)
    ap.add_argument('--out')
    ap.add_argument('--dir')
    args = ap.parse_args()
    args.tcc = os.path.abspath(args.tcc)
    if args.mode == 'replay':
        return replay(args)
    seed = int(os.environ.get('TCC_TEST_SEED', int.from_bytes(os.urandom(4), 'little')))
    print('random cases from seed %d (TCC_TEST_SEED repeats it)' % seed)
    rng = np.random.default_rng(seed)
    cases = [draw(rng, i) for i in range(args.count)]
    if args.mode == 'check':
        check(args, rng, cases)
    else:
        record(args, rng, cases)


if __name__ == '__main__':
    main()
