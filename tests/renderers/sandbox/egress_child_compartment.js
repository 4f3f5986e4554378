// expect: honest
// A child Compartment or the module loader, to import from a URL.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { new Compartment().import('http://127.0.0.1:{TCP}/m.js'); } catch (e) {}
  try { ModuleSource('export default 1'); } catch (e) {}
  try { const i = 'imp' + 'ort'; [][`constructor`][`constructor`](i + '("http://127.0.0.1:{TCP}/m.js")')(); } catch (e) {}
}
