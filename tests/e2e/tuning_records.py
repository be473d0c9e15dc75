#!/usr/bin/env python3
"""`tcc compile --tuning-records`: a record for the kernel's signature on the
target GPU and the template's current version gives the kernel its template
and schedule (shown by `tcc inspect`); a record for another GPU, a stale
template version or a schedule the template refuses is ignored with a
warning and the heuristic's choice kept; a record of another signature is
ignored silently; a malformed file is refused in one line. Compiles for
sm_90a (no GPU needed): the shapes and schedules are drawn at random."""
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


def check(what, ok):
    print(('PASS ' if ok else 'FAIL ') + what)
    if not ok:
        failed.append(what)


m, n, k = rng.choice([64, 128, 256, 384]), rng.choice([128, 256, 512]), rng.choice([64, 128, 192])
dt = rng.choice(['bf16', 'f16'])
model = {'format': 'tcc-model', 'version': 1, 'name': 'mm',
         'inputs': [{'name': 'a', 'dtype': dt, 'shape': [m, k]},
                    {'name': 'b', 'dtype': dt, 'shape': [n, k]}],
         'params': [],
         'nodes': [{'op': 'matmul', 'inputs': ['a', 'b'], 'outputs': ['c'],
                    'attrs': {'transpose_b': True}}],
         'outputs': ['c']}
mpath = os.path.join(work, 'mm.json')
json.dump(model, open(mpath, 'w'))
sig = {'a': dt, 'b': dt, 'c': dt, 'm': m, 'n': n, 'k': k, 'batch': 1, 'a_batched': False,
       'b_batched': False, 'trans_a': False, 'trans_b': True, 'allow_tf32': False}


def compile_with(records):
    """(return code, stderr, the matmul kernel's manifest entry or None)."""
    rpath = os.path.join(work, 'records.json')
    with open(rpath, 'w') as f:
        f.write(records if isinstance(records, str) else json.dumps(records))
    out = os.path.join(work, 'mm.tccb')
    if os.path.exists(out):
        os.remove(out)
    cmd = [args.tcc, 'compile', mpath, '--target', 'sm_90a', '-o', out]
    if records is not None:
        cmd += ['--tuning-records', rpath]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return r.returncode, r.stderr, None
    inspect = json.loads(subprocess.run([args.tcc, 'inspect', out], capture_output=True,
                                        text=True, check=True).stdout)
    kernels = [kk for kk in inspect['kernels'] if kk.get('template')]
    return 0, r.stderr, kernels[0] if len(kernels) == 1 else None


def record(**kw):
    r = {'gpu': 'sm_90a', 'kernel': 'matmul', 'signature': sig, 'template': 'wgmma',
         'template_version': 1, 'schedule': {}, 'ms': 0.5}
    r.update(kw)
    return r


rc, err, base = compile_with(None)
check('heuristic: one matmul template kernel, no record', rc == 0 and base is not None
      and 'tuning_record' not in base and err == '')
heur = base['schedule'] if base else None

wg = {'tile_n': rng.choice([64, 128]), 'stages': rng.choice([3, 4])}
rc, err, kern = compile_with({'version': 1, 'records': [record(schedule=wg)]})
check('wgmma record %s applied' % wg, rc == 0 and kern and kern.get('tuning_record') is True
      and kern['template'] == 'wgmma'
      and all(kern['schedule'][key] == v for key, v in wg.items()))

mma = {'tile_m': rng.choice([32, 64]), 'tile_n': 64, 'warps_m': 2, 'warps_n': 2, 'stages': 3}
rc, err, kern = compile_with({'version': 1, 'records': [record(template='mma', schedule=mma)]})
check('mma record %s applied' % mma, rc == 0 and kern and kern['template'] == 'mma'
      and kern.get('tuning_record') is True
      and all(kern['schedule'][key] == v for key, v in mma.items()))

# Two records for the kernel: the faster one wins.
rc, err, kern = compile_with({'version': 1, 'records': [
    record(schedule={'stages': 4}, ms=2.0), record(schedule={'stages': 3}, ms=1.0)]})
check('the fastest of two records', rc == 0 and kern and kern['schedule']['stages'] == 3)

for what, rec, needle in [
        ('another GPU', record(gpu='sm_80', schedule=wg), 'sm_80'),
        ('a stale template version', record(template_version=0, schedule=wg), 'version 0'),
        ('a schedule the template refuses', record(schedule={'tile_m': 96}), 'not applied'),
        ('an unknown knob', record(schedule={'tile_q': 2}), "'tile_q'"),
        ('an unknown template', record(template='simt'), 'simt')]:
    rc, err, kern = compile_with({'version': 1, 'records': [rec]})
    check('%s: warned, heuristic kept' % what, rc == 0 and needle in err and 'warning' in err
          and kern and 'tuning_record' not in kern and kern['schedule'] == heur)

other = dict(sig, k=k + 64)
rc, err, kern = compile_with({'version': 1, 'records': [record(signature=other, schedule=wg)]})
check('another signature: ignored silently', rc == 0 and err == '' and kern
      and kern['schedule'] == heur)

for what, text in [('truncated JSON', '{"version": 1, "records": ['),
                   ('no version', json.dumps({'records': []})),
                   ('a record without its schedule', json.dumps(
                       {'version': 1, 'records': [{'gpu': 'sm_90a', 'kernel': 'matmul'}]}))]:
    rc, err, kern = compile_with(text)
    check('%s: refused in one line' % what, rc == 1 and err.strip().count('\n') == 0
          and 'records' in err)

print('%d failed' % len(failed))
sys.exit(1 if failed else 0)
