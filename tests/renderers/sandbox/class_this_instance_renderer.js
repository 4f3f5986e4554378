// expect: honest
// From a class getter's `this`: p5's own renderer and its drawing context.
class H { get r() { return this; } }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { Object.getOwnPropertyDescriptor(H.prototype, 'r').get.call()._renderer.drawingContext.fillRect(0, 0, 600, 600); } catch (e) {}
  try { new H().r.drawingContext.fillRect(0, 0, 600, 600); } catch (e) {}
}
