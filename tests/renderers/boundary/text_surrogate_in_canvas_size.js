// expect: canvas_size
// A canvas side that is a string holding a lone surrogate, quoted in the refusal's detail.
function setup() {
  createCanvas(600, "\uD800\uD800", WEBGL);
}
