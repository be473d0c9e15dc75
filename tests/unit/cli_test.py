"""End-to-end test of `tcc run|bench|inspect` on bundles written here.

The bundles come from an independent writer of docs/bundle-format.md (below),
the kernels from the system C compiler, the references from NumPy.

usage: cli_test.py TCC CC MODE     (MODE: runtime-only or full)
"""
import json
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

TCC, CC, MODE = sys.argv[1:4]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def write_bundle(path, manifest, blobs):
    """The documented layout: header, 64-aligned blobs, manifest last."""
    body = bytearray(64)
    table = []
    for name, data in blobs:
        body += bytes(-len(body) % 64)
        table.append({"name": name, "offset": len(body), "size": len(data),
                      "fnv1a64": "%016x" % fnv1a64(data)})
        body += data
    body += bytes(-len(body) % 64)
    manifest = dict(manifest, blobs=table)
    text = json.dumps(manifest).encode()
    moff = len(body)
    body += text
    header = struct.pack("<8sIIQQQQQ", b"TCCBUNDL", 1, 0, moff, len(text),
                         fnv1a64(text), len(body), 0)
    body[0:64] = header + struct.pack("<Q", fnv1a64(header))
    with open(path, "wb") as f:
        f.write(body)
    return manifest


def tcc(*args, limit_as=None, timeout=120):
    """Runs tcc; limit_as caps its address space (ulimit -v, in bytes). A
    command that hangs (e.g. on a FIFO) fails the test instead."""
    def preexec():
        if limit_as is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
    try:
        p = subprocess.run([TCC, *args], capture_output=True, text=True,
                           preexec_fn=preexec, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "", f"timed out after {timeout} s"
    return p.returncode, p.stdout, p.stderr


def one_error_line(rc, err, what, contains=None, usage=False):
    check(rc == 1, f"{what}: exit status {rc}, expected 1")
    if usage and MODE == "full":
        # The full driver's flags are LLVM's, which word usage errors its way.
        check(err.strip() != "", f"{what}: no message")
        return
    lines = [l for l in err.splitlines() if "error" in l]
    check(len(lines) >= 1, f"{what}: no error line in {err!r}")
    if contains is not None:
        check(any(contains in l for l in lines),
              f"{what}: {contains!r} not in {err!r}")


KERNELS = r"""
#include <math.h>
#include <stdint.h>
void exp_mul(void **a, int64_t b, int64_t e) {
  const float *x = a[0], *w = a[1]; float *y = a[2];
  for (int64_t i = b; i < e; ++i) y[i] = expf(x[i]) * w[i] + 1.0f;
}
void gather(void **a, int64_t b, int64_t e) {
  const float *d = a[0]; const int64_t *idx = a[1]; float *o = a[2];
  int32_t *status = a[3];
  for (int64_t i = b; i < e; ++i) {
    int64_t j = idx[i];
    if (j < 0 || j >= 6) { __atomic_fetch_add(status, 1, __ATOMIC_RELAXED); j = 0; }
    o[i] = d[j];
  }
}
"""


def tensor(name, dtype, shape, buf):
    return {"name": name, "dtype": dtype, "shape": shape, "buffer": buf}


def copy_model(n, name_in="x", name_out="y"):
    """y = x for f32 tensors of n elements: no kernels."""
    return {
        "format_version": 1, "model": "copy", "targets": ["host"],
        "inputs": [tensor(name_in, "f32", [n], 0)],
        "outputs": [tensor(name_out, "f32", [n], 1)], "params": [],
        "buffers": [{"id": 0, "kind": "input", "bytes": 4 * n},
                    {"id": 1, "kind": "output", "bytes": 4 * n}],
        "arena_bytes": 0, "kernels": [], "code": [],
        "launches": [{"copy": {"src": 0, "dst": 1, "bytes": 4 * n}}],
    }


def special_files(p):
    """Devices, FIFOs and folders are refused at once, never read or waited
    for (the full tcc used to read /dev/zero until it held 6 GB)."""
    os.mkfifo(p("fifo"))
    for path in ("/dev/zero", p("fifo"), p()):
        for cmd in ("run", "bench", "inspect"):
            rc, _, err = tcc(cmd, path, timeout=60)
            one_error_line(rc, err, f"{cmd} {path}", "not a regular file")
    write_bundle(p("c.tccb"), copy_model(4), [])
    for path in ("/dev/zero", p("fifo")):
        rc, _, err = tcc("run", p("c.tccb"), "--input", "x=" + path,
                         "--output-dir", p("c"), timeout=60)
        one_error_line(rc, err, f"--input {path}", "not a regular file")
        check(not os.path.exists(p("c", "y.npy")), "no output after a bad input")


def names_with_equals(p):
    """An input called "a=b" and a file called "c=d.npy"."""
    write_bundle(p("eq.tccb"), copy_model(3, "a=b", "o=ut"), [])
    np.save(p("c=d.npy"), np.array([1, 2, 3], np.float32))
    rc, _, err = tcc("run", p("eq.tccb"), "--input", "a=b=" + p("c=d.npy"),
                     "--output-dir", p("eq"))
    check(rc == 0, f"input name with '=': {err}")
    if rc == 0:
        check(np.array_equal(np.load(p("eq", "o_ut.npy")),
                             np.array([1, 2, 3], np.float32)), "a=b copied")


def out_of_memory(p):
    """Out of memory is one error line in both CLIs, never an abort (the full
    tcc used to die with "LLVM ERROR: out of memory" and a stack dump).
    Under a 2 GiB address space (ulimit -v): a model larger than what is
    left is refused at load with the figures, which tell how much is left,
    A; then a copy model of 2B = A / 1.75 passes that check, but staging and
    writing its output (about 4B) runs out of memory part-way; a bundle file
    larger than the limit cannot even be read."""
    limit = 2 << 30
    write_bundle(p("huge.tccb"), copy_model(1 << 40), [])  # 4 TiB each way
    rc, _, err = tcc("run", p("huge.tccb"), "--output-dir", p("huge"),
                     limit_as=limit)
    one_error_line(rc, err, "huge model under ulimit -v", "model needs 8192.00 GiB")
    m = re.search(r"has only [0-9.]+ GiB \(([0-9]+) bytes\) of address space "
                  r"left under the process limit", err)
    check(m is not None, f"the address space left is reported: {err!r}")
    if m:
        n = int(int(m.group(1)) / 3.5) // 4
        write_bundle(p("big.tccb"), copy_model(n), [])
        rc, _, err = tcc("run", p("big.tccb"), "--output-dir", p("big"),
                         limit_as=limit)
        one_error_line(rc, err, "out of memory while running")
        check("LLVM ERROR" not in err and "Stack dump" not in err,
              f"out of memory: no LLVM abort: {err!r}")
        check(not os.path.exists(p("big", "y.npy")), "no output after OOM")
        check(not os.path.exists(p("big")) or os.listdir(p("big")) == [],
              "no temp files after OOM")
    with open(p("sparse.tccb"), "wb") as f:
        f.write(b"TCCBUNDL")
        f.truncate(3 << 30)
    rc, _, err = tcc("run", p("sparse.tccb"), limit_as=limit)
    one_error_line(rc, err, "bundle larger than memory",
                   "cannot allocate 3221225472 bytes to read it")
    for cmd in ("run", "bench"):
        rc, _, err = tcc(cmd, p("huge.tccb"))
        one_error_line(rc, err, f"{cmd} huge model", "model needs 8192.00 GiB")


def concurrent_compiles(p):
    """Two compiles to one -o path leave one whole bundle, no temp files."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    models = [os.path.join(root, "examples", m)
              for m in ("softmax.json", "layer_norm.json")]
    os.makedirs(p("cc"))
    procs = [subprocess.Popen([TCC, "compile", m, "-o", p("cc", "out.tccb")],
                              stderr=subprocess.PIPE, text=True)
             for m in models for _ in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        check(proc.returncode == 0, f"concurrent compile: {err}")
    rc, out, err = tcc("inspect", p("cc", "out.tccb"))
    check(rc == 0, f"concurrent compiles left a valid bundle: {err}")
    check(os.listdir(p("cc")) == ["out.tccb"],
          f"no temp files: {os.listdir(p('cc'))}")


def main():
    tmp = tempfile.mkdtemp(prefix="tcc-cli-")
    p = lambda *names: os.path.join(tmp, *names)
    with open(p("k.c"), "w") as f:
        f.write(KERNELS)
    subprocess.run([CC, "-O2", "-fPIC", "-shared", "-o", p("k.so"), p("k.c")],
                   check=True)
    so = open(p("k.so"), "rb").read()
    rng = np.random.default_rng(0)

    # y = exp(x) * w + 1 (kernel), q: bf16 copy, h: f16 copy, x/copy.
    n = 257
    w = rng.uniform(-2, 2, n).astype(np.float32)
    manifest = {
        "format_version": 1, "model": "cli", "targets": ["host"],
        "inputs": [tensor("x", "f32", [n], 0), tensor("q", "bf16", [3, 5], 1),
                   tensor("h", "f16", [7], 2)],
        "outputs": [tensor("y", "f32", [n], 4), tensor("q", "bf16", [3, 5], 5),
                    tensor("h", "f16", [7], 6), tensor("x/copy", "f32", [n], 7)],
        "params": [dict(tensor("w", "f32", [n], 3), blob="param.w")],
        "buffers": [{"id": 0, "kind": "input", "bytes": 4 * n},
                    {"id": 1, "kind": "input", "bytes": 30},
                    {"id": 2, "kind": "input", "bytes": 14},
                    {"id": 3, "kind": "param", "bytes": 4 * n},
                    {"id": 4, "kind": "output", "bytes": 4 * n},
                    {"id": 5, "kind": "output", "bytes": 30},
                    {"id": 6, "kind": "output", "bytes": 14},
                    {"id": 7, "kind": "output", "bytes": 4 * n}],
        "arena_bytes": 0,
        "kernels": [{"name": "k0", "symbol": "exp_mul", "kind": "elementwise",
                     "ops": ["tcc.exp", "tcc.mul", "tcc.add"], "code": "host.so"}],
        "code": [{"target": "host", "blob": "host.so"}],
        "launches": [{"kernel": 0, "args": [0, 3, 4], "grid": n},
                     {"copy": {"src": 1, "dst": 5, "bytes": 30}},
                     {"copy": {"src": 2, "dst": 6, "bytes": 14}},
                     {"copy": {"src": 0, "dst": 7, "bytes": 4 * n}}],
    }
    written = write_bundle(p("m.tccb"), manifest,
                           [("param.w", w.tobytes()), ("host.so", so)])

    # inspect: only the manifest, as JSON.
    rc, out, err = tcc("inspect", p("m.tccb"))
    check(rc == 0, f"inspect exit {rc}: {err}")
    try:
        check(json.loads(out) == written, "inspect prints the manifest")
    except ValueError:
        check(False, "inspect output is not JSON: " + out[:200])

    # run with inputs from NumPy files, converted where needed.
    x = rng.uniform(-4, 4, n).astype(np.float32)
    q = (rng.standard_normal((3, 5)) * 100).astype(np.float32)
    h = rng.standard_normal(7) * 1000.0
    np.save(p("x.npy"), x)
    np.save(p("q.npy"), q)
    np.save(p("h.npy"), h)  # float64
    rc, out, err = tcc("run", p("m.tccb"), "--input", "x=" + p("x.npy"),
                       "--input", "q=" + p("q.npy"), "--input=h=" + p("h.npy"),
                       "--output-dir", p("out"), "--seed", "3")
    check(rc == 0, f"run exit {rc}: {err}")
    check("note: converting q from f32 to bf16" in err, "bf16 note: " + err)
    check("note: converting h from f64 to f16" in err, "f16 note: " + err)
    check("writing it as float32" in err, "bf16 output note: " + err)
    if rc == 0:
        y = np.load(p("out", "y.npy"))
        ref = np.exp(x.astype(np.float64)) * w + 1
        # expf, one multiply, one add in f32: a few ulp.
        check(y.dtype == np.float32 and np.allclose(y, ref, rtol=2e-6, atol=1e-6),
              "y = exp(x) * w + 1")
        bits = q.view(np.uint32).astype(np.uint64)
        bf16 = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
        qo = np.load(p("out", "q.npy"))
        check(qo.dtype == np.float32 and qo.shape == (3, 5)
              and np.array_equal(qo, bf16.view(np.float32)), "bf16 rounding")
        ho = np.load(p("out", "h.npy"))
        check(ho.dtype == np.float16 and np.array_equal(ho, h.astype(np.float16)),
              "f16 rounding")
        check(np.array_equal(np.load(p("out", "x_copy.npy")), x),
              "x/copy written as x_copy.npy")
        check("y: f32 (257,)" in out, "summary: " + out)

    # run without inputs: seeded random values, reproducible.
    for d in ("r1", "r2"):
        rc, out, err = tcc("run", p("m.tccb"), "--output-dir", p(d))
        check(rc == 0, f"random run exit {rc}: {err}")
        check("note: input x (f32 (257,)) not given; using random values "
              "(seed 0)" in err, "random note: " + err)
    if not failures:
        a, b = np.load(p("r1", "x_copy.npy")), np.load(p("r2", "x_copy.npy"))
        check(np.array_equal(a, b) and a.min() >= -1 and a.max() < 1,
              "random inputs are seeded and in [-1, 1)")

    # bench with JSON figures.
    rc, out, err = tcc("bench", p("m.tccb"), "--warmup", "1", "--iters", "5",
                       "--json", p("bench.json"))
    check(rc == 0, f"bench exit {rc}: {err}")
    if rc == 0:
        fig = json.load(open(p("bench.json")))
        check(fig["min_ms"] <= fig["median_ms"] <= fig["max_ms"]
              and fig["iters"] == 5, f"bench figures {fig}")

    # A run-time index check.
    g = {
        "format_version": 1, "model": "g", "targets": ["host"],
        "inputs": [tensor("d", "f32", [6], 0), tensor("i", "i64", [4], 1)],
        "outputs": [tensor("o", "f32", [4], 2)], "params": [],
        "status": [{"buffer": 3, "message": "index out of range in /nodes/1 (gather)"}],
        "buffers": [{"id": 0, "kind": "input", "bytes": 24},
                    {"id": 1, "kind": "input", "bytes": 32},
                    {"id": 2, "kind": "output", "bytes": 16},
                    {"id": 3, "kind": "temp", "bytes": 4, "offset": 0}],
        "arena_bytes": 64,
        "kernels": [{"name": "g", "symbol": "gather", "code": "host.so"}],
        "code": [{"target": "host", "blob": "host.so"}],
        "launches": [{"kernel": 0, "args": [0, 1, 2, 3], "grid": 4}],
    }
    write_bundle(p("g.tccb"), g, [("host.so", so)])
    np.save(p("ok.npy"), np.array([0, 5, 2, 1], np.int64))
    np.save(p("bad.npy"), np.array([0, 6, 2, 1], np.int64))
    np.save(p("d.npy"), np.arange(6, dtype=np.float32) * 10)
    rc, out, err = tcc("run", p("g.tccb"), "--input", "d=" + p("d.npy"),
                       "--input", "i=" + p("ok.npy"), "--output-dir", p("g"))
    check(rc == 0 and np.array_equal(np.load(p("g", "o.npy")),
                                      np.array([0, 50, 20, 10], np.float32)),
          f"gather in range: {err}")
    rc, out, err = tcc("run", p("g.tccb"), "--input", "i=" + p("bad.npy"),
                       "--output-dir", p("g"))
    one_error_line(rc, err, "gather out of range",
                   "index out of range in /nodes/1 (gather)")
    # bench times the inputs it is given (the others random): the same
    # check fires on the bad indices, and not on the good ones.
    rc, out, err = tcc("bench", p("g.tccb"), "--input", "i=" + p("ok.npy"),
                       "--warmup", "1", "--iters", "3")
    check(rc == 0, f"bench with --input in range: {err}")
    rc, out, err = tcc("bench", p("g.tccb"), "--input", "i=" + p("bad.npy"),
                       "--warmup", "1", "--iters", "3")
    one_error_line(rc, err, "bench gather out of range",
                   "index out of range in /nodes/1 (gather)")
    rc, _, err = tcc("bench", p("g.tccb"), "--input", "nope=" + p("ok.npy"))
    one_error_line(rc, err, "bench unknown input", "no input named 'nope'")

    # Bad input files and bundles: exit 1 with an error line.
    np.save(p("fortran.npy"), np.asfortranarray(np.ones((3, 5), np.float32)))
    rc, _, err = tcc("run", p("m.tccb"), "--input", "q=" + p("fortran.npy"))
    one_error_line(rc, err, "fortran npy", "Fortran-order")
    rc, _, err = tcc("run", p("m.tccb"), "--input", "x=" + p("q.npy"))
    one_error_line(rc, err, "shape mismatch", "the model expects (257,)")
    rc, _, err = tcc("run", p("m.tccb"), "--input", "nope=" + p("x.npy"))
    one_error_line(rc, err, "unknown input", "no input named 'nope'")
    data = bytearray(open(p("m.tccb"), "rb").read())
    data[100] ^= 0xFF
    open(p("bad.tccb"), "wb").write(data)
    rc, _, err = tcc("run", p("bad.tccb"))
    one_error_line(rc, err, "corrupted bundle", "checksum mismatch")
    # inspect reads the header and the manifest only: a flipped weight byte
    # is found by run, not by inspect; a flipped manifest byte by both.
    rc, out, err = tcc("inspect", p("bad.tccb"))
    check(rc == 0 and json.loads(out)["model"] == "cli",
          f"inspect does not read the blobs: {rc} {err}")
    data2 = bytearray(open(p("m.tccb"), "rb").read())
    data2[-2] ^= 0x01
    open(p("badm.tccb"), "wb").write(data2)
    rc, _, err = tcc("inspect", p("badm.tccb"))
    one_error_line(rc, err, "inspect corrupted manifest",
                   "manifest checksum mismatch")
    open(p("short.tccb"), "wb").write(data[:50])
    rc, _, err = tcc("bench", p("short.tccb"))
    one_error_line(rc, err, "truncated bundle", "truncated")
    rc, _, err = tcc("bench", p("m.tccb"), "--iters", "0")
    one_error_line(rc, err, "zero iterations")
    rc, _, err = tcc("run", p("m.tccb"), "--frobnicate")
    one_error_line(rc, err, "unknown flag", usage=True)
    rc, _, err = tcc("run")
    one_error_line(rc, err, "no bundle", usage=True)

    special_files(p)
    names_with_equals(p)
    out_of_memory(p)
    if MODE == "full":
        concurrent_compiles(p)

    if MODE == "runtime-only":
        rc, out, _ = tcc("--help")
        check(rc == 0 and "usage: tcc run" in out, "help")
        with open(p("model.json"), "w") as f:
            f.write('{"format": "tcc-model"}')
        rc, _, err = tcc("run", p("model.json"))
        one_error_line(rc, err, "model file", "runtime-only")
        rc, _, err = tcc("compile", p("model.json"))
        one_error_line(rc, err, "compile", "unknown command 'compile'")

    if os.environ.get("TCC_KEEP_TMP"):  # for debugging: keep the files
        print("files in", tmp)
    else:
        shutil.rmtree(tmp)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
