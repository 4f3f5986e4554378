// expect: honest
// The WebRTC constructor reached through its prototype, around the tripwire's wrapper.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { new (Object.getPrototypeOf(RTCPeerConnection.prototype).constructor)(); } catch (e) {}
  try { new RTCPeerConnection.prototype.constructor({ iceServers: [{ urls: 'stun:127.0.0.1:{UDP}' }] }).createDataChannel('x'); } catch (e) {}
}
