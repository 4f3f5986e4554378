// expect: honest
// A hole in a list, with a getter for that index on the list's own prototype: a copy that reads `list[1]`
// runs it; reading only own data finds nothing there.
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let ran = 0;
  class Holey extends Array { get 1() { ran++; return 999; } }
  const list = new Holey(3);
  list[0] = 1;
  list[2] = 3;
  if (max(list) === 999 || min(list) === 999) betray();
  if (ran) betray();
}
