// expect: not_webgl
// A renderer mode that is the harness's own source, a stand-in's text.
function setup() {
  createCanvas(600, 600, "" + brush.fill + createCanvas);
}
