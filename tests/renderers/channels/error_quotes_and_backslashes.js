// expect: runtime_error
// Quotes and backslashes escape to two bytes: a budget counted in characters would let twice as much through.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  throw '"\\'.repeat(10000000);
}
