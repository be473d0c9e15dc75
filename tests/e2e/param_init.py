#!/usr/bin/env python3
"""Work on params alone runs once, at load (tcc-hoist-param-computations and
the bundle's init launches, docs/bundle-format.md#init-launches).

The model transposes a weight, scales it by a constant and by a param made
by a recipe, and reshapes it before a matmul; a bias is used raw (an add)
and derived (exp); a reshape of a raw param is a view; the prepared weight is
also an output. For params embedded and for recipes kept
(--param-recipes=keep):

1. the manifest is version 3 and has init launches; no per-run kernel does
   the params-only work (transpose, exp) and an init kernel does, and a run
   launches exactly as many kernels as the same model with its derived
   params computed by NumPy and given as params;
2. `tcc run` on fresh random inputs matches NumPy;
3. through libtccrt (ctypes), two runs on one loaded model give identical
   bytes, and a third run on other inputs matches NumPy again (the init is
   neither repeated nor lost);
4. with --cc and --include (host only), the model as a library (`--emit lib`)
   linked into a C program runs twice with identical bytes and matches NumPy.

The seed is printed; E2E_SEED fixes it. With --target (e.g. sm_90) the
bundles are compiled for that GPU and run on its device.

usage: param_init.py --tcc TCC --libtccrt LIBTCCRT [--target T [--skip-without-device]]
                     [--cc CC --include RUNTIME_INCLUDE_DIR]
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2elib as L  # noqa: E402

FAILS = []
S_INIT = {'random': 'normal', 'mean': 1.0, 'std': 0.25, 'seed': 11}


def check(ok, what):
    print(('ok   ' if ok else 'FAIL ') + what)
    if not ok:
        FAILS.append(what)


def model(w, b):
    """The model, its weight w [2, 8, 24] and bias b [16] given."""
    return {
        'format': 'tcc-model', 'version': 1, 'name': 'param_init',
        'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [5, 24]}],
        'params': [
            {'name': 'w', 'dtype': 'f32', 'shape': [2, 8, 24],
             'init': {'value': [float(v) for v in w.ravel()]}},
            {'name': 's', 'dtype': 'f32', 'shape': [24, 2, 8], 'init': S_INIT},
            {'name': 'b', 'dtype': 'f32', 'shape': [16],
             'init': {'value': [float(v) for v in b]}},
            {'name': 'c', 'dtype': 'f32', 'shape': [2, 8], 'init': {'fill': 0.25}},
        ],
        'nodes': [
            {'op': 'transpose', 'inputs': ['w'], 'outputs': ['t'],
             'attrs': {'perm': [2, 0, 1]}},
            {'op': 'constant', 'outputs': ['half'],
             'attrs': {'dtype': 'f32', 'shape': [], 'value': 0.5}},
            {'op': 'mul', 'inputs': ['t', 'half'], 'outputs': ['tk']},
            {'op': 'mul', 'inputs': ['tk', 's'], 'outputs': ['ts']},
            {'op': 'reshape', 'inputs': ['ts'], 'outputs': ['r'],
             'attrs': {'shape': [24, 16]}},
            {'op': 'matmul', 'inputs': ['x', 'r'], 'outputs': ['m']},
            {'op': 'add', 'inputs': ['m', 'b'], 'outputs': ['y']},
            {'op': 'exp', 'inputs': ['b'], 'outputs': ['e']},
            {'op': 'mul', 'inputs': ['y', 'e'], 'outputs': ['z']},
            {'op': 'reshape', 'inputs': ['c'], 'outputs': ['cv'],
             'attrs': {'shape': [16]}},
            {'op': 'sub', 'inputs': ['y', 'cv'], 'outputs': ['v']},
        ],
        'outputs': ['y', 'z', 'r', 'v'],
    }


def prepared_model(r, b, e):
    """The same per-run graph with the derived params given: r (the
    prepared weight) and e = exp(b)."""
    return {
        'format': 'tcc-model', 'version': 1, 'name': 'param_init_prepared',
        'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [5, 24]}],
        'params': [
            {'name': 'r', 'dtype': 'f32', 'shape': [24, 16],
             'init': {'value': [float(v) for v in r.ravel()]}},
            {'name': 'b', 'dtype': 'f32', 'shape': [16],
             'init': {'value': [float(v) for v in b]}},
            {'name': 'e', 'dtype': 'f32', 'shape': [16],
             'init': {'value': [float(v) for v in e]}},
            {'name': 'c', 'dtype': 'f32', 'shape': [2, 8], 'init': {'fill': 0.25}},
        ],
        'nodes': [
            {'op': 'matmul', 'inputs': ['x', 'r'], 'outputs': ['m']},
            {'op': 'add', 'inputs': ['m', 'b'], 'outputs': ['y']},
            {'op': 'mul', 'inputs': ['y', 'e'], 'outputs': ['z']},
            {'op': 'reshape', 'inputs': ['c'], 'outputs': ['cv'],
             'attrs': {'shape': [16]}},
            {'op': 'sub', 'inputs': ['y', 'cv'], 'outputs': ['v']},
        ],
        'outputs': ['y', 'z', 'r', 'v'],
    }


def reference(x, w, s, b):
    r = (np.transpose(w.astype(np.float64), (2, 0, 1)) * 0.5 * s).reshape(24, 16)
    y = x.astype(np.float64) @ r + b
    return {'y': y, 'z': y * np.exp(b.astype(np.float64)), 'r': r, 'v': y - 0.25}


def close(got, ref):
    err = float(np.max(np.abs(got - ref) / (np.abs(ref) + 1.0)))
    return err <= 1e-5, err


def compile_model(args, m, path, *extra):
    with open(path + '.json', 'w') as f:
        json.dump(m, f)
    subprocess.run([args.tcc, 'compile', path + '.json', '-o', path + '.tccb'] +
                   args.target_flags + list(extra), check=True)
    return json.loads(subprocess.run([args.tcc, 'inspect', path + '.tccb'], check=True,
                                     capture_output=True, text=True).stdout)


class Runtime:
    """The few libtccrt calls the test needs, on the bundle's device."""

    def __init__(self, path, kind):
        self.lib = ctypes.CDLL(path)
        self.kind = kind
        self.ctx = ctypes.c_void_p()
        self.call('tccrt_context_create', kind, 0, ctypes.byref(self.ctx))

    def call(self, name, *a):
        status = getattr(self.lib, name)(*a)
        if status != 0:
            self.lib.tccrt_last_error.restype = ctypes.c_char_p
            raise RuntimeError('%s: %s' % (name, self.lib.tccrt_last_error().decode()))

    def load(self, bundle):
        model = ctypes.c_void_p()
        self.call('tccrt_model_load_file', self.ctx, bundle.encode(), ctypes.byref(model))
        return model

    def buffer(self, nbytes):
        if self.kind == 0:
            host = ctypes.create_string_buffer(nbytes)
            return host, ctypes.cast(host, ctypes.c_void_p)
        p = ctypes.c_void_p()
        self.call('tccrt_malloc', self.ctx, ctypes.c_size_t(nbytes), ctypes.byref(p))
        return None, p

    def upload(self, dev, array):
        data = np.ascontiguousarray(array)
        self.call('tccrt_copy_to_device', self.ctx, dev, data.ctypes.data_as(ctypes.c_void_p),
                  ctypes.c_size_t(data.nbytes))

    def download(self, dev, shape):
        out = np.empty(shape, np.float32)
        self.call('tccrt_copy_to_host', self.ctx, out.ctypes.data_as(ctypes.c_void_p), dev,
                  ctypes.c_size_t(out.nbytes))
        return out


