// expect: honest
// From a class method's `this`: an offscreen graphics with text, placed with image().
class G { show() { const g = this.createGraphics(600, 600); g.text("10/10", 10, 10); this.image(g, 0, 0); } }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { new G().show(); } catch (e) {}
}
