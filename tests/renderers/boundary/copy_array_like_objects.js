// expect: honest
// Objects that look like lists (a length and indices, an arguments object): only real lists are copied,
// and none of their getters runs.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let ran = 0;
  const like = { get length() { ran++; return 3; }, 0: 246, 1: 240, 2: 228 };
  for (const attempt of [() => background(like), () => max(like), () => translate(like, 0)]) {
    try { attempt(); betray(); } catch (e) {}
  }
  (function () { try { max(arguments); betray(); } catch (e) {} })(1, 2);
  try { O.defineProperty([], "length", { get() { ran++; return 0; } }); betray(); } catch (e) {}
  if (ran) betray();
}
