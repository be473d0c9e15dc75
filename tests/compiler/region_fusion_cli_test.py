#!/usr/bin/env python3
"""--region-fusion at the command line, and the groups in `tcc inspect`.

    region_fusion_cli_test.py TCC

Two 1x1 convolutions, f16, 1x32x64x64 (NHWC on sm_90a): with
--region-fusion=auto the bundle's manifest lists one region group of both,
at tile 1x32, with the cost model's times derived by hand in
tests/ir/region-fusion.mlir (@pair_1x1: 2.548 us against 4.782 unfused,
36864 bytes of shared memory), and --explain prints its line; off (the default)
lists none; the group is one kernel of the region template (one launch
fewer) running the planned tile (64 x 2 tiles, a grid of 128 blocks); a bad value and a target without a cost model are one-line
errors. Alternatives (--region-fusion=alternatives=N,seed=S,out=FILE) and
forcing one (FILE:ID): the search's forced gives auto's groups, on the host
too (costed by the host's own model), and bad files are one-line errors. No GPU
needed: sm_90a bundles are compiled, not run.
"""
import json
import os
import subprocess
import sys
import tempfile

MODEL = {
    'format': 'tcc-model', 'version': 1, 'name': 'pair',
    'inputs': [{'name': 'x', 'dtype': 'f16', 'shape': [1, 32, 64, 64]}],
    'params': [{'name': n, 'dtype': 'f16', 'shape': [32, 32, 1, 1],
                'init': {'random': 'normal', 'mean': 0.0, 'std': 0.1, 'seed': s}}
               for n, s in (('w1', 1), ('w2', 2))],
    'outputs': ['y'],
    'nodes': [{'op': 'conv2d', 'inputs': ['x', 'w1'], 'outputs': ['c'],
               'attrs': {'pads': [0, 0, 0, 0]}},
              {'op': 'conv2d', 'inputs': ['c', 'w2'], 'outputs': ['y'],
               'attrs': {'pads': [0, 0, 0, 0]}}]}


