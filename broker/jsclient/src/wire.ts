// The wire module of @airlock/client: call and answer envelopes with
// exactly the broker's verdicts (PROTOCOL section 5, and the case-folding
// rule of section 1.7). Zero runtime dependencies: it runs in Node 20+,
// browsers and workers.
//
// The broker's validator (Go, executors/wire) is the oracle; a Go test runs
// every golden case and thousands of mutations of them through both and
// fails on any difference in verdict (broker/jsclient/parity_test.go). How
// the scanner is built: RATIONALE.md, "Why does the JavaScript wire module
// scan before JSON.parse?".

import { foldCodePoint } from "./fold.js";
import {
  MALFORMED,
  MAX_DEPTH,
  MAX_ID_LENGTH,
  RULES,
  UNKNOWN_FIELD,
  VERSION,
  VERSION_MISMATCH,
  WHY as WHY_OF,
  type Rule,
} from "./rules.js";

export * from "./rules.js";
export { UNICODE_VERSION } from "./fold.js";

/** The version every envelope carries in `v`. */
export const PROTOCOL_VERSION = VERSION;

/** A JSON object, as parsed. */
export type JSONObject = { [key: string]: unknown };

/** The fetch accounting of one call. */
export interface Budget {
  requestsUsed: number;
  requestsLimit: number;
}

/** A call envelope. */
export interface Call {
  v: 1;
  callId: string;
  tool: string;
  descriptorId: string;
  args: JSONObject;
  boundsEcho: JSONObject;
}

/** An answer that carries an observation. */
export interface ObservedAnswer {
  v: 1;
  callId: string;
  ok: true;
  observed: JSONObject;
  budget?: Budget;
}

/** An answer that refuses the call under a rule. */
export interface RefusedAnswer {
  v: 1;
  callId: string;
  ok: false;
  refused: Rule;
  why: string;
  budget?: Budget;
}

/** An answer envelope. */
export type Answer = ObservedAnswer | RefusedAnswer;

/** The verdict of parseCall or parseAnswer. */
export type Verdict<T> = { ok: true; value: T } | { ok: false; rule: Rule };

/** What parseCall and parseAnswer read: text, or its UTF-8 bytes. */
export type WireInput = string | Uint8Array;

/** WireError is thrown by encodeCall and encodeAnswer for a value that
 * would not pass the broker's validator; rule says why. */
export class WireError extends Error {
  readonly rule: Rule;
  constructor(rule: Rule, message: string) {
    super(message);
    this.name = "WireError";
    this.rule = rule;
  }
}

const KNOWN_RULES: ReadonlySet<string> = new Set<string>(RULES);

/** isRule reports whether s is a rule id of the vocabulary. */
export function isRule(s: unknown): s is Rule {
  return typeof s === "string" && KNOWN_RULES.has(s);
}

// ---------------------------------------------------------------------------
// The strict scan: one JSON value (RFC 8259), nothing after it but white
// space, nested at most MAX_DEPTH, no lone surrogate (the string form of
// "valid UTF-8"), and no object at any depth with two keys equal under the
// fold of PROTOCOL section 1.7. It mirrors executors/wire strict.go; every
// failure of it is `malformed`, so it only answers yes or no.

// smallObject is the number of keys up to which an object's folded keys
// are compared pairwise; past it they go into a Set, so an object with
// many keys costs linear time (strict.go does the same).
const smallObject = 16;

class Fail {}
const FAIL = new Fail();

/** One top-level member: its key (unescaped) and the span of its value. */
interface Member {
  key: string;
  start: number;
  end: number;
}

class Scanner {
  s = "";
  i = 0;
  depth = 0;
  dup = false;
  collect = false;
  // The keys of every open object, innermost last: the hash of each
  // key's fold and its span (quotes excluded).
  // n is the stack's height: arrays are overwritten, never shrunk
  // (setting an array's length is slow).
  hashes: number[] = [];
  starts: number[] = [];
  ends: number[] = [];
  n = 0;
  top: Member[] = [];
  isObject = false;

  reset(s: string, collect: boolean): void {
    this.s = s;
    this.i = 0;
    this.depth = 0;
    this.dup = false;
    this.collect = collect;
    this.n = 0;
    if (this.top.length > 0) this.top = [];
    this.isObject = false;
  }

  // document reports whether s passes the walk.
  document(): boolean {
    try {
      this.space();
      this.isObject = this.s.charCodeAt(this.i) === 0x7b;
      this.value();
      this.space();
      return this.i === this.s.length && !this.dup;
    } catch (e) {
      if (e === FAIL) return false;
      throw e;
    }
  }

