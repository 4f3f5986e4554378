// expect: brush_arguments
// fillTexture with a third argument, from a list built at run time.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke();
  const texture = [0.5, 0.5];
  texture.push(1);
  brush.fill("#b0305a", 220);
  brush.fillTexture(...texture);
  brush.circle(300, 300, 140, 0.3);
}
