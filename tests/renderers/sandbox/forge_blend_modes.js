// expect: honest
// Blend modes that would let later washes darken or replace the picture.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { blendMode(MULTIPLY); } catch (e) {}
  try { blendMode('difference'); } catch (e) {}
  try { setAttributes('alpha', false); } catch (e) {}
}
