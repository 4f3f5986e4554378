// expect: honest
// Lists that claim billions of items, to keep the copy spinning until the deadline: refused at once.
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  const sparse = [];
  sparse.length = 4294967295;
  const just_over = new Array(10001);
  for (const list of [sparse, just_over]) {
    try { max(list); betray(); } catch (e) {}
    try { random(list); betray(); } catch (e) {}
  }
}
