// expect: runtime_error
// WebAssembly compiled from bytes is code from a string too; the rejection is caught.
async function setup() {
  const empty = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]);
  try { await WebAssembly.instantiate(empty); } catch (e) {}
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
