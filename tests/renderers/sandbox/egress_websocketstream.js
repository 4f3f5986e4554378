// expect: honest
// WebSocketStream, which the router's WebSocket route does not see.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { new WebSocketStream('ws://127.0.0.1:{TCP}/'); } catch (e) {}
  try { new WebSocket('ws://127.0.0.1:{TCP}/'); } catch (e) {}
}
