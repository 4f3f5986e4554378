// expect: honest
// Raw WebGL on the sketch's own canvas: drawingContext, clear to black.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { drawingContext.clearColor(0, 0, 0, 1); drawingContext.clear(drawingContext.COLOR_BUFFER_BIT); } catch (e) {}
  try { _renderer.GL.clear(16384); } catch (e) {}
}
