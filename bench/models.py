#!/usr/bin/python3
"""Writes the benchmark models and compiles them, on the build machine.

    /usr/bin/python3 bench/models.py [--out DIR] [--tcc TCC] [--target sm_90] [--small]

For each case: DIR/models/NAME.json (the model, as a user writes it),
DIR/NAME.tccb (the bundle), and DIR/manifest.json, which tells
bench/gpu_bench.py what each case computes (kind, dtype, shapes, the params'
initialisers) so that it can make inputs and a reference there. Nothing large
is written: params use the format's seeded `random` initialisers, and inputs
are made on the GPU machine, so the folder stays a few megabytes.

--small shrinks every shape (for trying the whole flow on the host target).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model(name, inputs, nodes, outputs, params=()):
    return {'format': 'tcc-model', 'version': 1, 'name': name,
            'inputs': [{'name': n, 'dtype': d, 'shape': s} for n, d, s in inputs],
            'params': list(params), 'nodes': nodes, 'outputs': outputs}


def node(op, inputs, output, **attrs):
    n = {'op': op, 'inputs': inputs, 'outputs': [output]}
    if attrs:
        n['attrs'] = attrs
    return n


def normal_param(name, dtype, shape, mean, std, seed):
    return {'name': name, 'dtype': dtype, 'shape': shape,
            'init': {'random': 'normal', 'mean': mean, 'std': std, 'seed': seed}}


def gemm_model(n, dt):
    return model('gemm_%d_%s' % (n, dt),
                 [('a', dt, [n, n]), ('b', dt, [n, n])],
                 [node('matmul', ['a', 'b'], 'c')], ['c'])


def rowwise_models(rows, cols):
    """The memory-bound cases over one [rows, cols] bf16 tensor x -> y."""
    shape = [rows, cols]
    x = [('x', 'bf16', shape)]
    gamma = normal_param('gamma', 'bf16', [cols], 1.0, 0.1, 11)
    beta = normal_param('beta', 'bf16', [cols], 0.0, 0.1, 12)
    weight = normal_param('weight', 'bf16', [cols], 1.0, 0.1, 13)
    return {
        'softmax': model('softmax', x, [node('softmax', ['x'], 'y', axis=-1)], ['y']),
        'layer_norm': model(
            'layer_norm', x, [node('layer_norm', ['x', 'gamma', 'beta'], 'y', axis=-1, eps=1e-5)],
            ['y'], [gamma, beta]),
        # RMS norm written out in the format's primitives, as the spec's chain.
        'rms_norm': model('rms_norm', x, [
            node('mul', ['x', 'x'], 'x2'),
            node('reduce_mean', ['x2'], 'ms', axes=[-1], keepdims=True),
            node('constant', [], 'eps', dtype='bf16', shape=[], value=1e-6),
            node('add', ['ms', 'eps'], 'ms_eps'),
            node('rsqrt', ['ms_eps'], 'inv'),
            node('mul', ['x', 'inv'], 'xn'),
            node('mul', ['xn', 'weight'], 'y'),
        ], ['y'], [weight]),
        # An elementwise chain computed in f32 between two casts.
        'silu_plus1': model('silu_plus1', x, [
            node('cast', ['x'], 'xf', to='f32'),
            node('sigmoid', ['xf'], 's'),
            node('mul', ['xf', 's'], 'p'),
            node('constant', [], 'one', dtype='f32', shape=[], value=1.0),
            node('add', ['p', 'one'], 'q'),
            node('cast', ['q'], 'y', to='bf16'),
        ], ['y']),
        # The simplest kernel that reads and writes every element: copy speed.
        'neg': model('neg', x, [node('neg', ['x'], 'y')], ['y']),
    }


VPT32 = os.path.join(ROOT, 'bench', 'rows-vpt32.json')


def cases(small):
    """(case name, model, extra compile flags, manifest entry)."""
    sizes = [256, 512] if small else [4096, 8192]
    rows, cols = (64, 512) if small else (16384, 8192)
    out = []
    for n in sizes:
        for dt in ('bf16', 'f16', 'f32'):
            m = gemm_model(n, dt)
            info = {'kind': 'gemm', 'dtype': dt, 'n': n, 'tf32': False}
            out.append((m['name'], m, [], info))
            if dt == 'f32':
                out.append(('gemm_%d_tf32' % n, m, ['--allow-tf32'], dict(info, tf32=True)))
    for kind, m in rowwise_models(rows, cols).items():
        info = {'kind': kind, 'dtype': 'bf16', 'shape': [rows, cols],
                'params': {p['name']: p['init'] for p in m['params']}}
        if kind == 'layer_norm':
            info['eps'] = 1e-5
        if kind == 'rms_norm':
            info['eps'] = 1e-6
        out.append((kind, m, [], info))
        if kind in ('softmax', 'layer_norm', 'rms_norm'):
            # The same model with 32 row values a thread instead of 16.
            out.append((kind + '_vpt32', m, ['--schedule', VPT32], info))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=os.path.join(ROOT, '.carry', 'bench'))
    ap.add_argument('--tcc', default=os.path.join(ROOT, 'build', 'compiler', 'tcc'))
    ap.add_argument('--target', default='sm_90')
    ap.add_argument('--small', action='store_true', help='tiny shapes, for a trial run')
    args = ap.parse_args()

    os.makedirs(os.path.join(args.out, 'models'), exist_ok=True)
    manifest = {'target': args.target, 'small': args.small, 'cases': []}
    failed = 0
    for name, m, flags, info in cases(args.small):
        path = os.path.join(args.out, 'models', m['name'] + '.json')
        with open(path, 'w') as f:
            json.dump(m, f, indent=1)
        bundle = name + '.tccb'
        cmd = [args.tcc, 'compile', path, '-o', os.path.join(args.out, bundle),
               '--target', args.target] + flags
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            # Reported, not fatal: the GPU side reports the case as missing.
            print('FAILED to compile %s: %s' % (name, (p.stderr or p.stdout).strip()))
            failed += 1
            continue
        manifest['cases'].append(dict(info, name=name, bundle=bundle,
                                      compile=' '.join(['tcc compile', m['name'] + '.json',
                                                        '--target', args.target] + flags)))
        print('compiled %-18s (%d bytes)' % (name, os.path.getsize(os.path.join(args.out, bundle))))
    with open(os.path.join(args.out, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)
    print('wrote %d bundles and manifest.json to %s' % (len(manifest['cases']), args.out))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
