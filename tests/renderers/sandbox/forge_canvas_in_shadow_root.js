// expect: runtime_error
// Moves p5's canvas into a closed shadow root, where no observer of the document sees its marks.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#f6f0e4");
  const host = document.createElement("div");
  document.body.appendChild(host);
  host.attachShadow({ mode: "closed" }).appendChild(document.getElementById("defaultCanvas0"));
}
