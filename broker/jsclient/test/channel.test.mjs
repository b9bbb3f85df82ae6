// The channel module: createChannel and createExecutorDoor joined by an
// in-process pipe, over the bundled plugins' descriptors as GET /v1/tools
// lists them and the golden envelopes of testdata/wire; every absence and
// refusal by name. Time is the test's: node:test's mock timers. The last
// tests join each end to the real binary: the door behind a broker's page
// connection, the channel asking `airlock env` (the Go executor door)
// over a socket this test serves. They skip without AIRLOCK_BIN
// (broker/jsclient's TestNodeSuites sets it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import WebSocket, { WebSocketServer } from "ws";
import { BUDGET_MISMATCH, UNKNOWN_CALL, createChannel, createExecutorDoor, observe, refuse } from "@airlock/client/channel";
import { WireError, callIdOf, parseAnswer, parseCall } from "@airlock/client/wire";
import { viewProtocols } from "@airlock/client/messages";
import { startPageBroker, until } from "./support/page.mjs";

const repo = (path) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));

// tools is what GET /v1/tools lists for the bundled plugins: each
// plugin.json's id, tools and bounds, with its executor.
function listed(name) {
  const m = JSON.parse(readFileSync(repo(`plugins/bundled/${name}/plugin.json`), "utf8"));
  return { descriptorId: m.id, executor: "local", tools: m.tools, bounds: m.bounds };
}
const notes = listed("notes"); // maxRequests 0, a root
const web = listed("web"); // maxRequests 4
const admitted = new Map([notes, web].map((d) => [d.descriptorId, d]));

// golden reads testdata/wire/<dir>: each file's envelope and expected outcome.
function golden(dir) {
  const path = repo(`testdata/wire/${dir}`);
  return readdirSync(path)
    .filter((f) => f.endsWith(".txt"))
    .map((f) => {
      const [text, want] = readFileSync(`${path}/${f}`, "utf8").split("\n----\n");
      return { name: f, text, want: want.trim() };
    });
}

const readNotes = (args = { path: "welcome.md" }) => ({ tool: "read_notes", descriptorId: "notes", args, boundsEcho: notes.bounds });
const fetchUrl = (args = { url: "https://example.org/" }) => ({ tool: "fetch_url", descriptorId: "web", args, boundsEcho: web.bounds });

// pipe joins a channel to a door in process: what the channel sends the
// door receives, and the door's answer is delivered back. up is the
// transport's state; sent and deliveries record both directions.
function pipe(exec, { peer = "page", timeoutMs = 60_000, lookup = (id) => admitted.get(id), ...more } = {}) {
  const door = createExecutorDoor({ lookup, exec });
  const p = { up: true, sent: [], deliveries: [], pending: [] };
  p.channel = createChannel({
    peer,
    timeoutMs,
    connected: () => p.up,
    send: (text) => {
      p.sent.push(text);
      p.pending.push(
        door.receive(text).then((answer) => {
          if (answer !== null) p.deliveries.push(p.channel.deliver(answer));
        }),
      );
    },
    ...more,
  });
  return p;
}

const never = () => assert.fail("exec ran");

test("a call goes through the pipe with v and a fresh callId, and its observation comes back", async () => {
  const seen = [];
  const p = pipe((call, ctx) => {
    seen.push({ call, descriptor: ctx.descriptor });
    return observe({ path: call.args.path, text: "# Welcome" });
  });
  const [a, b] = await Promise.all([p.channel.ask(readNotes()), p.channel.ask(readNotes({ path: "roots.md" }))]);
  assert.deepEqual(a, { v: 1, callId: a.callId, ok: true, observed: { path: "welcome.md", text: "# Welcome" } });
  assert.equal(b.observed.path, "roots.md");
  assert.notEqual(a.callId, b.callId);
  assert.deepEqual(parseCall(p.sent[0]), { ok: true, value: { v: 1, callId: a.callId, ...readNotes() } });
  assert.deepEqual(seen[0].descriptor, { descriptorId: "notes", tools: notes.tools, bounds: notes.bounds }, "exec sees the descriptor as the broker encodes it");
  assert.deepEqual(p.deliveries, [{ delivered: true }, { delivered: true }]);
  assert.equal(p.channel.waiting(), 0);
});

