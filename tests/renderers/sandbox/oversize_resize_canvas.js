// expect: runtime_error
// resizeCanvas in draw grows the canvas past the requested size.
function setup() { createCanvas(600, 600, WEBGL); }
function draw() { resizeCanvas(3000, 1000); background(200); }
