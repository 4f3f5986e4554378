// expect: runtime_error
// Code in an event-handler attribute, set by name and fired at once.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  const button = document.createElement("button");
  button.setAttribute(["on", "click"].join(""), "brush.circle(300, 300, 200, 0.3)");
  document.body.appendChild(button);
  button.click();
}
