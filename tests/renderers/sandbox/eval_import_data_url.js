// expect: honest
// A module imported from a data: URL: a script the harness did not serve, refused before it is evaluated.
async function setup() {
  try { await import("data:text/javascript,globalThis.extra%20%3D%201"); } catch (e) {}
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
