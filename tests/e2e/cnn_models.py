#!/usr/bin/env python3
"""The OptiFX CNNs from ONNX on the host, against PyTorch.

examples/cnn/export_models.py exports each model (seeded random weights,
--small inputs) with PyTorch's f32 output and its float64 output; here each
is compiled with `tcc compile MODEL.onnx --target host`, run with `tcc run`
on the exported input, and compared with the float64 output.

Tolerance: the models are deep (up to ~120 convolutions in sequence) with
reductions of up to 4608 terms, so an f32 result differs from the exact one
by accumulated rounding, not by one op's few ulps. PyTorch's own f32 output
measures that for this model and input: tcc may be off by at most 8 times
PyTorch's error against float64 (summation orders differ, errors do not
compound much further), and never less than 1e-5 of the output's largest
magnitude. A wiring or semantic mistake (a dropped BatchNorm, a wrong pad or
pool) is off by O(1) of the output's scale.

With --conv-layout=nhwc the models compile channels last (tcc-conv-layout),
and with nhwc each must keep its transposes at the graph's edges: the
tcc.transpose ops on activations (those with the batch, 1, as first
dimension; a weight's is its output channels) in `tcc compile --emit mlir`
are counted, and may be one after the input, one before the output, and two
around each op that has no NHWC form (conv_transpose2d).

usage: cnn_models.py --tcc TCC [--keep DIR] [--full] [--conv-layout L] [MODEL ...]
MODEL: any of export_models.py's; the default leaves out nasnet_large
(88.9 M parameters: about 90 s of CPU even at its small size), which ctest
runs on its own as e2e-cnn-nasnet.
Exits 77 (ctest's skip) when torch, torchvision or python3-onnx is missing,
or tcc was built without ONNX support.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXPORT = os.path.join(ROOT, 'examples', 'cnn', 'export_models.py')
sys.path.insert(0, HERE)
import e2elib as L  # noqa: E402

DEFAULT = ['googlenet', 'resnet50', 'densenet121', 'mobilenet_v2', 'squeezenet1_1', 'unet']

for mod, pkg in (('torch', 'python3-torch'), ('torchvision', 'python3-torchvision'),
                 ('onnx', 'python3-onnx')):
    try:
        __import__(mod)
    except ImportError:
        print('SKIP: %s is not installed (apt-get install %s)' % (mod, pkg))
        sys.exit(L.SKIP)

ap = argparse.ArgumentParser()
ap.add_argument('--tcc', required=True)
ap.add_argument('--keep', help='write the models and outputs here instead of a temp folder')
ap.add_argument('--full', action='store_true', help='full input sizes instead of --small')
ap.add_argument('--conv-layout', default=None, help='passed to tcc compile')
ap.add_argument('models', nargs='*', default=DEFAULT)
args = ap.parse_args()


def main(work):
    t = time.time()
    p = subprocess.run([sys.executable, EXPORT, '--out', work, '--f64-reference'] +
                       ([] if args.full else ['--small']) + args.models,
                       capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        print('FAIL export: ' + L.first_line(p.stderr or p.stdout))
        return 1
    print('export: %.1f s' % (time.time() - t), flush=True)
    failed = 0
    for name in args.models:
        onnx_path = os.path.join(work, name + '.onnx')
        bundle = os.path.join(work, name + '.tccb')
        t = time.time()
        layout = ['--conv-layout=' + args.conv_layout] if args.conv_layout else []
        rc, _, err = L.run_tcc([args.tcc, 'compile', onnx_path, '-o', bundle, '--target', 'host']
                               + layout)
        if rc != 0 and 'without ONNX support' in err:
            print('SKIP: ' + L.first_line(err))
            return L.SKIP
        tc = time.time() - t
        if rc != 0:
            print('FAIL %s compile: %s' % (name, L.first_line(err)), flush=True)
            failed += 1
            continue
        if args.conv_layout:
            mlir = os.path.join(work, name + '.mlir')
            rc, _, err = L.run_tcc([args.tcc, 'compile', onnx_path, '-o', mlir, '--emit', 'mlir']
                                   + layout)
            with open(mlir) as f:
                text = f.read()
            # The input's batch is 1 and no conv has one output channel;
            # layout changes are 4-D (a transposed convolution's interleave
            # of its output phases is 6-D).
            ts = [l for l in text.splitlines() if 'tcc.transpose' in l
                  and re.search(r': tensor<1x\d+x\d+x\d+x[a-z]', l)]
            edges = 2 + 2 * text.count('tcc.conv_transpose2d')
            ok = rc == 0 and (args.conv_layout != 'nhwc' or len(ts) <= edges)
            print('%s %s: %d activation transposes, at most %d at the edges (--conv-layout=%s)' % (
                'PASS' if ok else 'FAIL', name, len(ts), edges, args.conv_layout), flush=True)
            failed += not ok
        out = os.path.join(work, name + '.out')
        t = time.time()
        rc, _, err = L.run_tcc([args.tcc, 'run', bundle, '--input',
                                'input=' + os.path.join(work, name + '.input.npy'),
                                '--output-dir', out])
        tr = time.time() - t
        if rc != 0:
            print('FAIL %s run: %s' % (name, L.first_line(err)), flush=True)
            failed += 1
            continue
        got = np.load(os.path.join(out, 'output.npy')).astype(np.float64)
        ref = np.load(os.path.join(work, name + '.output64.npy'))
        ref32 = np.load(os.path.join(work, name + '.output.npy')).astype(np.float64)
        scale = float(np.abs(ref).max())
        torch_err = float(np.abs(ref32 - ref).max())
        allowed = max(8 * torch_err, 1e-5 * scale)
        ok, err_, detail = L.compare(got, ref, L.Tol(0.0, allowed))
        print('%s %s: max|err| %.3g, allowed %.3g (PyTorch f32: %.3g; max|out| %.3g); '
              'compile %.1f s, run %.1f s%s' % (
                  'PASS' if ok else 'FAIL', name, err_, allowed, torch_err, scale, tc, tr,
                  '' if ok else ' -- ' + detail), flush=True)
        failed += not ok
    print('%d passed, %d failed' % (len(args.models) - failed, failed))
    return 1 if failed else 0


if args.keep:
    os.makedirs(args.keep, exist_ok=True)
    sys.exit(main(args.keep))
with tempfile.TemporaryDirectory() as d:
    sys.exit(main(d))
