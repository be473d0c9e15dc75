#!/usr/bin/env python3
"""Whole models through tcc, against NumPy references.

The models in tests/e2e/models/ were written from the format's text alone (a
transformer block, a small CNN, an embedding lookup with rms_norm, top-k over
logits); examples/ holds the ones a newcomer runs first. For each model:

1. its params are read back by running a copy that lists them as outputs, and
   checked against the documented initialisers (fill, value, file, random);
2. `tcc compile` writes a bundle, `tcc inspect` must print its manifest;
3. `tcc run BUNDLE` on fresh inputs must match the NumPy reference, computed
   from the same inputs and params.

Plus: an out-of-range token id is a run-time error naming the node, and
`tcc run` without inputs draws them from --seed reproducibly. Prints one line
per check and "N passed, M failed".
"""
import argparse
import json
import math
import os
import pickle
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import e2elib as L  # noqa: E402
from e2elib import Tol, ftol, narrow  # noqa: E402

results = []


def report(name, ok, maxerr=0.0, detail=''):
    results.append(ok)
    print('%s %s maxerr=%.3g%s' % ('PASS' if ok else 'FAIL', name, maxerr,
                                    '' if ok else ' -- ' + detail), flush=True)


def chain_tol(ref, rel=1e-4):
    """A whole f32 model: each op adds at most ~(4 sqrt(K) + 16) f32 ulps
    (about 1e-5 relative for K <= 1024); a dozen ops in sequence, with layer
    norm dividing by sigma, stay below 1e-4 of the output's scale. Op-level
    precision is optest.py's job; this catches wiring and semantics."""
    return Tol(rel, rel * (np.abs(ref).max() if ref.size else 0.0))


def heads(t, b, s, h):
    return t.reshape(b, s, h, -1).transpose(0, 2, 1, 3)


# --- references ---------------------------------------------------------------------

def ref_transformer_block(e):
    x = e['x']
    h = L.layer_norm(x, e['ln1.weight'], e['ln1.bias'], -1, 1e-5)
    q, k, v = (heads(h @ e['attn.%s.weight' % n].T, 2, 16, 4) for n in 'qkv')
    s = (q @ k.transpose(0, 1, 3, 2)) * 0.25
    causal = np.arange(16)[:, None] >= np.arange(16)[None, :]
    p = L.softmax(np.where(causal, s, -1e30), -1)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(2, 16, 64)
    x1 = x + o @ e['attn.out.weight'].T + e['attn.out.bias']
    h2 = L.layer_norm(x1, e['ln2.weight'], e['ln2.bias'], -1, 1e-5)
    f1 = h2 @ e['mlp.fc1.weight'].T + e['mlp.fc1.bias']
    y = x1 + L.gelu(f1, 'tanh') @ e['mlp.fc2.weight'].T + e['mlp.fc2.bias']
    return {'y': ('f32', y, chain_tol(y)), 'p': ('f32', p, Tol(1e-4, 1e-5))}


