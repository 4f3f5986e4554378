// expect: runtime_error
// A real error object, built from a caught error's constructor, with a message of twenty million characters: its
// stack carries the whole message.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let made = null;
  try { null.x; } catch (e) { made = new e.constructor("\u044f".repeat(20000000)); }
  throw made;
}
