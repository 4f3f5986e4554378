// expect: runtime_error
// Takes p5's canvas out of the document and puts a painted one with its id in its place: the mark then names no canvas.
function fake() { const c = document.createElement("canvas"); c.width = 600; c.height = 600; const g = c.getContext("2d"); g.fillStyle = "#f6f0e4"; g.fillRect(0, 0, 600, 600);
  g.fillStyle = "#a03050"; g.fillRect(100, 100, 300, 300); return c; }
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#f6f0e4");
  const real = document.getElementById("defaultCanvas0");
  const forged = fake();
  forged.id = real.id;
  real.replaceWith(forged);
}