def ref_decoder_block_bf16(e):
    """A pre-norm decoder layer in bf16 (RMS norm, causal attention over 4 heads
    of 64, SiLU MLP): the shapes that send the projections to the GEMM
    template as one matrix of batch x tokens rows, and attention to its fused
    kernel, with Q, K and V computed by the layer."""
    def block(r):
        x = e['x']
        h = L.rms_norm(x, e['norm1.weight'], -1, 1e-5, out=r)
        q, k, v = (heads(r(h @ e['attn.%s.weight' % n].T), 2, 128, 4) for n in 'qkv')
        s = r(r(q @ k.transpose(0, 1, 3, 2)) * 0.125)
        causal = np.arange(128)[:, None] >= np.arange(128)[None, :]
        p = L.softmax(np.where(causal, s, -np.inf), -1, out=r)
        o = r(p @ v).transpose(0, 2, 1, 3).reshape(2, 128, 256)
        x1 = r(x + r(o @ e['attn.out.weight'].T))
        h2 = L.rms_norm(x1, e['norm2.weight'], -1, 1e-5, out=r)
        f1 = r(r(h2 @ e['mlp.fc1.weight'].T) + e['mlp.fc1.bias'])
        g1 = r(f1 * L.sigmoid(f1))
        return r(x1 + r(g1 @ e['mlp.fc2.weight'].T))
    # The format rounds every primitive's result to bf16 (a composite's
    # once, rms_norm's and softmax's); tcc rounds fewer
    # (fused kernels keep f32 inside). Any rounding schedule between none and
    # all lands about as far from either as the two are from each other (each
    # rounding moves a value by at most half a bf16 ulp, 2^-9 relative), so
    # the allowance is that distance, doubled, plus one bf16 ulp of the
    # output on top (the final store).
    exact, rounded = block(lambda v: v), block(lambda v: narrow('bf16', v))
    gap = float(np.abs(exact - rounded).max())
    return {'y': ('bf16', rounded, Tol(2.0 ** -8, 2 * gap))}


def batch_norm(x, e, pre, eps=1e-5):
    sh = (1, -1, 1, 1)
    return (x - e[pre + '.running_mean'].reshape(sh)) / np.sqrt(
        e[pre + '.running_var'].reshape(sh) + eps) * e[pre + '.weight'].reshape(sh) + \
        e[pre + '.bias'].reshape(sh)


def ref_small_cnn(e):
    c1 = L.conv2d(e['image'], e['conv1.weight'], e['conv1.bias'], pads=(1, 1, 1, 1))
    r1 = np.maximum(batch_norm(c1, e, 'bn1'), 0)
    p1 = L.pool2d(r1, 'max', (2, 2))
    c2 = L.conv2d(p1, e['conv2.weight'], None, (2, 2), (1, 1, 1, 1), groups=2)
    r2 = np.maximum(batch_norm(c2, e, 'bn2'), 0)
    logits = r2.mean(axis=(2, 3)) @ e['fc.weight'].T + e['fc.bias']
    return {'logits': ('f32', logits, chain_tol(logits))}


def f16_block_outputs(block, names):
    """The outputs of `block(r)` (r rounds a primitive's result: identity or
    to f16) for the f16 CNN blocks, with their tolerance: the distance
    between rounding every primitive to f16 and rounding none, doubled, plus
    two f16 ulps (as for the bf16 decoder)."""
    exact, rounded = block(lambda v: v), block(lambda v: narrow('f16', v))
    out = {}
    for name, a, b in zip(names, exact, rounded):
        gap = float(np.abs(a - b).max())
        out[name] = ('f16', b, Tol(2.0 ** -10, 2 * gap + 2.0 ** -14))
    return out


def ref_inception_f16(e):
    """An Inception block in f16 at an odd size (19x17): four branches (1x1;
    1x1 then 3x3; max pool then 1x1 without ReLU; a dilated 3x3 of 64
    channels, on wgmma for sm_90a) concatenated, then a 1x1 and a max pool
    over the concat.
    On NVIDIA targets the branch convolutions store into the concat's buffer
    (tcc-concat-in-place). Tolerance as for the bf16 decoder: the distance
    between rounding every primitive to f16 and rounding none, doubled, plus
    two f16 ulps."""
    def block(r):
        def conv(x, n, **kw):
            return r(L.conv2d(x, e[n + '.weight'], e[n + '.bias'], **kw))
        relu = lambda v: np.maximum(v, 0)
        x = e['x']
        b1 = relu(conv(x, 'b1'))
        b2 = relu(conv(relu(conv(x, 'b2a')), 'b2', pads=(1, 1, 1, 1)))
        b3 = conv(L.pool2d(x, 'max', (3, 3), (1, 1), (1, 1, 1, 1)), 'b3')
        b4 = relu(conv(x, 'b4', pads=(2, 2, 2, 2), dilations=(2, 2)))
        cat = np.concatenate([b1, b2, b3, b4], axis=1)
        return relu(conv(cat, 'head')), L.pool2d(cat, 'max', (3, 3), (2, 2))
    return f16_block_outputs(block, ['head.relu', 'catpool'])


