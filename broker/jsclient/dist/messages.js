// The typed message map of /local/ws (PROTOCOL section 4): every message
// type, its payload, who sends it and where it goes, the envelope, and the
// error and close code vocabulary (PROTOCOL sections 1 and 4). Both the
// host (Node) and the view (browser) modules build on this one file, so
// the two ends cannot disagree about the contract. No runtime dependency.
/** The `protocolVersion` every /local/ws envelope carries. */
export const PROTOCOL_VERSION = 1;
/** Names fixed by the contract (PROTOCOL sections 1 and 3). */
export const TOKEN_HEADER = "X-Tensorviz-Token";
/** The cookie the host sends itself, holding its `hostCookieKey`. */
export const HOST_COOKIE = "tensorviz_local_browser";
/** The WebSocket subprotocol a view offers on /local/ws and
 * /local/channel; the broker selects it, never the view key. */
export const VIEW_PROTOCOL = "airlock.view";
/** Starts the subprotocol that carries the view key (PROTOCOL section 3). */
export const VIEW_KEY_PROTOCOL_PREFIX = "airlock.view-key.";
/**
 * What a view offers in Sec-WebSocket-Protocol (the browser's
 * `new WebSocket(url, protocols)`): the view protocol and its view key.
 */
export function viewProtocols(viewKey) {
    return [VIEW_PROTOCOL, VIEW_KEY_PROTOCOL_PREFIX + viewKey];
}
/** The environment variable `airlock serve` reads the launch token from. */
export const LAUNCH_TOKEN_ENV = "AIRLOCK_LOCAL_TOKEN";
// ---------------------------------------------------------------- codes
/** Error codes of the local contract (PROTOCOL sections 1 and 4). */
export const ErrorCode = {
    INVALID_CREDENTIALS: "INVALID_CREDENTIALS",
    CREDENTIAL_EXPIRED: "CREDENTIAL_EXPIRED",
    INVALID_ORIGIN: "INVALID_ORIGIN",
    PROTOCOL_VERSION_MISMATCH: "PROTOCOL_VERSION_MISMATCH",
    SESSION_MISMATCH: "SESSION_MISMATCH",
    INVALID_MESSAGE: "INVALID_MESSAGE",
    UNKNOWN_MESSAGE: "UNKNOWN_MESSAGE",
    HOST_ALREADY_CONNECTED: "HOST_ALREADY_CONNECTED",
    /** HTTP only: an inert route (no launch token). */
    NOT_FOUND: "NOT_FOUND",
    /** HTTP only: the broker cannot take the request now. */
    UNAVAILABLE: "UNAVAILABLE",
};
/** WebSocket close codes of /local/ws: the 44xx codes pair 1:1 with error codes. */
export const CloseCode = {
    NORMAL: 1000,
    GOING_AWAY: 1001,
    /** Slow consumer, too many views, host busy. */
    TRY_AGAIN_LATER: 1013,
    INVALID_CREDENTIALS: 4401,
    CREDENTIAL_EXPIRED: 4402,
    INVALID_ORIGIN: 4403,
    PROTOCOL_VERSION_MISMATCH: 4404,
    SESSION_MISMATCH: 4405,
    INVALID_MESSAGE: 4406,
    UNKNOWN_MESSAGE: 4407,
    HOST_ALREADY_CONNECTED: 4408,
};
/** The one pairing of close codes and error codes (PROTOCOL section 4). */
const CLOSE_PAIRS = [
    [4401, "INVALID_CREDENTIALS"],
    [4402, "CREDENTIAL_EXPIRED"],
    [4403, "INVALID_ORIGIN"],
    [4404, "PROTOCOL_VERSION_MISMATCH"],
    [4405, "SESSION_MISMATCH"],
    [4406, "INVALID_MESSAGE"],
    [4407, "UNKNOWN_MESSAGE"],
    [4408, "HOST_ALREADY_CONNECTED"],
];
/** The error code a close code stands for, or undefined (1000, 1001, 1013, others). */
export function errorCodeOfClose(code) {
    return CLOSE_PAIRS.find((p) => p[0] === code)?.[1];
}
/** The close code paired with an error code, or undefined for an HTTP-only code. */
export function closeCodeOfError(code) {
    return CLOSE_PAIRS.find((p) => p[1] === code)?.[0];
}
/**
 * Detail tokens an `error` frame may carry (static strings, never frame
 * content). The broker may add tokens; treat this list as known values.
 */
