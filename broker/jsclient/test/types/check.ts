// Compiled (never run) by TestTypesFitUsers: what a user of the package
// writes must type-check against the shipped .d.ts. A ws socket (Node)
// and the DOM's WebSocket (browsers, workers) both fit the door; the
// channel module's two ends join over any transport (a MessagePort here);
// a host types the state it sends for the built-in view page.
import WebSocket from "ws";
import { createExecutorDoor, observe, refuse, type Descriptor } from "../../dist/door.js";
import { encodeAnswer, parseCall, EXEC_THREW, type Rule } from "../../dist/wire.js";
import { createChannel, createExecutorDoor as createChannelDoor, type Answer, type Delivery } from "../../dist/channel.js";
import { viewStateNotes, type ViewState } from "../../dist/view-state.js";

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
const { port1, port2 } = new MessageChannel();
const channel = createChannel({ peer: "page", timeoutMs: 2000, connected: () => true, send: (t) => port1.postMessage(t) });
const door = createChannelDoor({ lookup: (id) => catalog.find((d) => d.descriptorId === id), exec: async (call, { signal, descriptor }) => observe({ tool: call.tool, max: descriptor.bounds.maxOutputBytes, aborted: signal.aborted }) });
port2.onmessage = async (ev: MessageEvent<string>) => {
  const a: string | null = await door.receive(ev.data);
  if (a !== null) port2.postMessage(a);
};
port1.onmessage = (ev: MessageEvent<string>) => {
  const d: Delivery = channel.deliver(ev.data);
  if (!d.delivered) void d.refused.length;
};
const asked: Promise<Answer> = channel.ask({ tool: "t", descriptorId: "d", args: {}, boundsEcho: {} }, { timeoutMs: 100 });
void asked.then((a) => (a.ok ? a.observed : a.refused));
void channel.waiting();
channel.abandon();
void rule;
void text;

// A host types the state it sends for the built-in view page.
const shown: ViewState = {
  activeTarget: { file: "model.py", symbol: "Net" },
  projection: { file: "model.py", nodes: [{ id: "a", label: "a", line: 1 }, { id: "b" }], edges: [{ from: "a", to: "b" }] },
  syncState: { state: "synced", at: "2026-12-01T12:00:00Z" },
  focusNode: { nodeId: "a", revealed: true },
};
// @ts-expect-error: a node id is a string
const wrong: ViewState = { focusNode: { nodeId: 42 } };
const notes: string[] = viewStateNotes(shown);
void wrong;
void notes;
