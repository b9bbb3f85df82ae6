export declare const MALFORMED = "malformed";
export declare const UNKNOWN_FIELD = "unknown-field";
export declare const VERSION_MISMATCH = "version-mismatch";
export declare const UNATTRIBUTED_CALL = "unattributed-call";
export declare const BOUNDS_MISMATCH = "bounds-mismatch";
export declare const UNKNOWN_TOOL = "unknown-tool";
export declare const ARGS_INVALID = "args-invalid";
export declare const EXEC_THREW = "exec-threw";
export declare const EXEC_TIMEOUT = "exec-timeout";
export declare const MEMORY_EXHAUSTED = "memory-exhausted";
export declare const OUTPUT_TOO_LARGE = "output-too-large";
export declare const OUTPUT_INVALID = "output-invalid";
export declare const HOST_NOT_ALLOWED = "host-not-allowed";
export declare const FETCH_FAILED = "fetch-failed";
export declare const BUDGET_EXHAUSTED = "budget-exhausted";
export declare const NO_PAGE = "no-page";
export declare const MACHINE_UNREACHABLE = "machine-unreachable";
export declare const PAGE_TIMEOUT = "page-timeout";
export declare const MACHINE_TIMEOUT = "machine-timeout";
export declare const PAGE_CLOSED = "page-closed";
export declare const MACHINE_CLOSED = "machine-closed";
export declare const OVERLOADED = "overloaded";
export declare const SHUTTING_DOWN = "shutting-down";
export declare const AUDIT_UNAVAILABLE = "audit-unavailable";
/** Every rule id, in the broker's order. */
export declare const RULES: readonly ["malformed", "unknown-field", "version-mismatch", "unattributed-call", "bounds-mismatch", "unknown-tool", "args-invalid", "exec-threw", "exec-timeout", "memory-exhausted", "output-too-large", "output-invalid", "host-not-allowed", "fetch-failed", "budget-exhausted", "no-page", "machine-unreachable", "page-timeout", "machine-timeout", "page-closed", "machine-closed", "overloaded", "shutting-down", "audit-unavailable"];
/** A rule id: the reason a call was not answered with an observation. */
export type Rule = (typeof RULES)[number];
/** The broker's static human text for each rule (it never quotes input). */
export declare const WHY: Readonly<Record<Rule, string>>;
/** The envelope version ("v"). */
export declare const VERSION = 1;
/** The longest callId, tool or descriptorId, in code points. */
export declare const MAX_ID_LENGTH = 128;
/** The deepest nesting of objects and arrays in an envelope. */
export declare const MAX_DEPTH = 128;
/** The largest POST /v1/calls body, in bytes. */
export declare const MAX_CALL_BYTES = 16777216;
/** The largest maxOutputBytes a descriptor may declare. */
export declare const MAX_OUTPUT_BYTES = 67108864;
/** The callId of a refusal whose call had no readable one. */
export declare const UNREADABLE_CALL_ID = "-";
