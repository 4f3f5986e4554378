// expect: brush_arguments
// fillBleed with p5.brush's direction argument, spread so the static check cannot count it: a flat,
// hard-edged shape the prompt never lists.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke();
  const bleed = [0.3, "out"];
  brush.fill("#b0305a", 220);
  brush.fillBleed(...bleed);
  brush.circle(300, 300, 140, 0.3);
}
