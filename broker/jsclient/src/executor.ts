// What every executor door of @airlock/client does with one call, whatever
// carries it (PROTOCOL sections 5 and 6): read it with wire's validator,
// re-check it against the descriptor it names, run the handler under
// containment and the descriptor's time bound, and encode the answer held
// to the descriptor's bounds. The WebSocket door (door.ts) and the
// transport-free door of the channel module (channel.ts) are both built on
// it; it is not a module of the package's own.

import {
  BOUNDS_MISMATCH,
  EXEC_THREW,
  EXEC_TIMEOUT,
  MAX_CALL_BYTES,
  MAX_OUTPUT_BYTES,
  OUTPUT_TOO_LARGE,
  UNATTRIBUTED_CALL,
  UNKNOWN_TOOL,
  WHY,
  callIdOf,
  encodeAnswer,
  parseCall,
  type AnswerInit,
  type Budget,
  type Call,
  type JSONObject,
  type Rule,
  type WireInput,
} from "./wire.js";

// The descriptor types are the ones generated from the contract's JSON
// Schema (schemas/channel.schema.json), so a catalog cannot drift from
// what the broker accepts.
import type { Bounds, Descriptor, Tool } from "./generated/channel.js";
export type { Bounds, Descriptor, Tool };

/** What a handler returns: an observation or a refusal (use observe and
 * refuse). The door fills in v and the call's callId. */
export type HandlerResult =
  | { ok: true; observed: JSONObject; budget?: Budget }
  | { ok: false; refused: Rule; why?: string; budget?: Budget };

/** What a handler is told besides the call. */
export interface CallContext {
  /** Aborted when the call's time (bounds.timeoutMs) is up, when the
   * connection that carried it is gone, or when the door closes. */
  signal: AbortSignal;
  /** The descriptor the call is for, as the broker encodes it. */
  descriptor: Descriptor;
}

/** A handler answers one call; it may throw or reject (exec-threw). */
export type Handler = (call: Call, ctx: CallContext) => HandlerResult | Promise<HandlerResult>;

/** observe builds an observation. */
export function observe(observed: JSONObject, budget?: Budget): HandlerResult {
  return budget === undefined ? { ok: true, observed } : { ok: true, observed, budget };
}

/** refuse builds a refusal; why defaults to the rule's static text. */
export function refuse(rule: Rule, why?: string, budget?: Budget): HandlerResult {
  const r: HandlerResult = { ok: false, refused: rule };
  if (why !== undefined) r.why = why;
  if (budget !== undefined) r.budget = budget;
  return r;
}

// maxCallFrame bounds a call from the broker: a call body is capped at
// MAX_CALL_BYTES on POST /v1/calls, plus the envelope (envclient's
// maxCallFrame). maxAnswerFrame is the broker's bound on a peer's frame.
const maxCallFrame = MAX_CALL_BYTES + 4096;
const maxAnswerFrame = MAX_OUTPUT_BYTES + (1 << 20);

/** What readCall made of one inbound frame: a valid call, a refusal to
 * answer under the callId it carries, or nothing to answer (no callId
 * could be read, or the frame is over the bound of a call). */
export type Inbound =
  | { call: Call }
  | { callId: string; refused: Rule }
  | { dropped: "too-large" | "unreadable" };

/** readCall reads one inbound call: text or its UTF-8 bytes, or a value
 * already parsed, which is judged as its JSON text (the one validator,
 * wire's parseCall, decides either way). As link.Door.Handle: a call that
 * fails is refused under its callId when one can be read, else dropped. */
export function readCall(input: WireInput | object): Inbound {
  let text: WireInput;
  if (typeof input === "string" || input instanceof Uint8Array) {
    text = input;
  } else {
    let s: string | undefined;
    try {
      s = JSON.stringify(input);
    } catch {
      s = undefined; // a cycle or a BigInt: not JSON
    }
    if (s === undefined) return { dropped: "unreadable" };
    text = s;
  }
  const size = typeof text === "string" ? (text.length > maxCallFrame / 3 ? utf8Length(text) : 0) : text.length;
  if (size > maxCallFrame) return { dropped: "too-large" };
  const verdict = parseCall(text);
  if (verdict.ok) return { call: verdict.value };
  const callId = callIdOf(text);
  return callId === undefined ? { dropped: "unreadable" } : { callId, refused: verdict.rule };
}

