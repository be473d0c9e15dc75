#!/usr/bin/env python3
"""`tcc tune` in split mode, end to end without a GPU: rounds of candidate
bundles for each matmul signature of a model (each built with the schedule
its record names, as `tcc inspect` shows), measurements read back (written
here by a stand-in for `tcc tune-measure`, a known function of the
schedule, since no GPU runs here), a second round that measures nothing
twice, `--finish` writing records with the fastest measured schedule of
each signature, and `tcc compile --tuning-records` building the model's
kernels with them. `tcc tune-measure` itself times host bundles of a round
folder. Bad uses fail in one line. Compiles for sm_90a; shapes drawn at
random."""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument('--tcc', required=True)
ap.add_argument('--seed', type=int, default=None)
args = ap.parse_args()
seed = args.seed if args.seed is not None else random.randrange(1 << 30)
rng = random.Random(seed)
print('seed', seed)
work = tempfile.mkdtemp()
failed = []


def check(what, ok, detail=''):
    print(('PASS ' if ok else 'FAIL ') + what + ('' if ok else ': ' + str(detail)[:300]))
    if not ok:
        failed.append(what)


def tcc(*a):
    return subprocess.run([args.tcc] + [str(x) for x in a], capture_output=True, text=True)


def one_line_error(r, needle):
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    return r.returncode == 1 and len(lines) == 1 and needle in lines[0]


# Two matmul signatures: a projection with a ReLU epilogue, and a batch.
m, n, k = rng.choice([256, 512, 1024]), rng.choice([256, 512, 768]), rng.choice([128, 256, 320])
b, bm, bn, bk = rng.choice([2, 3]), rng.choice([128, 192]), rng.choice([64, 128]), rng.choice([64, 96])
model = {'format': 'tcc-model', 'version': 1, 'name': 'two',
         'inputs': [{'name': 'x', 'dtype': 'bf16', 'shape': [m, k]},
                    {'name': 'w', 'dtype': 'bf16', 'shape': [n, k]},
                    {'name': 'p', 'dtype': 'f16', 'shape': [b, bm, bk]},
                    {'name': 'q', 'dtype': 'f16', 'shape': [b, bk, bn]}],
         'params': [],
         'nodes': [{'op': 'matmul', 'inputs': ['x', 'w'], 'outputs': ['h'],
                    'attrs': {'transpose_b': True}},
                   {'op': 'relu', 'inputs': ['h'], 'outputs': ['y']},
                   {'op': 'matmul', 'inputs': ['p', 'q'], 'outputs': ['z'], 'attrs': {}}],
         'outputs': ['y', 'z']}
path = os.path.join(work, 'two.json')
json.dump(model, open(path, 'w'))
tw = os.path.join(work, 'tune')


def stand_in(c):
    """A made-up time (ms) of a schedule: what the search is fed here."""
    s = c['schedule']
    t = 1.0 if c['template'] == 'wgmma' else 1.6
    t *= 1 + 0.1 * abs(s['tile_n'] - 128) / 64 + 0.05 * abs(s['stages'] - 4)
    return t * (1 + 0.2 * (s.get('split_k', 1) - 1)) * (1 + 0.001 * c['signature']['m'])


def inspect(bundle):
    r = tcc('inspect', bundle)
    return json.loads(r.stdout) if r.returncode == 0 else {'kernels': []}


def round_dir(r):
    return os.path.join(tw, 'round-%d' % r)


