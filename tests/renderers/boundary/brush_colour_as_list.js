// expect: brush_arguments
// A colour as a list of channels, through a variable.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke();
  const colour = [176, 48, 90];
  brush.fill(colour, 220);
  brush.circle(300, 300, 140, 0.3);
}
