// expect: brush_arguments
// endShape with nothing, through a spread of an empty list.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke();
  const none = [];
  brush.fill("#b0305a", 220);
  brush.beginShape(0.5);
  brush.vertex(100, 100);
  brush.vertex(500, 100);
  brush.vertex(300, 500);
  brush.endShape(...none);
}
