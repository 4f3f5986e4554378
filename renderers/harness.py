"""The documents a sketch runs in: a host page, and per render a sandboxed frame holding the sketch.

The host page lives as long as its pool slot. Each render gets a new `<iframe sandbox="allow-scripts">`: a
fresh JavaScript realm (globals, built-in prototypes, timers, p5 and p5.brush state all start clean) at an
opaque origin, so the sketch cannot reach the host page or storage that outlives it. Loading p5 into a
new frame of a warm renderer is ~0.1 s instead of ~0.2 s in a new page, and needs no browser context.

Every file is served from memory by the slot's request router under ORIGIN; the sketch travels as a string
inside the probe's file and runs in a SES Compartment (renderers/capabilities.py), so nothing it contains (a
`</script>` in a string, say) can escape into the markup, and nothing it runs reaches the page. Scripts load as
CORS requests: to the opaque-origin frame they are otherwise cross-origin, and Chromium then reports their
errors as a bare "Script error." and drops their unhandled rejections (p5 runs setup/draw in promises).

Nothing the harness reads comes from the sketch's realm: the picture and the finish signal are read in an
isolated world (WATCH_JS), errors and navigations arrive as DevTools events (renderers/watch.py).
"""

from __future__ import annotations

import json

from renderers import capabilities


ORIGIN = "http://watercolour.invalid"
LIBRARY_PATHS = {"p5": "/lib/p5.min.js", "p5.brush": "/lib/p5.brush.js", "ses": "/lib/ses.js"}

HOST_HTML = """<!doctype html>
<html><head><meta charset="utf-8">
<style>html,body{margin:0;padding:0;background:#fff;overflow:hidden}iframe{border:0;display:block}</style>
</head><body></body></html>
"""

# The frame's content security policy: scripts only from ORIGIN, where the router serves the harness and the
# libraries. 'unsafe-eval' is there for SES alone: a Compartment compiles the sketch with the page's Function
# constructor, in a scope of the permitted names (renderers/capabilities.py); after lockdown no value the sketch
# can reach compiles code anywhere else. Without 'unsafe-inline' or any other source no inline script,
# event-handler attribute, javascript:/data:/blob: script or worker runs, in this frame or the about:blank and
# srcdoc frames it creates (they inherit the policy). The meta tag comes before every script, so the policy
# holds from the first one; what it refuses the watcher records (WATCH_JS, "refused").
CSP = f"script-src {ORIGIN} 'unsafe-eval'"