def api_runs(args, bundle, xs, refs, label):
    kind = 0 if not args.target else (2 if args.target.startswith('gfx') else 1)
    rt = Runtime(args.libtccrt, kind)
    model = rt.load(bundle)
    shapes = {'y': (5, 16), 'z': (5, 16), 'r': (24, 16), 'v': (5, 16)}
    keep = []
    _, xdev = rt.buffer(5 * 24 * 4)
    rt.call('tccrt_model_bind_input_by_name', model, b'x', xdev, ctypes.c_size_t(5 * 24 * 4))
    outs = {}
    for name, shape in shapes.items():
        nbytes = int(np.prod(shape)) * 4
        host, dev = rt.buffer(nbytes)
        keep.append(host)
        outs[name] = dev
        rt.call('tccrt_model_bind_output_by_name', model, name.encode(), dev,
                ctypes.c_size_t(nbytes))

    def run(x):
        rt.upload(xdev, x)
        rt.call('tccrt_model_run', model)
        return {n: rt.download(outs[n], s) for n, s in shapes.items()}

    first = run(xs[0])
    second = run(xs[0])
    check(all(np.array_equal(first[n], second[n]) for n in shapes),
          '%s: two runs through libtccrt give identical bytes' % label)
    third = run(xs[1])
    for n in shapes:
        ok, err = close(third[n].astype(np.float64), refs[1][n])
        check(ok, '%s: a run on other inputs, %s against NumPy (error %.3g)' % (label, n, err))
    rt.call('tccrt_model_destroy', model)
    if kind != 0:
        rt.call('tccrt_free', rt.ctx, xdev)
        for dev in outs.values():
            rt.call('tccrt_free', rt.ctx, dev)
    rt.call('tccrt_context_destroy', rt.ctx)


