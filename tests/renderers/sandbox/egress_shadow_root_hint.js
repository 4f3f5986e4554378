// expect: honest
// A preconnect hint inside a shadow root, where a document observer does not look.
function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
  try { const host = document.createElement('div'); document.body.appendChild(host); host.attachShadow({ mode: 'closed' }).innerHTML = '<link rel=preconnect href=http://127.0.0.1:{TCP}/>'; } catch (e) {}
}
