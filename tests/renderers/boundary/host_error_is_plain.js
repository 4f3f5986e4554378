// expect: honest
// An error p5 throws inside a stand-in (an invalid colour string), caught: it must be a plain error of the
// frozen intrinsics, its whole prototype chain frozen, with nothing of the page's on it.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let caught = null;
  try { background("not a colour"); } catch (e) { caught = e; }
  const plain = ["Error", "TypeError", "RangeError", "ReferenceError", "SyntaxError"];
  if (caught === null || !plain.includes(caught.constructor.name)) betray();
  let proto = O.getPrototypeOf(caught);
  while (proto !== null) {
    if (!O.isFrozen(proto) || !O.isFrozen(proto.constructor)) betray();
    proto = O.getPrototypeOf(proto);
  }
  try { O.getPrototypeOf(caught).hacked = 1; } catch (e) {}
  if (caught.hacked !== undefined) betray();
}
