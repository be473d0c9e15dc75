#!/usr/bin/env python3
"""ONNX initializers described by a `tcc.recipe` hint (docs/onnx.md).

1. The exporter's vectorised generator (examples/cnn/export_models.py
   recipe_values) gives the bytes of tests/frontend/check_params.py's scalar
   re-implementation of the documented recipe, in f32 and f16.
2. A small CNN (convolutions with and without bias, depthwise and
   transposed ones, BatchNorm, a linear layer) exported in f16 by
   export_models.py's --recipe-weights path: every weight carries a hint.
   Compiled for the host with --param-recipes=keep and =embed, both bundles
   give bit-identical outputs, within f16's bound of PyTorch's float64
   output; the kept bundle stores recipes, not weights, and folds
   BatchNorm at load (init launches).
3. Hints checked with keep: bytes that differ from the recipe (another seed;
   only the last element; a fill) and malformed hints (bad JSON, an unknown
   key, a `file` initialiser, random on an integer tensor) are refused with
   exit 1 and one line naming the initializer (a random recipe's check
   samples 4096 elements of larger tensors, the last among them); with
   embed, hints are ignored.

usage: onnx_recipes.py --tcc TCC
Exits 77 (ctest's skip) without torch, torchvision or python3-onnx, or when
tcc was built without ONNX support.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXPORT = os.path.join(ROOT, 'examples', 'cnn', 'export_models.py')
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'frontend'))
sys.path.insert(0, os.path.join(ROOT, 'examples', 'cnn'))
import e2elib as L  # noqa: E402

for mod, pkg in (('torch', 'python3-torch'), ('torchvision', 'python3-torchvision'),
                 ('onnx', 'python3-onnx')):
    try:
        __import__(mod)
    except ImportError:
        print('SKIP: %s is not installed (apt-get install %s)' % (mod, pkg))
        sys.exit(L.SKIP)

import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as oh  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

import export_models as em  # noqa: E402
from check_params import encode, random_values  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument('--tcc', required=True)
args = ap.parse_args()
FAILS = []


def check(ok, what):
    print(('PASS ' if ok else 'FAIL ') + what, flush=True)
    if not ok:
        FAILS.append(what)


def manifest(path):
    data = open(path, 'rb').read()
    off, size = struct.unpack_from('<QQ', data, 16)
    return json.loads(data[off:off + size])


def generator():
    for r in ({'random': 'normal', 'mean': 0.0, 'std': 0.02, 'seed': 17},
              {'random': 'normal', 'mean': 0.5, 'std': 3.0, 'seed': 2 ** 64 - 5},
              {'random': 'uniform', 'low': 0.5, 'high': 1.5, 'seed': 3},
              {'fill': -0.1}):
        n = 3001
        if 'fill' in r:
            ref = [r['fill']] * n
        elif r['random'] == 'normal':
            ref = random_values('normal', r['mean'], r['std'], r['seed'], n)
        else:
            ref = random_values('uniform', r['low'], r['high'], r['seed'], n)
        for dt, name in ((np.float32, 'f32'), (np.float16, 'f16')):
            got = em.recipe_values(r, n, dt).tobytes()
            want = b''.join(encode(name, v) for v in ref)
            check(got == want, 'generator %s %s: the scalar reference\'s bytes' % (
                name, json.dumps(r)))


class SmallCnn(torch.nn.Module):
    """Convolutions with and without bias, BatchNorm after each, a
    depthwise one, a transposed one and a linear layer: every kind of
    weight the CNNs have, compiled in seconds."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.body = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1, groups=64), nn.BatchNorm2d(64), nn.ReLU(),
            nn.ConvTranspose2d(64, 64, 2, stride=2), nn.BatchNorm2d(64), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 1000))

    def forward(self, x):
        return self.body(x)


def small_cnn(work):
    em.MODELS['small_cnn'] = (SmallCnn, (3, 16, 16), (3, 16, 16))
    _, sizes = em.export('small_cnn', work, 0, 17, (3, 16, 16), True, 2, 'f16', True)
    check(sizes[1] == 0, 'export: %d bytes of initializers with a hint, %d without' % sizes)
    model = onnx.load(os.path.join(work, 'small_cnn.onnx'))
    plain = [t.name for t in model.graph.initializer if not t.doc_string]
    check(not plain, 'every initializer has a hint (without: %s)' % plain[:5])
    outs, sizes = {}, {}
    for mode in ('keep', 'embed'):
        bundle = os.path.join(work, mode + '.tccb')
        rc, _, err = L.run_tcc([args.tcc, 'compile', os.path.join(work, 'small_cnn.onnx'),
                                '-o', bundle, '--target', 'host', '--param-recipes=' + mode])
        if rc != 0 and 'without ONNX support' in err:
            print('SKIP: ' + L.first_line(err))
            return L.SKIP
        if rc != 0:
            check(False, 'compile --param-recipes=%s: %s' % (mode, L.first_line(err)))
            return 0
        sizes[mode] = os.path.getsize(bundle)
        out = os.path.join(work, mode + '.out')
        rc, _, err = L.run_tcc([args.tcc, 'run', bundle, '--input',
                                'input=' + os.path.join(work, 'small_cnn.input.npy'),
                                '--output-dir', out])
        if rc != 0:
            check(False, 'run --param-recipes=%s: %s' % (mode, L.first_line(err)))
            return 0
        outs[mode] = np.load(os.path.join(out, 'output.npy'))
    check(outs['keep'].tobytes() == outs['embed'].tobytes(),
          'kept and embedded recipes: bit-identical outputs')
    ref = np.load(os.path.join(work, 'small_cnn.output64.npy'))
    got = outs['keep'].astype(np.float64)
    err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    check(err <= 1e-2, 'f16 output against PyTorch in float64: normwise error %.2e <= 1e-2' % err)
    weights = sum(t.size for t in map(nh.to_array, model.graph.initializer)) * 2
    man = manifest(os.path.join(work, 'keep.tccb'))
    kept = [p for p in man['params'] if 'init' in p]
    # BatchNorm folded into the convolutions' weights at load, after the
    # recipes: tcc-hoist-param-computations on recipe params.
    check(len(man.get('init_launches', [])) > 0,
          'kept bundle: %d init launches (batch-norm folding at load)' % len(
              man.get('init_launches', [])))
    check(sizes['embed'] > weights and sizes['keep'] < sizes['embed'] - weights * 0.98,
          'bundle with recipes kept: %d bytes, embedded: %d (%d bytes of weights); '
          '%d params kept as recipes' % (sizes['keep'], sizes['embed'], weights, len(kept)))
    return 0


