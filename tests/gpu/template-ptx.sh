# Shell helpers of the kernel template scripts, sourced by
# tests/gpu/{matmul,flash}/{check_ptx,run-on-gpu}.sh.

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
    line=$("$ptxas" -arch=$arch -v "$dir/$name.ptx" -o /dev/null 2>&1 |
      grep -E "registers|spill" | tr -s ' \n' ' ')
    echo "$name $arch: $line" >> "$log"
    no_spills "$line" ||
      { echo "ptxas: $name $arch spills or failed: $line"; return 1; }
  done
}