def ref_conv_relu_both_f16(e):
    """Convolutions whose value before the ReLU is read too (as NASNet's
    cells read a convolution's result and its ReLU): y = conv3x3(x) (64
    channels at 19x17, on wgmma for sm_90a) and relu(y); u = conv1x1(relu(y))
    + y and relu(u); o = relu(conv1x1(relu(u))). The GPU templates store
    both values of y and of u. Tolerance as for the Inception block."""
    def block(r):
        relu = lambda v: np.maximum(v, 0)
        y = r(L.conv2d(e['x'], e['c1.weight'], e['c1.bias'], pads=(1, 1, 1, 1)))
        u = r(r(L.conv2d(relu(y), e['c2.weight'])) + y)
        o = relu(r(L.conv2d(relu(u), e['c3.weight'], e['c3.bias'])))
        return o, u, y
    return f16_block_outputs(block, ['o', 'u', 'y'])


def ref_unet_stage_f16(e):
    """A U-Net stage in f16: enc = relu(conv3x3(x)) (64 channels at 34x32),
    read by a 2x2 max pool and by the concat; mid = relu(conv3x3(pool)) (256
    channels at 17x16); up = conv_transpose2d(mid, 2x2, stride 2) with a
    bias; relu(conv3x3(concat(enc, up))). On NVIDIA targets enc's
    convolution stores its result twice (its buffer, the pool's input, and
    the concat's channels) and the up-convolution, a 1x1 convolution of four
    phases, stores each pixel where the interleave puts it, into the
    concat's channels (tcc-concat-in-place): the concat launches nothing.
    Tolerance as for the Inception block."""
    def block(r):
        relu = lambda v: np.maximum(v, 0)
        enc = relu(r(L.conv2d(e['x'], e['enc.weight'], e['enc.bias'], pads=(1, 1, 1, 1))))
        pool = L.pool2d(enc, 'max', (2, 2))
        mid = relu(r(L.conv2d(pool, e['mid.weight'], e['mid.bias'], pads=(1, 1, 1, 1))))
        up = r(L.conv_transpose2d(mid, e['up.weight'], e['up.bias'], strides=(2, 2)))
        cat = np.concatenate([enc, up], axis=1)
        dec = relu(r(L.conv2d(cat, e['dec.weight'], e['dec.bias'], pads=(1, 1, 1, 1))))
        return dec, pool
    return f16_block_outputs(block, ['dec.relu', 'pool'])


def ref_embedding_rms_norm(e):
    emb = e['tok_embeddings'][e['token_ids']]
    h = L.rms_norm(emb, e['norm.weight'], -1, 1e-6)
    logits = h @ e['tok_embeddings'].T
    return {'h': ('f32', h, chain_tol(h, 1e-5)), 'logits': ('f32', logits, chain_tol(logits))}


def ref_rope_f16(e):
    """Rotary position embedding as Llama writes it (rotate_half: the upper
    half negated and concatenated before the lower), f16: one launch on GPU
    targets (codegen_test), each primitive rounded to f16 (the slices, the
    negation and the concat are exact)."""
    x, c, s = e['x'], e['cos'], e['sin']
    r = lambda v: narrow('f16', v)  # noqa: E731
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    a, b = r(x * c), r(rot * s)
    y = r(a + b)
    # The sum may cancel: an f16 ulp of its terms' size, beside one of y.
    return {'y': ('f16', y, Tol(2.0 ** -10, 2.0 ** -10 * (np.abs(a) + np.abs(b)) + 2.0 ** -24))}