  space(): void {
    const s = this.s;
    let i = this.i;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    }
    this.i = i;
  }

  value(): void {
    const c = this.s.charCodeAt(this.i);
    if (c === 0x7b) this.object();
    else if (c === 0x5b) this.array();
    else if (c === 0x22) this.valueString();
    else if (c === 0x74) this.literal("true");
    else if (c === 0x66) this.literal("false");
    else if (c === 0x6e) this.literal("null");
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) this.number();
    else throw FAIL;
  }

  open(): void {
    if (this.depth >= MAX_DEPTH) throw FAIL;
    this.depth++;
    this.i++;
    this.space();
  }

  object(): void {
    this.open();
    const s = this.s;
    const hashes = this.hashes;
    const base = this.n;
    let big: Set<string> | undefined;
    if (s.charCodeAt(this.i) === 0x7d) {
      this.i++;
      this.depth--;
      return;
    }
    for (;;) {
      if (s.charCodeAt(this.i) !== 0x22) throw FAIL;
      const kstart = this.i + 1;
      const h = this.key();
      const kend = this.i - 1;
      if (big !== undefined) {
        const f = this.fold(kstart, kend);
        if (big.has(f)) this.dup = true;
        else big.add(f);
      } else {
        const n = this.n;
        for (let j = base; j < n; j++) {
          // Equal folds hash equally; a hash match is confirmed on the folds.
          if (hashes[j] === h && this.fold(this.starts[j]!, this.ends[j]!) === this.fold(kstart, kend)) this.dup = true;
        }
        hashes[n] = h;
        this.starts[n] = kstart;
        this.ends[n] = kend;
        this.n = n + 1;
        if (n + 1 - base > smallObject) {
          big = new Set();
          for (let j = base; j <= n; j++) big.add(this.fold(this.starts[j]!, this.ends[j]!));
        }
      }
      this.space();
      if (s.charCodeAt(this.i) !== 0x3a) throw FAIL;
      this.i++;
      this.space();
      const start = this.i;
      this.value();
      if (this.collect && this.depth === 1) {
        this.top.push({ key: unescape(s, kstart, kend), start, end: this.i });
      }
      this.space();
      const c = s.charCodeAt(this.i);
      if (c === 0x2c) {
        this.i++;
        this.space();
        continue;
      }
      if (c === 0x7d) {
        this.i++;
        this.depth--;
        this.n = base;
        return;
      }
      throw FAIL;
    }
  }

  // fold is the fold of the (checked) key s[start:end].
  fold(start: number, end: number): string {
    return foldString(unescape(this.s, start, end));
  }

  array(): void {
    this.open();
    const s = this.s;
    if (s.charCodeAt(this.i) === 0x5d) {
      this.i++;
      this.depth--;
      return;
    }
    for (;;) {
      this.value();
      this.space();
      const c = s.charCodeAt(this.i);
      if (c === 0x2c) {
        this.i++;
        this.space();
        continue;
      }
      if (c === 0x5d) {
        this.i++;
        this.depth--;
        return;
      }
      throw FAIL;
    }
  }

  // key reads an object key and returns the hash (FNV-1a over UTF-16
  // code units) of its fold. A key of printable ASCII without escapes
  // (the usual case) is hashed as it is read, folding a-z to A-Z, which
  // for ASCII is exactly the broker's fold; any other key is checked,
  // unescaped and folded code point by code point, then hashed.
  key(): number {
    const s = this.s;
    let i = this.i + 1;
    let h = 0x811c9dc5 | 0;
    for (;;) {
      const c = s.charCodeAt(i); // NaN past the end: the slow path fails
      if (c === 0x22) {
        this.i = i + 1;
        return h;
      }
      if (!(c >= 0x20 && c < 0x80) || c === 0x5c) break;
      h = Math.imul(h ^ (c >= 0x61 && c <= 0x7a ? c - 0x20 : c), 0x01000193);
      i++;
    }
    const start = this.i + 1;
    this.string();
    return hash(foldString(unescape(s, start, this.i - 1)));
  }

  // string reads a string at its opening quote, checking escapes, control
  // characters and surrogates.
  string(): void {
    const s = this.s;
    let i = this.i + 1;
    for (;;) {
      if (i >= s.length) throw FAIL;
      const c = s.charCodeAt(i);
      if (c === 0x22) {
        this.i = i + 1;
        return;
      }
      if (c === 0x5c) {
        i = escape(s, i);
      } else if (c < 0x20) {
        throw FAIL;
      } else if (c >= 0xd800 && c <= 0xdfff) {
        // A surrogate must be a high one followed by a low one: a lone
        // surrogate cannot be written in UTF-8.
        const d = s.charCodeAt(i + 1);
        if (c > 0xdbff || !(d >= 0xdc00 && d <= 0xdfff)) throw FAIL;
        i += 2;
      } else {
        i++;
      }
    }
  }

  // valueString reads a string value as string() does, but lets the
  // regular expression engine skip the characters that need no check,
  // which is most of a long text.
  valueString(): void {
    const s = this.s;
    let i = this.i + 1;
    for (;;) {
      SPECIAL.lastIndex = i;
      if (SPECIAL.exec(s) === null) throw FAIL; // no closing quote
      i = SPECIAL.lastIndex - 1;
      const c = s.charCodeAt(i);
      if (c === 0x22) {
        this.i = i + 1;
        return;
      }
      if (c === 0x5c) {
        i = escape(s, i);
      } else if (c < 0x20) {
        throw FAIL;
      } else {
        const d = s.charCodeAt(i + 1);
        if (c > 0xdbff || !(d >= 0xdc00 && d <= 0xdfff)) throw FAIL;
        i += 2;
      }
    }
  }

  // number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; its size
  // is not bounded, as the broker does not bound it.
  number(): void {
    const s = this.s;
    let i = this.i;
    if (s.charCodeAt(i) === 0x2d) i++;
    let c = s.charCodeAt(i);
    if (c === 0x30) i++;
    else if (c >= 0x31 && c <= 0x39) i = digits(s, i);
    else throw FAIL;
    if (s.charCodeAt(i) === 0x2e) {
      const j = digits(s, i + 1);
      if (j === i + 1) throw FAIL;
      i = j;
    }
    c = s.charCodeAt(i);
    if (c === 0x65 || c === 0x45) {
      i++;
      c = s.charCodeAt(i);
      if (c === 0x2b || c === 0x2d) i++;
      const j = digits(s, i);
      if (j === i) throw FAIL;
      i = j;
    }
    this.i = i;
  }

  literal(lit: string): void {
    if (!this.s.startsWith(lit, this.i)) throw FAIL;
    this.i += lit.length;
  }
}

