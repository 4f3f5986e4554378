// expect: runtime_error
// The old harness object and any watcher-like global, replaced with readers that return a painted picture.
function fake() { const c = document.createElement("canvas"); c.width = 600; c.height = 600; const g = c.getContext("2d"); g.fillStyle = "#f6f0e4"; g.fillRect(0, 0, 600, 600);
  g.fillStyle = "#a03050"; g.fillRect(100, 100, 300, 300); return c; }
const picture = fake().toDataURL("image/png");
const forged = { errors: [], reason: "draw", done: true, finished: Promise.resolve("draw"),
                 read: () => ({ errors: [], reason: "draw", drawMs: 1, png: picture, w: 600, h: 600 }) };
try { window.__wc = forged; } catch (e) {}
try { Object.assign(window.__wc, forged); } catch (e) {}  // the old harness object's members were writable
window.__wcWatch = { finished: () => Promise.resolve(true), read: () => ({ png: picture, w: 600, h: 600, reason: "draw" }) };
window.__wcAttempt = () => {};
function setup() { createCanvas(600, 600, WEBGL); background("#f6f0e4"); }
