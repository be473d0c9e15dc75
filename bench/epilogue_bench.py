#!/usr/bin/env python3
"""GEMMs with the code users write after them, fused into the template's
epilogue or not, against cuBLAS and torch.compile on the GPU.

    python3 bench/epilogue_bench.py prepare --tcc BUILD/compiler/tcc --out DIR
    python3 bench/epilogue_bench.py run --tcc RUNTIME_TCC --dir DIR

Cases (sm_90a):
  - f8e4m3 [M, K] x [N, K]^T with per-row and per-column scales to bf16
    (what torch._scaled_mm computes with rowwise scales), 4096^3 and 8192^3;
  - i8 the same, its i32 sums cast to f32 and scaled (cuBLAS: _int_mm, then
    the scaling in PyTorch);
  - bf16 [M, K] x [K, N] + bias then GELU (tanh form), 4096^3 (torch eager:
    cuBLAS and an elementwise kernel; torch.compile).
`prepare` compiles each with --gpu-matmul-epilogues=true (fused) and
=false. `run` checks both against float64 from the
same inputs and times them (CUDA graph) beside the peers.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model(kind, m, k, n):
    if kind in ('f8e4m3', 'i8'):
        ins = [{'name': 'a', 'dtype': kind, 'shape': [m, k]},
               {'name': 'b', 'dtype': kind, 'shape': [n, k]},
               {'name': 'sa', 'dtype': 'f32', 'shape': [m, 1]},
               {'name': 'sb', 'dtype': 'f32', 'shape': [1, n]}]
        acc = 'i32' if kind == 'i8' else 'f32'
        nodes = [{'op': 'matmul', 'inputs': ['a', 'b'], 'outputs': ['c'],
                  'attrs': {'transpose_b': True, 'out_dtype': acc}}]
        x = 'c'
        if kind == 'i8':
            nodes.append({'op': 'cast', 'inputs': ['c'], 'outputs': ['cf'],
                          'attrs': {'to': 'f32'}})
            x = 'cf'
        nodes += [{'op': 'mul', 'inputs': [x, 'sa'], 'outputs': ['d']},
                  {'op': 'mul', 'inputs': ['d', 'sb'], 'outputs': ['e']},
                  {'op': 'cast', 'inputs': ['e'], 'outputs': ['y'], 'attrs': {'to': 'bf16'}}]
    else:
        ins = [{'name': 'a', 'dtype': 'bf16', 'shape': [m, k]},
               {'name': 'b', 'dtype': 'bf16', 'shape': [k, n]},
               {'name': 'bias', 'dtype': 'bf16', 'shape': [n]}]
        nodes = [{'op': 'matmul', 'inputs': ['a', 'b'], 'outputs': ['c']},
                 {'op': 'add', 'inputs': ['c', 'bias'], 'outputs': ['d']},
                 {'op': 'gelu', 'inputs': ['d'], 'outputs': ['y'],
                  'attrs': {'approximate': 'tanh'}}]
    return {'format': 'tcc-model', 'version': 1, 'name': 'epi_%s_%d' % (kind, m),
            'inputs': ins, 'params': [], 'nodes': nodes, 'outputs': ['y']}


CASES = [('f8e4m3', 4096, 4096, 4096), ('f8e4m3', 8192, 8192, 8192),
         ('i8', 4096, 4096, 4096), ('i8', 8192, 8192, 8192), ('bf16', 4096, 4096, 4096)]


def run(*args, cwd=None):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=600, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    names = []
    for kind, m, k, n in CASES:
        mo = model(kind, m, k, n)
        path = os.path.join(args.out, mo['name'] + '.json')
        with open(path, 'w') as f:
            json.dump(mo, f)
        for fused in (True, False):
            bundle = mo['name'] + ('' if fused else '_unfused') + '.tccb'
            extra = ['--gpu-matmul-epilogues=%s' % ('true' if fused else 'false')]
            rc, _, err = run(args.tcc, 'compile', path, '--target', 'sm_90a', '-o',
                             os.path.join(args.out, bundle), *extra)
            if rc:
                sys.exit('%s: %s' % (bundle, err.strip()))
        names.append(mo['name'])
    print('prepared %d cases in %s' % (len(names), args.out))


def run_all(args):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(ROOT, 'bench'))
    from gpu_bench import time_cuda
    sys.path.insert(0, os.path.join(ROOT, 'tests', 'e2e'))
    import e2elib as L
    g = torch.Generator(device='cuda').manual_seed(11)
    failed = 0
    for kind, m, k, n in CASES:
        mo = model(kind, m, k, n)
        dev = {}
        if kind == 'i8':
            dev['a'] = torch.randint(-128, 128, (m, k), device='cuda', generator=g,
                                     dtype=torch.int8)
            dev['b'] = torch.randint(-128, 128, (n, k), device='cuda', generator=g,
                                     dtype=torch.int8)
        elif kind == 'f8e4m3':
            dev['a'] = torch.randn(m, k, device='cuda', generator=g).to(torch.float8_e4m3fn)
            dev['b'] = torch.randn(n, k, device='cuda', generator=g).to(torch.float8_e4m3fn)
        else:
            dev['a'] = torch.randn(m, k, device='cuda', generator=g).bfloat16()
            dev['b'] = torch.randn(k, n, device='cuda', generator=g).bfloat16()
            dev['bias'] = torch.randn(n, device='cuda', generator=g).bfloat16()
        if kind != 'bf16':
            dev['sa'] = torch.rand(m, 1, device='cuda', generator=g) / 256 + 1e-3
            dev['sb'] = torch.rand(1, n, device='cuda', generator=g) + 0.5
        # float64 reference from the same inputs.
        a64, b64 = dev['a'].double(), dev['b'].double()
        if kind == 'bf16':
            x = a64 @ b64
            mag = a64.abs() @ b64.abs()
            x = x + dev['bias'].double()
            ref = 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))
            # The model rounds c and c + bias to bf16 (half an ulp each,
            # through GELU's slope of at most 1.13), then GELU's result.
            bound = (4 * k**0.5 + 8) * 2.0**-24 * mag * 1.13 + 2 * 2.0**-8 * ref.abs() \
                + 2.0**-7 * (x.abs() + dev['bias'].double().abs()) + 1e-6
        else:
            x = a64 @ b64.t()
            mag = torch.zeros_like(x) if kind == 'i8' else a64.abs() @ b64.abs().t()
            s = dev['sa'].double() * dev['sb'].double()
            ref = x * s
            bound = ((4 * k**0.5 + 8) * 2.0**-24 * mag + 2.0**-24 * x.abs()) * s \
                + 2 * 2.0**-8 * ref.abs() + 1e-30
        res = {'case': mo['name']}
        with tempfile.TemporaryDirectory() as t:
            files = []
            for inp in mo['inputs']:
                v = dev[inp['name']]
                arr = L.to_npy(inp['dtype'], v.float().cpu().numpy()) if inp['dtype'] != 'i8' \
                    else v.cpu().numpy()
                path = os.path.join(t, inp['name'] + '.npy')
                np.save(path, arr)
                files += ['--input', '%s=%s' % (inp['name'], path)]
            for suffix in ('', '_unfused'):
                bundle = os.path.join(args.dir, mo['name'] + suffix + '.tccb')
                od = os.path.join(t, 'out' + suffix)
                rc, _, err = run(args.tcc, 'run', bundle, '--output-dir', od, *files)
                if rc:
                    print('%s%s: run failed: %s' % (mo['name'], suffix, err.strip()[-300:]))
                    failed += 1
                    continue
                y = torch.as_tensor(L.from_npy('bf16', np.load(os.path.join(od, 'y.npy'))),
                                    device='cuda').double()
                bad = int(((y - ref).abs() > bound).sum())
                failed += bad > 0
                res['correct' + suffix] = bad == 0
                js = os.path.join(t, 'b.json')
                rc, _, err = run(args.tcc, 'bench', bundle, '--iters', '30', '--cuda-graph',
                                 '--json', js, *files)
                if rc == 0:
                    with open(js) as f:
                        res['tcc' + suffix] = json.load(f)['median_ms']
        try:
            if kind == 'f8e4m3':
                res['_scaled_mm rowwise'] = time_cuda(lambda: torch._scaled_mm(
                    dev['a'], dev['b'].t(), scale_a=dev['sa'], scale_b=dev['sb'],
                    out_dtype=torch.bfloat16))
            elif kind == 'i8':
                res['_int_mm then scale'] = time_cuda(lambda: (torch._int_mm(
                    dev['a'], dev['b'].t()).float() * dev['sa'] * dev['sb']).bfloat16())
                res['_int_mm alone'] = time_cuda(lambda: torch._int_mm(dev['a'], dev['b'].t()))
            else:
                def f(a, b, bias):
                    return F.gelu(a @ b + bias, approximate='tanh')
                res['torch eager'] = time_cuda(lambda: f(dev['a'], dev['b'], dev['bias']))
                cf = torch.compile(f)
                res['torch.compile'] = time_cuda(lambda: cf(dev['a'], dev['b'], dev['bias']))
        except Exception as e:  # noqa: BLE001
            res['peer_error'] = str(e).splitlines()[0][:200]
        print(json.dumps(res))
    sys.exit(1 if failed else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('mode', choices=['prepare', 'run'])
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--out', default=os.path.join(ROOT, '.carry', 'epi'))
    ap.add_argument('--dir', default=os.path.join(ROOT, '.carry', 'epi'))
    args = ap.parse_args()
    prepare(args) if args.mode == 'prepare' else run_all(args)


if __name__ == '__main__':
    main()
