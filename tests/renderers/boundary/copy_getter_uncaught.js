// expect: runtime_error
// A list whose item is a getter, not caught: the render fails with the copier's own plain error, which names
// the fix, and the getter never runs.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  const list = [1, 2, 3];
  O.defineProperty(list, 0, { get() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); return 1; } });
  max(list);
}
