#!/usr/bin/env python3
"""Does the region-fusion cost model rank groupings as the GPU does?

    python3 bench/region_rank.py --prepare --tcc BUILD/compiler/tcc [--carry .carry/rank]
                                 [--models resnet50,mobilenet_v2,...] [--alternatives 20]
                                 [--seed 1] [--target sm_90a] [--batch 1] [--dtype f16]
                                 [--small] [--host] [--no-archive] [-- TCC COMPILE FLAGS]
    python3 bench/region_rank.py --tcc BUILD/runtime/tcc --carry .carry/rank [--out DIR]
                                 [--models M,...] [--rounds 2] [--warmup 20] [--iters 100]
                                 [--no-check]
    python3 bench/region_rank.py --fit DIR/rank.json [DIR2/rank.json ...] [--fix rates,...]
    python3 bench/region_rank.py --self-test

--prepare (the build machine; bench/run-on-gpu.sh prepare-rank ARGS) exports
each model with examples/cnn/export_models.py (seeded weights from tcc's
random recipe, --recipe-weights: bundles keep the recipes, not the weights),
compiles it once with `--region-fusion=alternatives=N,seed=S,out=FILE`
(tcc-region-fusion writes N distinct legal groupings: the search's, the
greedy one, all unfused and seeded perturbations, each with its predicted
time and per-kernel features) and then once per alternative with
`--region-fusion=FILE:ID` (that grouping forced), into CARRY/bundles/. The
bundles are packed into CARRY/bundles.tar.xz unless --no-archive (the
alternatives of a model share most kernels: ResNet-50, MobileNetV2 and
GoogLeNet at full size, 20 alternatives each, 60 bundles of 0.9-1.8 MB,
pack into 0.7 MB); CARRY/manifest.json lists the cases.

The second form (the GPU machine; BENCH=rank bench/run-on-gpu.sh ARGS) runs
each alternative's bundle: `tcc run` against the float64 reference (a
forced grouping must still compute the model), then `tcc bench` replayed as
a CUDA graph (device events, median), all alternatives of a model once per
round, `--rounds` rounds interleaved (clock drift spreads over all of them),
the median of the rounds kept. Per model it prints a table and Spearman's
rho between predicted and measured times, and writes DIR/rank.json
(alternatives with predicted us, measured ms and features, for --fit) and
DIR/rank-table.md.

--fit refits the cost model's constants (passes/RegionCostModel.cpp,
CostTarget) to measured times: a kernel costs
launch + max(DRAM bytes / dram, L2 bytes / l2, tensor FLOPs / tensor + CUDA
FLOPs / cuda) / utilization + waves * (GEMM members * gemm_member + GEMM
rounds * gemm_round + k-steps * k_step + CUDA-core members * cuda_member)
(the phase latency: region groups only; an unfused element-wise epilogue:
DRAM bytes / dram + CUDA FLOPs / cuda). With the max's active term of each
kernel fixed, an alternative's time is linear in (launch, 1/dram, 1/l2,
1/tensor, 1/cuda, gemm_member, gemm_round, k_step, cuda_member) plus a
per-model constant (the ops outside region fusion, the same in every
alternative); these are fitted by non-negative least squares, the active
terms re-chosen with the fitted constants and the fit repeated until they
stay. The group tiles stay those the model chose with its own constants;
region ops on params alone (run once at load) are left out of the fit.
Files from before the phase term (no member counts) fit it as 0. It prints
the fitted constants in CostTarget's units (and as the C++ lines to paste
into the target's CostTarget), each model's rho before and after, and, with
two or more models, each model's rho under the constants fitted to the
others alone (leave one model out: is the fit more than memorised?).

--host (with --small: the ctest region-rank-host) runs the same plumbing
on the host: the alternatives are made for --target (its cost model; the
host has none) with --conv-layout=nhwc, so that the region ops are the
channels-last chains the region template takes, and each is forced on a
--target host --conv-layout=nhwc compile (tcc-region-fusion checks and costs
a forced grouping on the file's cost model when the target has none); the
run times plain `tcc bench`. The ranking numbers mean nothing there.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cnn_bench  # noqa: E402  (run_cmd, export_model, tcc_check, tcc_time)

ROOT = cnn_bench.ROOT
ARCHIVE = 'bundles.tar.xz'


# ---------------------------------------------------------------- statistics

def rankdata(values):
    """Ranks 1..n of `values`, ties given the average of the ranks they span."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind='mergesort')
    ranks = np.empty(len(values))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[order[j + 1]] == values[order[i]]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1
        i = j + 1
    return ranks


