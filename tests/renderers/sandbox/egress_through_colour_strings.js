// expect: honest
// URLs handed to p5 and p5.brush where a colour goes: they are parsed as colours, never fetched.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  try { background("url(http://127.0.0.1:{TCP}/paper.png)"); } catch (e) {}
  try { brush.fill("url(http://127.0.0.1:{TCP}/pigment.png)", 220); } catch (e) {}
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
