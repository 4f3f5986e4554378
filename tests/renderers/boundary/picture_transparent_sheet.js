// expect: pass
// No background(): the disc on a sheet left transparent. Judged, scored and kept as a viewer saw it, on
// white paper, never as black where alpha is dropped.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  brush.noStroke();
  brush.fill("#b0305a", 220);
  brush.circle(300, 300, 140, 0.3);
}
