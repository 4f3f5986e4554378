// expect: runtime_error
// Twenty small rejections: exactly the budget, an error and not a flood.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  for (let i = 0; i < 20; i++) (async () => { throw "small " + i; })();
}
