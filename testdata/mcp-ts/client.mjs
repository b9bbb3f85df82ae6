// An MCP client written with the TypeScript SDK, independent of the Go SDK
// the server is built on: it starts `airlock mcp` over stdio, lists the
// tools, calls read_notes and a refused call, and prints what it saw as one
// JSON line. With PLUGINS_DIR, whose echo tool declares an outputSchema
// that {"n": <integer>} satisfies, it also calls echo with a conforming and
// a non-conforming result: the SDK holds structuredContent to the schema.
// Usage: node client.mjs AIRLOCK_BIN NOTES_DIR DATA_DIR [PLUGINS_DIR]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, notes, data, plugins] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: bin,
  args: ["mcp", "--root", `notes=${notes}`, "--data", data, ...(plugins ? ["--plugins", plugins] : [])],
  env: { ...process.env },
  stderr: "inherit",
});
const client = new Client({ name: "ts-e2e", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const ok = await client.callTool({ name: "read_notes", arguments: { path: "a.md" } });
const refused = await client.callTool({ name: "read_notes", arguments: { nope: 1 } });
let unknown = null;
try {
  await client.callTool({ name: "no_such_tool", arguments: {} });
} catch (e) {
  unknown = e.code ?? String(e);
}
let typed = null;
if (plugins) {
  const good = await client.callTool({ name: "echo", arguments: { n: 1 } });
  const bad = await client.callTool({ name: "echo", arguments: { n: "one" } });
  typed = {
    good: { isError: good.isError ?? false, structured: good.structuredContent },
    bad: { isError: bad.isError ?? false, text: bad.content?.[0]?.text, structured: bad.structuredContent ?? null },
  };
}
console.log(JSON.stringify({
  protocol: client.getServerCapabilities(),
  tools: tools.map((t) => t.name).sort(),
  readOnly: tools.find((t) => t.name === "read_notes")?.annotations?.readOnlyHint,
  ok: { isError: ok.isError ?? false, text: ok.content?.[0]?.text, structured: ok.structuredContent },
  refused: { isError: refused.isError ?? false, text: refused.content?.[0]?.text },
  unknown,
  typed,
}));
await client.close();
