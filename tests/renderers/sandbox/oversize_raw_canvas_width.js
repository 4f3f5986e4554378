// expect: runtime_error
// Grows p5's canvas element directly, behind p5's back.
function setup() { createCanvas(600, 600, WEBGL); background(200); drawingContext.canvas.width = 2400; }
