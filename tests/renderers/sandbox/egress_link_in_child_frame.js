// expect: runtime_error
// A preconnect hint inside a child frame the sketch creates, out of reach of its own document's observers.
async function setup() {
  const child = document.createElement("iframe");
  child.srcdoc = '<link rel="preconnect" href="http://127.0.0.1:{TCP}/">';
  document.body.appendChild(child);
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