def spearman(x, y):
    """Spearman's rho: Pearson's correlation of the ranks (ties averaged);
    nan when either side is constant or there are fewer than two pairs."""
    if len(x) != len(y):
        raise ValueError('spearman: %d against %d values' % (len(x), len(y)))
    if len(x) < 2:
        return float('nan')
    rx, ry = rankdata(x), rankdata(y)
    dx, dy = rx - rx.mean(), ry - ry.mean()
    den = np.sqrt((dx * dx).sum() * (dy * dy).sum())
    return float('nan') if den == 0 else float((dx * dy).sum() / den)


def nnls(a, b, tol=None, max_iter=None):
    """min ||a x - b|| subject to x >= 0 (Lawson and Hanson's active set
    method): x."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    m, n = a.shape
    if tol is None:
        tol = 10 * max(m, n) * np.finfo(np.float64).eps * max(1.0, np.abs(a).max(initial=0))
    max_iter = max_iter or 30 * n
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    w = a.T @ (b - a @ x)
    for _ in range(max_iter):
        if passive.all() or (w[~passive] <= tol).all():
            break
        j = np.argmax(np.where(passive, -np.inf, w))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            # Step back to the boundary; variables reaching 0 leave.
            mask = passive & (z <= 0)
            alpha = np.min(x[mask] / (x[mask] - z[mask]))
            x = x + alpha * (z - x)
            passive &= x > tol
            x[~passive] = 0
        w = a.T @ (b - a @ x)
    return x


# ---------------------------------------------------------------- the model

def kernel_time(k, c):
    """A kernel's predicted us under constants `c` (as RegionCostModel.cpp):
    a launching kernel, or an unfused element-wise epilogue (launch_us 0)."""
    if k['launch_us'] == 0:
        return k['dram_bytes'] / c['dram_bytes_per_us'] + k['cuda_flops'] / c['cuda_flops_per_us']
    mem = max(k['dram_bytes'] / c['dram_bytes_per_us'], k['l2_bytes'] / c['l2_bytes_per_us'])
    comp = k['tensor_flops'] / c['tensor_flops_per_us'] + k['cuda_flops'] / c['cuda_flops_per_us']
    phase = k.get('waves', 0) * sum(k.get(f, 0) * c.get(p, 0) for p, f in PHASES)
    return c['launch_us'] + max(mem, comp) / k['utilization'] + phase


def alternative_kernels(doc, alt, per_run=False):
    """The kernels of alternative `alt` of alternatives file `doc`: its
    groups' and those of the region ops it leaves unfused; with `per_run`,
    not those of ops on params alone (the model costs them, but they run
    once at load, in the init function)."""
    grouped = {m for g in alt['groups'] for m in g}
    return list(alt['group_kernels']) + [
        op['unfused'] for op in doc['region_ops']
        if op['name'] not in grouped and (not per_run or op.get('per_run', True))]


# The phase latency's constants (us each) and the per-block counts they
# multiply (the alternatives file's kernel features), paid once per wave.
PHASES = (('gemm_member_us', 'gemm_members'), ('gemm_round_us', 'gemm_rounds'),
          ('k_step_us', 'k_steps'), ('cuda_member_us', 'cuda_members'),
          ('cuda_tap_step_us', 'tap_steps'))
RATES = ('dram_bytes_per_us', 'l2_bytes_per_us', 'tensor_flops_per_us', 'cuda_flops_per_us')
COLUMNS = ('launch_us',) + RATES + tuple(p for p, _ in PHASES)


def kernel_arrays(kernels):
    """The kernels' features as arrays (columns launch, dram, l2, tensor,
    cuda, utilization, then waves times each of the PHASES' counts: 0 in
    files from before the phase term), for the fit's many evaluations."""
    return np.array([[k['launch_us'] > 0, k['dram_bytes'], k['l2_bytes'], k['tensor_flops'],
                      k['cuda_flops'], k['utilization']] +
                     [k.get('waves', 0) * k.get(f, 0) for _, f in PHASES] for k in kernels],
                    dtype=np.float64).reshape(-1, 6 + len(PHASES))


def feature_row(ka, c):
    """An alternative's row in the linear fit (kernel arrays `ka`): per
    column, what multiplies (launch us, 1/dram, 1/l2, 1/tensor, 1/cuda, then
    the phase latencies), each launching kernel's max taking the term active
    under constants `c`."""
    launch, dram, l2, tf, cf, u = ka.T[:6]
    terms = np.stack([dram / c['dram_bytes_per_us'], l2 / c['l2_bytes_per_us'],
                      tf / c['tensor_flops_per_us'] + cf / c['cuda_flops_per_us']])
    active = np.argmax(terms, axis=0)
    on = launch > 0
    epi = ~on
    row = np.zeros(len(COLUMNS))
    row[0] = on.sum()
    row[1] = (dram / u)[on & (active == 0)].sum() + dram[epi].sum()
    row[2] = (l2 / u)[on & (active == 1)].sum()
    row[3] = (tf / u)[on & (active == 2)].sum()
    row[4] = (cf / u)[on & (active == 2)].sum() + cf[epi].sum()
    row[5:] = ka[on, 6:].sum(axis=0)
    return row


