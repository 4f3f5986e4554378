// expect: honest
// A symbol and a BigInt, neither a number nor a string: refused before p5 sees them.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  const symbol = O.getOwnPropertySymbols(Array)[0];
  for (const attempt of [() => translate(10n, 0), () => rotate(symbol), () => max([1n, 2n]), () => background(symbol)]) {
    try { attempt(); betray(); } catch (e) {}
  }
}
