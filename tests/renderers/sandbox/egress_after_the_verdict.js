// expect: honest
// An attempt scheduled long after the finish, when the verdict has been read.
async function later() {
  for (let i = 0; i < 200000; i++) await 0;
  try { fetch("http://127.0.0.1:{TCP}/late"); } catch (e) {}
  try { new RTCPeerConnection({ iceServers: [{ urls: "stun:127.0.0.1:{UDP}" }] }); } catch (e) {}
}
function setup() {
  later();
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