def predict(ka, c):
    """kernel_time summed over kernel arrays `ka`."""
    launch, dram, l2, tf, cf, u = ka.T[:6]
    on = launch > 0
    mem = np.maximum(dram / c['dram_bytes_per_us'], l2 / c['l2_bytes_per_us'])
    comp = tf / c['tensor_flops_per_us'] + cf / c['cuda_flops_per_us']
    phase = ka[:, 6:] @ np.array([c.get(p, 0) for p, _ in PHASES])
    return float((c['launch_us'] + np.maximum(mem, comp) / u + phase)[on].sum() +
                 (dram / c['dram_bytes_per_us'] + cf / c['cuda_flops_per_us'])[~on].sum())


def constants_of(theta):
    def inv(v):
        return float('inf') if v <= 0 else 1.0 / v
    c = {'launch_us': float(theta[0]), 'dram_bytes_per_us': inv(theta[1]),
         'l2_bytes_per_us': inv(theta[2]), 'tensor_flops_per_us': inv(theta[3]),
         'cuda_flops_per_us': inv(theta[4])}
    for i, (p, _) in enumerate(PHASES):
        c[p] = float(theta[5 + i])
    return c


def theta_of(c):
    """constants_of's inverse: the linear coefficients of constants `c`."""
    return np.array([c['launch_us']] + [1.0 / c[k] for k in RATES] +
                    [c.get(p, 0.0) for p, _ in PHASES])


def fit_from(models, start, max_rounds=50, fixed=()):
    """Alternating fit from constants `start`: choose each kernel's active
    term, fit the constants linearly (NNLS), repeat until the terms stay.
    The COLUMNS named in `fixed` keep their values in `start`."""
    c = dict(start)
    held = np.array([k in fixed for k in COLUMNS])
    theta_held = theta_of(start) * held
    previous = None
    onehots = []
    for mi, (_, alts) in enumerate(models):
        for _ in alts:
            onehot = np.zeros(len(models))
            onehot[mi] = 1
            onehots.append(onehot)
    b = np.array([t for _, alts in models for _, t in alts])
    for rounds in range(1, max_rounds + 1):
        feats = np.array([feature_row(ka, c) for _, alts in models for ka, _ in alts])
        a = np.hstack([feats * ~held, np.array(onehots)])
        # Columns scaled to unit norm: bytes and FLOPs are 1e9 times launches.
        scale = np.linalg.norm(a, axis=0)
        scale[scale == 0] = 1
        theta = nnls(a / scale, b - feats @ theta_held) / scale
        theta[:len(COLUMNS)] += theta_held
        c = constants_of(theta)
        # A term fitted to nothing (infinite rate) is never active.
        for k in RATES:
            if not np.isfinite(c[k]):
                c[k] = 1e30
        if previous is not None and np.array_equal(feats, previous):
            break
        previous = feats
    return constants_of(theta), theta[len(COLUMNS):], rounds


def fit(models, start, fixed=()):
    """Fits the constants to `models`: [(name, [(kernel arrays, measured
    us)])], from `start` and from starts with its rates scaled by 1/4 and 4
    (the alternating fit finds the optimum of the active terms it starts
    near); the fit whose model (with its max) is closest to the measured
    times is kept. The COLUMNS named in `fixed` keep their values in
    `start`. Returns (constants, per-model intercepts, rms us)."""
    import itertools
    best = None
    free = [k for k in RATES if k not in fixed]
    for factors in itertools.product((1, 0.25, 4), repeat=len(free)):
        s = dict(start)
        for k, f in zip(free, factors):
            s[k] = start[k] * f
        c, icept, _ = fit_from(models, s, fixed=fixed)
        err = [icept[mi] + predict(ka, c) - t
               for mi, (_, alts) in enumerate(models) for ka, t in alts]
        rms = float(np.sqrt(np.mean(np.square(err))))
        if best is None or rms < best[2] * (1 - 1e-9):
            best = (c, icept, rms)
    return best


