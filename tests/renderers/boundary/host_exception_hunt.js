// expect: honest
// Every way to make p5 throw with the values a sketch holds (objects p5 would structuredClone, bad
// colours, functions): each caught error's prototype chain is frozen, so no DOMException or other host
// prototype is reachable to write to.
const O = ({})["constr" + "uctor"];  // Object, by a key built at run time
// Paints over the honest disc: it runs only if the attack reached what it aimed at.
function betray() { brush.fill("#101010", 255); brush.circle(300, 300, 280, 0); }
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  const errors = [];
  const values = [{}, [{}], () => 0, "bogus", O.freeze({ a: 1 }), [[1]]];
  for (const value of values) {
    for (const call of [background, translate, rotate, scale, randomSeed, noiseSeed, angleMode, max, noise]) {
      try { call(value, value); } catch (e) { errors.push(e); }
    }
  }
  if (errors.length < 20) betray();
  for (const error of errors) {
    if (typeof error !== "object" || error === null) betray();
    for (let proto = O.getPrototypeOf(error); proto !== null; proto = O.getPrototypeOf(proto)) {
      if (!O.isFrozen(proto)) betray();
      const name = proto.constructor && proto.constructor.name;
      if (name === "DOMException" || name === "p5") betray();
    }
  }
}
