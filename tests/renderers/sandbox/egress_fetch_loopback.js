// expect: runtime_error
// Fetch, XHR and an image straight to the loopback listener's address.
async function setup() {
  try { await fetch("http://127.0.0.1:{TCP}/fetch", { mode: "no-cors" }); } catch (e) {}
  try { const x = new XMLHttpRequest(); x.open("GET", "http://127.0.0.1:{TCP}/xhr"); x.send(); } catch (e) {}
  new Image().src = "http://127.0.0.1:{TCP}/img";
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
