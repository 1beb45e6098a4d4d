// Parse one Mermaid diagram (stdin) with the real `mermaid` package under jsdom; exit 1 with the
// parser's message when it does not parse. Run with NODE_PATH at node_modules holding mermaid
// and jsdom (.ci/run installs both).
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH || ".", "noop.js"));
const { JSDOM } = require("jsdom");
const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const mermaidPath = require.resolve("mermaid");
const { default: mermaid } = await import(mermaidPath.replace(/mermaid\.js$/, "mermaid.core.mjs"));
let text = "";
for await (const chunk of process.stdin) text += chunk;
try {
  await mermaid.parse(text);
  console.log("ok");
} catch (error) {
  console.log(String(error.message).slice(0, 500));
  process.exit(1);
}
