// expect: runtime_error
// Once p5 has its canvas, every way to look a canvas up (by id, selector, tag) answers with a painted fake.
function fake() { const c = document.createElement("canvas"); c.width = 600; c.height = 600; const g = c.getContext("2d"); g.fillStyle = "#f6f0e4"; g.fillRect(0, 0, 600, 600);
  g.fillStyle = "#a03050"; g.fillRect(100, 100, 300, 300); return c; }
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#f6f0e4");
  const forged = fake();
  document.body.appendChild(forged);
  Document.prototype.getElementById = () => forged;
  Document.prototype.querySelector = () => forged;
  Element.prototype.querySelector = () => forged;
  Document.prototype.getElementsByTagName = () => [forged];
}