def ref_topk_logits(e):
    logits = e['logits']
    probs = L.softmax(logits / L.rnd('f32', 0.7), -1)
    order = np.argsort(-probs, axis=-1, kind='stable')[:, :5]
    top_p = np.take_along_axis(probs, order, -1)
    logp = L.log_softmax(logits, -1)
    ptol = Tol(1e-5, 1e-7)

    def check_indices(got):
        """Near-equal probabilities may come out in either order after
        rounding: the indices must be distinct and point at the reference's
        top values."""
        gi = got['top_i']
        if gi.shape != order.shape:
            return False, 0.0, 'shape %s' % (gi.shape,)
        if (gi < 0).any() or (gi >= probs.shape[1]).any():
            return False, 0.0, 'index out of range'
        distinct = all(len(set(r)) == len(r) for r in gi.tolist())
        ok, err, detail = L.compare(np.take_along_axis(probs, gi, -1), top_p, ptol)
        return ok and distinct, err, detail if distinct else 'repeated index'

    def check_logp(got):
        gi = np.clip(got['top_i'], 0, probs.shape[1] - 1)
        want = np.take_along_axis(logp, gi, -1)
        return L.compare(got['top_logp'], want, Tol(1e-5, 1e-5 * np.abs(logp).max()))

    return {'top_p': ('f32', top_p, ptol), 'top_i': ('i64', check_indices, None),
            'next_token': ('i64', np.argmax(logits, -1), L.EXACT),
            'top_logp': ('f32', check_logp, None)}


def ref_attention(e):
    # bf16 throughout: each primitive computes in f32 and rounds to bf16.
    r = lambda v: narrow('bf16', v)  # noqa: E731
    s = r(r(e['q'] @ e['k'].transpose(0, 1, 3, 2)) * 0.125)
    n = s.shape[-1]
    causal = np.arange(n)[:, None] >= np.arange(n)[None, :]
    p = L.softmax(np.where(causal, s, r(-1e30)), -1, out=r)
    o = r(p @ e['v'])
    # Two matmuls and the softmax chain, each rounding to bf16. A fused
    # kernel that keeps f32 inside (or rounds only p, as GPU kernels do)
    # differs by up to 1.5 bf16 ulps of |o| + sum p |v| (measured on random
    # q, k, v with 16..256 keys); 3 ulps allowed.
    pv = np.abs(p) @ np.abs(e['v'])
    return {'o': ('bf16', o, ftol('bf16', 4 * math.sqrt(n) + 16, pv, 3, pv))}


def ref_gqa_decode_f32(e):
    """f32 decode over 3001 keys, 4 query heads sharing one K/V head: its
    softmax rows take a block of 6 warps, whose per-warp partials once sat
    at a misaligned shared address on the GPU."""
    q = e['q'].reshape(1, 1, 4, 1, 32)
    k, v = e['k'][:, :, None], e['v'][:, :, None]
    s = (q @ k.transpose(0, 1, 2, 4, 3)) * 0.125
    p = L.softmax(s, -1)
    o = (p @ v).reshape(1, 4, 1, 32)
    pv = (np.abs(p) @ np.abs(v)).reshape(o.shape)
    return {'o': ('f32', o, ftol('f32', 4 * math.sqrt(3001) + 16, pv))}


def ref_cross_entropy_f32(e):
    """log_softmax over 5003 classes (10 warps a row), then the targets'
    log-probabilities: the loss PyTorch's cross_entropy gives."""
    logp = L.log_softmax(e['logits'], -1)
    nll = -np.take_along_axis(logp, e['target'], 1)
    loss = np.array(nll.mean())
    tol = ftol('f32', 16 + 4 * math.sqrt(5003), np.abs(logp) + 1)
    return {'logp': ('f32', logp, tol),
            'loss': ('f32', loss, ftol('f32', 16 + 4 * math.sqrt(5003), np.abs(loss) + 1))}


def ref_softmax(e):
    y = L.softmax(e['x'], -1)
    return {'y': ('f32', y, ftol('f32', 16 + 4 * math.sqrt(1000), 0.25))}


