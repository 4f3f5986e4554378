// expect: honest
// Plain and frozen lists keep their meaning through the copy: max, min and random answer as p5 does.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  const frozen = O.freeze([1, 7, 3]);
  if (max(frozen) !== 7 || min([4, -2, 9]) !== -2 || max(5, 8) !== 8) betray();
  const one = random(["only"]);
  if (one !== "only") betray();
  if (random([]) !== undefined) betray();
}
