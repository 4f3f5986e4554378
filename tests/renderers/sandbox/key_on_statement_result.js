// expect: honest
// A p5 statement's result (in p5, translate and background return the renderer) read with a built key.
function setup() {
  createCanvas(600, 600, WEBGL);
  try { const k = "drawing" + "Context"; translate(0, 0)[k].fillRect(0, 0, 600, 600); } catch (e) {}
  translate(-300, -300);
  try { background("#f6f0e4")["_pIn" + "st"].ellipse(1, 1, 1); } catch (e) {}
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
