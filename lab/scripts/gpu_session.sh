#!/bin/bash
# The GPU measurements of docs/gpu.md ("The recipe's policy on one H200"), as stages run on the GPU machine
# from the repository root, one per device call; results go to $OUT (default ./gpu-out). The machine starts bare:
# `install` needs .whl carried (lab/scripts/gpu_bench_wheels.sh); `park N` keeps the renderer bundle's part N
# (.gpu/render/parts/pN, lab/scripts/render_bundle/build.sh) in /tmp/parts for a later call; `recipe` needs them all.
#
#     bash lab/scripts/gpu_session.sh install kernels dense     # wheels, the Gated DeltaNet check, the Qwen3-4B cell
#     bash lab/scripts/gpu_session.sh park 1                     # ... park 2, park 3, park 4
#     bash lab/scripts/gpu_session.sh recipe                     # one recipe step of Qwen3.5-35B-A3B, real renders
#     bash lab/scripts/gpu_session.sh moe                        # its log-prob check (4 layers) and TRL's default path
#     bash lab/scripts/gpu_session.sh levers                     # that check, each lever of the fast path on its own
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false TQDM_DISABLE=1

for stage in "$@"; do
  echo "=== $stage ($(date +%T))"
  case "$stage" in
    install)
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || exit 1
      nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader
      python3 -c "import torch, triton, transformers, trl, fla; print('torch', torch.__version__, 'triton', \
triton.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, 'fla', fla.__version__)" || exit 1
      ;;
    kernels)
      python3 -m bench.gpu.linear_attention --tokens 2048 9092 --out "$OUT" 2>&1 | grep -v Warning
      ;;
    dense)
      python3 -m bench.gpu --shapes qwen3-4b --generations 16 --paths default fast --default-max-len 512 \
        --fast-steps 3 --deadline-s 330 --out "$OUT" 2>&1 | grep -vE "Warning|warnings.warn"
      ;;
    park)
      ;;  # the part number follows as its own argument
    [1-9])
      mkdir -p /tmp/parts && cp -r ".gpu/render/parts/p$stage" /tmp/parts/ && ls -la "/tmp/parts/p$stage"
      ;;
    recipe)
      # shellcheck disable=SC1091
      source lab/scripts/gpu_render_env.sh /tmp/parts || exit 1
      python3 -m bench.gpu --shapes qwen3.5-35b-a3b --generations 8 --max-len 8192 --micro-batch 1 --paths fast \
        --fast-steps 2 --scoring recipe --preset judge-led --lengths recipe --no-check --deadline-s 420 \
        --out "$OUT" 2>&1 | grep -vE "Warning|warnings.warn"
      ;;
    moe)
      python3 -m bench.gpu --shapes qwen3.5-35b-a3b-4l --generations 8 --max-len 1024 --micro-batch 1 \
        --paths fast --fast-steps 2 --no-profile --deadline-s 200 --out "$OUT" 2>&1 | grep -vE "Warning|warnings.warn"
      python3 -m bench.gpu --shapes qwen3.5-35b-a3b --generations 8 --default-max-len 256 --micro-batch 1 \
        --paths default --default-steps 1 --no-check --no-profile --deadline-s 200 --out "$OUT" 2>&1 \
        | grep -vE "Warning|warnings.warn"
      ;;
    levers)
      # The MoE log-prob check alone, with each lever of the fast path measured on its own (bench/gpu/checks.py).
      python3 -m bench.gpu --shapes qwen3.5-35b-a3b-4l --generations 8 --max-len 1024 --micro-batch 1 \
        --paths fast --fast-steps 2 --no-profile --deadline-s 300 --out "$OUT" 2>&1 | grep -vE "Warning|warnings.warn"
      ;;
    *)
      echo "unknown stage: $stage" >&2
      exit 2
      ;;
  esac
done
