// Preloaded into a Node server under test (`node --require loopback.cjs …`): a
// listen() given only a port binds 127.0.0.1, not every interface, so that the
// servers the tests start are reachable from this machine only.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const portOnly = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (portOnly && (args.length === 1 || typeof args[1] === "function")) {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
