#!/usr/bin/env python3
"""The OptiFX CNNs through tcc against PyTorch on the GPU, in one run.

    python3 bench/cnn_bench.py --prepare --tcc BUILD/compiler/tcc [--carry .carry/cnn]
                               [--models resnet50,...] [--batch N] [--dtype f16|f32]
                               [--target sm_90a] [--recipe-weights]
                               [--reference-on-device [--dynamic-batch]]
                               [-- TCC COMPILE FLAGS]
    python3 bench/cnn_bench.py --tcc BUILD/runtime/tcc --carry .carry/cnn [--out DIR]
                               [--only NAME,...] [--no-peers]

The first, on the build machine (bench/run-on-gpu.sh prepare-cnn), exports
the models with examples/cnn/export_models.py and compiles them; bundles embed
their weights (ResNet-50 in f16: 51 MB, most of a device call's carry), or,
with --recipe-weights, draw them from tcc's random recipe, say so in the
ONNX initializers' doc_string and compile with --param-recipes=keep: the
bundle then holds the recipes and the runtime computes the weights at load
(sm_90a: NASNet-A Large in f16 18 MB instead of 196; ResNet-50 in f32 0.8
MB instead of 103). The carry holds, per model and batch, the bundle tcc
compiled from the ONNX export (examples/cnn/export_models.py), the
input and the float64 reference computed on the build machine from the same
weights (with --reference-on-device, the weights' recipes instead: the GPU
machine draws the input and computes the reference, for batches whose
inputs outgrow a carry). Here, for each:

1. correctness: `tcc run` on the input, launched one by one and as a CUDA
   graph, normwise relative error against the float64 reference, which must
   stay within the dtype's bound (TOL);
2. speed: `tcc bench --json --cuda-graph` (device events, median), also with
   `--graph-chain` (the graph a chain of the launches in order, not ordered
   by the memory they share) and with `--serial-launches` (no kernel starts
   before the previous one ended), beside
   the same torchvision architecture (its own random weights: speed does not
   depend on them) in the same dtype on the GPU, run eagerly, eagerly
   replayed as a CUDA graph, in channels-last memory format as a graph, and
   compiled by torch.compile(mode="reduce-overhead") (channels last), each
   timed the way `tcc bench` times a bundle. A peer that fails is reported
   (KEY_error in cnn.json) and the others still run.

Prints one line per case and a table; writes DIR/cnn.json and DIR/cnn-table.md.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'examples', 'cnn'))

# Normwise bound against float64. f16 keeps 11 bits (u = 4.9e-4) and every
# layer's output is rounded to it; 50-odd layers with f32 accumulation give
# errors of a few u times the growth through the net: the host run of
# ResNet-50 at 64x64 measured 7.7e-4. f32: the same argument with u = 6e-8.
TOL = {'f16': 1e-2, 'f32': 1e-4}


def run_cmd(cmd, timeout=600):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode(errors='replace')


def device_reference(args, case, work):
    """A case prepared with --reference-on-device: the input drawn here and
    the model run in float64 on this GPU with the weights of the recipes the
    bundle keeps (NAME.recipes.json): (input path, reference)."""
    import torch
    import export_models as em
    model = em.build(case['model'], case['seed'])
    recipes = json.load(open(os.path.join(args.carry, case['recipes'])))
    em.load_recipe_weights(model, case['seed'], case['dtype'], recipes)
    x = torch.randn(case['shape'], generator=torch.Generator().manual_seed(case['seed'] + 2))
    if case['dtype'] == 'f16':
        x = x.half()
    path = os.path.join(work, case['name'] + '.input.npy')
    np.save(path, x.numpy())
    with torch.no_grad():
        ref = model.double().cuda()(x.double().cuda()).cpu().numpy()
    del model
    torch.cuda.empty_cache()
    return path, ref


def tcc_check(args, case, work, graph=True):
    # Launched one by one and replayed as a CUDA graph: kernels that overlap
    # their predecessor (programmatic dependent launch) are checked both ways.
    if case.get('reference'):
        inp = os.path.join(args.carry, case['input'])
        ref = np.load(os.path.join(args.carry, case['reference']))
    else:
        inp, ref = device_reference(args, case, work)
    err = 0.0
    for replay in (False, True) if graph else (False,):
        out = os.path.join(work, case['name'] + ('-graph' if replay else ''))
        rc, log = run_cmd([args.tcc, 'run', os.path.join(args.carry, case['bundle']),
                           '--input', 'input=' + inp,
                           '--output-dir', out] + (['--cuda-graph'] if replay else []))
        if rc != 0:
            return {'error': log.strip()[-300:]}
        got = np.load(os.path.join(out, 'output.npy')).astype(np.float64)
        if not np.isfinite(got).all():
            return {'err': float('inf'), 'ok': False}
        err = max(err, float(np.linalg.norm(got - ref) / np.linalg.norm(ref)))
    # tf32 keeps f16's 10 explicit mantissa bits in the products: f16's bound.
    tol = TOL['f16'] if '--allow-tf32' in case.get('flags', []) else TOL[case['dtype']]
    return {'err': err, 'ok': err <= tol}


def tcc_time(args, case, graph, warmup=20, iters=100, serial=False, chain=False):
    """`tcc bench` of the case's bundle (median ms, device events on a GPU),
    replayed as a CUDA graph with `graph` (a chain of the launches in order
    with `chain`, otherwise the launches wait only for those they share
    memory with), every kernel after the previous one's end with `serial`:
    (ms, '') or (None, error)."""
    with tempfile.NamedTemporaryFile(suffix='.json') as f:
        cmd = [args.tcc, 'bench', os.path.join(args.carry, case['bundle']), '--warmup',
               str(warmup), '--iters', str(iters), '--json', f.name] + (
                   ['--cuda-graph'] if graph else []) + (
                   ['--serial-launches'] if serial else []) + (
                   ['--graph-chain'] if chain else [])
        rc, log = run_cmd(cmd)
        if rc != 0:
            return None, log.strip()[-300:]
        with open(f.name) as jf:
            fig = json.load(jf)
            # A concurrent graph the driver refused is recorded as a chain.
            order = fig.get('graph_order', '')
            if graph and not chain and order and not order.startswith('concurrent'):
                return fig['median_ms'], 'graph recorded as ' + order
            return fig['median_ms'], ''


def time_cuda(fn, iters=100):
    import torch
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(iters)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return float(np.median([a.elapsed_time(b) for a, b in ev]))


def graph_time(model, x, fmt):
    """The model in memory format `fmt` captured once as a CUDA graph, replayed."""
    import torch
    m = model.to(memory_format=fmt)
    xi = x.contiguous(memory_format=fmt)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            m(xi)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        m(xi)
    return time_cuda(g.replay)


def compiled_time(model, x, res):
    """torch.compile(mode="reduce-overhead") (Inductor's kernels replayed as
    CUDA graphs), channels last as ../perf/ANCHORS.md measured it; the
    compile's seconds go to res['compile_ro_s']."""
    import time
    import torch
    torch._dynamo.reset()
    m = model.to(memory_format=torch.channels_last)
    xi = x.contiguous(memory_format=torch.channels_last)
    cm = torch.compile(m, mode='reduce-overhead')
    t = time.time()
    # Compiles on the first call; CUDA graphs are recorded after warm-up.
    for _ in range(3):
        cm(xi)
    torch.cuda.synchronize()
    res['compile_ro_s'] = time.time() - t
    return time_cuda(lambda: cm(xi))


