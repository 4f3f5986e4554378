// expect: runtime_error
// Marks a painted fake with finish marks of every shape it can guess, before and after setup.
function fake() { const c = document.createElement("canvas"); c.width = 600; c.height = 600; const g = c.getContext("2d"); g.fillStyle = "#f6f0e4"; g.fillRect(0, 0, 600, 600);
  g.fillStyle = "#a03050"; g.fillRect(100, 100, 300, 300); return c; }
const forged = fake();
document.documentElement.appendChild(forged);
const spray = () => {
  for (const value of ["done:", "done:x:draw:1", "done::draw:1", "canvas:draw", "draw"]) {
    forged.setAttribute("data-wc", value);
    forged.removeAttribute("data-wc");
  }
};
spray();
function setup() { spray(); createCanvas(600, 600, WEBGL); background("#f6f0e4"); spray(); }