def ref_layer_norm(e):
    y = L.layer_norm(e['x'], e['weight'], e['bias'], -1, 1e-5)
    return {'y': ('f32', y, ftol('f32', 16 + 4 * math.sqrt(256), np.abs(y) + 1))}


def ref_mlp(e):
    h = e['x'] @ e['fc1.weight'].T + e['fc1.bias']
    y = L.gelu(h) @ e['fc2.weight'].T + e['fc2.bias']
    return {'y': ('f32', y, chain_tol(y))}


def ref_cnn(e):
    c1 = L.conv2d(e['image'], e['conv1.weight'], e['conv1.bias'], pads=(1, 1, 1, 1))
    r1 = np.maximum(batch_norm(c1, e, 'bn'), 0)
    p1 = L.pool2d(r1, 'max', (2, 2), (2, 2))
    c2 = L.conv2d(p1, e['conv2.weight'], e['conv2.bias'], (2, 2), (1, 1, 1, 1))
    logits = c2.mean(axis=(2, 3)) @ e['fc.weight'].T + e['fc.bias']
    return {'logits': ('f32', logits, chain_tol(logits))}


def embedding_files(d, rng):
    table = L.rnd('f32', rng.standard_normal((100, 32)) * 0.5)
    L.write_safetensors(os.path.join(d, 'embedding.safetensors'),
                        {'tok_embeddings.weight': ('f32', table)})
    return {'tok_embeddings': table}


MODELS = [
    # path, reference, writes the files the model reads (returns their params)
    ('tests/e2e/models/transformer_block.json', ref_transformer_block, None),
    ('tests/e2e/models/decoder_block_bf16.json', ref_decoder_block_bf16, None),
    ('tests/e2e/models/small_cnn.json', ref_small_cnn, None),
    ('tests/e2e/models/inception_f16.json', ref_inception_f16, None),
    ('tests/e2e/models/conv_relu_both_f16.json', ref_conv_relu_both_f16, None),
    ('tests/e2e/models/unet_stage_f16.json', ref_unet_stage_f16, None),
    ('tests/e2e/models/embedding_rms_norm.json', ref_embedding_rms_norm, embedding_files),
    ('tests/e2e/models/topk_logits.json', ref_topk_logits, None),
    ('tests/e2e/models/rope_f16.json', ref_rope_f16, None),
    ('tests/e2e/models/gqa_decode_f32.json', ref_gqa_decode_f32, None),
    ('tests/e2e/models/cross_entropy_f32.json', ref_cross_entropy_f32, None),
    ('examples/attention.json', ref_attention, None),
    ('examples/softmax.json', ref_softmax, None),
    ('examples/layer_norm.json', ref_layer_norm, None),
    ('examples/mlp.json', ref_mlp, None),
    ('examples/cnn.json', ref_cnn, None),
]


# --- running -------------------------------------------------------------------------

def make_inputs(model, rng, d):
    """Random inputs (token ids in range), written as .npy."""
    env, args = {}, []
    for i in model['inputs']:
        dt, shape = i['dtype'], i['shape']
        if dt in L.INTS:   # token ids into the models' 100-row tables
            v = rng.integers(0, 100, size=shape)
        else:
            v = L.rnd(dt, rng.standard_normal(shape) * (3.0 if i['name'] == 'logits' else 1.0))
        env[i['name']] = v
        p = os.path.join(d, i['name'] + '.npy')
        np.save(p, L.to_npy(dt, v))
        args += ['--input', '%s=%s' % (i['name'], p)]
    return env, args


def read_outputs(dtypes, outdir):
    """{name: values} from outdir, checking each file's npy dtype."""
    got = {}
    for n, dt in dtypes.items():
        p = os.path.join(outdir, n + '.npy')
        if not os.path.exists(p):
            return None, 'output %s not written' % n
        a = np.load(p)
        if a.dtype != L.NPY_DTYPE[dt]:
            return None, '%s has npy dtype %s, expected %s' % (n, a.dtype.str, L.NPY_DTYPE[dt].str)
        got[n] = L.from_npy(dt, a)
    return got, ''


