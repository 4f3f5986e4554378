// expect: runtime_error
// endShape's polygon kept and drawn again as a flat opaque wash: the stand-in returns nothing.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  const shape = (() => { brush.beginShape(0); brush.vertex(10, 10); brush.vertex(590, 10); brush.vertex(300, 590); return brush.endShape(true); })();
  shape.fill('#000000', 255); shape.draw();
}
