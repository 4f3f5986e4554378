// expect: honest
// Every brush method's result is checked: each is undefined, so no shape object is ever kept.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  const results = [brush.noStroke(), brush.noFill(), brush.fill("#b0305a", 220)];
  if (results.some((r) => r !== undefined)) throw new TypeError("a brush method returned something");
}