/** admit is the refusal an executor makes before running call for d (the
 * descriptor its lookup gave for call.descriptorId), or undefined: the
 * descriptor must be admitted here (unattributed-call), echoed exactly
 * (bounds-mismatch, compared as canonical JSON of the bounds as the
 * broker encodes them) and declare the tool (unknown-tool, whose why
 * names the tool and the descriptor). */
export function admit(call: Call, d: Descriptor | undefined): HandlerResult | undefined {
  if (d === undefined) return refuse(UNATTRIBUTED_CALL);
  if (canonical(call.boundsEcho) !== canonical(normalizeBounds(d.bounds))) return refuse(BOUNDS_MISMATCH);
  if (!d.tools.some((t) => t.name === call.tool)) return refuse(UNKNOWN_TOOL, unknownToolWhy(call.tool, d.descriptorId));
  return undefined;
}

// The whys of refusals a bound decides, as executors/wire builds them
// (boundwhy.go) for the broker's own executors: the bound's key in
// plugin.json with its value, and what the call reached where known.

// maxNameInWhy bounds a caller's tool name quoted in a why, in UTF-8
// bytes (wire's maxNameInWhy).
const maxNameInWhy = 64;

/** outputWhy is output-too-large's why: the observation was size bytes
 * compacted (0: not known), over maxOutputBytes. */
export function outputWhy(size: number, maxOutputBytes: number): string {
  if (size <= 0) return `the tool's output was more than ${maxOutputBytes} bytes (bounds.maxOutputBytes)`;
  return `the tool's output was ${size} bytes, over bounds.maxOutputBytes ${maxOutputBytes}`;
}

/** timeoutWhy is exec-timeout's why. */
export function timeoutWhy(timeoutMs: number): string {
  return `the tool ran past bounds.timeoutMs ${timeoutMs} ms`;
}

/** unknownToolWhy is unknown-tool's why: the tool asked for (a valid
 * call's id, so clean already), cut to maxNameInWhy bytes on a code
 * point, and the descriptor that does not declare it. */
export function unknownToolWhy(tool: string, descriptorId: string): string {
  let cut = "";
  let n = 0;
  for (const ch of tool) {
    n += utf8Length(ch);
    if (n > maxNameInWhy) break;
    cut += ch;
  }
  return `the descriptor "${descriptorId}" declares no tool "${cut}"`;
}

/** contain runs handler for an admitted call and settles with its result,
 * or exec-threw when it throws, rejects or is cut off (signal aborted:
 * its connection or its door is gone), or exec-timeout at
 * d.bounds.timeoutMs, whatever the handler does. The handler's own signal
 * is aborted once the call is settled. */
