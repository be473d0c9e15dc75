#!/usr/bin/env python3
"""Attention on AMD targets is one fused kernel (two for decode), read from
the HSA code object; no AMD GPU runs here.

    amd_attention_test.py TCC LLVM_READOBJ WORKDIR [--mix N[:SEED]]

A handful of tests/gpu/attention_test.py's forms (f32, bf16, f16; causal, a
padding mask given as an input, GQA, strided [B, L, H, D] tensors, K given
transposed, decode with one query row and few, split-K; single-head [L, D]
tensors; head dims 192 and 256, whose tiles the LDS bounds, 256's a block
of 32 threads; head dims 36, 40 and 72; document ids and a [B, L] padding
mask read through reshapes) are compiled
for gfx90a and gfx942 (`tcc compile --target`, --gpu-attention being the
default). Each bundle must hold exactly the SIMT template's kernel
(`*_attn_simt`), or for decode its split-K pair (`*_decode`, `*_combine`),
launched once each, and nothing else. The code object is then read with
`llvm-readobj --file-headers --notes`: an AMDGPU ELF for that processor
whose metadata lists each kernel with no scratch
(`.private_segment_fixed_size` 0, no VGPR spills; the few SGPR spills
gfx90a's 102 SGPRs take go to VGPR lanes, not memory), at most 256 VGPRs
and no AGPRs (head dim 256: at most 512 with AGPRs), waves of 64, a
work-group size of the launch's block (whole waves, or 32 threads: one
wave, half its lanes), and static plus dynamic LDS within the 64 KiB a
work-group may use. A form the AMD path refuses (none of these since
session 32: K given transposed with 1001 keys now runs key by key) must
compile to generic kernels with one "attention not fused" line saying why.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_test  # noqa: E402  (the forms)
import codegen_test  # noqa: E402  (the bundle reader)

TARGETS = ('gfx90a', 'gfx942')
# name -> the kernels expected: prefill one, decode the pair; None: refused.
FORMS = {
    'f32_causal_128_1000': 'prefill',
    'f32_padding_mask_333': 'prefill',
    'f32_decode_gqa_q1_3001': 'decode',
    'causal_bf16_1000': 'prefill',
    'padding_mask_bf16_777': 'prefill',
    'layout_gqa_f16': 'prefill',
    'decode_causal_gqa_8_2_q4_3001': 'decode',
    'decode_gqa_16_2_f16_q1_3001': 'decode',
    'hd192_causal_f16_200': 'prefill',
    'f32_d256_200': 'prefill',
    'ktrans_causal_bf16_1000': 'prefill',
    'decode_ktrans_gqa_8_2_q4_3000': 'decode',
    'ktrans_unaligned_bf16_1001': 'prefill',
    'rank2_causal_f16_1000': 'prefill',
    'rank2_keymask_bf16_777': 'prefill',
    'f32_rank2_plain_300': 'prefill',
    'decode_rank2_causal_q4_3001': 'decode',
    # Session 31's forms: head sizes that are not multiples of 16 (of 8:
    # 40; of 4 only: 36), f32 with K given transposed, document ids read
    # through their reshapes, a [B, L] padding mask made [B, 1, 1, L].
    'hd40_f16_1001': 'prefill',
    'hd36_simt_f16_1001': 'prefill',
    'decode_hd72_q1_3001': 'decode',
    'ktrans_f32_causal_1000': 'prefill',
    'docmask_causal_f16_1000': 'prefill',
    'padding_mask_2d_f16_555': 'prefill',
}
# Session 32's: head sizes that are not multiples of 4, rows that are not
# 16 bytes apart (f16 head size 36 kept [B, L, 3, D]), K given transposed
# with 3003 keys (decode).
FORMS.update({
    'hd50_simt_f16_1001': 'prefill',
    'hd33_simt_gqa_causal_bf16_333': 'prefill',
    'decode_hd18_simt_q1_3001': 'decode',
    'layout_hd36_unaligned_f16': 'prefill',
    'decode_ktrans_unaligned_f16_q2_3003': 'decode',
})
# Session 52's: GQA with the query heads as two axes (slopes read at both
# head axes; decode), a temperature after softmax's shift, Q and K widened
# to f32 before Q·Kᵀ.
FORMS.update({
    'gqa5_alibi_padmask_f16_600': 'prefill',
    'decode_gqa5_bf16_q1_3001': 'decode',
    'hand_temperature_bf16_700': 'prefill',
    'qk_f32_causal_f16_555': 'prefill',
})
# Session 53's: attention over flattened heads (BART's torch.bmm form, Q
# scaled before its views; BLOOM's, ALiBi added to the flattened scores; decode with a padding mask on the view); the
# exponential of a log-softmax.
FORMS.update({
    'flat_bart_padmask_bf16_520': 'prefill',
    'flat_bart_proj_f16_400': 'prefill',
    'decode_flat_padmask_f16_q1_3001': 'decode',
    'exp_logsoftmax_causal_f16_333': 'prefill',
    'flat_bloom_alibi_f16_301': 'prefill',
})
# V of another head size than Q and K (DeepSeek's MLA, 192 and 128; values
# wider; odd sizes), prefill and decode.
FORMS.update({
    'mla_causal_f16_333': 'prefill',
    'vwide_padmask_f16_257': 'prefill',
    'mla_odd_f16_201': 'prefill',
    'decode_mla_f16_q1_3001': 'decode',
    'gqa5_vdim_causal_f16_301': 'prefill',
})
# Head dim 256: a thread's O and its tile's P·V are 256 floats; past the
# 256 architectural VGPRs the back end keeps them in AGPRs (the unified 512
# registers of gfx90a and gfx942), not in scratch.
# Head sizes 36 and 40 without a mask (9 and 10 16-byte chunks a row): the
# back end keeps 336 to 368 registers live, 68 to 112 of them in AGPRs
# (still no scratch); the same sizes with a causal mask, and 64, 80, 128,
# stay under 256 VGPRs. Noted, not tuned: no AMD GPU runs here to tell
# whether it costs anything (session 31).
# Session 32's head size 50 (13 chunks) and 36 read element by element
# ([B, L, 3, D] rows): 7 to 27 AGPRs, 263 to 283 registers, no scratch;
# noted likewise. MLA's causal prefill (scores over 192, values of 128):
# 11 AGPRs, 267 registers, no scratch (session 54); noted likewise.
AGPRS_ALLOWED = {'f32_d256_200', 'hd40_f16_1001', 'hd36_simt_f16_1001', 'hd50_simt_f16_1001',
                 'layout_hd36_unaligned_f16', 'mla_causal_f16_333'}
REFUSAL = ('attention not fused: K given transposed ([.., D, Lk]) needs a key count that is a '
           'multiple of 8 (16-byte rows)')
LDS = 65536


def kernel_notes(text):
    """{kernel name: {key: value}} from llvm-readobj's AMDGPU metadata."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r'\s*(?:- )?\.(\w+):\s+(\S+)\s*$', line)
        if not m:
            continue
        key, value = m.groups()
        if line.lstrip().startswith('- .agpr_count'):
            cur = {}
        if cur is None:
            continue
        cur[key] = value
        if key == 'name':
            out[value] = cur
    return out


