// A scarlet anemone, loose.
// Six round scarlet petals with a white ring and a black centre; very wet edges.
async function setup() {
  createCanvas(600, 600, WEBGL);
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  noLoop();
}

// Draw an outline given in a local frame (t along the axis, w across it), scaled by `reach`.
function paintOutline(cx, cy, angle, reach, outline, colour, opacity, curvature) {
  brush.fill(colour, opacity);
  brush.beginShape(curvature);
  for (const [t, w] of outline) {
    brush.vertex(cx + reach * (t * cos(angle) - w * sin(angle)), cy + reach * (t * sin(angle) + w * cos(angle)));
  }
  brush.endShape(true);
}

// A leaf: a pointed lens from its base at (x, y) towards `angle`.
const LEAF = [[0, 0], [0.25, -0.2], [0.6, -0.24], [1, 0], [0.6, 0.22], [0.25, 0.18]];
const BLADE = [[0, -0.05], [0.3, -0.1], [0.7, -0.08], [1, 0], [0.7, 0.06], [0.3, 0.09], [0, 0.05]];

// A stem is a long narrow taper, never a line: wide at the base, thin at the flower.
function stem(x0, y0, x1, y1, bend, w0, w1, colour, opacity) {
  const mx = (x0 + x1) / 2 + bend, my = (y0 + y1) / 2;
  brush.fill(colour, opacity);
  brush.beginShape(0.5);
  brush.vertex(x0 - w0, y0);
  brush.vertex(mx - (w0 + w1) / 2, my);
  brush.vertex(x1 - w1, y1);
  brush.vertex(x1 + w1, y1);
  brush.vertex(mx + (w0 + w1) / 2, my);
  brush.vertex(x0 + w0, y0);
  brush.endShape(true);
}

// A rayed flower (cosmos, anemone, daisy): 6 petals round a round centre, on a slender stem.
const RAY = [[0.15, -0.16], [0.5, -0.42], [0.9, -0.34], [1.0, 0], [0.9, 0.34], [0.5, 0.42], [0.15, 0.16]];

function draw() {
  translate(-width / 2, -height / 2);
  background("#f5efe4");
  brush.noStroke();
  const cx = 310, cy = 290, reach = 220, n = 6;

  brush.fillBleed(0.25);
  brush.fillTexture(0.4, 0.4);
  paintOutline(406, 405, 50, 160, LEAF, "#4f7a46", 200, 0.7);
  brush.fillBleed(0.34);
  brush.fillTexture(0.6, 0.5);
  for (let i = 0; i < n; i++) paintOutline(cx, cy, -80 + i * 360 / n, reach, RAY, "#e23c3c", 195, 0.8);
  brush.fillBleed(0.34 * 0.75);
  for (let i = 0; i < n; i++) paintOutline(cx, cy, -80 + 4 + i * 360 / n, reach * 0.62, RAY, "#c92430", 210, 0.7);
  brush.fillBleed(0.15);
  brush.fill("#efe6dc", 225);
  brush.circle(cx, cy, reach * 0.2, 0.4);
  brush.fill("#1a1218", 230);
  brush.circle(cx + 3, cy + 4, reach * 0.2 * 0.55, 0.4);
  brush.fill("#2a1a22", 225);
  for (let i = 0; i < 12; i++) brush.circle(cx + reach * 0.26 * cos(i * 30 + 10), cy + reach * 0.26 * sin(i * 30 + 10), 5, 0.5);
}
