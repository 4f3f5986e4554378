// expect: runtime_error
// Same escape, its EvalError caught and the violation event stopped by the sketch's own listeners first.
for (const target of [window, document]) {
  target.addEventListener("securitypolicyviolation", (e) => { e.stopImmediatePropagation(); e.preventDefault(); }, true);
}
window.onsecuritypolicyviolation = () => false;
const k = ["constr", "uctor"].join("");
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { [][k][k]("brush.circle(300, 300, 200, 0.3)")(); } catch (e) {}
}
