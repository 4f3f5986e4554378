// expect: brush_arguments
// Arguments with valueOf and getters that would run inside p5 and p5.brush: a brush method takes only the
// prompt's kinds, so the first such call ends the render.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { brush.fill({ valueOf() { return 0; }, toString() { return '#000000'; } }, 255); } catch (e) {}
  try { background({ get levels() { return [0, 0, 0, 255]; } }); } catch (e) {}
  try { translate({ valueOf() { throw 1; } }, 0); } catch (e) {}
  try { brush.circle([300, { x: 1 }], 300, 280, 0); } catch (e) {}
}
