#!/bin/bash
# The user's own command on one GPU: `prefect deployment run train/judge-led`, with the recipe's policy as a rehearsal
# (its published shape, random weights), real renders and stand-ins of its services (the scorer Space's app behind a
# stand-in Hub, an OpenAI-compatible judge), then SIGKILLed in the middle of a step and retried; beside it, the GPU
# benchmark's recipe step and `watercolour rehearse`, in the same lease. Stages run on the GPU machine from the
# repository root, a few per device call; results go to $OUT (default ./gpu-out). Background processes (the Prefect
# server and worker, the stand-ins, the run) outlive a call while the machine stays warm.
#
#     bash lab/scripts/gpu_prefect_wheels.sh; bash lab/scripts/render_bundle/build.sh          # here, once
#     bash lab/scripts/gpu_prefect.sh park .gpu/wheels/p1                                  # one call each, carried:
#     bash lab/scripts/gpu_prefect.sh park .gpu/wheels/p2 park .gpu/render/parts/p5 install  # ... and the render parts
#     bash lab/scripts/gpu_prefect.sh up run watch                  # server, worker, stand-ins; the run; its steps
#     STALENESS=2 RUN_DIR=/tmp/prefect-pipelined bash lab/scripts/gpu_prefect.sh run watch report   # the same run
#                                                               # pipelined (training.pipeline.max_staleness=2),
#                                                               # on the same draws, then its projection
#     bash lab/scripts/gpu_prefect.sh kill retry watch              # SIGKILL in step 3, Crashed, Space asleep, Retry
#     bash lab/scripts/gpu_prefect.sh lose bench asleep retry       # or: the machine lost in step 3 (flow and worker
#                                                               # SIGKILLed, a fresh worker), the automation alone
#                                                               # ends the run and its Space; the benchmark meanwhile
#     bash lab/scripts/gpu_prefect.sh bench                         # bench.gpu's recipe step, the same policy and services
#     bash lab/scripts/gpu_prefect.sh rehearse                      # watercolour rehearse at the recipe's shape
#     bash lab/scripts/gpu_prefect.sh kernels                       # the Gated DeltaNet gradient check, each implementation
#     PATHS=fast-before bash lab/scripts/gpu_prefect.sh levers      # bench.gpu's recipe step on one path, with profiles
#     SCORING=stand-in PRESET=offline bash lab/scripts/gpu_prefect.sh levers   # an instant reward: no renderer
#     bash lab/scripts/gpu_prefect.sh install-bench kernels levers  # carrying .gpu/wheels/bench: the benchmark in one call
#     bash lab/scripts/gpu_prefect.sh install-bench update          # the update alone: cut and padded micro-batches, chunks
#     bash lab/scripts/gpu_prefect.sh install-bench gpu-tests       # the tests only a GPU runs (pytest -m gpu)
#     TESTS=tests/pipeline/test_slot_decode.py bash lab/scripts/gpu_prefect.sh gpu-tests   # the slot decoder's alone
#     bash lab/scripts/gpu_prefect.sh decode                        # decode steps waited on and not, paired
#     SHAPE=qwen3-4b GENERATIONS=16 MAX_LEN=2048 bash lab/scripts/gpu_prefect.sh decode
#     bash lab/scripts/gpu_prefect.sh park .gpu/wheels/tilelang1    # fla's own backward through TileLang: one call each
#     ... tilelang2, cuda1, cuda2; then, carrying .gpu/wheels/bench: install-bench kernels update
#
# The levers' paired cells, one `levers` call each (bench/gpu/step.py): PATHS=fast (every lever on), fast-synced
# (the host waits on every decode step), fast-reference-update (the update through transformers' Gated DeltaNet
# reference), fast-chunk-64 and fast-chunk-256 (the project's rule with other chunk lengths), fast-padded-update
# (each update micro-batch as wide as TRL pads the group), fast-torch-recurrence (each decode step's Gated
# DeltaNet recurrence through transformers' call, as torch 2.11 compiles it), fast-guarded, fast-full-cache, fast-before.
#
# .gpu/wheels/tilelangN installs with the rest; .gpu/wheels/cudaN (the compiler TileLang needs) apart from Python's
# path, into /tmp/cuda.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
PARKED=/tmp/parked
# The Prefect run's folder: name another for a second run in one lease, which would otherwise resume the first.
RUN_DIR=${RUN_DIR:-/tmp/prefect-run}
STEPS=${STEPS:-3}
KILL_IN_STEP=${KILL_IN_STEP:-3}
# A training run with no heartbeat this long is marked Crashed by the shipped automation: three of the training
# deployments' 60 s heartbeats, where the default waits five, so a lost run ends inside a lease's call.
export WATERCOLOUR_CRASH_AFTER_S=${WATERCOLOUR_CRASH_AFTER_S:-180}
# Each call must end well inside the device's 10 minutes: a watch stops looking after this long.
WATCH_S=${WATCH_S:-500}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false TQDM_DISABLE=1 OMP_NUM_THREADS=16
export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PREFECT_HOME=/tmp/prefect PREFECT_LOCAL_PORT=4200 PREFECT_API_URL=http://127.0.0.1:4200/api
export PREFECT_BIN=/tmp/site/bin/prefect PYTHON_BIN=python3 PREFECT_SERVER_ANALYTICS_ENABLED=false
export WATERCOLOUR_REHEARSAL_TOKEN=rehearsal
# TileLang compiles fla's backward kernel with the carried nvcc, when it is there.
[ -x /tmp/cuda/nvidia/cu13/bin/nvcc ] && export CUDA_HOME=/tmp/cuda/nvidia/cu13
# The recipe cell's render pool on 16 cores (bench/gpu/__main__.py), so both routes render alike.
RENDER='"render.browsers": 4, "render.pages_per_browser": 4'

