#!/usr/bin/env python3
"""Reduction chains over rows longer than a block holds (a row spans a
thread-block cluster), as users write them.

    long_rows_test.py check TCC [--ptxas PTXAS]
    long_rows_test.py record TCC --out DIR
    long_rows_test.py replay RUNTIME_TCC --dir DIR

Forms: softmax, log-softmax, cross-entropy, log-sum-exp written out (also
at temperature 2: exp((x - max)/2)), a padding mask given as a bool input
(rows fully masked, masked but for a few positions at either end), a
softcap (tanh), a soft minimum (exp(min - x)), a log-sum-exp masked by a
0/1 factor after the exponential (whose masked terms would overflow
against a block's own max), and a sum of squares about the max; f32, f16 and bf16; lengths 131072, 100003, 70001 and 50257 (odd
ones included).

Over a cluster, a max and a later sum whose terms are exp(k·(max - v))·h,
v what the max reduced (k < 0; k > 0 under a min), combine in one round of
(max, sum) pairs, each block's sum corrected by exp(k·(m - m_b))
(tcc-gpu-row-fusion, pair-rounds), unless an exponential before the sum is read again after it
(softmax's division: the pairing would compute it twice); any other chain
(the squares) takes a round per reduction.

A chain that writes no rows and whose row values only the pair reads
(cross-entropy, log-sum-exp), on a row read in vectors of 4 or more,
streams through one block a row by default (stream-rows: a running (max,
sum) a thread over the row's chunks, no cluster); `"rows": {"stream":
false}` gives it the cluster form, which the checks below use.

`check` (no GPU): each case compiles for sm_90 (stream off) to one row kernel with
clusters and as many cluster barriers as its rounds (the pairs one fewer),
the streamed cases by default to one without cluster barriers,
ptxas assembles it, and the model on the host (3 rows) matches this
script's NumPy reference. `record` writes sm_90 bundles with the pairing on
and off (and the streamed one); `replay` runs them on a GPU with fresh inputs against a float64
reference: each must meet the dtype's tolerance, and the paired kernel's
error must stay within 2x the unpaired one's plus 2 ulps of the dtype (its
terms exp(x - m_b), rounded to a 16-bit dtype against another max, may
move the rounded sum to its neighbour).

The reference rounds each primitive to the dtype as the format says.
Tolerance (relative to the row's values, |ref| + 1e-3 max|ref|): 64 ulps
of f32 (the terms' exponents x - m, up to ~40 here, carry 40 ulps of their
argument into exp; the sums add sqrt(n) ulps), plus 4 ulps of a 16-bit
dtype: a sum in another order, or of terms exp(x - m_b) rounded against
another max, may round to its neighbour, and each op after it with it.
"""
import json
import os
import re
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'e2e'))
import e2elib as L  # noqa: E402

ROWS = 24  # on the GPU; 3 on the host

# (name, form, dtype, length, paired: one (max, sum) round)
CASES = [
    ('softmax_f32_131072', 'softmax', 'f32', 131072, False),
    ('softmax_f16_131072', 'softmax', 'f16', 131072, False),
    ('softmax_bf16_50257', 'softmax', 'bf16', 50257, False),
    ('log_softmax_f32_100003', 'log_softmax', 'f32', 100003, True),
    ('log_softmax_bf16_131072', 'log_softmax', 'bf16', 131072, True),
    ('cross_entropy_f32_131072', 'cross_entropy', 'f32', 131072, True),
    ('cross_entropy_f16_50257', 'cross_entropy', 'f16', 50257, True),
    # Blocks of 512 holding 32 16-bit values, no row written (ptxas's
    # own choice gives them 4 blocks a multiprocessor: check its spills),
    # and a 16-bit row read one value at a time.
    ('cross_entropy_f16_131072', 'cross_entropy', 'f16', 131072, True),
    ('logsumexp_bf16_131072', 'logsumexp', 'bf16', 131072, True),
    ('log_softmax_f16_50257', 'log_softmax', 'f16', 50257, True),
    ('masked_softmax_f32_100003', 'masked_softmax', 'f32', 100003, False),
    ('masked_log_softmax_bf16_131072', 'masked_log_softmax', 'bf16', 131072, True),
    ('softcap_log_softmax_bf16_70001', 'softcap_log_softmax', 'bf16', 70001, True),
    ('lse_t2_f32_131072', 'lse_t2', 'f32', 131072, True),
    ('logsumexp_f32_131072', 'logsumexp', 'f32', 131072, True),
    ('softmin_f16_100003', 'softmin', 'f16', 100003, True),
    ('mul_masked_lse_f32_131072', 'mul_masked_lse', 'f32', 131072, False),
    ('squares_f32_131072', 'squares', 'f32', 131072, False),
]


