// expect: honest
// Built keys write to Object.prototype and Array.prototype, which p5 reads: frozen, the writes throw.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { const p = '__pro' + 'to__'; ({})[p].fillStyle = 'black'; } catch (e) {}
  try { []['__pro' + 'to__'].push = function () { return 0; }; } catch (e) {}
  try { Object.prototype.toString = () => '#000000'; } catch (e) {}
}
