// A rose cosmos seen from above: a soft background wash, five notched petals glazed three times.
function setup() {
  createCanvas(600, 600, WEBGL);
  angleMode(DEGREES);
  brush.scaleBrushes(3);
  noLoop();
}

function notchedPetal(angle, reach, half) {
  brush.beginShape(0.5);
  brush.vertex(300, 300);
  brush.vertex(300 + reach * cos(angle - half), 300 + reach * sin(angle - half));
  brush.vertex(300 + reach * 1.08 * cos(angle - half / 3), 300 + reach * 1.08 * sin(angle - half / 3));
  brush.vertex(300 + reach * 0.95 * cos(angle), 300 + reach * 0.95 * sin(angle));
  brush.vertex(300 + reach * 1.08 * cos(angle + half / 3), 300 + reach * 1.08 * sin(angle + half / 3));
  brush.vertex(300 + reach * cos(angle + half), 300 + reach * sin(angle + half));
  brush.endShape(true);
}

function draw() {
  translate(-width / 2, -height / 2);
  background("#f5efe3");
  brush.noStroke();
  brush.fill("#dfe7d4", 80);
  brush.fillBleed(0.5);
  brush.fillTexture(0.2, 0.2);
  brush.circle(300, 300, 280, 0.9);
  const roses = ["#f4b6c8", "#e784a4", "#c94f7c"];
  for (let layer = 0; layer < 3; layer++) {
    brush.fill(roses[layer], 140);
    brush.fillBleed(0.25 - layer * 0.05);
    brush.fillTexture(0.5, 0.45);
    for (let i = 0; i < 5; i++) {
      notchedPetal(i * 72 + 10 - layer * 5, 230 - layer * 50, 24 - layer * 3);
    }
  }
  brush.fill("#e3a21a", 220);
  brush.fillBleed(0.1);
  brush.circle(300, 300, 38, 0.4);
  brush.fill("#7a3b12", 200);
  brush.circle(300, 300, 16, 0.3);
}
