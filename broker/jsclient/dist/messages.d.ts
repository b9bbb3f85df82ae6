/** The `protocolVersion` every /local/ws envelope carries. */
export declare const PROTOCOL_VERSION = 1;
/** Names fixed by the contract (PROTOCOL sections 1 and 3). */
export declare const TOKEN_HEADER = "X-Tensorviz-Token";
/** The cookie the host sends itself, holding its `hostCookieKey`. */
export declare const HOST_COOKIE = "tensorviz_local_browser";
/** The WebSocket subprotocol a view offers on /local/ws and
 * /local/channel; the broker selects it, never the view key. */
export declare const VIEW_PROTOCOL = "airlock.view";
/** Starts the subprotocol that carries the view key (PROTOCOL section 3). */
export declare const VIEW_KEY_PROTOCOL_PREFIX = "airlock.view-key.";
/**
 * What a view offers in Sec-WebSocket-Protocol (the browser's
 * `new WebSocket(url, protocols)`): the view protocol and its view key.
 */
export declare function viewProtocols(viewKey: string): string[];
/** The environment variable `airlock serve` reads the launch token from. */
export declare const LAUNCH_TOKEN_ENV = "AIRLOCK_LOCAL_TOKEN";
/** Error codes of the local contract (PROTOCOL sections 1 and 4). */
export declare const ErrorCode: {
    readonly INVALID_CREDENTIALS: "INVALID_CREDENTIALS";
    readonly CREDENTIAL_EXPIRED: "CREDENTIAL_EXPIRED";
    readonly INVALID_ORIGIN: "INVALID_ORIGIN";
    readonly PROTOCOL_VERSION_MISMATCH: "PROTOCOL_VERSION_MISMATCH";
    readonly SESSION_MISMATCH: "SESSION_MISMATCH";
    readonly INVALID_MESSAGE: "INVALID_MESSAGE";
    readonly UNKNOWN_MESSAGE: "UNKNOWN_MESSAGE";
    readonly HOST_ALREADY_CONNECTED: "HOST_ALREADY_CONNECTED";
    /** HTTP only: an inert route (no launch token). */
    readonly NOT_FOUND: "NOT_FOUND";
    /** HTTP only: the broker cannot take the request now. */
    readonly UNAVAILABLE: "UNAVAILABLE";
};
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];
/** WebSocket close codes of /local/ws: the 44xx codes pair 1:1 with error codes. */
export declare const CloseCode: {
    readonly NORMAL: 1000;
    readonly GOING_AWAY: 1001;
    /** Slow consumer, too many views, host busy. */
    readonly TRY_AGAIN_LATER: 1013;
    readonly INVALID_CREDENTIALS: 4401;
    readonly CREDENTIAL_EXPIRED: 4402;
    readonly INVALID_ORIGIN: 4403;
    readonly PROTOCOL_VERSION_MISMATCH: 4404;
    readonly SESSION_MISMATCH: 4405;
    readonly INVALID_MESSAGE: 4406;
    readonly UNKNOWN_MESSAGE: 4407;
    readonly HOST_ALREADY_CONNECTED: 4408;
};
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];
/** The error code a close code stands for, or undefined (1000, 1001, 1013, others). */
export declare function errorCodeOfClose(code: number): ErrorCode | undefined;
/** The close code paired with an error code, or undefined for an HTTP-only code. */
export declare function closeCodeOfError(code: string): number | undefined;
/**
 * Detail tokens an `error` frame may carry (static strings, never frame
 * content). The broker may add tokens; treat this list as known values.
 */
