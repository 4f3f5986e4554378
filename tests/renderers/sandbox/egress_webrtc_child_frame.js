// expect: runtime_error
// Opens the peer connection from a child frame's own realm, past any wrapper in the sketch's realm. The srcdoc
// frame inherits the content security policy, which refuses its inline script: no connection is ever made.
async function setup() {
  const child = document.createElement("iframe");
  child.srcdoc = '<script>const p = new RTCPeerConnection({ iceServers: [{ urls: "stun:127.0.0.1:{UDP}" }] });' +
    'p.createDataChannel("x"); p.createOffer().then((o) => p.setLocalDescription(o));</scr' + 'ipt>';
  document.body.appendChild(child);
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