def torch_peers(case):
    """Each peer on its own: one that fails leaves KEY_error and the others run."""
    import torch
    import export_models as em
    dt = {'f16': torch.float16, 'f32': torch.float32}[case['dtype']]
    res = {}

    def guarded(key, fn):
        try:
            res[key] = fn()
        except Exception as e:  # noqa: BLE001 (report, go on)
            res[key + '_error'] = ('%s: %s' % (type(e).__name__, e))[:200]
    model = em.MODELS[case['model']][0]().eval().to('cuda', dt)
    x = torch.randn(case['shape'], device='cuda', dtype=dt)
    with torch.no_grad():
        guarded('eager_ms', lambda: time_cuda(lambda: model(x)))
        guarded('graph_ms', lambda: graph_time(model, x, torch.contiguous_format))
        guarded('graph_cl_ms', lambda: graph_time(model, x, torch.channels_last))
        guarded('compile_ro_ms', lambda: compiled_time(model, x, res))
    return res


def export_model(model, out, batch, dtype, recipe_weights, small=False, reference=True,
                 dynamic_batch=False):
    """examples/cnn/export_models.py for one model into `out` (OUT/MODEL.onnx,
    .input.npy, .output64.npy; without `reference` .recipes.json instead):
    True, or False after printing its log."""
    rc, log = run_cmd([sys.executable, os.path.join(ROOT, 'examples', 'cnn', 'export_models.py'),
                       '--out', out, '--batch', str(batch), '--dtype', dtype, '--f64-reference',
                       model] + (['--recipe-weights'] if recipe_weights else [])
                      + (['--small'] if small else [])
                      + ([] if reference else ['--no-reference'])
                      + (['--dynamic-batch'] if dynamic_batch else []), timeout=1800)
    if rc != 0:
        print(log)
        return False
    # The exporter's line says how much of the weights stays embedded.
    print(log.strip().splitlines()[-1], flush=True)
    return True


