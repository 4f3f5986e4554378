// expect: runtime_error
// A thrown object whose stack and message are getters that never return: the harness reads no getter of the sketch's,
// so the render ends with its error, not at the deadline.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  throw { get stack() { while (true) {} }, get message() { while (true) {} }, toString() { while (true) {} } };
}
