#!/usr/bin/env bash
# A local Prefect for this checkout: server on 127.0.0.1, a process work pool, the deployments of prefect.yaml,
# the `judge` concurrency limit and one worker. Run it from anywhere; it works in the repository root.
#
#   scripts/prefect-local.sh up      start server + worker, register pool, limit and deployments (idempotent; a
#                                    worker whose environment changed is restarted, unless runs are in flight)
#   scripts/prefect-local.sh down    stop the worker and the server this script started, and wait until both are gone
#   scripts/prefect-local.sh env     print the exports that point a shell at this server and this checkout's prefect
#   scripts/prefect-local.sh logs RUN [--level L]
#                                    a flow run's log (id or name), each line with the task that wrote it
#
# Settings (environment): PREFECT_LOCAL_PORT (4200), PREFECT_HOME (.prefect/ in the repo, gitignored),
# WATERCOLOUR_JUDGE_LIMIT (4: judge-bound rollouts in flight across all runs), WATERCOLOUR_CRASH_AFTER_S (300: a
# training run with no heartbeat this long is marked Crashed, deployments/automations.py), PREFECT_BIN and
# PYTHON_BIN (the prefect command and the Python to use, default this checkout's .venv).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
PORT="${PREFECT_LOCAL_PORT:-4200}"
export PREFECT_HOME="${PREFECT_HOME:-$ROOT/.prefect}"
export PREFECT_API_URL="http://127.0.0.1:$PORT/api"
# Telemetry heartbeats made SQLite report "database is locked" under load.
export PREFECT_SERVER_ANALYTICS_ENABLED=false
BIN="$ROOT/.venv/bin"
PREFECT="${PREFECT_BIN:-$BIN/prefect}"
PY="${PYTHON_BIN:-$BIN/python}"
POOL=local-process
mkdir -p "$PREFECT_HOME"

running() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Each process is started in a session of its own (setsid), so its pid is its process group: `down` ends the
# worker together with the flow-run processes it spawned; `stop` reports only what it saw end.
start() {
  local name="$1"
  shift
  setsid nohup "$@" >"$PREFECT_HOME/$name.log" 2>&1 </dev/null &
  echo $! >"$PREFECT_HOME/$name.pid"
}

stop() {
  local name="$1" pidfile="$PREFECT_HOME/$1.pid" pid
  if ! running "$pidfile"; then
    rm -f "$pidfile"
    return
  fi
  pid="$(cat "$pidfile")"
  # A Prefect worker took one SIGTERM (or SIGINT) as "finish gracefully" and kept polling for 10 s and more, while a
  # second SIGTERM ended it at once (measured). So: TERM, up to 5 s, TERM again, up to 15 s, then KILL.
  local signal wait
  for signal in TERM:25 TERM:75 KILL:50; do
    wait="${signal#*:}"
    signal="${signal%:*}"
    [[ "$signal" != KILL ]] || echo "the $name outlived two SIGTERMs: killing it"
    kill "-$signal" -- "-$pid" 2>/dev/null || kill "-$signal" "$pid" 2>/dev/null || true
    for _ in $(seq 1 "$wait"); do
      kill -0 "$pid" 2>/dev/null || break 2
      sleep 0.2
    done
  done
  rm -f "$pidfile"
  echo "stopped the $name (pid $pid)"
}

# What the worker's flow runs see of the environment that matters to them: one `NAME hash` line per variable, so a
# change is noticed and named without a value (a token) ever being written down.
environment() {
  { env | grep -E '^(HF_|HUGGING_FACE_|WATERCOLOUR_|TRACKIO_|OMP_NUM_THREADS=)' || true; } | sort | while IFS='=' read -r name value; do
    echo "$name $(printf '%s' "$value" | sha256sum | cut -c1-12)"
  done
}

in_flight() {
  curl -fsS -X POST "$PREFECT_API_URL/flow_runs/count" -H 'content-type: application/json' \
    -d '{"flow_runs": {"state": {"type": {"any_": ["RUNNING", "PENDING", "CANCELLING"]}}}}'
}