measured = {}  # (signature json, template, schedule json) -> ms
for rnd in (1, 2):
    r = tcc('tune', path, '--target', 'sm_90a', '--work', tw, '--round-size', 16, '--seed', seed)
    check('round %d written' % rnd, r.returncode == 0 and os.path.isdir(round_dir(rnd)), r.stderr)
    if r.returncode:
        break
    cands = json.load(open(os.path.join(round_dir(rnd), 'candidates.json')))['candidates']
    sigs = {json.dumps(c['signature'], sort_keys=True) for c in cands}
    check('round %d has candidates of both signatures' % rnd, len(sigs) == 2, sigs)
    keys = [(json.dumps(c['signature'], sort_keys=True), c['template'],
             json.dumps(c['schedule'], sort_keys=True)) for c in cands]
    check('round %d measures nothing twice' % rnd,
          len(set(keys)) == len(keys) and not set(keys) & set(measured), keys)
    # Every candidate bundle is the matmul alone, built with its schedule.
    bad = []
    for c in cands:
        kernels = [kk for kk in inspect(os.path.join(round_dir(rnd), c['bundle']))['kernels']
                   if kk.get('signature') == c['signature']]
        if not (kernels and kernels[0]['template'] == c['template'] and
                kernels[0]['schedule'] == c['schedule'] and kernels[0].get('tuning_record') and
                kernels[0]['name'].startswith(c['kernel_prefix'] + '_')):
            bad.append(c['id'])
    check('round %d bundles are built with their schedules' % rnd, not bad, bad)
    # The stand-in's measurements, one candidate left out (a failed run).
    meas = []
    for c, key in list(zip(cands, keys))[1:]:
        meas.append({'id': c['id'], 'ms': stand_in(c)})
        measured[key] = meas[-1]['ms']
    json.dump({'measurements': meas}, open(os.path.join(round_dir(rnd), 'measurements.json'), 'w'))

r = tcc('tune', path, '--target', 'sm_90a', '--work', tw, '--finish')
check('--finish writes the records', r.returncode == 0, r.stderr)
recs = json.load(open(os.path.join(tw, 'records.json')))['records'] if r.returncode == 0 else []
ok = len(recs) == 2
for rec in recs:
    sig = json.dumps(rec['signature'], sort_keys=True)
    best = min(ms for (g, t, s), ms in measured.items() if g == sig)
    mine = measured.get((sig, rec['template'], json.dumps(rec['schedule'], sort_keys=True)))
    # Ties (the stand-in repeats times) may pick any of the fastest.
    ok &= rec['gpu'] == 'sm_90a' and mine == best and abs(rec['ms'] - best) < 1e-9
check('each record is its signature\'s fastest measured schedule', ok, recs)
curve = [l.split(',') for l in open(os.path.join(tw, 'curve.csv')).read().split()[1:]] \
    if os.path.exists(os.path.join(tw, 'curve.csv')) else []
times = [float(c[2]) for c in curve]
check('the tuning curve falls to the records\' time',
      curve and all(a >= b for a, b in zip(times, times[1:])) and
      abs(times[-1] - sum(rec['ms'] for rec in recs)) < 1e-4 * times[-1] and
      int(curve[-1][0]) == len(measured), curve[-3:])
out = os.path.join(work, 'tuned.tccb')
r = tcc('compile', path, '--target', 'sm_90a', '--tuning-records', os.path.join(tw, 'records.json'),
        '-o', out)
applied = [kk for kk in inspect(out)['kernels'] if 'signature' in kk] if r.returncode == 0 else []
ok = len(applied) == 2 and all(
    kk.get('tuning_record') and any(rec['signature'] == kk['signature'] and
                                    rec['schedule'] == kk['schedule'] and
                                    rec['template'] == kk['template'] for rec in recs)
    for kk in applied)
check('the model compiles with the records applied', ok, r.stderr or applied)

