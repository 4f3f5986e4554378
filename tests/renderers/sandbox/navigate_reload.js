// expect: runtime_error
// Reloads its frame, hoping for a second, different run.
function setup() { createCanvas(60, 60, WEBGL); location.reload(); }