def conv_model(w, doc, dtype=np.float32, extra=()):
    """y = conv(x, w) with w's doc_string `doc`; `extra` initializers are
    unused inputs of a Concat-free second output (Identity)."""
    t = nh.from_array(w.astype(dtype), 'conv.weight')
    t.doc_string = doc
    elem = TP.FLOAT16 if dtype == np.float16 else TP.FLOAT
    nodes = [oh.make_node('Conv', ['x', 'conv.weight'], ['y'], pads=[1, 1, 1, 1])]
    outs = [oh.make_tensor_value_info('y', elem, None)]
    for i, e in enumerate(extra):
        nodes.append(oh.make_node('Identity', [e.name], ['e%d' % i]))
        outs.append(oh.make_tensor_value_info('e%d' % i, e.data_type, None))
    g = oh.make_graph(nodes, 'g', [oh.make_tensor_value_info('x', elem, [1, 3, 8, 8])], outs,
                      [t] + list(extra))
    return oh.make_model(g, opset_imports=[oh.make_opsetid('', 17)])


def hints(work):
    # 4800 elements: more than the 4096 a random recipe's check samples.
    shape = (64, 3, 5, 5)
    n = int(np.prod(shape))
    r = {'random': 'normal', 'mean': 0.0, 'std': 0.3, 'seed': 41}
    w = em.recipe_values(r, n, np.float32).reshape(shape)
    hint = 'tcc.recipe: ' + json.dumps(r)
    last = w.copy()
    last.flat[-1] = np.nextafter(last.flat[-1], np.float32(np.inf))
    ints = nh.from_array(np.arange(6, dtype=np.int64), 'ints')
    ints.doc_string = 'tcc.recipe: {"random": "uniform", "seed": 1}'
    cases = [
        # (what, model, error text or None when it must compile)
        ('a true hint', conv_model(w, hint), None),
        ('a true hint in f16', conv_model(
            em.recipe_values(r, n, np.float16).reshape(shape), hint, np.float16), None),
        ('a true fill hint', conv_model(np.full(shape, 0.25), 'tcc.recipe: {"fill": 0.25}'), None),
        ('documentation, no hint', conv_model(w + 1, 'conv weights, trained'), None),
        ('another seed', conv_model(w, hint.replace('41', '42')), 'element 0 is'),
        ('only the last element differs', conv_model(last, hint), 'element %d is' % (n - 1)),
        ('a fill that differs in one element', conv_model(
            np.where(np.arange(n).reshape(shape) == 50, 0.5, 0.25),
            'tcc.recipe: {"fill": 0.25}'), 'element 50 is'),
        ('bad JSON', conv_model(w, 'tcc.recipe: {"random": "normal",'), 'tcc.recipe hint'),
        ('an unknown key', conv_model(w, 'tcc.recipe: {"random": "normal", "sd": 1}'), '"sd"'),
        ('a file initialiser', conv_model(
            w, 'tcc.recipe: {"file": "w.safetensors", "tensor": "w"}'), 'recipe needs'),
        ('random on an integer tensor', conv_model(w, hint, extra=[ints]), 'float dtype'),
    ]
    for what, model, error in cases:
        path = os.path.join(work, 'hint.onnx')
        onnx.save(model, path)
        name = 'ints' if 'integer' in what else 'conv.weight'
        for mode in ('keep', 'embed'):
            bundle = os.path.join(work, 'hint.tccb')
            if os.path.exists(bundle):
                os.remove(bundle)
            rc, _, err = L.run_tcc([args.tcc, 'compile', path, '-o', bundle, '--target', 'host',
                                    '--param-recipes=' + mode])
            lines = err.strip().splitlines()
            if mode == 'embed' and error is None:
                continue  # nothing to ignore
            if error is None or mode == 'embed':
                ok = rc == 0
                if ok and error is None and mode == 'keep':
                    p = {p['name']: p for p in manifest(bundle)['params']}[name]
                    ok = ('init' in p) == (what != 'documentation, no hint')
                check(ok, '%s, %s: compiles%s' % (what, mode, '' if rc == 0 else
                                                   ' -- ' + L.first_line(err)))
                continue
            ok = (rc == 1 and len(lines) == 1 and 'initializer "%s"' % name in lines[0]
                  and error in lines[0] and not os.path.exists(bundle))
            check(ok, '%s, keep: refused in one line: %s' % (what, lines[0] if lines else ''))


with tempfile.TemporaryDirectory() as d:
    generator()
    if small_cnn(d) == L.SKIP:
        sys.exit(L.SKIP)
    hints(d)
print('%d failed' % len(FAILS))
sys.exit(1 if FAILS else 0)
