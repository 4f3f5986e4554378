// expect: runtime_error
// The Function of a fresh about:blank child's realm: out of reach, the child's opaque origin is not the
// sketch's, so reaching for it throws a SecurityError.
function setup() {
  const child = document.createElement("iframe");
  document.body.appendChild(child);
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  child.contentWindow.Function("parent.brush.circle(300, 300, 200, 0.3)")();
}
