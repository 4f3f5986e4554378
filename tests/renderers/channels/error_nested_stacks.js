// expect: runtime_error
// An error whose message holds another error's stack and message, twenty-two levels deep, doubling each time.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let text = "\u00e9\n";
  for (let i = 0; i < 22; i++) {
    try { null.x; } catch (e) { text = e.stack + "\n" + text + text; }
  }
  throw text;
}
