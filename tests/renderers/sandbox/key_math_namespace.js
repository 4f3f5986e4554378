// expect: honest
// Math and Number reached with built keys, then their constructors and prototypes.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { const k = 'constr' + 'uctor'; Math[k][k]('return this')(); } catch (e) {}
  try { Number['proto' + 'type'].toFixed = () => '0'; } catch (e) {}
  try { Math['ran' + 'dom'] = () => 0; } catch (e) {}
}
