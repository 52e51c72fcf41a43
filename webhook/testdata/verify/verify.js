// Verifies one Standard Webhooks delivery with the reference library.
// stdin: JSON {"secret": "whsec_...", "headers": {name: value}, "body": "..."}
// exit 0: verified; 1: verification failed (reason on stderr);
// 2: bad input or any other error, so that a broken setup is never
// mistaken for a rejected signature.
"use strict";

const { Webhook, WebhookVerificationError } = require("standardwebhooks");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  input += chunk;
});
process.stdin.on("end", () => {
  let req;
  try {
    req = JSON.parse(input);
  } catch (err) {
    console.error(`bad input: ${err.message}`);
    process.exit(2);
  }
  try {
    new Webhook(req.secret).verify(req.body, req.headers);
  } catch (err) {
    if (err instanceof WebhookVerificationError) {
      console.error(`verification failed: ${err.message}`);
      process.exit(1);
    }
    console.error(`error: ${err && err.stack ? err.stack : err}`);
    process.exit(2);
  }
  console.log("verified");
  process.exit(0);
});
