// node:fs with the one globSync form the conformance tool uses:
// "**/NAME" (every file called NAME under cwd) or a literal relative path.
// Any other pattern throws rather than match wrongly.
import fs from "node:fs";
import path from "node:path";

export * from "node:fs";
export default fs;

export function globSync(pattern, options = {}) {
  const cwd = options.cwd ?? process.cwd();
  if (/[*?[\]{}]/.test(pattern.replace(/^\*\*\//, ""))) {
    throw new Error(`globSync shim: unsupported pattern ${pattern}`);
  }
  if (!pattern.startsWith("**/")) {
    return fs.existsSync(path.join(cwd, pattern)) ? [pattern] : [];
  }
  const name = pattern.slice(3);
  const found = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(cwd, rel), { withFileTypes: true })) {
      const p = rel ? path.join(rel, e.name) : e.name;
      if (e.isDirectory()) walk(p);
      else if (e.name === name) found.push(p);
    }
  };
  walk("");
  return found;
}
