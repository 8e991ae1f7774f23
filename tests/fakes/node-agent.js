#!/usr/bin/env node
// A fake Node.js-based agent CLI: proves it runs on the Node.js runtime bench unpacked into the
// agent image (the task image has none). Fixes calc.py's add() and prints the Node version;
// writes its own files too (declared as the harness's `own_files`).
const fs = require("fs");
const src = fs.readFileSync("calc.py", "utf8");
fs.writeFileSync("calc.py", src.replace("return a - b", "return a + b"));
// Like aider, it keeps a log of its own in the repository and edits .gitignore for it.
fs.writeFileSync(".node-agent.history", "session log\n");
fs.appendFileSync(".gitignore", ".node-agent.history\n");
console.log(`node-agent on node ${process.version} at ${process.execPath}`);
