// expect: flood
// A million brush calls: a flood, not a painting.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  for (let i = 0; i < 1000000; i++) brush.noStroke();
}
