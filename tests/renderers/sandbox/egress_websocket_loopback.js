// expect: runtime_error
// A WebSocket to the loopback listener.
async function setup() {
  try { new WebSocket("ws://127.0.0.1:{TCP}/"); } catch (e) {}
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
