// expect: honest
// The pixel density shrunk so the readback holds a few pixels.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { pixelDensity(0.05); } catch (e) {}
  try { resizeCanvas(60, 60); } catch (e) {}
  try { noSmooth(); } catch (e) {}
}
