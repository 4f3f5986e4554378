// A pink cosmos on a slender stem.
// Eight notched petals, a golden centre, one leaf on the stem.
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

// A rayed flower (cosmos, anemone, daisy): 8 petals round a round centre, on a slender stem.
const RAY = [[0.15, -0.1], [0.55, -0.3], [0.95, -0.3], [0.88, -0.12], [1.0, 0], [0.88, 0.12], [0.95, 0.3], [0.55, 0.3], [0.15, 0.1]];

function draw() {
  translate(-width / 2, -height / 2);
  background("#f6f1e6");
  brush.noStroke();
  const cx = 300, cy = 270, reach = 210, n = 8;

  brush.fillBleed(0.25);
  brush.fillTexture(0.4, 0.4);
  stem(270, 595, 300, 390, -25, 6, 4, "#5f8a48", 200);
  paintOutline(272, 540, -150, 130, LEAF, "#5f8a48", 195, 0.7);
  brush.fillBleed(0.25);
  brush.fillTexture(0.45, 0.5);
  for (let i = 0; i < n; i++) paintOutline(cx, cy, -90 + i * 360 / n, reach, RAY, "#f29ac0", 195, 0.8);
  brush.fillBleed(0.25 * 0.75);
  for (let i = 0; i < n; i++) paintOutline(cx, cy, -90 + 4 + i * 360 / n, reach * 0.62, RAY, "#e46ea3", 210, 0.7);
  brush.fillBleed(0.15);
  brush.fill("#f2b93a", 225);
  brush.circle(cx, cy, reach * 0.16, 0.4);
  brush.fill("#c27a1e", 230);
  brush.circle(cx + 3, cy + 4, reach * 0.16 * 0.55, 0.4);

}
