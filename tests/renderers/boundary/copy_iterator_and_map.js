// expect: honest
// A list with its own iterator, map, slice, join, valueOf and toString: p5.brush's spline code and p5's
// colour parser would call them; the copy reads indices only.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let ran = 0;
  const iterator = O.getOwnPropertySymbols(Array.prototype).find((key) => ("" + key.description) === "Symbol.iterator");
  const list = [4, 9, 2];
  O.defineProperty(list, iterator, { value: function* () { ran++; yield 0; } });
  for (const name of ["map", "slice", "join", "valueOf", "toString", "forEach", "concat"]) {
    O.defineProperty(list, name, { value: () => { ran++; return []; } });
  }
  if (max(list) !== 9 || min(list) !== 2) betray();
  try { translate(list, 0); } catch (e) {}
  if (ran) betray();
}
