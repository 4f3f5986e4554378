// expect: brush_arguments
// A radius computed to NaN: not a finite number.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke();
  const r = 0 / 0;
  brush.fill("#b0305a", 220);
  brush.circle(300, 300, r, 0.3);
}