def check_params(name, model, got, files):
    """Each param's values follow from its initialiser as documented."""
    bad, maxerr = [], 0.0
    for p in model['params']:
        dt, shape, init = p['dtype'], p['shape'], p['init']
        n = int(np.prod(shape))
        if 'fill' in init:
            want, tol = L.rnd(dt, np.full(shape, float(init['fill']))), L.EXACT
        elif 'value' in init:
            want, tol = L.rnd(dt, np.array(init['value'], dtype=np.float64).reshape(shape)), L.EXACT
        elif 'file' in init:
            want, tol = files[p['name']], L.EXACT
        else:
            # libm's log/cos may differ from NumPy's in the last bit of a
            # double: allow one ulp of the param's dtype.
            want = L.rnd(dt, L.random_init(init, n).reshape(shape))
            tol = Tol(L.eps(dt), 0.0)
        ok, err, detail = L.compare(got[p['name']], want, tol)
        maxerr = max(maxerr, err)
        if not ok:
            bad.append('%s (%s): %s' % (p['name'], json.dumps(init), detail))
    report('%s params match their initialisers' % name, not bad, maxerr, '; '.join(bad))


def check_manifest(name, model, tcc, bundle):
    rc, out, err = L.run_tcc([tcc, 'inspect', bundle])
    if rc != 0:
        report('%s inspect' % name, False, detail='exit %d: %s' % (rc, L.first_line(err)))
        return
    try:
        m = json.loads(out)
    except ValueError as ex:
        report('%s inspect' % name, False, detail='not JSON: %s' % ex)
        return
    missing = [k for k in ('kernels', 'launches', 'buffers', 'inputs', 'outputs', 'params')
               if k not in m]

    def names(v):
        return [x.get('name') if isinstance(x, dict) else x for x in v] if isinstance(v, list) else v
    problems = ['missing %s' % ', '.join(missing)] if missing else []
    if not missing:
        if names(m['inputs']) != [i['name'] for i in model['inputs']]:
            problems.append('inputs %s' % names(m['inputs']))
        if names(m['outputs']) != model['outputs']:
            problems.append('outputs %s' % names(m['outputs']))
        if not m['kernels'] or not m['launches']:
            problems.append('no kernels or launches')
    report('%s inspect: manifest lists kernels, launches, buffers, inputs, outputs, params' % name,
           not problems, detail='; '.join(problems))


TARGET = []  # ['--target', T] when the bundles are for a GPU
RECORD = []  # [True] with --record: compile and keep, run later with --replay


def run_model(tcc, rel, ref, files_fn, work, seed):
    name = os.path.splitext(os.path.basename(rel))[0]
    src = os.path.join(ROOT, rel)
    with open(src) as f:
        model = json.load(f)
    d = os.path.join(work, name)
    os.makedirs(d)
    rng = np.random.default_rng([seed, len(name)])
    files = files_fn(d, rng) if files_fn else {}
    mpath = os.path.join(d, 'model.json')
    shutil.copy(src, mpath)
    env, in_args = make_inputs(model, rng, d)

    # 1. The params, read back through a copy that returns them.
    if model['params']:
        with_params = dict(model, outputs=model['outputs'] + [p['name'] for p in model['params']])
        ppath = os.path.join(d, 'with_params.json')
        with open(ppath, 'w') as f:
            json.dump(with_params, f)
        pout = os.path.join(d, 'params')
        rc, _, err = L.run_tcc([tcc, 'run', ppath, '--output-dir', pout] + in_args)
        if rc != 0:
            report('%s params' % name, False, detail='tcc run exit %d: %s' % (rc, L.first_line(err)))
            return
        got, why = read_outputs({p['name']: p['dtype'] for p in model['params']}, pout)
        if got is None:
            report('%s params' % name, False, detail=why)
            return
        check_params(name, model, got, files)
        env.update(got)

    # 2. Compile and inspect.
    bundle = os.path.join(d, name + '.tccb')
    rc, _, err = L.run_tcc([tcc, 'compile', mpath, '-o', bundle] + TARGET)
    if rc != 0:
        report('%s compile' % name, False, detail='exit %d: %s' % (rc, L.first_line(err)))
        return
    check_manifest(name, model, tcc, bundle)
    if RECORD:
        # What the replay needs, kept small (it travels to the GPU machine):
        # values that f32 holds exactly are stored as f32, and the params'
        # read-back files go.
        shutil.rmtree(os.path.join(d, 'params'), ignore_errors=True)
        small = {k: np.asarray(v) for k, v in env.items()}
        small = {k: v.astype(np.float32) if v.dtype == np.float64 and
                 np.array_equal(v.astype(np.float32), v, equal_nan=True) else v
                 for k, v in small.items()}
        with open(os.path.join(d, 'replay.pkl'), 'wb') as f:
            pickle.dump({'rel': rel, 'env': small, 'inputs': [i['name'] for i in model['inputs']]}, f)
        return
    check_run(tcc, name, model, ref, env, bundle, in_args, d, rng)


