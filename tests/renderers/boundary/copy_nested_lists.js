// expect: honest
// Lists inside lists, to pass p5 an object one level down: the copy takes numbers and strings only, and
// random(list) hands the sketch back one of its own items untouched.
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  const a = [5], b = [6];
  try { max([a, b]); betray(); } catch (e) {}
  try { background([[246, 240, 228]]); betray(); } catch (e) {}
  const pick = random([a, b]);
  if (pick !== a && pick !== b) betray();
}