export declare const Detail: {
    readonly BINARY_FRAME: "binary-frame";
    readonly FRAME_TOO_LARGE: "frame-too-large";
    readonly NOT_JSON_OBJECT: "not-json-object";
    readonly DUPLICATE_KEY: "duplicate-key";
    readonly PROTOCOL_VERSION: "protocol-version";
    readonly SESSION_MISMATCH: "session-mismatch";
    readonly ENVELOPE_KEY: "envelope-key";
    readonly ENVELOPE_TYPE: "envelope-type";
    readonly ENVELOPE_PAYLOAD: "envelope-payload";
    readonly ENVELOPE_HOST_SEQUENCE: "envelope-host-sequence";
    readonly UNKNOWN_TYPE: "unknown-type";
    readonly HELLO_EXPECTED: "hello-expected";
    readonly HELLO_REPEATED: "hello-repeated";
    readonly HANDSHAKE_TIMEOUT: "handshake-timeout";
    readonly BROKER_OWNED: "broker-owned";
    readonly DIRECTION: "direction";
    readonly CAPABILITY: "capability";
    readonly HOST_SEQUENCE_MISSING: "host-sequence-missing";
    readonly HOST_SEQUENCE_UNEXPECTED: "host-sequence-unexpected";
    readonly PAYLOAD: "payload";
    readonly REQUEST_ID: "request-id";
    readonly TARGET: "target";
    readonly VIEW_ID: "view-id";
    readonly URL: "url";
    readonly GRAPH_BASE64: "graph-base64";
    readonly GRAPH_NOT_GZIP: "graph-not-gzip";
    readonly GRAPH_TOO_LARGE: "graph-too-large";
    readonly RESULT_TOO_LARGE: "result-too-large";
    readonly SEQUENCE: "sequence";
    readonly NO_PENDING_SNAPSHOT: "no-pending-snapshot";
    readonly NO_HOST: "no-host";
    readonly DUPLICATE_REQUEST: "duplicate-request";
    readonly NOT_OWNER: "not-owner";
    readonly KIND_MISMATCH: "kind-mismatch";
    readonly UNKNOWN_REQUEST: "unknown-request";
    readonly TARGET_MISMATCH: "target-mismatch";
    readonly VIEW_MISMATCH: "view-mismatch";
    readonly TOO_MANY_REQUESTS: "too-many-requests";
    readonly HOST_ALREADY_CONNECTED: "host-already-connected";
    readonly BUSY: "busy";
};
/**
 * An error of the contract: a refusal over HTTP (`status` set), a socket
 * closed with a 44xx code (`closeCode` set), or an `error` frame (`detail`,
 * and `requestId` when the refused frame named one). The message is built
 * from static parts only, never from secrets or frame content.
 */
export declare class AirlockError extends Error {
    readonly name = "AirlockError";
    readonly code: ErrorCode | string;
    readonly detail: string | undefined;
    readonly requestId: string | undefined;
    readonly status: number | undefined;
    readonly closeCode: number | undefined;
    constructor(code: ErrorCode | string, opts?: {
        detail?: string | undefined;
        requestId?: string | undefined;
        status?: number | undefined;
        closeCode?: number | undefined;
        message?: string;
    });
    /**
     * The error a broker `error` frame stands for (`code`, `detail`,
     * `requestId`), or undefined for a relayed error (`message` only).
     */
    static fromFrame(payload: unknown): AirlockError | undefined;
    /** The error a socket close stands for; codes outside the 44xx pairs map to `CONNECTION_CLOSED`. */
    static fromClose(code: number, reason?: string): AirlockError;
}
/** Code of an {@link AirlockError} for a close that pairs with no contract code (1000, 1001, 1013, 1006). */
export declare const CONNECTION_CLOSED = "CONNECTION_CLOSED";
/** Code of an {@link AirlockError} that rejects a request the view cancelled itself. */
export declare const REQUEST_CANCELLED = "REQUEST_CANCELLED";
/** Code of an {@link AirlockError} for a handshake or launch that did not finish in time. */
export declare const TIMEOUT = "TIMEOUT";
/** A JSON object; extra keys are allowed on every payload. */
export type JsonObject = {
    [key: string]: unknown;
};
/** A request's target: any JSON value except null (the broker matches replies on its canonical form). */
export type Target = string | number | boolean | JsonObject | unknown[];
/** The capabilities a session declares (PROTOCOL section 2). */
export interface Capabilities {
    readOnly: boolean;
    canNavigateSource: boolean;
    canWriteSource: boolean;
    canRunAgent: boolean;
    canEditGraph: boolean;
    canProposeSourceEdits: boolean;
}
/** A session as bootstrap returns it (PROTOCOL section 3). */
export interface SessionInfo {
    workspaceSessionId: string;
    launchOrigin: string;
    expiresAt: string;
    protocolVersion: number;
    capabilities: Capabilities;
}
/**
 * The bootstrap response (PROTOCOL section 3): the session's public facts
 * and the view key, which a page keeps in sessionStorage (its origin's,
 * port included) and offers beside the cookie on every socket.
 */
