// expect: honest
// A key built by concatenation reaches the Function constructor, which after lockdown compiles nothing.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { const k = 'constr' + 'uctor'; (() => {})[k]('return this')().ellipse(300, 300, 400, 400); } catch (e) {}
}
