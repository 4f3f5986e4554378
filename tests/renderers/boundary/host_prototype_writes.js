// expect: honest
// Writes to the prototypes of everything the sketch holds (a stand-in, brush, a caught p5 error, a
// promise): all frozen, so none lands where p5 would read it.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  let caught = null;
  try { background("#zz"); } catch (e) { caught = e; }
  const held = [brush.fill, brush, caught, (async () => {})(), [], "", 0];
  let landed = 0;
  for (const value of held) {
    for (let proto = O.getPrototypeOf(value); proto !== null; proto = O.getPrototypeOf(proto)) {
      try { proto.polluted = 1; } catch (e) {}
      try { O.defineProperty(proto, "polluted2", { value: 1 }); } catch (e) {}
      if (proto.polluted === 1 || proto.polluted2 === 1) landed++;
    }
  }
  try { brush.fill.polluted = 1; } catch (e) {}
  if (landed || brush.fill.polluted === 1) betray();
}
