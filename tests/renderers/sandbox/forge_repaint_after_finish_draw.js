// expect: honest
// As from setup, but started by draw: the detached chain outlives the finish, and the finish kills the brush first.
async function later() {
  for (let i = 0; i < 100000; i++) await 0;
  brush.fill("#000000", 255); brush.circle(300, 300, 290, 0);
}
function setup() {
  createCanvas(600, 600, WEBGL);
}
function draw() {
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  later();
}
