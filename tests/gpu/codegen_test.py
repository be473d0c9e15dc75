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


def check_schedule(args, work):
    """--schedule changes the matmul template's tiles; a bad file is refused."""
    model = os.path.join(work, 'mm.json')
    with open(model, 'w') as f:
        json.dump({'format': 'tcc-model', 'version': 1, 'name': 'mm',
                   'inputs': [{'name': 'a', 'dtype': 'bf16', 'shape': [512, 256]},
                              {'name': 'b', 'dtype': 'bf16', 'shape': [256, 384]}],
                   'params': [], 'outputs': ['c'],
                   'nodes': [{'op': 'matmul', 'inputs': ['a', 'b'], 'outputs': ['c']}]}, f)
    bundle = os.path.join(work, 'mm.tccb')
    grids = {}
    for tile in (64, 128):
        sched = os.path.join(work, 's.json')
        with open(sched, 'w') as f:
            json.dump({'matmul': {'tile_m': tile, 'tile_n': tile}}, f)
        p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', 'sm_90',
                            '--schedule', sched], capture_output=True, text=True)
        if p.returncode != 0:
            return 'compile with --schedule failed: ' + p.stderr.strip()
        manifest, _ = blobs(bundle)
        grids[tile] = [l['grid'] for l in manifest['launches'] if 'grid' in l]
    # 512x384 in 64x64 tiles is 8*6 = 48 blocks; in 128x128 tiles, 4*3 = 12.
    if grids[64] != [[48, 1, 1]] or grids[128] != [[12, 1, 1]]:
        return 'unexpected grids %s' % grids
    with open(sched, 'w') as f:
        json.dump({'matmul': {'tile_m': 65}}, f)
    p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', 'sm_90',
                        '--schedule', sched], capture_output=True, text=True)
    if p.returncode != 1 or len(p.stderr.strip().splitlines()) != 1 or \
            'power' not in p.stderr:
        return 'bad schedule: exit %d, %r' % (p.returncode, p.stderr)
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
        err = check_schedule(args, work)
        print('%s --schedule%s' % ('FAIL' if err else 'PASS', ' -- ' + err if err else ''))
        failed += bool(err)
    print('%d failed' % failed)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
