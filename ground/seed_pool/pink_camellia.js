// A pink camellia with dark glossy leaves.
// Two rings of round petals and a tuft of stamens over three dark leaves.
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

// Camellia: glossy dark leaves, round overlapping petals in two rings, a tuft of yellow stamens.
const ROUND = [[0.12, -0.18], [0.45, -0.5], [0.85, -0.45], [1.0, 0], [0.85, 0.45], [0.45, 0.5], [0.12, 0.18]];

function draw() {
  translate(-width / 2, -height / 2);
  background("#f4efe6");
  brush.noStroke();
  const cx = 300, cy = 300, reach = 215;

  brush.fillBleed(0.25);
  brush.fillTexture(0.45, 0.5);
  paintOutline(432, 348, 20, 170, LEAF, "#2f5a34", 215, 0.7);
  paintOutline(168, 252, 200, 160, LEAF, "#3b6a3e", 210, 0.7);
  paintOutline(252, 432, 110, 150, LEAF, "#24472a", 215, 0.7);
  brush.fillBleed(0.24);
  brush.fillTexture(0.45, 0.5);
  for (let i = 0; i < 6; i++) paintOutline(cx, cy, -90 + i * 60, reach, ROUND, "#e8607a", 200, 0.85);
  brush.fillBleed(0.24 * 0.8);
  for (let i = 0; i < 6; i++) paintOutline(cx, cy, -90 + 30 + i * 60, reach * 0.68, ROUND, "#d8405e", 210, 0.8);
  brush.fillBleed(0.16);
  for (let i = 0; i < 4; i++) paintOutline(cx, cy, -90 + 15 + i * 90, reach * 0.36, ROUND, "#a82444", 220, 0.7);
  brush.fill("#f0d060", 220);
  brush.circle(cx, cy, reach * 0.14, 0.5);
  brush.fill("#e0a020", 225);
  for (let i = 0; i < 5; i++) brush.circle(cx + reach * 0.1 * cos(i * 72), cy + reach * 0.1 * sin(i * 72), 7, 0.5);
}
