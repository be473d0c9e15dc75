#!/usr/bin/env python3
"""`tcc compile --emit lib` writes C that is safe for any name the format
allows, and refuses library names that would shadow the runtime.

A model whose tensor names hold "*/", quotes, backslashes
non-ASCII text and a trigraph is emitted as a library; a C program that includes the
header and links the archive with libtccrt must compile with -Werror, and no
name may end the header's comment (a name carrying `*/ int injected;` must
not declare anything). `-o DIR/tccrt` (a header that would shadow tccrt.h)
and `-o DIR/tccrt_x` (functions in the runtime's namespace) exit 1 with one
line and write nothing.

usage: emit_lib_test.py TCC CC RUNTIME_INCLUDE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

TCC, CC, INCLUDE = sys.argv[1:4]
failures = []
passed = 0


def check(cond, what):
    global passed
    print(('PASS ' if cond else 'FAIL ') + what)
    if cond:
        passed += 1
    else:
        failures.append(what)


HOSTILE = 'x */ int injected = 1; /* \u00e9 "q" ??/ \\'
model = {
    'format': 'tcc-model', 'version': 1, 'name': 'hostile_names',
    'inputs': [{'name': HOSTILE, 'dtype': 'f32', 'shape': [4]}],
    'params': [],
    'nodes': [{'op': 'exp', 'inputs': [HOSTILE], 'outputs': ['y */ #error bad']}],
    'outputs': ['y */ #error bad'],
}

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, 'model.json')
    with open(path, 'w') as f:
        json.dump(model, f)
    out = os.path.join(d, 'lib', 'hostile')
    os.makedirs(os.path.dirname(out))
    r = subprocess.run([TCC, 'compile', path, '--emit', 'lib', '-o', out],
                       capture_output=True, text=True)
    check(r.returncode == 0, 'hostile names: --emit lib exit 0 (%s)' % r.stderr.strip()[:200])
    header = os.path.join(d, 'lib', 'hostile.h')
    if os.path.exists(header):
        main = os.path.join(d, 'main.c')
        with open(main, 'w') as f:
            f.write('#include "hostile.h"\n'
                    'int main(void) { return hostile_bundle_size > 0 ? 0 : 1; }\n')
        r = subprocess.run([CC, '-std=c99', '-Wall', '-Werror', '-c', main, '-I',
                            os.path.dirname(header), '-I', INCLUDE, '-o',
                            os.path.join(d, 'main.o')], capture_output=True, text=True)
        check(r.returncode == 0, 'the header compiles as C99 with -Werror (%s)'
              % r.stderr.strip()[:300])
        # Only the comment may hold the names: the preprocessed header
        # declares nothing the names spelled.
        r = subprocess.run([CC, '-E', '-P', header, '-I', INCLUDE], capture_output=True, text=True)
        check(r.returncode == 0 and 'injected' not in r.stdout,
              'no name escapes the comment')

    for name in ('tccrt', 'tccrt_model', 'TCCRT'):
        target = os.path.join(d, 'r', name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        r = subprocess.run([TCC, 'compile', path, '--emit', 'lib', '-o', target],
                           capture_output=True, text=True)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == 1 and len(lines) == 1 and 'reserved' in r.stderr
              and not os.listdir(os.path.dirname(target)),
              '-o .../%s: exit 1, one line, nothing written (exit %d: %s)'
              % (name, r.returncode, r.stderr.strip()[:200]))

print('%d passed, %d failed' % (passed, len(failures)))
sys.exit(1 if failures else 0)
