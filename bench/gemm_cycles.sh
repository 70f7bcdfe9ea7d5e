#!/usr/bin/env bash
# SM cycles of one FP8 GEMM call (one launch each, caches flushed): tmakit's plan and
# cuBLASLt, each in both accumulation modes, against the tensor cores' peak for the shape (2 M
# N K FLOP at 8192 FP8 FLOP per cycle per SM). Cycles, not times: a power-limited clock differs
# between kernels.
# NOTE: the GPU's clocks are left as they are (ncu --clock-control none) unless
# NCU_CLOCK_CONTROL names another of ncu's modes: "base" locks them at base for the profiled
# launch, as ncu does by default, which changes a setting of the card; do that only on a GPU
# that is yours to change.
# A ratio of cycles is the speed-up at equal clocks, and no kernel's cycles can go below the
# peak's: cuBLASLt at a share s of the peak bounds any speed-up over it at x <= 1 / s.
#
# For the tiled and two-wave kernels (M above 128 or so): the small-M kernel is also what the
# bench's host-overhead row calls, which would be the launch profiled.
#   bench/gemm_cycles.sh [MxNxK ...]    (default: the bench's shapes with M >= 1024)
#   TMAKIT=path/to/tmakit NCU=ncu       (defaults: build/tools/tmakit, ncu on PATH)
#   NCU_CLOCK_CONTROL=none|base         (default none)
# Prints a Markdown table; ncu's own output goes to ${LOG_DIR:-/tmp/gemm_cycles}.
set -euo pipefail
cd "$(dirname "$0")/.."
tmakit=${TMAKIT:-build/tools/tmakit}
ncu=${NCU:-ncu}
clock_control=${NCU_CLOCK_CONTROL:-none}
case "$clock_control" in
  none | base) ;;
  *) echo "gemm_cycles: NCU_CLOCK_CONTROL=$clock_control is not none or base" >&2; exit 1 ;;
esac
log_dir=${LOG_DIR:-/tmp/gemm_cycles}
mkdir -p "$log_dir"
shapes=("$@")
if ((${#shapes[@]} == 0)); then
  shapes=(1024x4096x4096 4096x4096x4096 4096x7168x2048 8192x8192x8192 8192x10240x8192
    8192x8192x28672 8192x57344x8192)
fi
for s in "${shapes[@]}"; do
  if [[ ! "$s" =~ ^[1-9][0-9]*x[1-9][0-9]*x[1-9][0-9]*$ ]]; then
    echo "gemm_cycles: $s is not MxNxK" >&2
    exit 1
  fi
done
command -v "$ncu" >/dev/null || { echo "gemm_cycles: $ncu not found (set NCU)" >&2; exit 1; }
[ -x "$tmakit" ] || { echo "gemm_cycles: $tmakit not built (set TMAKIT)" >&2; exit 1; }
# one kernel's SM cycles (max over SMs), its clock in GHz and the SM count, or "- - -"
sm_count=device__attribute_multiprocessor_count
cycles() {  # shape case kernel-regex
  local log="$log_dir/$1_$2.csv" m n k
  IFS=x read -r m n k <<<"$1"
  # NOTE: the bench declares the default mode's case before the fast one, so the first launch
  # the regex matches under --filter "<shape>/tmakit" is the default case's check
  "$ncu" --clock-control "$clock_control" --launch-count 1 -k "regex:$3" --csv --print-units base \
    --metrics "sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second,$sm_count" \
    "$tmakit" bench --gemm-shape "$1" --filter "gemm/fp8/m${m}n${n}k${k}/$2" >"$log" 2>&1 || true
  awk -F'","' '
    function value(s) { gsub(/[",]/, "", s); return s }
    $13 == "sm__cycles_elapsed.max" { c = value($15) }
    $13 == "sm__cycles_elapsed.avg.per_second" { f = value($15) }
    $13 == "device__attribute_multiprocessor_count" { n = value($15) }
    END { if (c == "" || n == "") print "- - -"; else printf "%s %.2f %s\n", c, f / 1e9, n }' "$log"
}

echo "| M×N×K | tmakit | cuBLASLt | tmakit-fast | cuBLASLt-fast |"
echo "|---|---|---|---|---|"
for s in "${shapes[@]}"; do
  row="| ${s//x/×}"
  for c in "tmakit sm90_gemm_fp8_kernel|sm90_gemm_fp8_waves_kernel" \
    "cublaslt-fp8 nvjet|xmma|cutlass" \
    "tmakit-fast sm90_gemm_fp8_kernel|sm90_gemm_fp8_waves_kernel" \
    "cublaslt-fp8-fast nvjet|xmma|cutlass"; do
    read -r cyc ghz sms <<<"$(cycles "$s" "${c%% *}" "${c#* }")"
    if [ "$cyc" = "-" ]; then
      row+=" | not measured"
    else
      # share of the peak: 2 M N K FLOP at 8192 FLOP per cycle on each SM
      row+=$(awk -v s="$s" -v c="$cyc" -v g="$ghz" -v sms="$sms" 'BEGIN {
        split(s, d, "x"); peak = 2 * d[1] * d[2] * d[3] / (8192 * sms)
        printf " | %.1f k cycles at %.2f GHz: %.3f of the peak", c / 1e3, g, peak / c }')
    fi
  done
  echo "$row |"
done