def prepare(args, flags):
    import shutil
    os.makedirs(args.carry, exist_ok=True)
    mpath = os.path.join(args.carry, 'manifest.json')
    cases = json.load(open(mpath)) if os.path.exists(mpath) else []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(','):
            name = '%s_b%d_%s' % (model, args.batch, args.dtype)
            if not export_model(model, tmp, args.batch, args.dtype, args.recipe_weights,
                                reference=not args.reference_on_device,
                                dynamic_batch=args.dynamic_batch):
                return 1
            bundle = name + '.tccb'
            compile_flags = flags + (['--param-recipes=keep'] if args.recipe_weights else [])
            if args.dynamic_batch:
                import export_models as em
                compile_flags += ['--input-shape', 'input=' + 'x'.join(
                    map(str, [args.batch] + list(em.MODELS[model][1])))]
            rc, log = run_cmd([args.tcc, 'compile', os.path.join(tmp, model + '.onnx'), '-o',
                               os.path.join(args.carry, bundle), '--target', args.target]
                              + compile_flags, timeout=1800)
            if rc != 0:
                print('%s: compile failed: %s' % (name, log.strip()[-400:]))
                return 1
            case = {'name': name, 'model': model, 'bundle': bundle, 'dtype': args.dtype,
                    'flags': compile_flags}
            if args.reference_on_device:
                import export_models as em
                shutil.copy(os.path.join(tmp, model + '.recipes.json'),
                            os.path.join(args.carry, name + '.recipes.json'))
                case.update({'recipes': name + '.recipes.json', 'seed': 0,
                             'shape': [args.batch] + list(em.MODELS[model][1])})
            else:
                shutil.copy(os.path.join(tmp, model + '.input.npy'),
                            os.path.join(args.carry, name + '.input.npy'))
                shutil.copy(os.path.join(tmp, model + '.output64.npy'),
                            os.path.join(args.carry, name + '.ref.npy'))
                case.update({'input': name + '.input.npy', 'reference': name + '.ref.npy',
                             'shape': list(np.load(os.path.join(tmp, model + '.input.npy')).shape)})
            cases = [c for c in cases if c['name'] != name]
            cases.append(case)
            # After each model: one that fails later leaves the others usable.
            json.dump(cases, open(mpath, 'w'), indent=1)
            print('prepared %s: bundle %.1f MB' % (
                name, os.path.getsize(os.path.join(args.carry, bundle)) / 1e6), flush=True)
    return 0


