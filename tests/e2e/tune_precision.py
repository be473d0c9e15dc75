#!/usr/bin/env python3
"""`tcc tune-precision` on the host (docs/precision.md).

    tune_precision.py --tcc TCC

A projection y = x @ w (x an input [384, 128], w a param [128, 4096]) whose three row
blocks of x differ in dynamic range: one Gaussian, one with a few outliers
a thousand times larger (an i8 block then loses everything but them), one
uniform (i8's best case); and a second matmul of an intermediate, relu(y)
@ w2, whose operand the tool computes by running the model on the host.
Three calibration samples (fresh random, seed printed), the last held out.
Checks:

- the plan file applies (`tcc run --precision-plan` on the host) and the
  projection's measured error, on the training samples and on the held-out
  one, equals the error the tool reported (every output element is
  counted: --samples-per-tile 0) and is within the budget; the second
  matmul's too, planned alone (its operand then is what the tool saw);
- the plan mixes precisions, and the Pareto front holds a plan faster than
  uniform bf16 (in the tool's time model) at no more error;
- report.md, pareto.json and the SVG are written;
- an unreachable budget, a budget outside (0, 1), an unknown precision, a
  missing or misshapen calibration file: exit status 1 and one line.
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

BUDGET = 0.01


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def model():
    return {'format': 'tcc-model', 'version': 1, 'name': 'proj',
            'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [384, 128]}],
            'params': [{'name': 'w', 'dtype': 'f32', 'shape': [128, 4096],
                        'init': {'random': 'normal', 'std': 0.05, 'seed': 5}},
                       {'name': 'w2', 'dtype': 'f32', 'shape': [4096, 64],
                        'init': {'random': 'normal', 'std': 0.05, 'seed': 6}}],
            'nodes': [{'op': 'matmul', 'inputs': ['x', 'w'], 'outputs': ['y'], 'name': 'proj'},
                      {'op': 'relu', 'inputs': ['y'], 'outputs': ['r']},
                      {'op': 'matmul', 'inputs': ['r', 'w2'], 'outputs': ['z'], 'name': 'down'}],
            'outputs': ['y', 'z']}


def sample(rng):
    x = np.empty((384, 128), np.float32)
    x[:128] = rng.standard_normal((128, 128))
    x[128:256] = rng.standard_normal((128, 128))
    rows = rng.integers(128, 256, 3)
    cols = rng.integers(0, 128, 3)
    x[rows, cols] = 1000.0 * rng.choice([-1, 1], 3)
    x[256:] = rng.uniform(-1, 1, (128, 128))
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tcc', required=True)
    args = ap.parse_args()
    seed = int(os.environ.get('TCC_TEST_SEED', int.from_bytes(os.urandom(4), 'little')))
    print('calibration data from seed %d (TCC_TEST_SEED repeats it)' % seed)
    rng = np.random.default_rng(seed)
    failures = []

    def check(ok, what):
        print(('ok   ' if ok else 'FAIL ') + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'proj.json')
        with open(path, 'w') as f:
            json.dump(model(), f)
        cal = os.path.join(d, 'cal')
        os.makedirs(cal)
        xs = [sample(rng) for _ in range(3)]
        for i, x in enumerate(xs):
            np.save(os.path.join(cal, 'x.%d.npy' % i), x)
        plan = os.path.join(d, 'plan.json')
        rep = os.path.join(d, 'report')
        rc, out, err = run(args.tcc, 'tune-precision', path, '--calibration', cal,
                           '--error-budget', str(BUDGET), '-o', plan, '--report', rep,
                           '--samples-per-tile', '0', '--search-seconds', '1', '--seed', '3')
        print(out.strip())
        if rc:
            print('FAIL tune-precision: %s' % err.strip())
            sys.exit(1)
        with open(plan) as f:
            p = json.load(f)
        entry = p['matmuls'][0]
        check([m['node'] for m in p['matmuls']] == ['/nodes/0', '/nodes/2'],
              'the plan names both matmuls, the second of a computed operand')
        check(len(entry['precisions']) >= 2, 'the plan mixes precisions: %s'
              % entry['precisions'])
        with open(os.path.join(rep, 'pareto.json')) as f:
            reports = json.load(f)
        report = reports[0]
        svgs = [n for n in os.listdir(rep) if n.endswith('.svg')]
        import xml.etree.ElementTree as ET
        circles = len(ET.parse(os.path.join(rep, svgs[0])).getroot().findall(
            '{http://www.w3.org/2000/svg}circle')) if svgs else 0
        check(os.path.isfile(os.path.join(rep, 'report.md')) and circles > 10,
              'report.md and the SVG written (%d points)' % circles)

        # The plan applied: the measured error of y on the training samples
        # (together) and on the held-out one.
        w = L.random_init({'random': 'normal', 'std': 0.05, 'seed': 5}, 128 * 4096)
        w = L.rnd('f32', w).reshape(128, 4096)

        w2 = L.random_init({'random': 'normal', 'std': 0.05, 'seed': 6}, 4096 * 64)
        w2 = L.rnd('f32', w2).reshape(4096, 64)
        # The second matmul planned alone: its operand is then the unplanned
        # relu(y) the tool measured with.
        plan2 = os.path.join(d, 'plan2.json')
        with open(plan2, 'w') as f:
            json.dump(dict(p, matmuls=p['matmuls'][1:]), f)

        def measured(samples, which='y', plan_file=plan):
            e2 = n2 = 0.0
            for i in samples:
                out_dir = os.path.join(d, 'out%d' % i)
                rc, _, err = run(args.tcc, 'run', path, '--target', 'host', '--precision-plan',
                                 plan_file, '--input', 'x=' + os.path.join(cal, 'x.%d.npy' % i),
                                 '--output-dir', out_dir)
                if rc:
                    print('FAIL run with the plan: %s' % L.first_line(err))
                    sys.exit(1)
                got = np.load(os.path.join(out_dir, which + '.npy')).astype(np.float64)
                ref = xs[i].astype(np.float64) @ w
                if which == 'z':
                    ref = np.maximum(L.rnd('f32', ref), 0) @ w2
                e2 += float(((got - ref) ** 2).sum())
                n2 += float((ref ** 2).sum())
            return (e2 / n2) ** 0.5

        train, held = measured([0, 1]), measured([2])
        told, told_held = report['chosen']['error'], report['chosen']['held_out_error']
        close = lambda a, b: abs(a - b) <= 0.02 * b + 1e-6  # noqa: E731  (f32 sums)
        check(close(train, told), 'training error measured %.4g, reported %.4g' % (train, told))
        check(close(held, told_held), 'held-out error measured %.4g, reported %.4g'
              % (held, told_held))
        check(train <= BUDGET and held <= BUDGET, 'within the budget %g: training %.4g, '
              'held out %.4g' % (BUDGET, train, held))
        down = reports[1]['chosen']
        train2, held2 = measured([0, 1], 'z', plan2), measured([2], 'z', plan2)
        check(close(train2, down['error']) and close(held2, down['held_out_error']),
              'second matmul: measured %.4g / %.4g, reported %.4g / %.4g (training / held out)'
              % (train2, held2, down['error'], down['held_out_error']))
        check(train2 <= BUDGET and held2 <= BUDGET, 'second matmul within the budget')
        bf16 = report['uniform']['bf16']
        better = [f for f in report['front'] if f[0] < bf16['seconds'] and f[1] <= bf16['error']]
        check(bool(better), 'the front holds a plan faster than uniform bf16 (%.3g us, error '
              '%.3g) at no more error: %s' % (bf16['seconds'] * 1e6, bf16['error'],
                                              better[:1]))

        # Refusals.
        np.save(os.path.join(d, 'bad.npy'), np.zeros((3, 3), np.float32))
        os.makedirs(os.path.join(d, 'badcal'))
        np.save(os.path.join(d, 'badcal', 'x.npy'), np.zeros((3, 3), np.float32))
        common = [path, '-o', os.path.join(d, 'p2.json'), '--search-seconds', '0']
        for what, extra, expect in (
                ('unreachable', ['--calibration', cal, '--error-budget', '1e-6',
                                 '--precisions', 'f8e4m3,i8'], 'is unreachable for /nodes/0'),
                ('budget 0', ['--calibration', cal, '--error-budget', '0'],
                 'must be a relative error in (0, 1)'),
                ('budget 1.5', ['--calibration', cal, '--error-budget', '1.5'],
                 'must be a relative error in (0, 1)'),
                ('precision', ['--calibration', cal, '--error-budget', '0.01',
                               '--precisions', 'bf16,fp4'], "unknown precision 'fp4'"),
                ('missing', ['--calibration', os.path.join(d, 'none'), '--error-budget', '0.01'],
                 'no x.npy'),
                ('shape', ['--calibration', os.path.join(d, 'badcal'), '--error-budget', '0.01'],
                 'shape (3, 3), the input is (384, 128)')):
            rc, _, err = run(args.tcc, 'tune-precision', *common, *extra)
            lines = err.strip().splitlines()
            check(rc == 1 and len(lines) == 1 and expect in lines[0],
                  'refused (%s): %s' % (what, err.strip()))
    print('all passed' if not failures else '%d failed' % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
