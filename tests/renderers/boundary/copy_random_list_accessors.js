// expect: honest
// random(list) on a list of getters: the chosen item is read as data, so a getter is refused, never run.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let ran = 0;
  const list = [1, 2, 3, 4];
  for (let i = 0; i < 4; i++) O.defineProperty(list, i, { get() { ran++; return i; } });
  try { random(list); betray(); } catch (e) {}
  if (ran) betray();
}
