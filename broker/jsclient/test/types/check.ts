// Compiled (never run) by TestTypesFitUsers: what a user of the package
// writes must type-check against the shipped .d.ts. A ws socket (Node)
// and the DOM's WebSocket (browsers, workers) both fit the door.
import WebSocket from "ws";
import { createExecutorDoor, observe, refuse, type Descriptor } from "../../dist/door.js";
import { encodeAnswer, parseCall, EXEC_THREW, type Rule } from "../../dist/wire.js";

const catalog: Descriptor[] = [
  { descriptorId: "d", tools: [{ name: "t", description: "", inputSchema: { type: "object" } }], bounds: { timeoutMs: 1000, memoryMiB: 1, maxOutputBytes: 1, maxRequests: 0 } },
];
const node = createExecutorDoor({
  url: "ws://127.0.0.1:1/local/channel",
  catalog,
  handler: async (call, { signal }) => (signal.aborted ? refuse(EXEC_THREW) : observe({ args: call.args })),
  WebSocket: (url) => new WebSocket(url, { origin: "http://127.0.0.1:1", headers: { Cookie: "c=v" } }),
});
const browser = createExecutorDoor({ url: new URL("ws://127.0.0.1:1/local/channel"), catalog, handler: () => observe({}), WebSocket: (url) => new globalThis.WebSocket(url) });

const v = parseCall("{}");
const rule: Rule | undefined = v.ok ? undefined : v.rule;
const text: string = encodeAnswer({ callId: "c", ok: false, refused: "exec-threw" });
void node.close();
void browser.done.then((end) => end.code);
void rule;
void text;