def run_fit(paths, fixed=()):
    models, start = [], None
    for path in paths:
        for m in json.load(open(path))['models']:
            doc = m['alternatives_doc']
            start = start or doc['constants']
            alts, pred, meas, worst = [], [], [], 0.0
            for case in m['cases']:
                # The features must give back the model's own prediction.
                again = sum(kernel_time(k, doc['constants'])
                            for k in alternative_kernels(doc, case['alternative']))
                worst = max(worst, abs(again - case['predicted_us']) / case['predicted_us'])
                if case.get('measured_ms') is None or not case.get('ok', True):
                    continue
                kernels = alternative_kernels(doc, case['alternative'], per_run=True)
                alts.append((kernel_arrays(kernels), case['measured_ms'] * 1000))
                pred.append(case['predicted_us'])
                meas.append(case['measured_ms'] * 1000)
            print('%s: %d alternatives measured; the features give back the predictions to '
                  '%.1e (relative)' % (m['model'], len(alts), worst))
            if worst > 1e-6:
                print('error: the features do not reproduce the predictions')
                return 1
            models.append((m['model'], alts, pred, meas))
    if not models or start is None:
        print('error: nothing to fit')
        return 1
    start = dict(start)
    for p, _ in PHASES:
        start.setdefault(p, 0.0)
    constants, intercepts, rms = fit([(n, a) for n, a, _, _ in models], start, fixed)
    print('fitted (non-negative least squares on the active terms, best of %d starts%s): '
          'rms %.2f us' % (3 ** len([k for k in RATES if k not in fixed]),
                           '; held: ' + ', '.join(fixed) if fixed else '', rms))
    units = {'launch_us': (1, 'us'), 'dram_bytes_per_us': (1e-6, 'TB/s'),
             'l2_bytes_per_us': (1e-6, 'TB/s'), 'tensor_flops_per_us': (1e-6, 'TFLOP/s'),
             'cuda_flops_per_us': (1e-6, 'TFLOP/s')}
    units.update({p: (1, 'us') for p, _ in PHASES})
    for k in COLUMNS:
        print('  %-20s %14.6g (now %.6g)   = %.4g %s' % (
            k, constants[k], start[k], constants[k] * units[k][0], units[k][1]))
    # Leave one model out: the constants fitted to the other models alone.
    held = {}
    if len(models) >= 2:
        for i, (name, alts, _, meas) in enumerate(models):
            c, _, _ = fit([(n, a) for j, (n, a, _, _) in enumerate(models) if j != i], start,
                          fixed)
            held[i] = spearman([predict(ka, c) for ka, _ in alts], meas)
    for i, ((name, alts, pred, meas), icept) in enumerate(zip(models, intercepts)):
        refit = [icept + predict(ka, constants) for ka, _ in alts]
        print('  %-16s outside region ops %.1f us; rho predicted %.3f, refitted %.3f%s' % (
            name, icept, spearman(pred, meas), spearman(refit, meas),
            ', fitted to the others alone %.3f' % held[i] if i in held else ''))
    # CostTarget's fields (passes/RegionCostModel.cpp), in its units; a rate
    # fitted to nothing (infinite) is left as it is.
    print('CostTarget (passes/RegionCostModel.cpp):')
    fields = {'launch_us': 'launchUs', 'dram_bytes_per_us': 'dramBytesPerUs',
              'l2_bytes_per_us': 'l2BytesPerUs', 'tensor_flops_per_us': 'tensorFlopsPerUs',
              'cuda_flops_per_us': 'cudaFlopsPerUs', 'gemm_member_us': 'gemmMemberUs',
              'gemm_round_us': 'gemmRoundUs', 'k_step_us': 'kStepUs',
              'cuda_member_us': 'cudaMemberUs', 'cuda_tap_step_us': 'cudaTapStepUs'}
    for k in COLUMNS:
        v = constants[k]
        print('    /*%s=*/%s,%s' % (fields[k], '%.4g' % v if np.isfinite(v) and v < 1e29 else
                                    '%.4g' % start[k],
                                    '' if np.isfinite(v) and v < 1e29 else
                                    '  // fitted to nothing: kept'))
    return 0


# ---------------------------------------------------------------- prepare

