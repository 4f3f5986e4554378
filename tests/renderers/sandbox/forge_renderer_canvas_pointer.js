// expect: runtime_error
// Points p5's main renderer at a div once setup has painted, so the finish mark names no canvas.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#f6f0e4");
  const div = document.createElement("div");
  document.body.appendChild(div);
  Object.defineProperty(p5.instance._renderer, "canvas", { get: () => div, configurable: true });
}