def node(op, inputs, output, **attrs):
    n = {'op': op, 'inputs': inputs, 'outputs': [output]}
    if attrs:
        n['attrs'] = attrs
    return n


def make_model(form, dt, rows, length):
    shape = [rows, length]
    inputs = [{'name': 'x', 'dtype': dt, 'shape': shape}]
    keep = [node('reduce_max', ['x'], 'm', axes=[-1], keepdims=True)]
    if form == 'softmax':
        nodes = [node('softmax', ['x'], 'y', axis=-1)]
    elif form == 'log_softmax':
        nodes = [node('log_softmax', ['x'], 'y', axis=-1)]
    elif form == 'cross_entropy':
        inputs.append({'name': 't', 'dtype': 'i64', 'shape': [rows, 1]})
        nodes = [node('log_softmax', ['x'], 'lp', axis=-1),
                 node('take_along_axis', ['lp', 't'], 'p', axis=1),
                 node('neg', ['p'], 'n'),
                 node('reduce_mean', ['n'], 'y', axes=[0], keepdims=True)]
    elif form in ('masked_softmax', 'masked_log_softmax'):
        inputs.append({'name': 'mask', 'dtype': 'bool', 'shape': shape})
        nodes = [node('constant', [], 'ninf', dtype=dt, shape=[], value='-inf'),
                 node('select', ['mask', 'x', 'ninf'], 's'),
                 node(form[len('masked_'):], ['s'], 'y', axis=-1)]
    elif form == 'softcap_log_softmax':
        nodes = [node('constant', [], 'a', dtype=dt, shape=[], value=0.05),
                 node('constant', [], 'c', dtype=dt, shape=[], value=20.0),
                 node('mul', ['x', 'a'], 'xa'), node('tanh', ['xa'], 'th'),
                 node('mul', ['th', 'c'], 's'), node('log_softmax', ['s'], 'y', axis=-1)]
    elif form == 'lse_t2':
        # Log-sum-exp at temperature 2 by hand: m + 2 log sum exp((x - m) / 2).
        nodes = keep + [
            node('constant', [], 'h', dtype=dt, shape=[], value=0.5),
            node('constant', [], 'two', dtype=dt, shape=[], value=2.0),
            node('sub', ['x', 'm'], 'd'), node('mul', ['d', 'h'], 'dh'),
            node('exp', ['dh'], 'e'),
            node('reduce_sum', ['e'], 'z', axes=[-1], keepdims=True),
            node('log', ['z'], 'l'), node('mul', ['l', 'two'], 'l2'),
            node('add', ['m', 'l2'], 'y')]
    elif form == 'logsumexp':
        nodes = keep + [
            node('sub', ['x', 'm'], 'd'), node('exp', ['d'], 'e'),
            node('reduce_sum', ['e'], 'z', axes=[-1], keepdims=True),
            node('log', ['z'], 'l'), node('add', ['m', 'l'], 'y')]
    elif form == 'softmin':
        # A soft minimum: m - log sum exp(m - x), m the row's min.
        nodes = [node('reduce_min', ['x'], 'm', axes=[-1], keepdims=True),
                 node('sub', ['m', 'x'], 'd'), node('exp', ['d'], 'e'),
                 node('reduce_sum', ['e'], 'z', axes=[-1], keepdims=True),
                 node('log', ['z'], 'l'), node('sub', ['m', 'l'], 'y')]
    elif form == 'mul_masked_lse':
        # Log-sum-exp over the kept positions, the mask applied twice: -inf
        # before the max, a 0/1 factor after the exponential (whose masked
        # terms would overflow against a block's own max: not paired).
        inputs.append({'name': 'mask', 'dtype': 'bool', 'shape': shape})
        nodes = [node('constant', [], 'ninf', dtype=dt, shape=[], value='-inf'),
                 node('select', ['mask', 'x', 'ninf'], 'xm'),
                 node('reduce_max', ['xm'], 'm', axes=[-1], keepdims=True),
                 node('sub', ['x', 'm'], 'd'), node('exp', ['d'], 'e'),
                 node('cast', ['mask'], 'mf', to=dt), node('mul', ['e', 'mf'], 'em'),
                 node('reduce_sum', ['em'], 'z', axes=[-1], keepdims=True),
                 node('log', ['z'], 'l'), node('add', ['m', 'l'], 'y')]
    elif form == 'squares':
        nodes = keep + [
            node('sub', ['x', 'm'], 'd'), node('mul', ['d', 'd'], 'q'),
            node('reduce_sum', ['q'], 'y', axes=[-1], keepdims=True)]
    else:
        raise ValueError(form)
    return {'format': 'tcc-model', 'version': 1, 'name': form, 'inputs': inputs,
            'params': [], 'nodes': nodes, 'outputs': ['y']}


