#!/usr/bin/env python3
"""--target and --cpu at the command line (no GPU needed).

    target_cli_test.py TCC

Unsupported, unknown and malformed targets and CPUs are one-line errors with
exit status 1 (never an LLVM abort); `--cpu native` compiles and runs; a host
bundle records its CPU and x86 features, and one compiled for a CPU with
features this machine lacks is refused at load in one line naming them.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

MODEL = {'format': 'tcc-model', 'version': 1, 'name': 'm',
         'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [4, 64]}],
         'params': [], 'outputs': ['y'],
         'nodes': [{'op': 'tanh', 'inputs': ['x'], 'outputs': ['t']},
                   {'op': 'softmax', 'inputs': ['t'], 'outputs': ['y'],
                    'attrs': {'axis': -1}}]}

# Features of AMD's Bulldozer family (bdver4) that no later x86 CPU has.
BULLDOZER_ONLY = ('fma4', 'tbm', 'xop')


def manifest(bundle):
    with open(bundle, 'rb') as f:
        data = f.read()
    offset, size = struct.unpack_from('<QQ', data, 16)
    return json.loads(data[offset:offset + size])


def cpu_flags():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('flags'):
                    return set(line.split(':', 1)[1].split())
    except OSError:
        pass
    return set()


def main():
    tcc = sys.argv[1]
    failed = 0

    def check(name, ok, detail=''):
        nonlocal failed
        print('%s %s%s' % ('PASS' if ok else 'FAIL', name, '' if ok else ' -- ' + detail),
              flush=True)
        failed += not ok

    def one_line_error(p, *words):
        err = p.stderr.strip()
        return (p.returncode == 1 and len(err.splitlines()) == 1 and
                'LLVM ERROR' not in err and all(w in err for w in words))

    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, 'm.json')
        with open(model, 'w') as f:
            json.dump(MODEL, f)
        bundle = os.path.join(work, 'm.tccb')

        def tcc_run(*args):
            return subprocess.run([tcc] + list(args), capture_output=True, text=True)

        # Targets: sm_75 (cp.async would abort LLVM), malformed and unknown.
        for t, words in (('sm_75', ('sm_80 or later',)), ('sm_70', ('sm_80 or later',)),
                         ('sm_9x', ('unknown target',)), ('gfx1100', ('not supported',)),
                         ('gfx94', ('not supported',)), ('cuda', ('unknown target',))):
            for cmd in ('compile', 'run'):
                args = [cmd, model, '--target', t] + (['-o', bundle] if cmd == 'compile' else [])
                p = tcc_run(*args)
                check('%s --target %s' % (cmd, t),
                      one_line_error(p, "'%s'" % t, 'supported: host, sm_80', 'gfx942', *words),
                      'exit %d: %r' % (p.returncode, p.stderr))
        # Programmatic dependent launch: every kernel of an sm_90 bundle waits
        # for its predecessor's grid (the PTX read back says so); none on
        # sm_80, none with --grid-dependency off; an unknown mode is refused.
        for t, mode, want in (('sm_90a', None, True), ('sm_90', 'early', True),
                              ('sm_80', None, False), ('sm_90a', 'off', False)):
            extra = ['--grid-dependency', mode] if mode else []
            p = tcc_run('compile', model, '-o', bundle, '--target', t, *extra)
            kernels = manifest(bundle)['kernels'] if p.returncode == 0 else []
            marks = [k.get('grid_dependency', False) for k in kernels]
            check('%s --grid-dependency %s marks kernels: %s' % (t, mode, want),
                  bool(kernels) and all(m == want for m in marks), p.stderr + str(marks))
            ptx = os.path.join(work, 'm.ptx')
            p = tcc_run('compile', model, '-o', ptx, '--emit', 'asm', '--target', t, *extra)
            text = open(ptx).read() if p.returncode == 0 else ''
            check('%s --grid-dependency %s PTX' % (t, mode),
                  p.returncode == 0 and (text.count('griddepcontrol.wait') > 0) == want and
                  ('griddepcontrol.launch_dependents' in text) == (mode == 'early'),
                  p.stderr)
        p = tcc_run('compile', model, '-o', bundle, '--target', 'sm_90', '--grid-dependency',
                    'later')
        check('--grid-dependency later is refused',
              one_line_error(p, "--grid-dependency must be early, exit or off, not 'later'"),
              'exit %d: %r' % (p.returncode, p.stderr))
        # --serial-launches changes nothing where no kernel waits (the host).
        p = tcc_run('compile', model, '-o', bundle)
        p = tcc_run('run', bundle, '--serial-launches', '--output-dir', work)
        check('run --serial-launches on the host', p.returncode == 0, p.stderr)
        # CPUs: unknown names are refused before anything is compiled.
        for c in ('pentium9', 'sm_90', ''):
            p = tcc_run('compile', model, '-o', bundle, '--cpu', c)
            check('--cpu %r' % c, one_line_error(p, "unknown --cpu '%s'" % c),
                  'exit %d: %r' % (p.returncode, p.stderr))
        # native: this machine's CPU; the bundle runs here.
        p = tcc_run('compile', model, '-o', bundle, '--cpu', 'native')
        check('--cpu native compiles', p.returncode == 0, p.stderr)
        if p.returncode == 0:
            code = manifest(bundle)['code'][0]
            check('--cpu native names a CPU',
                  code.get('cpu') not in (None, '', 'native') and 'sse2' in code['cpu_features'],
                  str(code))
            p = tcc_run('run', bundle, '--output-dir', work)
            check('--cpu native runs here', p.returncode == 0, p.stderr)
        # The default baseline records x86-64-v2's features, not AVX.
        p = tcc_run('compile', model, '-o', bundle)
        code = manifest(bundle)['code'][0] if p.returncode == 0 else {}
        features = code.get('cpu_features', [])
        check('default --cpu is recorded',
              code.get('cpu') == 'x86-64-v2' and 'sse4.2' in features and
              'popcnt' in features and 'avx' not in features, str(code))
        p = tcc_run('compile', model, '-o', bundle, '--cpu', 'x86-64-v4')
        features = manifest(bundle)['code'][0].get('cpu_features', []) if p.returncode == 0 else []
        check('x86-64-v4 records AVX-512',
              all(f in features for f in ('avx2', 'avx512f', 'avx512bw', 'avx512vl')),
              str(features))
        # A bundle for a CPU with features this one lacks: refused at load.
        have = cpu_flags()
        p = tcc_run('compile', model, '-o', bundle, '--cpu', 'bdver4')
        check('--cpu bdver4 compiles', p.returncode == 0, p.stderr)
        if any(f in have for f in BULLDOZER_ONLY):
            print('note: this CPU has Bulldozer features; the refusal is not checked')
        elif p.returncode == 0:
            p = tcc_run('run', bundle, '--output-dir', work)
            check('a bdver4 bundle is refused here',
                  one_line_error(p, 'bdver4', 'lacks', *BULLDOZER_ONLY),
                  'exit %d: %r' % (p.returncode, p.stderr))
    print('%d failed' % failed)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