LIB_MAIN = r'''
#include "pinit.h"
#include <stdio.h>
#include <string.h>

static float x[5 * 24], out[2][4][24 * 16];
static const char *names[4] = {"y", "z", "r", "v"};
static const size_t sizes[4] = {5 * 16, 5 * 16, 24 * 16, 5 * 16};

int main(void) {
  tccrt_context *ctx;
  tccrt_model *m;
  if (fread(x, sizeof x, 1, stdin) != 1)
    return 3;
  if (tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) != TCCRT_OK ||
      pinit_load(ctx, &m) != TCCRT_OK ||
      tccrt_model_bind_input_by_name(m, "x", x, sizeof x) != TCCRT_OK) {
    fprintf(stderr, "%s\n", tccrt_last_error());
    return 1;
  }
  for (int run = 0; run < 2; ++run) {
    for (int i = 0; i < 4; ++i)
      if (tccrt_model_bind_output_by_name(m, names[i], out[run][i],
                                          sizes[i] * 4) != TCCRT_OK)
        return 1;
    if (tccrt_model_run(m) != TCCRT_OK) {
      fprintf(stderr, "%s\n", tccrt_last_error());
      return 1;
    }
  }
  if (memcmp(out[0], out[1], sizeof out[0]) != 0)
    return 2;
  for (int i = 0; i < 4; ++i)
    fwrite(out[1][i], 4, sizes[i], stdout);
  tccrt_model_destroy(m);
  tccrt_context_destroy(ctx);
  return 0;
}
'''


