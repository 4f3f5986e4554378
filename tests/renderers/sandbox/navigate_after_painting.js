// expect: runtime_error
// Paints, then leaves in a timer: the harness does not keep a picture from a frame that navigated away.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  location.assign("http://elsewhere.test/");
}
