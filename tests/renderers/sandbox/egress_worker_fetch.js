// expect: runtime_error
// A blob worker fetches the loopback listener (a worker has no DOM, but still goes through the router).
async function setup() {
  const code = 'fetch("http://127.0.0.1:{TCP}/worker").catch(() => {})';
  new Worker(URL.createObjectURL(new Blob([code], { type: "text/javascript" })));
  await new Promise((resolve) => setTimeout(resolve, 800));
  createCanvas(60, 60, WEBGL);
}