// SPECIAL finds the next character of a string that needs a check: the
// closing quote, a backslash, a control character or a surrogate.
const SPECIAL = /["\\\u0000-\u001f\ud800-\udfff]/g;

function hash(f: string): number {
  let h = 0x811c9dc5 | 0;
  for (let i = 0; i < f.length; i++) h = Math.imul(h ^ f.charCodeAt(i), 0x01000193);
  return h;
}

function digits(s: string, i: number): number {
  for (;;) {
    const c = s.charCodeAt(i); // NaN past the end
    if (!(c >= 0x30 && c <= 0x39)) return i;
    i++;
  }
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

// escape checks one escape sequence at a backslash and returns the index
// after it.
function escape(s: string, i: number): number {
  const c = s.charCodeAt(i + 1);
  switch (c) {
    case 0x22: case 0x5c: case 0x2f: case 0x62: case 0x66: case 0x6e: case 0x72: case 0x74:
      return i + 2;
    case 0x75:
      if (isHex(s.charCodeAt(i + 2)) && isHex(s.charCodeAt(i + 3)) && isHex(s.charCodeAt(i + 4)) && isHex(s.charCodeAt(i + 5))) {
        return i + 6;
      }
  }
  throw FAIL;
}

const SIMPLE_ESCAPES: Record<number, string> = {
  0x22: '"', 0x5c: "\\", 0x2f: "/", 0x62: "\b", 0x66: "\f", 0x6e: "\n", 0x72: "\r", 0x74: "\t",
};

// unescape decodes the checked string body s[start:end] as Go's
// encoding/json does: a \u escape of a surrogate that does not pair with
// the \u escape after it becomes U+FFFD.
function unescape(s: string, start: number, end: number): string {
  let out = "";
  let from = start;
  let i = start;
  while (i < end) {
    if (s.charCodeAt(i) !== 0x5c) {
      i++;
      continue;
    }
    out += s.slice(from, i);
    const c = s.charCodeAt(i + 1);
    if (c !== 0x75) {
      out += SIMPLE_ESCAPES[c];
      i += 2;
    } else {
      const u = parseInt(s.slice(i + 2, i + 6), 16);
      i += 6;
      if (u >= 0xd800 && u <= 0xdfff) {
        let paired = false;
        if (u <= 0xdbff && s.charCodeAt(i) === 0x5c && s.charCodeAt(i + 1) === 0x75) {
          const lo = parseInt(s.slice(i + 2, i + 6), 16);
          if (lo >= 0xdc00 && lo <= 0xdfff) {
            out += String.fromCharCode(u, lo);
            i += 6;
            paired = true;
          }
        }
        if (!paired) out += "\ufffd";
      } else {
        out += String.fromCharCode(u);
      }
    }
    from = i;
  }
  return out + s.slice(from, end);
}

/** foldString returns the fold of a key (PROTOCOL section 1.7): two keys
 * of one object are duplicates exactly when their folds are equal. s must
 * not hold lone surrogates. */
export function foldString(s: string): string {
  let out = "";
  let cps: number[] = [];
  for (let i = 0; i < s.length; i++) {
    let cp = s.charCodeAt(i);
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < s.length) {
      const lo = s.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        i++;
      }
    }
    cps.push(foldCodePoint(cp));
    if (cps.length === 1024) {
      out += String.fromCodePoint(...cps);
      cps = [];
    }
  }
  return out + String.fromCodePoint(...cps);
}

