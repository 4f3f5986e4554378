// expect: runtime_error
// An error p5 throws inside a stand-in, not caught: the verdict quotes the plain TypeError the harness made.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  background("not a colour");
}
