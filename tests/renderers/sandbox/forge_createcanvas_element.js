// expect: honest
// createCanvas given a fourth argument, which p5 takes as the canvas element to paint on.
function setup() {
  createCanvas(600, 600, WEBGL, { id: 'forged', getContext() { return null; } });
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
