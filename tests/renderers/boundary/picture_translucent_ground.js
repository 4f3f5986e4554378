// expect: pass
// A ground at alpha 10 of 255: the sheet is nearly transparent under the disc.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background(246, 240, 228, 10);
  brush.noStroke();
  brush.fill("#b0305a", 220);
  brush.circle(300, 300, 140, 0.3);
}
