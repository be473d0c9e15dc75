#!/usr/bin/env python3
"""k-nearest-neighbour search under a precision plan (issue 16's kNN).

    python3 bench/knn.py prepare --tcc BUILD/compiler/tcc --out DIR [--n N] [--d D] [--queries Q]
                                 [--target T] [--budget E] [--candidates C]
    python3 bench/knn.py run --tcc RUNTIME_TCC --dir DIR [--time]
    python3 bench/knn.py check --tcc BUILD/compiler/tcc    (prepare + run on the host, small: CI)

The model: queries q [Q, D] (an input) against a database X [N, D] (a param
drawn by the format's random recipe, so a bundle of a million vectors stays
small). Squared distances ||x||^2 - 2 q.x (||q||^2 does not change a row's
order), their C smallest (candidates), then those candidates' distances again
in f32 from the gathered rows, and the k = 10 smallest of them: the usual
search-then-rerank. The distance GEMM q.X^T is what a precision plan lowers;
the rerank keeps the answer exact once the true neighbours are among the
candidates.

`prepare` writes the model, calibration queries (database rows plus noise,
like the queries), runs `tcc tune-precision` for the distance GEMM under
the budget, and compiles two bundles: planned and plain (f32). `run` runs
both on fresh queries, computes recall@10 against exact search (float64:
NumPy, or torch on the GPU) and, with --time, times them against torch
(q @ X.T, topk) in the same process.
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

K = 10
DB_INIT = {'random': 'normal', 'mean': 0.0, 'std': 1.0, 'seed': 17}


def model(n, d, q, candidates):
    node = lambda op, ins, out, **a: dict(  # noqa: E731
        {'op': op, 'inputs': ins, 'outputs': out if isinstance(out, list) else [out]},
        **({'attrs': a} if a else {}))
    return {
        'format': 'tcc-model', 'version': 1, 'name': 'knn',
        'inputs': [{'name': 'q', 'dtype': 'f32', 'shape': [q, d]}],
        'params': [{'name': 'x', 'dtype': 'f32', 'shape': [n, d], 'init': DB_INIT}],
        'nodes': [
            node('mul', ['x', 'x'], 'xx'),
            node('reduce_sum', ['xx'], 'xn', axes=[1]),
            dict(node('matmul', ['q', 'x'], 's', transpose_b=True), name='distance_gemm'),
            node('constant', [], 'two', dtype='f32', shape=[], value=2.0),
            node('mul', ['s', 'two'], 's2'),
            node('sub', ['xn', 's2'], 'dist'),
            node('topk', ['dist'], ['cv', 'cand'], k=candidates, largest=False),
            # The rerank: the candidates' rows, their distances in f32.
            node('gather', ['x', 'cand'], 'rows', axis=0),
            node('reshape', ['q'], 'q3', shape=[q, 1, d]),
            node('sub', ['rows', 'q3'], 'diff'),
            node('mul', ['diff', 'diff'], 'sq'),
            node('reduce_sum', ['sq'], 'exact', axes=[2]),
            node('topk', ['exact'], ['nv', 'pos'], k=K, largest=False),
            node('take_along_axis', ['cand', 'pos'], 'neighbours', axis=1),
        ],
        'outputs': ['neighbours'],
    }


def database(n, d):
    return L.rnd('f32', L.random_init(DB_INIT, n * d)).reshape(n, d).astype(np.float32)


def queries(x, q, seed):
    """Queries near database rows (a row plus noise), as in search benchmarks."""
    rng = np.random.default_rng(seed)
    rows = x[rng.integers(0, len(x), q)]
    return (rows + 0.5 * rng.standard_normal(rows.shape)).astype(np.float32)



def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    m = model(args.n, args.d, args.queries, args.candidates)
    path = os.path.join(args.out, 'knn.json')
    with open(path, 'w') as f:
        json.dump(m, f, indent=1)
    x = database(args.n, args.d)
    cal = os.path.join(args.out, 'calibration')
    os.makedirs(cal, exist_ok=True)
    for i in range(3):
        np.save(os.path.join(cal, 'q.%d.npy' % i), queries(x, args.queries, 100 + i))
    plan_and_compile(args.tcc, path, cal, args.out, args.budget, args.target, 2)
    with open(os.path.join(args.out, 'knn-manifest.json'), 'w') as f:
        json.dump({'n': args.n, 'd': args.d, 'queries': args.queries,
                   'candidates': args.candidates, 'budget': args.budget,
                   'target': args.target}, f)
    print('prepared %s' % args.out)


def exact_neighbours(x, q):
    try:
        import torch
        if torch.cuda.is_available():
            xt, qt = torch.as_tensor(x, device='cuda'), torch.as_tensor(q, device='cuda')
            out = []
            for s in range(0, len(qt), 256):
                d = torch.cdist(qt[s:s + 256].double(), xt.double())
                out.append(torch.topk(d, K, largest=False).indices.cpu().numpy())
            return np.concatenate(out)
    except ImportError:
        pass
    d = (x.astype(np.float64) ** 2).sum(1)[None, :] - 2 * q.astype(np.float64) @ \
        x.astype(np.float64).T
    return np.argsort(d, axis=1, kind='stable')[:, :K]


def recall(got, want):
    return float(np.mean([len(set(g) & set(w)) / K for g, w in zip(got, want)]))


def run_bundles(args):
    with open(os.path.join(args.dir, 'knn-manifest.json')) as f:
        man = json.load(f)
    x = database(man['n'], man['d'])
    q = queries(x, man['queries'], int.from_bytes(os.urandom(4), 'little'))
    want = exact_neighbours(x, q)
    results = {}
    with tempfile.TemporaryDirectory() as t:
        np.save(os.path.join(t, 'q.npy'), q)
        for name in ('planned', 'plain'):
            bundle = os.path.join(args.dir, name + '.tccb')
            out = os.path.join(t, name)
            rc, _, err = run(args.tcc, 'run', bundle, '--input', 'q=' + os.path.join(t, 'q.npy'),
                             '--output-dir', out)
            if rc:
                sys.exit('%s run failed: %s' % (name, err.strip()))
            got = np.load(os.path.join(out, 'neighbours.npy'))
            res = {'recall@10': recall(got, want)}
            if args.time:
                js = os.path.join(t, name + '.json')
                rc, _, err = run(args.tcc, 'bench', bundle, '--iters', '20', '--json', js)
                if rc == 0:
                    with open(js) as f:
                        res['ms'] = json.load(f)['median_ms']
            results[name] = res
    if args.time:
        try:
            import torch
            xt = torch.as_tensor(x, device='cuda')
            qt = torch.as_tensor(q, device='cuda')
            xn = (xt * xt).sum(1)

            sys.path.insert(0, os.path.join(ROOT, 'bench'))
            from gpu_bench import time_cuda  # the way tcc bench times: CUDA events

            def peer():
                return torch.topk(xn[None, :] - 2 * qt @ xt.T, K, largest=False).indices
            results['torch (f32 GEMM + topk)'] = {'ms': time_cuda(peer)}
            old = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = True
            results['torch (tf32 GEMM + topk)'] = {'ms': time_cuda(peer)}
            torch.backends.cuda.matmul.allow_tf32 = old
        except Exception as e:  # noqa: BLE001
            print('torch peer failed: %s' % e)
    print(json.dumps(dict(man, results=results), indent=1))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('mode', choices=['prepare', 'run', 'check'])
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--out', default=os.path.join(ROOT, '.carry', 'knn'))
    ap.add_argument('--dir', default=os.path.join(ROOT, '.carry', 'knn'))
    ap.add_argument('--n', type=int, default=1 << 20)
    ap.add_argument('--d', type=int, default=128)
    ap.add_argument('--queries', type=int, default=1024)
    ap.add_argument('--candidates', type=int, default=64)
    ap.add_argument('--budget', type=float, default=0.02)
    ap.add_argument('--target', default='sm_90a')
    ap.add_argument('--time', action='store_true')
    args = ap.parse_args()
    if args.mode == 'prepare':
        prepare(args)
    elif args.mode == 'run':
        run_bundles(args)
    else:
        # CI: a small database on the host; recall@10 at least 0.99.
        with tempfile.TemporaryDirectory() as t:
            args.out = args.dir = t
            args.n, args.d, args.queries, args.target = 8192, 64, 128, 'host'
            prepare(args)
            res = run_bundles(args)
            ok = res['planned']['recall@10'] >= 0.99 and res['plain']['recall@10'] >= 0.99
            print('recall@10 planned %.4f, plain %.4f: %s' % (
                res['planned']['recall@10'], res['plain']['recall@10'], 'ok' if ok else 'FAILED'))
            sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
