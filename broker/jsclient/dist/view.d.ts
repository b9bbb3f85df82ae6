import { Emitter } from "./emitter.js";
import { AirlockError, type AckPayload, type AnyEnvelope, type BootstrapResponse, type Envelope, type FamilyTypes, type JsonObject, type MessageMap, type Target, type ViewReceiveType, type ViewSendType } from "./messages.js";
export * from "./messages.js";
/** The part of a WebSocket the view uses: the browser's and the ws package's both fit. */
export interface WebSocketLike {
    readonly readyState: number;
    onopen: ((ev: unknown) => void) | null;
    onmessage: ((ev: {
        data: unknown;
    }) => void) | null;
    onclose: ((ev: {
        code: number;
        reason: string;
    }) => void) | null;
    onerror: ((ev: unknown) => void) | null;
    send(data: string): void;
    close(code?: number, reason?: string): void;
}
/** A WebSocket constructor: `globalThis.WebSocket` in a browser. */
export type WebSocketConstructor = new (url: string, protocols?: string[]) => WebSocketLike;
/** A fetch: `globalThis.fetch` in a browser. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Pick<Response, "ok" | "status" | "json">>;
/** The credential pair a view page's URL fragment carries: `#<workspaceSessionId>.<viewCredential>`. */
export interface ViewFragment {
    workspaceSessionId: string;
    viewCredential: string;
}
/** Reads `#<workspaceSessionId>.<viewCredential>` (leading `#` optional); undefined if it is not one. */
export declare function parseFragment(hash: string): ViewFragment | undefined;
/**
 * Takes the credential from `location.hash` and removes it from the
 * address at once (history.replaceState), so it is not kept in history,
 * bookmarks or a copied URL. Undefined when the page has none.
 */
export declare function takeFragment(): ViewFragment | undefined;
/** Options of {@link bootstrap}. */
export interface BootstrapOptions {
    /** The broker's base URL; default "" (same origin, as a page the broker serves). */
    baseUrl?: string;
    /** Default `globalThis.fetch`. */
    fetch?: FetchLike;
}
/**
 * Trades the one-time view credential for the view cookie (POST
 * /local/bootstrap; the browser stores the HttpOnly cookie) and the view
 * key, which it resolves with beside the session's facts: keep it in
 * sessionStorage (never localStorage, a URL or a log) and pass it to
 * {@link ViewClient} and to the door (`viewProtocols`). Refusals reject
 * with an {@link AirlockError} carrying `status`: 401 INVALID_CREDENTIALS,
 * 403 INVALID_ORIGIN, 410 CREDENTIAL_EXPIRED.
 */
export declare function bootstrap(fragment: ViewFragment, opts?: BootstrapOptions): Promise<BootstrapResponse>;
/** Reconnect policy: capped exponential backoff with jitter. */
export interface ReconnectOptions {
    /** First delay; default 250 ms. */
    initialDelayMs?: number;
    /** Cap on any delay; default 10000 ms. */
    maxDelayMs?: number;
    /** Growth per failed attempt; default 2. */
    factor?: number;
    /** Attempts after a loss before giving up ("failed"); default Infinity. 0 turns reconnect off. */
    maxAttempts?: number;
}
/** The reconnect policy's defaults. */
export declare const RECONNECT_DEFAULTS: Readonly<Required<ReconnectOptions>>;
/**
 * The delay before retry number `attempt` (0-based): the capped
 * exponential `min(max, initial * factor^attempt)`, then "equal jitter":
 * half of it fixed, half random, so views that lost the broker together do
 * not come back together, and no retry comes at once.
 */
export declare function backoffDelay(attempt: number, rc?: Readonly<Required<ReconnectOptions>>, random?: () => number): number;
/** Options of {@link ViewClient}. */
export interface ViewOptions {
    /** The session, from {@link bootstrap} (or kept from an earlier page load). */
    workspaceSessionId: string;
    /**
     * The view key {@link bootstrap} returned, offered in
     * Sec-WebSocket-Protocol on every socket. Leave it out only for a broker
     * run with local.view_key off (the cookie alone, as the seed).
     */
    viewKey?: string;
    /** The broker's base URL (http://127.0.0.1:PORT); default the page's own origin. */
    baseUrl?: string;
    /** Default `globalThis.WebSocket`. */
    WebSocket?: WebSocketConstructor;
    reconnect?: ReconnectOptions;
    /** Bound on upgrade + hello/connected; default 10000 ms. */
    handshakeTimeoutMs?: number;
    /** Jitter source in [0, 1); default Math.random. */
    random?: () => number;
}
/**
 * Where the view's connection stands.
 * - `connecting`: first connection under way; `open`: handshake done;
 * - `reconnecting`: lost, a retry is scheduled or under way;
 * - `expired`: the session expired (close 4402, or 410 at bootstrap): final;
 * - `failed`: refused for good (4401, 4403-4408) or out of attempts: final;
 * - `closed`: closed by {@link ViewClient.close}: final.
 */
