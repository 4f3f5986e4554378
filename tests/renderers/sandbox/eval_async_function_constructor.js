// expect: honest
// AsyncFunction's constructor, reached from a literal's prototype rather than any global name; error caught.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try {
    const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
    new AsyncFunction("brush.circle(300, 300, 200, 0.3)")();
  } catch (e) {}
}