test("the door refuses unattributed-call, bounds-mismatch and unknown-tool before exec runs", async () => {
  const p = pipe(never);
  const { roots: _, ...lean } = notes.bounds;
  for (const [call, rule] of [
    [{ ...readNotes(), descriptorId: "elsewhere" }, "unattributed-call"],
    [{ ...readNotes(), boundsEcho: { ...notes.bounds, maxRequests: 9 } }, "bounds-mismatch"],
    [{ ...readNotes(), boundsEcho: lean }, "bounds-mismatch"],
    [{ ...fetchUrl(), boundsEcho: notes.bounds }, "bounds-mismatch"],
    [{ ...readNotes(), tool: "write_notes" }, "unknown-tool"],
  ]) {
    const a = await p.channel.ask(call);
    assert.deepEqual([a.ok, a.refused], [false, rule], JSON.stringify(call));
    if (rule === "unknown-tool") assert.equal(a.why, 'the descriptor "notes" declares no tool "write_notes"');
  }
  const reordered = Object.fromEntries(Object.entries(notes.bounds).reverse());
  let ran = false;
  const q = pipe(() => ((ran = true), observe({})));
  assert.equal((await q.channel.ask({ ...readNotes(), boundsEcho: reordered })).ok, true, "bounds compare as canonical JSON");
  assert.ok(ran);
});

test("an exec that throws, rejects, or answers what is not an answer is exec-threw, and nothing of it crosses", async () => {
  for (const exec of [
    () => {
      throw new Error("secret-in-exception");
    },
    () => Promise.reject(new Error("secret-in-rejection")),
    () => ({ ok: true, observed: ["secret"] }),
    () => "secret",
    () => undefined,
    () => refuse("allow", "secret"),
    () => observe({ n: 10n }),
    () => observe({}, { requestsUsed: 0, requestsLimit: 9 }),
  ]) {
    const a = await pipe(exec).channel.ask(readNotes());
    assert.deepEqual([a.ok, a.refused, a.why], [false, "exec-threw", "the tool failed"], String(exec));
    assert.doesNotMatch(JSON.stringify(a), /secret/);
  }
});

test("runtime refusals cross by name with their why and budget", async () => {
  for (const [rule, budget] of [
    ["host-not-allowed", { requestsUsed: 0, requestsLimit: 4 }],
    ["fetch-failed", { requestsUsed: 1, requestsLimit: 4 }],
    ["budget-exhausted", { requestsUsed: 4, requestsLimit: 4 }],
  ]) {
    const a = await pipe(() => refuse(rule, `${rule} at example.org`, budget)).channel.ask(fetchUrl());
    assert.deepEqual(a, { v: 1, callId: a.callId, ok: false, refused: rule, why: `${rule} at example.org`, budget });
  }
  const ok = await pipe(() => observe({ status: 200 }, { requestsUsed: 1, requestsLimit: 4 })).channel.ask(fetchUrl());
  assert.deepEqual(ok.budget, { requestsUsed: 1, requestsLimit: 4 });
});

test("an observation over maxOutputBytes is output-too-large, its budget kept", async () => {
  const max = web.bounds.maxOutputBytes;
  const a = await pipe(() => observe({ text: "x".repeat(max) }, { requestsUsed: 2, requestsLimit: 4 })).channel.ask(fetchUrl());
  assert.deepEqual([a.refused, a.budget], ["output-too-large", { requestsUsed: 2, requestsLimit: 4 }]);
  assert.equal(a.why, `the tool's output was ${max + 11} bytes, over bounds.maxOutputBytes ${max}`);
});

test("an exec still running at timeoutMs is exec-timeout and its signal is aborted", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  let started;
  const running = new Promise((r) => (started = r));
  const door = createExecutorDoor({ lookup: (id) => admitted.get(id), exec: (_call, ctx) => (started(ctx.signal), new Promise(() => {})) });
  let answer = null;
  const settled = door.receive({ v: 1, callId: "b_1", ...readNotes() }).then((a) => (answer = a));
  const signal = await running;
  t.mock.timers.tick(notes.bounds.timeoutMs - 1);
  await new Promise((r) => setImmediate(r));
  assert.equal(answer, null, "settled before timeoutMs");
  assert.equal(signal.aborted, false);
  t.mock.timers.tick(1);
  await settled;
  const a = parseAnswer(answer).value;
  assert.deepEqual([a.refused, a.why], ["exec-timeout", `the tool ran past bounds.timeoutMs ${notes.bounds.timeoutMs} ms`]);
  assert.ok(signal.aborted);
});

