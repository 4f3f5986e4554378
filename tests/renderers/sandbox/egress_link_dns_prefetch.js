// expect: runtime_error
// A DNS prefetch hint for a name, and one whose href is changed after insertion.
async function setup() {
  document.head.insertAdjacentHTML("beforeend", '<link rel="dns-prefetch" href="http://exfil.example.test">');
  const link = document.createElement("link");
  link.href = "http://127.0.0.1:{TCP}/";
  document.head.appendChild(link);
  link.rel = "preconnect";
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
