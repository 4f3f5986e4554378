// expect: honest
// A list whose items are getters: copied, they would run inside p5 long after the stand-in checked them.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let ran = 0;
  const list = [30, 20, 10];
  O.defineProperty(list, 1, { get() { ran++; return 20; }, enumerable: true });
  for (const attempt of [() => max(list), () => min(list), () => background(list), () => translate(list, 0)]) {
    try { attempt(); betray(); } catch (e) {}
  }
  if (ran) betray();
}