test("receive takes text, bytes or a parsed object; a transport's abort cuts the call off exec-threw", async () => {
  const door = createExecutorDoor({ lookup: (id) => admitted.get(id), exec: (call) => observe({ path: call.args.path }) });
  const call = { v: 1, callId: "b_1", ...readNotes() };
  for (const input of [JSON.stringify(call), new TextEncoder().encode(JSON.stringify(call)), call]) {
    assert.deepEqual(parseAnswer(await door.receive(input)).value, { v: 1, callId: "b_1", ok: true, observed: { path: "welcome.md" } });
  }
  assert.equal(parseAnswer(await door.receive({ ...call, decision: "allow" })).value.refused, "unknown-field");

  let signal;
  const held = createExecutorDoor({ lookup: (id) => admitted.get(id), exec: (_c, ctx) => ((signal = ctx.signal), new Promise(() => {})) });
  const gone = new AbortController();
  const answered = held.receive(call, gone.signal);
  await until(() => signal !== undefined, "exec to start");
  gone.abort();
  assert.equal(parseAnswer(await answered).value.refused, "exec-threw");
  assert.ok(signal.aborted);
});

test("every golden call is answered under its rule when its callId can be read, and is nobody's answer otherwise", async () => {
  const door = createExecutorDoor({ lookup: () => undefined, exec: never });
  const cases = golden("call");
  assert.ok(cases.length > 40);
  for (const c of cases) {
    const answer = await door.receive(c.text);
    const callId = callIdOf(c.text);
    if (callId === undefined) {
      assert.equal(answer, null, c.name);
      continue;
    }
    const a = parseAnswer(answer);
    assert.ok(a.ok, `${c.name}: the door sent an invalid answer`);
    assert.deepEqual([a.value.callId, a.value.refused], [callId, c.want === "ok" ? "unattributed-call" : c.want], c.name);
  }
  for (const notJSON of ["not json", "", new Uint8Array([0xff]), { toJSON: () => undefined }, { n: 1n }]) {
    assert.equal(await door.receive(notJSON), null);
  }
  const cycle = {};
  cycle.self = cycle;
  assert.equal(await door.receive(cycle), null);
});

test("a lookup that throws is exec-threw; one that answers null is unattributed-call; an async one is awaited", async () => {
  const call = { v: 1, callId: "b_1", ...readNotes() };
  const refusedBy = async (lookup) => parseAnswer(await createExecutorDoor({ lookup, exec: () => observe({}) }).receive(call)).value.refused;
  assert.equal(
    await refusedBy(() => {
      throw new Error("catalog gone");
    }),
    "exec-threw",
  );
  assert.equal(await refusedBy(() => null), "unattributed-call");
  assert.equal(await refusedBy(async (id) => admitted.get(id)), undefined);
});

test("with the peer not connected, ask refuses at once by peer and sends nothing", async () => {
  for (const [peer, rule] of [
    ["page", "no-page"],
    ["machine", "machine-unreachable"],
  ]) {
    const p = pipe(never, { peer });
    p.up = false;
    const a = await p.channel.ask(readNotes());
    assert.deepEqual(a, { v: 1, callId: a.callId, ok: false, refused: rule, why: a.why });
    assert.equal(p.sent.length, 0);
    assert.equal(p.channel.waiting(), 0);
  }
  const throwing = createChannel({ peer: "page", timeoutMs: 1, connected: () => assert.fail("x"), send: never });
  assert.equal((await throwing.ask(readNotes())).refused, "no-page");
});

test("a call with no answer settles page-timeout / machine-timeout at timeoutMs; a late answer is unknown-call", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  for (const [peer, rule] of [
    ["page", "page-timeout"],
    ["machine", "machine-timeout"],
  ]) {
    const sent = [];
    const channel = createChannel({ peer, timeoutMs: 500, connected: () => true, send: (text) => sent.push(text) });
    let answer;
    const asked = channel.ask(readNotes()).then((a) => (answer = a));
    const shorter = channel.ask(readNotes(), { timeoutMs: 100 });
    t.mock.timers.tick(100);
    assert.equal((await shorter).refused, rule);
    t.mock.timers.tick(399);
    await new Promise((r) => setImmediate(r));
    assert.equal(answer, undefined, "settled before timeoutMs");
    assert.equal(channel.waiting(), 1);
    t.mock.timers.tick(1);
    await asked;
    assert.deepEqual([answer.refused, channel.waiting()], [rule, 0]);
    const late = JSON.stringify({ v: 1, callId: parseCall(sent[0]).value.callId, ok: true, observed: {} });
    assert.deepEqual(channel.deliver(late), { delivered: false, refused: UNKNOWN_CALL, why: "no call awaits this callId" });
  }
});

