// expect: honest
// Letters taken from typeof results spell constructor: the constructor they reach is inert.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { const f = typeof (() => 0), o = typeof {}, s = typeof ''; const k = f[6] + o[5] + f[2] + s[0] + s[1] + s[2] + f[1] + f[6] + f[4] + o[5] + s[2]; [][k][k]('return window')().document.body.remove(); } catch (e) {}
}
