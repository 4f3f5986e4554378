// expect: honest
// Playwright's in-page WebSocket mock driven directly.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { window.__pwWebSocketDispatch({ type: 'connect', url: 'ws://127.0.0.1:{TCP}/' }); } catch (e) {}
  try { __pwWebSocketBinding('x'); } catch (e) {}
}
