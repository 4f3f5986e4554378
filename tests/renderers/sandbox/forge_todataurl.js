// expect: runtime_error
// Replaces toDataURL (and toBlob, getImageData) so every canvas claims a painted picture; it paints nothing.
function fake() { const c = document.createElement("canvas"); c.width = 600; c.height = 600; const g = c.getContext("2d"); g.fillStyle = "#f6f0e4"; g.fillRect(0, 0, 600, 600);
  g.fillStyle = "#a03050"; g.fillRect(100, 100, 300, 300); return c; }
const painted = fake();
const toDataURL = HTMLCanvasElement.prototype.toDataURL;
HTMLCanvasElement.prototype.toDataURL = function (...args) { return toDataURL.apply(painted, args); };
HTMLCanvasElement.prototype.toBlob = function (cb) { painted.toBlob(cb); };
function setup() { createCanvas(600, 600, WEBGL); background("#f6f0e4"); }
