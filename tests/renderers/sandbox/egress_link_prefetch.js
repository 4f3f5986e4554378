// expect: runtime_error
// A prefetch and a preload of a loopback address.
async function setup() {
  document.head.insertAdjacentHTML("beforeend",
    '<link rel="prefetch" href="http://127.0.0.1:{TCP}/a"><link rel="preload" as="image" href="http://127.0.0.1:{TCP}/b">');
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
