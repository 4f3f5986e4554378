// expect: flood
// 100,000 rejected promises: each was a protocol event, and the render ran to the deadline.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  for (let i = 0; i < 100000; i++) (async () => { throw i; })();
}
