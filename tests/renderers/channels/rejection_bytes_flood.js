// expect: flood
// Nineteen rejections, each as long as the harness quotes, of non-ASCII: under the count, over the bytes.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  for (let i = 0; i < 19; i++) (async () => { throw "\u00e9".repeat(5000) + i; })();
}