def check_run(tcc, name, model, ref, env, bundle, in_args, d, rng):
    """3. Runs the bundle and compares its outputs with the reference."""
    outdir = os.path.join(d, 'out')
    rc, _, err = L.run_tcc([tcc, 'run', bundle, '--output-dir', outdir] + in_args)
    if rc != 0:
        report('%s run' % name, False, detail='exit %d: %s' % (rc, L.first_line(err)))
        return
    refs = ref(env)
    got, why = read_outputs({o: refs[o][0] for o in model['outputs']}, outdir)
    if got is None:
        report('%s run' % name, False, detail=why)
        return
    for out in model['outputs']:
        dt, want, tol = refs[out]
        ok, err, detail = want(got) if callable(want) else L.compare(got[out], want, tol)
        report('%s output %s %s%s' % (name, out, dt, list(got[out].shape)), ok, err, detail)

    if name == 'embedding_rms_norm':
        check_bad_token(tcc, model, bundle, d, rng)


def check_bad_token(tcc, model, bundle, d, rng):
    """Token id 100 of a 100-row table: exit 1 and the node's pointer."""
    ids = rng.integers(0, 100, size=model['inputs'][0]['shape'])
    ids[1, 4] = 100
    p = os.path.join(d, 'bad_ids.npy')
    np.save(p, ids.astype('<i8'))
    rc, _, err = L.run_tcc([tcc, 'run', bundle, '--input', 'token_ids=' + p,
                            '--output-dir', os.path.join(d, 'bad')])
    want = 'index out of range in /nodes/0 (gather)'
    report('embedding_rms_norm: an out-of-range token id fails the run', rc == 1 and want in err,
           detail='expected exit 1 and "%s", got exit %d: %s' % (want, rc, L.first_line(err)))


def check_seeded_inputs(tcc, work):
    """Inputs left out are random, announced on stderr, and fixed by --seed."""
    src = os.path.join(ROOT, 'examples', 'softmax.json')
    outs = []
    for i, seed in enumerate((7, 7, 8)):
        o = os.path.join(work, 'seeded%d' % i)
        rc, _, err = L.run_tcc([tcc, 'run', src, '--seed', str(seed), '--output-dir', o])
        if rc != 0:
            report('random inputs', False, detail='exit %d: %s' % (rc, L.first_line(err)))
            return
        outs.append(np.load(os.path.join(o, 'y.npy')))
    report('tcc run without inputs says they are random', 'random' in err.lower(),
           detail='stderr: %s' % L.first_line(err))
    report('random inputs: the same --seed gives the same outputs, another seed others',
           np.array_equal(outs[0], outs[1]) and not np.array_equal(outs[0], outs[2]))
    ok, err_, detail = L.compare(outs[0].sum(axis=-1).astype(np.float64), np.ones(8), Tol(1e-5, 0))
    report('softmax of random inputs sums to 1 per row', ok, err_, detail)


