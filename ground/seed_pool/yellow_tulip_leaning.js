// A yellow tulip leaning right.
// The cup tilts to the right on a bending stem; butter-yellow petals with an orange base.
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

// A tulip cup seen from the side: two back petals, then three front ones overlapping, on a long stem.
const TULIP_PETAL = [[0, -0.1], [0.3, -0.34], [0.75, -0.34], [1.0, -0.1], [1.02, 0.05],
                     [0.75, 0.32], [0.3, 0.34], [0, 0.1]];

function draw() {
  translate(-width / 2, -height / 2);
  background("#f5f0e6");
  brush.noStroke();
  const bx = 320, by = 330, h = 200;

  brush.fillBleed(0.25);
  brush.fillTexture(0.45, 0.4);
  stem(bx + -30, 595, bx, by, -20, 9, 6, "#5f8a48", 205);
  paintOutline(bx + -30 - 5, 598, -100 + 12, 340, BLADE, "#6e9a52", 195, 0.7);
  paintOutline(bx + -30 + 5, 598, -66 + 12, 260, BLADE, "#3f6b3a", 200, 0.7);

  brush.fillBleed(0.26);
  brush.fillTexture(0.45, 0.5);
  paintOutline(bx - 20, by, -105 + 12, h, TULIP_PETAL, "#eec04a", 195, 0.85);
  paintOutline(bx + 20, by, -75 + 12, h, TULIP_PETAL, "#eec04a", 195, 0.85);
  paintOutline(bx - 28, by + 4, -100 + 12, h * 0.95, TULIP_PETAL, "#f5d257", 195, 0.85);
  paintOutline(bx + 28, by + 4, -80 + 12, h * 0.95, TULIP_PETAL, "#f5d257", 195, 0.85);
  paintOutline(bx, by + 8, -90 + 12, h * 0.98, TULIP_PETAL, "#f5d257", 195, 0.85);
  brush.fillBleed(0.26 * 0.7);
  paintOutline(bx - 22, by, -98 + 12, h * 0.7, TULIP_PETAL, "#f0b43a", 210, 0.75);
  paintOutline(bx + 22, by, -82 + 12, h * 0.7, TULIP_PETAL, "#f0b43a", 210, 0.75);
  paintOutline(bx, by + 6, -90 + 12, h * 0.75, TULIP_PETAL, "#f0b43a", 210, 0.75);
  brush.fillBleed(0.15);
  paintOutline(bx, by + 4, -90 + 12, h * 0.35, TULIP_PETAL, "#d8782a", 220, 0.6);
  paintOutline(bx - 16, by + 2, -100 + 12, h * 0.3, TULIP_PETAL, "#d8782a", 215, 0.6);
}
