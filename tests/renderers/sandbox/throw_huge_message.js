// expect: runtime_error
// One error with a ten-megabyte message: the verdict keeps a bounded line.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  throw "x".repeat(10000000);
}
