// expect: blank_canvas
// Tries to read the probe's file for its one-time mark: it was served once, so the request is refused.
function fake() { const c = document.createElement("canvas"); c.width = 600; c.height = 600; const g = c.getContext("2d"); g.fillStyle = "#f6f0e4"; g.fillRect(0, 0, 600, 600);
  g.fillStyle = "#a03050"; g.fillRect(100, 100, 300, 300); return c; }
let stolen = null;
async function setup() {
  try { stolen = await (await fetch("probe.js", { cache: "force-cache" })).text(); } catch (e) {}
  createCanvas(600, 600, WEBGL);
  background("#f6f0e4");
  const mark = stolen && stolen.match(/"(done:[0-9a-f]+:)"/);
  if (mark) { const f = fake(); document.body.appendChild(f); f.setAttribute("data-wc", mark[1] + "draw:1"); }
}
