// Three sprigs of lavender, loosely gathered.
// Three spikes fanning out from one point, violet and blue-violet, on a cream paper.
async function setup() {
  createCanvas(600, 600, WEBGL);
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  noLoop();
}

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

// Lavender: thin stems topped by spikes of small florets, densest and darkest towards the tip.
function spike(x, top, lean, florets, colour, dark) {
  brush.fillBleed(0.2);
  for (let i = 0; i < florets; i++) {
    const t = i / (florets - 1), side = i % 2 === 0 ? -1 : 1;
    const fx = x + lean * (1 - t) + side * (7 - 3 * t), fy = top + t * 170;
    brush.fill(i < florets / 3 ? dark : colour, 210);
    brush.circle(fx, fy, 20 - 9 * t, 0.6);
  }
}

function draw() {
  translate(-width / 2, -height / 2);
  background("#f5f0e6");
  brush.noStroke();
  brush.fillBleed(0.25);
  brush.fillTexture(0.4, 0.4);
  stem(300, 595, 200, 260, -34, 5, 3, "#7f9a6a", 205);
  spike(200, 110, 14, 10, "#8f7cc4", "#5a4690");
  stem(300, 595, 305, 200, 1, 5, 3, "#7f9a6a", 205);
  spike(305, 50, 0, 11, "#a08ad0", "#5e4a96");
  stem(300, 595, 410, 270, 36, 5, 3, "#7f9a6a", 205);
  spike(410, 120, -14, 10, "#8a86cc", "#4e4a94");
}
