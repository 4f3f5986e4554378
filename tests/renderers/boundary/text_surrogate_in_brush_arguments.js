// expect: brush_arguments
// A brush call refused with a lone surrogate among its arguments.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  const amount = "\uDBFF";
  brush.fillBleed(amount);
}
