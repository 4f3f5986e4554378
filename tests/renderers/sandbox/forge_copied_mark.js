// expect: runtime_error
// Watches the probe's own mark and copies it onto a painted fake (it can only follow, never lead).
function fake() { const c = document.createElement("canvas"); c.width = 600; c.height = 600; const g = c.getContext("2d"); g.fillStyle = "#f6f0e4"; g.fillRect(0, 0, 600, 600);
  g.fillStyle = "#a03050"; g.fillRect(100, 100, 300, 300); return c; }
const forged = fake();
document.documentElement.appendChild(forged);
new MutationObserver((records) => {
  for (const r of records) if (r.oldValue && r.target !== forged) {
    forged.setAttribute("data-wc", r.oldValue);
    forged.removeAttribute("data-wc");
  }
}).observe(document, { subtree: true, attributes: true, attributeOldValue: true });
function setup() { createCanvas(600, 600, WEBGL); background("#f6f0e4"); }
