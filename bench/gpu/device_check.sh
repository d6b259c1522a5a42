#!/usr/bin/env bash
# The CUDA kernels' checks on a machine with an NVIDIA GPU, as one prepared run that fits a 10-minute command:
#
#     bash bench/gpu/device_check.sh OUTDIR          # from the repository root (or anywhere: it cds there)
#
# Steps, each under its own time limit (and all of them under EMBER_CHECK_SECONDS, default 560 s), each writing its
# log to OUTDIR as it runs, so that a run cut short still leaves what it did:
#   info       nvidia-smi, nvcc, cmake, compute-sanitizer versions                        -> info.log
#   configure  cmake -DEMBER_CUDA=ON (sm_90: H100 / H200; EMBER_CUDA_ARCH to change)     -> configure.log
#   build      ember_cuda_tests, ember_cuda_backend_tests, ember_cuda_heaan_tests and ember_cuda_bench,
#              -j$JOBS (16)                                                                 -> build.log
#   tests      the device tests: every kernel against the CPU backend, bit for bit         -> tests.log, tests.json
#   backend    the CUDA backend (make_backend("cuda")): every Backend operation against the
#              CPU backend, and CKKS add / mul / rotate on both, byte for byte              -> backend.log, backend.json
#   heaan      HEAAN's product on the GPU (CRT, iCRT, CRT -> NTT -> pointwise -> iNTT -> iCRT at
#              N = 2^12 and 2^16, logQ 1200) against the CPU's heaan::multiply, word for word -> heaan.log, heaan.json
#   suite      the whole C++ test suite (ember_tests) on the CUDA backend: EMBER_DEVICE=cuda    -> suite.log, suite.json
#   memcheck   compute-sanitizer --tool memcheck on the device tests at N <= 2^10          -> memcheck.log
#   racecheck  compute-sanitizer --tool racecheck on the shared-memory kernels (NTT, base
#              conversion) at N <= 2^10                                                    -> racecheck.log
#   bench      NTT forward / inverse, mul, dot (3 digits) and ModUp base conversion at
#              N = 2^16 over 24 and 384 limbs (the conversion: 24), the
#              device's copy bandwidth, and HEAAN's product at N = 2^16, logQ 1200 per
#              function (heaan_crt, heaan_ntt, heaan_pointwise, heaan_intt, heaan_icrt,
#              heaan_product) and the kernels of one HE Mul (heaan_he_mul), one JSON
#              object per line                                                             -> bench.jsonl
#   backend-memcheck  compute-sanitizer --tool memcheck on the backend's operation tests
#              (pool, transfers, caches; after the bench, so it is the step cut short)     -> backend-memcheck.log
# and OUTDIR/steps.jsonl (one line per step: name, exit status, seconds), OUTDIR/summary.txt. The exit status is
# that of the first failed step (0 when all passed).
#
# Without cmake, a compiler or GTest on the GPU machine: build here and carry the binaries (they link the CUDA
# runtime statically and need only the driver):
#     cmake -S . -B build/cuda-dev -DEMBER_CUDA=ON && cmake --build build/cuda-dev --target ember_cuda_tests ember_cuda_backend_tests ember_cuda_heaan_tests ember_cuda_bench
#     EMBER_CUDA_BUILD=build/cuda-dev EMBER_CUDA_SKIP_BUILD=1 bash bench/gpu/device_check.sh OUTDIR
set -uo pipefail

