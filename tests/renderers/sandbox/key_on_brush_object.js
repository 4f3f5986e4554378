// expect: honest
// Run-time keys on brush: its prototype, its constructor and p5.brush's other methods.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { const k = ['ha', 'tch'].join(''); brush[k](1, 1, 1); } catch (e) {}
  try { const p = '__pro' + 'to__'; brush[p].polluted = 1; } catch (e) {}
  try { const c = 'const' + 'ructor'; brush[c][c]('return brush')().set('HB', '#000', 9); } catch (e) {}
  try { brush['in' + 'stance']._renderer; } catch (e) {}
}
