// Two yellow buttercups on one stem, each with five cupped petals painted twice, and a leaf.
function setup() {
  createCanvas(600, 600, WEBGL);
  angleMode(DEGREES);
  brush.scaleBrushes(2);
  noLoop();
}

function flower(cx, cy, size, turn) {
  for (let layer = 0; layer < 2; layer++) {
    brush.fill(layer === 0 ? "#f9e27a" : "#f0b62e", 160);
    brush.fillBleed(0.2);
    brush.fillTexture(0.4, 0.35);
    for (let i = 0; i < 5; i++) {
      const a = i * 72 + turn + layer * 8;
      const r = size * (1 - layer * 0.25);
      brush.beginShape(0.6);
      brush.vertex(cx, cy);
      brush.vertex(cx + r * 0.7 * cos(a - 30), cy + r * 0.7 * sin(a - 30));
      brush.vertex(cx + r * cos(a - 10), cy + r * sin(a - 10));
      brush.vertex(cx + r * cos(a + 10), cy + r * sin(a + 10));
      brush.vertex(cx + r * 0.7 * cos(a + 30), cy + r * 0.7 * sin(a + 30));
      brush.endShape(true);
    }
  }
  brush.fill("#7a8a2a", 210);
  brush.circle(cx, cy, size * 0.15, 0.3);
}

function draw() {
  translate(-width / 2, -height / 2);
  background("#f7f3e8");
  brush.noStroke();
  brush.fill("#5f8a4a", 180);
  brush.fillBleed(0.15);
  brush.fillTexture(0.3, 0.3);
  brush.beginShape(0.3);
  brush.vertex(230, 250);
  brush.vertex(240, 250);
  brush.vertex(300, 590);
  brush.vertex(288, 590);
  brush.endShape(true);
  brush.beginShape(0.8);
  brush.vertex(280, 470);
  brush.vertex(400, 400);
  brush.vertex(450, 430);
  brush.vertex(330, 500);
  brush.endShape(true);
  flower(235, 230, 150, -90);
  flower(420, 330, 90, -60);
}
