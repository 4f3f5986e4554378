// expect: runtime_error
// Sends its own frame to another address after creating its canvas.
function setup() { createCanvas(60, 60, WEBGL); location.href = "http://elsewhere.test/"; }
