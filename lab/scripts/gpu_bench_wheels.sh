#!/bin/bash
# Fetches into .whl/ the wheels `python -m bench.gpu` needs on the GPU machine beyond its image (torch, numpy,
# pandas, pyarrow and the rest are there): the project's pins of transformers, TRL, PEFT, accelerate, datasets
# and their missing dependencies, for that machine's Python 3.12 on x86-64; fla (the Gated DeltaNet kernels of
# the Qwen3.5 policies, pure Python over Triton); fastapi (which imports opentelemetry) and uvicorn for the
# loopback scorer of the recipe cell.
# causal-conv1d has no wheel on PyPI (a source package that compiles against CUDA), so it does not travel:
# transformers' torch convolution stands in (docs/gpu.md has what that costs). Then, on the GPU machine,
# with .whl carried:
#
#     python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
#     PYTHONPATH=/tmp/site:$PWD python3 -m bench.gpu --shapes qwen3-4b --generations 16 --out $OUT
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude || echo /.whl/ >> .git/info/exclude
platforms=()
for p in manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_24 manylinux_2_17 \
    manylinux2014 manylinux1; do platforms+=(--platform "${p}_x86_64"); done
.venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" --platform any -d .whl \
  trl==1.16.0 transformers==5.23.0 peft==0.21.2 accelerate==1.15.0 datasets==5.2.0 huggingface-hub==2.4.0 \
  tokenizers==0.23.3 safetensors==0.8.0 hf-xet==1.8.0 httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5 \
  click==8.5.1 regex==2026.11.19 fsspec==2026.9.0 idna==3.20 anyio==4.16.0 dill==0.4.1 multiprocess==0.70.19 \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 tenacity==9.2.1 \
  tree-sitter==0.26.1 tree-sitter-javascript==0.25.0 \
  fla-core==0.6.0 flash-linear-attention==0.6.0 \
  fastapi==0.150.0 starlette==1.10.0 uvicorn==0.54.0 annotated-doc==0.0.7 opentelemetry-api==1.45.2
du -sh .whl