def prepare(args, flags):
    carry = args.carry
    if os.path.exists(carry):
        shutil.rmtree(carry)
    os.makedirs(os.path.join(carry, 'bundles'))
    # The runtime build on the GPU machine needs nlohmann-json.
    for src, dst in (('/usr/include/nlohmann', 'deps/usr/include/nlohmann'),
                     ('/usr/share/cmake/nlohmann_json', 'deps/usr/share/cmake/nlohmann_json')):
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(carry, dst))
    layout = ['--conv-layout=nhwc'] if args.host else []
    manifest = {'kind': 'region-rank', 'target': 'host' if args.host else args.target,
                'cost_target': args.target, 'graph': not args.host, 'archive': None,
                'models': []}
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(','):
            name = '%s_b%d_%s' % (model, args.batch, args.dtype)
            if not cnn_bench.export_model(model, tmp, args.batch, args.dtype, True, args.small):
                return 1
            onnx = os.path.join(tmp, model + '.onnx')
            alts_file = os.path.join(carry, name + '.alternatives.json')
            common = ['--param-recipes=keep'] + layout + flags
            rc, log = cnn_bench.run_cmd(
                [args.tcc, 'compile', onnx, '-o', os.path.join(tmp, 'auto.tccb'), '--target',
                 args.target, '--region-fusion=alternatives=%d,seed=%d,out=%s' % (
                     args.alternatives, args.seed, alts_file)] + common, timeout=1800)
            if rc != 0:
                print('%s: alternatives failed: %s' % (name, log.strip()[-600:]))
                return 1
            doc = json.load(open(alts_file))
            alts = doc['alternatives']
            print('%s: %d alternatives, predicted %.1f to %.1f us (%d region ops)' % (
                name, len(alts), min(a['predicted_us'] for a in alts),
                max(a['predicted_us'] for a in alts), len(doc['region_ops'])), flush=True)
            if len(alts) < args.alternatives:
                print('%s: warning: %d distinct legal groupings, %d asked' % (
                    name, len(alts), args.alternatives))
            entry = {'name': name, 'model': model, 'dtype': args.dtype,
                     'shape': list(np.load(os.path.join(tmp, model + '.input.npy')).shape),
                     'input': name + '.input.npy', 'reference': name + '.ref.npy',
                     'alternatives': name + '.alternatives.json', 'flags': common,
                     'cases': []}
            shutil.copy(os.path.join(tmp, model + '.input.npy'),
                        os.path.join(carry, entry['input']))
            shutil.copy(os.path.join(tmp, model + '.output64.npy'),
                        os.path.join(carry, entry['reference']))
            for alt in alts:
                bundle = os.path.join('bundles', '%s_alt%02d.tccb' % (name, alt['id']))
                rc, log = cnn_bench.run_cmd(
                    [args.tcc, 'compile', onnx, '-o', os.path.join(carry, bundle), '--target',
                     manifest['target'], '--region-fusion=%s:%d' % (alts_file, alt['id'])]
                    + common, timeout=1800)
                if rc != 0:
                    print('%s: alternative %d failed: %s' % (name, alt['id'], log.strip()[-600:]))
                    return 1
                # A group the region template refuses runs unfused: the
                # prediction then is not what runs.
                warnings = [line for line in log.splitlines() if 'warning' in line]
                entry['cases'].append({'id': alt['id'], 'origin': alt['origin'],
                                       'predicted_us': alt['predicted_us'],
                                       'groups': len(alt['groups']), 'bundle': bundle,
                                       'warnings': warnings})
                print('  alternative %2d %-22s %3d groups, predicted %9.2f us, %.2f MB%s' % (
                    alt['id'], alt['origin'], len(alt['groups']), alt['predicted_us'],
                    os.path.getsize(os.path.join(carry, bundle)) / 1e6,
                    ', %d warnings' % len(warnings) if warnings else ''), flush=True)
            manifest['models'].append(entry)
    if not args.no_archive:
        # PTX is text: the bundles shrink several times packed.
        with tarfile.open(os.path.join(carry, ARCHIVE), 'w:xz') as tar:
            tar.add(os.path.join(carry, 'bundles'), arcname='bundles')
        shutil.rmtree(os.path.join(carry, 'bundles'))
        manifest['archive'] = ARCHIVE
    json.dump(manifest, open(os.path.join(carry, 'manifest.json'), 'w'), indent=1)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(carry) for f in fs)
    print('prepared %s: %.1f MB' % (carry, size / 1e6))
    return 0


# ---------------------------------------------------------------- measure

