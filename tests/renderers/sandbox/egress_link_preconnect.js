// expect: runtime_error
// A preconnect hint opens a TCP connection without any request the router would see.
async function setup() {
  document.head.insertAdjacentHTML("beforeend", '<link rel="preconnect" href="http://127.0.0.1:{TCP}">');
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
