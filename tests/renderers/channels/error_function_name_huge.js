// expect: runtime_error
// The stack names the function that threw: here a name of ten million characters, not a message.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  const name = "\u00e9".repeat(10000000);
  const holder = { [name]: function () { return null.x; } };
  holder[name]();
}
