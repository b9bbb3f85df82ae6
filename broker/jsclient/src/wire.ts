// The wire module of @airlock/client: call and answer envelopes with the
// broker's own verdicts (PROTOCOL section 5). Zero runtime dependencies.

/** The version every envelope carries in `v`. */
export const PROTOCOL_VERSION = 1;
