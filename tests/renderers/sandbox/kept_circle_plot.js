// expect: honest
// A brush call's result returned from an arrow and kept: p5.brush's plot, with hatch outside the ten.
let kept = null;
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); kept = (() => brush.circle(300, 300, 140, 0.3))();
  try { kept[0].hatch(5, 45); kept[0].fill('#000000', 255); } catch (e) {}
}
