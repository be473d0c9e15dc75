#!/usr/bin/env python3
"""Static checks of PTX that need no GPU.

Vector accesses to a named shared or global array, `ld.shared.v4.b32 {..},
[sym+16]`, must be aligned: the array's declared `.align` and the constant
offset must both be multiples of the access's width. A violation faults at
run time (CUDA_ERROR_MISALIGNED_ADDRESS) and kills the context, so it is
checked on every PTX the compiler writes.

usage: ptx_lint.py TCC    compiles rows of many lengths for sm_90 and sm_90a
                          and checks their PTX (a ctest)
       ptx_lint.py --file F.ptx ...   checks the given PTX files
"""
import json
import os
import re
import subprocess
import sys
import tempfile

DECL = re.compile(r'^\s*\.(shared|global|const)\s+\.align\s+(\d+)\s+\.\w+\s+([\w$.]+)\s*\[', re.M)
ACCESS = re.compile(r'\b(ld|st)\.(shared|global|const)(?:\.[\w:]+)*?\.v(\d)\.[bfsu](\d+)\s+'
                    r'(?:\{[^}]*\},\s*)?\[([\w$.]+)(?:\+(\d+))?\]')


def lint(ptx):
    """The misaligned vector accesses of one PTX text, as messages."""
    aligns = {name: int(a) for _, a, name in DECL.findall(ptx)}
    problems = []
    for m in ACCESS.finditer(ptx):
        op, space, lanes, bits, sym, off = m.groups()
        if sym not in aligns:
            continue   # a register address: nothing is known statically
        width = int(lanes) * int(bits) // 8
        off = int(off or 0)
        if aligns[sym] % width or off % width:
            problems.append('%s.%s of %d bytes at %s+%d, declared .align %d'
                            % (op, space, width, sym, off, aligns[sym]))
    return problems


def rows_model():
    """Softmax, log-softmax and layer norm over rows of many lengths, so
    row kernels of every warp count (1..32) appear."""
    inputs, nodes, outputs = [], [], []
    for i, n in enumerate((3, 33, 100, 161, 300, 333, 700, 1001, 3001, 5003)):
        for dt in ('f32', 'bf16'):
            x = 'x%d_%s' % (i, dt)
            inputs.append({'name': x, 'dtype': dt, 'shape': [3, n]})
            for op in ('softmax', 'log_softmax', 'layer_norm'):
                y = '%s_%s' % (op, x)
                nodes.append({'op': op, 'inputs': [x], 'outputs': [y], 'attrs': {}})
                outputs.append(y)
    return {'format': 'tcc-model', 'version': 1, 'name': 'rows', 'inputs': inputs,
            'params': [], 'nodes': nodes, 'outputs': outputs}


def main():
    if sys.argv[1:2] == ['--file']:
        bad = 0
        for f in sys.argv[2:]:
            for p in lint(open(f).read()):
                print('%s: %s' % (f, p))
                bad += 1
        return 1 if bad else 0
    tcc = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    models = [os.path.join(root, 'tests/e2e/models', m)
              for m in ('gqa_decode_f32.json', 'cross_entropy_f32.json')]
    failed = passed = 0
    with tempfile.TemporaryDirectory() as d:
        rows = os.path.join(d, 'rows.json')
        with open(rows, 'w') as f:
            json.dump(rows_model(), f)
        for target in ('sm_90', 'sm_90a'):
            for m in [rows] + models:
                ptx = os.path.join(d, 'out.ptx')
                r = subprocess.run([tcc, 'compile', m, '--target', target, '--emit', 'asm',
                                    '-o', ptx], capture_output=True, text=True)
                name = '%s %s' % (os.path.basename(m), target)
                if r.returncode != 0:
                    print('FAIL %s: compile exit %d: %s' % (name, r.returncode, r.stderr.strip()[:300]))
                    failed += 1
                    continue
                text = open(ptx).read()
                problems = lint(text)
                vectors = len(ACCESS.findall(text))
                if problems:
                    failed += 1
                    print('FAIL %s: %s' % (name, '; '.join(problems[:5])))
                else:
                    passed += 1
                    print('PASS %s (%d named vector accesses)' % (name, vectors))
    # The lint itself must catch the fault it exists for.
    bad = ('.shared .align 4 .b8 wg[40];\n'
           'ld.shared.v4.b32 {%r1, %r2, %r3, %r4}, [wg+16];\n')
    if lint(bad) and not lint(bad.replace('.align 4', '.align 16')):
        passed += 1
    else:
        failed += 1
        print('FAIL the lint misses a misaligned ld.shared.v4')
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