def measure(args):
    manifest = json.load(open(os.path.join(args.carry, 'manifest.json')))
    os.makedirs(args.out, exist_ok=True)
    only = set(filter(None, args.models.split(','))) if args.models else set()
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        root = args.carry
        if manifest.get('archive'):
            # Unpacked beside the inputs (symlinks) so that paths stay relative.
            root = os.path.join(work, 'carry')
            os.makedirs(root)
            with tarfile.open(os.path.join(args.carry, manifest['archive'])) as tar:
                try:
                    tar.extractall(root, filter='data')
                except TypeError:  # Python before 3.12 and its backports
                    tar.extractall(root)
            for f in os.listdir(args.carry):
                if f.endswith('.npy'):
                    os.symlink(os.path.abspath(os.path.join(args.carry, f)),
                               os.path.join(root, f))
        ns = argparse.Namespace(tcc=args.tcc, carry=root)
        results = []
        for m in manifest['models']:
            if only and m['model'] not in only and m['name'] not in only:
                continue
            doc = json.load(open(os.path.join(args.carry, m['alternatives'])))
            by_id = {a['id']: a for a in doc['alternatives']}
            cases = []
            for c in m['cases']:
                case = dict(c, name='%s_alt%02d' % (m['name'], c['id']), input=m['input'],
                            reference=m['reference'], dtype=m['dtype'], flags=m['flags'])
                r = {'id': c['id'], 'origin': c['origin'], 'predicted_us': c['predicted_us'],
                     'groups': c['groups'], 'warnings': c['warnings'], 'times_ms': [],
                     'alternative': by_id[c['id']]}
                if not args.no_check:
                    r.update(cnn_bench.tcc_check(ns, case, work, manifest['graph']))
                    r['ok'] = r.get('ok', False)
                    failed += not r['ok']
                cases.append((case, r))
            for _ in range(args.rounds):
                for case, r in cases:
                    if 'error' in r:
                        continue
                    t, why = cnn_bench.tcc_time(ns, case, manifest['graph'],
                                                warmup=args.warmup, iters=args.iters)
                    if t is None:
                        r['error'] = why
                        failed += 1
                    else:
                        r['times_ms'].append(t)
            for _, r in cases:
                r['measured_ms'] = float(np.median(r['times_ms'])) if r['times_ms'] else None
            good = [r for _, r in cases if r['measured_ms'] is not None and r.get('ok', True)]
            rho = spearman([r['predicted_us'] for r in good], [r['measured_ms'] for r in good])
            pr = rankdata([r['predicted_us'] for r in good])
            mr = rankdata([r['measured_ms'] for r in good])
            print('== %s: %d alternatives' % (m['name'], len(cases)))
            print('  id origin                 groups predicted_us rank measured_ms rank   err')
            rank = {id(r): (p, q) for r, p, q in zip(good, pr, mr)}
            for _, r in cases:
                p, q = rank.get(id(r), (float('nan'), float('nan')))
                print('  %2d %-22s %6d %12.2f %4.1f %11s %4.1f %s%s' % (
                    r['id'], r['origin'], r['groups'], r['predicted_us'], p,
                    '-' if r['measured_ms'] is None else '%.4f' % r['measured_ms'], q,
                    '%.1e' % r['err'] if 'err' in r else '-',
                    ' ' + r['error'].replace('\n', ' | ')[:200] if 'error' in r else
                    (' WRONG' if not r.get('ok', True) else '')
                    + (' (%d warnings)' % len(r['warnings']) if r['warnings'] else '')))
            print('  Spearman rho (predicted us, measured ms) over %d: %.3f' % (len(good), rho),
                  flush=True)
            results.append({'model': m['model'], 'name': m['name'], 'rho': rho,
                            'alternatives_doc': {k: doc[k] for k in
                                                 ('function', 'target', 'constants',
                                                  'region_ops')},
                            'cases': [r for _, r in cases]})
            # After each model: a call cut short by its time limit keeps the
            # models it finished (session 27 lost two carries' worth).
            write_results(args.out, manifest, results)
    write_results(args.out, manifest, results)
    print(open(os.path.join(args.out, 'rank-table.md')).read())
    return 1 if failed else 0


def write_results(out, manifest, results):
    """OUT/rank.json (for --fit) and OUT/rank-table.md of `results`."""
    json.dump({'target': manifest['target'], 'graph': manifest['graph'], 'models': results},
              open(os.path.join(out, 'rank.json'), 'w'))
    with open(os.path.join(out, 'rank-table.md'), 'w') as f:
        f.write('| model | alternatives | Spearman rho | predicted us (min-max) | '
                'measured ms (min-max) |\n| --- | ---: | ---: | --- | --- |\n')
        for res in results:
            ok = [r for r in res['cases'] if r['measured_ms'] is not None and r.get('ok', True)]
            if not ok:
                continue
            f.write('| %s | %d | %.3f | %.1f-%.1f | %.4f-%.4f |\n' % (
                res['name'], len(ok), res['rho'], min(r['predicted_us'] for r in ok),
                max(r['predicted_us'] for r in ok), min(r['measured_ms'] for r in ok),
                max(r['measured_ms'] for r in ok)))


# ---------------------------------------------------------------- self-test