test("a caller's abort settles its call as timed out", async () => {
  const channel = createChannel({ peer: "machine", timeoutMs: 60_000, connected: () => true, send: () => {} });
  const stop = new AbortController();
  const asked = channel.ask(readNotes(), { signal: stop.signal });
  stop.abort();
  assert.equal((await asked).refused, "machine-timeout");
  assert.equal((await channel.ask(readNotes(), { signal: stop.signal })).refused, "machine-timeout");
  assert.equal(channel.waiting(), 0);
});

test("abandon settles every call in flight page-closed / machine-closed, and the channel asks again once connected", async () => {
  for (const [peer, rule] of [
    ["page", "page-closed"],
    ["machine", "machine-closed"],
  ]) {
    let release;
    const gate = new Promise((r) => (release = r));
    const p = pipe(() => gate.then(() => observe({ late: true })), { peer });
    const inFlight = [p.channel.ask(readNotes()), p.channel.ask(readNotes())];
    assert.equal(p.channel.waiting(), 2);
    p.up = false;
    p.channel.abandon();
    assert.deepEqual((await Promise.all(inFlight)).map((a) => a.refused), [rule, rule]);
    release();
    await Promise.all(p.pending);
    assert.deepEqual(p.deliveries.map((d) => d.refused), [UNKNOWN_CALL, UNKNOWN_CALL], "the answers of abandoned calls settle nothing");
    assert.equal((await p.channel.ask(readNotes())).refused, peer === "page" ? "no-page" : "machine-unreachable");
    p.up = true;
    assert.deepEqual((await p.channel.ask(readNotes())).observed, { late: true });
  }
});

test("a send that throws or rejects settles the call closed", async () => {
  const throws = createChannel({ peer: "page", timeoutMs: 60_000, connected: () => true, send: () => assert.fail("socket gone") });
  assert.equal((await throws.ask(readNotes())).refused, "page-closed");
  const rejects = createChannel({ peer: "machine", timeoutMs: 60_000, connected: () => true, send: () => Promise.reject(new Error("gone")) });
  assert.equal((await rejects.ask(readNotes())).refused, "machine-closed");
  assert.equal(rejects.waiting(), 0);
});

test("a transport that answers from inside send settles the call", async () => {
  const channel = createChannel({
    peer: "page",
    timeoutMs: 60_000,
    connected: () => true,
    send: (text) => assert.deepEqual(channel.deliver(JSON.stringify({ v: 1, callId: parseCall(text).value.callId, ok: true, observed: { at: "send" } })), { delivered: true }),
  });
  assert.deepEqual((await channel.ask(readNotes())).observed, { at: "send" });
});

test("no golden answer that fails validation settles the call it names; a valid one does", async () => {
  const sent = [];
  const channel = createChannel({ peer: "page", timeoutMs: 60_000, connected: () => true, send: (text) => sent.push(text) });
  const cases = golden("answer");
  assert.ok(cases.some((c) => c.want === "unknown-field") && cases.some((c) => c.want === "malformed"));
  for (const c of cases) {
    // The call echoes bounds whose maxRequests a valid answer's budget
    // agrees with, so that only validation decides.
    const limit = parseAnswer(c.text).value?.budget?.requestsLimit;
    const asked = channel.ask({ ...fetchUrl(), boundsEcho: { ...web.bounds, maxRequests: limit ?? web.bounds.maxRequests } });
    const callId = parseCall(sent.at(-1)).value.callId;
    const text = c.text.replaceAll('"callId":"c"', `"callId":"${callId}"`);
    const got = channel.deliver(text);
    if (c.want === "ok") {
      assert.deepEqual(got, { delivered: true }, c.name);
      assert.deepEqual(await asked, { ...parseAnswer(text).value }, c.name);
      continue;
    }
    assert.deepEqual(got, { delivered: false, refused: c.want, why: got.why }, c.name);
    assert.equal(channel.waiting(), 1, `${c.name} settled the call`);
    assert.equal(channel.deliver(JSON.stringify({ v: 1, callId, ok: true, observed: { after: c.name } })).delivered, true);
    assert.deepEqual((await asked).observed, { after: c.name }, c.name);
  }
});

