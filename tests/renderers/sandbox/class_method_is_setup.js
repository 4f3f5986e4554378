// expect: runtime_error
// A class method installed as setup; p5 used to call it with the window as `this`.
class K { run() {
    createCanvas(600, 600, WEBGL);
    translate(-300, -300);
    background("#f6f0e4");
    brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
    this.ellipse(300, 300, 400, 400);
  } }
var setup = K.prototype.run;
