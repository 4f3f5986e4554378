// expect: flood
// A hundred small rejections: past twenty the render is a flood, and nothing more crosses.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  for (let i = 0; i < 100; i++) (async () => { throw "small " + i; })();
}
