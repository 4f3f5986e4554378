// expect: runtime_error
// Control characters escape to six bytes too: a hundred million of them, thrown.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  throw "\u0001\u001f".repeat(50000000);
}