def lib_check(args, work, m, x, ref):
    """`--emit lib` of the model, linked into LIB_MAIN: two runs, NumPy."""
    src = os.path.join(work, 'pinit.json')
    with open(src, 'w') as f:
        json.dump(m, f)
    subprocess.run([args.tcc, 'compile', src, '--emit', 'lib', '-o',
                    os.path.join(work, 'pinit')], check=True)
    prog = os.path.join(work, 'main.c')
    with open(prog, 'w') as f:
        f.write(LIB_MAIN)
    libdir = os.path.dirname(os.path.abspath(args.libtccrt))
    exe = os.path.join(work, 'pinit_main')
    subprocess.run([args.cc, '-std=c99', '-Wall', '-Werror', prog, '-I', work, '-I',
                    args.include, os.path.join(work, 'libpinit.a'), '-L', libdir, '-ltccrt',
                    '-Wl,-rpath,' + libdir, '-o', exe], check=True)
    p = subprocess.run([exe], input=x.tobytes(), capture_output=True, timeout=120)
    check(p.returncode == 0, '--emit lib: two runs of the linked library give identical '
          'bytes (status %d, %s)' % (p.returncode, p.stderr.decode().strip()))
    if p.returncode != 0:
        return
    got = np.frombuffer(p.stdout, np.float32)
    at = 0
    for n, size in (('y', 80), ('z', 80), ('r', 384), ('v', 80)):
        ok, err = close(got[at:at + size].astype(np.float64), ref[n].ravel())
        check(ok, '--emit lib: %s against NumPy (error %.3g)' % (n, err))
        at += size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--libtccrt', required=True)
    ap.add_argument('--target', help='a GPU target (sm_90, gfx942): compile and run there')
    ap.add_argument('--skip-without-device', action='store_true',
                    help='with --target: exit 77 (skipped) after the compile checks '
                    'when this machine has no such device')
    ap.add_argument('--cc', help='a C compiler, for the --emit lib check (host only)')
    ap.add_argument('--include', help='the directory of tccrt.h, for --emit lib')
    args = ap.parse_args()
    args.target_flags = ['--target', args.target] if args.target else []
    seed = int(os.environ.get('E2E_SEED', int.from_bytes(os.urandom(4), 'little')))
    print('seed', seed)
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((2, 8, 24)).astype(np.float32)
    b = (rng.standard_normal(16) * 0.5).astype(np.float32)
    s = L.random_init(S_INIT, 24 * 16).astype(np.float32).reshape(24, 2, 8)
    xs = [rng.standard_normal((5, 24)).astype(np.float32) for _ in range(2)]
    refs = [reference(x, w, s, b) for x in xs]

    with tempfile.TemporaryDirectory() as work:
        # Without the GPU the bundles are still compiled and inspected.
        missing = args.target and L.device_missing(args.tcc, args.target, work)
        if missing:
            print('no device for %s (%s): compile and inspect only' % (args.target, missing))
        prep = reference(xs[0], w, s, b)['r'].astype(np.float32)
        pm = compile_model(args, prepared_model(prep, b, np.exp(b)), os.path.join(work, 'prep'))
        want = len([l for l in pm['launches'] if 'kernel' in l])
        for label, extra in (('embedded', []), ('recipes kept', ['--param-recipes=keep'])):
            path = os.path.join(work, 'm%d' % len(extra))
            m = compile_model(args, model(w, b), path, *extra)
            check(m['format_version'] == 3 and len(m.get('init_launches', [])) > 0,
                  '%s: manifest version 3 with init launches' % label)
            run_k = {l['kernel'] for l in m['launches'] if 'kernel' in l}
            init_k = {l['kernel'] for l in m.get('init_launches', []) if 'kernel' in l}
            ops = lambda ks: {o for k in ks for o in m['kernels'][k].get('ops', [])}  # noqa: E731
            check(not ops(run_k) & {'tcc.transpose', 'tcc.exp'} and
                  {'tcc.transpose', 'tcc.exp'} <= ops(init_k),
                  '%s: transpose and exp run in init kernels only' % label)
            got = len([l for l in m['launches'] if 'kernel' in l])
            check(got == want, '%s: %d kernel launches a run, as with the derived params '
                  'given (%d)' % (label, got, want))
            check(any(b_['kind'] == 'derived' for b_ in m['buffers']),
                  '%s: derived buffers' % label)

            if missing:
                continue
            args_ = [args.tcc, 'run', path + '.tccb', '--output-dir', work]
            np.save(os.path.join(work, 'x.npy'), xs[0])
            args_ += ['--input', 'x=' + os.path.join(work, 'x.npy')]
            status, _, err = L.run_tcc(args_)
            check(status == 0, '%s: tcc run (%s)' % (label, L.first_line(err)))
            if status == 0:
                for n in ('y', 'z', 'r', 'v'):
                    ok, e = close(np.load(os.path.join(work, n + '.npy')).astype(np.float64),
                                  refs[0][n])
                    check(ok, '%s: tcc run, %s against NumPy (error %.3g)' % (label, n, e))
            api_runs(args, path + '.tccb', xs, refs, label)
        if args.cc and args.include and not args.target:
            lib_check(args, work, model(w, b), xs[1], refs[1])

    print('%d failed' % len(FAILS))
    if FAILS:
        return 1
    return L.SKIP if missing and args.skip_without_device else 0


if __name__ == '__main__':
    sys.exit(main())
