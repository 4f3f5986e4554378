#!/usr/bin/env bash
# Podman, the daemonless container engine the images are built and run with (docs/openenv.md, "Build the images
# here"), and a `docker` command for OpenEnv's validator, which runs one: installed from Debian's packages where
# missing, and configured once. Idempotent.
set -euo pipefail

CONF=/etc/containers/containers.conf

if ! command -v podman >/dev/null || ! command -v debootstrap >/dev/null; then
    echo "installing Debian's podman, buildah, runc, catatonit and debootstrap"
    apt-get update -qq
    # catatonit is the init `--init` starts (OpenEnv's validator runs the subject with it); debootstrap makes the base.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc catatonit debootstrap >/dev/null
fi

# OpenEnv's validator starts its subject with `docker` commands, through a Docker API: podman's, on a socket
# (`eval "$(containers/podman_socket.sh)"`). Where there is no `docker`, the client alone is unpacked from Debian's
# docker.io package into DOCKER_CLIENT; its engine (dockerd, containerd) is not installed, so nothing runs as a daemon.
# Debian's podman-docker, a `docker` that runs podman itself, does not do: OpenEnv lists containers with a template
# podman's `ps` does not take (`{{.Label "..."}}`), and every subject's teardown failed.
CLIENT=${DOCKER_CLIENT:-/usr/local/bin/docker}
if ! command -v docker >/dev/null && [ ! -x "$CLIENT" ]; then
    echo "installing the docker client of Debian's docker.io package (the client alone) as $CLIENT"
    debs=$(mktemp -d)
    apt-get update -qq
    (cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root docker.io)
    mkdir -p "$(dirname "$CLIENT")"
    dpkg-deb --fsys-tarfile "$debs"/docker.io_*.deb | tar -x -O ./usr/bin/docker >"$CLIENT"
    chmod 755 "$CLIENT"
    rm -rf "$debs"
fi

# runc, because crun refuses this kind of VM ("cgroups in hybrid mode not supported"). Explicit limits, because
# podman's defaults for root raise nofile and nproc above what the container may set without CAP_SYS_RESOURCE
# ("error setting rlimit type 7: operation not permitted"). 20000 open files is this VM's hard limit; runc set
# nproc 20000 but not 65536 here; 4096 is ample under the 256 processes OpenEnv's validator allows a container.
# lab/studies/2026-12-04-images-without-a-daemon.md.
if [ ! -f "$CONF" ]; then
    echo "writing $CONF (runtime runc, explicit default ulimits)"
    mkdir -p "$(dirname "$CONF")"
    cat >"$CONF" <<'CONFIG'
# Written by watercolour's containers/podman.sh: runc, because crun cannot start containers here.
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]

[engine]
runtime = "runc"
CONFIG
elif ! grep -q '^runtime *= *"runc"' "$CONF"; then
    echo "$CONF exists and does not set runtime = \"runc\" under [engine]: add it if containers fail to start" >&2
fi

podman --version
echo "docker: $(command -v docker || echo "$CLIENT")"