export async function contain(handler: Handler, call: Call, d: Descriptor, signal?: AbortSignal): Promise<HandlerResult> {
  const ctl = new AbortController();
  const cutOff = () => ctl.abort(new Error("call cut off"));
  if (signal?.aborted) return refuse(EXEC_THREW);
  signal?.addEventListener("abort", cutOff, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const cut = new Promise<HandlerResult>((resolve) => {
    timer = setTimeout(() => resolve(refuse(EXEC_TIMEOUT, timeoutWhy(d.bounds.timeoutMs))), d.bounds.timeoutMs);
    ctl.signal.addEventListener("abort", () => resolve(refuse(EXEC_THREW)), { once: true });
  });
  try {
    const ran = Promise.resolve().then(() => (ctl.signal.aborted ? refuse(EXEC_THREW) : handler(call, { signal: ctl.signal, descriptor: d })));
    return await Promise.race([ran, cut]);
  } catch {
    return refuse(EXEC_THREW);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", cutOff);
    ctl.abort(new Error("call settled"));
  }
}

/** An encoded answer and what it says. */
export interface Encoded {
  text: string;
  outcome: "ok" | Rule;
}

/** encode encodes r as the answer to callId. An answer that would not
 * pass the broker's validator, or whose budget contradicts bounds, is
 * exec-threw; an observation over bounds.maxOutputBytes is
 * output-too-large (keeping its budget): the refusal the broker would
 * settle the call with, so the caller learns at once. */
export function encode(callId: string, r: HandlerResult, bounds?: Bounds): Encoded {
  let text: string;
  try {
    if (r === null || typeof r !== "object" || typeof r.ok !== "boolean") throw new TypeError("not a result");
    if (r.budget !== undefined && bounds !== undefined && !budgetAgrees(r.budget, bounds)) throw new TypeError("budget");
    const init: AnswerInit = r.ok
      ? { callId, ok: true, observed: r.observed, ...(r.budget ? { budget: r.budget } : {}) }
      : { callId, ok: false, refused: r.refused, ...(r.why !== undefined ? { why: r.why } : {}), ...(r.budget ? { budget: r.budget } : {}) };
    text = encodeAnswer(init);
    if (r.ok && bounds !== undefined && !outputFits(r.observed, bounds)) {
      return encode(callId, refuse(OUTPUT_TOO_LARGE, outputWhy(outputBytes(r.observed), bounds.maxOutputBytes), r.budget), bounds);
    }
    if (utf8Length(text) > maxAnswerFrame) return encode(callId, refuse(OUTPUT_TOO_LARGE, outputWhy(0, bounds?.maxOutputBytes ?? MAX_OUTPUT_BYTES)), bounds);
    return { text, outcome: r.ok ? "ok" : r.refused };
  } catch {
    return { text: encodeAnswer({ callId, ok: false, refused: EXEC_THREW, why: WHY[EXEC_THREW] }), outcome: EXEC_THREW };
  }
}

/** budgetAgrees is executors/wire Bounds.BudgetAgrees: a budget whose
 * requestsLimit is not maxRequests, or whose requestsUsed is over it, is
 * a lie about the call's fetches; the broker treats it as an invalid
 * frame. */
export function budgetAgrees(b: Budget, bounds: Partial<Pick<Bounds, "maxRequests">>): boolean {
  return b.requestsLimit === (bounds.maxRequests ?? 0) && b.requestsUsed <= b.requestsLimit;
}

/** outputFits is executors/wire Bounds.OutputFits: observed, compacted,
 * is at most maxOutputBytes. */
export function outputFits(observed: JSONObject, bounds: Pick<Bounds, "maxOutputBytes">): boolean {
  return outputBytes(observed) <= bounds.maxOutputBytes;
}

/** outputBytes is the size of observed compacted, in UTF-8 bytes. */
export function outputBytes(observed: JSONObject): number {
  return utf8Length(JSON.stringify(observed));
}

/** normalize copies descriptors as the broker encodes them (Go's zero
 * values: an absent description is "", absent maxRequests 0, absent lists
 * empty lists; an outputSchema only when a tool declares one), which is
 * what boundsEcho echoes. */
export function normalize(ds: readonly Descriptor[]): Descriptor[] {
  return ds.map((d) => ({
    descriptorId: d.descriptorId,
    tools: d.tools.map((t) => ({
      name: t.name,
      description: t.description ?? "",
      inputSchema: t.inputSchema,
      ...(t.outputSchema === undefined ? {} : { outputSchema: t.outputSchema }),
    })) as Descriptor["tools"],
    bounds: normalizeBounds(d.bounds),
  }));
}

function normalizeBounds(b: Bounds): Required<Bounds> {
  return {
    timeoutMs: b.timeoutMs,
    memoryMiB: b.memoryMiB,
    maxOutputBytes: b.maxOutputBytes,
    maxRequests: b.maxRequests ?? 0,
    allowedHosts: [...(b.allowedHosts ?? [])],
    roots: [...(b.roots ?? [])],
  };
}

// canonical is JSON with object keys sorted, the comparison the broker
// uses for boundsEcho (wire.EchoCheck, in executors/wire).
function canonical(x: unknown): string {
  if (Array.isArray(x)) return `[${x.map(canonical).join(",")}]`;
  if (x !== null && typeof x === "object") {
    const o = x as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(",")}}`;
  }
  return JSON.stringify(x) ?? "null";
}

/** utf8Length is the number of bytes s takes in UTF-8. */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) {
      if (c < 0x800) n += 1;
      else if (c >= 0xd800 && c <= 0xdbff) i++, (n += 2); // a pair: 4 bytes for 2 units
      else n += 2;
    }
  }
  return n;
}
