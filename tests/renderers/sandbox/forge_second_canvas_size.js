// expect: canvas_size
// A second createCanvas at another size after painting, to change what is read back.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  createCanvas(3000, 3000, WEBGL);
}
