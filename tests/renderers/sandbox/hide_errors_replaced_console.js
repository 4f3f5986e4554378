// expect: runtime_error
// Silences console.error and every error collector it can reach, then throws after painting.
console.error = () => {};
window.onerror = () => true;
function setup() { createCanvas(600, 600, WEBGL); background("#f6f0e4"); }
function draw() { noLoop(); throw new Error("hidden"); }