def replay(tcc, root):
    """Runs and checks the bundles --record compiled under `root` (e.g. on a
    GPU machine, with the runtime-only tcc)."""
    n = 0
    for rel, ref, _ in MODELS:
        name = os.path.splitext(os.path.basename(rel))[0]
        d = os.path.join(root, name)
        path = os.path.join(d, 'replay.pkl')
        if not os.path.exists(path):
            continue
        with open(path, 'rb') as f:
            rec = pickle.load(f)
        rec['env'] = {k: v.astype(np.float64) if v.dtype == np.float32 else v
                      for k, v in rec['env'].items()}
        with open(os.path.join(ROOT, rel)) as f:
            model = json.load(f)
        in_args = []
        for i in rec['inputs']:
            in_args += ['--input', '%s=%s' % (i, os.path.join(d, i + '.npy'))]
        shutil.rmtree(os.path.join(d, 'out'), ignore_errors=True)
        check_run(tcc, name, model, ref, rec['env'], os.path.join(d, name + '.tccb'), in_args, d,
                  np.random.default_rng([7, len(name)]))
        n += 1
    if n == 0:
        print('nothing recorded under %s' % root)
        return 2
    print('%d passed, %d failed' % (sum(results), len(results) - sum(results)))
    return 0 if all(results) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--tcc', default=os.environ.get('TCC', 'tcc'))
    ap.add_argument('--seed', type=int, default=int(os.environ.get('E2E_SEED', '2024')),
                    help='inputs of the models (default $E2E_SEED or 2024)')
    ap.add_argument('--only', help='run only the model whose file name contains this')
    ap.add_argument('--keep', action='store_true', help='keep the work directory')
    ap.add_argument('--target', help='compile the bundles for this target (e.g. sm_90) and run '
                    'them on its device; exit 77 (skipped) when there is none')
    ap.add_argument('--record', metavar='DIR',
                    help='with --target: compile the bundles under DIR (params and manifests '
                         'checked here) for --replay DIR on a machine with that device')
    ap.add_argument('--replay', metavar='DIR', help='run and check what --record wrote')
    args = ap.parse_args()
    np.seterr(all='ignore')
    tcc = shutil.which(args.tcc) or args.tcc
    if not os.path.exists(tcc):
        print('tcc not found: %s' % args.tcc, file=sys.stderr)
        return 2
    tcc = os.path.abspath(tcc)
    if args.replay:
        return replay(tcc, os.path.abspath(args.replay))
    print('models seed %d' % args.seed, flush=True)
    if args.record:
        if not args.target:
            print('--record needs --target', file=sys.stderr)
            return 2
        work = os.path.abspath(args.record)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        TARGET[:] = ['--target', args.target]
        RECORD[:] = [True]
        for rel, ref, files_fn in MODELS:
            if not args.only or args.only in rel:
                run_model(tcc, rel, ref, files_fn, work, args.seed)
        print('recorded under %s: %d checks passed, %d failed' % (
            work, sum(results), len(results) - sum(results)))
        return 0 if all(results) else 1
    work = tempfile.mkdtemp(prefix='tcc-models-')
    if args.target:
        TARGET[:] = ['--target', args.target]
        why = L.device_missing(tcc, args.target, work)
        if why:
            print('skipped: no %s device here (%s)' % (args.target, why))
            shutil.rmtree(work, ignore_errors=True)
            return L.SKIP
    try:
        for rel, ref, files_fn in MODELS:
            if args.only and args.only not in rel:
                continue
            run_model(tcc, rel, ref, files_fn, work, args.seed)
        if not args.only and not args.target:
            check_seeded_inputs(tcc, work)
    finally:
        if args.keep:
            print('work directory: %s' % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print('%d passed, %d failed' % (sum(results), len(results) - sum(results)))
    return 0 if all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
