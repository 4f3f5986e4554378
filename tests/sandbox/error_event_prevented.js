// expect: any_of render_timeout runtime_error
// Cancels every error and rejection event, then throws in setup: it can hide the error, not the missing finish.
window.addEventListener("error", (e) => { e.preventDefault(); e.stopImmediatePropagation(); }, true);
window.addEventListener("unhandledrejection", (e) => { e.preventDefault(); e.stopImmediatePropagation(); }, true);
function setup() { createCanvas(60, 60, WEBGL); throw new Error("hidden"); }
