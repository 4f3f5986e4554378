// expect: honest
// An image-like object to background(): p5 would clear the sheet, reset the matrix and draw it as a
// texture, erasing paint already laid. A function too.
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let ran = 0;
  const image = { width: 600, height: 600, canvas: {}, elt: {}, get pixels() { ran++; return []; }, loadPixels() { ran++; } };
  try { background(image); betray(); } catch (e) {}
  try { background(() => { ran++; }); betray(); } catch (e) {}
  if (ran) betray();
}