# A convolution (ResNet's form: bias, residual, ReLU), its schedules
# (wgmma's with or without TMA copies, and mma.sync's) tuned the same way;
# the stand-in favours mma.sync here, so that its records are applied too.
c, o, hw = rng.choice([64, 128]), rng.choice([64, 128, 256]), rng.choice([14, 28, 56])
stride = rng.choice([1, 2])
ohw = (hw + 2 - 3) // stride + 1
conv = {'format': 'tcc-model', 'version': 1, 'name': 'conv',
        'inputs': [{'name': 'x', 'dtype': 'f16', 'shape': [1, c, hw, hw]},
                   {'name': 'r', 'dtype': 'f16', 'shape': [1, o, ohw, ohw]}],
        'params': [{'name': 'w', 'dtype': 'f16', 'shape': [o, c, 3, 3],
                    'init': {'random': 'normal', 'mean': 0, 'std': 0.05, 'seed': 1}},
                   {'name': 'b', 'dtype': 'f16', 'shape': [o], 'init': {'fill': 0.1}}],
        'outputs': ['y'],
        'nodes': [{'op': 'conv2d', 'inputs': ['x', 'w', 'b'], 'outputs': ['t'],
                   'attrs': {'strides': [stride, stride], 'pads': [1, 1, 1, 1]}},
                  {'op': 'add', 'inputs': ['t', 'r'], 'outputs': ['u']},
                  {'op': 'relu', 'inputs': ['u'], 'outputs': ['y']}]}
cpath = os.path.join(work, 'conv.json')
json.dump(conv, open(cpath, 'w'))
cw = os.path.join(work, 'conv-tune')
ctimes = {}
for rnd in (1, 2):
    r = tcc('tune', cpath, '--target', 'sm_90a', '--work', cw, '--round-size', 10, '--seed', seed)
    cands = json.load(open(os.path.join(cw, 'round-%d' % rnd, 'candidates.json')))['candidates'] \
        if r.returncode == 0 else []
    ok = len(cands) >= 8 and all(cc['kernel'] == 'conv' for cc in cands)
    for cc in cands:
        kernels = [kk for kk in inspect(os.path.join(cw, 'round-%d' % rnd, cc['bundle']))['kernels']
                   if kk.get('tuning_kernel') == 'conv']
        ok &= bool(kernels) and kernels[0]['schedule'] == cc['schedule'] and \
            kernels[0]['template'] == cc['template'] and kernels[0].get('tuning_record', False)
    check('convolution round %d: candidates built with their schedules' % rnd, ok, r.stderr)
    meas = []
    for cc in cands:
        ms = (2.0 if cc['template'] == 'wgmma' else 1.0) * (1 + 0.01 * cc['schedule']['stages'])
        ctimes[(cc['template'], json.dumps(cc['schedule'], sort_keys=True))] = ms
        meas.append({'id': cc['id'], 'ms': ms})
    json.dump({'measurements': meas},
              open(os.path.join(cw, 'round-%d' % rnd, 'measurements.json'), 'w'))
r = tcc('tune', cpath, '--target', 'sm_90a', '--work', cw, '--finish')
recs = json.load(open(os.path.join(cw, 'records.json')))['records'] if r.returncode == 0 else []
best = min(ctimes.values()) if ctimes else None
check('the convolution\'s record is its fastest measured schedule',
      len(recs) == 1 and recs[0]['kernel'] == 'conv' and recs[0]['ms'] == best and
      ctimes.get((recs[0]['template'], json.dumps(recs[0]['schedule'], sort_keys=True))) == best,
      recs)
out = os.path.join(work, 'conv-tuned.tccb')
r = tcc('compile', cpath, '--target', 'sm_90a', '--tuning-records', os.path.join(cw, 'records.json'),
        '-o', out)
applied = [kk for kk in inspect(out)['kernels'] if kk.get('tuning_kernel') == 'conv'] \
    if r.returncode == 0 else []
check('the convolution compiles with its record', recs and len(applied) == 1 and
      applied[0].get('tuning_record') and applied[0]['schedule'] == recs[0]['schedule'] and
      applied[0]['template'] == recs[0]['template'], r.stderr or applied)

