// expect: runtime_error
// A rejection whose reason is a list of a million astral strings: an object, described as one, never serialised.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  const many = [];
  for (let i = 0; i < 1000000; i++) many.push("\ud83c\udf38".repeat(8));
  (async () => { throw many; })();
}