# A dry run on a CPU: extra run overrides as JSON (a tiny shape, short completions), the benchmark's shape and
# budget, and `watercolour rehearse`'s KEY=VALUE overrides.
EXTRA=${EXTRA:-'{}'}
# A run's rollouts pipelined within this many updates (training.pipeline.max_staleness; 0: synchronous).
STALENESS=${STALENESS:-0}
SHAPE=${SHAPE:-qwen3.5-35b-a3b}
MAX_LEN=${MAX_LEN:-8192}

render_env() {
  # The renderer bundle, on a machine without Chromium (a dry run where Chromium is installed has no parked parts).
  ls "$PARKED"/_gpu_render_parts_p* >/dev/null 2>&1 || return 0
  # shellcheck disable=SC1091
  source lab/scripts/gpu_render_env.sh "$PARKED" >/dev/null || exit 1
}

install_tilelang() {
  # TileLang's wheels and the CUDA compiler it builds with, where earlier calls parked them (.gpu/wheels/tilelangN,
  # .gpu/wheels/cudaN): TileLang into Python's path, the compiler apart from it, so torch keeps its CUDA libraries.
  ls "$PARKED"/_gpu_wheels_tilelang* >/dev/null 2>&1 || return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$PARKED"/_gpu_wheels_tilelang*/*.whl || return 1
  ls "$PARKED"/_gpu_wheels_cuda* >/dev/null 2>&1 || { echo "TileLang without the CUDA compiler: park cudaN" >&2; return 1; }
  mkdir -p /tmp/cuda-wheels && cp "$PARKED"/_gpu_wheels_cuda*/*.whl /tmp/cuda-wheels/ 2>/dev/null
  for first in "$PARKED"/_gpu_wheels_cuda*/*.whl.part00; do  # a wheel that travelled in pieces
    [ -e "$first" ] || continue
    name=$(basename "${first%.part00}")
    for piece in "$PARKED"/_gpu_wheels_cuda*/"$name".part*; do echo "${piece##*.part} $piece"; done | sort -n \
      | cut -d' ' -f2 | xargs cat >"/tmp/cuda-wheels/$name"
  done
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/cuda \
    /tmp/cuda-wheels/*.whl || return 1
  export CUDA_HOME=/tmp/cuda/nvidia/cu13 && "$CUDA_HOME/bin/nvcc" --version | tail -n 2
}

prefect_command() {
  # pip --target --upgrade replaces the bin/ it finds, so TileLang's install takes Prefect's command with it.
  [ -x "$PREFECT_BIN" ] && return 0
  mkdir -p "$(dirname "$PREFECT_BIN")" && printf '#!/bin/sh\nexec python3 -m prefect "$@"\n' >"$PREFECT_BIN"
  chmod +x "$PREFECT_BIN"
}

flow_run() { cat /tmp/flow-run-id; }

state() {
  curl -fsS "$PREFECT_API_URL/flow_runs/$(flow_run)" | python3 -c \
    "import json, sys; s = json.load(sys.stdin)['state']; print(s['type'], (s['message'] or '')[:300])"
}

space_stage() {
  curl -fsS -H "Authorization: Bearer rehearsal" "$(python3 -c "import json; print(json.load(open('/tmp/overrides.json'))['space.endpoint'])")/api/spaces/rehearsal/hpsv3-scorer/runtime" \
    | python3 -c "import json, sys; print(json.load(sys.stdin)['stage'])"
}

# For each step, the painting that finished last (the longest completion): what its reward waited on after generation.
last_paintings() {
  python3 - "$RUN_DIR" <<'PY'
import json, sys
from watercolour.run_records.rollout_store import RolloutStore
by_step = {}
for row in RolloutStore(sys.argv[1], 1).rows():
    if row["step"] not in by_step or len(row["completion"]) > len(by_step[row["step"]]["completion"]):
        by_step[row["step"]] = row
for step, row in sorted(by_step.items()):
    parts = {name: round(ms) for name, ms in json.loads(row["timings_ms"]).items()}
    print(f"step {step}: its last painting: render {row['render_ms'] or 0:.0f} ms, parts {parts} (ms; the gate's "
          f"includes the render), {(row['sketch'] or '').count(chr(10)) + 1} lines")
PY
}

trigger_kill() {
  # Wait until step $KILL_IN_STEP has stored its rollouts (its update not done) and the run is still running.
  shard="$RUN_DIR/rollouts/step-$(printf %05d "$KILL_IN_STEP").parquet"
  while [ ! -f "$shard" ] && (( SECONDS < WATCH_S )); do sleep 0.05; done
  [ -f "$shard" ] || { echo "step $KILL_IN_STEP never stored its rollouts: $(state)"; exit 1; }
  # A run that has ended has nothing to kill, and a process left with its id (a child in teardown) is not it;
  # retrying it afterwards would train on from its last checkpoint: stop both.
  case "$(state)" in RUNNING*) ;; *) echo "not killed: the run is no longer running ($(state))" >&2; exit 1 ;; esac
  pid=$(flow_pid)
  [ -n "$pid" ] || { echo "not killed: no process runs flow run $(flow_run)" >&2; exit 1; }
}

flow_pid() {
  grep -l "PREFECT__FLOW_RUN_ID=$(flow_run)" /proc/[0-9]*/environ 2>/dev/null | head -n 1 | cut -d/ -f3
}

