#!/usr/bin/python3
"""Params kept as recipes (`tcc compile --param-recipes=keep`).

1. Size: a model with a few MiB of random params gives a bundle of a few KiB
   of weights with recipes kept, against the params' whole size embedded.
2. Same numbers: `tcc run` of the kept and the embedded bundle gives
   bit-identical outputs on fresh random inputs, for fill, normal and uniform
   params of every dtype the format allows for them, in odd shapes; the
   params themselves are outputs too, and they equal both the embedded
   bundle's param blobs (the compiler's bytes) and an independent Python
   implementation of the documented recipe (tests/frontend/check_params.py).
3. Corrupted recipes (unknown kind, unknown distribution, wrong shape, a
   random recipe on an integer param) are refused in one line, exit 1.

The seed of the random inputs is printed; E2E_SEED fixes it.

usage: param_recipes.py --tcc TCC
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'frontend'))
from check_params import encode, random_values, decode, ulp  # noqa: E402

SIZE = {'f64': 8, 'f32': 4, 'f16': 2, 'bf16': 2, 'f8e4m3': 1, 'f8e5m2': 1,
        'i8': 1, 'i32': 4, 'i64': 8, 'bool': 1}
FAILS = []


def check(ok, what):
    print(('ok   ' if ok else 'FAIL ') + what)
    if not ok:
        FAILS.append(what)


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def read_bundle(path):
    """(bytes, manifest) of a bundle (docs/bundle-format.md)."""
    data = open(path, 'rb').read()
    assert data[:8] == b'TCCBUNDL'
    off, size = struct.unpack_from('<QQ', data, 16)
    return data, json.loads(data[off:off + size])


def write_bundle(data, manifest, path):
    """`data` with its manifest replaced (blobs unchanged), checksums
    recomputed: corruption that only the schema can catch."""
    off = struct.unpack_from('<Q', data, 16)[0]
    text = json.dumps(manifest).encode()
    out = bytearray(data[:off]) + text
    struct.pack_into('<QQQQ', out, 24, len(text), fnv1a64(text), len(out), 0)
    struct.pack_into('<Q', out, 56, fnv1a64(bytes(out[:56])))
    open(path, 'wb').write(bytes(out))


def blob(data, manifest, name):
    b = next(b for b in manifest['blobs'] if b['name'] == name)
    return data[b['offset']:b['offset'] + b['size']]


def tcc(args, *rest):
    return subprocess.run([args.tcc] + list(rest), capture_output=True,
                          text=True, timeout=300)


def compile_both(args, tmp, model, name):
    path = os.path.join(tmp, name + '.json')
    json.dump(model, open(path, 'w'))
    out = {}
    for mode in ('embed', 'keep'):
        out[mode] = os.path.join(tmp, f'{name}.{mode}.tccb')
        r = tcc(args, 'compile', path, '-o', out[mode],
                '--param-recipes=' + mode)
        if r.returncode != 0:
            sys.exit(f'FAIL: compile {name} ({mode}): {r.stderr.strip()}')
    return out


def run_outputs(args, tmp, bundle, names, seed):
    d = tempfile.mkdtemp(dir=tmp)
    r = tcc(args, 'run', bundle, '--seed', str(seed), '--output-dir', d)
    if r.returncode != 0:
        sys.exit(f'FAIL: run {bundle}: {r.stderr.strip()}')
    return {n: np.load(os.path.join(d, n + '.npy')) for n in names}


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and \
        a.tobytes() == b.tobytes()


def size_test(args, tmp, seed):
    """Random params worth 3.5 MiB in a two-layer MLP."""
    model = {
        'format': 'tcc-model', 'version': 1, 'name': 'big_random',
        'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [3, 512]}],
        'params': [
            {'name': 'w1', 'dtype': 'f32', 'shape': [512, 1024],
             'init': {'random': 'normal', 'std': 0.04, 'seed': 1}},
            {'name': 'b1', 'dtype': 'f32', 'shape': [1024],
             'init': {'fill': 0.125}},
            {'name': 'w2', 'dtype': 'f32', 'shape': [1024, 384],
             'init': {'random': 'uniform', 'low': -0.05, 'high': 0.05,
                      'seed': 2}},
        ],
        'nodes': [
            {'op': 'matmul', 'inputs': ['x', 'w1'], 'outputs': ['m'],
             'attrs': {}},
            {'op': 'add', 'inputs': ['m', 'b1'], 'outputs': ['h'],
             'attrs': {}},
            {'op': 'relu', 'inputs': ['h'], 'outputs': ['r'], 'attrs': {}},
            {'op': 'matmul', 'inputs': ['r', 'w2'], 'outputs': ['y'],
             'attrs': {}},
        ],
        'outputs': ['y'],
    }
    paths = compile_both(args, tmp, model, 'big_random')
    param_bytes = (512 * 1024 + 1024 + 1024 * 384) * 4
    embed = os.path.getsize(paths['embed'])
    keep = os.path.getsize(paths['keep'])
    print(f'big_random: {param_bytes} param bytes; bundle {embed} bytes '
          f'embedded, {keep} with recipes kept')
    check(embed >= param_bytes, 'the embedded bundle holds every param byte')
    check(keep < embed - param_bytes + 4096,
          'the kept bundle holds no param bytes (a few KiB of manifest more)')
    check(keep * 10 < embed, 'the kept bundle is under a tenth of the size')
    data, man = read_bundle(paths['keep'])
    check(man['format_version'] == 2 and
          all('init' in p and 'blob' not in p for p in man['params']),
          'kept: manifest version 2, every param a recipe')
    data, man = read_bundle(paths['embed'])
    check(man['format_version'] == 1 and
          all('blob' in p and 'init' not in p for p in man['params']),
          'embedded: manifest version 1, every param a blob')
    a = run_outputs(args, tmp, paths['embed'], ['y'], seed)
    b = run_outputs(args, tmp, paths['keep'], ['y'], seed)
    check(same_bits(a['y'], b['y']), 'big_random: outputs bit-identical')


# (dtype, shape, init): every kind in each dtype that allows it.
def recipe_params():
    out = []
    shapes = [[3, 7], [13], [5, 1, 3], [], [2, 9, 3], [0, 4]]
    i = 0
    for dt in ('f32', 'f16', 'bf16', 'f64', 'f8e4m3', 'f8e5m2'):
        for init in ({'random': 'normal', 'mean': 0.5, 'std': 2.0,
                      'seed': 100 + i},
                     {'random': 'uniform', 'low': -3.0, 'high': 1.5,
                      'seed': (1 << 64) - 1 - i},
                     {'random': 'normal'},  # the defaults
                     {'fill': -0.3125}, {'fill': '-inf'}):
            out.append((dt, shapes[i % len(shapes)], init))
            i += 1
    for dt, v in (('i8', -7), ('i32', 123456), ('i64', -(1 << 62) - 3),
                  ('bool', True)):
        out.append((dt, shapes[i % len(shapes)], {'fill': v}))
        i += 1
    return out


def expected_bytes(dt, n, init):
    if 'fill' in init:
        v = init['fill']
        return encode(dt, float(v) if isinstance(v, str) else v) * n
    normal = init['random'] == 'normal'
    a = init.get('mean' if normal else 'low', 0.0)
    b = init.get('std' if normal else 'high', 1.0)
    return b''.join(encode(dt, x) for x in random_values(
        init['random'], a, b, init.get('seed', 0), n))


def as_bytes(dt, arr):
    """A param's bytes from `tcc run`'s .npy (bf16 and f8 come as exact
    float32): re-encoded, which is exact for values the dtype holds."""
    if dt in ('bf16', 'f8e4m3', 'f8e5m2'):
        return b''.join(encode(dt, float(x)) for x in arr.reshape(-1))
    return arr.astype(arr.dtype.newbyteorder('<')).tobytes()


def dtype_test(args, tmp, seed):
    params = recipe_params()
    model = {'format': 'tcc-model', 'version': 1, 'name': 'recipes',
             'inputs': [], 'params': [], 'nodes': [], 'outputs': []}
    for i, (dt, shape, init) in enumerate(params):
        model['params'].append({'name': f'p{i}', 'dtype': dt, 'shape': shape,
                                'init': init})
        model['outputs'].append(f'p{i}')
        # The params also feed a kernel with a fresh random input.
        if dt in ('f32', 'f16', 'bf16'):
            model['inputs'].append({'name': f'x{i}', 'dtype': dt,
                                    'shape': shape})
            model['nodes'].append({'op': 'mul', 'inputs': [f'x{i}', f'p{i}'],
                                   'outputs': [f'y{i}'], 'attrs': {}})
            model['outputs'].append(f'y{i}')
    paths = compile_both(args, tmp, model, 'recipes')
    names = model['outputs']
    a = run_outputs(args, tmp, paths['embed'], names, seed)
    b = run_outputs(args, tmp, paths['keep'], names, seed)
    diff = [n for n in names if not same_bits(a[n], b[n])]
    check(not diff, f'recipes: {len(names)} outputs bit-identical, kept vs '
          f'embedded' + (f' (differ: {diff})' if diff else ''))

    data, man = read_bundle(paths['embed'])
    kept = read_bundle(paths['keep'])[1]
    blob_of = {p['name']: blob(data, man, p['blob']) for p in man['params']}
    bad_blob, bad_ref, exact = [], [], 0
    for i, (dt, shape, init) in enumerate(params):
        n = int(np.prod(shape)) if shape else 1
        got = as_bytes(dt, b[f'p{i}'])
        if got != blob_of[f'p{i}']:
            bad_blob.append(f'p{i} {dt}')
        exp = expected_bytes(dt, n, init)
        if got == exp:
            exact += 1
        elif not ('random' in init and len(got) == len(exp) and np.all(
                np.abs(decode(dt, got) - decode(dt, exp)) <=
                [ulp(dt, x) for x in decode(dt, exp)])):
            bad_ref.append(f'p{i} {dt} {init}')
    check(not bad_blob, 'the runtime computes the compiler\'s bytes for '
          f'{len(params)} params' + (f' (differ: {bad_blob})' if bad_blob
                                     else ''))
    # libm may move a rounding by one step against Python's (as in
    # check_params.py); everything else is exact.
    check(not bad_ref, f'the documented recipe ({exact} of {len(params)} '
          'bit-exact, the rest within one step)' +
          (f' (differ: {bad_ref})' if bad_ref else ''))
    check(all('init' in p for p in kept['params']),
          'every fill and random param kept as a recipe')
    return paths['keep']


def corruption_test(args, tmp, keep_path):
    data, man = read_bundle(keep_path)
    ints = [i for i, p in enumerate(man['params']) if p['dtype'] == 'i32']
    rnd = [i for i, p in enumerate(man['params'])
           if 'random' in p['init'] and p['shape'] == [3, 7]]
    cases = [
        ('unknown recipe kind',
         lambda m: m['params'][0].__setitem__('init', {'ones': True}),
         '/params/0/init: unknown param recipe'),
        ('unknown distribution',
         lambda m: m['params'][rnd[0]]['init'].__setitem__('random', 'gamma'),
         f'/params/{rnd[0]}/init/random: unknown random distribution '
         '"gamma"'),
        ('wrong shape',
         lambda m: m['params'][rnd[0]].__setitem__('shape', [3, 6]),
         f'/params/{rnd[0]}/buffer: buffer'),
        ('random on an integer param',
         lambda m: m['params'][ints[0]].__setitem__(
             'init', {'random': 'uniform', 'low': 0, 'high': 1, 'seed': 1}),
         f'/params/{ints[0]}/init: random recipes need a float dtype'),
        ('fill bits wider than the dtype',
         lambda m: m['params'][ints[0]].__setitem__(
             'init', {'fill': '0x0000000100000000'}),
         f'/params/{ints[0]}/init/fill: expected the element\'s bits'),
    ]
    for what, mutate, expect in cases:
        m = json.loads(json.dumps(man))
        mutate(m)
        path = os.path.join(tmp, 'bad.tccb')
        write_bundle(data, m, path)
        for cmd in (['run', path], ['inspect', path]):
            r = tcc(args, *cmd)
            lines = r.stderr.strip().split('\n')
            check(r.returncode == 1 and len(lines) == 1 and
                  expect in lines[0] and not r.stdout,
                  f'{what}: tcc {cmd[0]} exits 1 with one line'
                  + ('' if r.returncode == 1 else
                     f' (exit {r.returncode}: {r.stderr.strip()})'))
    print('   ', lines[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tcc', required=True)
    args = ap.parse_args()
    seed = int(os.environ.get('E2E_SEED', random.SystemRandom().randrange(
        1 << 31)))
    print(f'seed {seed}')
    with tempfile.TemporaryDirectory() as tmp:
        size_test(args, tmp, seed)
        keep = dtype_test(args, tmp, seed)
        corruption_test(args, tmp, keep)
    print(f'{len(FAILS)} failed')
    return 1 if FAILS else 0


if __name__ == '__main__':
    sys.exit(main())