def self_test():
    """Spearman and NNLS against values derived by hand (no SciPy)."""
    failed = 0

    def check(name, got, want, tol=1e-12):
        nonlocal failed
        ok = np.allclose(got, want, atol=tol, rtol=0)
        print('%s %s: %s (want %s)' % ('PASS' if ok else 'FAIL', name, got, want))
        failed += not ok
    check('ranks with ties', rankdata([10, 20, 20, 5, 20]), [2, 4, 4, 1, 4])
    check('rho of a monotone map', spearman([1, 2, 3, 4], [1, 10, 100, 1000]), 1.0)
    check('rho reversed', spearman([1, 2, 3, 4], [9, 7, 5, 1]), -1.0)
    # No ties: 1 - 6 sum d^2 / (n (n^2 - 1)); ranks (1,2,3,4,5) against
    # (2,1,4,3,5): d^2 = 1+1+1+1+0 = 4, 1 - 24/120 = 0.8.
    check('rho without ties', spearman([1, 2, 3, 4, 5], [20, 10, 40, 30, 50]), 0.8)
    # Ties: x ranks (1,2,3,4), y = (1,2,2,3) ranks (1,2.5,2.5,4). Centred:
    # x (-1.5,-0.5,0.5,1.5), y (-1.5,0,0,1.5): sum xy = 4.5, sum x^2 = 5,
    # sum y^2 = 4.5: rho = 4.5 / sqrt(22.5) = 0.9486832980505138.
    check('rho with ties', spearman([1, 2, 3, 4], [1, 2, 2, 3]), 4.5 / np.sqrt(22.5))
    # b = (2, -1) on the identity: the second coordinate stops at 0.
    check('nnls clips', nnls(np.eye(2), [2, -1]), [2, 0])
    # A line through (1,3),(2,2),(3,1): least squares gives intercept 4,
    # slope -1; slope >= 0 leaves the mean, 2, as intercept.
    check('nnls intercept', nnls([[1, 1], [1, 2], [1, 3]], [3, 2, 1]), [2, 0], 1e-9)
    # Interior solution: equals least squares, (1, 2).
    check('nnls interior', nnls([[1, 0], [0, 2], [1, 1]], [1, 4, 3]), [1, 2], 1e-9)
    # Against every support's least squares on random problems (the NNLS
    # optimum is the best feasible one).
    rng = np.random.default_rng(1)
    for t in range(20):
        a = rng.normal(size=(8, 4))
        b = rng.normal(size=8)
        best = None
        for mask in range(16):
            cols = [i for i in range(4) if mask >> i & 1]
            x = np.zeros(4)
            if cols:
                x[cols] = np.linalg.lstsq(a[:, cols], b, rcond=None)[0]
            if (x >= -1e-12).all():
                r = np.linalg.norm(a @ x - b)
                if best is None or r < best[0]:
                    best = (r, x)
        got = nnls(a, b)
        if not (np.allclose(got, best[1], atol=1e-8) and (got >= 0).all()):
            print('FAIL nnls random %d: %s against %s' % (t, got, best[1]))
            failed += 1
    print('%s nnls against enumerated supports on 20 random problems' % (
        'PASS' if not failed else 'FAIL'))
    # The fit recovers constants from times the model computes itself.
    c = {'launch_us': 2.0, 'dram_bytes_per_us': 4e6, 'l2_bytes_per_us': 8e6,
         'tensor_flops_per_us': 4e8, 'cuda_flops_per_us': 2.5e7, 'gemm_member_us': 1.0,
         'gemm_round_us': 0.5, 'k_step_us': 0.25, 'cuda_member_us': 0.7,
         'cuda_tap_step_us': 0.05}
    # The phase latency by hand: 2 waves of 1 GEMM member, 2 rounds, 10
    # k-steps and a CUDA-core member: 2 * (1 + 2 * 0.5 + 10 * 0.25 + 0.7) =
    # 10.4 us beside launch 2 and the body, 4e6 B / 4e6 = 1 us at
    # utilization 0.5.
    check('phase latency', kernel_time(
        {'launch_us': 2.0, 'dram_bytes': 4e6, 'l2_bytes': 0, 'tensor_flops': 0,
         'cuda_flops': 0, 'utilization': 0.5, 'waves': 2, 'gemm_members': 1,
         'gemm_rounds': 2, 'k_steps': 10, 'cuda_members': 1}, c), 2 + 2 + 10.4, 1e-12)
    # Kernels of each kind (DRAM-, L2-, compute-bound, epilogues), so that
    # every constant shows in the times, with phase counts of their own;
    # the start 2x off each way, the phases at 0.
    models = []
    for mi in range(2):
        alts = []
        for _ in range(15):
            ks = []
            for kind in rng.integers(0, 3, size=rng.integers(3, 9)):
                big = [1e8 if kind == 0 else 1e6, 1e9 if kind == 1 else 1e6,
                       1e11 if kind == 2 else 1e8, 1e9 if kind == 2 else 1e6]
                ks.append({'launch_us': 2.0, 'dram_bytes': float(rng.uniform(0.2, 1) * big[0]),
                           'l2_bytes': float(rng.uniform(0.2, 1) * big[1]),
                           'tensor_flops': float(rng.uniform(0.2, 1) * big[2]),
                           'cuda_flops': float(rng.uniform(0.2, 1) * big[3]),
                           'utilization': float(rng.uniform(0.2, 1)),
                           'waves': int(rng.integers(1, 4)),
                           'gemm_members': int(rng.integers(0, 4)),
                           'gemm_rounds': int(rng.integers(0, 6)),
                           'k_steps': int(rng.integers(0, 40)),
                           'cuda_members': int(rng.integers(0, 3)),
                           'tap_steps': int(rng.integers(0, 80))})
            ks.append({'launch_us': 0, 'dram_bytes': float(rng.uniform(1e5, 1e7)),
                       'l2_bytes': 0, 'tensor_flops': 0,
                       'cuda_flops': float(rng.uniform(1e6, 1e8)), 'utilization': 1})
            alts.append((kernel_arrays(ks), 7.0 * (mi + 1) + sum(kernel_time(k, c) for k in ks)))
        models.append(('m%d' % mi, alts))
    check('predict is kernel_time summed', predict(models[0][1][0][0], c),
          models[0][1][0][1] - 7.0, 1e-9)
    start = {'launch_us': 5.0, 'dram_bytes_per_us': 2e6, 'l2_bytes_per_us': 16e6,
             'tensor_flops_per_us': 8e8, 'cuda_flops_per_us': 1.25e7, 'gemm_member_us': 0.0,
             'gemm_round_us': 0.0, 'k_step_us': 0.0, 'cuda_member_us': 0.0,
             'cuda_tap_step_us': 0.0}
    got, icept, rms = fit(models, start)
    for k in COLUMNS:
        check('fit %s' % k, got[k] / c[k], 1.0, 1e-6)
    check('fit intercepts', icept, [7.0, 14.0], 1e-6)
    # The rates held at the true ones: launch and phases alone are fitted.
    held = dict(c, launch_us=5.0, gemm_member_us=0.0, gemm_round_us=0.0, k_step_us=0.0,
                cuda_member_us=0.0)
    got, icept, rms = fit(models, held, fixed=RATES)
    for k in COLUMNS:
        check('fit with the rates held: %s' % k, got[k] / c[k], 1.0, 1e-6)
    return 1 if failed else 0


