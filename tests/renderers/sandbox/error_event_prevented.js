// expect: runtime_error
// Cancels every error and rejection event, then throws in setup: DevTools stays silent, the tripwire does not.
window.addEventListener("error", (e) => { e.preventDefault(); e.stopImmediatePropagation(); }, true);
window.addEventListener("unhandledrejection", (e) => { e.preventDefault(); e.stopImmediatePropagation(); }, true);
function setup() { createCanvas(60, 60, WEBGL); throw new Error("hidden"); }