FRAME_HTML = f"""<!doctype html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<style>html,body{{margin:0;padding:0;background:#fff;overflow:hidden}}</style>
<script crossorigin="anonymous" src="seed.js"></script>
<script crossorigin="anonymous" src="/lib/p5.min.js"></script>
<script crossorigin="anonymous" src="/lib/p5.brush.js"></script>
<script crossorigin="anonymous" src="/lib/ses.js"></script>
<script crossorigin="anonymous" src="probe.js"></script>
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


def seed_script(seed: int) -> str:
    """Seed Math.random before the libraries load (p5.brush captures its PRNG seeds when it is evaluated)."""
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


def probe_script(mark: str, size: int | None, source: str) -> str:
    """The in-frame harness: it locks the frame down, confines the sketch, sizes the output and signals the finish.

    It runs after p5, p5.brush and SES, and takes what it needs from the page before `lockdown()`. The sketch
    (`source`, carried as a string literal) is evaluated in a Compartment that holds only the permitted names
    (renderers/capabilities.py), so it can reach neither this code nor anything the page holds.
    The probe reports only through a DOM attribute that it sets and removes at once on the main canvas,
    prefixed with a one-time `mark`: the watcher in the isolated world (WATCH_JS) takes the first one carrying it.
    The value after the mark is JSON: the finish reason, the in-page milliseconds, and a refusal if the sketch
    earned one (`[code, detail]`: a canvas other than 600 x 600 WEBGL, a flood of brush calls), which ends the
    render at once. Finishing kills every stand-in the sketch holds, so nothing it runs later reaches the picture.
    Finish: after setup when there is no draw, else after the first draw once p5.brush's own postdraw flush
    has run (it registered its hooks first); then the loop stops so a sketch without noLoop() stops burning CPU.
    Output size: pixelDensity(size / canvas width) right after createCanvas keeps the sketch's coordinates;
    p5 2.3 ignores pixelDensity called before createCanvas (RENDERING.md section 6).
    """
    return f"""(() => {{
  const apply = Reflect.apply;
  const setAttribute = Element.prototype.setAttribute;
  const getRootNode = Node.prototype.getRootNode;
  const removeAttribute = Element.prototype.removeAttribute;
  const stringify = JSON.stringify;
  const now = performance.now.bind(performance);
  const later = setTimeout;
  const noLoop = p5.prototype.noLoop;
  const pixelDensity = p5.prototype.pixelDensity;
  const createCanvas = p5.prototype.createCanvas;
  const root = document.documentElement;
  const mark = {json.dumps(mark)};
  const size = {json.dumps(size)};
  const t0 = now();
  let done = false;
  let sketch = null;
  const finish = (instance, reason, refused) => {{
    if (done) return;
    done = true;
    if (sketch) sketch.revoke();
    const label = mark + stringify({{ reason, ms: now() - t0, refused: refused || null }});
    // A canvas taken out of the document (or into a shadow root) is marked on the root instead: the watcher
    // observes the document's own tree only, and a mark that names no canvas is a failed readback.
    let canvas = root;
    try {{
      canvas = instance ? instance._renderer.canvas : root;
      if (apply(getRootNode, canvas, []) !== document) canvas = root;
      apply(setAttribute, canvas, ["data-wc", label]);
    }} catch (e) {{
      canvas = root;
      apply(setAttribute, canvas, ["data-wc", label]);
    }}
    apply(removeAttribute, canvas, ["data-wc"]);
  }};
  window.addEventListener("load", () => later(() => {{
    if (typeof window.setup !== "function" && typeof window.draw !== "function") finish(null, "no setup or draw");
  }}, 0));
  p5.prototype.createCanvas = function (...args) {{
    const canvas = apply(createCanvas, this, args);
    if (size && this.width > 0) apply(pixelDensity, this, [size / this.width]);
    return canvas;
  }};
  p5.registerAddon((p5, fn, lifecycles) => {{
    lifecycles.postsetup = function () {{
      if (typeof window.draw !== "function") finish(this, "setup");
    }};
    lifecycles.postdraw = function () {{
      try {{ apply(noLoop, this, []); }} catch (e) {{}}
      finish(this, "draw");
    }};
  }});
  sketch = ({capabilities.confine_script()})((code, detail) => finish(null, "refused", [code, detail]));
  sketch.run({json.dumps(source)});
}})();
"""


# Runs in an isolated world of every frame (Page.addScriptToEvaluateOnNewDocument with a world name), before
# the frame's own scripts: it shares the DOM with the sketch but none of its globals or prototypes, so the
# sketch cannot reach or replace anything here. It records the probe's finish marks, in order (capped: a
# sketch that floods them only loses its own finish), link hints that open connections without a request
# the router would see (preconnect, dns-prefetch), and what the content security policy (CSP) refused. Its
# violation listener is the first one on the window, in the capture phase, so no listener of the sketch can
# stop the event before it; forged events (not isTrusted) are ignored. A refused string-to-code (eval,
# Function, a string timer, WebAssembly) or inline script is "code"; a refused script or worker URL is "load".
# The harness reads the picture through this world's own HTMLCanvasElement.prototype, and refuses a canvas
# larger than the configured size before encoding it.
WORLD = "watercolour-watch"
WATCH_JS = """(() => {
  const marks = [];
  const hints = [];
  const refused = [];
  let waiting = [];
  const CODE = ["eval", "wasm-eval", "inline", "trusted-types-policy", "trusted-types-sink"];
  addEventListener("securitypolicyviolation", (event) => {
    if (!event.isTrusted || refused.length >= 20) return;
    const blocked = String(event.blockedURI || "").slice(0, 200);
    const where = event.sourceFile ? " at " + String(event.sourceFile).slice(0, 200) + ":" + event.lineNumber : "";
    const kind = CODE.includes(blocked) ? "code" : "load";
    refused.push([kind, blocked + " refused by the content security policy (" + event.effectiveDirective + ")" + where]);
  }, true);
  const HINT = /(^|\\s)(preconnect|dns-prefetch|prefetch|prerender|preload|modulepreload)(\\s|$)/i;
  const noteLink = (el) => {
    const hint = el.localName === "link" && HINT.test(el.rel || "") && el.href && el.rel + " " + String(el.href).slice(0, 200);
    if (hint && hints.length < 20 && !hints.includes(hint)) hints.push(hint);
  };
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      if (m.type === "attributes") {
        if (m.attributeName !== "data-wc") noteLink(m.target);
        else if (m.oldValue !== null && marks.length < 256) marks.push([m.target, m.oldValue]);
      } else {
        for (const node of m.addedNodes) {
          if (node.nodeType !== 1) continue;
          noteLink(node);
          for (const link of node.querySelectorAll("link")) noteLink(link);
        }
      }
    }
    const ready = waiting;
    waiting = [];
    for (const check of ready) check();
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeOldValue: true,
                         attributeFilter: ["data-wc", "rel", "href"] });
  const find = (mark) => {
    for (const [el, value] of marks) if (value.startsWith(mark)) return [el, value.slice(mark.length)];
    return null;
  };
  // The violation event is dispatched in a task of its own after the refusal: one timer turn lets it arrive.
  const settled = () => new Promise((resolve) => setTimeout(resolve, 0));
  window.__wcWatch = {
    async reports() {
      await settled();
      return { hints: hints.slice(), refused: refused.slice() };
    },
    finished(mark) {
      return new Promise((resolve) => {
        const check = () => (find(mark) ? resolve(true) : waiting.push(check));
        check();
      });
    },
    async read(mark, max) {
      await settled();
      const out = { reason: null, drawMs: null, png: null, w: 0, h: 0, canvas: false, oversize: false,
                    refused: null, hints: hints.slice(), policy: refused.slice() };
      const found = find(mark);
      if (!found) return out;
      const [el, rest] = found;
      const label = JSON.parse(rest);
      out.reason = String(label.reason);
      out.drawMs = Number(label.ms);
      out.refused = label.refused;
      out.canvas = el instanceof HTMLCanvasElement;
      if (!out.canvas) return out;
      out.w = el.width;
      out.h = el.height;
      if (out.w > max || out.h > max) out.oversize = true;
      else if (out.w > 0 && out.h > 0) out.png = el.toDataURL("image/png");
      return out;
    },
  };
})();
"""

# Runs in the main world of every frame before its scripts, and is the only way anything the frame says leaves it:
# it reports through a DevTools binding that it takes off the global at once, and keeps every channel a sketch can
# fill from crossing DevTools unbounded. A channel that crossed whole killed the renderer's driver: an uncaught
# error whose message was tens of megabytes of non-ASCII crossed as half a billion characters (six bytes an escape),
# more than a Node string holds, and two million console warnings saturated the scoring process's event loop.
# - Uncaught errors and unhandled rejections: every one is cancelled (DevTools reports no cancelled error), and
#   its first two lines are reported instead, read from its own data properties or V8's own stack getter (no
#   getter or method of the sketch's runs here), cut to MAX_MESSAGE_BYTES.
# - The console, every method: replaced, so nothing reaches DevTools's console. `error` and a failed `assert` are
#   reported like errors; every other level is counted and dropped (a painting logs nothing: the seed pool's 27
#   sketches and the bundled ones log no message at any level).
# - WebRTC peer connections and WebTransport sessions, whose UDP never reaches a request router (the network
#   namespace is what stops their packets).
# Budgets, per render (a frame): MAX_ERRORS errors, rejections and console errors; MAX_CONSOLE messages of the
# other levels; MAX_ATTEMPTS attempts; MAX_PAGE_BYTES of reports in all, counted as the protocol writes them
# (printable ASCII a byte, anything else a six-byte escape). Past any of them one `flood` report ends the render,
# and nothing more crosses. Its listeners are the first registered.
ATTEMPT_BINDING = "__wcAttempt"
MAX_ERRORS = 20
MAX_CONSOLE = 1_000
MAX_ATTEMPTS = 20
# Twice the verdict's 500 bytes a reason: the render's path, which the verdict drops, can fill a message.
MAX_MESSAGE_BYTES = 1_000
MAX_PAGE_BYTES = 16_384
TRIPWIRE_JS = f"""(() => {{
  const report = globalThis.{ATTEMPT_BINDING};
  if (typeof report !== "function") return;
  delete globalThis.{ATTEMPT_BINDING};
  const apply = Reflect.apply, construct = Reflect.construct, describeOwn = Reflect.getOwnPropertyDescriptor;
  const ownKeys = Reflect.ownKeys, hasOwn = Object.prototype.hasOwnProperty, text = String;
  const stringify = JSON.stringify, charCodeAt = String.prototype.charCodeAt;
  const sliceText = String.prototype.slice, indexOf = String.prototype.indexOf;
  const preventDefault = Event.prototype.preventDefault;
  const ErrorEventType = ErrorEvent;
  const errorOf = describeOwn(ErrorEvent.prototype, "error").get;
  const messageOf = describeOwn(ErrorEvent.prototype, "message").get;
  const reasonOf = describeOwn(PromiseRejectionEvent.prototype, "reason").get;
  const stackGetter = (describeOwn(new Error(), "stack") || {{}}).get;
  let errors = 0, consoles = 0, attempts = 0, spent = 0, flooded = false;
  const flood = (what) => {{
    if (flooded) return;
    flooded = true;
    report("flood " + what);
  }};
  // `value` cut to `limit` bytes as the protocol writes it.
  const fit = (value, limit) => {{
    let cost = 0, i = 0;
    for (; i < value.length; i++) {{
      const unit = apply(charCodeAt, value, [i]);
      const bytes = unit >= 0x20 && unit < 0x7f ? (unit === 0x22 || unit === 0x5c ? 2 : 1) : 6;
      if (cost + bytes > limit) break;
      cost += bytes;
    }}
    return [i < value.length ? apply(sliceText, value, [0, i]) : value, cost];
  }};
  const send = (kind, message) => {{
    if (flooded) return;
    const [cut, cost] = fit(message, {MAX_MESSAGE_BYTES});
    spent += cost;
    if (spent > {MAX_PAGE_BYTES}) return flood("more than {MAX_PAGE_BYTES} bytes of errors and messages");
    report(kind + " " + cut);
  }};
  // An own data property, or V8's own stack getter's answer; never an accessor of the sketch's.
  const own = (value, key) => {{
    try {{
      const found = describeOwn(value, key);
      if (found === undefined) return undefined;
      if (apply(hasOwn, found, ["value"])) return found.value;
      if (stackGetter && found.get === stackGetter) return apply(stackGetter, value, []);
    }} catch (e) {{}}
    return undefined;
  }};
  const describe = (value) => {{
    if (typeof value === "string") return value;
    if (value === null || (typeof value !== "object" && typeof value !== "function")) {{
      try {{ return text(value); }} catch (e) {{ return typeof value; }}
    }}
    const stack = own(value, "stack");
    return typeof stack === "string" ? stack : "an object";
  }};
  // The first two lines on one line, as the verdict quotes them, read from a bounded head.
  const lines = (value) => {{
    const head = apply(sliceText, value, [0, {4 * MAX_MESSAGE_BYTES}]);
    const first = apply(indexOf, head, ["\\n"]);
    if (first < 0) return head;
    const second = apply(indexOf, head, ["\\n", first + 1]);
    return apply(sliceText, head, [0, first]) + " " + apply(sliceText, head, [first + 1, second < 0 ? head.length : second]);
  }};
  const error = (kind, values) => {{
    errors += 1;
    if (errors > {MAX_ERRORS}) return flood("more than {MAX_ERRORS} errors and rejections");
    let said = "";
    for (let i = 0; i < values.length && i < 8; i++) said += (i ? " " : "") + lines(describe(values[i]));
    send(kind, said);
  }};
  addEventListener("error", (event) => {{
    if (!(event instanceof ErrorEventType)) return;  // a resource that failed to load: not an exception
    apply(preventDefault, event, []);
    try {{
      let thrown = apply(errorOf, event, []);
      if (thrown === undefined || thrown === null) thrown = apply(messageOf, event, []);
      error("uncaught", [thrown]);
    }} catch (e) {{
      error("uncaught", ["an error the harness could not read"]);
    }}
  }}, true);
  addEventListener("unhandledrejection", (event) => {{
    apply(preventDefault, event, []);
    try {{
      error("rejection", [apply(reasonOf, event, [])]);
    }} catch (e) {{
      error("rejection", ["a rejection the harness could not read"]);
    }}
  }}, true);
  const console = globalThis.console;
  for (const key of ownKeys(console)) {{
    if (typeof console[key] !== "function") continue;
    console[key] = key === "error" ? (...values) => error("console", values)
      : key === "assert" ? (condition, ...values) => {{ if (!condition) error("console", ["Assertion failed:", ...values]); }}
      : () => {{ consoles += 1; if (consoles > {MAX_CONSOLE}) flood("more than {MAX_CONSOLE} console messages"); }};
  }}
  for (const name of ["RTCPeerConnection", "webkitRTCPeerConnection", "WebTransport"]) {{
    const original = globalThis[name];
    if (typeof original !== "function") continue;
    globalThis[name] = new Proxy(original, {{
      construct(target, args, newTarget) {{
        attempts += 1;
        if (attempts > {MAX_ATTEMPTS}) flood("more than {MAX_ATTEMPTS} network attempts");
        let detail = "";
        try {{ detail = name === "WebTransport" ? text(args[0]) : stringify(args[0] && args[0].iceServers); }}
        catch (e) {{}}
        send("attempt", name + " " + apply(sliceText, detail, [0, {MAX_MESSAGE_BYTES}]));
        return construct(target, args, newTarget);
      }},
    }});
  }}
}})();
"""