# The flow runs inherit the worker's environment, and their stderr lands in worker.log: no tqdm progress bars and no
# FutureWarnings there, and one torch thread unless the caller chose (two on a 2-core box ran 8x slower than one).
start_worker() {
  environment >"$PREFECT_HOME/worker.env"
  start worker env TQDM_DISABLE=1 OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" \
    PYTHONWARNINGS="${PYTHONWARNINGS:+$PYTHONWARNINGS,}ignore::FutureWarning" \
    "$PREFECT" worker start --pool "$POOL" --type process
}

up() {
  if ! running "$PREFECT_HOME/server.pid"; then
    start server "$PREFECT" server start --host 127.0.0.1 --port "$PORT"
  fi
  # A cold start (database migrations) took 16 s on a quiet 2-core box; allow for a loaded one.
  for _ in $(seq 1 180); do
    if curl -fsS "$PREFECT_API_URL/health" >/dev/null 2>&1; then break; fi
    running "$PREFECT_HOME/server.pid" || { cat "$PREFECT_HOME/server.log"; echo "prefect server exited" >&2; exit 1; }
    sleep 1
  done
  curl -fsS "$PREFECT_API_URL/health" >/dev/null || { echo "server not healthy after 180 s: see $PREFECT_HOME/server.log" >&2; exit 1; }

  "$PREFECT" work-pool inspect "$POOL" >/dev/null 2>&1 || "$PREFECT" work-pool create "$POOL" --type process >/dev/null
  "$PREFECT" global-concurrency-limit inspect judge >/dev/null 2>&1 \
    || "$PREFECT" global-concurrency-limit create judge --limit "${WATERCOLOUR_JUDGE_LIMIT:-4}" >/dev/null
  # `prefect deploy` ends every deployment's summary with the same "start a worker" advice; this script starts the
  # worker itself, so the advice is dropped and the deployments are listed once.
  "$PREFECT" deploy --all --no-prompt >"$PREFECT_HOME/deploy.log" 2>&1 || { cat "$PREFECT_HOME/deploy.log"; exit 1; }
  echo "deployed: $(grep -oE "Deployment '[^']+'" "$PREFECT_HOME/deploy.log" | cut -d"'" -f2 | sort -u | paste -sd' ')"
  "$PY" -m deployments.automations --crash-after-s "${WATERCOLOUR_CRASH_AFTER_S:-300}"

  if running "$PREFECT_HOME/worker.pid"; then
    local changed
    changed="$(diff <(environment) "$PREFECT_HOME/worker.env" 2>/dev/null | grep -E '^[<>]' | cut -c3- | cut -d' ' -f1 | sort -u | paste -sd' ' || true)"
    if [[ -n "$changed" ]]; then
      local busy
      busy="$(in_flight)"
      if [[ "$busy" != "0" ]]; then
        echo "the worker's environment changed ($changed) but $busy flow run(s) are in flight: not restarting it." >&2
        echo "Run '$0 up' again once they finish, or '$0 down' to stop everything." >&2
        exit 1
      fi
      echo "the worker's environment changed ($changed): restarting it"
      stop worker
      start_worker
    else
      echo "worker already running (pid $(cat "$PREFECT_HOME/worker.pid")), environment unchanged"
    fi
  else
    start_worker
  fi
  echo "Prefect UI: http://127.0.0.1:$PORT  (logs: $PREFECT_HOME/server.log, $PREFECT_HOME/worker.log)"
  echo "Point a shell at it:  eval \"\$($0 env)\""
}

down() {
  stop worker
  stop server
}

env_exports() {
  echo "export PATH='$BIN':\"\$PATH\" PREFECT_HOME='$PREFECT_HOME' PREFECT_API_URL='$PREFECT_API_URL' PREFECT_SERVER_ANALYTICS_ENABLED=false"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  env) env_exports ;;
  logs) shift; "$PY" scripts/run_log.py "$@" ;;
  *) echo "usage: $0 [up|down|env|logs RUN]" >&2; exit 2 ;;
esac
