/* Generated from schemas/call.schema.json by npm run gen:types; do not edit. */

/**
 * The envelope version, the integer 1 written as 1.
 *
 * This interface was referenced by `CallEnvelope`'s JSON-Schema
 * via the `definition` "Version".
 */
export type EnvelopeVersion = 1;
/**
 * 1 to 128 characters without control characters (C0, DEL, C1), bidirectional embeddings, overrides or isolates (U+202A-U+202E, U+2066-U+2069), bidirectional marks (U+200E, U+200F, U+061C), line or paragraph separators (U+2028, U+2029) or U+FFFD (PROTOCOL section 1.8).
 *
 * This interface was referenced by `CallEnvelope`'s JSON-Schema
 * via the `definition` "Identifier".
 */
export type Identifier = string;

/**
 * A call envelope (PROTOCOL section 5.1): exactly these keys, on POST /v1/calls, on /channel and inside the broker.
 */
export interface CallEnvelope {
  v: EnvelopeVersion;
  callId: Identifier;
  tool: Identifier;
  descriptorId: Identifier;
  /**
   * Checked against the tool's inputSchema by the executor.
   */
  args: {
    [k: string]: unknown;
  };
  /**
   * Must equal the admitted bounds as canonical JSON (checked by the executor).
   */
  boundsEcho: {
    [k: string]: unknown;
  };
}
