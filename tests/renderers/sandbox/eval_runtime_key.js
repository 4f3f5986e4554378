// expect: runtime_error
// The Function constructor through keys built at run time: the static check sees only computed members.
const k = ["constr", "uctor"].join("");
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  [][k][k]("brush.circle(300, 300, 200, 0.3)")();
}
