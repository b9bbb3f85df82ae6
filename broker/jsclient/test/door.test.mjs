// The door as a page executor against the real broker (PROTOCOL section
// 6.1): `airlock serve` on port 0 with a launch token, a minted session,
// a bootstrapped view cookie, and the door connecting with the broker's
// own Origin and that cookie. Run by broker/jsclient's TestNodeSuites,
// which builds the binary and sets AIRLOCK_BIN; without it this skips.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import WebSocket from "ws";
import { createExecutorDoor, observe, refuse } from "../dist/door.js";
import { viewProtocols } from "../dist/messages.js";

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
let dataDir;
let port;
let origin;

function http(method, path, { body, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request({ host: "127.0.0.1", port, method, path, headers: { ...headers, ...(data ? { "Content-Type": "application/json" } : {}) } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.on("error", reject);
    req.end(data);
  });
}

before(async () => {
  if (skip) return;
  dataDir = mkdtempSync(join(tmpdir(), "jsdoor-"));
  broker = spawn(bin, ["serve", "--listen", "127.0.0.1:0", "--data", dataDir, "--no-builtin"], {
    env: { PATH: process.env.PATH, HOME: dataDir, AIRLOCK_LOCAL_TOKEN: token },
    stdio: ["ignore", "pipe", "pipe"],
  });
  broker.stderr.resume();
  const lines = createInterface({ input: broker.stdout });
  const first = await new Promise((resolve, reject) => {
    lines.once("line", resolve);
    broker.once("exit", (code) => reject(new Error(`airlock serve exited ${code}`)));
  });
  const listening = JSON.parse(first);
  assert.equal(listening.event, "listening");
  port = Number(listening.addr.split(":").pop());
  origin = `http://127.0.0.1:${port}`;
});

after(async () => {
  if (!broker) return;
  const exited = new Promise((resolve) => broker.once("exit", (code, signal) => resolve({ code, signal })));
  broker.kill("SIGTERM");
  const { code } = await exited;
  rmSync(dataDir, { recursive: true, force: true });
  assert.equal(code, 0, "airlock serve did not exit 0 on SIGTERM");
});

// viewCookie mints a session for the broker's own origin and bootstraps a
// view, returning the Cookie header value the browser would send and the
// view key the page keeps.
async function viewCookie() {
  const mint = await http("POST", "/local/sessions", { body: { launchOrigin: origin }, headers: { "X-Tensorviz-Token": token } });
  assert.equal(mint.status, 201, mint.text);
  const { workspaceSessionId, viewCredential } = JSON.parse(mint.text);
  const boot = await http("POST", "/local/bootstrap", { body: { workspaceSessionId, viewCredential }, headers: { Origin: origin } });
  assert.equal(boot.status, 200, boot.text);
  const set = boot.headers["set-cookie"]?.[0];
  assert.match(set ?? "", /^tensorviz_local_browser_[0-9a-f]{16}=/);
  return { cookie: set.split(";")[0], viewKey: JSON.parse(boot.text).viewKey };
}

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

// until resolves once cond() holds, checking on every event the door
// reports and on a short poll (the broker registers the catalog after the
// door has sent it).
async function until(cond, what) {
  for (let i = 0; i < 2000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`gave up waiting for ${what}`);
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
    await until(pageServes, "the page's catalog after the reconnect");
    assert.equal((await call("echo", { again: true })).ok, true);
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
