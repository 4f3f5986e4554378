// expect: runtime_error
// A painted canvas carrying p5's id and class, placed before p5's own, which loses its id.
function fake() { const c = document.createElement("canvas"); c.width = 600; c.height = 600; const g = c.getContext("2d"); g.fillStyle = "#f6f0e4"; g.fillRect(0, 0, 600, 600);
  g.fillStyle = "#a03050"; g.fillRect(100, 100, 300, 300); return c; }
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#f6f0e4");
  const real = document.getElementById("defaultCanvas0");
  real.id = "hidden";
  const forged = fake();
  forged.id = "defaultCanvas0";
  forged.className = "p5Canvas";
  document.body.prepend(forged);
}