curves() {
  python3 - "$RUN_DIR/curves.csv" <<'PY'
import csv, sys
for row in csv.DictReader(open(sys.argv[1])):
    print("step {step}: step {step_s} s = generate {generate_s} + reward wait {score_s} (the last painting ahead "
          "{ahead}) + update {update_s}; longest {longest}, checkpoint {checkpoint_s}, prefetched {prefetched}, "
          "peak {peak_gib} GiB; pipelined: {steps} decode steps, fill {fill}, behind {behind}, importance min "
          "{ratio} mean {ratio_mean}, log-prob gap mean {gap} max {gap_max}".format(
              ahead=row.get("ahead_tail_s"), steps=row.get("decode_steps"), fill=row.get("decode_fill"),
              behind=row.get("behind_max"), ratio=row.get("importance_min"), ratio_mean=row.get("importance_mean"),
              gap=row.get("logp_gap_mean"), gap_max=row.get("logp_gap_max"), **row))
PY
}

for stage in "$@"; do
  echo "=== $stage ($(date +%T))"
  case "$stage" in
    park)
      ;;  # the folder follows as its own argument
    .gpu/*)
      mkdir -p "$PARKED" && cp -r "$stage" "$PARKED/$(echo "$stage" | tr ./ __)" && du -sh "$PARKED"/* | tail -n 3
      ;;
    install)
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        "$PARKED"/_gpu_wheels_p*/*.whl || exit 1
      install_tilelang || exit 1
      prefect_command
      nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
      python3 -c "import torch, trl, transformers, prefect, fla; print('torch', torch.__version__, 'trl', \
trl.__version__, 'transformers', transformers.__version__, 'prefect', prefect.__version__)" || exit 1
      python3 -m watercolour.cli rehearse --route   # the stack against requirements-gpu.lock, the route, why
      python3 -c "import flows.train, flows.space_sleep, watercolour.commands.rehearse, bench.gpu" || exit 1
      ;;
    install-bench)
      # The benchmark's wheels only (no Prefect), from the carried folder: kernels and levers need no more.
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .gpu/wheels/bench/*.whl || exit 1
      install_tilelang || exit 1
      nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
      python3 -c "import torch, trl, transformers, fla, bench.gpu; print('torch', torch.__version__, 'trl', \
trl.__version__, 'transformers', transformers.__version__)" || exit 1
      python3 -m watercolour.cli rehearse --route   # the stack against requirements-gpu.lock, the route, why
      ;;
    up)
      render_env
      prefect_command
      setsid nohup python3 -m watercolour.cli rehearse --preset judge-led --serve >/tmp/stand-ins.log 2>&1 &
      for _ in $(seq 120); do grep -q '^{' /tmp/stand-ins.log && break; sleep 0.5; done
      grep '^{' /tmp/stand-ins.log >/tmp/overrides.json || { cat /tmp/stand-ins.log; exit 1; }
      cat /tmp/overrides.json
      bash scripts/prefect-local.sh up || { tail -n 50 "$PREFECT_HOME"/*.log; exit 1; }
      ;;
    run)
      overrides=$(python3 - <<PY
import json
overrides = json.load(open("/tmp/overrides.json"))
overrides.update({"training.steps": $STEPS, "training.save_steps": 1, $RENDER, **json.loads('$EXTRA')})
if $STALENESS:
    overrides["training.pipeline.max_staleness"] = $STALENESS
print(json.dumps(overrides))
PY
)
      "$PREFECT_BIN" deployment run train/judge-led -p "overrides=$overrides" -p "run_dir=\"$RUN_DIR\"" \
        | tee /tmp/deployment-run.log | grep -oE '[0-9a-f-]{36}' | tail -n 1 >/tmp/flow-run-id
      echo "flow run $(flow_run): $(state)"
      ;;
    watch)
      # Until the run ends or this call's time is up: each new step's parts as the curves have them.
      seen=0
      while (( SECONDS < WATCH_S )); do
        now=$(state)
        rows=$( [ -f "$RUN_DIR/curves.csv" ] && tail -n +2 "$RUN_DIR/curves.csv" | wc -l || echo 0)
        if (( rows > seen )); then curves | tail -n $((rows - seen)); seen=$rows; fi
        case "$now" in COMPLETED*|FAILED*|CRASHED*|CANCELLED*) echo "flow run: $now"; break ;; esac
        sleep 5
      done
      echo "flow run: $(state); Space: $(space_stage)"
      last_paintings
      python3 -c "from watercolour.run_records.rollout_store import RolloutStore; rows = RolloutStore('$RUN_DIR', 1).rows(); \
keys = [(r['step'], r['index']) for r in rows]; print(f'rollouts stored: {len(keys)}, stored twice: {len(keys) - len(set(keys))}')"
      cp "$RUN_DIR/curves.csv" "$OUT/prefect-curves$([ "$STALENESS" = 0 ] || echo "-pipelined").csv" 2>/dev/null
      grep -vE "Warning|warnings.warn" "$PREFECT_HOME/worker.log" | tail -n 400 >"$OUT/worker.log"
      ;;
    kill)
      # In the middle of step $KILL_IN_STEP: the flow process alone; its worker sees it exit and reports it Crashed.
      trigger_kill
      kill -9 "$pid" && echo "SIGKILL to the flow process $pid at $(date +%T.%N); checkpoints: $(ls "$RUN_DIR/checkpoints")"
      for _ in $(seq 120); do case "$(state)" in CRASHED*) break ;; esac; sleep 1; done
      echo "flow run: $(state)"
      for _ in $(seq 120); do [ "$(space_stage)" = PAUSED ] && break; sleep 1; done
      echo "Space: $(space_stage), by: $("$PREFECT_BIN" flow-run ls --flow-name space-sleep 2>/dev/null | grep -c Completed) completed space-sleep run(s)"
      ;;
    lose)
      # The machine lost in the middle of step $KILL_IN_STEP: the flow process and its worker SIGKILLed together, so
      # nobody reports the run and no hook runs; a fresh worker starts (another machine's, say). From here only the
      # shipped automation can end the run (no heartbeat for WATERCOLOUR_CRASH_AFTER_S) and, through it, the Space:
      # `asleep` checks. The GPU is free at once, so a benchmark can run meanwhile.
      trigger_kill
      worker=$(cat "$PREFECT_HOME/worker.pid")
      kill -9 -- "-$worker" 2>/dev/null; kill -9 "$worker" "$pid" 2>/dev/null
      date +%s.%N >/tmp/lost-at
      echo "SIGKILL to the flow process $pid and its worker $worker at $(date +%T.%N); checkpoints:" \
        "$(ls "$RUN_DIR/checkpoints" | paste -sd' ')"
      curves; last_paintings
      echo "flow run: $(state)"
      render_env  # the new worker's flow runs render: Playwright and Chromium from the bundle
      bash scripts/prefect-local.sh up | grep -vE "^(Prefect UI|Point a shell)" || exit 1
      ;;
    asleep)
      # After `lose`: the run Crashed by the automation, and the Space paused by the space-sleep run it triggered.
      for _ in $(seq 300); do case "$(state)" in CRASHED*) break ;; esac; sleep 1; done
      echo "flow run: $(state)"
      for _ in $(seq 120); do [ "$(space_stage)" = PAUSED ] && break; sleep 1; done
      lost=$(cat /tmp/lost-at)
      python3 - "$PREFECT_API_URL" "$(flow_run)" "$lost" <<'PY'
import datetime, json, sys, urllib.request
api, run, lost = sys.argv[1], sys.argv[2], float(sys.argv[3])
def post(path, body):
    request = urllib.request.Request(api + path, json.dumps(body).encode(), {"content-type": "application/json"})
    return json.load(urllib.request.urlopen(request))
def seconds(stamp):
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() - lost
states = json.load(urllib.request.urlopen(f"{api}/flow_run_states/?flow_run_id={run}"))
crashed = [s for s in states if s["type"] == "CRASHED"]
for s in crashed:
    print(f"Crashed {seconds(s['timestamp']):.0f} s after the loss: {s['message']}")
sleeps = post("/flow_runs/filter", {"flows": {"name": {"any_": ["space-sleep"]}}})
for r in sleeps:
    print(f"space-sleep run {r['name']}: {r['state']['type']}, ended {seconds(r['end_time']):.0f} s after the loss, "
          f"parameters {r['parameters']}" if r.get("end_time") else f"space-sleep run {r['name']}: {r['state']['type']}")
PY
      echo "Space: $(space_stage)"
      ;;
    retry)
      "$PREFECT_BIN" flow-run retry "$(flow_run)" && echo "retried: $(state)"
      ;;
    bench)
      render_env
      python3 -m bench.gpu --shapes "$SHAPE" --generations 8 --max-len "$MAX_LEN" --micro-batch 1 --paths fast \
        --fast-steps 2 --scoring recipe --preset judge-led --lengths recipe --no-check --no-profile --deadline-s 420 \
        --out "$OUT" 2>&1 | grep -vE "Warning|warnings.warn"
      python3 -m bench.gpu.projection "$OUT/bench_gpu.jsonl" | tee "$OUT/bench-projection.md"
      ;;
    decode)
      # The decode step alone, the host waiting on each step and not, paired on the same compiled graphs, with a
      # profile of each (bench.gpu --decode-only): minutes where the levers' whole steps take ten. PATHS names the
      # compiled levers to pair the same way, each compiled in turn (fast-torch-recurrence, fast-guarded, ...).
      python3 -m bench.gpu --shapes "$SHAPE" --generations "${GENERATIONS:-8}" --max-len "$MAX_LEN" --micro-batch 1 \
        --paths ${PATHS:-fast} --decode-only --decode-tokens "${DECODE_TOKENS:-256}" --decode-rounds 3 --no-check \
        --deadline-s 420 --out "$OUT" 2>&1 | grep -vE "Warning|warnings.warn"
      ;;
    gpu-tests)
      # The tests only a GPU runs (never in CI): the decode loop's sampled tokens and its waits, with and without
      # waiting on each step; the compiled decode step through fla's recurrent kernel; the slot decoder of pipelined
      # rollouts compiled, reading which rows ended one step late. TESTS names fewer files.
      python3 -m pytest -q -p no:cacheprovider -m gpu \
        ${TESTS:-tests/policy/test_generation.py tests/policy/test_linear_attention.py tests/pipeline/test_slot_decode.py} \
        2>&1 | tail -n 30
      ;;
    kernels)
      python3 -m bench.gpu.linear_attention --tokens 2048 9092 --out "$OUT" 2>&1 | grep -vE "Warning|warnings.warn"
      ;;
    levers)
      # One path of bench.gpu's recipe step (bench/gpu/step.py), its decode and update profiles, its projection.
      render_env
      python3 -m bench.gpu --shapes "$SHAPE" --generations 8 --max-len "$MAX_LEN" --micro-batch 1 --paths ${PATHS:-fast} \
        --fast-steps 2 --scoring "${SCORING:-recipe}" --preset "${PRESET:-judge-led}" --lengths recipe --no-check --deadline-s 420 \
        --out "$OUT" 2>&1 | grep -vE "Warning|warnings.warn"
      python3 -m bench.gpu.projection "$OUT/bench_gpu.jsonl" | tee "$OUT/levers-projection.md"
      ;;
    update)
      # The update alone, paired in one process: each micro-batch cut to its rows (the default), as TRL pads it, and
      # with the former 64-token chunks; rollouts drawn at the recipe's lengths, no decode (bench.gpu
      # --update-only), each path's update profile beside its steps.
      python3 -m bench.gpu --shapes "$SHAPE" --generations 8 --max-len "$MAX_LEN" --micro-batch 1 --update-only \
        --paths ${PATHS:-fast fast-padded-update fast-chunk-64} --fast-steps 2 --lengths recipe --no-check \
        --deadline-s "${DEADLINE_S:-420}" --out "$OUT" 2>&1 | grep -vE "Warning|warnings.warn"
      ;;
    rehearse)
      render_env
      python3 -m watercolour.cli rehearse --preset judge-led --steps 2 --project-steps 110 --run-dir /tmp/rehearsal \
        render.browsers=4 render.pages_per_browser=4 ${REHEARSE_SET:-} 2>&1 | grep -vE "Warning|warnings.warn" | tee "$OUT/rehearse.txt"
      ;;
    report)
      python3 -m watercolour.cli rehearse --report "$RUN_DIR" --project-steps 110 --save-every 10 \
        | tee "$OUT/prefect-projection$([ "$STALENESS" = 0 ] || echo "-pipelined").md"
      ;;
    *)
      echo "unknown stage: $stage" >&2
      exit 2
      ;;
  esac
done
