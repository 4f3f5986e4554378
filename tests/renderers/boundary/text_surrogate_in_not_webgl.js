// expect: not_webgl
// A renderer mode holding a lone surrogate, quoted in the refusal's detail.
function setup() {
  createCanvas(600, 600, "web\uDC00gl");
}
