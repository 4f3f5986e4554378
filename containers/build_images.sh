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
# not reachable from every machine that reaches PyPI, so the host's pip fetches the locked wheel once and the build
# reads it from an index on loopback. Where the host's pip configuration already finds the wheel (a mirror, a
# wheel folder), PyTorch's index is not asked: unreachable, pip printed five retries for it before going on.
torch=$(grep '^torch==' requirements.lock)
if ! compgen -G "$WHEELS/torch/torch-${torch#torch==}-*.whl" >/dev/null; then
    download=("$PYTHON" -m pip download --quiet --no-deps --dest "$WHEELS/torch")
    "${download[@]}" "$torch" 2>/dev/null \
        || "${download[@]}" --extra-index-url https://download.pytorch.org/whl/cpu "$torch"
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
# index on loopback. --format docker: the format `docker build` makes, which a Space builds too. The image a new
# build replaces under its tag is removed, not left behind untagged (unless a container still uses it).
build() {
    local tag=$1 context=$2 started replaced
    shift 2
    started=$(date +%s)
    replaced=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
    podman build --format docker --network host --tag "$tag" "$@" "$context"
    if [ -n "$replaced" ] && [ "$replaced" != "$(podman image inspect --format '{{.Id}}' "$tag")" ]; then
        podman image rm "$replaced" >/dev/null 2>&1 || echo "$tag: the image it replaced is in use; kept" >&2
    fi
    echo "$tag: built in $(($(date +%s) - started)) s, $(podman image inspect --format '{{.Size}}' "$tag" | numfmt --to=si)B"
}
build watercolour-openenv "$OUT/space" --build-arg "TORCH_INDEX_URL=http://127.0.0.1:$port/"
build watercolour-scorer scorer_space
