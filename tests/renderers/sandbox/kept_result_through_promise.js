// expect: honest
// A brush result smuggled out through an async function's promise, then used.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  (async () => brush.noStroke())().then((shape) => shape.fill('#000000', 255)).catch(() => {});
}
