// expect: runtime_error
// A huge error from draw, after setup painted: the same bound in the draw loop.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
function draw() {
  throw "\u0001".repeat(20000000);
}
