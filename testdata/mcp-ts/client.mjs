// An MCP client written with the TypeScript SDK, independent of the Go SDK
// the server is built on. It connects at one protocol revision, lists the
// tools, calls read_notes, a refused call and an unknown tool, and prints
// what it saw as one JSON line. When the server lists echo (a plugin whose
// echo declares an outputSchema that {"n": <integer>} satisfies), it also
// calls echo with a conforming and a non-conforming result: the SDK holds
// structuredContent to the tool's outputSchema.
//
// Usage:
//   node client.mjs REVISION stdio AIRLOCK_BIN NOTES_DIR DATA_DIR [PLUGINS_DIR]
//                                     starts `airlock mcp`
//   node client.mjs REVISION http URL a running broker's /mcp; the launch
//                                     token in MCP_TOKEN
//
// The SDK always offers its newest revision at initialize; to speak as an
// older client does, the initialize request it sends is given REVISION
// instead, and the revision the server answers with is reported.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [revision, kind, ...rest] = process.argv.slice(2);
let transport;
// Resolves once the stdio server logs that its modules are compiled: it
// lists tools while they compile, and a call made before that waits for
// its module within the tool's own time bound, which a loaded machine
// can outlast (broker/PROTOCOL.md section 8.3).
let compiled = Promise.resolve();
if (kind === "stdio") {
  const [bin, notes, data, plugins] = rest;
  transport = new StdioClientTransport({
    command: bin,
    args: ["mcp", "--root", `notes=${notes}`, "--data", data, ...(plugins ? ["--plugins", plugins] : [])],
    env: { ...process.env },
    stderr: "pipe",
  });
  compiled = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("airlock mcp did not log plugins compiled within 5 minutes")), 300_000);
    let buf = "";
    transport.stderr.on("data", (chunk) => {
      process.stderr.write(chunk);
      buf = (buf + chunk).slice(-4096);
      if (buf.includes('"msg":"plugins compiled"')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
} else if (kind === "http") {
  transport = new StreamableHTTPClientTransport(new URL(rest[0]), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
  });
} else {
  throw new Error(`unknown transport ${kind}`);
}

let negotiated = null;
const send = transport.send.bind(transport);
transport.send = (message, options) => {
  if (message.method === "initialize") {
    message = { ...message, params: { ...message.params, protocolVersion: revision } };
  }
  return send(message, options);
};
const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (v) => {
  negotiated = v;
  setProtocolVersion?.(v);
};

const client = new Client({ name: "ts-e2e", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
await compiled;
const ok = await client.callTool({ name: "read_notes", arguments: { path: "a.md" } });
const refused = await client.callTool({ name: "read_notes", arguments: { nope: 1 } });
let unknown = null;
try {
  await client.callTool({ name: "no_such_tool", arguments: {} });
} catch (e) {
  unknown = e.code ?? String(e);
}
let typed = null;
if (tools.some((t) => t.name === "echo")) {
  const good = await client.callTool({ name: "echo", arguments: { n: 1 } });
  const bad = await client.callTool({ name: "echo", arguments: { n: "one" } });
  typed = {
    good: { isError: good.isError ?? false, structured: good.structuredContent },
    bad: { isError: bad.isError ?? false, text: bad.content?.[0]?.text, structured: bad.structuredContent ?? null },
  };
}
console.log(JSON.stringify({
  revision: negotiated,
  protocol: client.getServerCapabilities(),
  tools: tools.map((t) => t.name).sort(),
  readOnly: tools.find((t) => t.name === "read_notes")?.annotations?.readOnlyHint,
  ok: { isError: ok.isError ?? false, text: ok.content?.[0]?.text, structured: ok.structuredContent },
  refused: { isError: refused.isError ?? false, text: refused.content?.[0]?.text },
  unknown,
  typed,
}));
await client.close();