OUT=${1:?usage: bash bench/gpu/device_check.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/../.." || exit 2

BUILD=${EMBER_CUDA_BUILD:-build/cuda-check}
JOBS=${JOBS:-16}
ARCH=${EMBER_CUDA_ARCH:-90}
TOTAL=${EMBER_CHECK_SECONDS:-560}
SMALL_LOG_N=${EMBER_CHECK_SANITIZER_LOG_N:-10}
T0=$SECONDS
FIRST_FAIL=0

note() { echo "device_check: $*" | tee -a "$OUT/summary.txt"; }

# step NAME LIMIT CMD...: runs CMD with stdout and stderr to OUT/NAME.log, under min(LIMIT, time left).
step() {
    local name=$1 limit=$2
    shift 2
    local left=$((TOTAL - (SECONDS - T0)))
    if ((left < 5)); then
        note "$name: skipped (out of time)"
        echo "{\"step\": \"$name\", \"rc\": null, \"seconds\": 0, \"skipped\": \"out of time\"}" >>"$OUT/steps.jsonl"
        return 125
    fi
    ((limit > left)) && limit=$left
    local t=$SECONDS rc
    timeout -k 10 "$limit" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    local dt=$((SECONDS - t))
    echo "{\"step\": \"$name\", \"rc\": $rc, \"seconds\": $dt, \"limit\": $limit}" >>"$OUT/steps.jsonl"
    if ((rc == 0)); then
        note "$name: ok (${dt} s)"
    else
        if ((rc == 124 || rc == 137)); then
            note "$name: TIMED OUT after ${dt} s (limit ${limit} s)"
        else
            note "$name: FAILED, exit $rc (${dt} s; see $name.log)"
        fi
        ((FIRST_FAIL == 0)) && FIRST_FAIL=$rc
    fi
    return $rc
}

skip() {
    note "$1: skipped ($2)"
    echo "{\"step\": \"$1\", \"rc\": null, \"seconds\": 0, \"skipped\": \"$2\"}" >>"$OUT/steps.jsonl"
}

: >"$OUT/steps.jsonl"
: >"$OUT/summary.txt"
note "repo $(git rev-parse --short HEAD 2>/dev/null || echo '?') (plus the working tree's changes), out $OUT, build $BUILD"

# ---- info ------------------------------------------------------------------------------------------------------
SANITIZER=$(command -v compute-sanitizer || true)
for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    [[ -z $SANITIZER && -x $c ]] && SANITIZER=$c
done
# (a script for bash -c: `timeout` runs programs, not shell functions)
# shellcheck disable=SC2016  # expanded by that bash
INFO_SCRIPT='
nvidia-smi || echo "(no nvidia-smi)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" --version || echo "(no nvcc)"
cmake --version || echo "(no cmake)"
c++ --version || echo "(no c++)"
echo "compute-sanitizer: ${1:-(none)}"
echo "cores: $(nproc)"
'
step info 20 bash -c "$INFO_SCRIPT" info "$SANITIZER"

# ---- configure and build ---------------------------------------------------------------------------------------
BIN="$BUILD/tests/cuda"
if [[ ${EMBER_CUDA_SKIP_BUILD:-0} == 1 ]]; then
    skip configure "EMBER_CUDA_SKIP_BUILD=1"
    skip build "EMBER_CUDA_SKIP_BUILD=1"
else
    # nvcc is often not on PATH; CMake looks in /usr/local/cuda too
    if step configure 60 cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_TESTS=ON \
        -DCMAKE_CUDA_ARCHITECTURES="$ARCH"; then
        step build 240 cmake --build "$BUILD" -j"$JOBS" --target ember_cuda_tests ember_cuda_backend_tests ember_cuda_heaan_tests ember_cuda_bench ember_tests
    else
        skip build "configure failed"
    fi
fi
if [[ ! -x $BIN/ember_cuda_tests && -x build/cuda-dev/tests/cuda/ember_cuda_tests ]]; then
    note "using the carried binaries of build/cuda-dev/tests/cuda"
    BIN=build/cuda-dev/tests/cuda
fi

# ---- tests, sanitizers, benchmark ------------------------------------------------------------------------------
if [[ -x $BIN/ember_cuda_tests ]]; then
    step tests 120 "$BIN/ember_cuda_tests" --gtest_output="json:$OUT/tests.json"
    if grep -q "SKIPPED \]" "$OUT/tests.log" 2>/dev/null; then
        note "tests: SKIPPED (the program saw no CUDA device: no GPU was checked)"
        ((FIRST_FAIL == 0)) && FIRST_FAIL=3
    fi
    if [[ -n $SANITIZER ]]; then
        step memcheck 90 env EMBER_CUDA_TEST_MAX_LOG_N="$SMALL_LOG_N" "$SANITIZER" --tool memcheck --error-exitcode 1 \
            "$BIN/ember_cuda_tests"
        step racecheck 90 env EMBER_CUDA_TEST_MAX_LOG_N="$SMALL_LOG_N" "$SANITIZER" --tool racecheck \
            --racecheck-report hazard --error-exitcode 1 "$BIN/ember_cuda_tests" --gtest_filter='*Ntt*:*BaseConvert*'
    else
        skip memcheck "no compute-sanitizer"
        skip racecheck "no compute-sanitizer"
    fi
else
    skip tests "no ember_cuda_tests binary"
    skip memcheck "no ember_cuda_tests binary"
    skip racecheck "no ember_cuda_tests binary"
fi
if [[ -x $BIN/ember_cuda_backend_tests ]]; then
    step backend 90 "$BIN/ember_cuda_backend_tests" --gtest_output="json:$OUT/backend.json"
    if grep -q "SKIPPED \]" "$OUT/backend.log" 2>/dev/null; then
        note "backend: SKIPPED (the program saw no CUDA device: no GPU was checked)"
        ((FIRST_FAIL == 0)) && FIRST_FAIL=3
    fi
else
    skip backend "no ember_cuda_backend_tests binary"
fi
if [[ -x $BIN/ember_cuda_heaan_tests ]]; then
    step heaan 120 "$BIN/ember_cuda_heaan_tests" --gtest_output="json:$OUT/heaan.json"
    if grep -q "SKIPPED \]" "$OUT/heaan.log" 2>/dev/null; then
        note "heaan: SKIPPED (the program saw no CUDA device: no GPU was checked)"
        ((FIRST_FAIL == 0)) && FIRST_FAIL=3
    fi
else
    skip heaan "no ember_cuda_heaan_tests binary"
fi
# The whole C++ suite with every Context on the GPU (ember_tests registers the CUDA backend when built with it; its
# correctness checks are against float64, GMP and the CPU backend, so they hold unchanged on another device).
SUITE=$BUILD/tests/cpp/ember_tests
[[ -x $SUITE ]] || SUITE=build/cuda-dev/tests/cpp/ember_tests
if [[ -x $SUITE ]]; then
    step suite 150 env EMBER_DEVICE=cuda "$SUITE" --gtest_brief=1 --gtest_output="json:$OUT/suite.json"
else
    skip suite "no ember_tests binary"
fi
if [[ -x $BIN/ember_cuda_bench ]]; then
    step bench 90 "$BIN/ember_cuda_bench" --log-n 16 --limbs 24 --reps 20
    grep '^{' "$OUT/bench.log" >"$OUT/bench.jsonl" 2>/dev/null
    cat "$OUT/bench.jsonl"
else
    skip bench "no ember_cuda_bench binary"
fi
# (out-of-memory test left out: the sanitizer reports the refused allocation)
if [[ -x $BIN/ember_cuda_backend_tests && -n $SANITIZER ]]; then
    step backend-memcheck 60 "$SANITIZER" --tool memcheck --error-exitcode 1 "$BIN/ember_cuda_backend_tests" \
        --gtest_filter='CudaBackendTest.EveryOperation*:CudaBackendTest.Caches*:CudaBackendTest.Memory*'
elif [[ -x $BIN/ember_cuda_backend_tests ]]; then
    skip backend-memcheck "no compute-sanitizer"
else
    skip backend-memcheck "no ember_cuda_backend_tests binary"
fi

note "done in $((SECONDS - T0)) s, exit $FIRST_FAIL"
exit "$FIRST_FAIL"
