#!/usr/bin/env node
// A fake Node.js-based agent CLI: proves it runs on the Node.js runtime bench unpacked into the
// agent image (the task image has none). Fixes calc.py's add() and prints the Node version.
const fs = require("fs");
const src = fs.readFileSync("calc.py", "utf8");
fs.writeFileSync("calc.py", src.replace("return a - b", "return a + b"));
console.log(`node-agent on node ${process.version} at ${process.execPath}`);