def make_inputs(form, dt, rows, length, rng):
    x = L.rnd(dt, 4.0 * rng.standard_normal((rows, length)))
    vals = {'x': x}
    if form == 'cross_entropy':
        vals['t'] = rng.integers(0, length, (rows, 1))
    if form.startswith('masked_'):
        mask = rng.random((rows, length)) < 0.5
        mask[0] = False                       # fully masked: NaN, as PyTorch
        mask[1] = False
        mask[1, :37] = True                   # the cluster's last blocks empty
        if rows > 2:
            mask[2] = False
            mask[2, -5:] = True               # its first blocks empty
        vals['mask'] = mask
    if form == 'mul_masked_lse':
        mask = rng.random((rows, length)) < 0.5
        half = length // 2
        # Masked positions of the first half 100 above the kept ones, the
        # kept ones of the second half 40 above: exp(x - m_b) overflows in
        # the first half's blocks, exp(x - m) does not.
        x = x + np.where(~mask & (np.arange(length) < half), 100.0, 0.0)
        x = x + np.where(mask & (np.arange(length) >= half), 40.0, 0.0)
        vals['x'] = L.rnd(dt, x)
        vals['mask'] = mask
    return vals


def reference(form, dt, vals):
    """float64 from the same inputs, each primitive rounded to the dtype as
    the format says (f16 and bf16 compute in f32 and round the result)."""
    def r(v):
        return L.narrow(dt, v)
    x = vals['x']
    with np.errstate(invalid='ignore', divide='ignore', over='ignore'):
        if form in ('masked_softmax', 'masked_log_softmax'):
            x = np.where(vals['mask'], x, -np.inf)
            form = form[len('masked_'):]
        if form == 'softcap_log_softmax':
            x = r(r(np.tanh(r(x * L.rnd(dt, 0.05)))) * 20.0)
            form = 'log_softmax'
        # The composites compute in f32 over f16 and bf16, rounding once.
        cr = L.composite_rounding(dt, r)
        if form == 'softmax':
            return L.softmax(x, **cr)
        if form == 'log_softmax':
            return L.log_softmax(x, **cr)
        if form == 'cross_entropy':
            p = np.take_along_axis(L.log_softmax(x, **cr), vals['t'], axis=1)
            return r(np.mean(-p, keepdims=True))
        if form == 'mul_masked_lse':
            m = np.max(np.where(vals['mask'], x, -np.inf), axis=-1, keepdims=True)
            e = r(np.exp(r(x - m))) * vals['mask']
            return r(m + r(np.log(r(e.sum(-1, keepdims=True)))))
        m = np.max(x, axis=-1, keepdims=True)
        if form == 'lse_t2':
            e = r(np.exp(r(r(x - m) * 0.5)))
            return r(m + r(r(np.log(r(e.sum(-1, keepdims=True)))) * 2.0))
        if form == 'logsumexp':
            return r(m + r(np.log(r(r(np.exp(r(x - m))).sum(-1, keepdims=True)))))
        if form == 'softmin':
            mn = np.min(x, -1, keepdims=True)
            e = r(np.exp(r(mn - x)))
            return r(mn - r(np.log(r(e.sum(-1, keepdims=True)))))
        if form == 'squares':
            d = r(x - m)
            return r(r(d * d).sum(-1, keepdims=True))
    raise ValueError(form)


