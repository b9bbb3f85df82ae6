// Throughput of wire.parseCall and wire.parseAnswer against JSON.parse
// alone on the same texts, at several sizes. Run from broker/jsclient:
//
//   node bench/parse.mjs [seconds per case, default 0.5]
//
// It prints one line per case: the size, MB/s for JSON.parse and for the
// wire parser, and the ratio (wire time / JSON.parse time). The wire
// parser does more than JSON.parse (the strict scan of PROTOCOL sections
// 1.7 and 5, then JSON.parse of args and boundsEcho), so a ratio above 1
// is expected; the README records a run.
import { encodeAnswer, encodeCall, parseAnswer, parseCall } from "../dist/wire.js";

const seconds = Number(process.argv[2] ?? 0.5);

function args(n) {
  const a = {};
  for (let i = 0; i < n; i++) {
    a[`field_${i}`] = { name: `item ${i}`, tags: ["a", "b", "ünïcode"], score: i * 1.5, nested: { ok: i % 2 === 0, n: null } };
  }
  return a;
}

const bounds = { timeoutMs: 2000, memoryMiB: 64, maxOutputBytes: 1048576, maxRequests: 0, allowedHosts: [], roots: ["notes"] };
const cases = [
  ["call, small", encodeCall({ callId: "call_1", tool: "read_notes", descriptorId: "notes", args: { path: "a.md" }, boundsEcho: bounds }), parseCall],
  ["call, 10 args", encodeCall({ callId: "call_1", tool: "t", descriptorId: "d", args: args(10), boundsEcho: bounds }), parseCall],
  ["call, 1000 args", encodeCall({ callId: "call_1", tool: "t", descriptorId: "d", args: args(1000), boundsEcho: bounds }), parseCall],
  ["answer, 1 MB text", encodeAnswer({ callId: "call_1", ok: true, observed: { text: "lorem ipsum dolor ".repeat(58000) } }), parseAnswer],
];

function time(fn, text) {
  let n = 0;
  const start = process.hrtime.bigint();
  const until = start + BigInt(Math.round(seconds * 1e9));
  let now = start;
  while (now < until) {
    for (let i = 0; i < 16; i++) fn(text);
    n += 16;
    now = process.hrtime.bigint();
  }
  return Number(now - start) / 1e9 / n; // seconds per parse
}

console.log(`node ${process.version}, ${seconds}s per measurement`);
console.log("case               size      JSON.parse     wire        ratio");
for (const [name, text, parse] of cases) {
  if (!parse(text).ok) throw new Error(`${name}: not accepted`);
  time(JSON.parse, text); // warm up both
  time(parse, text);
  const base = time(JSON.parse, text);
  const wire = time(parse, text);
  const mb = (s) => `${(text.length / s / 1e6).toFixed(0).padStart(6)} MB/s`;
  console.log(`${name.padEnd(18)} ${String(text.length).padStart(8)}  ${mb(base)}  ${mb(wire)}  ${(wire / base).toFixed(2)}x`);
}
