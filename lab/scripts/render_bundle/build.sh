#!/bin/bash
# Builds the renderer bundle for a machine with no Chromium (the GPU box, docs/gpu.md) from this Debian 12
# machine's Chromium + Mesa llvmpipe, then packs it as .gpu/render/parts/pN/part.* (<= 48 MiB each, one folder per
# device call: a call carries the tracked tree too, about 12 MiB, under 64 MiB in all) plus bundle.sha256. Unpack on the target with `source lab/scripts/gpu_render_env.sh PARTS_DIR`.
#
# libs.txt lists every shared object a Chromium process loaded during a real render here (an LD_DEBUG=libs
# capture), glibc's core left out: the target's newer glibc provides it.
#
#     lab/scripts/render_bundle/build.sh      (from anywhere; needs `make setup` first, and pip for the wheels)
set -euo pipefail
cd "$(dirname "$0")/../../.."     # repo root
T=lab/scripts/render_bundle; R=.gpu/render; S=$R/stage/render-bundle
mkdir -p "$R/wheels"
# Playwright's Python package (with its Node driver) and greenlet, for the target's Python 3.12; and what the gate's
# writing detector runs on (rewards/picture/writing_detector.py): onnxruntime with the two modules it imports that a torch
# machine may lack (flatbuffers, protobuf), scipy, and the rapidocr-onnxruntime wheel for its model files (installed
# without its dependencies: only the models are read). Without them every painting there is a dead letter.
pinned() { .venv/bin/python -c "import importlib.metadata as m; print('$1==' + m.version('$1'))"; }
.venv/bin/pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$R/wheels" "$(pinned playwright)" "$(pinned greenlet)" "$(pinned onnxruntime)" \
  "$(pinned flatbuffers)" "$(pinned protobuf)" "$(pinned scipy)" "$(pinned rapidocr-onnxruntime)"
rm -rf "$R/stage"; mkdir -p "$S"/{bin,lib/dri,lib/gio-modules,node-lib,share/glvnd/egl_vendor.d,fonts,wheels}
# 1. Chromium itself
cp -a /usr/lib/chromium "$S/chromium"
# 2. every shared library its processes loaded (LD_DEBUG capture), glibc core excluded, dereferenced
while read -r p; do
  case "$p" in */dri/*) cp -L "$p" "$S/lib/dri/";; *) cp -L "$p" "$S/lib/";; esac
done < "$T/libs.txt"
ln "$S/lib/dri/swrast_dri.so" "$S/lib/dri/kms_swrast_dri.so"   # same megadriver (hard link, stored once)
cp -L /lib/x86_64-linux-gnu/libatomic.so.1 "$S/node-lib/"       # Playwright's node needs it; used only if the target lacks it
# 2b. Tesseract, which the gate reads painted text with (rewards/picture/rules.py): the binary, the libraries it
# links that the bundle lacks, English data; bin/tesseract runs it with them (gpu_render_env.sh puts bin/ on PATH).
mkdir -p "$S/tesseract/lib" "$S/tesseract/tessdata"
cp -L /usr/bin/tesseract "$S/tesseract/tesseract"
ldd /usr/bin/tesseract | awk '$3 ~ /^\// {print $3}' | while read -r p; do
  case "$(basename "$p")" in libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
    *) [ -e "$S/lib/$(basename "$p")" ] || cp -L "$p" "$S/tesseract/lib/";; esac
done
cp /usr/share/tesseract-ocr/5/tessdata/eng.traineddata "$S/tesseract/tessdata/"
cp -r /usr/share/tesseract-ocr/5/tessdata/configs /usr/share/tesseract-ocr/5/tessdata/tessconfigs "$S/tesseract/tessdata/"
cat > "$S/bin/tesseract" <<'SH'
#!/bin/sh
B=$(dirname "$(dirname "$(readlink -f "$0")")")
LD_LIBRARY_PATH="$B/tesseract/lib:$B/lib" TESSDATA_PREFIX="$B/tesseract/tessdata" exec "$B/tesseract/tesseract" "$@"
SH
chmod 755 "$S/bin/tesseract"
# 3. glvnd vendor file: bare soname, resolved through LD_LIBRARY_PATH
printf '{\n    "file_format_version" : "1.0.0",\n    "ICD" : {\n        "library_path" : "libEGL_mesa.so.0"\n    }\n}\n' \
  > "$S/share/glvnd/egl_vendor.d/50_mesa.json"
# 4. minimal fontconfig (the sketches draw no text; one face so fontconfig has something)
cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf "$S/fonts/"
cat > "$S/fonts/fonts.conf" <<'XML'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir prefix="relative">.</dir>
  <cachedir>/tmp/render-bundle-fontconfig-cache</cachedir>
  <alias><family>sans-serif</family><prefer><family>DejaVu Sans</family></prefer></alias>
  <alias><family>serif</family><prefer><family>DejaVu Sans</family></prefer></alias>
  <alias><family>monospace</family><prefer><family>DejaVu Sans</family></prefer></alias>
</fontconfig>
XML
cp "$T/chromium-wrapper.sh" "$S/bin/chromium"; chmod 755 "$S/bin/chromium"
# 5. wheels and the node_modules files the renderer reads (renderers/assets.py)
cp "$R"/wheels/*.whl "$S/wheels/"
for f in p5/lib/p5.min.js p5/package.json p5.brush/dist/p5.brush.js p5.brush/package.json ses/dist/ses.umd.min.js ses/package.json; do
  mkdir -p "$S/node_modules/$(dirname "$f")"; cp "node_modules/$f" "$S/node_modules/$f"
done
du -sh "$S"
# 6. one xz tar, split into parts of one folder each
rm -rf "$R/parts"; mkdir -p "$R/parts"
tar -C "$R/stage" -cf - render-bundle | xz -6 -T1 > "$R/bundle.tar.xz"
split -b 48M "$R/bundle.tar.xz" "$R/parts/part."
sha256sum < "$R/bundle.tar.xz" | awk '{print $1}' > "$R/bundle.sha256"
i=0
for part in "$R"/parts/part.*; do
  i=$((i + 1)); mkdir -p "$R/parts/p$i"; mv "$part" "$R/parts/p$i/"
done
cp "$R/bundle.sha256" "$R/parts/p$i/"
rm "$R/bundle.tar.xz"
du -sh "$R"/parts/p*
