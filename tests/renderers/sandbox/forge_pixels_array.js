// expect: honest
// The canvas's pixels[] written and pushed back.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { loadPixels(); for (let i = 0; i < pixels.length; i++) pixels[i] = 0; updatePixels(); } catch (e) {}
  try { set(0, 0, [0, 0, 0, 255]); } catch (e) {}
}
