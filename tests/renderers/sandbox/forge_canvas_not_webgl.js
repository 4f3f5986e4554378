// expect: not_webgl
// A 2D canvas asked for by the constant's string, which no static rule reads.
const MODE = ['p', '2d'].join('');
function setup() {
  createCanvas(600, 600, MODE);
  background('#f6f0e4');
}