def error(dt, got, ref):
    """(max error relative to the row's scale, where NaN or inf differ)."""
    scale = np.abs(ref) + 1e-3 * np.nanmax(np.where(np.isfinite(ref), np.abs(ref), 0),
                                           axis=-1, keepdims=True)
    special = ~np.isfinite(ref) | ~np.isfinite(got)
    bad = special & ~((np.isnan(ref) & np.isnan(got)) | (ref == got))
    with np.errstate(invalid='ignore'):
        rel = np.where(special, 0.0, np.abs(got - ref) / scale)
    return float(rel.max()), int(bad.sum())


def run(*args):
    return L.run_tcc(list(args))


def compare(name, dt, got, ref, other=None):
    err, bad = error(dt, got, ref)
    if bad:
        return '%s: %d NaN/inf entries differ from the reference' % (name, bad)
    if not err <= L.chain_tolerance(dt):
        return '%s: error %.3g over the tolerance %.3g' % (name, err, L.chain_tolerance(dt))
    if other is not None and not err <= 2 * other + 2 * L.eps(dt):
        return '%s: error %.3g, the unpaired kernel\'s %.3g' % (name, err, other)
    return None


def schedule_file(d, pair):
    """The cluster form, paired or not (streaming off)."""
    path = os.path.join(d, 'pair-%s.json' % ('on' if pair else 'off'))
    with open(path, 'w') as f:
        json.dump({'rows': {'pair_rounds': pair, 'stream': False}}, f)
    return path


def streamed(form, length):
    """Whether the default compile streams the case's rows: no row written,
    only the pair reads the row, the row read in vectors of 4 or more."""
    return form in ('cross_entropy', 'logsumexp', 'lse_t2') and length % 4 == 0


def fail(msg):
    print('FAILED: ' + msg)
    sys.exit(1)


def check(args):
    failures = []
    with tempfile.TemporaryDirectory() as d:
        rng = np.random.default_rng()
        for name, form, dt, length, paired in CASES:
            model = make_model(form, dt, ROWS, length)
            path = os.path.join(d, name + '.json')
            with open(path, 'w') as f:
                json.dump(model, f)
            ptx = os.path.join(d, name + '.ptx')
            if streamed(form, length):
                rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90', '--emit',
                                 'asm', '-o', ptx)
                if rc:
                    failures.append('%s: %s' % (name, L.first_line(err)))
                    continue
                waits = len(re.findall(r'barrier\.cluster\.wait', open(ptx).read()))
                if waits:
                    failures.append('%s: %d cluster barriers streamed, want 0' % (name, waits))
                if args.ptxas:
                    rc, _, err = run(args.ptxas, '-arch=sm_90', '-v', ptx, '-o', os.devnull)
                    if rc or any(int(n) for n in re.findall(r'(\d+) bytes spill stores', err)):
                        failures.append('%s streamed: ptxas rc %d or spills' % (name, rc))
            rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90', '--emit',
                             'asm', '-o', ptx, '--schedule', schedule_file(d, True))
            if rc:
                failures.append('%s: %s' % (name, L.first_line(err)))
                continue
            text = open(ptx).read()
            # Paired: the pair's round and the last before the blocks exit;
            # else a round each and the last.
            waits = len(re.findall(r'barrier\.cluster\.wait', text))
            want = 2 if paired else 3
            if waits != want:
                failures.append('%s: %d cluster barriers, want %d' % (name, waits, want))
            if args.ptxas:
                rc, _, err = run(args.ptxas, '-arch=sm_90', '-v', ptx, '-o', os.devnull)
                if rc:
                    failures.append('%s: ptxas: %s' % (name, L.first_line(err)))
                # The row kernels hold up to 32 values a thread: a spill
                # (a residency request, more values) costs them 1.2-2x.
                spills = [int(n) for n in re.findall(r'(\d+) bytes spill stores', err)]
                if any(spills):
                    failures.append('%s: ptxas spills %s bytes' % (name, max(spills)))
            # The model on the host, 3 rows, against the reference.
            small = make_model(form, dt, 3, length)
            with open(path, 'w') as f:
                json.dump(small, f)
            bundle = os.path.join(d, name + '.tccb')
            rc, _, err = run(args.tcc, 'compile', path, '--target', 'host', '-o', bundle)
            if rc:
                failures.append('%s host: %s' % (name, L.first_line(err)))
                continue
            vals = make_inputs(form, dt, 3, length, rng)
            got, err = L.run_bundle(args.tcc, bundle, L.save_inputs(d, name, small, vals), d)
            if err:
                failures.append('%s host: %s' % (name, err))
                continue
            msg = compare(name + ' host', dt, got, reference(form, dt, vals))
            if msg:
                failures.append(msg)
            print('ok %s' % name if not any(f.startswith(name) for f in failures)
                  else 'FAIL %s' % name)
    if failures:
        fail('; '.join(failures))
    print('%d long-row chains: cluster rounds as expected, host correct' % len(CASES))


