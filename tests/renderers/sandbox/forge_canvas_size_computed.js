// expect: canvas_size
// A 600 x 40 strip whose height is computed.
function setup() {
  createCanvas(600, 600 - 560, WEBGL);
  background('#f6f0e4');
}
