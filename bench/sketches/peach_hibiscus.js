// A peach hibiscus: a pale wash, five petals glazed three times, a crimson throat and a long stamen.
function setup() {
  createCanvas(600, 600, WEBGL);
  angleMode(DEGREES);
  brush.scaleBrushes(3);
  noLoop();
}

function petal(cx, cy, angle, length, width) {
  brush.beginShape(0.5);
  brush.vertex(cx, cy);
  brush.vertex(cx + width * cos(angle - 90) + length * 0.5 * cos(angle), cy + width * sin(angle - 90) + length * 0.5 * sin(angle));
  brush.vertex(cx + length * cos(angle - 12), cy + length * sin(angle - 12));
  brush.vertex(cx + length * 1.05 * cos(angle), cy + length * 1.05 * sin(angle));
  brush.vertex(cx + length * cos(angle + 12), cy + length * sin(angle + 12));
  brush.vertex(cx + width * cos(angle + 90) + length * 0.5 * cos(angle), cy + width * sin(angle + 90) + length * 0.5 * sin(angle));
  brush.endShape(true);
}

function draw() {
  translate(-width / 2, -height / 2);
  background("#f6f0e4");
  brush.noStroke();
  const glazes = ["#f7c59f", "#f2a07b", "#e8765a"];
  for (let layer = 0; layer < 3; layer++) {
    brush.fill(glazes[layer], 150 - layer * 30);
    brush.fillBleed(0.3 - layer * 0.08);
    brush.fillTexture(0.5, 0.4);
    for (let i = 0; i < 5; i++) {
      petal(300, 310, i * 72 - 90 + layer * 4, 210 - layer * 35, 70 - layer * 12);
    }
  }
  brush.fill("#a3203c", 200);
  brush.fillBleed(0.2);
  brush.circle(300, 310, 40, 0.4);
  brush.fill("#f3d36b", 220);
  brush.fillBleed(0.05);
  brush.beginShape(0.2);
  brush.vertex(298, 310);
  brush.vertex(330, 200);
  brush.vertex(338, 204);
  brush.vertex(304, 312);
  brush.endShape(true);
}
