// expect: runtime_error
// Same-document history changes leave the document and its picture in place.
function setup() {
  history.pushState({}, "", "#moved");
  location.hash = "again";
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