export const Detail = {
    BINARY_FRAME: "binary-frame",
    FRAME_TOO_LARGE: "frame-too-large",
    NOT_JSON_OBJECT: "not-json-object",
    DUPLICATE_KEY: "duplicate-key",
    PROTOCOL_VERSION: "protocol-version",
    SESSION_MISMATCH: "session-mismatch",
    ENVELOPE_KEY: "envelope-key",
    ENVELOPE_TYPE: "envelope-type",
    ENVELOPE_PAYLOAD: "envelope-payload",
    ENVELOPE_HOST_SEQUENCE: "envelope-host-sequence",
    UNKNOWN_TYPE: "unknown-type",
    HELLO_EXPECTED: "hello-expected",
    HELLO_REPEATED: "hello-repeated",
    HANDSHAKE_TIMEOUT: "handshake-timeout",
    BROKER_OWNED: "broker-owned",
    DIRECTION: "direction",
    CAPABILITY: "capability",
    HOST_SEQUENCE_MISSING: "host-sequence-missing",
    HOST_SEQUENCE_UNEXPECTED: "host-sequence-unexpected",
    PAYLOAD: "payload",
    REQUEST_ID: "request-id",
    TARGET: "target",
    VIEW_ID: "view-id",
    URL: "url",
    GRAPH_BASE64: "graph-base64",
    GRAPH_NOT_GZIP: "graph-not-gzip",
    GRAPH_TOO_LARGE: "graph-too-large",
    RESULT_TOO_LARGE: "result-too-large",
    SEQUENCE: "sequence",
    NO_PENDING_SNAPSHOT: "no-pending-snapshot",
    NO_HOST: "no-host",
    DUPLICATE_REQUEST: "duplicate-request",
    NOT_OWNER: "not-owner",
    KIND_MISMATCH: "kind-mismatch",
    UNKNOWN_REQUEST: "unknown-request",
    TARGET_MISMATCH: "target-mismatch",
    VIEW_MISMATCH: "view-mismatch",
    TOO_MANY_REQUESTS: "too-many-requests",
    HOST_ALREADY_CONNECTED: "host-already-connected",
    BUSY: "busy",
};
// ---------------------------------------------------------------- errors
/**
 * An error of the contract: a refusal over HTTP (`status` set), a socket
 * closed with a 44xx code (`closeCode` set), or an `error` frame (`detail`,
 * and `requestId` when the refused frame named one). The message is built
 * from static parts only, never from secrets or frame content.
 */
export class AirlockError extends Error {
    name = "AirlockError";
    code;
    detail;
    requestId;
    status;
    closeCode;
    constructor(code, opts = {}) {
        super(opts.message ?? `airlock: ${code}${opts.detail ? ` (${opts.detail})` : ""}`);
        this.code = code;
        this.detail = opts.detail;
        this.requestId = opts.requestId;
        this.status = opts.status;
        this.closeCode = opts.closeCode ?? closeCodeOfError(code);
    }
    /**
     * The error a broker `error` frame stands for (`code`, `detail`,
     * `requestId`), or undefined for a relayed error (`message` only).
     */
    static fromFrame(payload) {
        const p = payload;
        if (typeof p?.code !== "string")
            return undefined;
        const str = (v) => (typeof v === "string" ? v : undefined);
        return new AirlockError(p.code, { detail: str(p.detail), requestId: str(p.requestId) });
    }
    /** The error a socket close stands for; codes outside the 44xx pairs map to `CONNECTION_CLOSED`. */
    static fromClose(code, reason = "") {
        const ec = errorCodeOfClose(code);
        return new AirlockError(ec ?? CONNECTION_CLOSED, { closeCode: code, detail: ec ? undefined : reason || String(code) });
    }
}
/** Code of an {@link AirlockError} for a close that pairs with no contract code (1000, 1001, 1013, 1006). */
export const CONNECTION_CLOSED = "CONNECTION_CLOSED";
/** Code of an {@link AirlockError} that rejects a request the view cancelled itself. */
export const REQUEST_CANCELLED = "REQUEST_CANCELLED";
/** Code of an {@link AirlockError} for a handshake or launch that did not finish in time. */
export const TIMEOUT = "TIMEOUT";
const H = ["host"];
const V = ["view"];
const B = ["broker"];
const ordered = { from: H, ordered: true };
const fam = (from, family, kind) => ({ from, ordered: false, family, kind });
/**
 * The contract's table: every type of PROTOCOL section 4 and nothing else,
 * with who may send it. `error` and `ack` are sent by both roles; `error`
 * also by the broker.
 */