export type ConnectionStatus = "idle" | "connecting" | "open" | "reconnecting" | "expired" | "failed" | "closed";
/** A request in flight: its terminal result, its progress, and cancel. */
export interface RequestHandle<R, P = never> {
    readonly requestId: string;
    /**
     * Resolves with the terminal result; rejects with an AirlockError: the
     * broker's refusal (detail no-host, busy, capability ...),
     * REQUEST_CANCELLED after {@link cancel}, CONNECTION_CLOSED or
     * CREDENTIAL_EXPIRED when the socket is lost (the broker cancels the
     * request on the host then).
     */
    readonly result: Promise<R>;
    /** Registers a listener for non-terminal replies (sourceEditReview, graphPublishState). */
    onProgress(listener: (progress: P) => void): RequestHandle<R, P>;
    /** Cancels: sends the family's cancel (candidate has none) and rejects `result` with REQUEST_CANCELLED. */
    cancel(): void;
}
/** Events of a {@link ViewClient}. */
export type ViewEvents = {
    [T in ViewReceiveType]: (payload: MessageMap[T], envelope: Envelope<T>) => void;
} & {
    /** Every frame received, before the per-type event. */
    message: (envelope: AnyEnvelope) => void;
    /** The connection status changed; `error` says why for a loss or a final state. */
    status: (status: ConnectionStatus, error?: AirlockError) => void;
    /** Ordered host state arrived (or a snapshot replaced it): the view's state changed. */
    state: (state: Readonly<JsonObject>, lastHostSequence: number | null) => void;
    /** The state went stale (host left, new host epoch, connection lost) or fresh again (snapshot). */
    stale: (stale: boolean) => void;
    /** The broker refused a frame this view sent (no requestId of a pending request). */
    refusal: (error: AirlockError) => void;
};
/**
 * One browser view of a session. Call {@link connect} after
 * {@link bootstrap}; it keeps the socket up until the session expires,
 * the broker refuses it for good, or {@link close}.
 *
 * State: `state` holds the host's ordered state by type (replaced whole by
 * a snapshot), `lastHostSequence` the last sequence seen in this host
 * epoch. After every (re)connect, and whenever a host arrives, the view
 * asks for a snapshot with `lastHostSequence`; the state is `stale` from
 * a loss or host change until that snapshot arrives.
 */
export declare class ViewClient extends Emitter<ViewEvents> {
    #private;
    readonly workspaceSessionId: string;
    constructor(opts: ViewOptions);
    get status(): ConnectionStatus;
    /** This socket's view id (changes with each reconnect). */
    get viewId(): string | undefined;
    get hostConnected(): boolean;
    get hostEpoch(): number | undefined;
    /** The last hostSequence seen in the current host epoch (null: none). */
    get lastHostSequence(): number | null;
    /** The host's state: ordered types by name, or what the last snapshot held. */
    get state(): Readonly<JsonObject>;
    /** Whether the state may be behind the host's (see the class notes). */
    get stale(): boolean;
    /**
     * Opens the socket and keeps it open. Resolves on the first `connected`;
     * rejects if the first attempt ends in a final state (expired, failed,
     * closed). Later losses are retried per the reconnect policy.
     */
    connect(): Promise<void>;
    /** Closes for good: no reconnect; pending requests reject with CONNECTION_CLOSED. */
    close(): void;
    /** Marks the view expired (a 410 at bootstrap, say): final. */
    expire(): void;
    /** Sends a view message; false when the socket is not open. */
    send<T extends ViewSendType>(type: T, payload: MessageMap[T]): boolean;
    /** Asks the host to reveal a node. */
    revealNode(nodeId: string): boolean;
    /** Sends an ack to the host. */
    ack(payload?: AckPayload): boolean;
    validate(target: Target, extra?: JsonObject): RequestHandle<FamilyTypes["validate"]["result"]>;
    captureInspect(target: Target, extra?: JsonObject): RequestHandle<FamilyTypes["captureInspect"]["result"]>;
    export(target: Target, extra?: JsonObject): RequestHandle<FamilyTypes["export"]["result"]>;
    /** Needs a session minted with canProposeSourceEdits (else refused, detail `capability`). */
    sourceEdit(target: Target, extra?: JsonObject): RequestHandle<FamilyTypes["sourceEdit"]["result"], FamilyTypes["sourceEdit"]["progress"]>;
    /** `graphGzipBase64`: base64 of gzip data, at most 10 MiB decoded. */
    graphPublish(target: Target, graphGzipBase64: string, extra?: JsonObject): RequestHandle<FamilyTypes["graphPublish"]["result"], FamilyTypes["graphPublish"]["progress"]>;
    /** The request names this view's own id, as the contract requires. */
    candidate(extra?: JsonObject): RequestHandle<FamilyTypes["candidate"]["result"]>;
}
