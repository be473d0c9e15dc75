#!/usr/bin/env python3
"""Every example compiled for every GPU target, the code checked without a GPU.

    codegen_test.py TCC [--ptxas PTXAS] [--readobj LLVM_READOBJ] MODEL.json...

For sm_90 and sm_80 the bundle's PTX must hold an `.entry` for each kernel of
the manifest and be accepted by ptxas for that architecture (when the CUDA
toolkit is installed; said otherwise). For gfx942 and gfx90a the bundle's
HSA code object must be an AMDGPU ELF, for that processor, with a kernel
descriptor (`SYMBOL.kd`) for each kernel of the manifest.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

NVIDIA = ('sm_90', 'sm_80')
AMD = ('gfx942', 'gfx90a')


def blobs(bundle):
    """The manifest and the blobs of a bundle file (format version 1)."""
    with open(bundle, 'rb') as f:
        data = f.read()
    assert data[:8] == b'TCCBUNDL', 'not a bundle'
    offset, size = struct.unpack_from('<QQ', data, 16)
    manifest = json.loads(data[offset:offset + size])
    return manifest, {b['name']: data[b['offset']:b['offset'] + b['size']]
                      for b in manifest['blobs']}


def check(args, model, target, work):
    name = os.path.basename(model)
    bundle = os.path.join(work, 'b.tccb')
    p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', target],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return 'compile failed: ' + p.stderr.strip()
    manifest, data = blobs(bundle)
    code = manifest['code']
    if len(code) != 1 or code[0]['target'] != target:
        return 'manifest code entry is %s' % code
    blob = data[code[0]['blob']]
    symbols = {k['symbol'] for k in manifest['kernels']}
    if not symbols:
        return 'no kernels'
    if target in NVIDIA:
        if code[0].get('format') != 'ptx':
            return 'format %s, expected ptx' % code[0].get('format')
        ptx = blob.decode()
        missing = [s for s in symbols if '.entry %s(' % s not in ptx]
        if missing:
            return 'PTX lacks entries %s' % missing
        if '.target %s' % target not in ptx:
            return 'PTX is not for %s' % target
        if args.ptxas:
            path = os.path.join(work, 'k.ptx')
            with open(path, 'w') as f:
                f.write(ptx)
            p = subprocess.run([args.ptxas, '-arch=' + target, path, '-o', os.devnull],
                               capture_output=True, text=True)
            if p.returncode != 0:
                return 'ptxas: ' + p.stderr.strip()[:500]
        return None
    if code[0].get('format') != 'hsaco':
        return 'format %s, expected hsaco' % code[0].get('format')
    path = os.path.join(work, 'k.hsaco')
    with open(path, 'wb') as f:
        f.write(blob)
    p = subprocess.run([args.readobj, '--file-headers', '--symbols', path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return 'llvm-readobj: ' + p.stderr.strip()
    out = p.stdout
    if 'EM_AMDGPU' not in out:
        return 'not an AMDGPU ELF'
    if 'EF_AMDGPU_MACH_AMDGCN_%s' % target.upper() not in out:
        return 'code object is not for %s' % target
    missing = [s for s in symbols if 'Name: %s.kd' % s not in out]
    if missing:
        return 'no kernel descriptors for %s' % missing
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('tcc')
    ap.add_argument('models', nargs='+')
    ap.add_argument('--ptxas')
    ap.add_argument('--readobj', required=True)
    args = ap.parse_args()
    if not args.ptxas:
        print('note: no ptxas (CUDA toolkit): PTX is checked for its entries only')
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        for model in args.models:
            for target in NVIDIA + AMD:
                err = check(args, model, target, work)
                print('%s %s %s%s' % ('FAIL' if err else 'PASS', os.path.basename(model),
                                      target, ' -- ' + err if err else ''), flush=True)
                failed += bool(err)
    print('%d failed' % failed)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
