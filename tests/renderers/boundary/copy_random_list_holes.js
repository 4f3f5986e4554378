// expect: honest
// random(list) on a list of holes over prototype getters: own data only, so it returns nothing.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let ran = 0;
  class Baited extends Array {}
  for (let i = 0; i < 5; i++) O.defineProperty(Baited.prototype, i, { get() { ran++; return "#101010"; } });
  const list = new Baited(5);
  if (random(list) !== undefined) betray();
  if (ran) betray();
}
