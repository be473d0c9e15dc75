#!/usr/bin/env python3
"""bench/region_rank.py's plumbing on the host (no GPU).

    region_rank_test.py TCC

1. `region_rank.py --self-test`: Spearman's rho and the NNLS against values
   derived by hand, the constants fit recovering known constants.
2. `--prepare --host --small --models mobilenet_v2 --alternatives 20`: 20
   alternatives made for sm_90a's cost model, each forced on a host compile
   (--conv-layout=nhwc: the channels-last chains of the GPU compile).
3. The run: each bundle against the float64 reference (f16 bound 1e-2: a
   forced grouping still computes the model) and timed once; rho computed.
4. `--fit` on the run's rank.json: the features give the predictions back
   and a fit comes out.
The host's ranking numbers mean nothing: only the plumbing is checked.
Exits 77 (skip) without torch, torchvision or onnx.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RANK = os.path.join(ROOT, 'bench', 'region_rank.py')


def main():
    tcc = sys.argv[1]
    try:
        import onnx  # noqa: F401
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        print('SKIP: %s' % e)
        return 77
    failed = 0

    def check(name, ok, detail=''):
        nonlocal failed
        print('%s %s%s' % ('PASS' if ok else 'FAIL', name, '' if ok else ' -- ' + detail),
              flush=True)
        failed += not ok

    def run(*args):
        p = subprocess.run([sys.executable, RANK] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=900)
        print(p.stdout, flush=True)
        return p

    check('self-test', run('--self-test').returncode == 0)
    with tempfile.TemporaryDirectory() as tmp:
        carry, out = os.path.join(tmp, 'carry'), os.path.join(tmp, 'out')
        p = run('--prepare', '--host', '--small', '--models', 'mobilenet_v2', '--alternatives',
                '20', '--tcc', tcc, '--carry', carry)
        check('prepare', p.returncode == 0)
        if p.returncode != 0:
            return 1
        manifest = json.load(open(os.path.join(carry, 'manifest.json')))
        cases = manifest['models'][0]['cases']
        check('20 bundles, archived', len(cases) == 20 and manifest['archive'] and
              os.path.exists(os.path.join(carry, manifest['archive'])) and
              not os.path.exists(os.path.join(carry, 'bundles')))
        p = run('--tcc', tcc, '--carry', carry, '--out', out, '--warmup', '1', '--iters', '1',
                '--rounds', '1')
        check('run', p.returncode == 0)
        res = json.load(open(os.path.join(out, 'rank.json')))['models'][0]
        check('every alternative right', all(c.get('ok') for c in res['cases']),
              str([(c['id'], c.get('err'), c.get('error')) for c in res['cases']
                   if not c.get('ok')]))
        check('every alternative timed',
              all(c['measured_ms'] and c['measured_ms'] > 0 for c in res['cases']))
        check('rho printed', -1 <= res['rho'] <= 1 and
              'Spearman rho (predicted us, measured ms) over 20' in p.stdout)
        p = run('--fit', os.path.join(out, 'rank.json'))
        check('fit', p.returncode == 0 and 'launch_us' in p.stdout and
              'give back the predictions to 0.0e+00' in p.stdout)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
