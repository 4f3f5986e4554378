// A pink peony, full and centred.
// Three rings of cupped petals over long leaves.
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

// A peony is rings of cupped petals: wide outer ring, tighter middle ring, a crumpled heart.
const CUP = [[0.15, -0.2], [0.5, -0.5], [0.9, -0.42], [1.0, 0], [0.9, 0.42], [0.5, 0.5], [0.15, 0.2]];

function draw() {
  translate(-width / 2, -height / 2);
  background("#f5efe6");
  brush.noStroke();
  const cx = 300, cy = 300, reach = 230;

  brush.fillBleed(0.3);
  brush.fillTexture(0.5, 0.4);
  paintOutline(398, 369, 35, 230, LEAF, "#5a8446", 200, 0.7);
  paintOutline(202, 369, 145, 220, LEAF, "#688f4d", 195, 0.7);
  paintOutline(300, 420, 90, 190, LEAF, "#3e6636", 205, 0.7);
  brush.fillBleed(0.3);
  brush.fillTexture(0.5, 0.5);
  for (let i = 0; i < 7; i++) paintOutline(cx, cy, -90 + i * 51, reach, CUP, "#f4b6c2", 190, 0.85);
  brush.fillBleed(0.3 * 0.8);
  for (let i = 0; i < 6; i++) paintOutline(cx, cy, -90 + 25 + i * 60, reach * 0.7, CUP, "#ee95aa", 205, 0.8);
  for (let i = 0; i < 5; i++) paintOutline(cx, cy, -90 + 10 + i * 72, reach * 0.45, CUP, "#e0708e", 215, 0.75);
  brush.fillBleed(0.18);
  for (let i = 0; i < 3; i++) paintOutline(cx, cy, -90 + 40 + i * 120, reach * 0.25, CUP, "#b84468", 220, 0.6);

}
