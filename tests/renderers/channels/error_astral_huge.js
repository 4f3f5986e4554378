// expect: runtime_error
// Astral characters: two UTF-16 units, two escapes, twelve bytes each; sixteen million units thrown.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  throw "\ud83c\udf38".repeat(8000000);
}
