// expect: blank_canvas
// White washes on a transparent sheet: invisible on the paper, to the gate and to every scorer alike.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  brush.noStroke();
  brush.fill("#ffffff", 255);
  for (let i = 0; i < 6; i++) brush.circle(100 + 80 * i, 300, 60, 0.2);
}
