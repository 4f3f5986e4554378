#!/usr/bin/env bash
# Builds the two images users push, with podman and no daemon: the painting environment's (from its Space bundle)
# as watercolour-openenv, and the HPSv3 scorer Space's (from scorer_space/) as watercolour-scorer. Run after
# containers/podman.sh and containers/base_image.sh (`make images` runs all three). podman's layer cache makes a
# second run with nothing changed take seconds.
set -euo pipefail

PYTHON=${PYTHON:-.venv/bin/python}
OUT=build/images
WHEELS=$OUT/wheels
mkdir -p "$WHEELS/torch"

# The painting image installs the CPU build of torch from PyTorch's wheel index (a build argument). That index is
# not reachable from every machine that reaches PyPI, so the host's pip fetches the locked wheel once (from the
# index, or wherever the host's pip configuration finds it) and the build reads it from an index on loopback.
torch=$(grep '^torch==' requirements.lock)
if ! compgen -G "$WHEELS/torch/torch-${torch#torch==}-*.whl" >/dev/null; then
    "$PYTHON" -m pip download --quiet --no-deps --dest "$WHEELS/torch" \
        --extra-index-url https://download.pytorch.org/whl/cpu "$torch"
fi
# A fixed port: the index's URL is a build argument of the install layer, so a new port each run rebuilt it.
port=${TORCH_INDEX_PORT:-18573}
"$PYTHON" -m http.server --bind 127.0.0.1 --directory "$WHEELS" "$port" >/dev/null 2>&1 &
index=$!
trap 'kill "$index"' EXIT
sleep 1
if ! kill -0 "$index" 2>/dev/null; then
    echo "cannot serve the torch wheel on 127.0.0.1:$port (in use?): set TORCH_INDEX_PORT to a free port" >&2
    exit 1
fi

rm -rf "$OUT/space"
"$PYTHON" -m openenv_painting.space_bundle "$OUT/space" >/dev/null

# --network host: the build's pip, npm and apt reach their registries the way this machine does, and the wheel
# index on loopback.
build() {
    local tag=$1 context=$2 started
    shift 2
    started=$(date +%s)
    podman build --format docker --network host --tag "$tag" "$@" "$context"
    echo "$tag: built in $(($(date +%s) - started)) s, $(podman image inspect --format '{{.Size}}' "$tag" | numfmt --to=si)B"
}
build watercolour-openenv "$OUT/space" --build-arg "TORCH_INDEX_URL=http://127.0.0.1:$port/"
build watercolour-scorer scorer_space
