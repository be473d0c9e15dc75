#!/usr/bin/env python3
"""`tcc bench --profile` and `tcc inspect --profile` at the command line.

    profile_cli_test.py TCC

A small CNN for the host (convolution, pool, two linears and an output that
is its input, so a copy launch too) is benched with --profile: the profile
lists every launch of the manifest in order with its kernel symbol and grid,
positive times (min <= median, mean <= max), launch times inside the run's
(on the host a run's launches are disjoint parts of it) and within a sane
factor of bench's own whole-run median, and a per-kernel table whose calls
and totals add up. `tcc inspect --profile` adds the table to the manifest
(plain inspect is unchanged). A profile of another bundle (other launch
count, another symbol, another manifest checksum), a missing, malformed or
non-profile file and an unwritable --profile path are one-line errors.
Region groups (sm_90a, compiled only: no GPU here) get measured_us, the sum
of a hand-made profile's times over the group's launches.
"""
import json
import os
import subprocess
import sys
import tempfile

CNN = {
    'format': 'tcc-model', 'version': 1, 'name': 'small_cnn',
    'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [2, 3, 32, 32]}],
    'params': [
        {'name': 'w', 'dtype': 'f32', 'shape': [16, 3, 3, 3],
         'init': {'random': 'normal', 'mean': 0.0, 'std': 0.1, 'seed': 1}},
        {'name': 'fc.weight', 'dtype': 'f32', 'shape': [64, 16 * 16 * 16],
         'init': {'random': 'normal', 'mean': 0.0, 'std': 0.02, 'seed': 2}},
        {'name': 'fc2.weight', 'dtype': 'f32', 'shape': [10, 64],
         'init': {'random': 'normal', 'mean': 0.0, 'std': 0.1, 'seed': 3}}],
    'nodes': [
        {'op': 'conv2d', 'inputs': ['x', 'w'], 'outputs': ['c'],
         'attrs': {'pads': [1, 1, 1, 1]}},
        {'op': 'relu', 'inputs': ['c'], 'outputs': ['r']},
        {'op': 'max_pool2d', 'inputs': ['r'], 'outputs': ['p'],
         'attrs': {'kernel': [2, 2], 'strides': [2, 2]}},
        {'op': 'reshape', 'inputs': ['p'], 'outputs': ['f'],
         'attrs': {'shape': [2, 16 * 16 * 16]}},
        {'op': 'linear', 'inputs': ['f', 'fc.weight'], 'outputs': ['h']},
        {'op': 'tanh', 'inputs': ['h'], 'outputs': ['t']},
        {'op': 'linear', 'inputs': ['t', 'fc2.weight'], 'outputs': ['y']}],
    'outputs': ['y', 'x']}

