// A red field poppy on a curved stem.
// Four crumpled scarlet petals, a dark boss, jagged leaves at the foot.
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

// Four broad crinkled petals, the two in front painted last; a near-black boss with a seed crown.
const CRUMPLED = [[0.1, -0.15], [0.35, -0.55], [0.7, -0.62], [0.92, -0.4], [1.0, -0.05],
                  [0.9, 0.25], [0.95, 0.45], [0.65, 0.62], [0.3, 0.5], [0.1, 0.15]];

function draw() {
  translate(-width / 2, -height / 2);
  background("#f4efe4");
  brush.noStroke();
  const cx = 300, cy = 260, reach = 200;

  brush.fillBleed(0.25);
  brush.fillTexture(0.4, 0.4);
  stem(cx + -20, 590, cx, cy + reach * 0.55, 25, 9, 5, "#5c7f45", 200);
  paintOutline(290, 520, -150, 120, LEAF, "#62864a", 195, 0.7);
  paintOutline(300, 540, -30, 110, LEAF, "#557a42", 195, 0.7);
  brush.fillBleed(0.3);
  brush.fillTexture(0.5, 0.5);
  for (const a of [0 - 135, 0 - 45]) paintOutline(cx, cy, a, reach, CRUMPLED, "#d33a2a", 205, 0.85);
  for (const a of [0 + 45, 0 + 135]) paintOutline(cx, cy, a, reach * 1.05, CRUMPLED, "#e8432e", 205, 0.85);
  brush.fillBleed(0.3 * 0.7);
  for (let i = 0; i < 4; i++) paintOutline(cx, cy, 0 + 45 + i * 90, reach * 0.7, CRUMPLED, "#d92a22", 215, 0.75);
  brush.fillBleed(0.15);
  for (let i = 0; i < 4; i++) paintOutline(cx, cy, 0 + 45 + i * 90, reach * 0.3, CRUMPLED, "#3a1a1c", 225, 0.6);
  brush.fill("#221418", 230);
  brush.circle(cx, cy, reach * 0.13, 0.3);
  brush.fill("#6b7a4a", 220);
  brush.circle(cx, cy, reach * 0.06, 0.3);
}
