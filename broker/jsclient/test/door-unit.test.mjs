// The door against a fake socket the test drives: each refusal the door
// makes on its own side, containment, bounds, and the reconnect policy.
// The real broker is door.test.mjs's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createExecutorDoor, observe, refuse } from "../dist/door.js";
import { encodeCall, parseAnswer } from "../dist/wire.js";

const bounds = { timeoutMs: 60000, memoryMiB: 16, maxOutputBytes: 64, maxRequests: 2 };
const echo = { ...bounds, allowedHosts: [], roots: [] };
const catalog = [{ descriptorId: "d", tools: [{ name: "t", description: "", inputSchema: {} }], bounds }];

// FakeSocket is what the door sees as its WebSocket.
class FakeSocket {
  readyState = 0;
  sent = [];
  onopen = null;
  onmessage = null;
  onclose = null;
  onerror = null;
  #waiters = [];
  open() {
    this.readyState = 1;
    this.onopen?.({});
  }
  send(data) {
    this.sent.push(data);
    for (const w of this.#waiters.splice(0)) w();
  }
  close(code = 1005, reason = "") {
    this.drop(code, reason);
  }
  // drop closes from the broker's side.
  drop(code, reason = "") {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }
  deliver(data) {
    this.onmessage?.({ data });
  }
  // next resolves with the n-th frame sent (0-based) once it is sent.
  async frame(n) {
    while (this.sent.length <= n) await new Promise((r) => this.#waiters.push(r));
    return this.sent[n];
  }
  answers() {
    return this.sent.filter((f) => !f.includes('"type":"catalog"')).map((f) => parseAnswer(f));
  }
}

function setup(handler, extra = {}) {
  const sockets = [];
  const events = [];
  const door = createExecutorDoor({
    url: "ws://127.0.0.1:1/local/channel",
    catalog,
    handler,
    backoffBaseMs: 1,
    backoffMaxMs: 4,
    WebSocket: () => {
      const s = new FakeSocket();
      sockets.push(s);
      queueMicrotask(() => s.open());
      return s;
    },
    onEvent: (e) => events.push(e),
    ...extra,
  });
  return { door, sockets, events };
}

const callText = (over = {}) => encodeCall({ callId: "b_1", tool: "t", descriptorId: "d", args: {}, boundsEcho: echo, ...over });

async function answerTo(handler, over, extra) {
  const { door, sockets } = setup(handler, extra);
  await sockets[0].frame(0); // the catalog
  sockets[0].deliver(callText(over));
  const a = parseAnswer(await sockets[0].frame(1));
  await door.close(0);
  assert.ok(a.ok, "the door sent an invalid answer");
  return a.value;
}

test("the catalog goes first, with the bounds as the broker encodes them", async () => {
  const { door, sockets } = setup(() => observe({}));
  const first = JSON.parse(await sockets[0].frame(0));
  assert.deepEqual(first, { type: "catalog", descriptors: [{ ...catalog[0], bounds: echo }] });
  await door.close(0);
});

test("an observation carries the call's id", async () => {
  const a = await answerTo((call) => observe({ got: call.args }), { args: { x: 1 } });
  assert.deepEqual(a, { v: 1, callId: "b_1", ok: true, observed: { got: { x: 1 } } });
});

test("each refusal the door makes before the handler runs", async () => {
  const never = () => assert.fail("the handler ran");
  assert.equal((await answerTo(never, { descriptorId: "other" })).refused, "unattributed-call");
  assert.equal((await answerTo(never, { boundsEcho: { ...echo, maxRequests: 3 } })).refused, "bounds-mismatch");
  assert.equal((await answerTo(never, { boundsEcho: bounds })).refused, "bounds-mismatch"); // absent lists are not empty lists
  const unknown = await answerTo(never, { tool: "u" });
  assert.deepEqual([unknown.refused, unknown.why], ["unknown-tool", 'the descriptor "d" declares no tool "u"']);
});

test("a handler that throws, rejects, returns junk or a lying budget is answered exec-threw", async () => {
  for (const h of [
    () => {
      throw new Error("secret");
    },
    () => Promise.reject(new Error("secret")),
    () => ({ ok: true, observed: [] }),
    () => "not an answer",
    () => undefined,
    () => refuse("allow"),
    () => observe({}, { requestsUsed: 0, requestsLimit: 9 }),
    () => observe({ n: 10n }),
  ]) {
    const a = await answerTo(h);
    assert.equal(a.refused, "exec-threw", String(h));
    assert.equal(a.why, "the tool failed");
  }
});

test("runtime refusals pass unchanged, with their budget", async () => {
  const a = await answerTo(() => refuse("budget-exhausted", "3 of 2", { requestsUsed: 2, requestsLimit: 2 }));
  assert.deepEqual(a, { v: 1, callId: "b_1", ok: false, refused: "budget-exhausted", why: "3 of 2", budget: { requestsUsed: 2, requestsLimit: 2 } });
});

test("an observation over maxOutputBytes is output-too-large", async () => {
  const a = await answerTo(() => observe({ s: "é".repeat(40) }));
  assert.deepEqual([a.refused, a.why], ["output-too-large", "the tool's output was 88 bytes, over bounds.maxOutputBytes 64"]);
});

test("a handler that outlives timeoutMs is answered exec-timeout and its signal aborted", async () => {
  let signal;
  const slow = [{ ...catalog[0], bounds: { ...bounds, timeoutMs: 5 } }];
  const a = await answerTo(
    (_call, ctx) => {
      signal = ctx.signal;
      return new Promise(() => {});
    },
    { boundsEcho: { ...echo, timeoutMs: 5 } },
    { catalog: slow },
  );
  assert.deepEqual([a.refused, a.why], ["exec-timeout", "the tool ran past bounds.timeoutMs 5 ms"]);
  assert.ok(signal.aborted);
});

test("past maxInflight calls are overloaded; a repeated running callId is dropped", async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const { door, sockets, events } = setup(() => gate.then(() => observe({})), { maxInflight: 1 });
  await sockets[0].frame(0);
  sockets[0].deliver(callText({ callId: "b_1" }));
  sockets[0].deliver(callText({ callId: "b_1" }));
  sockets[0].deliver(callText({ callId: "b_2" }));
  const over = parseAnswer(await sockets[0].frame(1)).value;
  assert.deepEqual([over.callId, over.refused], ["b_2", "overloaded"]);
  assert.ok(events.some((e) => e.type === "dropped" && e.why === "duplicate"));
  release();
  assert.equal(parseAnswer(await sockets[0].frame(2)).value.callId, "b_1");
  await door.close(0);
});

test("a frame that is not a call is refused under its callId, or dropped", async () => {
  const { door, sockets, events } = setup(() => observe({}));
  await sockets[0].frame(0);
  sockets[0].deliver('{"v":1,"callId":"b_9","grant":"all"}');
  sockets[0].deliver('{"v":1,"callId":7}');
  sockets[0].deliver("not json");
  sockets[0].deliver(new Uint8Array([123, 125]));
  sockets[0].deliver(`{"v":1,"callId":"b_8","pad":"${"x".repeat(16 * 1024 * 1024 + 4096)}"}`);
  const a = parseAnswer(await sockets[0].frame(1)).value;
  assert.deepEqual([a.callId, a.refused], ["b_9", "unknown-field"]);
  assert.equal(sockets[0].sent.length, 2);
  assert.deepEqual(events.filter((e) => e.type === "dropped").map((e) => e.why), ["unreadable", "unreadable", "binary", "too-large"]);
  await door.close(0);
});

test("close refuses new calls shutting-down, lets running ones finish, then closes 1000", async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const { door, sockets } = setup(() => gate.then(() => observe({ done: true })));
  await sockets[0].frame(0);
  sockets[0].deliver(callText({ callId: "b_1" }));
  const closed = door.close(60000);
  sockets[0].deliver(callText({ callId: "b_2" }));
  const refused = parseAnswer(await sockets[0].frame(1)).value;
  assert.deepEqual([refused.callId, refused.refused], ["b_2", "shutting-down"]);
  release();
  await closed;
  assert.deepEqual(parseAnswer(sockets[0].sent[2]).value.observed, { done: true });
  assert.deepEqual(await door.done, { code: 1000, reason: "" });
  assert.equal(sockets[0].readyState, 3);
});

