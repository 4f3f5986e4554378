// expect: runtime_error
// A data: child frame (an opaque origin of its own) tries WebRTC from its own realm; it inherits the policy.
async function setup() {
  const child = document.createElement("iframe");
  child.src = "data:text/html," + encodeURIComponent('<script>const p = new RTCPeerConnection({ iceServers: ' +
    '[{ urls: "stun:127.0.0.1:{UDP}" }] }); p.createDataChannel("x"); p.createOffer().then((o) => ' +
    'p.setLocalDescription(o));</scr' + 'ipt>');
  document.body.appendChild(child);
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
