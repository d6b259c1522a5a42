#!/usr/bin/env bash
# A cluster of separate processes on 127.0.0.1: `dask scheduler`, two `dask worker` (no nanny, so a killed worker
# stays dead), then `ember bench dist --scheduler ... --kill-after KILL_AFTER`: one worker process is SIGKILLed
# KILL_AFTER seconds into the run (by pid: the workers run on this host).
# Usage: bench/run/kill_worker.sh [LOG_N] [TASKS] [KILL_AFTER]   (prints the run's JSON; expects workers_lost >= 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=build/venv/bin
LOG_N=${1:-15}; TASKS=${2:-16}; KILL_AFTER=${3:-1}
PORT=$($BIN/python -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
ADDR=tcp://127.0.0.1:$PORT
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
$BIN/dask scheduler --host 127.0.0.1 --port "$PORT" --no-dashboard >/dev/null 2>&1 & pids+=($!)
sleep 3
$BIN/dask worker "$ADDR" --nthreads 2 --no-nanny --host 127.0.0.1 --no-dashboard >/dev/null 2>&1 & pids+=($!)
$BIN/dask worker "$ADDR" --nthreads 2 --no-nanny --host 127.0.0.1 --no-dashboard >/dev/null 2>&1 & pids+=($!)
sleep 5
$BIN/ember bench dist --workload batch --scheduler "$ADDR" --log-n "$LOG_N" --tasks "$TASKS" --runs 1 --no-baseline \
    --kill-after "$KILL_AFTER" 2> >(grep -v "^INFO\|distributed\." >&2)