test("a dropped connection is re-dialled and the catalog sent again; calls in flight are abandoned", async () => {
  let started;
  const running = new Promise((r) => (started = r));
  const { door, sockets, events } = setup((_c, ctx) => {
    started(ctx.signal);
    return new Promise(() => {});
  });
  await sockets[0].frame(0);
  sockets[0].deliver(callText());
  const signal = await running;
  sockets[0].drop(1006);
  assert.ok(signal.aborted);
  const again = JSON.parse(await (async () => {
    while (sockets.length < 2) await new Promise((r) => setTimeout(r, 1));
    return sockets[1].frame(0);
  })());
  assert.equal(again.type, "catalog");
  assert.equal(sockets[0].sent.length, 1, "nothing was answered on the dead socket");
  assert.ok(events.some((e) => e.type === "reconnecting" && e.attempt === 1));
  sockets[1].drop(1001, "going away");
  while (sockets.length < 3) await new Promise((r) => setTimeout(r, 1));
  await door.close(0);
});

for (const [code, reason] of [
  [1008, "executor-unauthenticated"],
  [1000, "page-replaced"],
  [4402, "CREDENTIAL_EXPIRED"],
]) {
  test(`a close ${code} ${reason} stops the door without retrying`, async () => {
    const { door, sockets, events } = setup(() => observe({}));
    await sockets[0].frame(0);
    sockets[0].drop(code, reason);
    assert.deepEqual(await door.done, { code, reason });
    assert.equal(sockets.length, 1);
    assert.ok(!events.some((e) => e.type === "reconnecting"));
  });
}

