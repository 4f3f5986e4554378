// expect: honest
// An Array subclass whose species constructor builds a copy with a lying length: the harness never
// asks the list to copy itself.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let ran = 0;
  const species = O.getOwnPropertySymbols(Array)[0];
  function Forged() {
    const copy = {};
    O.defineProperty(copy, "length", { get() { ran++; return 0; } });
    return copy;
  }
  class Lying extends Array { static get [species]() { ran++; return Forged; } }
  const list = Lying.from([3, 1, 2]);
  if (max(list) !== 3 || min(list) !== 1) betray();
  try { background(Lying.from([{ valueOf() { ran++; return 0; } }])); } catch (e) {}
  if (ran) betray();
}
