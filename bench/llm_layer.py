#!/usr/bin/env python3
"""One LLM decoder layer under a precision plan (issue 16's LLM layer).

    python3 bench/llm_layer.py prepare --tcc BUILD/compiler/tcc --out DIR [--tokens T]
                                       [--hidden H] [--heads N] [--ffn F] [--target T]
                                       [--budget E]
    python3 bench/llm_layer.py run --tcc RUNTIME_TCC --dir DIR [--time]
    python3 bench/llm_layer.py check --tcc BUILD/compiler/tcc   (small, on the host: CI)

The layer (Llama-style, f32 weights drawn by the format's random recipe):
h = x + Wo·attention(rms_norm(x)·Wq, ·Wk, ·Wv) with a causal mask, then
y = h + Wdown·(silu(n·Wgate) * (n·Wup)), n = rms_norm(h). `prepare` writes
the model and calibration activations, plans all seven matmuls with
`tcc tune-precision` (the ones of computed operands through its host probe)
and compiles the planned and the plain bundle. `run` runs both on fresh
activations against a float64 NumPy reference of the layer (the plain one
shows f32's own error) and, with --time, times them against torch eager in
the same process.
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'e2e'))
import e2elib as L  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, 'bench'))
from precision_apps import plan_and_compile, run  # noqa: E402

MATS = ('wq', 'wk', 'wv', 'wo', 'wgate', 'wup', 'wdown')


def shapes(h, f):
    return {'wq': [h, h], 'wk': [h, h], 'wv': [h, h], 'wo': [h, h],
            'wgate': [f, h], 'wup': [f, h], 'wdown': [h, f]}


def init(name, shape, seed):
    return {'random': 'normal', 'std': 1.0 / np.sqrt(shape[1]), 'seed': seed}


def model(t, h, heads, f):
    dh = h // heads
    sh = shapes(h, f)
    nodes = []

    def node(op, ins, out, name=None, **a):
        n = {'op': op, 'inputs': ins, 'outputs': out if isinstance(out, list) else [out]}
        if a:
            n['attrs'] = a
        if name:
            n['name'] = name
        nodes.append(n)

    def linear(x, w, out):
        # y = x W^T: weights stored [out, in], as checkpoints keep them.
        node('matmul', [x, w], out, name=w, transpose_b=True)

    node('rms_norm', ['x'], 'n1', eps=1e-6)
    for w, o in (('wq', 'q'), ('wk', 'k'), ('wv', 'v')):
        linear('n1', w, o + '2')
        node('reshape', [o + '2'], o + '3', shape=[t, heads, dh])
        node('transpose', [o + '3'], o, perm=[1, 0, 2])
    node('matmul', ['q', 'k'], 's', transpose_b=True)
    node('constant', [], 'scale', dtype='f32', shape=[], value=1.0 / dh ** 0.5)
    node('mul', ['s', 'scale'], 'ss')
    node('iota', [], 'row', dtype='i32', shape=[t, t], axis=0)
    node('iota', [], 'col', dtype='i32', shape=[t, t], axis=1)
    node('greater_equal', ['row', 'col'], 'keep')
    node('constant', [], 'ninf', dtype='f32', shape=[], value='-inf')
    node('select', ['keep', 'ss', 'ninf'], 'sm')
    node('softmax', ['sm'], 'p', axis=-1)
    node('matmul', ['p', 'v'], 'o3')
    node('transpose', ['o3'], 'o2', perm=[1, 0, 2])
    node('reshape', ['o2'], 'o', shape=[t, h])
    linear('o', 'wo', 'attn')
    node('add', ['x', 'attn'], 'h')
    node('rms_norm', ['h'], 'n2', eps=1e-6)
    linear('n2', 'wgate', 'g')
    linear('n2', 'wup', 'u')
    node('silu', ['g'], 'sg')
    node('mul', ['sg', 'u'], 'gu')
    linear('gu', 'wdown', 'dn')
    node('add', ['h', 'dn'], 'y')
    return {'format': 'tcc-model', 'version': 1, 'name': 'llm_layer',
            'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [t, h]}],
            'params': [{'name': w, 'dtype': 'f32', 'shape': sh[w],
                        'init': init(w, sh[w], 30 + i)} for i, w in enumerate(MATS)],
            'nodes': nodes, 'outputs': ['y']}


def weights(h, f):
    sh = shapes(h, f)
    return {w: L.rnd('f32', L.random_init(init(w, sh[w], 30 + i), sh[w][0] * sh[w][1]))
            .reshape(sh[w]) for i, w in enumerate(MATS)}


def reference(x, w, heads):
    """The layer in float64."""
    x = x.astype(np.float64)
    t, h = x.shape
    dh = h // heads
    n1 = L.rms_norm(x)
    q, k, v = ((n1 @ w[m].T).reshape(t, heads, dh).transpose(1, 0, 2) for m in ('wq', 'wk', 'wv'))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(dh)
    s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
    o = (L.softmax(s) @ v).transpose(1, 0, 2).reshape(t, h)
    hh = x + o @ w['wo'].T
    n2 = L.rms_norm(hh)
    g, u = n2 @ w['wgate'].T, n2 @ w['wup'].T
    return hh + (g / (1 + np.exp(-g)) * u) @ w['wdown'].T


def activations(t, h, seed):
    """Hidden states with a few outlier channels, as trained models have."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((t, h))
    x[:, rng.integers(0, h, max(1, h // 64))] *= 20.0
    return x.astype(np.float32)



def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, 'llm_layer.json')
    with open(path, 'w') as f:
        json.dump(model(args.tokens, args.hidden, args.heads, args.ffn), f, indent=1)
    cal = os.path.join(args.out, 'calibration')
    os.makedirs(cal, exist_ok=True)
    for i in range(3):
        np.save(os.path.join(cal, 'x.%d.npy' % i), activations(args.tokens, args.hidden, 200 + i))
    plan_and_compile(args.tcc, path, cal, args.out, args.budget, args.target, 1)
    with open(os.path.join(args.out, 'llm-manifest.json'), 'w') as f:
        json.dump({'tokens': args.tokens, 'hidden': args.hidden, 'heads': args.heads,
                   'ffn': args.ffn, 'budget': args.budget, 'target': args.target}, f)
    print('prepared %s' % args.out)


def run_bundles(args):
    with open(os.path.join(args.dir, 'llm-manifest.json')) as f:
        man = json.load(f)
    t, h, heads, ffn = man['tokens'], man['hidden'], man['heads'], man['ffn']
    x = activations(t, h, int.from_bytes(os.urandom(4), 'little'))
    ref = reference(x, weights(h, ffn), heads)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, 'x.npy'), x)
        for name in ('planned', 'plain'):
            bundle = os.path.join(args.dir, name + '.tccb')
            out = os.path.join(tmp, name)
            rc, _, err = run(args.tcc, 'run', bundle, '--input', 'x=' + os.path.join(tmp, 'x.npy'),
                             '--output-dir', out)
            if rc:
                sys.exit('%s run failed: %s' % (name, err.strip()))
            y = np.load(os.path.join(out, 'y.npy')).astype(np.float64)
            res = {'rel_err_vs_f64': float(np.linalg.norm(y - ref) / np.linalg.norm(ref))}
            if args.time:
                js = os.path.join(tmp, name + '.json')
                rc, _, err = run(args.tcc, 'bench', bundle, '--iters', '50', '--json', js,
                                 '--input', 'x=' + os.path.join(tmp, 'x.npy'))
                if rc == 0:
                    with open(js) as f:
                        res['ms'] = json.load(f)['median_ms']
            results[name] = res
    if args.time:
        try:
            import torch
            import torch.nn.functional as F
            sys.path.insert(0, os.path.join(ROOT, 'bench'))
            from gpu_bench import time_cuda
            w = {k: torch.as_tensor(v, device='cuda', dtype=torch.float32)
                 for k, v in weights(h, ffn).items()}
            xt = torch.as_tensor(x, device='cuda')
            dh = h // heads

            def layer(a):
                n1 = F.rms_norm(a, (h,), eps=1e-6)
                q, k, v = ((n1 @ w[m].T).view(t, heads, dh).transpose(0, 1)
                           for m in ('wq', 'wk', 'wv'))
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                hh = a + o.transpose(0, 1).reshape(t, h) @ w['wo'].T
                n2 = F.rms_norm(hh, (h,), eps=1e-6)
                return hh + (F.silu(n2 @ w['wgate'].T) * (n2 @ w['wup'].T)) @ w['wdown'].T
            results['torch eager f32'] = {'ms': time_cuda(lambda: layer(xt))}
            wb = {k: v.bfloat16() for k, v in w.items()}
            xb = xt.bfloat16()
            w_saved, w = w, wb
            results['torch eager bf16'] = {'ms': time_cuda(lambda: layer(xb))}
            w = w_saved
        except Exception as e:  # noqa: BLE001
            print('torch peer failed: %s' % str(e).splitlines()[0])
    print(json.dumps(dict(man, results=results), indent=1))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('mode', choices=['prepare', 'run', 'check'])
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--out', default=os.path.join(ROOT, '.carry', 'llm'))
    ap.add_argument('--dir', default=os.path.join(ROOT, '.carry', 'llm'))
    ap.add_argument('--tokens', type=int, default=2048)
    ap.add_argument('--hidden', type=int, default=4096)
    ap.add_argument('--heads', type=int, default=32)
    ap.add_argument('--ffn', type=int, default=11008)
    ap.add_argument('--budget', type=float, default=0.01)
    ap.add_argument('--target', default='sm_90a')
    ap.add_argument('--time', action='store_true')
    args = ap.parse_args()
    if args.mode == 'prepare':
        prepare(args)
    elif args.mode == 'run':
        run_bundles(args)
    else:
        # CI: a small layer on the host. Every matmul is planned within the
        # budget given its exact operands; the errors of earlier matmuls
        # reach later ones through the residual stream, so the layer's
        # output is held to twice the budget.
        with tempfile.TemporaryDirectory() as t:
            args.out = args.dir = t
            args.tokens, args.hidden, args.heads, args.ffn = 64, 128, 4, 256
            args.target = 'host'
            prepare(args)
            res = run_bundles(args)
            planned, plain = res['planned']['rel_err_vs_f64'], res['plain']['rel_err_vs_f64']
            ok = planned <= 2 * args.budget and plain <= 1e-5
            print('layer output error: planned %.3g (budget %g), plain %.3g: %s' % (
                planned, args.budget, plain, 'ok' if ok else 'FAILED'))
            sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
