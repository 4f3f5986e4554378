// expect: runtime_error
// The same family through a rejection: an async function that throws thirty million non-ASCII characters.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  (async () => { throw "\u0436".repeat(30000000); })();
}
