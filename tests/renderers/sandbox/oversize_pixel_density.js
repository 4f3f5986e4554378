// expect: runtime_error
// pixelDensity after createCanvas: 600 x 8 = 4,800 pixels a side, refused before any pixel is analysed.
function setup() { createCanvas(600, 600, WEBGL); pixelDensity(8); background(200); }
