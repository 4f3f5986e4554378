#!/usr/bin/env bash
# Starts Chromium in a network namespace of its own: no interface but a loopback that stays down, so no
# packet of any protocol (TCP, UDP, WebRTC, DNS) can leave it. Playwright drives Chromium over a pipe and
# the slot's router serves every file from memory, so the page needs no network at all.
# WATERCOLOUR_OFFLINE_CHROMIUM names the real executable (renderers/isolation.py sets it, and runs this script
# with /bin/true to check that a namespace can be made here).
set -euo pipefail

# A user namespace first, for root too: it needs no capability, and root inside a container has no CAP_SYS_ADMIN
# ("unshare failed: Operation not permitted" for a bare `unshare --net`, measured under podman), while the user
# namespace route works there as root and as any other user. Root keeps the bare route where user namespaces are
# switched off (user.max_user_namespaces = 0).
if user_namespace=$(unshare --user --map-current-user --net -- true 2>&1); then
    exec unshare --user --map-current-user --net -- "$WATERCOLOUR_OFFLINE_CHROMIUM" "$@"
fi
if [ "$(id -u)" = 0 ] && network_namespace=$(unshare --net -- true 2>&1); then
    exec unshare --net -- "$WATERCOLOUR_OFFLINE_CHROMIUM" "$@"
fi
echo "no user namespace (${user_namespace:-refused})${network_namespace:+, and as root no network namespace (${network_namespace})}" >&2
exit 1
