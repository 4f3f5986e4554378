#!/bin/sh
# Bundled Chromium launcher: the bundle's libraries and Mesa (llvmpipe) for this process tree only, plus the
# flags Debian's /usr/bin/chromium launcher adds, so renders match the reference machine's.
B=$(dirname "$(dirname "$(readlink -f "$0")")")
# (system tools run before LD_LIBRARY_PATH changes) Debian's launcher: --disable-dev-shm-usage when /dev/shm has under 3.8 GB free (or is missing)
SHM=""
shm_kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $4}')
if [ -z "$shm_kb" ] || [ "$shm_kb" -lt 3984589 ]; then SHM="--disable-dev-shm-usage"; fi
export LD_LIBRARY_PATH="$B/lib"
export __EGL_VENDOR_LIBRARY_FILENAMES="$B/share/glvnd/egl_vendor.d/50_mesa.json"   # Mesa only, never NVIDIA's EGL
export __EGL_VENDOR_LIBRARY_DIRS="$B/share/glvnd/egl_vendor.d"
export LIBGL_DRIVERS_PATH="$B/lib/dri" GBM_DRIVERS_PATH="$B/lib/dri"
export LIBGL_ALWAYS_SOFTWARE=1 GALLIUM_DRIVER=llvmpipe
export FONTCONFIG_FILE="$B/fonts/fonts.conf" FONTCONFIG_PATH="$B/fonts"
export GIO_MODULE_DIR="$B/lib/gio-modules"
export CHROME_WRAPPER="$0" CHROME_DESKTOP=chromium.desktop
unset LD_PRELOAD
exec "$B/chromium/chromium" --show-component-extension-options --enable-gpu-rasterization \
  --no-default-browser-check --disable-pings --media-router=0 $SHM --enable-remote-extensions \
  --load-extension= "$@"
