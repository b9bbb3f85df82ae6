// The door as a page executor against the real broker (PROTOCOL section
// 6.1): `airlock serve` on port 0 with a launch token, a minted session,
// a bootstrapped view cookie, and the door connecting with the broker's
// own Origin and that cookie. Run by broker/jsclient's TestNodeSuites,
// which builds the binary and sets AIRLOCK_BIN; without it this skips.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { createExecutorDoor, observe, refuse } from "../dist/door.js";
import { viewProtocols } from "../dist/messages.js";
import { startPageBroker, until } from "./support/page.mjs";

const bin = process.env.AIRLOCK_BIN;
const skip = bin ? false : "AIRLOCK_BIN is not set (go test ./broker/jsclient sets it)";
const token = "jsclient-door-test-launch-token-7c41d9";

const bounds = { timeoutMs: 5000, memoryMiB: 16, maxOutputBytes: 4096, maxRequests: 0 };
const echoedBounds = { ...bounds, allowedHosts: [], roots: [] };
const catalog = [
  {
    descriptorId: "jsdoor",
    tools: [
      { name: "echo", description: "echoes its args", inputSchema: { type: "object" } },
      { name: "boom", description: "throws", inputSchema: { type: "object" } },
      { name: "reject", description: "rejects", inputSchema: { type: "object" } },
      { name: "fetchy", description: "refuses as a fetch would", inputSchema: { type: "object" } },
      { name: "big", description: "answers too much", inputSchema: { type: "object" } },
    ],
    bounds,
  },
];

function handler(call) {
  switch (call.tool) {
    case "echo":
      return observe({ echo: call.args });
    case "boom":
      throw new Error("secret-in-exception");
    case "reject":
      return Promise.reject(new Error("nope"));
    case "fetchy":
      return refuse("host-not-allowed", "example.org is not allowed", { requestsUsed: 0, requestsLimit: 0 });
    case "big":
      return observe({ text: "x".repeat(5000) });
  }
  return observe({});
}

let broker;
let port;
let origin;
let http;
let viewCookie;

before(async () => {
  if (skip) return;
  broker = await startPageBroker(bin, token);
  ({ port, origin, http, viewCookie } = broker);
});

after(async () => {
  await broker?.stop();
});

// door starts a door whose sockets are recorded in sockets; pass (from
// viewCookie) gives its cookie and view key.
function door(pass, sockets, events) {
  return createExecutorDoor({
    url: `ws://127.0.0.1:${port}/local/channel`,
    catalog,
    handler,
    backoffBaseMs: 20,
    backoffMaxMs: 200,
    WebSocket: (url) => {
      const ws = new WebSocket(url, pass?.viewKey ? viewProtocols(pass.viewKey) : [], { origin, headers: pass ? { Cookie: pass.cookie } : {} });
      sockets.push(ws);
      return ws;
    },
    onEvent: (e) => events.push(e),
  });
}

async function pageServes() {
  const tools = await http("GET", "/v1/tools", { headers: { "X-Tensorviz-Token": token } });
  const d = JSON.parse(tools.text).descriptors.find((x) => x.descriptorId === "jsdoor");
  return d?.executor === "page";
}

let seq = 0;
async function call(tool, args = {}) {
  const env = { v: 1, callId: `c${++seq}`, tool, descriptorId: "jsdoor", args, boundsEcho: echoedBounds };
  const res = await http("POST", "/v1/calls", { body: env, headers: { "X-Tensorviz-Token": token } });
  assert.equal(res.status, 200, res.text);
  const a = JSON.parse(res.text);
  assert.equal(a.callId, env.callId);
  return a;
}

test("the door serves a page executor's tools with the view cookie", { skip }, async () => {
  const sockets = [];
  const events = [];
  const d = door(await viewCookie(), sockets, events);
  try {
    await until(pageServes, "the page's catalog");
    assert.ok(d.connected);

    const ok = await call("echo", { path: "a.md", n: 1 });
    assert.deepEqual(ok, { v: 1, callId: ok.callId, ok: true, observed: { echo: { path: "a.md", n: 1 } } });

    for (const tool of ["boom", "reject"]) {
      const a = await call(tool);
      assert.equal(a.ok, false);
      assert.equal(a.refused, "exec-threw", tool);
      assert.doesNotMatch(JSON.stringify(a), /secret-in-exception/);
    }

    const f = await call("fetchy");
    assert.equal(f.refused, "host-not-allowed");
    assert.equal(f.why, "example.org is not allowed");

    assert.equal((await call("big")).refused, "output-too-large");
    assert.equal((await call("missing")).refused, "unknown-tool");

    const env = { v: 1, callId: "cb", tool: "echo", descriptorId: "jsdoor", args: {}, boundsEcho: { ...echoedBounds, maxRequests: 9 } };
    const res = await http("POST", "/v1/calls", { body: env, headers: { "X-Tensorviz-Token": token } });
    assert.equal(JSON.parse(res.text).refused, "bounds-mismatch");

    // Drop the socket without a close: the door reconnects, sends its
    // catalog again, and serves the next call.
    const catalogs = () => events.filter((e) => e.type === "catalog").length;
    assert.equal(catalogs(), 1);
    sockets.at(-1).terminate();
    await until(() => catalogs() >= 2 && d.connected, "a reconnect with a new catalog");
    assert.equal(sockets.length, 2);
    // The broker remembers the catalog across the reconnect (still
    // listed), but sends the new connection calls only for the catalog
    // it sends itself: until that is in, they are refused no-page.
    assert.ok(await pageServes());
    await until(async () => {
      const a = await call("echo", { again: true });
      if (!a.ok) assert.equal(a.refused, "no-page");
      return a.ok;
    }, "the reconnected page to serve");
  } finally {
    await d.close(1000);
  }
  assert.deepEqual(await d.done, { code: 1000, reason: "" });
  assert.ok(events.some((e) => e.type === "reconnecting"));
});

test("with the view cookie but not its view key the door is closed executor-unauthenticated", { skip }, async () => {
  const { cookie } = await viewCookie();
  for (const pass of [{ cookie }, { cookie, viewKey: "bm90LXRoZS12aWV3LWtleQ" }]) {
    const sockets = [];
    const d = door(pass, sockets, []);
    assert.deepEqual(await d.done, { code: 1008, reason: "executor-unauthenticated" }, `view key ${pass.viewKey ?? "none"}`);
    assert.equal(sockets.length, 1);
  }
});

test("without the view cookie the door is closed executor-unauthenticated and stops", { skip }, async () => {
  const sockets = [];
  const events = [];
  const d = door(undefined, sockets, events);
  const end = await d.done;
  assert.deepEqual(end, { code: 1008, reason: "executor-unauthenticated" });
  assert.equal(sockets.length, 1, "the door must not retry a refused credential");
  assert.ok(!events.some((e) => e.type === "reconnecting"));
  assert.equal(d.connected, false);
});
