// expect: honest
// A second canvas that shows anything, placed where the readback might find it.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { const g = createGraphics(600, 600); g.background(0); image(g, 0, 0); } catch (e) {}
  try { document.body.appendChild(document.createElement('canvas')); } catch (e) {}
  try { select('canvas').elt.remove(); } catch (e) {}
}
