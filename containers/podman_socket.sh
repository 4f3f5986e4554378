#!/usr/bin/env bash
# Podman's Docker-compatible API on a socket, for a `docker` client (OpenEnv's validator runs one; `make images`
# provides it where missing): with no Docker daemon, the client needs DOCKER_HOST. Starts `podman system service` in
# the background once (it outlives this shell and never exits idle) and prints the line that points clients at it.
#
#     eval "$(containers/podman_socket.sh)"        # then: .venv/bin/openenv validate openenv_painting ...
set -euo pipefail

SOCKET=${PODMAN_SOCKET:-/run/podman/podman.sock}

if ! podman --url "unix://$SOCKET" version >/dev/null 2>&1; then
    mkdir -p "$(dirname "$SOCKET")"
    rm -f "$SOCKET"
    setsid podman system service --time=0 "unix://$SOCKET" </dev/null >/dev/null 2>&1 &
    # podman answers on its socket within a second of starting; ten means it will not.
    for _ in $(seq 100); do
        podman --url "unix://$SOCKET" version >/dev/null 2>&1 && break
        sleep 0.1
    done
    podman --url "unix://$SOCKET" version >/dev/null 2>&1 \
        || { echo "podman's API did not start on $SOCKET: run \`make images\` (it sets podman up)" >&2; exit 1; }
fi
echo "export DOCKER_HOST=unix://$SOCKET"
