// A blue anemone on a grey-green ground: five rounded petals glazed twice, a dark velvet centre.
const CX = 300;
const CY = 300;

function setup() {
  createCanvas(600, 600, WEBGL);
  angleMode(DEGREES);
  brush.scaleBrushes(2.5);
  noLoop();
}

function roundPetal(angle, reach, spread) {
  brush.beginShape(0.7);
  brush.vertex(CX, CY);
  for (let t = -spread; t <= spread; t += spread / 3) {
    const r = reach * (1 - Math.abs(t) / (spread * 3));
    brush.vertex(CX + r * cos(angle + t), CY + r * sin(angle + t));
  }
  brush.endShape(true);
}

function draw() {
  translate(-width / 2, -height / 2);
  background("#eef0e8");
  brush.noStroke();
  brush.fill("#c9d6c0", 90);
  brush.fillBleed(0.4);
  brush.fillTexture(0.3, 0.3);
  brush.beginShape(0.9);
  brush.vertex(40, 420);
  brush.vertex(300, 360);
  brush.vertex(560, 430);
  brush.vertex(560, 580);
  brush.vertex(40, 580);
  brush.endShape(true);
  const blues = ["#7d9ad8", "#3f5fb0"];
  for (let layer = 0; layer < 2; layer++) {
    brush.fill(blues[layer], 170);
    brush.fillBleed(0.25);
    brush.fillTexture(0.45, 0.5);
    for (let i = 0; i < 5; i++) {
      roundPetal(i * 72 + 15 + layer * 6, 190 - layer * 45, 30);
    }
  }
  brush.fill("#1d1a33", 230);
  brush.fillBleed(0.1);
  brush.circle(CX, CY, 45, 0.5);
  brush.fill("#4a4170", 160);
  brush.circle(CX - 8, CY - 6, 20, 0.3);
}
