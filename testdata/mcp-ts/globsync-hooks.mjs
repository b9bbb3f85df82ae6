// Module resolution hook: "fs" imported by the conformance tool resolves to
// globsync-fs.mjs (node:fs plus globSync); every other import is untouched.
const shim = new URL("./globsync-fs.mjs", import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL?.includes("/@modelcontextprotocol/conformance/")) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
