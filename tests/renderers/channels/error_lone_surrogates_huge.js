// expect: runtime_error
// Lone surrogates, which cannot be UTF-8, as one ten-million-unit message.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  throw "\udc00\ud800x".repeat(4000000);
}
