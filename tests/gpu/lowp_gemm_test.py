#!/usr/bin/env python3
"""8-bit GEMMs (f8e4m3, f8e5m2, i8) on Hopper's warpgroup MMA, checked here.

    lowp_gemm_test.py TCC [--ptxas PTXAS]

For sm_90a, `tcc inspect` must show the wgmma template computing each 8-bit
matmul that it can take (B stored [N, K] directly; B stored [K, N] after a
transpose kernel; a batch sharing one B), and the generic kernels computing
the ones it cannot (fewer than 64 rows, rows of K not 16 bytes); the PTX
assembles with ptxas (when given) without spills. A --schedule sets the
template's knobs; an unknown knob is a one-line error. The same models run
on the host against NumPy on fresh random inputs (the semantics the GPU
kernels must match: i8 sums exactly in i32, f8 products exactly in f32).
The GPU runs them in bench/gpu_bench.py (against torch._scaled_mm and
torch._int_mm).
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


def model(name, dt, m, k, n, trans_b, batch=None, out=None):
    out = out or ('i32' if dt == 'i8' else 'bf16')
    a = ([batch] if batch else []) + [m, k]
    b = [n, k] if trans_b else [k, n]
    return {'format': 'tcc-model', 'version': 1, 'name': name,
            'inputs': [{'name': 'a', 'dtype': dt, 'shape': a},
                       {'name': 'b', 'dtype': dt, 'shape': b}],
            'nodes': [{'op': 'matmul', 'inputs': ['a', 'b'], 'outputs': ['c'],
                       'attrs': {'transpose_b': trans_b, 'out_dtype': out}}],
            'outputs': ['c']}


# name: (dtype, M, K, N, B stored [N, K], batch, kernels expected on sm_90a)
CASES = {
    'e4m3_nt': ('f8e4m3', 1000, 1040, 1000, True, None, ['wgmma']),
    'e5m2_nn': ('f8e5m2', 130, 512, 200, False, None, ['transpose_b', 'wgmma']),
    'i8_nt': ('i8', 333, 1056, 517, True, None, ['wgmma']),
    'i8_nn': ('i8', 200, 256, 96, False, None, ['transpose_b', 'wgmma']),
    'i8_batch': ('i8', 130, 512, 200, True, 3, ['wgmma']),
    # Not the template's: fewer than 64 rows; K not a multiple of 16.
    'e4m3_m40': ('f8e4m3', 40, 128, 256, True, None, None),
    'i8_k30': ('i8', 256, 30, 256, True, None, None),
}


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def fail(msg):
    print('FAILED: ' + msg)
    sys.exit(1)


def inputs(rng, dt, shape):
    if dt == 'i8':
        return rng.integers(-128, 128, shape).astype(np.int8)
    return L.rnd(dt, rng.standard_normal(shape) * 2).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('tcc')
    ap.add_argument('--ptxas')
    args = ap.parse_args()
    seed = int(os.environ.get('TCC_TEST_SEED', int.from_bytes(os.urandom(4), 'little')))
    print('random inputs from seed %d (TCC_TEST_SEED repeats it)' % seed)
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as d:
        for name, (dt, m, k, n, tb, batch, want) in CASES.items():
            path = os.path.join(d, name + '.json')
            with open(path, 'w') as f:
                json.dump(model(name, dt, m, k, n, tb, batch), f)
            bundle = os.path.join(d, name + '.tccb')
            ptx = os.path.join(d, name + '.ptx')
            for extra in (['-o', bundle], ['--emit', 'asm', '-o', ptx]):
                rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90a', *extra)
                if rc:
                    fail('%s: tcc compile: %s' % (name, err.strip()))
            rc, out, err = run(args.tcc, 'inspect', bundle)
            kernels = json.loads(out)['kernels']
            templ = [x for x in kernels if x.get('template') == 'wgmma']
            if want is None:
                if templ:
                    fail('%s: the wgmma template took a matmul it cannot' % name)
            else:
                got = ['wgmma' if x.get('template') == 'wgmma' else x['name'].split('matmul_')[-1]
                       for x in kernels]
                if got != want:
                    fail('%s: kernels %s, expected %s' % (name, got, want))
                text = open(ptx).read()
                op = 's32.s8.s8' if dt == 'i8' else 'f32.%s.%s' % ((dt[2:],) * 2)
                if 'wgmma.mma_async.sync.aligned.m64n' not in text or op not in text:
                    fail('%s: no wgmma of %s in the PTX' % (name, op))
            if args.ptxas:
                rc, _, err = run(args.ptxas, '-arch=sm_90a', '-v', ptx, '-o', os.devnull)
                if rc:
                    fail('%s: ptxas: %s' % (name, err.strip()[-300:]))
                spills = [int(x) for x in re.findall(r'(\d+) bytes spill stores', err)]
                if any(spills):
                    fail('%s: ptxas reports spills: %s' % (name, spills))
            # The host computes the same semantics: checked against NumPy.
            a = inputs(rng, dt, ([batch] if batch else []) + [m, k])
            b = inputs(rng, dt, [n, k] if tb else [k, n])
            files = []
            for x, v in (('a', a), ('b', b)):
                np.save(os.path.join(d, x + '.npy'), v)
                files += ['--input', '%s=%s' % (x, os.path.join(d, x + '.npy'))]
            outdir = os.path.join(d, name + '-out')
            rc, _, err = run(args.tcc, 'run', path, '--target', 'host', '--output-dir', outdir,
                             *files)
            if rc:
                fail('%s: tcc run on the host: %s' % (name, err.strip()))
            got = np.load(os.path.join(outdir, 'c.npy')).astype(np.float64)
            bb = b.astype(np.float64)
            ref = a.astype(np.float64) @ (bb.T if tb else bb)
            if dt == 'i8':
                if not np.array_equal(got, ref):
                    fail('%s: i8 x i8 -> i32 is not exact' % name)
            else:
                # f32 sums of exact products (a few ulps times sqrt(K) of
                # sum |a||b|), then one bf16 rounding (two ulps allowed).
                absum = np.abs(a.astype(np.float64)) @ np.abs(bb.T if tb else bb)
                tol = 2 * 2.0**-8 * np.abs(ref) + (4 * np.sqrt(k) + 4) * 2.0**-24 * absum
                bad = np.abs(got - ref) > tol
                if bad.any():
                    fail('%s: %d elements off (worst %g)' % (name, bad.sum(),
                                                            np.abs(got - ref).max()))
            print('ok %-9s %s' % (name, 'wgmma' if want else 'generic kernels'))

        # A --schedule sets the 8-bit template's knobs, or is refused.
        path = os.path.join(d, 'e4m3_nt.json')
        sched = os.path.join(d, 'sched.json')
        with open(sched, 'w') as f:
            # The "matmul" entry (mma.sync's knobs) leaves 8-bit kernels alone.
            json.dump({'matmul': {'tile_k': 64, 'warps_m': 2},
                       'kernels': {'k0_matmul': {'tile_n': 256, 'stages': 4, 'promote': 0}}}, f)
        bundle = os.path.join(d, 's.tccb')
        rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90a', '--schedule', sched,
                         '-o', bundle)
        if rc:
            fail('--schedule on an f8 matmul: %s' % err.strip())
        k0 = json.loads(run(args.tcc, 'inspect', bundle)[1])['kernels'][0]
        if k0.get('template') != 'wgmma' or k0['schedule']['tile_n'] != 256 \
                or k0['schedule']['stages'] != 4 or k0['schedule']['promote'] != 0:
            fail('--schedule not applied to the f8 wgmma kernel: %s' % k0)
        # By default f8 sums are promoted to f32 registers every k-tile.
        rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90a', '-o', bundle)
        k0 = json.loads(run(args.tcc, 'inspect', bundle)[1])['kernels'][0] if rc == 0 else {}
        if k0.get('schedule', {}).get('promote') != 1 or k0['schedule']['tile_n'] > 192:
            fail('f8 not promoted by default: %s %s' % (k0, err.strip()))
        # A split-K's f32 partials are summed into C by a reduction kernel.
        with open(sched, 'w') as f:
            json.dump({'kernels': {'k0_matmul': {'split_k': 2}}}, f)
        rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90a', '--schedule', sched,
                         '-o', bundle)
        if rc:
            fail('split_k 2 on an f8 matmul: %s' % err.strip())
        m = json.loads(run(args.tcc, 'inspect', bundle)[1])
        names = [m['kernels'][x['kernel']]['name'] for x in m['launches']]
        if len(names) != 2 or not names[1].endswith('_splitk') or \
                m['kernels'][m['launches'][0]['kernel']]['schedule']['split_k'] != 2:
            fail('split_k 2: launches %s, expected the wgmma kernel and its reduction' % names)
        # producer 1: a producer warpgroup copies the k-tiles by TMA (3-D tensor
        # maps of A and B, edges zero-filled: K 1040 is no multiple of the
        # k-tile, and a batch sharing one B), the warpgroups wait on
        # mbarriers; a producer warpgroup of 128 more threads.
        for case in ('e4m3_nt', 'e5m2_nn', 'i8_batch'):
            dt, m_, k_, n_, tb, batch, _ = CASES[case]
            cpath = os.path.join(d, case + '.json')
            with open(sched, 'w') as f:
                json.dump({'kernels': {'k0_matmul': {'producer': 1}}}, f)
            ptx = os.path.join(d, case + '-producer.ptx')
            for extra in (['-o', bundle], ['--emit', 'asm', '-o', ptx]):
                rc, _, err = run(args.tcc, 'compile', cpath, '--target', 'sm_90a',
                                 '--schedule', sched, *extra)
                if rc:
                    fail('%s with a producer: %s' % (case, err.strip()))
            m = json.loads(run(args.tcc, 'inspect', bundle)[1])
            # (B stored [K, N] is transposed into scratch first: the maps
            # read the buffers the kernel's A and B arguments are.)
            launch = m['launches'][-1]
            maps = launch.get('tensor_maps', [])
            if [t['buffer'] for t in maps] != launch['args'][:2]:
                fail('%s with a producer: maps of buffers %s, the kernel reads %s'
                     % (case, [t['buffer'] for t in maps], launch['args'][:2]))
            # (A batch sharing one B is one matrix of batch x M rows.)
            dims = [[t['dims'][0], t['dims'][1] * t['dims'][2]] for t in maps]
            if launch['block'][0] != 384 or dims != [[k_, m_ * (batch or 1)], [k_, n_]] or \
                    [t['box'][0] for t in maps] != [128, 128]:
                fail('%s with a producer: block %s, maps %s' % (case, launch['block'], maps))
            text = open(ptx).read()
            if 'cp.async.bulk.tensor.3d' not in text or 'mbarrier.try_wait.parity' not in text:
                fail('%s with a producer: no TMA copies or mbarrier waits in the PTX' % case)
            if args.ptxas:
                rc, _, err = run(args.ptxas, '-arch=sm_90a', '-v', ptx, '-o', os.devnull)
                spills = [int(x) for x in re.findall(r'(\d+) bytes spill stores', err)]
                if rc or any(spills):
                    fail('%s with a producer: ptxas rc %d, spills %s' % (case, rc, spills))
        print('ok producer warpgroup (TMA maps of A and B, 384 threads, no spills)')
        for bad_knobs, what in (({'tile_k': 64}, "'tile_k' is not one of"),
                                ({'producer': 2}, 'producer is 0 or 1'),
                                ({'producer': 1, 'promote': 4, 'stages': 3},
                                 'a producer needs promote <= stages'),
                                ({'producer': 1, 'warpgroups': 3, 'tile_m': 384, 'tile_n': 64},
                                 'at most 256 rows a tile'),
                                ({'tile_n': 96}, 'tileN must be'),
                                ({'tile_n': 256}, 'promotion doubles the accumulators')):
            with open(sched, 'w') as f:
                json.dump({'kernels': {'k0_matmul': bad_knobs}}, f)
            rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90a', '--schedule',
                             sched, '-o', bundle)
            lines = err.strip().splitlines()
            if rc != 1 or len(lines) != 1 or what not in lines[0]:
                fail('schedule %s: expected one error line with "%s", got rc %d: %s'
                     % (bad_knobs, what, rc, err.strip()))
        print('ok --schedule (applied; promoted by default; split-K reduced; unknown knob, bad tile and promoted 256 refused)')

        # --precision-plan-tiles (experimental): each precision the wgmma
        # template takes is one tile-masked kernel, f32 a whole matmul.
        path = os.path.join(d, 'planned.json')
        m = model('planned', 'f32', 512, 256, 384, True)
        m['nodes'][0]['attrs'].pop('out_dtype')
        m['nodes'][0]['name'] = 'mm'
        with open(path, 'w') as f:
            json.dump(m, f)
        plan = os.path.join(d, 'plan.json')
        with open(plan, 'w') as f:
            json.dump({'format': 'tcc-precision-plan', 'version': 1, 'matmuls': [
                {'node': 'mm', 'tile': [128, 128], 'precisions': ['bf16', 'f8e4m3', 'i8', 'f32'],
                 'tiles': [[0, 1, 2], [3, 0, 1], [2, 3, 0], [1, 2, 3]]}]}, f)
        ptx = os.path.join(d, 'planned.ptx')
        for extra in (['-o', bundle], ['--emit', 'asm', '-o', ptx]):
            rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90a', '--precision-plan',
                             plan, '--precision-plan-tiles', *extra)
            if rc:
                fail('--precision-plan-tiles: %s' % err.strip())
        ks = json.loads(run(args.tcc, 'inspect', bundle)[1])['kernels']
        tiles = [k['name'] for k in ks if 'tile_matmul' in k['name'] and k.get('template') == 'wgmma']
        if len(tiles) != 3:
            fail('--precision-plan-tiles: %d tile-masked wgmma kernels, expected 3 (bf16, f8, i8): %s'
                 % (len(tiles), [k['name'] for k in ks]))
        if args.ptxas:
            rc, _, err = run(args.ptxas, '-arch=sm_90a', '-v', ptx, '-o', os.devnull)
            spills = [int(x) for x in re.findall(r'(\d+) bytes spill stores', err)]
            if rc or any(spills):
                fail('--precision-plan-tiles: ptxas rc %d, spills %s' % (rc, spills))
        print('ok --precision-plan-tiles (3 tile-masked wgmma kernels, f32 whole)')
    print('all passed')


if __name__ == '__main__':
    main()