def check(tcc, readobj, work, name, model, target, want):
    bundle = os.path.join(work, '%s.%s.tccb' % (name, target))
    p = subprocess.run([tcc, 'compile', model, '-o', bundle, '--target', target, '--explain'],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return 'compile failed: ' + p.stderr.strip()[:500]
    remarks = [l for l in p.stderr.splitlines() if 'attention not fused' in l]
    manifest, blobs = codegen_test.blobs(bundle)
    kernels = manifest['kernels']
    symbols = [k['symbol'] for k in kernels]
    if want is None:
        if any(s.endswith(('_attn_simt', '_decode', '_combine')) for s in symbols):
            return 'refused, yet kernels %s' % symbols
        if len(remarks) != 1 or not remarks[0].endswith(REFUSAL):
            return 'expected one remark "%s", got %s' % (REFUSAL, remarks)
        return None
    if remarks:
        return 'not fused: %s' % remarks
    ends = ['_attn_simt'] if want == 'prefill' else ['_decode', '_combine']
    if want == 'decode' and name in attention_test.MIX and len(symbols) == 1:
        ends = ['_decode']  # one chunk (a mix's pairs fill the GPU): no combine
    launches = manifest['launches']
    if len(symbols) != len(ends) or len(launches) != len(ends) or not all(
            s.endswith(e) for s, e in zip(symbols, ends)):
        return 'expected kernels *%s, got %s (%d launches)' % (
            ', *'.join(ends), symbols, len(launches))
    code = manifest['code'][0]
    path = os.path.join(work, '%s.%s.hsaco' % (name, target))
    with open(path, 'wb') as f:
        f.write(blobs[code['blob']])
    p = subprocess.run([readobj, '--file-headers', '--notes', path], capture_output=True,
                       text=True)
    if p.returncode != 0:
        return 'llvm-readobj: ' + p.stderr.strip()
    if 'EF_AMDGPU_MACH_AMDGCN_%s' % target.upper() not in p.stdout:
        return 'the code object is not for %s' % target
    notes = kernel_notes(p.stdout)
    for launch in launches:
        k = kernels[launch['kernel']]
        n = notes.get(k['symbol'])
        if n is None:
            return 'no metadata for %s' % k['symbol']
        threads = launch['block'][0] * launch['block'][1] * launch['block'][2]
        static = int(n['group_segment_fixed_size'])
        dynamic = k.get('shared_bytes', 0)
        bad = []
        # The random mixes may use AGPRs as the noted forms do, spills to
        # AGPRs included (a softcap's tanh, the device library's, keeps up
        # to 323 registers live at head size 32 on gfx942), never scratch.
        mix = name in attention_test.MIX
        agprs = name in AGPRS_ALLOWED or mix
        for key in ('private_segment_fixed_size',) + (() if mix else ('vgpr_spill_count',)) + (
                () if agprs else ('agpr_count',)):
            if int(n[key]) != 0:
                bad.append('%s %s' % (key, n[key]))
        if int(n['vgpr_count']) > (512 if agprs else 256):
            bad.append('%s VGPRs' % n['vgpr_count'])
        # Whole waves, or one wave with half its lanes (head dim 256).
        if n['wavefront_size'] != '64' or (threads % 64 and threads != 32):
            bad.append('waves of %s, %d threads' % (n['wavefront_size'], threads))
        if int(n['max_flat_workgroup_size']) < threads:
            bad.append('max work-group size %s < %d' % (n['max_flat_workgroup_size'], threads))
        if static + dynamic > LDS:
            bad.append('LDS %d + %d bytes' % (static, dynamic))
        if bad:
            return '%s: %s' % (k['symbol'], ', '.join(bad))
    return None


def main():
    tcc, readobj, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    if len(sys.argv) > 5 and sys.argv[4] == '--mix':
        # Random mixes of the forms (attention_mix.py), a fresh draw unless
        # a seed is given.
        count, _, seed = sys.argv[5].partition(':')
        attention_test.MIX_DRAW['count'] = int(count)
        attention_test.MIX_DRAW['seed'] = (int(seed) if seed else
                                           int(np.random.default_rng().integers(1 << 31)))
        print('mixes: --mix %d:%d' % (attention_test.MIX_DRAW['count'],
                                      attention_test.MIX_DRAW['seed']))
    models = {}
    for name, m, _, _ in attention_test.cases():
        if name in attention_test.MIX:
            FORMS[name] = 'decode' if attention_test.MIX[name][1]['decode'] else 'prefill'
        if name in FORMS:
            path = os.path.join(work, name + '.json')
            with open(path, 'w') as f:
                json.dump(m, f)
            models[name] = path
    failed = 0
    missing = set(FORMS) - set(models)
    if missing:
        print('FAIL: forms not in attention_test.py: %s' % sorted(missing))
        failed += 1
    for name, path in sorted(models.items()):
        for target in TARGETS:
            why = check(tcc, readobj, work, name, path, target, FORMS[name])
            failed += why is not None
            print('%s %s %s%s' % ('FAIL' if why else 'PASS', name, target,
                                  ': ' + why if why else ''))
    print('%d failed' % failed)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
