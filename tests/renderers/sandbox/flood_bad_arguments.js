// expect: brush_arguments
// Thousands of refused arguments, each a rejected promise with a long message: the first ends the render.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  for (let i = 0; i < 5000; i++) (async () => brush.fill({ i }, 'x'.repeat(5000)))();
}