# tests/compiler/region_fusion_cli_test.py's pair: one region group on sm_90a.
PAIR = {
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
                              stderr=subprocess.PIPE, text=True, timeout=600)

    def one_line_error(p, *words):
        err = p.stderr.strip()
        return (p.returncode == 1 and len(err.splitlines()) == 1 and
                err.startswith('tcc: error: ') and all(w in err for w in words))

    def symbols(manifest):
        """Per launch of the manifest, its kernel's symbol (None: a copy)."""
        return [None if 'copy' in l else manifest['kernels'][l['kernel']]['symbol']
                for l in manifest['launches']]

    with tempfile.TemporaryDirectory() as tmp:
        def path(name):
            return os.path.join(tmp, name)

        with open(path('cnn.json'), 'w') as f:
            json.dump(CNN, f)
        bundle = path('cnn.tccb')
        p = run('compile', path('cnn.json'), '-o', bundle)
        check('the CNN compiles for the host', p.returncode == 0, p.stderr)
        if p.returncode:
            return 1
        p = run('inspect', bundle)
        manifest = json.loads(p.stdout)
        check('plain inspect has no profile', 'profile' not in manifest)
        want = symbols(manifest)
        check('the model has kernels and a copy',
              want.count(None) == 1 and len(want) >= 4, '%r' % want)

        prof = path('profile.json')
        p = run('bench', bundle, '--warmup', '2', '--iters', '25', '--json',
                path('bench.json'), '--profile', prof)
        check('bench --profile runs', p.returncode == 0 and 'profile: %d launches' % len(want)
              in p.stdout, p.stdout + p.stderr)
        if p.returncode:
            return 1
        with open(prof) as f:
            profile = json.load(f)
        with open(path('bench.json')) as f:
            bench = json.load(f)
        launches = profile['launches']
        check('format and version', profile['format'] == 'tcc-profile' and
              profile['version'] == 1 and profile['timer'] == 'host clock' and
              profile['graph'] is False and profile['iters'] == 25, '%r' % profile)
        check('one entry per manifest launch, in order',
              profile['launch_count'] == len(want) and len(launches) == len(want) and
              [l['index'] for l in launches] == list(range(len(want))) and
              [l['kernel'] for l in launches] == want,
              '%r vs %r' % ([l['kernel'] for l in launches], want))
        check('grids as the manifest says',
              all(l.get('grid') == ml.get('grid') for l, ml in
                  zip(launches, manifest['launches']) if 'copy' not in ml) and
              all(l['bytes'] == ml['copy']['bytes'] for l, ml in
                  zip(launches, manifest['launches']) if 'copy' in ml), '%r' % launches)
        kernels_only = [l for l in launches if l['kernel'] is not None]
        check('kernel times are positive',
              all(l['min_us'] > 0 for l in kernels_only), '%r' % launches)
        check('min <= median <= max and min <= mean <= max',
              all(l['min_us'] <= l['median_us'] <= l['max_us'] and
                  l['min_us'] <= l['mean_us'] <= l['max_us'] and l['gap_us'] >= 0
                  for l in launches), '%r' % launches)
        total = sum(l['mean_us'] for l in launches)
        run_us = profile['run']
        check('launch total is the sum of the launches',
              abs(profile['launch_total_us'] - total) <= 1e-6 * total)
        # On the host a run's launches are disjoint parts of it.
        check('launches fit in their run', total <= run_us['mean_us'] * (1 + 1e-9) and
              total >= 0.5 * run_us['mean_us'], '%r vs %r' % (total, run_us))
        # Bench's own runs are the same work; the machine may be shared.
        check('the run time is within 5x of bench\'s',
              bench['median_ms'] / 5 <= run_us['median_us'] / 1000 <= 5 * bench['median_ms'],
              '%r vs %r ms' % (run_us, bench['median_ms']))
        table = profile['kernels']
        check('per-kernel table adds up',
              sum(k['calls'] for k in table) == len(want) and
              abs(sum(k['share'] for k in table) - 1) < 1e-9 and
              all(abs(k['total_us'] - sum(l['mean_us'] for l in launches if
                                          (l['kernel'] or '(copy)') == k['kernel'])) <=
                  1e-9 * total for k in table) and
              all(abs(k['mean_us'] * k['calls'] - k['total_us']) <= 1e-9 * total
                  for k in table) and
              [k['total_us'] for k in table] == sorted((k['total_us'] for k in table),
                                                       reverse=True), '%r' % table)

        p = run('inspect', bundle, '--profile', prof)
        merged = json.loads(p.stdout) if p.returncode == 0 else {}
        check('inspect --profile runs', p.returncode == 0, p.stderr)
        summary = merged.get('profile', {})
        check('inspect --profile keeps the manifest',
              {k: v for k, v in merged.items() if k != 'profile'} == manifest)
        check('inspect --profile adds the table',
              summary.get('kernels') == [{k: v for k, v in row.items()} for row in table] and
              summary.get('file') == prof and summary.get('timer') == 'host clock' and
              abs(summary.get('launch_total_us', 0) - total) <= 1e-6 * total,
              '%r' % summary)

        # Errors.
        p = run('inspect', bundle, '--profile', path('missing.json'))
        check('missing profile', one_line_error(p, 'missing.json'), p.stderr)
        with open(path('bad.json'), 'w') as f:
            f.write('{"format": "tcc-profile", ')
        p = run('inspect', bundle, '--profile', path('bad.json'))
        check('malformed profile', one_line_error(p, 'bad.json', 'not valid JSON'), p.stderr)
        with open(path('deep.json'), 'w') as f:
            f.write('[' * 100000 + ']' * 100000)
        p = run('inspect', bundle, '--profile', path('deep.json'))
        check('deeply nested profile', one_line_error(p, 'deep.json'), p.stderr)
        p = run('inspect', bundle, '--profile', path('bench.json'))
        check('not a profile', one_line_error(p, 'not a tcc profile'), p.stderr)

        def tampered(name, change):
            doc = json.loads(json.dumps(profile))
            change(doc)
            with open(path(name), 'w') as f:
                json.dump(doc, f)
            return run('inspect', bundle, '--profile', path(name))

        p = tampered('fewer.json', lambda d: d['launches'].pop())
        check('another launch count', one_line_error(p, 'another bundle', 'launches'), p.stderr)
        first = next(i for i, s in enumerate(want) if s)
        p = tampered('symbol.json',
                     lambda d: d['launches'][first].__setitem__('kernel', 'k99_other'))
        check('another symbol', one_line_error(p, 'another bundle', 'k99_other'), p.stderr)
        p = tampered('hash.json', lambda d: d.__setitem__('manifest_fnv1a64', '0' * 16))
        check('another manifest checksum', one_line_error(p, 'another bundle', 'checksum'),
              p.stderr)
        p = tampered('negative.json',
                     lambda d: d['launches'][first].__setitem__('mean_us', -1))
        check('a negative time', one_line_error(p, 'mean_us'), p.stderr)
        # A bundle of another model.
        other = dict(CNN, nodes=CNN['nodes'][:3], outputs=['p'])
        with open(path('other.json'), 'w') as f:
            json.dump(other, f)
        p = run('compile', path('other.json'), '-o', path('other.tccb'))
        p = run('inspect', path('other.tccb'), '--profile', prof)
        check('profile of another bundle', one_line_error(p, 'another bundle'), p.stderr)
        p = run('bench', bundle, '--iters', '2', '--profile', path('no/such/dir/p.json'))
        check('unwritable profile path', one_line_error(p, 'no/such/dir'), p.stderr)
        p = run('bench', bundle, '--iters', '2', '--profile=')
        check('empty profile path', one_line_error(p, '--profile'), p.stderr)

        # Region groups: measured_us is the sum of the group's launches.
        with open(path('pair.json'), 'w') as f:
            json.dump(PAIR, f)
        pair = path('pair.tccb')
        p = run('compile', path('pair.json'), '-o', pair, '--target', 'sm_90a',
                '--region-fusion=auto')
        check('the pair compiles for sm_90a', p.returncode == 0, p.stderr)
        pm = json.loads(run('inspect', pair).stdout)
        ps = symbols(pm)
        group = pm['region_groups'][0]
        check('the group names its kernel and launches',
              group['kernel'] is not None and group['kernels'] == [group['kernel']] and
              [ps[i] for i in group['launches']] == [group['kernel']], '%r' % group)
        times = [10.0 * (i + 1) for i in range(len(ps))]
        hand = {'format': 'tcc-profile', 'version': 1, 'timer': 'device events',
                'launches': [{'index': i, 'kernel': s, 'mean_us': t}
                             for i, (s, t) in enumerate(zip(ps, times))]}
        with open(path('hand.json'), 'w') as f:
            json.dump(hand, f)
        p = run('inspect', pair, '--profile', path('hand.json'))
        merged = json.loads(p.stdout) if p.returncode == 0 else {}
        g = merged.get('region_groups', [{}])[0]
        check('region group measured_us beside predicted_us',
              g.get('measured_us') == sum(times[i] for i, s in enumerate(ps)
                                          if s == group['kernel']) and
              g.get('predicted_us') == group['predicted_us'], '%r %s' % (g, p.stderr))
        shares = {k['kernel']: k['share'] for k in merged.get('profile', {}).get('kernels', [])}
        check('shares of a hand-made profile',
              abs(shares.get(group['kernel'], -1) -
                  sum(t for s, t in zip(ps, times) if s == group['kernel']) / sum(times))
              < 1e-12, '%r' % shares)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
