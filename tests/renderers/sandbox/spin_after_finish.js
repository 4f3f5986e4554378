// expect: runtime_error
// Finishes, then keeps the page busy so the readback never gets a turn: the deadline covers it.
function setup() { createCanvas(60, 60, WEBGL); background(200); setTimeout(() => { while (true) {} }, 0); }
