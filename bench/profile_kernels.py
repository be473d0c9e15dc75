#!/usr/bin/env python3
"""Per-kernel GPU time of the bundles in a carry folder, by Nsight Compute.

For each case of CARRY/manifest.json (the format bench/cnn_bench.py
prepares), runs `ncu --metrics gpu__time_duration.sum tcc run BUNDLE` once
and writes OUT/NAME.profile.csv (every launch: index, kernel, µs) and a
summary: the launches at load (init) and per run, their total, and the
kernels taking most of a run, largest first.

ncu serialises the launches (caches are kept warm: --cache-control none),
so the sum exceeds a CUDA graph replay's latency by the gaps the graph
overlaps; use it to rank kernels, not as the model's latency.

usage (GPU machine): profile_kernels.py --tcc TCC --carry DIR --out DIR
                     [--top N] [--ncu PATH]
"""
import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys


def profile(args, case):
    cmd = [args.ncu, '--csv', '--cache-control', 'none', '--metrics', 'gpu__time_duration.sum', args.tcc, 'run',
           os.path.join(args.carry, case['bundle']), '--input',
           'input=' + os.path.join(args.carry, case['input']),
           '--output-dir', os.path.join(args.out, case['name'] + '.run')]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    text = p.stdout.decode(errors='replace')
    if p.returncode != 0:
        return None, text[-1500:]
    # ncu prints its own lines (==PROF==) before the CSV: start at the header.
    start = text.find('"ID"')
    if start < 0:
        return None, text[-1500:]
    rows = []
    for r in csv.DictReader(io.StringIO(text[start:])):
        if r.get('Metric Name') != 'gpu__time_duration.sum':
            continue
        v = float(r['Metric Value'].replace(',', ''))
        unit = r.get('Metric Unit', 'nsecond')
        us = v / 1000.0 if unit.startswith('n') else (v if unit.startswith('u') else v * 1000.0)
        rows.append((int(r['ID']), r['Kernel Name'], us))
    return rows, ''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--carry', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--top', type=int, default=25)
    ap.add_argument('--ncu', default=shutil.which('ncu') or '/usr/local/cuda/bin/ncu')
    ap.add_argument('--only', help='comma-separated case names')
    args = ap.parse_args()
    with open(os.path.join(args.carry, 'manifest.json')) as f:
        cases = json.load(f)
    if args.only:
        keep = set(args.only.split(','))
        cases = [c for c in cases if c['name'] in keep]
    ok = True
    for case in cases:
        rows, err = profile(args, case)
        if rows is None:
            print('%s: ncu failed: %s' % (case['name'], err))
            ok = False
            continue
        with open(os.path.join(args.out, case['name'] + '.profile.csv'), 'w') as f:
            w = csv.writer(f)
            w.writerow(['id', 'kernel', 'us'])
            for r in rows:
                w.writerow(r)
        n_init = init_kernel_launches(args, case)
        print(summary(case['name'], rows, n_init, args.top))
    return 0 if ok else 1


def init_kernel_launches(args, case):
    """The kernel launches `tcc run` makes at load (the bundle's
    init_launches, copies aside): ncu lists them first."""
    p = subprocess.run([args.tcc, 'inspect', os.path.join(args.carry, case['bundle'])],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    if p.returncode != 0:
        return 0
    m = json.loads(p.stdout.decode())
    return sum(1 for l in m.get('init_launches', []) if 'kernel' in l)


def summary(name, rows, n_init, top):
    """Per-run launches (after the n_init at load) ranked by kernel, and the
    load's total apart: weight transposes at load are no part of a run."""
    init, run = rows[:n_init], rows[n_init:]
    lines = ['== %s: %d launches a run, %.1f us in all (serialised); at load %d, %.1f us'
             % (name, len(run), sum(r[2] for r in run), len(init), sum(r[2] for r in init))]
    agg = {}
    for _, k, us in run:
        a = agg.setdefault(k, [0, 0.0])
        a[0] += 1
        a[1] += us
    for k, (n, us) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append('  %8.1f us  %3d x  %s' % (us, n, k))
    return '\n'.join(lines)


if __name__ == '__main__':
    sys.exit(main())
