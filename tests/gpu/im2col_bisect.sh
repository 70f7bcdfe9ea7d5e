#!/usr/bin/env bash
# Runs the im2col bisect probes of tests/gpu/test_model_im2col_prefetch.cu on a Hopper machine,
# one process per probe (a load that kills the kernel ends its process's CUDA context).
# A sweep killed at case k is started again from case k + 1 (TMAKIT_IM2COL_FIRST), up to a few
# times, so each probe names several killed loads. One summary line per process.
#
#   tests/gpu/im2col_bisect.sh <test binary> <output dir> [gtest filter pattern of probes]
#
# Output: <dir>/summary.txt, <dir>/logs/<probe>.<part>.log, <dir>/dump/*.jsonl (hardware bytes
# of mismatching and first loads, for Im2colReplay.FromDump).
set -u
bin=$1
out=$2
only=${3:-}
mkdir -p "$out/logs" "$out/dump"
summary=$out/summary.txt
export TMAKIT_MODEL_TRACE=1 TMAKIT_IM2COL_DUMP_DIR=$out/dump

# $1 label, $2 gtest filter, $3 restarts after a killed load
probe() {
  local label=$1 filter=$2 restarts=$3 first=0 part=0
  if [ -n "$only" ] && [[ "$label" != $only ]]; then return; fi
  while :; do
    local log=$out/logs/$label.$part.log
    local t0=$SECONDS
    TMAKIT_IM2COL_FIRST=$first timeout 60 "$bin" --gtest_also_run_disabled_tests \
      --gtest_filter="$filter" >"$log" 2>&1
    local rc=$?
    local last tally err
    last=$(grep -E '^\[[A-Za-z0-9_]+\] case [0-9]+:' "$log" | tail -1)
    tally=$(grep -E ': [0-9]+ run, [0-9]+ matched' "$log" | tail -1)
    err=$(grep -m1 -oE 'cuda[A-Za-z]+\([^)]*\): .*' "$log" | head -1)
    if [ -n "$tally" ]; then
      echo "$label part $part from case $first rc $rc $((SECONDS - t0))s | $tally" >>"$summary"
      break
    fi
    if [ -z "$last" ]; then
      echo "$label part $part rc $rc | no load ran: $(grep -m1 -E 'SKIPPED|Failure' "$log")" \
        >>"$summary"
      break
    fi
    echo "$label part $part from case $first rc $rc $((SECONDS - t0))s | KILLED ($err) at: $last" \
      >>"$summary"
    [ "$part" -ge "$restarts" ] && break
    first=$(( $(echo "$last" | sed -E 's/^\[[A-Za-z0-9_]+\] case ([0-9]+):.*/\1/') + 1 ))
    part=$((part + 1))
  done
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$summary" 2>&1

# the two recorded killed loads, each with one feature taken away (None: as recorded)
for l in Loads Edges; do
  for f in None Strides OutsideBox Offsets Prefetch Hint Swizzle128Offset ChannelOutside \
    ImageOutside; do
    probe "ablate_${l}_without_$f" "*Im2colAblate.DISABLED_FirstLoad/${l}_without_$f" 0
  done
done

# plain loads with one feature each: pixel coordinates outside the box (H10, killed) ...
for f in BelowBox AboveBox; do
  probe "feature_$f" "*Im2colKillProbe.DISABLED_PlainPlusOne/$f" 4
done
# ... and the features that run (regular tests)
for f in Strides StridesOnGrid Offsets Prefetch Hint Swizzle128Offset ChannelOutside \
  ImageOutside; do
  probe "feature_$f" "*Im2colFeature.PlainPlusOne/$f" 4
done

# the im2col sweeps (pixel coordinates inside the box since H10)
probe sweep_Loads "ModelVsHardwareIm2col.Loads" 3
probe sweep_LoadsEdges "ModelVsHardwareIm2col.LoadsEdges" 3
exit 0
