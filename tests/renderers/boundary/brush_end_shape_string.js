// expect: brush_arguments
// endShape with a string other than CLOSE, through a variable: the prompt lists true (and the constant CLOSE).
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke();
  const how = "open";
  brush.fill("#b0305a", 220);
  brush.beginShape(0.5);
  brush.vertex(100, 100);
  brush.vertex(500, 100);
  brush.vertex(300, 500);
  brush.endShape(how);
}
