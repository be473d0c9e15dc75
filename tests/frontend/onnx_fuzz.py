#!/usr/bin/env python3
"""Runs the ONNX importer's libFuzzer target (frontend/fuzz/OnnxFuzzer.cpp)
for a bounded time from seeds built here with onnx.helper: small models using
most supported ops, typed-field and external-data initializers, Constant
nodes, opset-18 inputs and initializers with tcc.recipe hints. Any crash,
sanitizer report, leak or timeout fails the test; the input is kept in
ARTIFACTS.

usage: onnx_fuzz.py FUZZER SECONDS ARTIFACTS
Exits 77 (ctest's skip) without python3-onnx.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper as oh
    from onnx import numpy_helper as nh
except ImportError:
    print('SKIP: python3-onnx is not installed (apt-get install python3-onnx)')
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_params import random_values  # noqa: E402

fuzzer, seconds, artifacts = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = oh.make_graph(nodes, 'g',
                      [oh.make_tensor_value_info(k, TP.FLOAT, list(v)) for k, v in inputs.items()],
                      [oh.make_tensor_value_info(o, TP.FLOAT, None) for o in outputs], list(inits))
    return oh.make_model(g, opset_imports=[oh.make_opsetid('', opset)])


def init(name, v):
    return nh.from_array(v, name)


ext = TP()
ext.name, ext.data_type = 'w', TP.FLOAT
ext.dims.extend([4, 4, 1, 1])
ext.data_location = TP.EXTERNAL
for k, v in (('location', 'weights.bin'), ('offset', '16'), ('length', '64')):
    e = ext.external_data.add()
    e.key, e.value = k, v

seeds = {
    # Regression (UBSan: memcpy from an empty Shape range): Shape over an
    # empty range, run first as a seed.
    'shape_empty': model([
        oh.make_node('Shape', ['x'], ['e'], start=2, end=1),
        oh.make_node('Concat', ['e', 'm1'], ['s'], axis=0),
        oh.make_node('Reshape', ['x', 's'], ['y'])],
        {'x': (2, 3, 4)}, ['y'], [init('m1', np.array([-1], np.int64))]),
    'cnn': model([
        oh.make_node('Conv', ['x', 'w', 'b'], ['c'], pads=[1, 1, 1, 1], group=1, strides=[1, 1]),
        oh.make_node('BatchNormalization', ['c', 's', 'b', 'm', 'v'], ['n']),
        oh.make_node('Relu', ['n'], ['r']),
        oh.make_node('MaxPool', ['r'], ['p'], kernel_shape=[2, 2], strides=[2, 2]),
        oh.make_node('AveragePool', ['p'], ['a'], kernel_shape=[2, 2], auto_pad='SAME_UPPER'),
        oh.make_node('GlobalAveragePool', ['a'], ['g']),
        oh.make_node('Flatten', ['g'], ['f']),
        oh.make_node('Gemm', ['f', 'fw', 'fb'], ['y'], transB=1, alpha=0.5)],
        {'x': (1, 3, 8, 8)}, ['y'],
        [init('w', arr(4, 3, 3, 3)), init('b', arr(4)), init('s', arr(4)), init('m', arr(4)),
         init('v', np.abs(arr(4)) + 1), init('fw', arr(5, 4)), init('fb', arr(5))]),
    'shapes': model([
        oh.make_node('Constant', [], ['shp'], value_ints=[0, -1]),
        oh.make_node('Reshape', ['x', 'shp'], ['r']),
        oh.make_node('Transpose', ['r'], ['t'], perm=[1, 0]),
        oh.make_node('Softmax', ['t'], ['s'], axis=0),
        oh.make_node('Shape', ['x'], ['sh'], start=1),
        oh.make_node('Unsqueeze', ['s', 'ax'], ['u']),
        oh.make_node('Squeeze', ['u', 'ax'], ['q']),
        oh.make_node('Slice', ['q', 'st', 'en'], ['y'])],
        {'x': (2, 3, 4)}, ['y'],
        [init('ax', np.array([0], np.int64)), init('st', np.array([1], np.int64)),
         init('en', np.array([-1], np.int64))]),
    'ops18': model([
        oh.make_node('Pad', ['x', 'pads', 'cv', 'axes'], ['p']),
        oh.make_node('ReduceMean', ['p', 'axes'], ['m']),
        oh.make_node('Clip', ['m', 'lo', ''], ['c']),
        oh.make_node('HardSwish', ['c'], ['h']),
        oh.make_node('Resize', ['h', '', 'sc'], ['y'], mode='nearest'),
        oh.make_node('Conv', ['y', 'w'], ['z'])],
        {'x': (1, 4, 3, 3)}, ['z'],
        [init('pads', np.array([1, 1], np.int64)), init('cv', np.array(0.5, np.float32)),
         init('axes', np.array([-1], np.int64)), init('lo', np.array(0, np.float32)),
         init('sc', np.array([1, 1, 2, 1], np.float32)), ext], opset=18),
    'typed': model([
        oh.make_node('Add', ['x', 'k'], ['a']),
        oh.make_node('Mul', ['a', 'i'], ['m']),
        oh.make_node('Concat', ['m', 'x'], ['c'], axis=0),
        oh.make_node('Gather', ['c', 'idx'], ['g'], axis=1),
        oh.make_node('LayerNormalization', ['g', 'gm'], ['y'], axis=-1)],
        {'x': (2, 3)}, ['y'],
        [oh.make_tensor('k', TP.FLOAT, [3], [1.0, 2.0, 3.0]),
         oh.make_tensor('i', TP.FLOAT, [1], [0.5]),
         oh.make_tensor('idx', TP.INT64, [2], [2, -1]),
         oh.make_tensor('gm', TP.FLOAT, [2], [1.0, 1.5])], opset=17),
}


def hinted(name, recipe, shape, values=None):
    """An initializer holding `recipe`'s values (or `values`), with the
    recipe as its tcc.recipe hint (docs/onnx.md)."""
    n = int(np.prod(shape))
    if values is None:
        values = ([recipe['fill']] * n if 'fill' in recipe else
                  random_values('normal', recipe['mean'], recipe['std'], recipe['seed'], n))
    t = init(name, np.array(values, np.float32).reshape(shape))
    t.doc_string = 'tcc.recipe: ' + json.dumps(recipe)
    return t


# Recipe hints (checked when the fuzzer imports as for --param-recipes=keep):
# a random and a fill hint that hold, and one whose bytes differ.
normal = {'random': 'normal', 'mean': 0.0, 'std': 0.5, 'seed': 9}
seeds['recipes'] = model([
    oh.make_node('Conv', ['x', 'w', 'b'], ['c'], pads=[1, 1, 1, 1]),
    oh.make_node('Add', ['c', 'k'], ['y'])],
    {'x': (1, 3, 4, 4)}, ['y'],
    [hinted('w', normal, (2, 3, 3, 3)), hinted('b', {'fill': 0.25}, (2,)),
     hinted('k', normal, (1,), values=[1.0])])

# Regression (a false alarm of the oracle): a malformed hint whose JSON error
# quotes ": internal " back from the user's bytes.
bad_hint = init('b', np.zeros(2, np.float32))
bad_hint.doc_string = 'tcc.recipe: {"f: internal '
seeds['bad_hint'] = model([oh.make_node('Add', ['x', 'b'], ['y'])], {'x': (2,)}, ['y'],
                          [bad_hint])

with tempfile.TemporaryDirectory() as d:
    corpus = os.path.join(d, 'corpus')
    os.makedirs(corpus)
    for name, m in seeds.items():
        with open(os.path.join(corpus, name + '.onnx'), 'wb') as f:
            f.write(m.SerializeToString())
    os.makedirs(artifacts, exist_ok=True)
    # -error_exitcode: libFuzzer's default, 77, is ctest's skip code here,
    # which would report a crash as a skipped test.
    cmd = [fuzzer, corpus, '-max_total_time=%d' % seconds, '-rss_limit_mb=2048',
           '-timeout=20', '-max_len=8192', '-print_final_stats=1',
           '-error_exitcode=1', '-timeout_exitcode=1',
           '-artifact_prefix=' + os.path.join(artifacts, 'onnx-')]
    print(' '.join(cmd), flush=True)
    sys.exit(subprocess.run(cmd).returncode)
