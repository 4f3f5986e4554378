// expect: runtime_error
// The family that killed the driver: an uncaught error of a hundred million non-ASCII characters, each a six-byte
// escape on the protocol: 600 million characters in one message, more than a Node string holds.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  throw "\u00e9".repeat(100000000);
}
