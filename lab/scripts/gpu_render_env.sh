# Source from the repository root on the GPU machine to get the bundled Chromium renderer:
#
#     source lab/scripts/gpu_render_env.sh /tmp/parts
#
# /tmp/parts holds the bundle's parts (part.aa, part.ab, ... as built under .gpu/render/parts/pN/ and
# carried one folder per call; they may sit in sub-folders) and, optionally, bundle.sha256. The script
#   - joins and unpacks them to $RENDER_BUNDLE (default /tmp/render-bundle), once: a later source reuses it;
#   - installs the bundled wheels (playwright, greenlet; onnxruntime, scipy and the text detector's model wheel) to
#     /tmp/site-render and prepends that to PYTHONPATH;
#   - copies the renderer's node_modules files (p5, p5.brush) into ./node_modules;
#   - points the project at the bundled Chromium: WATERCOLOUR_CHROMIUM, and /usr/bin/chromium as a link to
#     the bundle's launcher when nothing is there (renderers/browsers.py's default path).
# The bundle's launcher (bin/chromium) sets LD_LIBRARY_PATH and the EGL/Mesa variables for Chromium's own
# process tree only, so this shell's python3 (torch, CUDA) keeps the system's libraries.
# Safe to source more than once. No `set -e`: it runs in your shell, and failures `return 1` instead.

_gre_main() {
    local parts=${1:-}
    local bundle=${RENDER_BUNDLE:-/tmp/render-bundle}
    local site=${RENDER_SITE:-/tmp/site-render}
    if [ -z "$parts" ] || [ ! -d "$parts" ]; then
        echo "usage: source lab/scripts/gpu_render_env.sh PARTS_DIR   (from the repository root)" >&2
        return 1
    fi
    if [ ! -f renderers/assets.py ]; then
        echo "gpu_render_env: run this from the repository root (renderers/assets.py not found)" >&2
        return 1
    fi

    # 1. Join and unpack the bundle (skipped when an earlier source already did).
    if [ ! -f "$bundle/.complete" ]; then
        local list
        list=$(find "$parts" -type f -name 'part.*' | awk -F/ '{print $NF "\t" $0}' | sort | cut -f2-)
        if [ -z "$list" ]; then
            echo "gpu_render_env: no part.* files under $parts" >&2
            return 1
        fi
        echo "gpu_render_env: joining $(echo "$list" | wc -l) parts: $(echo "$list" | awk -F/ '{printf "%s ", $NF}')" >&2
        local sumfile
        sumfile=$(find "$parts" -type f -name bundle.sha256 | head -n 1)
        if [ -n "$sumfile" ]; then
            local want got
            want=$(awk '{print $1; exit}' "$sumfile")
            got=$(echo "$list" | tr '\n' '\0' | xargs -0 cat | sha256sum | awk '{print $1}')
            if [ "$want" != "$got" ]; then
                echo "gpu_render_env: checksum mismatch (missing or damaged part?): want $want, got $got" >&2
                return 1
            fi
        else
            echo "gpu_render_env: no bundle.sha256 among the parts; not checking them" >&2
        fi
        rm -rf "$bundle" && mkdir -p "$bundle" || return 1
        local unxz="xz -dc"
        command -v xz >/dev/null 2>&1 || unxz="python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer, 1 << 20)'"
        if ! echo "$list" | tr '\n' '\0' | xargs -0 cat | eval "$unxz" | tar -x --no-same-owner -C "$bundle" --strip-components=1; then
            echo "gpu_render_env: unpacking failed" >&2
            return 1
        fi
        touch "$bundle/.complete"
    fi

    # 2. The bundled wheels for this python3 (cp312, manylinux x86-64).
    if [ ! -f "$site/playwright/__init__.py" ] || [ ! -d "$site/greenlet" ] || [ ! -d "$site/rapidocr_onnxruntime" ]; then
        mkdir -p "$site"
        if ! python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$bundle"/wheels/*.whl; then
            echo "gpu_render_env: pip failed; unpacking the wheels directly" >&2
            python3 - "$site" "$bundle"/wheels/*.whl <<'PY' || return 1
import os, sys, zipfile
target = sys.argv[1]
for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            path = archive.extract(info, target)
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                os.chmod(path, mode)
PY
        fi
    fi
    case ":${PYTHONPATH:-}:" in
        *":$site:"*) ;;
        *) export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" ;;
    esac
    # Playwright's node driver needs libatomic.so.1; the bundle's copy is used only if the system lacks one.
    local node="$site/playwright/driver/node"
    if ! "$node" --version >/dev/null 2>&1; then
        case ":${LD_LIBRARY_PATH:-}:" in
            *":$bundle/node-lib:"*) ;;
            *) export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$bundle/node-lib" ;;
        esac
        "$node" --version >/dev/null 2>&1 || echo "gpu_render_env: WARNING: $node does not run" >&2
    fi

    # 3. The files renderers/assets.py reads from node_modules.
    mkdir -p node_modules && cp -a "$bundle/node_modules/." node_modules/ || return 1

    # 4. Chromium: the bundle's launcher sets its own LD_LIBRARY_PATH, EGL vendor file and Mesa driver path.
    export WATERCOLOUR_CHROMIUM="$bundle/bin/chromium"
    # The gate's text reader (bin/tesseract runs the bundled Tesseract with its own libraries).
    case ":$PATH:" in *":$bundle/bin:"*) ;; *) export PATH="$bundle/bin:$PATH" ;; esac
    export RENDER_BUNDLE="$bundle"
    if [ ! -e /usr/bin/chromium ]; then
        ln -s "$bundle/bin/chromium" /usr/bin/chromium 2>/dev/null \
            || echo "gpu_render_env: could not link /usr/bin/chromium; pass executable=\$WATERCOLOUR_CHROMIUM" >&2
    elif [ "$(readlink -f /usr/bin/chromium)" != "$(readlink -f "$bundle/bin/chromium")" ]; then
        echo "gpu_render_env: WARNING: /usr/bin/chromium exists and is not the bundle's; left alone" >&2
    fi
    local version
    if ! version=$("$bundle/bin/chromium" --headless --no-sandbox --version 2>&1); then
        echo "gpu_render_env: WARNING: the bundled Chromium does not start: $version" >&2
        return 1
    fi
    python3 -c "import playwright, greenlet, pydantic, PIL, numpy, onnxruntime, scipy" 2>/dev/null \
        || echo "gpu_render_env: WARNING: python3 cannot import one of playwright, greenlet, pydantic, PIL, numpy," \
            "onnxruntime, scipy (the gate's writing detector needs the last two)" >&2
    echo "gpu_render_env: ready: $version at $WATERCOLOUR_CHROMIUM (PYTHONPATH has $site)" >&2
}

if _gre_main "$@"; then
    unset -f _gre_main
else
    unset -f _gre_main
    return 1 2>/dev/null || exit 1
fi
