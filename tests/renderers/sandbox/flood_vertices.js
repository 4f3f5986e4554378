// expect: flood
// One shape of 200,000 vertices.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  brush.beginShape(0);
  for (let i = 0; i < 200000; i++) brush.vertex(300 + (i % 7), 300 + (i % 11));
  brush.endShape(true);
}
