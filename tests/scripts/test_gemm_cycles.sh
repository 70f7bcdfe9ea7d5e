#!/usr/bin/env bash
# bench/gemm_cycles.sh against a stand-in ncu (no GPU): what it asks ncu for, how it reads
# ncu's CSV, the shares of the tensor cores' peak it prints, and its refusals.
# Usage: test_gemm_cycles.sh <path to bench/gemm_cycles.sh>
set -uo pipefail
script=$(realpath "${1:?usage: test_gemm_cycles.sh <path to bench/gemm_cycles.sh>}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=SCRIPTDIR/expect.sh
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

# The stand-in: logs its arguments; answers as ncu --csv does for one profiled kernel (the
# numbers depend on the kernel regex), or with no kernel at all when the filter names M = 64.
cat >"$work/ncu" <<'STUB'
#!/usr/bin/env bash
echo "$*" >>"$NCU_ARGS"
regex=; filter=
while (($#)); do
  case "$1" in -k) regex=$2; shift ;; --filter) filter=$2; shift ;; esac
  shift
done
echo "case   GB   median"  # the bench's own table, which the script must skip
case "$filter" in */m64n*) exit 0 ;; esac
case "$regex" in *nvjet*) cycles='46,093' name=nvjet_sm90_qqtst_128x128 ;;
  *) cycles='47,143' name='void sm90_gemm_fp8_waves_kernel<WaveConfig<2, 128, 4>>(Params)' ;;
esac
head='"0","1","tmakit","host","'$name'","1","14","(384, 1, 1)","(128, 1, 1)","0","9.0","Command line profiler metrics"'
echo '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
echo "$head,\"device__attribute_multiprocessor_count\",\"\",\"132\""
echo "$head,\"sm__cycles_elapsed.avg.per_second\",\"hz\",\"1,370,000,000\""
echo "$head,\"sm__cycles_elapsed.max\",\"cycle\",\"$cycles\""
STUB
chmod +x "$work/ncu"
printf '#!/usr/bin/env bash\nexit 0\n' >"$work/tmakit"
chmod +x "$work/tmakit"
export NCU_ARGS=$work/args LOG_DIR=$work/logs TMAKIT=$work/tmakit NCU=$work/ncu

# 1. one shape: four profiled kernels, each with its share of 2MNK / (8192 x 132) = 31775 cycles
out=$(bash "$script" 1024x4096x4096 2>&1)
rc=$?
expect "exit 0" test $rc -eq 0
expect "a Markdown table" has "| M×N×K | tmakit | cuBLASLt | tmakit-fast | cuBLASLt-fast |" "$out"
expect "tmakit's cycles and share" has \
  "| 1024×4096×4096 | 47.1 k cycles at 1.37 GHz: 0.674 of the peak | 46.1 k cycles at 1.37 GHz: 0.689 of the peak |" "$out"
expect "four ncu runs" test "$(wc -l <"$NCU_ARGS")" -eq 4
args=$(cat "$NCU_ARGS")
expect "the default case by its id" has "--filter gemm/fp8/m1024n4096k4096/tmakit" "$args"
expect "cuBLASLt fast by its id" has "--filter gemm/fp8/m1024n4096k4096/cublaslt-fp8-fast" "$args"
expect "one launch, the tiled and two-wave kernels only" has \
  "--launch-count 1 -k regex:sm90_gemm_fp8_kernel|sm90_gemm_fp8_waves_kernel" "$args"
expect "SM cycles and the clock" has \
  "--metrics sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second" "$args"
expect "ncu's output kept" test -s "$work/logs/1024x4096x4096_tmakit.csv"
expect "the GPU's clocks left alone by default" test \
  "$(grep -c -- "--clock-control none " "$NCU_ARGS")" -eq 4

# 1b. base clocks only when asked
: >"$NCU_ARGS"
NCU_CLOCK_CONTROL=base bash "$script" 1024x4096x4096 >/dev/null 2>&1
expect "NCU_CLOCK_CONTROL=base: ncu told so" test \
  "$(grep -c -- "--clock-control base " "$NCU_ARGS")" -eq 4

# 2. a shape whose kernels ncu never saw: said, not a number
out=$(bash "$script" 64x4096x4096 2>&1)
expect "not measured" has "| 64×4096×4096 | not measured | not measured | not measured | not measured |" "$out"

# 3. refusals, before any ncu run
: >"$NCU_ARGS"
out=$(bash "$script" 4096x4096 2>&1)
rc=$?
expect "a shape not MxNxK: exit 1" test $rc -eq 1
expect "a shape not MxNxK: named" has "gemm_cycles: 4096x4096 is not MxNxK" "$out"
expect "a shape not MxNxK: no ncu run" test ! -s "$NCU_ARGS"
out=$(NCU=$work/no-such-ncu bash "$script" 2>&1)
rc=$?
expect "no ncu: exit 1" test $rc -eq 1
expect "no ncu: named" has "no-such-ncu not found" "$out"
out=$(NCU_CLOCK_CONTROL=boost bash "$script" 2>&1)
rc=$?
expect "an unknown clock control: exit 1" test $rc -eq 1
expect "an unknown clock control: named" has "NCU_CLOCK_CONTROL=boost is not none or base" "$out"
expect "an unknown clock control: no ncu run" test ! -s "$NCU_ARGS"
out=$(TMAKIT=$work/no-such-tmakit bash "$script" 2>&1)
rc=$?
expect "no tmakit: exit 1" test $rc -eq 1
expect "no tmakit: named" has "no-such-tmakit not built" "$out"

expect_summary