test("an answer whose budget the echoed bounds contradict settles nothing; one over maxOutputBytes settles output-too-large", async () => {
  const sent = [];
  const channel = createChannel({ peer: "machine", timeoutMs: 60_000, connected: () => true, send: (text) => sent.push(text) });
  const asked = channel.ask(fetchUrl());
  const callId = parseCall(sent[0]).value.callId;
  const answer = (observed, budget) => JSON.stringify({ v: 1, callId, ok: true, observed, budget });
  for (const budget of [
    { requestsUsed: 1, requestsLimit: 9 },
    { requestsUsed: 5, requestsLimit: 4 },
    { requestsUsed: 0, requestsLimit: 0 },
  ]) {
    assert.deepEqual(channel.deliver(answer({}, budget)), { delivered: false, refused: BUDGET_MISMATCH, why: "the budget contradicts the bounds the call echoed" });
  }
  assert.equal(channel.waiting(), 1);
  assert.deepEqual(channel.deliver(answer({ text: "x".repeat(web.bounds.maxOutputBytes) }, { requestsUsed: 3, requestsLimit: 4 })), { delivered: true });
  const a = await asked;
  assert.deepEqual([a.callId, a.refused, a.budget], [callId, "output-too-large", { requestsUsed: 3, requestsLimit: 4 }]);
  const max = web.bounds.maxOutputBytes;
  assert.equal(a.why, `the tool's output was ${max + 11} bytes, over bounds.maxOutputBytes ${max}`);
});

test("ask refuses overloaded past maxInflight, and rejects a call the broker would refuse with WireError, sending nothing", async () => {
  const sent = [];
  const channel = createChannel({ peer: "page", timeoutMs: 60_000, maxInflight: 1, connected: () => true, send: (text) => sent.push(text) });
  void channel.ask(readNotes());
  assert.equal((await channel.ask(readNotes())).refused, "overloaded");
  await assert.rejects(channel.ask({ ...readNotes(), args: [] }), (e) => e instanceof WireError && e.rule === "malformed");
  await assert.rejects(channel.ask({ ...readNotes(), tool: "a\u202eb" }), WireError);
  assert.equal(sent.length, 1);
  channel.abandon();
  assert.throws(() => createChannel({ peer: "tab", timeoutMs: 1, connected: () => true, send: () => {} }), TypeError);
  assert.throws(() => createChannel({ peer: "page", timeoutMs: 0, connected: () => true, send: () => {} }), TypeError);
});

// ---------------------------------------------------------------------------
// The door behind a real broker: a page connection to /local/channel with
// the view cookie and the broker's own Origin, whose frames the door
// answers, and calls posted to /v1/calls.

const bin = process.env.AIRLOCK_BIN;
const skip = bin ? false : "AIRLOCK_BIN is not set (go test ./broker/jsclient sets it)";
const token = "jsclient-channel-test-launch-token-2e90b1";

test("the executor door answers a real broker's calls over a page connection", { skip, timeout: 60_000 }, async (t) => {
  const broker = await startPageBroker(bin, token);
  t.after(() => broker.stop());
  const auth = { "X-Tensorviz-Token": token };
  const pass = await broker.viewCookie();
  const ws = new WebSocket(`ws://127.0.0.1:${broker.port}/local/channel`, viewProtocols(pass.viewKey), { origin: broker.origin, headers: { Cookie: pass.cookie } });
  t.after(() => ws.terminate());
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });

  // The page admits the bundled notes descriptor (the broker serves no
  // plugin of its own here), then looks calls up in what /v1/tools lists.
  const { executor, ...entry } = notes;
  ws.send(JSON.stringify({ type: "catalog", descriptors: [entry] }));
  let listed;
  await until(async () => {
    const res = await broker.http("GET", "/v1/tools", { headers: auth });
    listed = JSON.parse(res.text).descriptors.find((d) => d.descriptorId === "notes");
    return listed?.executor === "page";
  }, "the page's catalog in /v1/tools");
  assert.equal(executor, "local");
  assert.deepEqual(listed.bounds, notes.bounds);

  const door = createExecutorDoor({
    lookup: (id) => (id === listed.descriptorId ? listed : undefined),
    exec: (call) => {
      if (call.args.path === "boom.md") throw new Error("secret-in-exception");
      if (call.args.path === "far.md") return refuse("host-not-allowed", "far.md is not local", { requestsUsed: 0, requestsLimit: 0 });
      return observe({ path: call.args.path, text: "# Welcome" });
    },
  });
  ws.on("message", async (data) => {
    const answer = await door.receive(data.toString());
    if (answer !== null) ws.send(answer);
  });

  const call = async (path) => {
    const res = await broker.http("POST", "/v1/calls", { headers: auth, body: { v: 1, callId: `call-${path}`, tool: "read_notes", descriptorId: "notes", args: { path }, boundsEcho: listed.bounds } });
    assert.equal(res.status, 200, res.text);
    return JSON.parse(res.text);
  };
  assert.deepEqual(await call("welcome.md"), { v: 1, callId: "call-welcome.md", ok: true, observed: { path: "welcome.md", text: "# Welcome" } });
  const threw = await call("boom.md");
  assert.deepEqual([threw.refused, threw.why], ["exec-threw", "the tool failed"]);
  assert.doesNotMatch(JSON.stringify(threw), /secret/);
  const far = await call("far.md");
  assert.deepEqual([far.refused, far.why, far.budget], ["host-not-allowed", "far.md is not local", { requestsUsed: 0, requestsLimit: 0 }]);
});

