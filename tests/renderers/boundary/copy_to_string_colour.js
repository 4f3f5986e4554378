// expect: honest
// A colour whose toString p5 would call while mapping colours, after the stand-in returned.
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let ran = 0;
  const colour = { toString() { ran++; return "#101010"; }, valueOf() { ran++; return 0; } };
  try { background(colour); betray(); } catch (e) {}
  try { background(colour, colour, colour); betray(); } catch (e) {}
  if (ran) betray();
}
