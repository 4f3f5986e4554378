// expect: canvas_size
// A canvas side that is the one-time path of the render's files, cut out of a stack.
function setup() {
  let stack = "";
  try { background("#zz"); } catch (e) { stack = e.stack; }
  createCanvas(600, stack.slice(stack.indexOf("/r/")), WEBGL);
}
