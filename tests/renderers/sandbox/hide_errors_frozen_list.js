// expect: honest
// Freezes the old harness's error list, then paints and reports an error: the error still counts.
try { window.__wc.errors = Object.freeze([]); } catch (e) {}
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke();
  brush.fill("#b0305a", 220);
  brush.circle(300, 300, 140, 0.3);
  try { console.error("the sketch is broken"); } catch (e) {}
}