# A record that copies by TMA is not applied under --gpu-conv-tma=false
# (said in a warning); without the flag it is.
base = os.path.join(work, 'conv-base.tccb')
tcc('compile', cpath, '--target', 'sm_90a', '-o', base)
k0 = [kk for kk in inspect(base)['kernels'] if kk.get('tuning_kernel') == 'conv']
if k0 and k0[0]['template'] == 'wgmma':
    sched = dict(k0[0]['schedule'], tma=True)
    rec = os.path.join(work, 'tma-record.json')
    json.dump({'version': 1, 'records': [{
        'gpu': 'sm_90a', 'kernel': 'conv', 'template': 'wgmma', 'template_version': 1,
        'signature': k0[0]['signature'], 'schedule': sched, 'ms': 1.0}]}, open(rec, 'w'))
    out = os.path.join(work, 'conv-notma.tccb')
    r = tcc('compile', cpath, '--target', 'sm_90a', '--gpu-conv-tma=false',
            '--tuning-records', rec, '-o', out)
    kk = [x for x in inspect(out)['kernels'] if x.get('tuning_kernel') == 'conv']
    check('a TMA record is refused under --gpu-conv-tma=false',
          r.returncode == 0 and '--gpu-conv-tma=false' in r.stderr and kk and
          not kk[0].get('tuning_record') and not kk[0]['schedule'].get('tma'), r.stderr)
    r = tcc('compile', cpath, '--target', 'sm_90a', '--tuning-records', rec, '-o', out)
    kk = [x for x in inspect(out)['kernels'] if x.get('tuning_kernel') == 'conv']
    check('... and applied without it', r.returncode == 0 and kk and
          kk[0].get('tuning_record') and kk[0]['schedule'] == sched, r.stderr)
# A convolution whose value before the ReLU is an output too (raw_out).
raw = dict(conv, inputs=conv['inputs'][:1], outputs=['y', 't'],
           nodes=[conv['nodes'][0], {'op': 'relu', 'inputs': ['t'], 'outputs': ['y']}])
rpath = os.path.join(work, 'raw.json')
json.dump(raw, open(rpath, 'w'))
r = tcc('tune', rpath, '--target', 'sm_90a', '--work', os.path.join(work, 'raw'), '--round-size', 4)
n = len(json.load(open(os.path.join(work, 'raw', 'round-1', 'candidates.json')))['candidates']) \
    if r.returncode == 0 else 0
check('a convolution keeping its value before the ReLU is tuned', n == 4, r.stdout + r.stderr)

# tune-measure on host bundles: one good candidate, one that is no bundle.
rd = os.path.join(work, 'host-round')
os.makedirs(rd)
small = dict(model, inputs=[{'name': 'x', 'dtype': 'f32', 'shape': [8, 16]},
                            {'name': 'w', 'dtype': 'f32', 'shape': [4, 16]}],
             nodes=model['nodes'][:2], outputs=['y'])
json.dump(small, open(os.path.join(work, 'small.json'), 'w'))
r = tcc('compile', os.path.join(work, 'small.json'), '-o', os.path.join(rd, 'c0.tccb'))
open(os.path.join(rd, 'c1.tccb'), 'w').write('not a bundle')
fn = inspect(os.path.join(rd, 'c0.tccb'))['kernels'][0]['name']
json.dump({'candidates': [{'id': 0, 'bundle': 'c0.tccb', 'kernel_prefix': fn},
                          {'id': 1, 'bundle': 'c1.tccb'},
                          {'id': 2, 'bundle': 'c0.tccb', 'kernel_prefix': 'k99_none'}]},
          open(os.path.join(rd, 'candidates.json'), 'w'))
r = tcc('tune-measure', rd, '--iters', 5, '--warmup', 1)
meas = json.load(open(os.path.join(rd, 'measurements.json')))['measurements'] \
    if os.path.exists(os.path.join(rd, 'measurements.json')) else []
check('tune-measure times the kernel it is told (from a profile) and reports what it cannot',
      r.returncode == 0 and [x['id'] for x in meas] == [0] and meas[0]['ms'] > 0 and
      meas[0]['bundle_ms'] > 0 and r.stdout.count('not measured') == 2, r.stdout + r.stderr)