export interface BootstrapResponse extends SessionInfo {
    viewKey: string;
}
/** The mint response (PROTOCOL section 2): the session and its two secrets. */
export interface MintResponse extends SessionInfo {
    viewCredential: string;
    hostCookieKey: string;
}
export type HelloPayload = JsonObject;
export interface HostConnectedPayload {
    role: "host";
    hostEpoch: number;
    views: string[];
    /** The session's, as mint and bootstrap state them. */
    capabilities: Capabilities;
    [key: string]: unknown;
}
export interface ViewConnectedPayload {
    role: "view";
    viewId: string;
    hostConnected: boolean;
    hostEpoch: number;
    /** The session's, as mint and bootstrap state them. */
    capabilities: Capabilities;
    [key: string]: unknown;
}
/** `connected`: the broker's handshake answer, by role. */
export type ConnectedPayload = HostConnectedPayload | ViewConnectedPayload;
export interface ConnectionStatePayload {
    state: "connected" | "disconnected";
    hostEpoch: number;
    [key: string]: unknown;
}
export interface ViewStatePayload {
    viewId: string;
    state: "connected" | "disconnected";
    [key: string]: unknown;
}
/** An `error` the broker sends one socket. */
export interface BrokerErrorPayload {
    code: ErrorCode | string;
    detail: string;
    requestId?: string;
    [key: string]: unknown;
}
/** An `error` a host sends every view, or a view sends the host. */
export interface RelayedErrorPayload {
    message: string;
    [key: string]: unknown;
}
export type ErrorPayload = BrokerErrorPayload | RelayedErrorPayload;
export type ActiveTargetPayload = JsonObject;
export type ProjectionPayload = JsonObject;
export type SyncStatePayload = JsonObject;
export type StaleStatePayload = JsonObject;
export type FocusNodePayload = JsonObject;
export type AckPayload = JsonObject;
export interface SnapshotRequestPayload {
    lastHostSequence: number | null;
    [key: string]: unknown;
}
export interface SnapshotPayload {
    atHostSequence: number;
    state: JsonObject;
    [key: string]: unknown;
}
export interface RevealNodePayload {
    nodeId: string;
    [key: string]: unknown;
}
/** The fields every request-family message carries. */
export interface TargetedPayload {
    requestId: string;
    target: Target;
    [key: string]: unknown;
}
/** A cancel; the broker adds `reason: "view-disconnected"` when it cancels for a view that left. */
export interface CancelPayload extends TargetedPayload {
    reason?: "view-disconnected" | string;
}
export interface SourceEditRequestPayload extends TargetedPayload {
    /** When present, must be the sender's own view id. */
    viewId?: string;
}
export interface SourceEditCancelPayload extends CancelPayload {
    viewId?: string;
}
export type SourceEditReviewPayload = TargetedPayload;
export type SourceEditResultPayload = TargetedPayload;
export type ValidateRequestPayload = TargetedPayload;
export type ValidateCancelPayload = CancelPayload;
export type ValidateResultPayload = TargetedPayload;
export type CaptureInspectRequestPayload = TargetedPayload;
export type CaptureInspectCancelPayload = CancelPayload;
/** At most 16 MiB of UTF-8 JSON; never broadcast, never kept for snapshots. */
export type CaptureInspectResultPayload = TargetedPayload;
export type ExportRequestPayload = TargetedPayload;
export type ExportCancelPayload = CancelPayload;
/** At most 16 MiB of UTF-8 JSON; never broadcast, never kept for snapshots. */
export type ExportResultPayload = TargetedPayload;
export interface GraphPublishRequestPayload extends TargetedPayload {
    /** Base64 of gzip data (magic 1f 8b), at most 10 MiB decoded. */
    graphGzipBase64: string;
}
export type GraphPublishCancelPayload = CancelPayload;
export type GraphPublishStatePayload = (TargetedPayload & {
    phase: "signing_in";
    connectUrl: string;
}) | (TargetedPayload & {
    phase: "uploading";
    connectUrl?: string;
});
export type GraphPublishResultPayload = (TargetedPayload & {
    status: "published";
    graphUrl: string;
    shareUrl: string;
}) | (TargetedPayload & {
    status: "failed" | "cancelled";
    graphUrl?: string;
    shareUrl?: string;
});
export interface CandidateRequestPayload {
    requestId: string;
    /** Must be the sender's own view id. */
    viewId: string;
    [key: string]: unknown;
}
export interface CandidateResultPayload {
    requestId: string;
    /** The view the result goes to (a connected view). */
    viewId: string;
    [key: string]: unknown;
}
/** Every /local/ws message type and its payload (PROTOCOL section 4). */
export interface MessageMap {
    hello: HelloPayload;
    connected: ConnectedPayload;
    connectionState: ConnectionStatePayload;
    viewState: ViewStatePayload;
    error: ErrorPayload;
    activeTarget: ActiveTargetPayload;
    projection: ProjectionPayload;
    syncState: SyncStatePayload;
    staleState: StaleStatePayload;
    focusNode: FocusNodePayload;
    ack: AckPayload;
    snapshotRequest: SnapshotRequestPayload;
    snapshot: SnapshotPayload;
    revealNode: RevealNodePayload;
    sourceEditRequest: SourceEditRequestPayload;
    sourceEditCancel: SourceEditCancelPayload;
    sourceEditReview: SourceEditReviewPayload;
    sourceEditResult: SourceEditResultPayload;
    validateRequest: ValidateRequestPayload;
    validateCancel: ValidateCancelPayload;
    validateResult: ValidateResultPayload;
    captureInspectRequest: CaptureInspectRequestPayload;
    captureInspectCancel: CaptureInspectCancelPayload;
    captureInspectResult: CaptureInspectResultPayload;
    exportRequest: ExportRequestPayload;
    exportCancel: ExportCancelPayload;
    exportResult: ExportResultPayload;
    graphPublishRequest: GraphPublishRequestPayload;
    graphPublishCancel: GraphPublishCancelPayload;
    graphPublishState: GraphPublishStatePayload;
    graphPublishResult: GraphPublishResultPayload;
    candidateRequest: CandidateRequestPayload;
    candidateResult: CandidateResultPayload;
}
export type MessageType = keyof MessageMap;
/** Who sends a type: a client role, or the broker itself. */
export type Sender = "host" | "view" | "broker";
/** The part a type plays in a request family; progress keeps the request open, result ends it. */
export type Kind = "request" | "cancel" | "progress" | "result";
/** The request families of PROTOCOL section 4. */
export type Family = "sourceEdit" | "validate" | "captureInspect" | "export" | "graphPublish" | "candidate";
/** The frozen facts of one type: its senders, whether it is ordered host state, its family and kind. */
export interface MessageSpec {
    readonly from: readonly Sender[];
    readonly ordered: boolean;
    readonly family?: Family;
    readonly kind?: Kind;
}
/**
 * The contract's table: every type of PROTOCOL section 4 and nothing else,
 * with who may send it. `error` and `ack` are sent by both roles; `error`
 * also by the broker.
 */
