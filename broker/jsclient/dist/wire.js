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
import { MALFORMED, MAX_DEPTH, MAX_ID_LENGTH, RULES, UNKNOWN_FIELD, VERSION, VERSION_MISMATCH, WHY as WHY_OF, } from "./rules.js";
export * from "./rules.js";
export { UNICODE_VERSION } from "./fold.js";
/** The version every envelope carries in `v`. */
export const PROTOCOL_VERSION = VERSION;
/** WireError is thrown by encodeCall and encodeAnswer for a value that
 * would not pass the broker's validator; rule says why. */
export class WireError extends Error {
    rule;
    constructor(rule, message) {
        super(message);
        this.name = "WireError";
        this.rule = rule;
    }
}
const KNOWN_RULES = new Set(RULES);
/** isRule reports whether s is a rule id of the vocabulary. */
export function isRule(s) {
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
class Fail {
}
const FAIL = new Fail();
class Scanner {
    s = "";
    i = 0;
    depth = 0;
    dup = false;
    collect = false;
    // The folded keys of every open object, innermost last.
    keys = [];
    top = [];
    reset(s, collect) {
        this.s = s;
        this.i = 0;
        this.depth = 0;
        this.dup = false;
        this.collect = collect;
        this.keys.length = 0;
        this.top.length = 0;
    }
    // document reports whether s passes the walk.
    document() {
        try {
            this.space();
            this.value();
            this.space();
            return this.i === this.s.length && !this.dup;
        }
        catch (e) {
            if (e === FAIL)
                return false;
            throw e;
        }
    }
    space() {
        const s = this.s;
        let i = this.i;
        for (; i < s.length; i++) {
            const c = s.charCodeAt(i);
            if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09)
                break;
        }
        this.i = i;
    }
    value() {
        const c = this.s.charCodeAt(this.i);
        if (c === 0x7b)
            this.object();
        else if (c === 0x5b)
            this.array();
        else if (c === 0x22)
            this.string();
        else if (c === 0x74)
            this.literal("true");
        else if (c === 0x66)
            this.literal("false");
        else if (c === 0x6e)
            this.literal("null");
        else if (c === 0x2d || (c >= 0x30 && c <= 0x39))
            this.number();
        else
            throw FAIL;
    }
    open() {
        if (this.depth >= MAX_DEPTH)
            throw FAIL;
        this.depth++;
        this.i++;
        this.space();
    }
    object() {
        this.open();
        const s = this.s;
        const keys = this.keys;
        const base = keys.length;
        let big;
        if (s.charCodeAt(this.i) === 0x7d) {
            this.i++;
            this.depth--;
            return;
        }
        for (;;) {
            if (s.charCodeAt(this.i) !== 0x22)
                throw FAIL;
            const k = this.key();
            if (big !== undefined) {
                if (big.has(k))
                    this.dup = true;
                else
                    big.add(k);
            }
            else {
                for (let j = base; j < keys.length; j++) {
                    if (keys[j] === k)
                        this.dup = true;
                }
                keys.push(k);
                if (keys.length - base > smallObject)
                    big = new Set(keys.slice(base));
            }
            this.space();
            if (s.charCodeAt(this.i) !== 0x3a)
                throw FAIL;
            this.i++;
            this.space();
            const start = this.i;
            this.value();
            if (this.collect && this.depth === 1) {
                this.top.push({ key: this.lastKey, start, end: this.i });
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
                keys.length = base;
                return;
            }
            throw FAIL;
        }
    }
    array() {
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
    // lastKey is the unescaped text of the key key() read last (only kept
    // when collecting top-level members).
    lastKey = "";
    // key reads an object key and returns its fold. A key of plain ASCII
    // (the usual case) folds with toUpperCase, which for ASCII is exactly
    // the broker's fold; anything else is unescaped and folded code point by
    // code point.
    key() {
        const start = this.i + 1;
        const plain = this.string();
        const end = this.i - 1;
        if (plain) {
            const raw = this.s.slice(start, end);
            if (this.collect && this.depth === 1)
                this.lastKey = raw;
            return raw.toUpperCase();
        }
        const text = unescape(this.s, start, end);
        if (this.collect && this.depth === 1)
            this.lastKey = text;
        return foldString(text);
    }
    // string reads a string at its opening quote, checking escapes, control
    // characters and surrogates. It reports whether the string was plain
    // ASCII without escapes.
    string() {
        const s = this.s;
        let i = this.i + 1;
        let plain = true;
        for (;;) {
            if (i >= s.length)
                throw FAIL;
            const c = s.charCodeAt(i);
            if (c === 0x22) {
                this.i = i + 1;
                return plain;
            }
            if (c === 0x5c) {
                plain = false;
                i = escape(s, i);
            }
            else if (c < 0x20) {
                throw FAIL;
            }
            else if (c < 0x80) {
                i++;
            }
            else {
                plain = false;
                if (c >= 0xd800 && c <= 0xdfff) {
                    // A surrogate must be a high one followed by a low one: a lone
                    // surrogate cannot be written in UTF-8.
                    const d = s.charCodeAt(i + 1);
                    if (c > 0xdbff || !(d >= 0xdc00 && d <= 0xdfff))
                        throw FAIL;
                    i += 2;
                }
                else {
                    i++;
                }
            }
        }
    }
    // number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; its size
    // is not bounded, as the broker does not bound it.
    number() {
        const s = this.s;
        let i = this.i;
        if (s.charCodeAt(i) === 0x2d)
            i++;
        let c = s.charCodeAt(i);
        if (c === 0x30)
            i++;
        else if (c >= 0x31 && c <= 0x39)
            i = digits(s, i);
        else
            throw FAIL;
        if (s.charCodeAt(i) === 0x2e) {
            const j = digits(s, i + 1);
            if (j === i + 1)
                throw FAIL;
            i = j;
        }
        c = s.charCodeAt(i);
        if (c === 0x65 || c === 0x45) {
            i++;
            c = s.charCodeAt(i);
            if (c === 0x2b || c === 0x2d)
                i++;
            const j = digits(s, i);
            if (j === i)
                throw FAIL;
            i = j;
        }
        this.i = i;
    }
    literal(lit) {
        if (!this.s.startsWith(lit, this.i))
            throw FAIL;
        this.i += lit.length;
    }
}
function digits(s, i) {
    for (;;) {
        const c = s.charCodeAt(i); // NaN past the end
        if (!(c >= 0x30 && c <= 0x39))
            return i;
        i++;
    }
}
function isHex(c) {
    return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}
// escape checks one escape sequence at a backslash and returns the index
// after it.
function escape(s, i) {
    const c = s.charCodeAt(i + 1);
    switch (c) {
        case 0x22:
        case 0x5c:
        case 0x2f:
        case 0x62:
        case 0x66:
        case 0x6e:
        case 0x72:
        case 0x74:
            return i + 2;
        case 0x75:
            if (isHex(s.charCodeAt(i + 2)) && isHex(s.charCodeAt(i + 3)) && isHex(s.charCodeAt(i + 4)) && isHex(s.charCodeAt(i + 5))) {
                return i + 6;
            }
    }
    throw FAIL;
}
const SIMPLE_ESCAPES = {
    0x22: '"', 0x5c: "\\", 0x2f: "/", 0x62: "\b", 0x66: "\f", 0x6e: "\n", 0x72: "\r", 0x74: "\t",
};
// unescape decodes the checked string body s[start:end] as Go's
// encoding/json does: a \u escape of a surrogate that does not pair with
// the \u escape after it becomes U+FFFD.
function unescape(s, start, end) {
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
        }
        else {
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
                if (!paired)
                    out += "\ufffd";
            }
            else {
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
export function foldString(s) {
    let out = "";
    let cps = [];
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
function members(s) {
    const sc = scanner;
    sc.reset(s, true);
    const ok = sc.document() && s.charCodeAt(firstNonSpace(s)) === 0x7b;
    const top = ok ? sc.top.slice() : undefined;
    sc.reset("", false);
    return top;
}
function firstNonSpace(s) {
    let i = 0;
    while (i < s.length) {
        const c = s.charCodeAt(i);
        if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09)
            break;
        i++;
    }
    return i;
}
/** walk reports whether text is one JSON value that the broker's strict
 * walk accepts (executors/wire Walk with MAX_DEPTH): valid JSON and
 * Unicode, nested at most MAX_DEPTH, no case-folded duplicate key. */
export function walk(text) {
    const s = toText(text);
    if (s === undefined)
        return false;
    scanner.reset(s, false);
    const ok = scanner.document();
    scanner.reset("", false);
    return ok;
}
let decoder;
// toText decodes bytes as strict UTF-8 (no BOM stripped: the broker does
// not strip one either), or returns undefined when they are not UTF-8.
function toText(input) {
    if (typeof input === "string")
        return input;
    decoder ??= new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    try {
        return decoder.decode(input);
    }
    catch {
        return undefined;
    }
}
// ---------------------------------------------------------------------------
// The envelope checks of PROTOCOL section 5.1, in executors/wire
// envelope.go's order.
const CALL_KEYS = new Set(["v", "callId", "tool", "descriptorId", "args", "boundsEcho"]);
const ANSWER_KEYS = new Set(["v", "callId", "ok", "observed", "refused", "why", "budget"]);
const BUDGET_KEYS = new Set(["requestsUsed", "requestsLimit"]);
const refusals = {};
for (const r of RULES)
    refusals[r] = Object.freeze({ ok: false, rule: r });
// envelope applies the checks calls and answers share and returns the
// members by key, or a refusal.
function envelope(s, allowed) {
    const top = members(s);
    if (top === undefined)
        return refusals[MALFORMED];
    const m = new Map();
    for (const e of top)
        m.set(e.key, s.slice(e.start, e.end));
    const v = m.get("v");
    if (v !== undefined && isNumber(v) && v !== "1")
        return refusals[VERSION_MISMATCH];
    for (const k of m.keys()) {
        if (!allowed.has(k))
            return refusals[UNKNOWN_FIELD];
    }
    if (v !== "1")
        return refusals[MALFORMED];
    return m;
}
function isNumber(raw) {
    const c = raw.charCodeAt(0);
    return c === 0x2d || (c >= 0x30 && c <= 0x39);
}
// str decodes a raw JSON string value as the broker does (lone surrogate
// escapes become U+FFFD), or returns undefined for any other value.
function str(raw) {
    if (raw === undefined || raw.charCodeAt(0) !== 0x22)
        return undefined;
    if (raw.indexOf("\\") < 0)
        return raw.slice(1, -1);
    return unescape(raw, 1, raw.length - 1);
}
// ident accepts 1 to MAX_ID_LENGTH code points, none of them a control
// character (C0, DEL, C1), a bidirectional override or isolate
// (U+202A–U+202E, U+2066–U+2069), a line or paragraph separator or U+FFFD
// (executors/wire IDRune).
function ident(raw) {
    const s = str(raw);
    if (s === undefined || s === "")
        return undefined;
    let n = 0;
    for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0xd800 && c <= 0xdbff)
            i++; // a pair: str never yields a lone one
        else if (!idUnit(c))
            return undefined;
        n++;
    }
    return n <= MAX_ID_LENGTH ? s : undefined;
}
function idUnit(c) {
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
        return false;
    if (c < 0x2028)
        return true;
    return !(c <= 0x202e || (c >= 0x2066 && c <= 0x2069) || c === 0xfffd);
}
function object(raw) {
    if (raw === undefined || raw.charCodeAt(0) !== 0x7b)
        return undefined;
    return JSON.parse(raw);
}
function bool(raw) {
    return raw === "true" ? true : raw === "false" ? false : undefined;
}
// COUNT is asCount's literal: a non-negative integer of at most 16 digits.
const COUNT = /^(?:0|[1-9][0-9]{0,15})$/;
function count(raw) {
    return raw !== undefined && COUNT.test(raw) ? Number(raw) : undefined;
}
function budget(raw) {
    const top = members(raw);
    if (top === undefined)
        return refusals[MALFORMED];
    const m = new Map();
    for (const e of top) {
        if (!BUDGET_KEYS.has(e.key))
            return refusals[UNKNOWN_FIELD];
        m.set(e.key, raw.slice(e.start, e.end));
    }
    const requestsUsed = count(m.get("requestsUsed"));
    const requestsLimit = count(m.get("requestsLimit"));
    if (requestsUsed === undefined || requestsLimit === undefined)
        return refusals[MALFORMED];
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
export function parseCall(text) {
    const s = toText(text);
    if (s === undefined)
        return refusals[MALFORMED];
    const m = envelope(s, CALL_KEYS);
    if (!(m instanceof Map))
        return m;
    const callId = ident(m.get("callId"));
    const tool = ident(m.get("tool"));
    const descriptorId = ident(m.get("descriptorId"));
    if (callId === undefined || tool === undefined || descriptorId === undefined)
        return refusals[MALFORMED];
    const args = object(m.get("args"));
    const boundsEcho = object(m.get("boundsEcho"));
    if (args === undefined || boundsEcho === undefined)
        return refusals[MALFORMED];
    return { ok: true, value: { v: 1, callId, tool, descriptorId, args, boundsEcho } };
}
/**
 * parseAnswer validates text as an answer envelope with the broker's
 * verdict (executors/wire ParseAnswer): as parseCall, then an `ok:true`
 * answer needs an `observed` object and no `refused` or `why`; a refusal
 * needs a known rule id in `refused`, a `why` string and no `observed`;
 * `budget`, when present, holds exactly two non-negative integers.
 */
export function parseAnswer(text) {
    const s = toText(text);
    if (s === undefined)
        return refusals[MALFORMED];
    const m = envelope(s, ANSWER_KEYS);
    if (!(m instanceof Map))
        return m;
    const callId = ident(m.get("callId"));
    if (callId === undefined)
        return refusals[MALFORMED];
    const ok = bool(m.get("ok"));
    if (ok === undefined)
        return refusals[MALFORMED];
    let b;
    const rawBudget = m.get("budget");
    if (rawBudget !== undefined) {
        const r = budget(rawBudget);
        if ("rule" in r)
            return r;
        b = r;
    }
    if (ok) {
        if (m.has("refused") || m.has("why"))
            return refusals[MALFORMED];
        const observed = object(m.get("observed"));
        if (observed === undefined)
            return refusals[MALFORMED];
        const value = { v: 1, callId, ok: true, observed };
        if (b !== undefined)
            value.budget = b;
        return { ok: true, value };
    }
    if (m.has("observed"))
        return refusals[MALFORMED];
    const refused = str(m.get("refused"));
    if (!isRule(refused))
        return refusals[MALFORMED];
    const why = str(m.get("why"));
    if (why === undefined)
        return refusals[MALFORMED];
    const value = { v: 1, callId, ok: false, refused, why };
    if (b !== undefined)
        value.budget = b;
    return { ok: true, value };
}
/** callIdOf reads the callId of an envelope that failed parseCall, when
 * it is one JSON object with a valid callId, so that the refusal can name
 * the call (executors/wire RefuseBody); otherwise it returns undefined. */
export function callIdOf(text) {
    const s = toText(text);
    const top = s === undefined ? undefined : members(s);
    const e = top?.find((m) => m.key === "callId");
    return e === undefined ? undefined : ident(s.slice(e.start, e.end));
}
/** encodeCall encodes c as a call envelope, or throws WireError when the
 * broker would refuse it. */
export function encodeCall(c) {
    const text = JSON.stringify({
        v: VERSION,
        callId: c.callId,
        tool: c.tool,
        descriptorId: c.descriptorId,
        args: c.args,
        boundsEcho: c.boundsEcho,
    });
    const verdict = parseCall(text ?? "");
    if (!verdict.ok)
        throw new WireError(verdict.rule, `encodeCall: not a valid call envelope (${verdict.rule})`);
    return text;
}
/** encodeAnswer encodes a as an answer envelope, or throws WireError when
 * the broker would refuse it. A refusal without why gets the rule's
 * static text. */
export function encodeAnswer(a) {
    let text;
    if (a.ok) {
        text = JSON.stringify({ v: VERSION, callId: a.callId, ok: true, observed: a.observed, budget: a.budget });
    }
    else {
        const why = a.why ?? (isRule(a.refused) ? WHY_OF[a.refused] : undefined);
        text = JSON.stringify({ v: VERSION, callId: a.callId, ok: false, refused: a.refused, why, budget: a.budget });
    }
    const verdict = parseAnswer(text ?? "");
    if (!verdict.ok)
        throw new WireError(verdict.rule, `encodeAnswer: not a valid answer envelope (${verdict.rule})`);
    return text;
}
