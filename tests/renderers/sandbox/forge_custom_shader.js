// expect: honest
// A custom fragment shader painted over the canvas.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { const s = createShader('void main(){}', 'void main(){gl_FragColor=vec4(0.);}'); shader(s); rect(0, 0, 600, 600); } catch (e) {}
  try { filter(INVERT); } catch (e) {}
}
