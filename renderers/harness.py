"""The page a sketch runs in: a seeded Math.random, p5, p5.brush, a lifecycle probe, then the sketch.

Every file is served from memory by the pool's request router under ORIGIN; the sketch is its own script
file, so nothing it contains (a `</script>` in a string, say) can escape into the page's markup.
"""

from __future__ import annotations


ORIGIN = "http://watercolour.invalid"

INDEX_HTML = """<!doctype html>
<html><head><meta charset="utf-8">
<style>html,body{margin:0;padding:0;background:#fff;overflow:hidden}</style>
<script src="/seed.js"></script>
<script src="/p5.min.js"></script>
<script src="/p5.brush.js"></script>
<script src="/probe.js"></script>
<script src="/sketch.js"></script>
</head><body></body></html>
"""


def seed_script(seed: int) -> str:
    """Replace Math.random before the libraries load: p5.brush captures its PRNG seeds when it is evaluated."""
    return f"""(() => {{
  let a = {seed & 0xFFFFFFFF} ^ 0x9E3779B9;
  Math.random = function () {{  // mulberry32
    a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }};
}})();
"""


# The probe records errors and resolves window.__wc.finished once the sketch has painted: after setup when
# there is no draw, else after the first draw, once p5.brush's own postdraw flush has run (it registered
# its hooks first). It then stops the loop, so a sketch that forgets noLoop() does not keep burning CPU.
PROBE_JS = """(() => {
  const wc = (window.__wc = { errors: [], done: false, reason: null, t0: performance.now(), drawMs: null });
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
  const consoleError = console.error.bind(console);
  console.error = (...args) => { wc.errors.push("console: " + args.map(text).join(" ")); consoleError(...args); };
  p5.registerAddon((p5, fn, lifecycles) => {
    lifecycles.postsetup = function () {
      wc.setupDone = true;
      if (typeof window.draw !== "function") finish("setup");
    };
    lifecycles.postdraw = function () {
      this.noLoop();
      finish("draw");
    };
  });
})();
"""
