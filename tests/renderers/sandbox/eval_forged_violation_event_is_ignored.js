// expect: runtime_error
// A violation event the sketch dispatches itself (not trusted) is no refusal: the honest picture counts.
function setup() {
  const fake = new SecurityPolicyViolationEvent("securitypolicyviolation", {
    blockedURI: "eval", effectiveDirective: "script-src", violatedDirective: "script-src",
    originalPolicy: "", disposition: "enforce", statusCode: 0,
  });
  document.dispatchEvent(fake);
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
