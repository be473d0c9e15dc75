#!/usr/bin/env bash
# Issue 13's tables (attention forms, decode, reduction chains against
# torch.compile) in a few device calls, each step a group of cases with a
# deadline of its own, so that a call's output stays a summary.
#
#   bench/issue13.sh prepare        here: compiles the cases' bundles into
#                                   .carry/issue13 (git-ignored, ~14 MB) with
#                                   build/compiler/tcc (or $TCC), records
#                                   attention_test.py's safe-softmax cases
#   bench/issue13.sh STEP...        on the GPU machine (carry .carry/issue13):
#                                   builds the runtime-only tcc once, runs
#                                   each STEP, prints one line a case
#
# STEP: GROUP[:DEADLINE_S] with GROUP one of prefill1 prefill8 decode8192
# decode32768 red_bf16 red_f16 red_f32 (the case lists below), or safe
# (replay the recorded safe-softmax cases). Logs and JSON go to $OUT/GROUP.
# A step stops starting cases after its deadline (default 300 s).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
carry=$root/.carry/issue13

forms='causal softcap alibi_param padmask bias_s4096_h8 bias_s8192_h8 alibi gqa window
  causal_layout causal_ktrans causal_fill causal_safe global global_layout causal_packed'
prefill() { # $1: batch
  for f in $forms; do
    case $f in
      alibi_param|padmask) [ "$1" = 1 ] && echo ${f}_8192_f16 || echo ${f}_8192_b$1_f16 ;;
      bias_*) [ "$1" = 1 ] && echo ${f}_f16 || echo ${f}_b$1_f16 ;;
      *) echo attn_${f}_b$1_f16 ;;
    esac
  done
  [ "$1" = 1 ] && printf '%s\n' alibi_input_8192_f16 attn_causal_handwritten_b1_f16 \
    attn_causal_flat_b1_f16 attn_causal_mla_b1_f16 attn_global_mla_b1_f16
}
decode() { # $1: keys
  for b in 1 8; do
    for v in causal alibi gqa softcap window causal_layout bias padmask alibi_param; do
      echo decode_${v}_$1_b${b}_f16
    done
  done
}
reductions() { # $1: dtype
  local k n
  local kinds='softmax log_softmax layer_norm rms_norm cross_entropy'
  case $1 in
    bf16) for k in $kinds; do echo $k; for n in 1001 5003; do echo ${k}_$n; done; done
          lengths='7 100 50257' ;;
    *) lengths='7 100 3001 32768 50257 131072'
       echo layer_norm_8191_$1; echo rms_norm_8191_$1 ;;
  esac
  for n in $lengths; do for k in $kinds; do echo ${k}_${n}_$1; done; done
}
group() {
  case $1 in
    prefill1) prefill 1 ;; prefill8) prefill 8 ;;
    decode8192) decode 8192 ;; decode32768) decode 32768 ;;
    red_bf16) reductions bf16 ;; red_f16) reductions f16 ;; red_f32) reductions f32 ;;
    *) return 1 ;;
  esac
}

if [ "${1:-}" = prepare ]; then
  set -e
  tcc=${TCC:-$root/build/compiler/tcc}
  [ -x "$tcc" ] || { echo "no compiler at $tcc (set TCC)"; exit 1; }
  rm -rf "$carry"
  mkdir -p "$carry/deps/usr/include" "$carry/deps/usr/share/cmake"
  cp -r /usr/include/nlohmann "$carry/deps/usr/include/"
  cp -r /usr/share/cmake/nlohmann_json "$carry/deps/usr/share/cmake/"
  att=$(for g in prefill1 prefill8 decode8192 decode32768; do group $g; done | paste -sd,)
  red=$(for g in red_bf16 red_f16 red_f32; do group $g; done | paste -sd,)
  /usr/bin/python3 "$root/bench/models.py" --out "$carry/attention" --tcc "$tcc" \
    --target sm_90 --only "$att" > "$carry/prepare.log"
  /usr/bin/python3 "$root/bench/models.py" --out "$carry/rows" --tcc "$tcc" \
    --target sm_90 --only "$red" >> "$carry/prepare.log"
  /usr/bin/python3 "$root/tests/gpu/attention_test.py" --tcc "$tcc" --record "$carry/safe" \
    --target sm_90a --only safe_,decode_safe >> "$carry/prepare.log"
  echo "prepared $carry ($(du -sh "$carry" | cut -f1)); on the GPU machine, carry .carry/issue13:"
  echo "  bash bench/issue13.sh prefill1:280 prefill8:190"
  exit 0
fi

[ -d "$carry/attention" ] || { echo "no $carry: run 'bench/issue13.sh prepare' first"; exit 1; }
out=${OUT:-$root/out}
mkdir -p "$out"
build=${TCC_BENCH_BUILD:-/tmp/tcc-bench-build}
if [ ! -x "$build/runtime/tcc" ]; then
  start=$SECONDS
  { cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=gcc \
      -DCMAKE_CXX_COMPILER=g++ -DTCC_BUILD_COMPILER=OFF -DTCC_BUILD_TESTS=OFF \
      -DCMAKE_PREFIX_PATH="$carry/deps/usr" && ninja -C "$build" tcc; } > "$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log"; exit 1; }
  echo "runtime built in $((SECONDS - start)) s"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
tcc=$build/runtime/tcc
status=0
for step; do
  name=${step%%:*}
  deadline=300
  [ "$name" != "$step" ] && deadline=${step#*:}
  mkdir -p "$out/$name"
  if [ "$name" = safe ]; then
    PYTHONUNBUFFERED=1 timeout 300 python3 "$root/tests/gpu/attention_test.py" --tcc "$tcc" \
      --replay "$carry/safe" > "$out/safe/log.txt" 2>&1 || status=1
    grep -E '^(PASS|FAIL)|passed' "$out/safe/log.txt"
    continue
  fi
  only=$(group "$name" | paste -sd,) || { echo "unknown step $name"; status=1; continue; }
  case $name in
    red_*) script=gpu_bench.py; folder=rows; kind=rows ;;
    *) script=attention_bench.py; folder=attention; kind=attention ;;
  esac
  PYTHONUNBUFFERED=1 timeout $((deadline + 120)) python3 "$root/bench/$script" --tcc "$tcc" \
    --carry "$carry/$folder" --out "$out/$name" --only "$only" --deadline "$deadline" \
    > "$out/$name/log.txt" 2>&1 || status=1
  echo "== $name"
  python3 "$root/bench/table_summary.py" "$kind" "$out/$name" || status=1
done
exit $status
