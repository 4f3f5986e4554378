// expect: honest
// Boxed strings, numbers and booleans with their own valueOf and toString: objects, so never passed on.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let ran = 0;
  const S = ""["constr" + "uctor"], N = (0)["constr" + "uctor"], B = true["constr" + "uctor"];
  const colour = new S("#101010"), shift = new N(40), flag = new B(true);
  O.defineProperty(colour, "toString", { value: () => { ran++; return "#101010"; } });
  O.defineProperty(shift, "valueOf", { value: () => { ran++; return 40; } });
  for (const attempt of [() => background(colour), () => translate(shift, shift), () => rotate(shift), () => max([shift])]) {
    try { attempt(); betray(); } catch (e) {}
  }
  try { scale(flag); betray(); } catch (e) {}
  if (ran) betray();
}
