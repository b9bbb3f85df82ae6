// Throughput of wire.parseCall and wire.parseAnswer against JSON.parse
// alone on the same texts, at several sizes. Run from broker/jsclient:
//
//   node bench/parse.mjs [seconds per measurement, default 0.2]
//
// It prints one line per case: the size, MB/s for JSON.parse and for the
// wire parser, and the ratio (wire time / JSON.parse time) as the median
// of seven rounds with its range. The wire
// parser does more than JSON.parse (the strict scan of PROTOCOL sections
// 1.7 and 5, then JSON.parse of args and boundsEcho), so a ratio above 1
// is expected; the README records a run.
import { encodeAnswer, encodeCall, parseAnswer, parseCall } from "../dist/wire.js";

const seconds = Number(process.argv[2] ?? 0.2);

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

// Each case is measured in rounds, JSON.parse and wire back to back, and
// the median ratio of the rounds is reported with its range, so a burst of
// load on a shared machine moves one round, not the figure.
const rounds = 7;
console.log(`node ${process.version}, ${rounds} rounds of ${seconds}s per parser per case`);
console.log("case               size      JSON.parse     wire        ratio (median, range)");
for (const [name, text, parse] of cases) {
  if (!parse(text).ok) throw new Error(`${name}: not accepted`);
  time(JSON.parse, text); // warm up both
  time(parse, text);
  const ratios = [];
  const bases = [];
  const wires = [];
  for (let r = 0; r < rounds; r++) {
    const base = time(JSON.parse, text);
    const wire = time(parse, text);
    bases.push(base);
    wires.push(wire);
    ratios.push(wire / base);
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const mb = (s) => `${(text.length / s / 1e6).toFixed(0).padStart(6)} MB/s`;
  const sorted = [...ratios].sort((a, b) => a - b);
  console.log(
    `${name.padEnd(18)} ${String(text.length).padStart(8)}  ${mb(median(bases))}  ${mb(median(wires))}  ${median(ratios).toFixed(2)}x (${sorted[0].toFixed(2)}–${sorted.at(-1).toFixed(2)})`,
  );
}
