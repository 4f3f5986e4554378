// expect: brush_arguments
// A radius written as a string, through a variable.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke();
  const r = "140";
  brush.fill("#b0305a", 220);
  brush.circle(300, 300, r, 0.3);
}
