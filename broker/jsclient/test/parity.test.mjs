// Verdict parity with the broker: run by broker/jsclient's TestWireParity,
// which writes every case (the input and Go's verdicts for it) to the file
// named by AIRLOCK_WIRE_CASES. Run alone, without that file, it skips.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseAnswer, parseCall } from "../dist/wire.js";

const path = process.env.AIRLOCK_WIRE_CASES;

// canonical is JSON with sorted keys, as Go writes a map.
function canonical(x) {
  if (Array.isArray(x)) return `[${x.map(canonical).join(",")}]`;
  if (x && typeof x === "object") {
    return `{${Object.keys(x).sort().map((k) => `${JSON.stringify(k)}:${canonical(x[k])}`).join(",")}}`;
  }
  return JSON.stringify(x);
}

function verdict(v) {
  return v.ok ? "ok" : v.rule;
}

// What Go read out of an accepted input, in the same shape.
function value(v) {
  if (!v.ok) return undefined;
  const x = v.value;
  if ("tool" in x) return { callId: x.callId, tool: x.tool, descriptorId: x.descriptorId };
  const out = { callId: x.callId, ok: x.ok };
  if (!x.ok) Object.assign(out, { refused: x.refused, why: x.why });
  if (x.budget) out.budget = x.budget;
  return out;
}

test("wire verdicts agree with the broker's", { skip: path ? false : "AIRLOCK_WIRE_CASES is not set" }, () => {
  const lines = readFileSync(path, "utf8").split("\n").filter(Boolean);
  const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const failures = [];
  for (const line of lines) {
    const c = JSON.parse(line);
    if (c.quoted.length > 400) c.quoted = `${c.quoted.slice(0, 200)}…${c.quoted.slice(-200)} (${c.quoted.length} characters quoted)`;
    const bytes = new Uint8Array(Buffer.from(c.in ?? "", "base64"));
    const inputs = [["bytes", bytes]];
    try {
      inputs.push(["string", strict.decode(bytes)]);
    } catch {
      // not UTF-8: only the bytes can be given
    }
    for (const [kind, input] of inputs) {
      const call = parseCall(input);
      const answer = parseAnswer(input);
      const got = { call: verdict(call), answer: verdict(answer) };
      if (got.call !== c.call || got.answer !== c.answer) {
        failures.push(`${c.quoted} (${kind}): call ${got.call}, answer ${got.answer}; Go says call ${c.call}, answer ${c.answer}`);
        continue;
      }
      const v = value(call.ok ? call : answer);
      if (c.value !== undefined && canonical(v) !== canonical(c.value)) {
        failures.push(`${c.quoted} (${kind}): read ${JSON.stringify(v)}; Go read ${JSON.stringify(c.value)}`);
      }
    }
  }
  assert.ok(lines.length > 0, "no cases");
  assert.deepEqual(failures.slice(0, 20), [], `${failures.length} of ${lines.length} inputs differ`);
  console.log(`verdicts agree on ${lines.length} inputs`);
});
