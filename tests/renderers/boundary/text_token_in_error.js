// expect: runtime_error
// An error whose message is a caught error's stack: it names the render's one-time files.
function setup() {
  createCanvas(600, 600, WEBGL);
  let stack = "";
  try { background("#zz"); } catch (e) { stack = e.stack; }
  throw "stack: " + stack + stack;
}
