// expect: honest
// A detached chain of awaits repaints the whole sheet black long after setup returned.
async function later() {
  for (let i = 0; i < 100000; i++) await 0;
  brush.fill("#000000", 255); brush.fillBleed(0); brush.circle(300, 300, 290, 0);
}
function setup() {
  later();
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