def main():
    argv = sys.argv[1:]
    flags = []
    if '--' in argv:
        flags = argv[argv.index('--') + 1:]
        argv = argv[:argv.index('--')]
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tcc')
    ap.add_argument('--prepare', action='store_true')
    ap.add_argument('--fit', nargs='+', metavar='RANK_JSON')
    ap.add_argument('--fix', default='',
                    help='--fit: constants kept at the files\' values, comma-separated (%s, or '
                         '"rates" for the four rates)' % ', '.join(COLUMNS))
    ap.add_argument('--self-test', action='store_true')
    ap.add_argument('--models', default=None,
                    help='--prepare: the models (default resnet50,mobilenet_v2,squeezenet1_1); '
                         'else: only these')
    ap.add_argument('--alternatives', type=int, default=20)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--target', default='sm_90a',
                    help='the compile target (with --host: the cost model\'s)')
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--dtype', choices=['f16'], default='f16',
                    help='region groups are 16-bit chains')
    ap.add_argument('--small', action='store_true', help='reduced input sizes (CI)')
    ap.add_argument('--host', action='store_true',
                    help='bundles for the host (the plumbing, not the ranking)')
    ap.add_argument('--no-archive', action='store_true')
    ap.add_argument('--carry', default=os.path.join(ROOT, '.carry', 'rank'))
    ap.add_argument('--out', default='out')
    ap.add_argument('--rounds', type=int, default=2)
    ap.add_argument('--warmup', type=int, default=20)
    ap.add_argument('--iters', type=int, default=100)
    ap.add_argument('--no-check', action='store_true',
                    help='skip `tcc run` against the reference')
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if args.fit:
        fixed = []
        for k in filter(None, args.fix.split(',')):
            if k not in COLUMNS + ('rates',):
                ap.error('--fix: unknown constant %r (%s, rates)' % (k, ', '.join(COLUMNS)))
            fixed += RATES if k == 'rates' else (k,)
        return run_fit(args.fit, tuple(fixed))
    if not args.tcc:
        ap.error('--tcc is needed')
    if args.prepare:
        args.models = args.models or 'resnet50,mobilenet_v2,squeezenet1_1'
        return prepare(args, flags)
    return measure(args)


if __name__ == '__main__':
    sys.exit(main())
