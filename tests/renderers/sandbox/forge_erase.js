// expect: honest
// Erase mode switched on around the paint.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { erase(); noErase(); } catch (e) {}
  try { clear(); } catch (e) {}
}