test("setCatalog sends the new catalog at once and uses it for the next call", async () => {
  const { door, sockets } = setup(() => observe({}));
  await sockets[0].frame(0);
  door.setCatalog([]);
  assert.deepEqual(JSON.parse(await sockets[0].frame(1)), { type: "catalog", descriptors: [] });
  sockets[0].deliver(callText());
  assert.equal(parseAnswer(await sockets[0].frame(2)).value.refused, "unattributed-call");
  await door.close(0);
});

test("closing while a ws socket is still connecting neither throws nor retries", async () => {
  const { default: WebSocket } = await import("ws");
  const events = [];
  const door = createExecutorDoor({
    url: "ws://127.0.0.1:9/local/channel",
    catalog: [],
    handler: () => observe({}),
    WebSocket: (url) => new WebSocket(url),
    onEvent: (e) => events.push(e),
  });
  await door.close(0);
  assert.deepEqual(await door.done, { code: 1000, reason: "" });
  assert.ok(!events.some((e) => e.type === "reconnecting"));
});

test("a catalog leaving out what the schema makes optional is sent, and echoed, as the broker encodes it", async () => {
  const lean = [{ descriptorId: "d", tools: [{ name: "t", inputSchema: {} }], bounds: { timeoutMs: 60000, memoryMiB: 16, maxOutputBytes: 64 } }];
  const { door, sockets } = setup(() => observe({ ok: 1 }), { catalog: lean });
  const sent = JSON.parse(await sockets[0].frame(0));
  assert.deepEqual(sent.descriptors[0], {
    descriptorId: "d",
    tools: [{ name: "t", description: "", inputSchema: {} }],
    bounds: { timeoutMs: 60000, memoryMiB: 16, maxOutputBytes: 64, maxRequests: 0, allowedHosts: [], roots: [] },
  });
  sockets[0].deliver(callText({ boundsEcho: { roots: [], allowedHosts: [], maxRequests: 0, maxOutputBytes: 64, memoryMiB: 16, timeoutMs: 60000 } }));
  assert.deepEqual(parseAnswer(await sockets[0].frame(1)).value.observed, { ok: 1 });
  await door.close(0);
});
