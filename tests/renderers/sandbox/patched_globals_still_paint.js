// expect: runtime_error
// Replaces the globals and prototypes the harness once used, then paints honestly: the picture still counts.
Element.prototype.setAttribute = () => {};
Element.prototype.removeAttribute = () => {};
performance.now = () => 0;
window.MutationObserver = function () { return { observe() {}, disconnect() {} }; };
JSON.stringify = () => "{}";
Function.prototype.toString = () => "";
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke();
  brush.fill("#b0305a", 220);
  brush.circle(300, 300, 140, 0.3);
}
