#!/usr/bin/env bash
# Runs every libFuzzer target (or those named) for FUZZ_SECONDS each, FUZZ_JOBS at a time, on its seed
# corpus (valid small-N objects, regenerated each run) and its growing corpus in build/fuzz/corpus/<target>.
# Exits non-zero if any target crashed; the crashing input is left in build/fuzz/crashes/. Prints one JSON line
# per target with its executions, coverage (libFuzzer's cov: edges and ft: features) and corpus size.
# Usage: fuzz/run.sh [target ...]   (environment: FUZZ_SECONDS, default 60; FUZZ_JOBS, default nproc;
#                                     FUZZ_BUILD, default build/fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-60}
b=${FUZZ_BUILD:-build/fuzz}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ciphertext plaintext public_key switching_key galois_keys secret_key bootstrap_keys)
"$b/fuzz/fuzz_make_seeds" "$b/seeds" > /dev/null
mkdir -p "$b/crashes" "$b/logs"
# One target: runs it, prints its JSON line, and on a crash the log's tail (on stderr); returns libFuzzer's status.
run_one() {
  local t=$1 log="$b/logs/$1.log" rc execs last cov ft corp
  mkdir -p "$b/corpus/$t"
  set +e  # to the end: a crashed target's log lacks the statistics that the greps look for
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$b/fuzz/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=2048 -timeout=30 \
    -artifact_prefix="$b/crashes/$t-" "$b/corpus/$t" "$b/seeds/$t" > "$log" 2>&1
  rc=$?
  execs=$(grep -o 'number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | awk '{print $2}')
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | awk '{print $2}')
  corp=$(ls "$b/corpus/$t" | wc -l)
  echo "{\"target\": \"$t\", \"seconds\": $secs, \"executions\": ${execs:-0}, \"cov_edges\": ${cov:-0}, \"features\": ${ft:-0}, \"corpus\": $corp, \"rc\": $rc}"
  if [ $rc -ne 0 ]; then
    echo "fuzz_$t FAILED (rc $rc); log: $log, input: $(ls -t "$b/crashes/$t-"* 2>/dev/null | head -1)" >&2
    tail -40 "$log" >&2
  fi
  set -e
  return $rc
}

# FUZZ_JOBS targets at a time (default: one per core); every target runs, and the run fails if any crashed.
jobs=${FUZZ_JOBS:-$(nproc)}
failed=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
exit $failed
