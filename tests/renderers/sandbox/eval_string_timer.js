// expect: runtime_error
// A timer whose code is a string assembled at run time: the policy drops it silently, the watcher does not.
const timer = globalThis[["set", "Timeout"].join("")];
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  timer(["brush.circle(300, 300, ", "200, 0.3)"].join(""), 0);
}