const scanner = new Scanner();

// members walks s and returns its top-level members when it is one JSON
// object that passes, or undefined. The scanner is reused (calls do not
// nest), so a walk allocates little beyond the keys it must keep.
function members(s: string): Member[] | undefined {
  const sc = scanner;
  sc.reset(s, true);
  const ok = sc.document() && sc.isObject;
  const top = ok ? sc.top.slice() : undefined;
  sc.reset("", false);
  return top;
}

/** walk reports whether text is one JSON value that the broker's strict
 * walk accepts (executors/wire Walk with MAX_DEPTH): valid JSON and
 * Unicode, nested at most MAX_DEPTH, no case-folded duplicate key. */
export function walk(text: WireInput): boolean {
  const s = toText(text);
  if (s === undefined) return false;
  scanner.reset(s, false);
  const ok = scanner.document();
  scanner.reset("", false);
  return ok;
}

let decoder: TextDecoder | undefined;

// toText decodes bytes as strict UTF-8 (no BOM stripped: the broker does
// not strip one either), or returns undefined when they are not UTF-8.
function toText(input: WireInput): string | undefined {
  if (typeof input === "string") return input;
  decoder ??= new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  try {
    return decoder.decode(input);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------
// The envelope checks of PROTOCOL section 5.1, in executors/wire
// envelope.go's order. After the scan, the text is known to be one JSON
// object without duplicate keys, so JSON.parse reads it the one way; only
// v and the budget counts are judged on their raw text (1.0 is not 1).

const CALL_KEYS: ReadonlySet<string> = new Set(["v", "callId", "tool", "descriptorId", "args", "boundsEcho"]);
const ANSWER_KEYS: ReadonlySet<string> = new Set(["v", "callId", "ok", "observed", "refused", "why", "budget"]);
const BUDGET_KEYS: ReadonlySet<string> = new Set(["requestsUsed", "requestsLimit"]);

type Refusal = { ok: false; rule: Rule };
const refusals = {} as Record<Rule, Refusal>;
for (const r of RULES) refusals[r] = Object.freeze({ ok: false, rule: r }) as Refusal;

/** An envelope that passed the shared checks: its members, parsed, and
 * the raw text of budget when present. */
interface Read {
  m: Record<string, unknown>;
  budget: string | undefined;
}

// envelope applies the checks calls and answers share.
function envelope(s: string, allowed: ReadonlySet<string>): Read | Refusal {
  const sc = scanner;
  sc.reset(s, true);
  const ok = sc.document() && sc.isObject;
  let v: string | undefined;
  let budget: string | undefined;
  let unknown = false;
  if (ok) {
    for (const e of sc.top) {
      if (e.key === "v") v = s.slice(e.start, e.end);
      else if (e.key === "budget") budget = s.slice(e.start, e.end);
      if (!allowed.has(e.key)) unknown = true;
    }
  }
  sc.reset("", false);
  if (!ok) return refusals[MALFORMED];
  if (v !== undefined && isNumber(v) && v !== "1") return refusals[VERSION_MISMATCH];
  if (unknown) return refusals[UNKNOWN_FIELD];
  if (v !== "1") return refusals[MALFORMED];
  return { m: JSON.parse(s) as Record<string, unknown>, budget };
}

function isNumber(raw: string): boolean {
  const c = raw.charCodeAt(0);
  return c === 0x2d || (c >= 0x30 && c <= 0x39);
}

// str decodes a raw JSON string value as the broker does (lone surrogate
// escapes become U+FFFD), or returns undefined for any other value.
function str(raw: string | undefined): string | undefined {
  if (raw === undefined || raw.charCodeAt(0) !== 0x22) return undefined;
  if (raw.indexOf("\\") < 0) return raw.slice(1, -1);
  return unescape(raw, 1, raw.length - 1);
}

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

// text is a parsed string as the broker reads it: JSON.parse keeps a lone
// surrogate escape, Go's decoder makes it U+FFFD.
function text(x: unknown): string | undefined {
  if (typeof x !== "string") return undefined;
  return /[\ud800-\udfff]/.test(x) ? x.replace(LONE, "\ufffd") : x;
}

// ident accepts 1 to MAX_ID_LENGTH code points, none of them a control
// character (C0, DEL, C1), a bidirectional embedding, override or isolate
// (U+202A–U+202E, U+2066–U+2069), a bidirectional mark (U+200E, U+200F,
// U+061C), a line or paragraph separator or U+FFFD, which a lone surrogate
// escape stands for (PROTOCOL section 1.8; executors/wire Unsafe).
function ident(x: unknown): string | undefined {
  if (typeof x !== "string" || x === "") return undefined;
  let n = 0;
  for (let i = 0; i < x.length; i++) {
    const c = x.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdfff) {
      const d = x.charCodeAt(i + 1);
      if (c > 0xdbff || !(d >= 0xdc00 && d <= 0xdfff)) return undefined;
      i++;
    } else if (!idUnit(c)) {
      return undefined;
    }
    n++;
  }
  return n <= MAX_ID_LENGTH ? x : undefined;
}

function idUnit(c: number): boolean {
  if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return false;
  if (c === 0x061c || c === 0x200e || c === 0x200f) return false;
  if (c < 0x2028) return true;
  return !(c <= 0x202e || (c >= 0x2066 && c <= 0x2069) || c === 0xfffd);
}

function object(x: unknown): JSONObject | undefined {
  return x !== null && typeof x === "object" && !Array.isArray(x) ? (x as JSONObject) : undefined;
}

function has(m: Record<string, unknown>, k: string): boolean {
  return Object.prototype.hasOwnProperty.call(m, k);
}

// COUNT is asCount's literal: a non-negative integer of at most 16 digits.
const COUNT = /^(?:0|[1-9][0-9]{0,15})$/;

function count(raw: string | undefined): number | undefined {
  return raw !== undefined && COUNT.test(raw) ? Number(raw) : undefined;
}

function budget(raw: string): Budget | Refusal {
  const top = members(raw);
  if (top === undefined) return refusals[MALFORMED];
  let used: string | undefined;
  let limit: string | undefined;
  for (const e of top) {
    if (!BUDGET_KEYS.has(e.key)) return refusals[UNKNOWN_FIELD];
    if (e.key === "requestsUsed") used = raw.slice(e.start, e.end);
    else limit = raw.slice(e.start, e.end);
  }
  const requestsUsed = count(used);
  const requestsLimit = count(limit);
  if (requestsUsed === undefined || requestsLimit === undefined) return refusals[MALFORMED];
  return { requestsUsed, requestsLimit };
}

/**
 * parseCall validates text as a call envelope with the broker's verdict
 * (executors/wire ParseCall). Checks run in this order and stop at the
 * first failure: one JSON object (PROTOCOL section 1.7 applies) →
 * `malformed`; `v` a number other than 1 → `version-mismatch`; a key
 * outside the allowlist → `unknown-field`; a key missing or mistyped, an
 * id out of bounds → `malformed`.
 *
 * Bytes are read as strict UTF-8; a string holding a lone surrogate
 * (which no UTF-8 can carry) is `malformed`. Numbers inside args take
 * JSON.parse's values; the verdict does not depend on them.
 */
export function parseCall(input: WireInput): Verdict<Call> {
  const s = toText(input);
  if (s === undefined) return refusals[MALFORMED];
  const r = envelope(s, CALL_KEYS);
  if (!("m" in r)) return r;
  const m = r.m;
  const callId = ident(m.callId);
  const tool = ident(m.tool);
  const descriptorId = ident(m.descriptorId);
  if (callId === undefined || tool === undefined || descriptorId === undefined) return refusals[MALFORMED];
  const args = object(m.args);
  const boundsEcho = object(m.boundsEcho);
  if (args === undefined || boundsEcho === undefined) return refusals[MALFORMED];
  return { ok: true, value: { v: 1, callId, tool, descriptorId, args, boundsEcho } };
}

/**
 * parseAnswer validates text as an answer envelope with the broker's
 * verdict (executors/wire ParseAnswer): as parseCall, then an `ok:true`
 * answer needs an `observed` object and no `refused` or `why`; a refusal
 * needs a known rule id in `refused`, a `why` string and no `observed`;
 * `budget`, when present, holds exactly two non-negative integers (of at
 * most 16 digits, so above 2^53 a count is read as the nearest double).
 */
export function parseAnswer(input: WireInput): Verdict<Answer> {
  const s = toText(input);
  if (s === undefined) return refusals[MALFORMED];
  const r = envelope(s, ANSWER_KEYS);
  if (!("m" in r)) return r;
  const m = r.m;
  const callId = ident(m.callId);
  if (callId === undefined) return refusals[MALFORMED];
  const ok = m.ok;
  if (typeof ok !== "boolean") return refusals[MALFORMED];
  let b: Budget | undefined;
  if (r.budget !== undefined) {
    const got = budget(r.budget);
    if ("rule" in got) return got;
    b = got;
  }
  if (ok) {
    if (has(m, "refused") || has(m, "why")) return refusals[MALFORMED];
    const observed = object(m.observed);
    if (observed === undefined) return refusals[MALFORMED];
    const value: ObservedAnswer = { v: 1, callId, ok: true, observed };
    if (b !== undefined) value.budget = b;
    return { ok: true, value };
  }
  if (has(m, "observed")) return refusals[MALFORMED];
  const refused = m.refused;
  if (!isRule(refused)) return refusals[MALFORMED];
  const why = text(m.why);
  if (why === undefined) return refusals[MALFORMED];
  const value: RefusedAnswer = { v: 1, callId, ok: false, refused, why };
  if (b !== undefined) value.budget = b;
  return { ok: true, value };
}

/** callIdOf reads the callId of an envelope that failed parseCall, when
 * it is one JSON object with a valid callId, so that the refusal can name
 * the call (executors/wire RefuseBody); otherwise it returns undefined. */
export function callIdOf(text: WireInput): string | undefined {
  const s = toText(text);
  const top = s === undefined ? undefined : members(s);
  const e = top?.find((m) => m.key === "callId");
  return e === undefined ? undefined : ident(str(s!.slice(e.start, e.end)));
}

// ---------------------------------------------------------------------------
// Encoding. Both encoders write the envelope's one key order, as the
// broker does, and refuse (WireError) a value the broker would refuse, so
// a client never sends an envelope that cannot be read.

/** The fields of a call; v is filled in. */
export type CallInit = Omit<Call, "v"> & { v?: 1 };

/** The fields of an answer; v is filled in. */
export type AnswerInit =
  | (Omit<ObservedAnswer, "v"> & { v?: 1 })
  | (Omit<RefusedAnswer, "v" | "why"> & { v?: 1; why?: string });

/** encodeCall encodes c as a call envelope, or throws WireError when the
 * broker would refuse it. */
export function encodeCall(c: CallInit): string {
  const text = JSON.stringify({
    v: VERSION,
    callId: c.callId,
    tool: c.tool,
    descriptorId: c.descriptorId,
    args: c.args,
    boundsEcho: c.boundsEcho,
  });
  const verdict = parseCall(text ?? "");
  if (!verdict.ok) throw new WireError(verdict.rule, `encodeCall: not a valid call envelope (${verdict.rule})`);
  return text;
}

/** encodeAnswer encodes a as an answer envelope, or throws WireError when
 * the broker would refuse it. A refusal without why gets the rule's
 * static text. */
export function encodeAnswer(a: AnswerInit): string {
  let text: string;
  if (a.ok) {
    text = JSON.stringify({ v: VERSION, callId: a.callId, ok: true, observed: a.observed, budget: a.budget });
  } else {
    const why = a.why ?? (isRule(a.refused) ? WHY_OF[a.refused] : undefined);
    text = JSON.stringify({ v: VERSION, callId: a.callId, ok: false, refused: a.refused, why, budget: a.budget });
  }
  const verdict = parseAnswer(text ?? "");
  if (!verdict.ok) throw new WireError(verdict.rule, `encodeAnswer: not a valid answer envelope (${verdict.rule})`);
  return text;
}