export declare const MESSAGES: Readonly<Record<MessageType, MessageSpec>>;
/** Every message type, in the order of PROTOCOL section 4. */
export declare const MESSAGE_TYPES: MessageType[];
/** Ordered host state: carries `hostSequence`, strictly increasing within a host epoch. */
export declare const ORDERED_TYPES: readonly ["activeTarget", "projection", "syncState", "staleState", "focusNode"];
export type OrderedType = (typeof ORDERED_TYPES)[number];
/** Types a host may send. */
export type HostSendType = "hello" | "error" | "ack" | OrderedType | "snapshot" | "sourceEditReview" | "sourceEditResult" | "validateResult" | "captureInspectResult" | "exportResult" | "graphPublishState" | "graphPublishResult" | "candidateResult";
/** Types a view may send. */
export type ViewSendType = "hello" | "error" | "ack" | "snapshotRequest" | "revealNode" | "sourceEditRequest" | "sourceEditCancel" | "validateRequest" | "validateCancel" | "captureInspectRequest" | "captureInspectCancel" | "exportRequest" | "exportCancel" | "graphPublishRequest" | "graphPublishCancel" | "candidateRequest";
/** Types a host receives: the broker's own and what views send. */
export type HostReceiveType = "connected" | "viewState" | "error" | "ack" | "snapshotRequest" | "revealNode" | "sourceEditRequest" | "sourceEditCancel" | "validateRequest" | "validateCancel" | "captureInspectRequest" | "captureInspectCancel" | "exportRequest" | "exportCancel" | "graphPublishRequest" | "graphPublishCancel" | "candidateRequest";
/** Types a view receives: the broker's own and what the host sends. */
export type ViewReceiveType = "connected" | "connectionState" | "error" | "ack" | OrderedType | "snapshot" | "sourceEditReview" | "sourceEditResult" | "validateResult" | "captureInspectResult" | "exportResult" | "graphPublishState" | "graphPublishResult" | "candidateResult";
/** The message types of each request family. `candidate` has no cancel and no progress. */
export declare const FAMILIES: Readonly<Record<Family, {
    request: MessageType;
    cancel?: MessageType;
    progress?: MessageType;
    result: MessageType;
}>>;
/** The payload type of each family's messages. */
export interface FamilyTypes {
    sourceEdit: {
        request: SourceEditRequestPayload;
        cancel: SourceEditCancelPayload;
        progress: SourceEditReviewPayload;
        result: SourceEditResultPayload;
    };
    validate: {
        request: ValidateRequestPayload;
        cancel: ValidateCancelPayload;
        progress: never;
        result: ValidateResultPayload;
    };
    captureInspect: {
        request: CaptureInspectRequestPayload;
        cancel: CaptureInspectCancelPayload;
        progress: never;
        result: CaptureInspectResultPayload;
    };
    export: {
        request: ExportRequestPayload;
        cancel: ExportCancelPayload;
        progress: never;
        result: ExportResultPayload;
    };
    graphPublish: {
        request: GraphPublishRequestPayload;
        cancel: GraphPublishCancelPayload;
        progress: GraphPublishStatePayload;
        result: GraphPublishResultPayload;
    };
    candidate: {
        request: CandidateRequestPayload;
        cancel: never;
        progress: never;
        result: CandidateResultPayload;
    };
}
/** One /local/ws frame (PROTOCOL section 4, "Envelope"). */
export interface Envelope<T extends MessageType = MessageType> {
    protocolVersion: typeof PROTOCOL_VERSION;
    workspaceSessionId: string;
    type: T;
    payload: MessageMap[T];
    /** Required on ordered host state, refused elsewhere. */
    hostSequence?: number;
}
/** A frame of any type, discriminated by `type`. */
export type AnyEnvelope = {
    [T in MessageType]: Envelope<T>;
}[MessageType];
/** `requestId` is 1–128 characters of `[A-Za-z0-9._:-]`. */
export declare const REQUEST_ID_PATTERN: RegExp;
/** Whether `type` is a type of the contract. */
export declare function isMessageType(type: unknown): type is MessageType;
/** Whether `type` is ordered host state. */
export declare function isOrderedType(type: unknown): type is OrderedType;
/**
 * Encodes one frame. `hostSequence` is written only when given; the broker
 * is the judge of everything else (this does not validate the payload).
 */
export declare function encodeEnvelope<T extends MessageType>(workspaceSessionId: string, type: T, payload: MessageMap[T], hostSequence?: number): string;
/**
 * Decodes a received frame: a JSON object with a known `type` and an
 * object `payload`, else undefined. Frames come from the broker, which
 * has validated them; this only guards the client's own dispatch.
 */
export declare function decodeEnvelope(text: string): AnyEnvelope | undefined;
/** Whether `err` says the session expired (close 4402, or 410 at bootstrap): final, do not retry. */
export declare function isExpired(err: unknown): boolean;
