// expect: honest
// A class's static method stands in for setup: `this` is undefined, never the page, so p5's ellipse is out of reach.
class K { static paint() { this.ellipse(300, 300, 400, 400); } }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { K.paint(); } catch (e) {}
}
