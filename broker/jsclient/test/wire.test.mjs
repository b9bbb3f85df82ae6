// The wire module's own behaviour. Verdict parity with the broker over
// thousands of inputs is parity.test.mjs's job; these pin the API.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as wire from "../dist/wire.js";

const call = { callId: "c1", tool: "read_notes", descriptorId: "notes", args: { path: "a.md" }, boundsEcho: { timeoutMs: 2000 } };

test("encodeCall and parseCall round-trip in the broker's key order", () => {
  const text = wire.encodeCall(call);
  assert.equal(text, '{"v":1,"callId":"c1","tool":"read_notes","descriptorId":"notes","args":{"path":"a.md"},"boundsEcho":{"timeoutMs":2000}}');
  assert.deepEqual(wire.parseCall(text), { ok: true, value: { v: 1, ...call } });
  assert.deepEqual(wire.parseCall(new TextEncoder().encode(text)), { ok: true, value: { v: 1, ...call } });
});

test("encodeAnswer writes both shapes and fills a refusal's why", () => {
  assert.equal(wire.encodeAnswer({ callId: "c", ok: true, observed: { x: 1 } }), '{"v":1,"callId":"c","ok":true,"observed":{"x":1}}');
  const r = wire.encodeAnswer({ callId: "c", ok: false, refused: wire.BUDGET_EXHAUSTED, budget: { requestsUsed: 1, requestsLimit: 1 } });
  assert.equal(r, '{"v":1,"callId":"c","ok":false,"refused":"budget-exhausted","why":"the tool made more fetches than bounds.maxRequests","budget":{"requestsUsed":1,"requestsLimit":1}}');
  assert.deepEqual(wire.parseAnswer(r).value.budget, { requestsUsed: 1, requestsLimit: 1 });
});

test("the encoders refuse what the broker would refuse", () => {
  for (const bad of [{ ...call, callId: "" }, { ...call, tool: "a\u202eb" }, { ...call, args: [] }, { ...call, args: { k: 1, K: 2 } }]) {
    assert.throws(() => wire.encodeCall(bad), (e) => e instanceof wire.WireError && e.rule === wire.MALFORMED);
  }
  assert.throws(() => wire.encodeAnswer({ callId: "c", ok: false, refused: "allow" }), wire.WireError);
  assert.throws(() => wire.encodeAnswer({ callId: "c", ok: true, observed: null }), wire.WireError);
});

test("the order of checks: malformed, then version-mismatch, then unknown-field, then malformed", () => {
  assert.equal(wire.parseCall('{"v":2,"grant":1}').rule, wire.VERSION_MISMATCH);
  assert.equal(wire.parseCall('{"v":1.0}').rule, wire.VERSION_MISMATCH);
  assert.equal(wire.parseCall('{"v":"1","grant":1}').rule, wire.UNKNOWN_FIELD);
  assert.equal(wire.parseCall('{"v":1}').rule, wire.MALFORMED);
  assert.equal(wire.parseCall('{"v":2,"v":2}').rule, wire.MALFORMED);
  assert.equal(wire.parseAnswer('{"v":1,"callId":"c","ok":true,"observed":{},"budget":{"x":1}}').rule, wire.UNKNOWN_FIELD);
});

test("keys equal under the broker's fold are duplicates at any depth", () => {
  const withArgs = (args) => `{"v":1,"callId":"c","tool":"t","descriptorId":"d","args":${args},"boundsEcho":{}}`;
  for (const [a, b] of [["k", "\u212a"], ["s", "\u017f"], ["σ", "ς"], ["ß", "ẞ"], ["\\ud800", "\\udc00"], ["K", "\\u006b"]]) {
    assert.equal(wire.parseCall(withArgs(`{"x":[{"${a}":1,"${b}":2}]}`)).rule, wire.MALFORMED, `${a} ${b}`);
  }
  for (const [a, b] of [["ss", "ß"], ["i", "İ"], ["i", "ı"]]) {
    assert.equal(wire.parseCall(withArgs(`{"${a}":1,"${b}":2}`)).ok, true, `${a} ${b}`);
  }
  assert.equal(wire.foldString("k\u212aſσς"), "KKSΣΣ");
  assert.equal(wire.UNICODE_VERSION, "15.0.0");
});

test("text that no UTF-8 can carry is malformed", () => {
  const text = wire.encodeCall(call);
  assert.equal(wire.parseCall(text.replace("c1", "c\ud800")).rule, wire.MALFORMED); // a lone surrogate in a string
  assert.equal(wire.parseCall(new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(text)])).rule, wire.MALFORMED); // a BOM is not white space
  assert.equal(wire.parseCall(new Uint8Array([0x7b, 0xff, 0x7d])).rule, wire.MALFORMED);
  assert.equal(wire.walk("[1,2]"), true);
  assert.equal(wire.walk("[".repeat(wire.MAX_DEPTH + 1) + "]".repeat(wire.MAX_DEPTH + 1)), false);
});

test("callIdOf reads the id of a refused call when it can", () => {
  assert.equal(wire.callIdOf('{"v":1,"callId":"abc","grant":1}'), "abc");
  assert.equal(wire.callIdOf('{"v":1,"callId":7}'), undefined);
  assert.equal(wire.callIdOf("{"), undefined);
});

test("the vocabulary is the broker's", () => {
  assert.equal(wire.RULES.length, 24);
  assert.ok(wire.RULES.every((r) => wire.isRule(r) && wire.WHY[r].length > 0));
  assert.equal(wire.isRule("allow"), false);
  assert.equal(wire.PROTOCOL_VERSION, 1);
});

test("random mutations never throw, and what JSON.parse refuses the scan refuses", () => {
  let seed = 12;
  const rand = (n) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  const seeds = [wire.encodeCall(call), '{"v":1,"callId":"c","ok":false,"refused":"fetch-failed","why":"w","budget":{"requestsUsed":0,"requestsLimit":1}}'];
  const alphabet = '{}[]":,\\0123456789-+.eEtrufalsn \t\n\u0000\u001f\u00e9\u212a\ud800\udc00kK';
  for (let i = 0; i < 20000; i++) {
    const chars = [...seeds[i % 2]];
    for (let k = 0; k <= rand(3); k++) {
      const at = rand(chars.length + 1);
      if (rand(2) === 0) chars.splice(at, 1);
      else chars.splice(at, 0, alphabet[rand(alphabet.length)]);
    }
    const text = chars.join("");
    for (const v of [wire.parseCall(text), wire.parseAnswer(text)]) {
      assert.ok(v.ok || wire.isRule(v.rule), text);
    }
    let parses = true;
    try {
      JSON.parse(text);
    } catch {
      parses = false;
    }
    if (!parses) assert.equal(wire.walk(text), false, text);
  }
});
