#!/bin/sh
# Starts Chromium in a network namespace of its own: no interface but a loopback that stays down, so no
# packet of any protocol (TCP, UDP, WebRTC, DNS) can leave it. Playwright drives Chromium over a pipe and
# the slot's router serves every file from memory, so the page needs no network at all.
# Root unshares the network namespace directly; anyone else needs an unprivileged user namespace.
# WATERCOLOUR_OFFLINE_CHROMIUM names the real executable (renderers/isolation.py sets it).
if [ "$(id -u)" = 0 ]; then
  exec unshare --net -- "$WATERCOLOUR_OFFLINE_CHROMIUM" "$@"
fi
exec unshare --user --map-current-user --net -- "$WATERCOLOUR_OFFLINE_CHROMIUM" "$@"
