#!/usr/bin/env python3
"""Kernels that only reshape launch nothing (tcc-view-kernels), and the
models stay right.

Forms, each in f32, f16 and bf16 with odd sizes:
  flatten   a global pool, its [N, C, 1, 1] result flattened to [N, C] and
            read by two kernels (a matmul and a scaling, which took the
            flatten as a second result): the flatten's result lives in the
            pool's buffer, which must outlive both;
  pool_fc   the same flatten read by a matmul alone (a kernel of its own);
  flat_sm   Q K^T, softmax over a flat [B*H*L, S] view of the scores
            (the weights, a model output), reshaped back to [B, H, L, S]
            and multiplied by V: the reshape back reads the output's buffer;
  flat_attn the same without the weights as an output: tcc-batch-reshapes
            sinks the flat view past the softmax to the reshape back, and
            the chain is one attention launch;
  out_view  a reshape whose result is a model output (its own buffer: it
            keeps its copy), beside one whose result a kernel reads;
  in_view   a view of a model input ([N, C*K] as [N*C, K]) read by a matmul
            and by a softmax, whose result is viewed back to [N, C, K] for a
            second matmul: two views, one of the input's own buffer.
Each compiles for the host and for sm_90a to the launches it needs, none of
a kernel that only reshapes (`tcc inspect`) except where the reshape's
result is an output. On the host the model runs against NumPy in float64 on fresh
inputs (seed printed; --seed fixes it).
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

N, C, H, W, K = 3, 13, 5, 7, 11
B, HEADS, LQ, S, D = 2, 3, 5, 37, 9


def node(op, ins, out, **attrs):
    n = {'op': op, 'inputs': ins, 'outputs': [out]}
    if attrs:
        n['attrs'] = attrs
    return n


def flatten_model(dt):
    nodes = [node('global_avg_pool2d', ['x'], 'g'),
             node('reshape', ['g'], 'f', shape=[N, C]),
             node('matmul', ['f', 'w'], 'y'),
             node('constant', [], 'two', dtype=dt, value=2.0),
             node('mul', ['f', 'two'], 'z')]
    inputs = [{'name': 'x', 'dtype': dt, 'shape': [N, C, H, W]},
              {'name': 'w', 'dtype': dt, 'shape': [C, K]}]
    return {'format': 'tcc-model', 'version': 1, 'name': 'flatten_' + dt,
            'inputs': inputs, 'nodes': nodes, 'outputs': ['y', 'z']}


def flatten_ref(v, r):
    f = r(v['x'].mean(axis=(2, 3)))
    return {'y': f @ v['w'], 'z': f * 2}


def flat_model(dt, weights):
    nodes = [node('matmul', ['q', 'k'], 's', transpose_b=True),
             node('reshape', ['s'], 'flat', shape=[B * HEADS * LQ, S]),
             node('softmax', ['flat'], 'p', axis=-1),
             node('reshape', ['p'], 'p4', shape=[B, HEADS, LQ, S]),
             node('matmul', ['p4', 'v'], 'y')]
    inputs = [{'name': 'q', 'dtype': dt, 'shape': [B, HEADS, LQ, D]},
              {'name': 'k', 'dtype': dt, 'shape': [B, HEADS, S, D]},
              {'name': 'v', 'dtype': dt, 'shape': [B, HEADS, S, D]}]
    return {'format': 'tcc-model', 'version': 1,
            'name': ('flat_sm_' if weights else 'flat_attn_') + dt, 'inputs': inputs,
            'nodes': nodes, 'outputs': ['y', 'p'] if weights else ['y']}


def flat_ref(v, r, weights):
    s = r(v['q'] @ np.swapaxes(v['k'], -1, -2))
    p = r(L.softmax(s))
    out = {'y': p @ v['v']}
    if weights:
        out['p'] = p.reshape(B * HEADS * LQ, S)
    return out


def pool_fc_model(dt):
    nodes = [node('global_avg_pool2d', ['x'], 'g'),
             node('reshape', ['g'], 'f', shape=[N, C]),
             node('matmul', ['f', 'w'], 'y')]
    inputs = [{'name': 'x', 'dtype': dt, 'shape': [N, C, H, W]},
              {'name': 'w', 'dtype': dt, 'shape': [C, K]}]
    return {'format': 'tcc-model', 'version': 1, 'name': 'pool_fc_' + dt,
            'inputs': inputs, 'nodes': nodes, 'outputs': ['y']}


def pool_fc_ref(v, r):
    return {'y': r(v['x'].mean(axis=(2, 3))) @ v['w']}


def in_view_model(dt):
    nodes = [node('reshape', ['x'], 'f', shape=[N * C, K]),
             node('matmul', ['f', 'w'], 'y'),
             node('softmax', ['f'], 'p', axis=-1),
             node('reshape', ['p'], 'p3', shape=[N, C, K]),
             node('matmul', ['p3', 'w'], 'z')]
    inputs = [{'name': 'x', 'dtype': dt, 'shape': [N, C * K]},
              {'name': 'w', 'dtype': dt, 'shape': [K, K]}]
    return {'format': 'tcc-model', 'version': 1, 'name': 'in_view_' + dt,
            'inputs': inputs, 'nodes': nodes, 'outputs': ['y', 'z']}


def in_view_ref(v, r):
    f = v['x'].reshape(N * C, K)
    p = r(L.softmax(f))
    return {'y': f @ v['w'], 'z': p.reshape(N, C, K) @ v['w']}


def out_view_model(dt):
    nodes = [node('global_avg_pool2d', ['x'], 'g'),
             node('reshape', ['g'], 'y', shape=[N, C]),
             node('reshape', ['g'], 'f', shape=[C * N]),
             node('neg', ['f'], 'z')]
    inputs = [{'name': 'x', 'dtype': dt, 'shape': [N, C, H, W]}]
    return {'format': 'tcc-model', 'version': 1, 'name': 'out_view_' + dt,
            'inputs': inputs, 'nodes': nodes, 'outputs': ['y', 'z']}


def out_view_ref(v, r):
    g = r(v['x'].mean(axis=(2, 3)))
    return {'y': g, 'z': -g.reshape(-1)}


# (form, model, reference, input shapes, terms summed, launches (host,
# sm_90a), of which kernels only reshaping).
FORMS = [('flatten', flatten_model, flatten_ref, {'x': (N, C, H, W), 'w': (C, K)}, H * W,
          (3, 3), 0),
         ('pool_fc', pool_fc_model, pool_fc_ref, {'x': (N, C, H, W), 'w': (C, K)}, H * W,
          (2, 2), 0),
         ('flat_sm', lambda dt: flat_model(dt, True), lambda v, r: flat_ref(v, r, True),
          {'q': (B, HEADS, LQ, D), 'k': (B, HEADS, S, D), 'v': (B, HEADS, S, D)}, S, (3, 3), 0),
         ('flat_attn', lambda dt: flat_model(dt, False), lambda v, r: flat_ref(v, r, False),
          {'q': (B, HEADS, LQ, D), 'k': (B, HEADS, S, D), 'v': (B, HEADS, S, D)}, S, (1, 1), 0),
         ('out_view', out_view_model, out_view_ref, {'x': (N, C, H, W)}, H * W, (3, 3), 1),
         ('in_view', in_view_model, in_view_ref, {'x': (N, C * K), 'w': (K, K)}, K, (3, 3), 0)]


def launched_views(tcc, bundle):
    """(launches, how many of them launch a kernel that is only reshapes,
    how many kernels are only reshapes)."""
    m = json.loads(subprocess.run([tcc, 'inspect', bundle], check=True,
                                  capture_output=True, text=True).stdout)
    only = [set(k.get('ops', [])) == {'tcc.reshape'} for k in m['kernels']]
    launched = [l['kernel'] for l in m['launches'] if 'kernel' in l]
    return len(launched), sum(only[k] for k in launched), sum(only)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--seed', type=int)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), 'little')
    print('seed', seed)
    rng = np.random.default_rng(seed)
    failures, done = [], 0
    with tempfile.TemporaryDirectory() as work:
        for form, make, ref_of, shapes, terms, launches, want in FORMS:
            for dt in ('f32', 'f16', 'bf16'):
                name = '%s_%s' % (form, dt)
                model = make(dt)
                path = os.path.join(work, name + '.json')
                L.write_json(path, model)
                for target, want_n in zip(('host', 'sm_90a'), launches):
                    bundle = os.path.join(work, '%s.%s.tccb' % (name, target))
                    rc, _, err = L.run_tcc([args.tcc, 'compile', path, '-o', bundle,
                                            '--target', target])
                    done += 1
                    if rc:
                        failures.append('%s %s: compile failed: %s' % (name, target,
                                                                       L.first_line(err)))
                        continue
                    n, views, _ = launched_views(args.tcc, bundle)
                    ok = views == want and n == want_n
                    print('%s %s %s: %d launches, %d of them reshapes only' %
                          ('PASS' if ok else 'FAIL', name, target, n, views))
                    if not ok:
                        failures.append('%s %s: %d launches (%d reshapes only), want %d (%d)' %
                                        (name, target, n, views, want_n, want))
                    if target != 'host':
                        continue
                    vals = {k: L.narrow(dt, rng.standard_normal(s)) for k, s in shapes.items()}
                    files = L.save_inputs(work, name, model, vals)
                    out = os.path.join(work, name + '.out')
                    os.makedirs(out, exist_ok=True)
                    rc, _, err = L.run_tcc([args.tcc, 'run', bundle, '--output-dir', out] + files)
                    done += 1
                    if rc:
                        failures.append('%s: run failed: %s' % (name, L.first_line(err)))
                        continue
                    refs = ref_of(vals, lambda x: L.narrow(dt, x))
                    for o, want_v in refs.items():
                        got = np.load(os.path.join(out, o + '.npy')).astype(np.float64)
                        # A mean or a dot product of `terms` values of at
                        # most ~4 in size: f32's ulps of the sum's terms,
                        # and one rounding of the narrow output (two where
                        # the softmax is rounded before the matmul).
                        tol = L.ftol(dt, ulps=4.0 * terms, scale=4.0, store_ulps=2.0,
                                     store_scale=float(np.abs(want_v).max()))
                        close, err_v, detail = L.compare(got, want_v, tol)
                        print('%s %s %s: max abs error %.3g %s' %
                              ('PASS' if close else 'FAIL', name, o, err_v, detail))
                        if not close:
                            failures.append('%s %s: %s' % (name, o, detail))
    return L.report(failures, done)


if __name__ == '__main__':
    sys.exit(main())
