"""The documents a sketch runs in: a host page, and per render a sandboxed frame holding the sketch.

The host page lives as long as its pool slot. Each render gets a new `<iframe sandbox="allow-scripts">`: a
fresh JavaScript realm (globals, built-in prototypes, timers, p5 and p5.brush state all start clean) at an
opaque origin, so the sketch cannot reach the host page or storage that outlives it. Loading p5 into a
new frame of a warm renderer is ~0.1 s instead of ~0.2 s in a new page, and needs no browser context.

Every file is served from memory by the slot's request router under ORIGIN; the sketch is its own script
file, so nothing it contains (a `</script>` in a string, say) can escape into the markup. Scripts load as
CORS requests: to the opaque-origin frame they are otherwise cross-origin, and Chromium then reports their
errors as a bare "Script error." and drops their unhandled rejections (p5 runs setup/draw in promises).
"""

from __future__ import annotations

import json


ORIGIN = "http://watercolour.invalid"
LIBRARY_PATHS = {"p5": "/lib/p5.min.js", "p5.brush": "/lib/p5.brush.js"}

HOST_HTML = """<!doctype html>
<html><head><meta charset="utf-8">
<style>html,body{margin:0;padding:0;background:#fff;overflow:hidden}iframe{border:0;display:block}</style>
</head><body></body></html>
"""

FRAME_HTML = """<!doctype html>
<html><head><meta charset="utf-8">
<style>html,body{margin:0;padding:0;background:#fff;overflow:hidden}</style>
<script crossorigin="anonymous" src="seed.js"></script>
<script crossorigin="anonymous" src="/lib/p5.min.js"></script>
<script crossorigin="anonymous" src="/lib/p5.brush.js"></script>
<script crossorigin="anonymous" src="probe.js"></script>
<script crossorigin="anonymous" src="sketch.js"></script>
</head><body></body></html>
"""

# Replaces the previous render's frame; the frame is as large as the largest canvas the sketch may ask for
# at density 1, because p5 only runs draw() from requestAnimationFrame, which needs a rendered frame.
MOUNT_FRAME_JS = """(src) => {
  document.body.replaceChildren();
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.width = 640;
  frame.height = 640;
  frame.src = src;
  document.body.appendChild(frame);
}"""


def seed_script(seed: int, size: int | None) -> str:
    """Seed Math.random before the libraries load (p5.brush captures its PRNG seeds when it is evaluated)."""
    return f"""(() => {{
  let a = {seed & 0xFFFFFFFF} ^ 0x9E3779B9;
  Math.random = function () {{  // mulberry32
    a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }};
  window.__wcOutputSize = {json.dumps(size)};
}})();
"""


# The probe records errors and resolves __wc.finished once the sketch has painted: after setup when there
# is no draw, else after the first draw, once p5.brush's own postdraw flush has run (it registered its hooks
# first). It then stops the loop, so a sketch that forgets noLoop() does not keep burning CPU.
# Output size: pixelDensity(size / canvas width) right after createCanvas keeps the sketch's coordinates;
# p5 2.3 ignores pixelDensity called before createCanvas (RENDERING.md section 6).
# The readback holds the original toDataURL, so a sketch that replaces it cannot forge its picture.
PROBE_JS = """(() => {
  const toDataURL = HTMLCanvasElement.prototype.toDataURL;
  const wc = { errors: [], done: false, reason: null, t0: performance.now(), drawMs: null };
  Object.defineProperty(window, "__wc", { value: wc, writable: false, configurable: false });
  let resolve;
  wc.finished = new Promise((r) => (resolve = r));
  const finish = (reason) => {
    if (wc.done) return;
    wc.done = true;
    wc.reason = reason;
    wc.drawMs = performance.now() - wc.t0;
    setTimeout(() => resolve(reason), 0);
  };
  const text = (v) => {
    try { return v && v.stack ? String(v.stack).split("\\n").slice(0, 2).join(" ") : String(v); }
    catch (e) { return "unprintable error"; }
  };
  window.addEventListener("error", (e) => {
    wc.errors.push("uncaught: " + text(e.error || e.message));
    setTimeout(() => finish("error"), 50);
  });
  window.addEventListener("unhandledrejection", (e) => {
    wc.errors.push("unhandled rejection: " + text(e.reason));
    setTimeout(() => finish("error"), 50);
  });
  window.addEventListener("load", () => setTimeout(() => {
    if (typeof window.setup !== "function" && typeof window.draw !== "function") finish("no setup or draw");
  }, 0));
  const consoleError = console.error.bind(console);
  console.error = (...args) => { wc.errors.push("console: " + args.map(text).join(" ")); consoleError(...args); };
  wc.read = () => {
    const c = document.getElementById("defaultCanvas0") || document.querySelector("canvas");
    return { errors: wc.errors.map(String), reason: wc.reason, drawMs: wc.drawMs,
             png: c ? toDataURL.call(c, "image/png") : null, w: c ? c.width : 0, h: c ? c.height : 0 };
  };
  const createCanvas = p5.prototype.createCanvas;
  p5.prototype.createCanvas = function (...args) {
    const canvas = createCanvas.apply(this, args);
    const size = window.__wcOutputSize;
    if (size && this.width > 0) this.pixelDensity(size / this.width);
    return canvas;
  };
  p5.registerAddon((p5, fn, lifecycles) => {
    lifecycles.postsetup = function () {
      if (typeof window.draw !== "function") finish("setup");
    };
    lifecycles.postdraw = function () {
      this.noLoop();
      finish("draw");
    };
  });
})();
"""
