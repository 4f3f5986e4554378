// expect: runtime_error
// A child frame navigated to a javascript: URL, whose code would run in the child's realm.
async function setup() {
  const child = document.createElement("iframe");
  child.src = "javascript:parent.brush.circle(300, 300, 200, 0.3)";
  document.body.appendChild(child);
  await new Promise((resolve) => setTimeout(resolve, 300));
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