export const MESSAGES = {
    hello: { from: ["host", "view"], ordered: false },
    connected: { from: B, ordered: false },
    connectionState: { from: B, ordered: false },
    viewState: { from: B, ordered: false },
    error: { from: ["broker", "host", "view"], ordered: false },
    activeTarget: ordered,
    projection: ordered,
    syncState: ordered,
    staleState: ordered,
    focusNode: ordered,
    ack: { from: ["host", "view"], ordered: false },
    snapshotRequest: { from: V, ordered: false },
    snapshot: { from: H, ordered: false },
    revealNode: { from: V, ordered: false },
    sourceEditRequest: fam(V, "sourceEdit", "request"),
    sourceEditCancel: fam(V, "sourceEdit", "cancel"),
    sourceEditReview: fam(H, "sourceEdit", "progress"),
    sourceEditResult: fam(H, "sourceEdit", "result"),
    validateRequest: fam(V, "validate", "request"),
    validateCancel: fam(V, "validate", "cancel"),
    validateResult: fam(H, "validate", "result"),
    captureInspectRequest: fam(V, "captureInspect", "request"),
    captureInspectCancel: fam(V, "captureInspect", "cancel"),
    captureInspectResult: fam(H, "captureInspect", "result"),
    exportRequest: fam(V, "export", "request"),
    exportCancel: fam(V, "export", "cancel"),
    exportResult: fam(H, "export", "result"),
    graphPublishRequest: fam(V, "graphPublish", "request"),
    graphPublishCancel: fam(V, "graphPublish", "cancel"),
    graphPublishState: fam(H, "graphPublish", "progress"),
    graphPublishResult: fam(H, "graphPublish", "result"),
    candidateRequest: fam(V, "candidate", "request"),
    candidateResult: fam(H, "candidate", "result"),
};
/** Every message type, in the order of PROTOCOL section 4. */
export const MESSAGE_TYPES = Object.keys(MESSAGES);
/** Ordered host state: carries `hostSequence`, strictly increasing within a host epoch. */
export const ORDERED_TYPES = ["activeTarget", "projection", "syncState", "staleState", "focusNode"];
/** The message types of each request family. `candidate` has no cancel and no progress. */
export const FAMILIES = {
    sourceEdit: { request: "sourceEditRequest", cancel: "sourceEditCancel", progress: "sourceEditReview", result: "sourceEditResult" },
    validate: { request: "validateRequest", cancel: "validateCancel", result: "validateResult" },
    captureInspect: { request: "captureInspectRequest", cancel: "captureInspectCancel", result: "captureInspectResult" },
    export: { request: "exportRequest", cancel: "exportCancel", result: "exportResult" },
    graphPublish: { request: "graphPublishRequest", cancel: "graphPublishCancel", progress: "graphPublishState", result: "graphPublishResult" },
    candidate: { request: "candidateRequest", result: "candidateResult" },
};
/** `requestId` is 1–128 characters of `[A-Za-z0-9._:-]`. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
/** Whether `type` is a type of the contract. */
export function isMessageType(type) {
    return typeof type === "string" && Object.prototype.hasOwnProperty.call(MESSAGES, type);
}
/** Whether `type` is ordered host state. */
export function isOrderedType(type) {
    return ORDERED_TYPES.includes(type);
}
/**
 * Encodes one frame. `hostSequence` is written only when given; the broker
 * is the judge of everything else (this does not validate the payload).
 */
export function encodeEnvelope(workspaceSessionId, type, payload, hostSequence) {
    const env = { protocolVersion: PROTOCOL_VERSION, workspaceSessionId, type, payload };
    if (hostSequence !== undefined)
        env.hostSequence = hostSequence;
    return JSON.stringify(env);
}
/**
 * Decodes a received frame: a JSON object with a known `type` and an
 * object `payload`, else undefined. Frames come from the broker, which
 * has validated them; this only guards the client's own dispatch.
 */
export function decodeEnvelope(text) {
    let v;
    try {
        v = JSON.parse(text);
    }
    catch {
        return undefined;
    }
    if (typeof v !== "object" || v === null || Array.isArray(v))
        return undefined;
    const e = v;
    if (!isMessageType(e.type) || typeof e.payload !== "object" || e.payload === null || Array.isArray(e.payload))
        return undefined;
    return v;
}
/** Whether `err` says the session expired (close 4402, or 410 at bootstrap): final, do not retry. */
export function isExpired(err) {
    return err instanceof AirlockError && err.code === ErrorCode.CREDENTIAL_EXPIRED;
}
