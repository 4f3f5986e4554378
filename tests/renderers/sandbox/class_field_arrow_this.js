// expect: honest
// An arrow in a class field keeps the field's `this`: the instance, not the page.
class F { grab = () => () => this.constructor.constructor('return this')(); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { new F().grab()().background(0); } catch (e) {}
}
