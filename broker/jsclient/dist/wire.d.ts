import { type Rule } from "./rules.js";
export * from "./rules.js";
export { UNICODE_VERSION } from "./fold.js";
/** The version every envelope carries in `v`. */
export declare const PROTOCOL_VERSION = 1;
/** A JSON object, as parsed. */
export type JSONObject = {
    [key: string]: unknown;
};
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
export type Verdict<T> = {
    ok: true;
    value: T;
} | {
    ok: false;
    rule: Rule;
};
/** What parseCall and parseAnswer read: text, or its UTF-8 bytes. */
export type WireInput = string | Uint8Array;
/** WireError is thrown by encodeCall and encodeAnswer for a value that
 * would not pass the broker's validator; rule says why. */
export declare class WireError extends Error {
    readonly rule: Rule;
    constructor(rule: Rule, message: string);
}
/** isRule reports whether s is a rule id of the vocabulary. */
export declare function isRule(s: unknown): s is Rule;
/** foldString returns the fold of a key (PROTOCOL section 1.7): two keys
 * of one object are duplicates exactly when their folds are equal. s must
 * not hold lone surrogates. */
export declare function foldString(s: string): string;
/** walk reports whether text is one JSON value that the broker's strict
 * walk accepts (executors/wire Walk with MAX_DEPTH): valid JSON and
 * Unicode, nested at most MAX_DEPTH, no case-folded duplicate key. */
export declare function walk(text: WireInput): boolean;
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
export declare function parseCall(input: WireInput): Verdict<Call>;
/**
 * parseAnswer validates text as an answer envelope with the broker's
 * verdict (executors/wire ParseAnswer): as parseCall, then an `ok:true`
 * answer needs an `observed` object and no `refused` or `why`; a refusal
 * needs a known rule id in `refused`, a `why` string and no `observed`;
 * `budget`, when present, holds exactly two non-negative integers (of at
 * most 16 digits, so above 2^53 a count is read as the nearest double).
 */
export declare function parseAnswer(input: WireInput): Verdict<Answer>;
/** callIdOf reads the callId of an envelope that failed parseCall, when
 * it is one JSON object with a valid callId, so that the refusal can name
 * the call (executors/wire RefuseBody); otherwise it returns undefined. */
export declare function callIdOf(text: WireInput): string | undefined;
/** The fields of a call; v is filled in. */
export type CallInit = Omit<Call, "v"> & {
    v?: 1;
};
/** The fields of an answer; v is filled in. */
export type AnswerInit = (Omit<ObservedAnswer, "v"> & {
    v?: 1;
}) | (Omit<RefusedAnswer, "v" | "why"> & {
    v?: 1;
    why?: string;
});
/** encodeCall encodes c as a call envelope, or throws WireError when the
 * broker would refuse it. */
export declare function encodeCall(c: CallInit): string;
/** encodeAnswer encodes a as an answer envelope, or throws WireError when
 * the broker would refuse it. A refusal without why gets the rule's
 * static text. */
export declare function encodeAnswer(a: AnswerInit): string;
