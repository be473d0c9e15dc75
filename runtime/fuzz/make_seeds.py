"""Writes the seed corpora of the runtime fuzzers (no binary files are kept
in the repository).

usage: make_seeds.py BUNDLE_DIR NPY_DIR

Bundle seeds start with the fuzzer's mode byte (runtime/fuzz/BundleFuzzer.cpp):
0 and 1 are followed by a whole bundle in the layout of docs/bundle-format.md,
2 by a manifest, a NUL and one blob's bytes. NPY seeds are np.save files.
"""
import io
import json
import os
import struct
import sys

import numpy as np


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def bundle(manifest, blobs):
    body = bytearray(64)
    table = []
    for name, data in blobs:
        body += bytes(-len(body) % 64)
        table.append({"name": name, "offset": len(body), "size": len(data),
                      "fnv1a64": "%016x" % fnv1a64(data)})
        body += data
    body += bytes(-len(body) % 64)
    text = json.dumps(dict(manifest, blobs=table)).encode()
    moff = len(body)
    body += text
    header = struct.pack("<8sIIQQQQQ", b"TCCBUNDL", 1, 0, moff, len(text),
                         fnv1a64(text), len(body), 0)
    body[0:64] = header + struct.pack("<Q", fnv1a64(header))
    return bytes(body)


def tensor(name, dtype, shape, buf):
    return {"name": name, "dtype": dtype, "shape": shape, "buffer": buf}


def base(**fields):
    m = {"format_version": 1, "model": "seed", "targets": ["host"],
         "inputs": [], "outputs": [], "params": [], "buffers": [],
         "arena_bytes": 0, "kernels": [], "code": [], "launches": []}
    m.update(fields)
    return m


# y = copy of x, z = param w, a temp in the arena between them.
copy = base(
    inputs=[tensor("x", "f32", [2, 3], 0)],
    outputs=[tensor("y", "f32", [2, 3], 1), tensor("z", "i64", [2], 2)],
    params=[dict(tensor("w", "i64", [2], 3), blob="param.w")],
    status=[{"buffer": 5, "message": "index out of range in /nodes/0 (gather)"}],
    buffers=[{"id": 0, "kind": "input", "bytes": 24},
             {"id": 1, "kind": "output", "bytes": 24},
             {"id": 2, "kind": "output", "bytes": 16},
             {"id": 3, "kind": "param", "bytes": 16},
             {"id": 4, "kind": "temp", "bytes": 24, "offset": 0},
             {"id": 5, "kind": "temp", "bytes": 4, "offset": 64}],
    arena_bytes=128,
    launches=[{"copy": {"src": 0, "dst": 4, "bytes": 24}},
              {"copy": {"src": 4, "dst": 1, "bytes": 24}},
              {"copy": {"src": 3, "dst": 2, "bytes": 16}}])
w = np.array([3, -1], np.int64).tobytes()
# Params as recipes (manifest version 2), computed at load.
recipes = dict(copy, format_version=2, params=[
    dict(tensor("w", "i64", [2], 3), init={"fill": "0xfffffffffffffffe"})],
    inputs=[], launches=[{"copy": {"src": 3, "dst": 2, "bytes": 16}},
                         {"copy": {"src": 6, "dst": 1, "bytes": 24}}])
recipes["params"].append(dict(tensor("r", "f32", [2, 3], 6),
                              init={"random": "normal", "mean": 0.0,
                                    "std": 0.5, "seed": 3}))
recipes["buffers"] = [b for b in copy["buffers"] if b["id"] != 0] + [
    {"id": 6, "kind": "param", "bytes": 24}]
# Init launches (manifest version 3): w copied once, through a temp, into a
# derived buffer that the run copies out.
init = dict(copy, format_version=3,
            buffers=copy["buffers"] + [{"id": 7, "kind": "derived", "bytes": 16}],
            init_launches=[{"copy": {"src": 3, "dst": 4, "bytes": 16}},
                           {"copy": {"src": 4, "dst": 7, "bytes": 16}}],
            launches=copy["launches"][:2] + [{"copy": {"src": 7, "dst": 2, "bytes": 16}}])
