/**
 * An answer envelope (PROTOCOL section 5.1): an observation or a named refusal.
 */
export type AnswerEnvelope = ObservedAnswer | RefusedAnswer;
/**
 * The envelope version, the integer 1 written as 1.
 */
export type EnvelopeVersion = 1;
/**
 * 1 to 128 characters without control characters (C0, DEL, C1), bidirectional embeddings, overrides or isolates (U+202A-U+202E, U+2066-U+2069), bidirectional marks (U+200E, U+200F, U+061C), line or paragraph separators (U+2028, U+2029) or U+FFFD (PROTOCOL section 1.8).
 */
export type Identifier = string;
/**
 * A non-negative integer of at most 16 digits, written without sign, fraction or exponent.
 */
export type Count = number;
/**
 * The whole refusal vocabulary (PROTOCOL section 5.2).
 */
export type RuleId = "malformed" | "unknown-field" | "version-mismatch" | "unattributed-call" | "bounds-mismatch" | "unknown-tool" | "args-invalid" | "exec-threw" | "exec-timeout" | "memory-exhausted" | "output-too-large" | "output-invalid" | "host-not-allowed" | "fetch-failed" | "budget-exhausted" | "no-page" | "machine-unreachable" | "page-timeout" | "machine-timeout" | "page-closed" | "machine-closed" | "overloaded" | "shutting-down" | "audit-unavailable";
export interface ObservedAnswer {
    v: EnvelopeVersion;
    callId: Identifier;
    ok: true;
    observed: {
        [k: string]: unknown;
    };
    budget?: Budget;
}
/**
 * The fetch accounting of one call.
 */
export interface Budget {
    requestsUsed: Count;
    requestsLimit: Count;
}
export interface RefusedAnswer {
    v: EnvelopeVersion;
    callId: Identifier;
    ok: false;
    refused: RuleId;
    /**
     * Text for a human; never a secret.
     */
    why: string;
    budget?: Budget;
}
