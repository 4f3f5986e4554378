// expect: render_timeout
// A microtask loop that never yields to the page: only the deadline ends it.
async function spin() { for (;;) await 0; }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  spin();
}