def record(args):
    os.makedirs(args.out, exist_ok=True)
    manifest = []
    for name, form, dt, length, paired in CASES:
        model = make_model(form, dt, ROWS, length)
        path = os.path.join(args.out, name + '.json')
        with open(path, 'w') as f:
            json.dump(model, f)
        for pair in (True, False):
            bundle = '%s.%s.tccb' % (name, 'pair' if pair else 'rounds')
            rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90', '-o',
                             os.path.join(args.out, bundle), '--schedule',
                             schedule_file(args.out, pair))
            if rc:
                fail('%s: %s' % (name, L.first_line(err)))
        if streamed(form, length):
            rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90', '-o',
                             os.path.join(args.out, '%s.stream.tccb' % name))
            if rc:
                fail('%s: %s' % (name, L.first_line(err)))
        manifest.append({'name': name, 'form': form, 'dtype': dt, 'length': length})
        print('recorded %s' % name)
    L.write_manifest(args.out, manifest)


def replay(args):
    manifest = L.read_manifest(args.dir)
    rng = np.random.default_rng()
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for c in manifest:
            name, form, dt = c['name'], c['form'], c['dtype']
            model = json.load(open(os.path.join(args.dir, name + '.json')))
            vals = make_inputs(form, dt, ROWS, c['length'], rng)
            files = L.save_inputs(d, name, model, vals)
            ref = reference(form, dt, vals)
            errs = {}
            kinds = ('rounds', 'pair') + (('stream',) if streamed(form, c['length']) else ())
            for kind in kinds:
                got, err = L.run_bundle(args.tcc, os.path.join(args.dir, '%s.%s.tccb' % (
                    name, kind)), files, d)
                if err:
                    failures.append('%s %s: %s' % (name, kind, err))
                    break
                errs[kind] = error(dt, got, ref)[0]
                msg = compare('%s %s' % (name, kind), dt, got, ref,
                              errs.get('rounds') if kind != 'rounds' else None)
                if msg:
                    failures.append(msg)
            print('%-32s error: paired %.3g, a round each %.3g%s (tolerance %.3g)' % (
                name, errs.get('pair', float('nan')), errs.get('rounds', float('nan')),
                ', streamed %.3g' % errs['stream'] if 'stream' in errs else '',
                L.chain_tolerance(dt)))
    if failures:
        fail('; '.join(failures))
    print('%d long-row chains correct on the GPU, paired and not' % len(manifest))


def main():
    L.gpu_test_main({'check': check, 'record': record, 'replay': replay})


if __name__ == '__main__':
    main()