def main():
    tcc = sys.argv[1]
    failed = 0

    def check(name, ok, detail=''):
        nonlocal failed
        print('%s %s%s' % ('PASS' if ok else 'FAIL', name, '' if ok else ' -- ' + detail),
              flush=True)
        failed += not ok

    def run(*args):
        return subprocess.run([tcc] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=300)

    def one_line_error(p, *words):
        err = p.stderr.strip()
        return (p.returncode == 1 and len(err.splitlines()) == 1 and
                all(w in err for w in words))

    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, 'pair.json')
        with open(model, 'w') as f:
            json.dump(MODEL, f)
        auto = os.path.join(tmp, 'auto.tccb')
        p = run('compile', model, '-o', auto, '--target', 'sm_90a', '--region-fusion=auto',
                '--explain')
        check('auto compiles', p.returncode == 0, p.stderr)
        check('--explain prints the group',
              'region group 0: 2 members, tile 1x32, predicted 2.55 us against 4.78 us unfused'
              in p.stderr, p.stderr)
        check('--explain prints the search',
              'region fusion on h200: 1 region groups (2 of 2 region ops)' in p.stderr and
              'search complete' in p.stderr, p.stderr)
        p = run('inspect', auto)
        manifest = json.loads(p.stdout) if p.returncode == 0 else {}
        groups = manifest.get('region_groups')
        # The group's one launch is of its region kernel (the kernel function
        # tcc-form-groups made, built by the region template).
        launch = [i for i, l in enumerate(manifest.get('launches', []))
                  if manifest['kernels'][l['kernel']]['symbol'].endswith('_region')]
        symbol = manifest['kernels'][manifest['launches'][launch[0]]['kernel']]['symbol'] \
            if len(launch) == 1 else None
        want = [{'group': 0, 'ops': ['tcc.conv2d', 'tcc.conv2d'], 'tile': [1, 32],
                 'predicted_us': 2.548, 'unfused_us': 4.782, 'shared_bytes': 36864,
                 'kernel': symbol, 'kernels': [symbol], 'launches': launch}]
        check('inspect shows the group and its kernel', symbol is not None and groups == want,
              '%r' % groups)
        # The kernel runs the tile the cost model priced: 64 / 1 x 64 / 32.
        grid = manifest['launches'][launch[0]]['grid'] if len(launch) == 1 else None
        check('the kernel runs the planned tile', grid == [128, 1, 1], '%r' % grid)

        off = os.path.join(tmp, 'off.tccb')
        p = run('compile', model, '-o', off, '--target', 'sm_90a')
        check('off by default', p.returncode == 0 and
              'region_groups' not in json.loads(run('inspect', off).stdout), p.stderr)
        # The group is one kernel, built by the region template: one launch
        # fewer than the two convolutions' own.
        manifests = [json.loads(run('inspect', b).stdout) for b in (auto, off)]
        launches = [m['launches'] for m in manifests]
        check('the group is one launch', len(launches[0]) == len(launches[1]) - 1 and
              any(k['symbol'].endswith('_region') for k in manifests[0]['kernels']) and
              not any(k['symbol'].endswith('_region') for k in manifests[1]['kernels']),
              '%d vs %d launches' % (len(launches[0]), len(launches[1])))

        p = run('compile', model, '-o', off, '--target', 'sm_90a', '--region-fusion=on')
        check('bad value refused', one_line_error(p, "unknown --region-fusion 'on'"), p.stderr)
        p = run('compile', model, '-o', off, '--region-fusion=auto')
        # The host has a cost model and region kernels of its own
        # (tests/e2e/host_region.py runs them).
        check('host compiles', p.returncode == 0, p.stderr)

        # Alternatives written beside the auto compile; the search's (0)
        # forced gives auto's groups; a grouping forced on the host is
        # costed by the host's own model; bad files are one-line errors.
        alts = os.path.join(tmp, 'alts.json')
        forced = os.path.join(tmp, 'forced.tccb')
        p = run('compile', model, '-o', forced, '--target', 'sm_90a',
                '--region-fusion=alternatives=4,seed=3,out=' + alts)
        doc = json.load(open(alts)) if p.returncode == 0 else {'alternatives': []}
        check('alternatives written', [a['origin'] for a in doc['alternatives']] ==
              ['search', 'unfused'] and doc['alternatives'][0]['groups'] ==
              [['/nodes/0', '/nodes/1']], p.stderr + str(doc['alternatives']))
        check('fewer than asked: a warning',
              'warning: tcc-region-fusion: 2 distinct legal groupings of @main found, 4 asked'
              in p.stderr, p.stderr)
        p = run('compile', model, '-o', forced, '--target', 'sm_90a',
                '--region-fusion=%s:0' % alts)
        got = json.loads(run('inspect', forced).stdout).get('region_groups')
        check('forcing the search\'s gives auto\'s groups', p.returncode == 0 and got == want,
              p.stderr + str(got))
        p = run('compile', model, '-o', forced, '--region-fusion=%s:0' % alts, '--explain',
                '--conv-layout=nhwc')
        check('forced on the host', p.returncode == 0 and
              'region fusion on host: 1 region groups (2 of 2 region ops)' in p.stderr and
              'forced from' in p.stderr, p.stderr)
        with open(alts) as f:
            text = f.read().replace('"/nodes/1"', '"/nodes/9"')
        with open(alts, 'w') as f:
            f.write(text)
        p = run('compile', model, '-o', forced, '--target', 'sm_90a',
                '--region-fusion=%s:0' % alts)
        check('unknown member refused', one_line_error(p, "unknown member '/nodes/9'"), p.stderr)
        p = run('compile', model, '-o', forced, '--target', 'sm_90a',
                '--region-fusion=' + os.path.join(tmp, 'none.json'))
        check('missing file refused', one_line_error(p, 'unknown --region-fusion'), p.stderr)
        p = run('compile', model, '-o', forced, '--target', 'sm_90a',
                '--region-fusion=alternatives=0,out=' + alts)
        check('no count refused', one_line_error(p, 'unknown --region-fusion'), p.stderr)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
