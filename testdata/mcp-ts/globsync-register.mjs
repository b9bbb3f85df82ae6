// Loaded with `node --import ./globsync-register.mjs`: on a Node without
// fs.globSync (Node 20, Debian's), the conformance tool's `import {globSync}
// from "fs"` is pointed at globsync-fs.mjs, which adds it. On Node 22 and
// later this does nothing.
import fs from "node:fs";
import { register } from "node:module";

if (typeof fs.globSync !== "function") {
  register("./globsync-hooks.mjs", import.meta.url);
}
