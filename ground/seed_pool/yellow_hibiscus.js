// A yellow hibiscus with a maroon eye.
// Lemon washes glazed with warmer yellow, a maroon throat bleeding outwards.
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

const RUFFLED = [[0.1, -0.12], [0.4, -0.38], [0.75, -0.48], [0.97, -0.3], [1.0, -0.04],
                 [0.93, 0.1], [0.98, 0.3], [0.8, 0.47], [0.42, 0.38], [0.1, 0.12]];
const ROUND = [[0.1, -0.12], [0.45, -0.42], [0.82, -0.44], [1.0, -0.16], [1.0, 0.16],
               [0.82, 0.44], [0.45, 0.42], [0.1, 0.12]];
// The eye is a star of narrow wedges rather than a small copy of the petal, so it bleeds along the veins.
const EYE = [[0.0, -0.1], [0.25, -0.16], [0.4, -0.08], [0.44, 0.0], [0.4, 0.08], [0.25, 0.16], [0.0, 0.1]];

function draw() {
  translate(-width / 2, -height / 2);
  background("#f5f0e6");
  brush.noStroke();
  const cx = 300, cy = 290, turn = -95, reach = 235;
  const outline = RUFFLED;

  // Leaves go down first so the petals glaze over their bases.
  brush.fillBleed(0.3);
  brush.fillTexture(0.5, 0.4);
  paintOutline(360, 360, 35, 230, LEAF, "#4f7f3e", 200, 0.7);
  paintOutline(250, 350, 148, 220, LEAF, "#5e8f47", 195, 0.7);
  paintOutline(380, 380, 35, 150, LEAF, "#2f5a2e", 210, 0.7);
  // Three passes per petal: a pale full wash, a stronger glaze inside it, a dark throat.
  brush.fillBleed(0.28);
  brush.fillTexture(0.45, 0.5);
  for (let i = 0; i < 5; i++) paintOutline(cx, cy, turn + i * 72, reach, outline, "#f6d860", 200, 0.8);
  brush.fillBleed(0.28 * 0.75);
  for (let i = 0; i < 5; i++) paintOutline(cx, cy, turn + 6 + i * 72, reach * 0.72, outline, "#f0b93a", 215, 0.7);
  brush.fillBleed(0.15);
  for (let i = 0; i < 5; i++) paintOutline(cx, cy, turn + i * 72, reach, EYE, "#8a1a2a", 220, 0.6);
  brush.fill("#4a0a14", 230);
  brush.circle(cx, cy, reach * 0.12, 0.4);

  // The stamen column leans out of the eye with pollen at its tip.
  const a = -140, len = reach * 0.6;
  brush.fill("#e4a63c", 215);
  brush.beginShape(0.3);
  brush.vertex(cx + 8 * cos(a + 90), cy + 8 * sin(a + 90));
  brush.vertex(cx + len * cos(a) + 7 * cos(a + 90), cy + len * sin(a) + 7 * sin(a + 90));
  brush.vertex(cx + len * cos(a) - 7 * cos(a + 90), cy + len * sin(a) - 7 * sin(a + 90));
  brush.vertex(cx - 8 * cos(a + 90), cy - 8 * sin(a + 90));
  brush.endShape(true);
  brush.fill("#c9482e", 225);
  for (let k = -1; k <= 1; k++) {
    brush.circle(cx + (len + 8) * cos(a + k * 9), cy + (len + 8) * sin(a + k * 9), 9 - abs(k) * 2, 0.5);
  }
}