json.dump({'candidates': [{'id': 1, 'bundle': 'c1.tccb'}]}, open(os.path.join(rd, 'candidates.json'), 'w'))
check('tune-measure with nothing measurable fails in one line',
      one_line_error(tcc('tune-measure', rd), 'could be measured'))
check('tune-measure refuses a bundle outside the round folder', one_line_error(
    (json.dump({'candidates': [{'id': 0, 'bundle': '../x.tccb'}]},
               open(os.path.join(rd, 'candidates.json'), 'w')), tcc('tune-measure', rd))[1],
    'must be a file of the round folder'))

# The baselines: a grid takes the space in its order, random its own picks.
for strategy in ('grid', 'random'):
    d = os.path.join(work, strategy)
    r = tcc('tune', path, '--target', 'sm_90a', '--work', d, '--round-size', 8,
            '--strategy', strategy, '--seed', seed)
    cands = json.load(open(os.path.join(d, 'round-1', 'candidates.json'))) \
        if r.returncode == 0 else {}
    check('--strategy %s writes a round' % strategy,
          cands.get('strategy') == strategy and len(cands['candidates']) >= 8, r.stderr)
# --rounds measures in the same process: no GPU here, so nothing can be
# measured, which is reported in one line.
r = tcc('tune', path, '--target', 'sm_90a', '--work', os.path.join(work, 'loop'), '--rounds', 2,
        '--round-size', 4, '--iters', 2)
check('--rounds without a GPU fails in one line', one_line_error(r, 'could be measured'), r.stderr)

# A linear layer over [batch, tokens, features] (A's batch folded into M):
# its matmul alone reproduces the signature, so candidates are built.
lin = {'format': 'tcc-model', 'version': 1, 'name': 'lin',
       'inputs': [{'name': 'x', 'dtype': 'bf16', 'shape': [rng.choice([2, 4]), 128, 256]},
                  {'name': 'w', 'dtype': 'bf16', 'shape': [256, 512]}],
       'params': [], 'outputs': ['y'],
       'nodes': [{'op': 'matmul', 'inputs': ['x', 'w'], 'outputs': ['y'], 'attrs': {}}]}
json.dump(lin, open(os.path.join(work, 'lin.json'), 'w'))
d = os.path.join(work, 'lin')
r = tcc('tune', os.path.join(work, 'lin.json'), '--target', 'sm_90a', '--work', d, '--round-size', 4)
n = len(json.load(open(os.path.join(d, 'round-1', 'candidates.json')))['candidates']) \
    if r.returncode == 0 else 0
check('a linear layer over a batch of token rows is tuned', n == 4, r.stdout + r.stderr)

# Bad uses.
json.dump({'measurements': [{'id': 0, 'ms': '1.5'}]},
          open(os.path.join(d, 'round-1', 'measurements.json'), 'w'))
check('a malformed measurements file fails in one line', one_line_error(
    tcc('tune', os.path.join(work, 'lin.json'), '--target', 'sm_90a', '--work', d), 'malformed'))
check('an unknown strategy', one_line_error(
    tcc('tune', path, '--target', 'sm_90a', '--work', tw, '--strategy', 'anneal'), 'strategy'))
check('tune without --target', one_line_error(tcc('tune', path, '--work', tw), '--target'))
check('tune for the host', one_line_error(tcc('tune', path, '--target', 'host', '--work', tw),
                                          'NVIDIA'))
json.dump(dict(small, nodes=[{'op': 'relu', 'inputs': ['x'], 'outputs': ['y']}],
               inputs=small['inputs'][:1]), open(os.path.join(work, 'nomm.json'), 'w'))
check('tune of a model with no matmul', one_line_error(
    tcc('tune', os.path.join(work, 'nomm.json'), '--target', 'sm_90a', '--work', tw),
    'no matmul or convolution template kernel'))
check('--finish with nothing measured', one_line_error(
    tcc('tune', path, '--target', 'sm_90a', '--work', os.path.join(work, 'empty'), '--finish'),
    'nothing measured'))
print('%d failed' % len(failed))
sys.exit(1 if failed else 0)
