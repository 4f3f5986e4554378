#!/usr/bin/env bash
# A local Prefect for this checkout: server on 127.0.0.1, a process work pool, the deployments of prefect.yaml,
# the `judge` concurrency limit and one worker. Run it from anywhere; it works in the repository root.
#
#   scripts/prefect-local.sh up      start server + worker, register pool, limit and deployments (idempotent)
#   scripts/prefect-local.sh down    stop the worker and the server this script started
#   scripts/prefect-local.sh env     print the exports that point a shell at this server
#
# Settings (environment): PREFECT_LOCAL_PORT (4200), PREFECT_HOME (.prefect/ in the repo, gitignored),
# WATERCOLOUR_JUDGE_LIMIT (4: judge-bound rollouts in flight across all runs).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
PORT="${PREFECT_LOCAL_PORT:-4200}"
export PREFECT_HOME="${PREFECT_HOME:-$ROOT/.prefect}"
export PREFECT_API_URL="http://127.0.0.1:$PORT/api"
# Telemetry heartbeats made SQLite report "database is locked" under load.
export PREFECT_SERVER_ANALYTICS_ENABLED=false
PREFECT="${PREFECT_BIN:-$ROOT/.venv/bin/prefect}"
POOL=local-process
mkdir -p "$PREFECT_HOME"

running() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

up() {
  if ! running "$PREFECT_HOME/server.pid"; then
    nohup "$PREFECT" server start --host 127.0.0.1 --port "$PORT" >"$PREFECT_HOME/server.log" 2>&1 &
    echo $! >"$PREFECT_HOME/server.pid"
  fi
  # A cold start (database migrations) took 16 s on a quiet 2-core box; allow for a loaded one.
  for _ in $(seq 1 180); do
    if curl -fsS "$PREFECT_API_URL/health" >/dev/null 2>&1; then break; fi
    running "$PREFECT_HOME/server.pid" || { cat "$PREFECT_HOME/server.log"; echo "prefect server exited" >&2; exit 1; }
    sleep 1
  done
  curl -fsS "$PREFECT_API_URL/health" >/dev/null || { echo "server not healthy after 180 s: see $PREFECT_HOME/server.log" >&2; exit 1; }

  "$PREFECT" work-pool inspect "$POOL" >/dev/null 2>&1 || "$PREFECT" work-pool create "$POOL" --type process
  "$PREFECT" global-concurrency-limit inspect judge >/dev/null 2>&1 \
    || "$PREFECT" global-concurrency-limit create judge --limit "${WATERCOLOUR_JUDGE_LIMIT:-4}"
  "$PREFECT" deploy --all --no-prompt

  if ! running "$PREFECT_HOME/worker.pid"; then
    nohup "$PREFECT" worker start --pool "$POOL" --type process >"$PREFECT_HOME/worker.log" 2>&1 &
    echo $! >"$PREFECT_HOME/worker.pid"
  fi
  echo "Prefect UI: http://127.0.0.1:$PORT  (worker log: $PREFECT_HOME/worker.log)"
  echo "Point a shell at it:  eval \"\$($0 env)\""
}

down() {
  for name in worker server; do
    if running "$PREFECT_HOME/$name.pid"; then
      kill "$(cat "$PREFECT_HOME/$name.pid")"
      echo "stopped the $name"
    fi
    rm -f "$PREFECT_HOME/$name.pid"
  done
}

env_exports() {
  echo "export PREFECT_HOME='$PREFECT_HOME' PREFECT_API_URL='$PREFECT_API_URL' PREFECT_SERVER_ANALYTICS_ENABLED=false"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  env) env_exports ;;
  *) echo "usage: $0 [up|down|env]" >&2; exit 2 ;;
esac
