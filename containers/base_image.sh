#!/usr/bin/env bash
# The base image both Dockerfiles start FROM, made locally from Debian's packages where no image registry can be
# reached: Debian 12 (bookworm) with its Python 3.11, imported under the Dockerfiles' FROM name, so `podman build`
# finds it locally and never pulls. Elsewhere the official python:3.11-slim-bookworm is pulled as usual.
# Idempotent: an image already under that name is kept.
set -euo pipefail

BASE=docker.io/library/python:3.11-slim-bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if podman image exists "$BASE"; then
    echo "base image $BASE: present"
    exit 0
fi

started=$(date +%s)
root=$(mktemp -d "${TMPDIR:-/tmp}/watercolour-base.XXXXXX")
trap 'rm -rf "$root"' EXIT

echo "making $BASE with debootstrap (bookworm, minbase, Python 3.11)"
debootstrap --variant=minbase --include=python3,python3-pip,python-is-python3,ca-certificates \
    bookworm "$root" "$MIRROR" >/dev/null

# The suites the official Debian images list, so a Dockerfile's apt-get gets the same (security) versions.
cat >"$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: ${MIRROR}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
rm -f "$root/etc/apt/sources.list"

# The certificate authorities this machine adds to Debian's (here, its HTTPS egress proxy's): inside a build, pip
# and npm reach their registries only through the same proxy, so the image must trust what the host trusts.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    # (its rehash warns about the bundle file; harmless, and set -e still catches a failure)
    chroot "$root" update-ca-certificates >/dev/null 2>&1
fi

# The official image's pip installs into the system Python; Debian's refuses without this (PEP 668).
rm -f "$root"/usr/lib/python3.*/EXTERNALLY-MANAGED

# The official image's apt keeps no downloaded package after installing it (Debian's images ship this setting);
# without it a Dockerfile's `apt-get install` left its .deb files in the layer: 309 MB in the painting image.
cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin

tar -C "$root" -c . | podman import --quiet --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' - "$BASE" >/dev/null
echo "base image $BASE: made in $(($(date +%s) - started)) s, $(podman image inspect --format '{{.Size}}' "$BASE" | numfmt --to=si)B"
