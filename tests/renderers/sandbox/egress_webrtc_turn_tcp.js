// expect: runtime_error
// A TURN server over TCP on the loopback listener.
async function setup() {
  const peer = new RTCPeerConnection({ iceServers: [{ urls: "turn:127.0.0.1:{TCP}?transport=tcp", username: "u", credential: "p" }] });
  peer.createDataChannel("x");
  await peer.setLocalDescription(await peer.createOffer());
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
