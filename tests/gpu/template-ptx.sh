# Shell helpers of the kernel template scripts, sourced by
# tests/gpu/*/{check_ptx,run-on-gpu}.sh.

# The CUDA toolkit's ptxas ($PTXAS if set); empty when there is none.
find_ptxas() {
  echo "${PTXAS:-$(command -v ptxas || ls -d /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1)}"
}

# Whether ptxas -v output $1 reports no spills.
no_spills() {
  case "$1" in
    *"0 bytes spill stores, 0 bytes spill loads"*) return 0 ;;
  esac
  return 1
}

# log_ptxas PTXAS NAME LOG DIR90 DIR80: assembles DIR90/NAME.ptx for sm_90 and
# DIR80/NAME.ptx for sm_80, appending each one's registers and spills to LOG.
# Fails at the first that spills or does not assemble (saying so); the
# caller decides whether that is an error.
log_ptxas() {
  local ptxas=$1 name=$2 log=$3 arch dir line
  for arch in sm_90 sm_80; do
    dir=$4; [ $arch = sm_80 ] && dir=$5
    # A case built for sm_90 only (sm_80's smaller shared memory refuses it).
    [ $arch = sm_80 ] && [ ! -f "$dir/$name.ptx" ] && continue
    # PTX for sm_90a (wgmma) assembles only for it.
    [ $arch = sm_90 ] && grep -q '^\.target sm_90a' "$dir/$name.ptx" && arch=sm_90a
    line=$("$ptxas" -arch=$arch -v "$dir/$name.ptx" -o /dev/null 2>&1 |
      grep -E "registers|spill" | tr -s ' \n' ' ')
    echo "$name $arch: $line" >> "$log"
    [ $arch = sm_90a ] && arch=sm_90
    no_spills "$line" ||
      { echo "ptxas: $name $arch spills or failed: $line"; return 1; }
  done
}

# build_runtime ROOT CARRY OUT BUILD: on the GPU machine, the runtime-only tcc
# (g++, no compiler, no tests) in BUILD, with the packages CARRY/deps holds;
# its log in OUT/build.log. Fails (printing the log's tail) when it does not
# build.
build_runtime() {
  local root=$1 carry=$2 out=$3 build=$4
  echo "== build the runtime-only tcc"
  if ! cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DTCC_BUILD_COMPILER=OFF \
      -DTCC_BUILD_TESTS=OFF -DCMAKE_PREFIX_PATH="$carry/deps/usr" \
      > "$out/build.log" 2>&1 || ! ninja -C "$build" tcc >> "$out/build.log" 2>&1; then
    tail -30 "$out/build.log"
    return 1
  fi
}

# sass_counts ARCH CARRY OUT "OPCODE..." NAME...: assembles CARRY/NAME.ptx for
# ARCH and prints, a line per kernel, how many of each SASS opcode it holds
# (also in OUT/sass.log); the first kernel's SASS is kept in OUT.
sass_counts() {
  local arch=$1 carry=$2 out=$3 opcodes=$4 sass name op line
  shift 4
  sass=$(mktemp -d)
  PATH=$PATH:$(dirname "$(find_ptxas)")
  for name in "$@"; do
    ptxas -arch="$arch" "$carry/$name.ptx" -o "$sass/$name.cubin" &&
      cuobjdump -sass "$sass/$name.cubin" > "$sass/$name.sass" || continue
    line="$name:"
    for op in $opcodes; do
      line="$line $op $(grep -c "$op" "$sass/$name.sass"),"
    done
    echo "${line%,}"
  done | tee "$out/sass.log"
  for name in "$@"; do
    cp "$sass/$name.sass" "$out/" 2>/dev/null && break
  done
  rm -rf "$sass"
}

# check_case GEN PTXAS TMP CHIP NAME "PATTERNS" FLAGS...: generates case NAME
# for CHIP with the template generator GEN into TMP, checks that its PTX
# holds every pattern, and (with PTXAS) that it assembles without spills,
# printing its registers. Prints a FAIL line for each miss; fails if any.
check_case() {
  local gen=$1 ptxas=$2 tmp=$3 chip=$4 name=$5 want=$6 ok=0 pat rep
  shift 6
  if ! "$gen" --name "$name" --out-dir "$tmp" --chip "$chip" "$@" > /dev/null; then
    echo "FAIL $name $chip: $(basename "$gen") failed"; return 1
  fi
  for pat in $want; do
    grep -q -- "$pat" "$tmp/$name.ptx" || { echo "FAIL $name $chip: no $pat"; ok=1; }
  done
  if [ -n "$ptxas" ]; then
    rep=$("$ptxas" -arch="$chip" -v "$tmp/$name.ptx" -o /dev/null 2>&1)
    no_spills "$rep" || { echo "FAIL $name $chip: ptxas: $rep" | head -5; ok=1; }
    echo "$name $chip: $(echo "$rep" | grep -o 'Used [0-9]* registers')"
  fi
  return $ok
}