def main():
    argv = sys.argv[1:]
    flags = []
    if '--' in argv:
        flags = argv[argv.index('--') + 1:]
        argv = argv[:argv.index('--')]
    ap = argparse.ArgumentParser()
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--prepare', action='store_true')
    ap.add_argument('--models', default='resnet50')
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--dtype', choices=['f16', 'f32'], default='f16')
    ap.add_argument('--target', default='sm_90a')
    ap.add_argument('--recipe-weights', action='store_true',
                    help='--prepare: weights from tcc\'s random recipe, kept as recipes in the '
                         'bundle (--param-recipes=keep): small bundles of big models')
    ap.add_argument('--reference-on-device', action='store_true',
                    help='--prepare with --recipe-weights: carry the weights\' recipes instead of '
                         'the input and the float64 reference, which the GPU machine then '
                         'computes (large batches: their inputs outgrow a carry)')
    ap.add_argument('--dynamic-batch', action='store_true',
                    help='--prepare with --reference-on-device: export traced at batch 1 with a '
                         'symbolic batch, fixed by tcc compile --input-shape (tracing a large '
                         'model at a large batch outgrows the build machine\'s memory)')
    ap.add_argument('--carry', default=os.path.join(ROOT, '.carry', 'cnn'))
    ap.add_argument('--out', default='out')
    ap.add_argument('--only', default='')
    ap.add_argument('--no-peers', action='store_true')
    args = ap.parse_args(argv)
    if args.prepare:
        if args.reference_on_device and not args.recipe_weights:
            ap.error('--reference-on-device needs --recipe-weights')
        if args.dynamic_batch and not args.reference_on_device:
            ap.error('--dynamic-batch needs --reference-on-device')
        return prepare(args, flags)
    os.makedirs(args.out, exist_ok=True)
    cases = json.load(open(os.path.join(args.carry, 'manifest.json')))
    only = set(filter(None, args.only.split(',')))
    rows, failed = [], 0
    with tempfile.TemporaryDirectory() as work:
        for case in cases:
            if only and case['name'] not in only:
                continue
            r = {'name': case['name']}
            r.update(tcc_check(args, case, work))
            if 'error' not in r:
                for graph, serial, chain, key in ((False, False, False, 'tcc_ms'),
                                                  (True, False, False, 'tcc_graph_ms'),
                                                  (True, False, True, 'tcc_graph_chain_ms'),
                                                  (True, True, False, 'tcc_graph_serial_ms')):
                    t, why = tcc_time(args, case, graph, serial=serial, chain=chain)
                    r[key] = t
                    if why:
                        r[key + '_error'] = why
            if not args.no_peers:
                try:
                    r.update(torch_peers(case))
                except Exception as e:  # noqa: BLE001 (report, go on)
                    r['peer_error'] = str(e)[:200]
            ok = r.get('ok', False)
            failed += not ok
            line = '%s %-22s' % ('PASS' if ok else 'FAIL', case['name'])
            if 'error' in r:
                line += ' ' + r['error'].replace('\n', ' | ')
            else:
                line += ' err %.2e' % r['err']
            for key in ('tcc_ms', 'tcc_graph_ms', 'tcc_graph_chain_ms', 'tcc_graph_serial_ms', 'eager_ms', 'graph_ms', 'graph_cl_ms',
                        'compile_ro_ms'):
                if r.get(key) is not None:
                    line += ' %s %.3f' % (key, r[key])
            if r.get('tcc_graph_ms') and r.get('graph_ms'):
                line += ' | graph/tcc %.2f' % (r['graph_ms'] / r['tcc_graph_ms'])
            if r.get('tcc_graph_ms') and r.get('compile_ro_ms'):
                line += ' | compile/tcc %.2f' % (r['compile_ro_ms'] / r['tcc_graph_ms'])
            for key in sorted(k for k in r if k.endswith('_error')):
                line += ' | %s: %s' % (key, r[key].replace('\n', ' '))
            print(line, flush=True)
            rows.append(r)
    json.dump(rows, open(os.path.join(args.out, 'cnn.json'), 'w'), indent=1)
    with open(os.path.join(args.out, 'cnn-table.md'), 'w') as f:
        f.write('| model | err | tcc ms | tcc graph ms | torch eager | torch graph | '
                'torch graph channels-last | torch.compile reduce-overhead | '
                'torch graph / tcc graph | torch.compile / tcc graph |\n')
        f.write('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n')

        def fm(v):
            return '-' if v is None else '%.3f' % v

        def ratio(r, peer):
            if r.get('tcc_graph_ms') and r.get(peer):
                return '%.2f' % (r[peer] / r['tcc_graph_ms'])
            return '-'
        for r in rows:
            f.write('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' % (
                r['name'], '%.1e' % r['err'] if 'err' in r else 'error', fm(r.get('tcc_ms')),
                fm(r.get('tcc_graph_ms')), fm(r.get('eager_ms')), fm(r.get('graph_ms')),
                fm(r.get('graph_cl_ms')), fm(r.get('compile_ro_ms')), ratio(r, 'graph_ms'),
                ratio(r, 'compile_ro_ms')))
    print(open(os.path.join(args.out, 'cnn-table.md')).read())
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