# A model with a host kernel and a GPU one: parsed and validated only.
coded = base(
    targets=["host", "sm_90"],
    inputs=[tensor("a", "bf16", [4], 0)], outputs=[tensor("b", "f16", [4], 1)],
    buffers=[{"id": 0, "kind": "input", "bytes": 8},
             {"id": 1, "kind": "output", "bytes": 8}],
    kernels=[{"name": "k", "symbol": "k", "code": "b", "kind": "elementwise",
              "ops": ["tcc.add"]},
             {"name": "g", "symbol": "g", "code": "p", "shared_bytes": 1024}],
    code=[{"target": "host", "blob": "b", "format": "so"},
          {"target": "sm_90", "blob": "p"}],
    launches=[{"kernel": 0, "args": [0, 1], "grid": 4},
              {"kernel": 1, "args": [0, 1], "grid": [1, 1, 1],
               "block": [128, 1, 1]}])
# Tensor maps (manifest version 4) on a CUDA launch: parsed and validated
# only (a host context refuses sm_90 code).
tma = dict(coded, format_version=4, targets=["sm_90"],
           inputs=[tensor("a", "bf16", [5, 24], 0)],
           outputs=[tensor("b", "f16", [8, 8], 1)],
           buffers=[{"id": 0, "kind": "input", "bytes": 240},
                    {"id": 1, "kind": "output", "bytes": 128}],
           kernels=[coded["kernels"][1]], code=[coded["code"][1]],
           launches=[{"kernel": 0, "args": [1], "grid": [2, 1, 1],
                      "block": [128, 1, 1],
                      "tensor_maps": [{"buffer": 0, "dtype": "bf16",
                                       "dims": [24, 5], "strides": [48],
                                       "box": [8, 4], "swizzle": "none"}]}])


def main():
    bundles, npys = sys.argv[1:3]
    os.makedirs(bundles, exist_ok=True)
    os.makedirs(npys, exist_ok=True)
    seeds = {
        "copy": bundle(copy, [("param.w", w)]),
        "empty": bundle(base(), []),
        "recipes": bundle(recipes, []),
        "init": bundle(init, [("param.w", w)]),
        "coded": bundle(coded, [("b", b"\x7fELF" + bytes(60)),
                                ("p", b".version 8.0\n")]),
        "tma": bundle(tma, [("p", b".version 8.0\n")]),
    }
    for name, data in seeds.items():
        for mode in (0, 1):
            with open(os.path.join(bundles, f"{name}-{mode}"), "wb") as f:
                f.write(bytes([mode]) + data)
    for name, (m, blob) in {"copy": (copy, w), "coded": (coded, b"x"),
                            "tma": (tma, b".version 8.0\n")}.items():
        m = dict(m)
        if name == "copy":
            m["params"] = [dict(m["params"][0], blob="b")]
        elif name == "tma":
            m["code"] = [dict(m["code"][0], blob="b")]
            m["kernels"] = [dict(m["kernels"][0], code="b")]
        else:
            m["code"] = [{"target": "host", "blob": "b"}]
            m["kernels"] = m["kernels"][:1]
            m["launches"] = m["launches"][:1]
        with open(os.path.join(bundles, f"{name}-2"), "wb") as f:
            f.write(b"\x02" + json.dumps(m).encode() + b"\0" + blob)

    arrays = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f64": np.array([1.5, -2.0]),
        "f16": np.ones((1, 2, 2), np.float16),
        "i8": np.array([-1, 2, 3], np.int8),
        "i32": np.array([[7]], np.int32),
        "i64": np.array([0, 5, 2, 1], np.int64),
        "bool": np.array([True, False]),
        "scalar": np.float32(3.0),
        "empty": np.zeros((0, 4), np.float32),
        "fortran": np.asfortranarray(np.ones((3, 2), np.float32)),
        "big-endian": np.array([1, 2], ">i4"),
    }
    for name, a in arrays.items():
        np.save(os.path.join(npys, name + ".npy"), a)
    # A version 2.0 header.
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.arange(3, dtype=np.int32), version=(2, 0))
    with open(os.path.join(npys, "v2.npy"), "wb") as f:
        f.write(buf.getvalue())


if __name__ == "__main__":
    main()
