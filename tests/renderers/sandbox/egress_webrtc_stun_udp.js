// expect: runtime_error
// A WebRTC peer gathering ICE candidates sends STUN over UDP to the loopback listener.
async function setup() {
  const peer = new RTCPeerConnection({ iceServers: [{ urls: "stun:127.0.0.1:{UDP}" }] });
  peer.createDataChannel("x");
  await peer.setLocalDescription(await peer.createOffer());
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