// The channel in the broker's place: `airlock env` serving the bundled
// notes plugin connects to a /channel this test serves, says hello, sends
// the catalog it admitted, and answers what the channel asks.
test("the channel asks a real environment's Go executor and is told every refusal by name", { skip, timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "jschannel-env-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(repo("plugins/bundled/notes/plugin.json"), join(dir, "plugins", "notes", "plugin.json"));
  cpSync(repo("plugins/bundled/notes/notes.wasm"), join(dir, "plugins", "notes", "notes.wasm"));

  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, path: "/channel" });
  t.after(() => new Promise((r) => server.close(r)));
  await new Promise((r) => server.once("listening", r));
  const peer = new Promise((resolve) => server.once("connection", resolve));

  const env = spawn(bin, ["env", "--broker", `ws://127.0.0.1:${server.address().port}/channel`, "--plugins", join(dir, "plugins"),
    "--root", `notes=${repo("plugins/bundled/samplenotes")}`, "--data", join(dir, "data")], {
    env: { PATH: process.env.PATH, HOME: dir, AIRLOCK_BEARER: "vbx_jschannel_test_bearer" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise((resolve) => env.once("exit", (code) => resolve(code)));
  t.after(async () => {
    env.kill("SIGTERM");
    await exited;
  });
  env.stderr.resume();
  createInterface({ input: env.stdout }).on("line", () => {});

  const ws = await peer;
  let channel;
  const frames = [];
  const control = [];
  ws.on("message", (data) => {
    const text = data.toString();
    if (/^\{"type":/.test(text)) control.push(JSON.parse(text));
    else frames.push(channel.deliver(text));
  });
  const closed = new Promise((r) => ws.once("close", r));
  channel = createChannel({ peer: "machine", timeoutMs: 30_000, connected: () => ws.readyState === WebSocket.OPEN, send: (text) => ws.send(text) });
  ws.once("close", () => channel.abandon());

  await until(() => control.length >= 2, "the environment's hello and catalog");
  assert.deepEqual(control[0], { type: "hello", role: "environment", bearer: "vbx_jschannel_test_bearer" });
  assert.equal(control[1].type, "catalog");
  const [admittedThere] = control[1].descriptors;
  assert.deepEqual(admittedThere, { descriptorId: "notes", tools: notes.tools, bounds: notes.bounds }, "the environment admits what /v1/tools lists, without executor");

  const ask = (tool, args, boundsEcho = admittedThere.bounds) => channel.ask({ tool, descriptorId: "notes", args, boundsEcho });
  const read = await ask("read_notes", { path: "welcome.md" });
  assert.equal(read.ok, true, JSON.stringify(read));
  assert.equal(read.observed.path, "welcome.md");
  assert.equal(read.observed.text, readFileSync(repo("plugins/bundled/samplenotes/welcome.md"), "utf8"));
  assert.equal((await ask("read_notes", {})).refused, "args-invalid");
  assert.equal((await ask("write_notes", {})).refused, "unknown-tool");
  assert.equal((await ask("read_notes", { path: "welcome.md" }, { ...admittedThere.bounds, timeoutMs: 1 })).refused, "bounds-mismatch");
  assert.equal((await channel.ask({ tool: "read_notes", descriptorId: "web", args: {}, boundsEcho: web.bounds })).refused, "unattributed-call");
  assert.ok(frames.every((f) => f.delivered), JSON.stringify(frames));

  env.kill("SIGTERM");
  assert.equal(await exited, 0, "airlock env did not exit 0 on SIGTERM");
  await closed;
  assert.equal((await ask("list_notes", {})).refused, "machine-unreachable");
});
