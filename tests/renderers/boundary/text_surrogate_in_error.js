// expect: runtime_error
// An uncaught error whose message holds lone surrogates, written as ASCII escapes.
function setup() {
  createCanvas(600, 600, WEBGL);
  throw "lone \uD800 high and \uDFFF low";
}
