// expect: runtime_error
// WebTransport (HTTP/3 over UDP) to the loopback listener: the frame is no secure context, so the constructor
// does not even exist there; nothing is sent, and the tripwire would report it if it did.
async function setup() {
  try { const t = new WebTransport("https://127.0.0.1:{UDP}/"); t.ready.catch(() => {}); t.closed.catch(() => {}); } catch (e) {}
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
