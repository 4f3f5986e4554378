// expect: brush_arguments
// fill as four channel numbers, p5.brush's other form, spread from a list.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke();
  const rgba = [176, 48, 90, 220];
  brush.fill(...rgba);
  brush.circle(300, 300, 140, 0.3);
}
