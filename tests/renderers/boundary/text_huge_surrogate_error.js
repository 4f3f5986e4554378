// expect: runtime_error
// Four million lone surrogates thrown as one message.
function setup() {
  createCanvas(600, 600, WEBGL);
  throw "\uD800".repeat(4000000);
}
